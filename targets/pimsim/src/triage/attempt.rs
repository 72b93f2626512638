//! One edit tried on a failing bundle (applied, rerun against the oracle, judged, undone), and
//! what a localization collects: the edits that helped ([`Found`]) and the search's result
//! ([`Localization`]). The searches (`localize`, `joint`) are built from these.

use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::program::GroupSpec;
use pimdiff_isa::{Inst, Opcode};

use super::judge::{judge_bundle, Effect, Failure};
use super::repairs::{self, apply_edit, undo, Edit, Tweak};
use crate::check::RunConfig;

/// An edit that helped.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    pub edit: Edit,
    pub effect: Effect,
    /// The edit's operand text at each site (`relu=0`, `size=16`, ...).
    pub fixes: Vec<String>,
    /// Position in the search order (smaller: tried earlier).
    pub order: usize,
    /// For an `sldi` whose register next serves as the address of an `ld` or `st`: that
    /// transfer (see [`address_consumer`]).
    pub consumer: Option<Opcode>,
}

impl Found {
    /// `<opcode> <field>`: the cause an edit names, as used in signatures.
    pub(crate) fn label(&self) -> String {
        match self.edit.tweak {
            // Whether it replaces a `nop` or goes before the store, it is one cause.
            Tweak::Activation { .. } => self.edit.tweak.field().to_string(),
            Tweak::Restore(i) => format!("missing {}", i.opcode().mnemonic()),
            // The constant of a transfer's address moved is its offset moved: one cause,
            // whichever of the two a program's shape lets a repair reach first.
            Tweak::Imm(_) if self.consumer.is_some() => {
                format!("{} offset", self.consumer.map_or("", |o| o.mnemonic()))
            }
            _ => format!(
                "{} {}",
                self.edit.opcode.mnemonic(),
                self.edit.tweak.field()
            ),
        }
    }

    /// The transferable form of the edit (see [`Rule`]).
    pub(crate) fn rule(&self) -> Rule {
        Rule {
            opcode: self.edit.opcode,
            tweak: self.edit.tweak,
            every: self.edit.every,
        }
    }
}

/// The result of [`localize`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Localization {
    /// Edits that repaired or improved, in search order.
    pub found: Vec<Found>,
    /// Edited bundles run.
    pub runs: u64,
    /// Whether the budget, the deadline or `cancel` ended the search before the catalog did.
    pub cut_short: bool,
    /// Whether the case's correct output depends on its input (see `values::input_matters`).
    pub input_matters: bool,
    /// `ld`s of global memory nothing initialises (see `uninit`): `(core, pc, [start, end))`.
    pub uninitialised: Vec<(u32, u32, (u64, u64))>,
    /// A crossbar edit that repairs the output, searched only when no instruction edit does
    /// (see `crossbar_repairs`).
    pub crossbar: Option<super::crossbar_repairs::CellRepair>,
    /// A nearby specification whose oracle output the wrong output is (see `variants`); only
    /// for a wrong output, on every probe.
    pub variant: Option<super::variants::Variant>,
    /// Single-site edits that moved the wrong output closer without fixing an element
    /// (`Effect::Closer`): candidates of a joint repair only, never suspects.
    pub closer: Vec<Found>,
}

impl Localization {
    /// The most direct repair (the first of [`Localization::repairs_ranked`]).
    pub(crate) fn best_repair(&self) -> Option<&Found> {
        self.repairs().min_by_key(|f| sort_key(f))
    }

    /// The repair that names the cause: the most direct one, on a case whose correct output
    /// depends on its input. When it does not (every window in the padding, a bias alone),
    /// the probes cannot tell a repair from a coincidence: cutting the input off, or moving
    /// any read to where the data does not matter, "repairs" it. Such repairs stay suspects
    /// but sign nothing.
    pub(crate) fn cause_repair(&self) -> Option<&Found> {
        self.input_matters.then(|| self.best_repair()).flatten()
    }

    /// Repairs, best first: lowest `Tweak::rank`, single site before opcode-wide, then by
    /// opcode (a fixed order, so that twin repairs such as a `send` and its `recv` resolve
    /// the same way on every case), then earliest.
    pub(crate) fn repairs_ranked(&self) -> Vec<&Found> {
        let mut v: Vec<&Found> = self.repairs().collect();
        v.sort_by_key(|f| sort_key(f));
        v
    }

    /// Repairs, best first.
    pub(crate) fn repairs(&self) -> impl Iterator<Item = &Found> {
        self.found.iter().filter(|f| f.effect == Effect::Repaired)
    }

    /// Improvements, best first: most elements fixed, then as [`Localization::best_repair`].
    pub(crate) fn improvements(&self) -> Vec<&Found> {
        let mut v: Vec<&Found> = self
            .found
            .iter()
            .filter(|f| matches!(f.effect, Effect::Improved { .. }))
            .collect();
        v.sort_by_key(|f| {
            let fixed = match f.effect {
                Effect::Improved { fixed, .. } => fixed,
                _ => 0,
            };
            (std::cmp::Reverse(fixed), sort_key(f))
        });
        v
    }
}

fn sort_key(f: &Found) -> (u8, bool, Opcode, usize) {
    (
        f.edit.tweak.rank(f.edit.opcode),
        f.edit.every,
        f.edit.opcode,
        f.order,
    )
}

