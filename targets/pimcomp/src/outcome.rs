//! One network through PIMCOMP-NN and the check: its outcome and its signature.
//!
//! Outcomes: `pass`; `mismatch` and `disagreement` (from `pimdiff pimcomp`'s check: a node's
//! output differs from the exact reference, or the program and its own side table disagree
//! on an operand or do not line up); `crash` (a signal other than SIGABRT, with the top frames
//! inside PIMCOMP-NN); `abort` (SIGABRT: the compiler's own message, e.g. a failed assertion
//! or an uncaught exception); `hang` (the timeout or the memory watchdog); `rejected` (the
//! compiler refuses a valid model: an exit status or no output, with its message);
//! `core-count` (the program names a core at or beyond its config's `core_cnt`: a finding;
//! its numerics are still checked with the count raised, see [`super::cores`]);
//! `unsupported` (the check cannot judge the program: counted, never passed).
//!
//! **One root cause, one signature.** Crashes and aborts: pipeline, signal and the top three
//! frames inside PIMCOMP-NN (function names, not lines, so that a neighbouring line of the
//! same function is the same bug). Mismatches: pipeline, the operator of the first wrong node
//! in topological order, how it was observed, whether all or part of its elements are wrong,
//! and the instruction kinds the localization names. Messages are abstracted (numbers become
//! `N`) before they enter a signature.

use serde::Serialize;

use std::path::Path;

use super::compile::{frames, CompileRun, CompilerSetup, Exit, Frame, Pipeline, RAISED_PROGRAM};
use super::cores::{self, CoreCensus};
use crate::check::{self as pimcomp, Checked, Control, PimcompError, Status};
use pimdiff_engine::finding::{abstract_message, Kind, Signature};
use pimdiff_engine::process::Clock;

/// What one compile and check came to.
#[derive(Clone, Debug, Serialize)]
pub struct CaseOutcome {
    pub pipeline: Pipeline,
    /// `pass`, `mismatch`, `disagreement`, `crash`, `abort`, `hang`, `rejected`, `unsupported`.
    pub kind: Kind,
    /// The deduplication key of a finding (`None` for pass and unsupported).
    pub signature: Option<Signature>,
    /// One line for people: the message, the wrong node, the reason.
    pub detail: String,
    /// Crash frames (all of them; the signature uses the top three inside PIMCOMP-NN).
    pub frames: Vec<Frame>,
    /// Further findings of the same compile beside `signature` (a `core-count` finding of a
    /// program whose numerics also mismatch).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<Signature>,
    /// Why the numerics were not checked, for an outcome that is not `unsupported` itself
    /// (a `core-count` finding whose raised copy the check could not judge).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
}

impl CaseOutcome {
    /// An outcome without frames or further findings.
    pub fn new(
        pipeline: Pipeline,
        kind: Kind,
        signature: Option<Signature>,
        detail: String,
    ) -> CaseOutcome {
        CaseOutcome {
            pipeline,
            kind,
            signature,
            detail,
            frames: Vec::new(),
            also: Vec::new(),
            unchecked: None,
        }
    }

    /// Every finding signature of this outcome.
    pub fn signatures(&self) -> impl Iterator<Item = &Signature> {
        self.signature.iter().chain(&self.also)
    }

    /// Whether `signature` is among this outcome's findings, or is the cause
    /// ([`mismatch_cause`]) of one of them.
    pub fn has(&self, signature: &Signature) -> bool {
        self.signatures()
            .any(|s| s == signature || mismatch_cause(s).is_some_and(|(c, _)| c == *signature))
    }
}

/// The cause of a mismatch signature, and whether it is localized: what one defect shares
/// across the signature's parts that only say how it showed. A mismatch is signed
/// `{pipeline}/{op}/{observed}/{all|some}[/{writers}]` (or `…/channels-permuted[/…]`); one
/// defect shows under several of them: batch mode's input reuse (docs/pimcomp-findings.md, B1
/// and B2) gets some elements of one network's first convolution wrong and all of another's,
/// and would wrong an FC's gathered inputs the same way. So the cause keeps the pipeline and,
/// when the localization named the instructions that wrote the first wrong `mvmul`'s wrong
/// inputs, those (`batch/inputs-written-by/lmv`: localized, across operators); else the
/// operator alone (`element/OP_CONV`), or its pattern (`…/OP_CONCAT/channels-permuted`).
/// `None` for any other signature (its own cause).
pub fn mismatch_cause(signature: &Signature) -> Option<(Signature, bool)> {
    if signature.kind != Kind::Mismatch {
        return None;
    }
    let parts: Vec<&str> = signature.detail.split('/').collect();
    let (pipeline, op) = (parts.first()?, parts.get(1)?);
    if op.starts_with("run-") || op.is_empty() {
        return None;
    }
    let (pattern, writers) = match parts.get(2) {
        Some(&"channels-permuted") => (Some("channels-permuted"), parts.get(3)),
        Some(_) => (None, parts.get(4)),
        None => return None,
    };
    let (detail, localized) = match (writers, pattern) {
        (Some(w), _) => (format!("{pipeline}/inputs-written-by/{w}"), true),
        (None, Some(p)) => (format!("{pipeline}/{op}/{p}"), false),
        (None, None) => (format!("{pipeline}/{op}"), false),
    };
    (detail != signature.detail).then(|| (Signature::new(Kind::Mismatch, detail), localized))
}

