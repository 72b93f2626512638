//! A suspect: one instruction of the failing program that localization blames, and why.

use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::machine::RunOutcome;
use pimdiff_isa::Inst;
use serde::{Deserialize, Serialize};

use super::attempt::{Found, Localization};
use super::judge::Effect;

/// One ranked suspect, serialised exactly as an entry of `finding.json`'s `"suspects"` array:
/// `{"core": 0, "pc": 7, "op": "mvmul", "why": "…", "fix": "relu=0"}` (`fix` is `null` when
/// no single edit repairs the program).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suspect {
    /// The core whose program holds the instruction.
    pub core: u32,
    /// The 0-based index of the instruction in `bundle/core_<core>.json`.
    pub pc: u32,
    /// The instruction's mnemonic.
    pub op: String,
    /// Why it is suspected, in one sentence (the repair that fixed the output, or the
    /// data-flow evidence).
    pub why: String,
    /// The edit that makes the output equal to the oracle's, in assembly operand syntax
    /// (e.g. `relu=0`, `size=16`, `off=4@0b001`, `drop`), when there is one.
    pub fix: Option<String>,
    /// For the in-repo compiler: the stage and function that emitted the instruction
    /// (`codegen::transfers`), where the program lines up with the compiler's provenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emitted_by: Option<String>,
}

/// At most this many suspects are listed.
pub const MAX_SUSPECTS: usize = 10;

/// The ranked suspects of a localization: the sites of repairs (best first), the reader of a
/// repaired crossbar array, the loads of
/// uninitialised memory, the sites of improvements (most elements fixed first), then the
/// faulting or blocked instructions of the run's structured `end`. One entry per
/// instruction, at most [`MAX_SUSPECTS`].
pub(crate) fn rank(loc: &Localization, end: Option<&RunOutcome>, bundle: &Bundle) -> Vec<Suspect> {
    let cores = &bundle.program.cores;
    let mut out: Vec<Suspect> = Vec::new();
    let mut push = |s: Suspect| {
        if out.len() < MAX_SUSPECTS && !out.iter().any(|o| (o.core, o.pc) == (s.core, s.pc)) {
            out.push(s);
        }
    };
    for f in loc.repairs_ranked() {
        found_suspects(f, cores).into_iter().for_each(&mut push);
    }
    if let Some(r) = &loc.crossbar {
        if let Some((core, pc)) = r.reader(bundle) {
            push(Suspect {
                core,
                pc,
                op: op_at(cores, core, pc),
                why: format!(
                    "it multiplies with crossbar array {} of core {core}, and with `{}` the \
                     output equals the oracle's (the weights were written wrongly, not this \
                     instruction)",
                    r.array,
                    r.fix()
                ),
                fix: Some(r.fix()),
                emitted_by: None,
            });
        }
    }
    for &(core, pc, (lo, hi)) in &loc.uninitialised {
        push(Suspect {
            core,
            pc,
            op: op_at(cores, core, pc),
            why: format!(
                "it loads global memory [{lo}, {hi}) that neither the input, a constant segment \
                 of the io manifest nor any store initialises"
            ),
            fix: None,
            emitted_by: None,
        });
    }
    for f in loc.improvements() {
        found_suspects(f, cores).into_iter().for_each(&mut push);
    }
    for s in end_suspects(end) {
        push(s);
    }
    out
}

/// One suspect per site of a repair or improvement.
fn found_suspects(f: &Found, cores: &[Vec<Inst>]) -> Vec<Suspect> {
    let what = match f.effect {
        Effect::Improved { fixed: 0, .. } => {
            "the run finishes instead of stopping (the output still differs)".to_string()
        }
        Effect::Improved { fixed, of } => format!(
            "{fixed} of {of} differing output elements (on the case and the probe inputs) \
             become right, none goes wrong"
        ),
        _ => "the output equals the oracle's".to_string(),
    };
    f.edit
        .sites
        .iter()
        .zip(&f.fixes)
        .map(|(&(core, pc), fix)| {
            let why = if f.edit.every {
                format!(
                    "with `{fix}` here and the same change on every {} ({} instructions), {what}",
                    f.edit.opcode.mnemonic(),
                    f.edit.sites.len()
                )
            } else if f.edit.sites.len() > 1 {
                // A joint repair: one kind of edit at several sites (a systematic bug).
                format!(
                    "with `{fix}` here and its `{}` fixed the same way at the other {} site(s) \
                     listed, {what} (each alone fixes only part: one bug at every site)",
                    f.edit.tweak.field(),
                    f.edit.sites.len() - 1
                )
            } else {
                format!("with `{fix}`, {what}")
            };
            Suspect {
                core,
                pc,
                op: op_at(cores, core, pc),
                why,
                fix: Some(fix.clone()),
                emitted_by: None,
            }
        })
        .collect()
}

/// The faulting instruction of a fault, the blocked ones of a deadlock.
fn end_suspects(end: Option<&RunOutcome>) -> Vec<Suspect> {
    match end {
        Some(RunOutcome::Fault(f)) => vec![Suspect {
            core: f.core,
            pc: f.pc,
            op: f.inst.opcode().mnemonic().to_string(),
            why: format!("it faults: {}", f.kind),
            fix: None,
            emitted_by: None,
        }],
        Some(RunOutcome::Deadlock(report)) => report
            .blocked
            .iter()
            .map(|b| Suspect {
                core: b.core,
                pc: b.pc,
                op: b.inst.opcode().mnemonic().to_string(),
                why: format!("blocked in the deadlock: {}", b.waiting),
                fix: None,
                emitted_by: None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The mnemonic of the instruction at `(core, pc)`.
fn op_at(cores: &[Vec<Inst>], core: u32, pc: u32) -> String {
    cores
        .get(core as usize)
        .and_then(|c| c.get(pc as usize))
        .map_or("?", |i| i.opcode().mnemonic())
        .to_string()
}

/// Sets each suspect's `emitted_by` from the compiler's `provenance` of the program, when
/// the program is the one the provenance describes (same number of instructions on every
/// core: an injected bug that replaces instructions keeps them aligned, one that inserts or
/// removes them does not, and then nothing is claimed).
pub(crate) fn annotate(
    suspects: &mut [Suspect],
    provenance: &pimdiff_compiler::Provenance,
    bundle: &Bundle,
) {
    let cores = &bundle.program.cores;
    let aligned = provenance.cores() == cores.len()
        && cores.iter().enumerate().all(|(c, insts)| {
            insts.is_empty()
                || provenance.label(c, insts.len() - 1).is_some()
                    && provenance.label(c, insts.len()).is_none()
        });
    if !aligned {
        return;
    }
    for s in suspects {
        s.emitted_by = provenance
            .label(s.core as usize, s.pc as usize)
            .map(str::to_string);
    }
}