/// The operand text of `edit` at each of its sites.
/// The transfer whose address a single-site `sldi` edit moves: the first instruction after
/// the `sldi` on its core that uses its register, when that is an `ld` or `st` taking it as
/// an address (`rd` or `rs1`). `None` for any other edit, or when the register is used
/// otherwise (or overwritten) first.
pub(crate) fn address_consumer(cores: &[Vec<Inst>], edit: &Edit) -> Option<Opcode> {
    let [(core, pc)] = edit.sites[..] else {
        return None;
    };
    let insts = cores.get(core as usize)?;
    let Some(Inst::Sldi { rd: reg, .. }) = insts.get(pc as usize) else {
        return None;
    };
    for inst in &insts[pc as usize + 1..] {
        match *inst {
            Inst::Mem { rd, rs1, .. } if rd == *reg || rs1 == *reg => {
                // The transfers between the memories (`ld`, `st`; not `lmv`).
                return inst.gmem_transfer().map(|_| inst.opcode());
            }
            Inst::Sldi { rd, .. } if rd == *reg => return None,
            Inst::Nop | Inst::Setbw { .. } | Inst::Sldi { .. } | Inst::Mem { .. } => {}
            // Anything else may read or write the register: the search stops.
            _ => return None,
        }
    }
    None
}

pub(crate) fn fix_texts(cores: &[Vec<Inst>], edit: &Edit) -> Vec<String> {
    edit.sites
        .iter()
        .enumerate()
        .map(|(i, &(c, pc))| {
            let old = &cores[c as usize][pc as usize];
            let tweak = edit.tweak_at(i);
            match repairs::apply(old, tweak) {
                Some(new) => repairs::fix_text(&new, tweak),
                None => repairs::fix_text(old, tweak),
            }
        })
        .collect()
}

/// Applies `edit` to `work`, reruns it, judges the effect and restores `work`. A repair must
/// also be right on every probe input, an improvement must not make any probe element wrong
/// that the unedited program got right.
pub(crate) fn try_edit(
    failure: &Failure,
    work: &mut Bundle,
    edit: &Edit,
    cfg: &RunConfig,
) -> Effect {
    let saved = apply_edit(&mut work.program.cores, edit);
    let effect = judge_bundle(failure, work, cfg);
    undo(&mut work.program.cores, edit, saved);
    effect
}

/// Array group numbers per core: the crossbar export's, or the `array_group_map`'s indices.
pub(crate) fn group_numbers(bundle: &Bundle) -> Vec<Vec<u32>> {
    let cores = bundle.program.cores.len();
    (0..cores)
        .map(|c| {
            if let Some(x) = bundle.xbars.cores.get(&(c as u32)) {
                let mut g: Vec<u32> = x.groups.iter().map(|g| g.group).collect();
                g.sort_unstable();
                g
            } else if let GroupSpec::ArrayGroupMap(map) = &bundle.program.groups {
                (0..map.get(c).map_or(0, Vec::len) as u32).collect()
            } else {
                Vec::new()
            }
        })
        .collect()
}

/// A repair in a form that applies to another program of the same compiler: "the tweak on
/// one `opcode` instruction" (any one) or "the tweak on every `opcode` instruction". The
/// triage's drift guard checks that a smaller case is still repaired (or improved) by the
/// rule that repaired (or improved) the original.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    pub opcode: Opcode,
    pub tweak: Tweak,
    pub every: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pimdiff_isa::formats::asm;

    fn sldi_edit(core: u32, pc: u32) -> Edit {
        Edit {
            opcode: Opcode::Sldi,
            tweak: Tweak::Imm(-4),
            every: false,
            sites: vec![(core, pc)],
            per_site: Vec::new(),
        }
    }

    #[test]
    fn an_sldi_that_feeds_a_transfers_address_names_that_transfer() {
        let program = asm::parse(
            ".cores 1\ncore 0:\n    sldi r1, imm=20\n    sldi r2, imm=0\n    st r1, r2, size=4\n    \
             sldi r3, imm=4\n    vrelu r3, r3, len=1\n    sldi r4, imm=8\n    sldi r4, imm=9\n    \
             ld r4, r2, size=4\n",
        )
        .unwrap();
        let cores = &program.cores;
        // The address of the store (rd) and the local source (rs1): both the store's.
        assert_eq!(address_consumer(cores, &sldi_edit(0, 0)), Some(Opcode::St));
        assert_eq!(address_consumer(cores, &sldi_edit(0, 1)), Some(Opcode::St));
        // Used by a vector instruction first, or overwritten before any use: no transfer.
        assert_eq!(address_consumer(cores, &sldi_edit(0, 3)), None);
        assert_eq!(address_consumer(cores, &sldi_edit(0, 5)), None);
        assert_eq!(address_consumer(cores, &sldi_edit(0, 6)), Some(Opcode::Ld));
        let found = |edit: Edit| Found {
            consumer: address_consumer(cores, &edit),
            edit,
            effect: Effect::Repaired,
            fixes: Vec::new(),
            order: 0,
        };
        // One cause whichever the repair reaches: the store's offset.
        assert_eq!(found(sldi_edit(0, 0)).label(), "st offset");
        assert_eq!(found(sldi_edit(0, 3)).label(), "sldi imm");
    }
}