/// One node as a check observed it: what the cross-pipeline comparison needs.
#[derive(Clone, Debug)]
pub struct NodeSeen {
    pub name: String,
    pub op: String,
    pub status: Status,
    /// The observed output and which elements were observed.
    pub values: Option<(Vec<i8>, Vec<bool>)>,
    /// The reference this check compared the node with, when it has one.
    pub reference: Option<Vec<i8>>,
}

/// Kinds in order of severity (the first is reported when both pipelines fail).
pub const KINDS: [Kind; 10] = [
    Kind::Crash,
    Kind::Abort,
    Kind::Hang,
    Kind::Mismatch,
    Kind::CrossMode,
    Kind::Disagreement,
    Kind::CoreCount,
    Kind::Rejected,
    Kind::Unsupported,
    Kind::Pass,
];

/// A kind's severity rank (0 = most severe).
pub fn severity(kind: Kind) -> usize {
    KINDS.iter().position(|k| *k == kind).unwrap_or(KINDS.len())
}

fn signal_name(sig: i32) -> String {
    match sig {
        4 => "SIGILL".into(),
        6 => "SIGABRT".into(),
        7 => "SIGBUS".into(),
        8 => "SIGFPE".into(),
        9 => "SIGKILL".into(),
        11 => "SIGSEGV".into(),
        other => format!("signal {other}"),
    }
}

/// The compiler's own message: the last line of stderr that is not a frame line, else the
/// last line of stdout (PIMCOMP-NN prints errors to either).
fn last_message(run: &CompileRun) -> String {
    let last = |text: &str| -> Option<String> {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.starts_with("PIMDIFF-FRAME") && !l.is_empty())
            .rfind(|l| !l.starts_with("====") && !l.starts_with("----"))
            .map(str::to_string)
    };
    last(&run.stderr)
        .or_else(|| last(&run.stdout))
        .unwrap_or_default()
}

/// Classifies a compile that did not produce both output files, or ended abnormally.
/// `None`: the compile succeeded; check its program.
pub fn compile_outcome(
    setup: &CompilerSetup,
    pipeline: Pipeline,
    run: &CompileRun,
) -> Option<CaseOutcome> {
    let p = pipeline.name();
    let make = |kind, signature: Option<Signature>, detail: String, frames| {
        Some(CaseOutcome {
            frames,
            ..CaseOutcome::new(pipeline, kind, signature, detail)
        })
    };
    match &run.exit {
        Exit::Signal { signal } => {
            let frames = frames(setup, &run.stderr);
            let top: Vec<&str> = frames
                .iter()
                .filter(|f| f.own && f.function != "main")
                .take(3)
                .map(|f| f.function.as_str())
                .collect();
            let (kind, head) = if *signal == 6 {
                (Kind::Abort, abstract_message(&last_message(run)))
            } else {
                (Kind::Crash, String::new())
            };
            let sig = format!(
                "{p}/{}/{}{}",
                signal_name(*signal),
                if head.is_empty() {
                    String::new()
                } else {
                    format!("{head}/")
                },
                if top.is_empty() {
                    "no-frames".to_string()
                } else {
                    top.join("<")
                }
            );
            let detail = format!(
                "{} in {}: {}",
                signal_name(*signal),
                frames
                    .iter()
                    .find(|f| f.own)
                    .map_or("??".to_string(), |f| format!(
                        "{} ({})",
                        f.function, f.location
                    )),
                last_message(run)
            );
            make(kind, Some(Signature::new(kind, sig)), detail, frames)
        }
        Exit::Timeout { seconds, overrun } => {
            let limit = std::time::Duration::from_secs_f64(*seconds);
            // A compile that blocked (the wall-clock backstop) is another bug than one that
            // computed past its CPU time.
            let (what, detail) = match overrun {
                Some(o) if o.clock == Clock::Wall => ("blocked", o.describe(limit)),
                Some(o) => ("timeout", o.describe(limit)),
                None => ("timeout", format!("no exit within {seconds:.0} s")),
            };
            make(
                Kind::Hang,
                Some(Signature::new(Kind::Hang, format!("{p}/{what}"))),
                detail,
                Vec::new(),
            )
        }
        Exit::Memory { mib } => make(
            Kind::Hang,
            Some(Signature::new(Kind::Hang, format!("{p}/memory"))),
            format!("resident memory {mib} MiB over the watchdog's limit"),
            Vec::new(),
        ),
        Exit::Code { code } if *code != 0 || run.program().is_none() || run.table().is_none() => {
            let msg = last_message(run);
            make(
                Kind::Rejected,
                Some(Signature::new(
                    Kind::Rejected,
                    format!("{p}/{}", abstract_message(&msg)),
                )),
                format!("exit {code}, no program: {msg}"),
                Vec::new(),
            )
        }
        Exit::Code { .. } => None,
    }
}

