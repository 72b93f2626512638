//! Localization by repair: edit the failing bundle one catalog edit at a time, rerun it
//! against the oracle, and keep the edits that help.
//!
//! An edit *repairs* the program when the edited bundle's output equals the oracle's; it
//! *improves* a wrong output when some differing elements become right and no right element
//! goes wrong (a program with two bugs is improved, not repaired, by fixing one). No
//! recompilation is involved: only the bundle changes, so this works for any compiler.
//!
//! The search is deterministic: opcode-wide edits first (bugs that corrupt every instruction
//! of one kind), then every single-site edit in program order, until the run budget is spent;
//! then, when no edit repairs but some help, the same kind of edit at several sites together
//! (a systematic bug, `joint`).
//! The *best repair* is the most direct one (see `Tweak::rank`), single sites before
//! opcode-wide edits, earliest first.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::program::GroupSpec;
use pimdiff_isa::{Inst, Opcode};

pub(crate) use super::judge::{judge_bundle, judging_config, Effect, Failure, Limits};
use super::repairs::{self, apply_edit, class_edits, single_edits, undo, Edit, Tweak};
use crate::check::outcome::Outcome;
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
}

impl Found {
    /// `<opcode> <field>`: the cause an edit names, as used in signatures.
    pub(crate) fn label(&self) -> String {
        match self.edit.tweak {
            // Whether it replaces a `nop` or goes before the store, it is one cause.
            Tweak::Activation { .. } => self.edit.tweak.field().to_string(),
            Tweak::Restore(i) => format!("missing {}", i.opcode().mnemonic()),
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

/// Searches the repair catalog on `failure` (see the module docs).
pub(crate) fn localize(
    failure: &Failure,
    cfg: &RunConfig,
    limits: &Limits,
    cancel: &AtomicBool,
) -> Localization {
    let cfg = &judging_config(failure, cfg);
    let mut loc = Localization {
        input_matters: super::values::input_matters(failure.oracle, &failure.probes),
        uninitialised: super::uninit::uninitialised_loads(failure.bundle),
        variant: match (failure.outcome, failure.output) {
            (Outcome::Mismatch(_), Some(out)) => {
                super::variants::explain(failure.case, out, &failure.probes)
            }
            _ => None,
        },
        ..Localization::default()
    };
    if !failure.outcome.is_finding() || matches!(failure.outcome, Outcome::CompileError { .. }) {
        return loc;
    }
    let program = &failure.bundle.program;
    let groups = group_numbers(failure.bundle);
    let edits = class_edits(&program.cores)
        .into_iter()
        .chain(single_edits(&program.cores, &groups));
    let mut work = failure.bundle.clone();
    for (order, edit) in edits.enumerate() {
        if loc.runs >= limits.max_runs
            || limits.deadline.is_some_and(|d| Instant::now() >= d)
            || cancel.load(Ordering::Relaxed)
        {
            loc.cut_short = true;
            break;
        }
        loc.runs += 1;
        let effect = try_edit(failure, &mut work, &edit, cfg);
        if effect != Effect::Nothing {
            let fixes = fix_texts(&program.cores, &edit);
            let found = Found {
                edit,
                effect,
                fixes,
                order,
            };
            match effect {
                Effect::Closer { .. } => loc.closer.push(found),
                _ => loc.found.push(found),
            }
        }
    }
    let stopped =
        || limits.deadline.is_some_and(|d| Instant::now() >= d) || cancel.load(Ordering::Relaxed);
    if loc.repairs().next().is_none() && !stopped() {
        let (found, runs) = super::joint::joint_repair(failure, &mut work, &loc, cfg, &stopped);
        loc.runs += runs;
        loc.found.extend(found);
    }
    if loc.repairs().next().is_none() && !loc.cut_short {
        let left = Limits {
            max_runs: limits.max_runs.saturating_sub(loc.runs),
            ..*limits
        };
        let (repair, runs, cut) = super::crossbar_repairs::search(failure, cfg, &left, cancel);
        loc.crossbar = repair;
        loc.runs += runs;
        loc.cut_short |= cut;
    }
    loc
}

/// The operand text of `edit` at each of its sites.
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

/// Whether some edit of `rule` gives `failure` at least `want` (a repair, or any
/// improvement), within `max_runs` runs.
pub(crate) fn rule_helps(
    failure: &Failure,
    rule: Rule,
    want: Effect,
    cfg: &RunConfig,
    max_runs: usize,
) -> bool {
    let cfg = &judging_config(failure, cfg);
    let cores = &failure.bundle.program.cores;
    let groups = group_numbers(failure.bundle);
    let edits = rule_edits(rule, cores, &groups);
    let mut work = failure.bundle.clone();
    edits
        .iter()
        .take(max_runs)
        .any(|edit| match try_edit(failure, &mut work, edit, cfg) {
            Effect::Repaired => true,
            Effect::Improved { .. } => want != Effect::Repaired,
            Effect::Closer { .. } | Effect::Nothing => false,
        })
}

/// The edits of `rule` on a program: its tweak at every site of the opcode at once, or at
/// each site in turn (for a tweak naming a group or core, every other group or core).
fn rule_edits(rule: Rule, cores: &[Vec<Inst>], groups: &[Vec<u32>]) -> Vec<Edit> {
    if rule.every && matches!(rule.tweak, Tweak::Activation { .. }) {
        return repairs::activation_edits(cores)
            .into_iter()
            .filter(|e| e.opcode == rule.opcode)
            .collect();
    }
    if rule.every {
        let sites: Vec<(u32, u32)> = repairs::sites_of(cores, rule.opcode)
            .filter(|&(c, pc)| {
                repairs::apply(&cores[c as usize][pc as usize], rule.tweak).is_some()
            })
            .collect();
        if sites.is_empty() {
            return Vec::new();
        }
        return vec![Edit {
            opcode: rule.opcode,
            tweak: rule.tweak,
            every: true,
            sites,
            per_site: Vec::new(),
        }];
    }
    let same_field = |t: Tweak| match (t, rule.tweak) {
        (Tweak::Group(_), Tweak::Group(_))
        | (Tweak::Core(_), Tweak::Core(_))
        | (Tweak::Activation { .. }, Tweak::Activation { .. })
        | (Tweak::Restore(_), Tweak::Restore(_)) => true,
        (a, b) => a == b,
    };
    single_edits(cores, groups)
        .into_iter()
        .filter(|e| e.opcode == rule.opcode && same_field(e.tweak))
        .collect()
}
