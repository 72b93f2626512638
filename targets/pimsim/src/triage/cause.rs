//! Cause signatures: what a finding is keyed on once it is localized.
//!
//! In order of preference:
//!
//! 0. **A nearby specification** (`mismatch: computes the convolution with its padding moved
//!    by one`): the wrong output is exactly the oracle's output of the case with one attribute
//!    changed, on every probe (see `variants`). It names what the compiler computed, in the
//!    user's terms and for any compiler, and it holds for every case of a bug that rewrites
//!    many instructions at once (a window one row off), where single-instruction repairs
//!    explain some cases and not others. Not when the program also loads global memory that
//!    nothing initialises: data missing from the hand-over (2. below) is the more direct cause.
//! 1. **A repair**: when one catalog edit makes the output equal to the oracle's, the cause
//!    is the edited opcode and field (`mismatch: st offset`, `deadlock: recv core`). It names
//!    the root cause rather than the symptom: a `recv` from the wrong core deadlocks on four
//!    cores and faults on two, a store one element off differs in as many shapes as there are
//!    output layouts, yet each is one repair.
//!    When no instruction edit repairs it, an edit of the crossbar export may
//!    (`mismatch: crossbar cells transposed`; see `crossbar_repairs`).
//! 2. **A load of uninitialised global memory** (`mismatch: ld of uninitialised global
//!    memory`): data the compiler never handed over, e.g. a constant segment missing from the
//!    io manifest (see `uninit`). The same for an uninitialized-read finding (the output
//!    happened to be right): one cause, whichever way it showed.
//! 3. **A fault**: the faulting opcode and the fault kind (`fault: recv: SizeMismatch`), from
//!    the interpreter's structured fault.
//! 4. **A deadlock**: the shape of the wait graph, without core numbers (`deadlock: recv →
//!    finished core`; `recv → send, send → recv` for a cycle of two).
//! 5. Otherwise the shape of the difference (which channels and batch entries differ; not
//!    which pixels, see [`fallback`]): not localized.

use pimdiff_isa::machine::{DeadlockReport, RunOutcome, WaitingFor};

use super::attempt::Localization;
use crate::check::outcome::{MismatchWhat, Outcome, Signature};
pub use pimdiff_engine::hunt::grouping::Cause;

/// Most explanations a cause keeps (its signature and alternatives).
const MAX_EXPLANATIONS: usize = 4;

/// The cause of a failing run. `end` is the run's structured end (see
/// `machine::run_structured`), when available.
pub(crate) fn signature_of(
    outcome: &Outcome,
    loc: &Localization,
    end: Option<&RunOutcome>,
) -> Cause {
    let kind = outcome.kind();
    let wrong_data = matches!(
        outcome,
        Outcome::Mismatch(_) | Outcome::UninitializedRead { .. }
    );
    // Every repair that names a cause, best first: a store one element off that makes two
    // cores' stores overlap is repaired by moving the store or by shortening it.
    let repairs: Vec<String> = if loc.cause_repair().is_some() {
        loc.repairs_ranked()
            .into_iter()
            .map(|f| f.label())
            .collect()
    } else {
        Vec::new()
    };
    let mut explanations: Vec<String> = Vec::new();
    let candidates = loc
        .variant
        .filter(|_| loc.uninitialised.is_empty())
        .map(|v| v.label().to_string())
        .into_iter()
        .chain(repairs)
        .chain(
            loc.crossbar
                .filter(|_| loc.input_matters)
                .map(|r| r.label().to_string()),
        )
        .chain(
            (wrong_data && !loc.uninitialised.is_empty())
                .then(|| "ld of uninitialised global memory".to_string()),
        );
    for c in candidates {
        if !explanations.contains(&c) && explanations.len() < MAX_EXPLANATIONS {
            explanations.push(c);
        }
    }
    let localized = |detail: String, also: Vec<String>| Cause {
        signature: Signature::new(kind, detail),
        localized: true,
        also,
    };
    if let Some((first, rest)) = explanations.split_first() {
        return localized(first.clone(), rest.to_vec());
    }
    match end {
        Some(RunOutcome::Fault(f)) if matches!(outcome, Outcome::Fault { .. }) => localized(
            format!("{}: {}", f.inst.opcode().mnemonic(), f.kind.name()),
            Vec::new(),
        ),
        Some(RunOutcome::Deadlock(report)) if matches!(outcome, Outcome::Deadlock { .. }) => {
            localized(wait_shape(report), Vec::new())
        }
        _ => Cause {
            signature: fallback(outcome),
            localized: false,
            also: Vec::new(),
        },
    }
}

/// The shape signature a finding falls back to when nothing localizes it: which channels and
/// batch entries differ, not which pixels. After minimization the differing pixels say where
/// the shrinking stopped (a two-pixel output differs on its "border" or its "interior"
/// depending on the kernel it kept), not what the bug is; and an MVM, which has no pixels,
/// then signs like a 1×1 convolution.
fn fallback(outcome: &Outcome) -> Signature {
    match outcome {
        Outcome::Mismatch(m) if m.class.what == MismatchWhat::Values => Signature {
            kind: outcome.kind(),
            detail: format!("channels {}, batch {}", m.class.channels, m.class.batch),
        },
        _ => shape(outcome),
    }
}

/// The outcome's own (shape) signature; the kind alone for an outcome without one.
pub(crate) fn shape(outcome: &Outcome) -> Signature {
    outcome.signature().unwrap_or_else(|| Signature {
        kind: outcome.kind(),
        detail: String::new(),
    })
}

/// The wait graph of a deadlock without core numbers: one `opcode → what it waits on` per
/// distinct edge, sorted. A core waits on a finished core, on another blocked core (named by
/// the opcode that core is blocked at), or on an event register.
pub(crate) fn wait_shape(report: &DeadlockReport) -> String {
    let blocked_at = |core: u32| {
        report
            .blocked
            .iter()
            .find(|b| b.core == core)
            .map(|b| b.inst.opcode().mnemonic())
    };
    let mut edges: Vec<String> = report
        .blocked
        .iter()
        .map(|b| {
            let target = match b.waiting {
                WaitingFor::Recv {
                    peer_finished: true,
                    ..
                }
                | WaitingFor::Send {
                    peer_finished: true,
                    ..
                } => "finished core".to_string(),
                WaitingFor::Recv { from: peer, .. } | WaitingFor::Send { to: peer, .. } => {
                    blocked_at(peer).unwrap_or("running core").to_string()
                }
                WaitingFor::Event { .. } => "event".to_string(),
            };
            format!("{} → {target}", b.inst.opcode().mnemonic())
        })
        .collect();
    edges.sort();
    edges.dedup();
    edges.join(", ")
}

/// What minimization keeps of an outcome: its kind, and for a fault the faulting opcode and
/// fault kind, for a compile error its abstract message. Not the shape of a mismatch: the
/// smallest case of a bug rarely differs in the same places as the first one found.
pub(crate) fn kind_key(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Mismatch(_)
        | Outcome::Deadlock { .. }
        | Outcome::Race { .. }
        | Outcome::UninitializedRead { .. }
        | Outcome::ScheduleDependent { .. } => Some(outcome.kind().to_string()),
        Outcome::Fault { .. } | Outcome::CompileError { .. } => {
            outcome.signature().map(|s| s.to_string())
        }
        _ => None,
    }
}