/// Checks a compiled program with `pimdiff pimcomp`'s check (seeded by `check_seed`), and
/// its cores against its config: a core at or beyond `core_cnt` is a `core-count` finding,
/// and the numerics are checked on a copy with the count raised ([`RAISED_PROGRAM`] in the
/// compile's output). Returns the per-node observations for the cross-pipeline comparison.
pub fn check_outcome(
    pipeline: Pipeline,
    run: &CompileRun,
    check_seed: u64,
) -> (CaseOutcome, Option<Vec<NodeSeen>>) {
    let (Some(program), Some(table)) = (run.program(), run.table()) else {
        unreachable!("compile_outcome returns None only with both files")
    };
    let raised = run.output().join(RAISED_PROGRAM);
    let (program, census) = match cores::census(&program) {
        Ok(c) if c.beyond() => match cores::raise_core_cnt(&program, &raised) {
            Ok(_) => (raised, Some(c)),
            Err(_) => (program, Some(c)),
        },
        _ => (program, None),
    };
    let (mut outcome, seen) = check_program(pipeline, &program, &table, check_seed);
    if let Some(c) = census {
        add_core_count(&mut outcome, &c);
    }
    (outcome, seen)
}

/// Adds the `core-count` finding to the numerics' outcome: it becomes the outcome when the
/// numerics found nothing more severe, else a further signature.
fn add_core_count(outcome: &mut CaseOutcome, c: &CoreCensus) {
    let sig = c.signature(outcome.pipeline.name());
    let numerics = if outcome.detail.is_empty() {
        outcome.kind.to_string()
    } else {
        format!("{}: {}", outcome.kind, outcome.detail)
    };
    let detail = format!(
        "{}; with core_cnt raised to {} the numerics check says {numerics}",
        c.detail(),
        c.max_index.map_or(c.core_cnt, |m| m + 1)
    );
    if outcome.kind == Kind::Unsupported {
        outcome.unchecked = Some(format!("core-count, numerics: {}", outcome.detail));
    }
    if severity(outcome.kind) > severity(Kind::CoreCount) {
        outcome.kind = Kind::CoreCount;
        outcome.also.extend(outcome.signature.take());
        outcome.signature = Some(sig);
    } else {
        outcome.also.push(sig);
    }
    outcome.detail = detail;
}

/// The numerics check of one program file.
fn check_program(
    pipeline: Pipeline,
    program: &Path,
    table: &Path,
    check_seed: u64,
) -> (CaseOutcome, Option<Vec<NodeSeen>>) {
    let p = pipeline.name();
    let opts = pimcomp::Options {
        program: program.to_path_buf(),
        table: table.to_path_buf(),
        seed: check_seed,
        schedule: Default::default(),
        probes: true,
        control: Control::None,
    };
    let outcome = |kind, signature, detail| CaseOutcome::new(pipeline, kind, signature, detail);
    match pimcomp::check(&opts) {
        Err(PimcompError::Misaligned { program, table, .. }) => {
            let op = |t: &str| t.split_whitespace().next().unwrap_or("").to_string();
            let o = outcome(
                Kind::Disagreement,
                Some(Signature::new(
                    Kind::Disagreement,
                    format!("{p}/misaligned/{}/{}", op(&program), op(&table)),
                )),
                format!("program and side table do not line up: `{program}` vs {table}"),
            );
            (o, None)
        }
        Err(e) => (
            outcome(
                Kind::Unsupported,
                None,
                format!("check: {}", abstract_message(&e.to_string())),
            ),
            None,
        ),
        Ok(c) => (judge(pipeline, &c), Some(nodes_seen(&c))),
    }
}

