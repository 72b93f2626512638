//! Cause signatures: what a finding is keyed on once it is localized.
//!
//! In order of preference:
//!
//! 1. **A repair**: when one catalog edit makes the output equal to the oracle's, the cause
//!    is the edited opcode and field (`mismatch: st offset`, `deadlock: recv core`). It names
//!    the root cause rather than the symptom: a `recv` from the wrong core deadlocks on four
//!    cores and faults on two, a store one element off differs in as many shapes as there are
//!    output layouts, yet each is one repair.
//!    When no instruction edit repairs it, an edit of the crossbar export may
//!    (`mismatch: crossbar cells transposed`; see `crossbar_repairs`).
//! 2. **A load of uninitialised global memory** (`mismatch: ld of uninitialised global
//!    memory`): data the compiler never handed over, e.g. a constant segment missing from the
//!    io manifest (see `uninit`).
//! 3. **A fault**: the faulting opcode and the fault kind (`fault: recv: SizeMismatch`), from
//!    the interpreter's structured fault.
//! 4. **A deadlock**: the shape of the wait graph, without core numbers (`deadlock: recv →
//!    finished core`; `recv → send, send → recv` for a cycle of two).
//! 5. Otherwise the shape of the difference (which channels and batch entries differ; not
//!    which pixels, see [`fallback`]): not localized.

use pimdiff_isa::machine::{DeadlockReport, RunOutcome, WaitingFor};

use super::localize::Localization;
use crate::check::outcome::{MismatchWhat, Outcome, Signature};

/// The cause signature of a failing run, and whether it is localized (not the shape).
/// `end` is the run's structured end (see `machine::run_structured`), when available.
pub(crate) fn signature_of(
    outcome: &Outcome,
    loc: &Localization,
    end: Option<&RunOutcome>,
) -> (Signature, bool) {
    let kind = outcome.kind().to_string();
    if let Some(best) = loc.cause_repair() {
        return (
            Signature {
                kind,
                detail: best.label(),
            },
            true,
        );
    }
    if let Some(r) = loc.crossbar.filter(|_| loc.input_matters) {
        return (
            Signature {
                kind,
                detail: r.label().to_string(),
            },
            true,
        );
    }
    if matches!(outcome, Outcome::Mismatch(_)) && !loc.uninitialised.is_empty() {
        return (
            Signature {
                kind,
                detail: "ld of uninitialised global memory".to_string(),
            },
            true,
        );
    }
    match end {
        Some(RunOutcome::Fault(f)) if matches!(outcome, Outcome::Fault { .. }) => (
            Signature {
                kind,
                detail: format!("{}: {}", f.inst.opcode().mnemonic(), f.kind.name()),
            },
            true,
        ),
        Some(RunOutcome::Deadlock(report)) if matches!(outcome, Outcome::Deadlock { .. }) => (
            Signature {
                kind,
                detail: wait_shape(report),
            },
            true,
        ),
        _ => (fallback(outcome), false),
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
            kind: outcome.kind().to_string(),
            detail: format!("channels {}, batch {}", m.class.channels, m.class.batch),
        },
        _ => shape(outcome),
    }
}

/// The outcome's own (shape) signature; the kind alone for an outcome without one.
pub(crate) fn shape(outcome: &Outcome) -> Signature {
    outcome.signature().unwrap_or_else(|| Signature {
        kind: outcome.kind().to_string(),
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