/// Every node of a finished check as the cross-pipeline comparison ([`super::cross`]) needs
/// it: the hunt's `--mode both` and `pimdiff pimcomp --cross` alike.
pub fn nodes_seen(c: &Checked) -> Vec<NodeSeen> {
    c.verdicts
        .iter()
        .zip(c.observed.iter())
        .zip(c.reference.iter())
        .map(|((v, o), r)| NodeSeen {
            name: v.name.clone(),
            op: v.op.clone(),
            status: v.status,
            values: o.clone(),
            reference: r.tensor().map(|t| t.iter().copied().collect()),
        })
        .collect()
}

/// The outcome of a finished check.
fn judge(pipeline: Pipeline, c: &Checked) -> CaseOutcome {
    let p = pipeline.name();
    let outcome = |kind, signature, detail| CaseOutcome::new(pipeline, kind, signature, detail);
    if !c.outcome.is_finished() {
        let k = c.outcome.kind();
        return outcome(
            Kind::Mismatch,
            Some(Signature::new(Kind::Mismatch, format!("{p}/run-{k}"))),
            format!("the program's run ended in a {k}"),
        );
    }
    let mismatch = c.verdicts.iter().position(|v| v.status == Status::Mismatch);
    if let Some(v) = mismatch.map(|i| &c.verdicts[i]) {
        let share = if v.mismatches == v.compared {
            "all"
        } else {
            "some"
        };
        let mut writers: Vec<String> = v
            .writers
            .iter()
            .chain(&v.first_wrong_mvmul)
            .filter_map(|w| w.text.split_whitespace().next().map(str::to_string))
            .collect();
        writers.sort();
        writers.dedup();
        let check = serde_json::to_value(v.check)
            .ok()
            .and_then(|x| x.as_str().map(str::to_string))
            .unwrap_or_default();
        let moved = mismatch.is_some_and(|i| {
            let reference = c.reference.get(i).and_then(|r| r.tensor());
            let observed = c.observed.get(i).and_then(|o| o.as_ref());
            reference
                .zip(observed)
                .is_some_and(|(r, o)| channels_permuted(r, o))
        });
        let mut sig = if writers.is_empty() && moved {
            // The pattern names the defect better than how the node was observed or how many
            // of its elements happened to differ.
            format!("{p}/{}/channels-permuted", v.op)
        } else {
            format!("{p}/{}/{check}/{share}", v.op)
        };
        if !writers.is_empty() {
            sig.push('/');
            sig.push_str(&writers.join("+"));
        }
        return outcome(
            Kind::Mismatch,
            Some(Signature::new(Kind::Mismatch, sig)),
            format!(
                "node {} ({}, {}): {} of {} elements differ",
                v.index, v.name, v.op, v.mismatches, v.compared
            ),
        );
    }
    if let Some(v) = c.verdicts.iter().find(|v| !v.disagreements.is_empty()) {
        let d = &v.disagreements[0];
        let op = d.text.split_whitespace().next().unwrap_or("");
        return outcome(
            Kind::Disagreement,
            Some(Signature::new(
                Kind::Disagreement,
                format!("{p}/{}/{op}/{}", v.op, d.field),
            )),
            format!(
                "node {} ({}): `{}` {} is {} in the program, {} in the side table",
                v.index, v.name, d.text, d.field, d.program, d.table
            ),
        );
    }
    let unmodelled = c.verdicts.iter().find(|v| {
        v.status == Status::Unchecked
            && v.reason.as_deref().is_some_and(|r| {
                r.starts_with("no reference") || r.starts_with("the reference has shape")
            })
    });
    if let Some(v) = unmodelled {
        return outcome(
            Kind::Unsupported,
            None,
            format!(
                "node {} ({}): {}",
                v.index,
                v.op,
                abstract_message(v.reason.as_deref().unwrap_or(""))
            ),
        );
    }
    if !c.verdicts.iter().any(|v| v.status == Status::Exact) {
        return outcome(
            Kind::Unsupported,
            None,
            "no node could be compared with an informative reference".into(),
        );
    }
    outcome(Kind::Pass, None, String::new())
}

/// Whether a node's wrong elements are its reference's own values moved between the channels
/// of their pixel: every pixel holding a wrong element was observed whole and holds exactly
/// the reference's values of that pixel in another order (a CONCAT that joins its operands in
/// the wrong order). `observed` is in the reference's `[H, W, C]` order.
fn channels_permuted(reference: &ndarray::Array3<i8>, observed: &(Vec<i8>, Vec<bool>)) -> bool {
    let c = reference.shape()[2];
    let (values, seen) = observed;
    // Logical `[H, W, C]` order, whatever the array's memory layout.
    let reference: Vec<i8> = reference.iter().copied().collect();
    if c < 2 || values.len() != reference.len() || seen.len() != reference.len() {
        return false;
    }
    let mut any = false;
    for ((r, v), s) in reference
        .chunks(c)
        .zip(values.chunks(c))
        .zip(seen.chunks(c))
    {
        if r.iter().zip(v).zip(s).all(|((a, b), &o)| !o || a == b) {
            continue;
        }
        let (mut r, mut v) = (r.to_vec(), v.to_vec());
        r.sort_unstable();
        v.sort_unstable();
        if s.contains(&false) || r != v {
            return false;
        }
        any = true;
    }
    any
}

#[cfg(test)]
mod tests {
    use super::{channels_permuted, mismatch_cause, CaseOutcome, Kind, Pipeline, Signature};
    use ndarray::Array3;

    /// B1 and B2 (some and all of a first convolution wrong, written by a stale `lmv`) are one
    /// cause; without a localization the operator is; other signatures are their own.
    #[test]
    fn mismatch_causes_keep_the_pipeline_and_the_writers_or_the_operator() {
        let m = |d: &str| Signature::new(Kind::Mismatch, d);
        let cause = |d: &str| mismatch_cause(&m(d)).map(|(s, l)| (s.detail, l));
        let lmv = Some(("batch/inputs-written-by/lmv".to_string(), true));
        assert_eq!(cause("batch/OP_CONV/isolated/some/lmv"), lmv);
        assert_eq!(cause("batch/OP_FC/end-to-end/all/lmv"), lmv);
        assert_eq!(
            cause("element/OP_CONV/end-to-end/some"),
            Some(("element/OP_CONV".to_string(), false))
        );
        // Already its operator and pattern: its own cause.
        assert_eq!(cause("element/OP_CONCAT/channels-permuted"), None);
        assert_eq!(cause("batch/run-fault"), None);
        assert_eq!(cause("batch/OP_CONV"), None);
        assert_eq!(
            mismatch_cause(&Signature::new(Kind::Abort, "batch/OP_CONV/x/all")),
            None
        );
        let mut o = CaseOutcome::new(
            Pipeline::Batch,
            Kind::Mismatch,
            Some(m("batch/OP_CONV/isolated/all/lmv")),
            String::new(),
        );
        assert!(o.has(&m("batch/inputs-written-by/lmv")));
        assert!(!o.has(&m("element/inputs-written-by/lmv")));
        o.signature = Some(m("batch/OP_CONV/isolated/all"));
        assert!(o.has(&m("batch/OP_CONV")));
    }

    fn reference() -> Array3<i8> {
        // 1 x 2 pixels, 3 channels: [1, 2, 3], [4, 5, 6].
        Array3::from_shape_vec((1, 2, 3), vec![1, 2, 3, 4, 5, 6]).unwrap()
    }

    #[test]
    fn channel_blocks_joined_in_the_wrong_order_are_a_permutation() {
        let observed = (vec![3, 1, 2, 4, 5, 6], vec![true; 6]);
        assert!(channels_permuted(&reference(), &observed));
    }

    #[test]
    fn a_value_from_another_pixel_or_a_new_value_is_not() {
        let from_other_pixel = (vec![4, 2, 3, 4, 5, 6], vec![true; 6]);
        assert!(!channels_permuted(&reference(), &from_other_pixel));
        let new_value = (vec![1, 2, 3, 4, 6, 7], vec![true; 6]);
        assert!(!channels_permuted(&reference(), &new_value));
    }

    #[test]
    fn the_logical_order_counts_not_the_memory_layout() {
        // The same [H, W, C] tensor stored channel-major.
        let chw = Array3::from_shape_vec((3, 1, 2), vec![1, 4, 2, 5, 3, 6]).unwrap();
        let hwc = chw.permuted_axes([1, 2, 0]);
        assert_eq!(hwc, reference());
        let observed = (vec![3, 1, 2, 4, 5, 6], vec![true; 6]);
        assert!(channels_permuted(&hwc, &observed));
    }

    #[test]
    fn a_partly_observed_wrong_pixel_or_an_exact_node_is_not() {
        let partly = (
            vec![3, 1, 2, 4, 5, 6],
            vec![true, true, false, true, true, true],
        );
        assert!(!channels_permuted(&reference(), &partly));
        let exact = (vec![1, 2, 3, 4, 5, 6], vec![true; 6]);
        assert!(!channels_permuted(&reference(), &exact));
    }
}
