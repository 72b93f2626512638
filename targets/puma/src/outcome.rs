//! What one compile (and its check) of a PUMA case came to, on the shared [`Kind`]s, and the
//! signature that files it.
//!
//! | kind | when | signature detail |
//! |---|---|---|
//! | `crash` | a signal other than SIGABRT, or a sanitizer's report | `SIGSEGV/f<g<h`, `asan heap-use-after-free/f<g`, `ubsan <error>/f` |
//! | `abort` | SIGABRT: a failed assertion (or an uncaught exception) | `file.cpp Class::function: condition` |
//! | `hang` | killed at its CPU-time limit, the wall-clock backstop or the memory limit | `timeout`, `blocked`, `memory` |
//! | `rejected` | an exit status other than 0 and 2 (the library has no refusal path: a finding) | `exit N: message` |
//! | `compile-error` | exit 0, but programs, weights or placement cannot be loaded or read | `what: message` |
//! | `mismatch` | a known output element differs from the reference | the operation of the first wrong value (`conv`); its cause a repair (`copy vec+1`, [`super::repair`]) |
//! | `fault`, `deadlock` | the machine stops on the programs | `Kind/opcode`, `opcode+opcode` |
//! | `unsupported` | no output element is known (counted, never a pass) | — |
//! | `out-of-steps`, `poisoned` | limits and failures of the tooling (the driver refusing pimdiff's own files, exit 2) | — |
//!
//! **One root cause, one signature.** Crashes are signed by the signal (a sanitizer's `SEGV`
//! is the plain tree's `SIGSEGV`, so one null dereference met in both trees is one finding)
//! and the top three functions inside the compiler, names not lines, past the crash site's
//! graph bookkeeping ([`super::frames::top_own_functions`]); aborts by the assertion
//! (file, function, condition); mismatches by the operation of the network's first wrong value
//! (found by a probe, [`super::probe`]). Whether all or some of its elements are wrong is not
//! part of it: one strided convolution reading the wrong pixels gets every element of a 1×1
//! output wrong and some of a larger one (run 2's findings 008 and 009, docs/puma-findings.md).
//! The instructions that computed the first wrong element (the localization,
//! [`super::localize`]) are in the report and in `finding.json`'s suspects, not in the
//! signature: one wrong convolution is computed by an `mvm` when its kernel is 1×1 and by an
//! `alu` accumulation otherwise, and would otherwise be as many findings. A systematic bug
//! that touches several operations is still one finding per operation here: the hunt joins
//! them by cause, the repair of the compiled program ([`super::repair`]). Messages enter
//! a signature only through [`abstract_message`].

use serde::Serialize;

use super::check::{Checked, Verdict};
use super::compile::{CompileRun, PumaSetup, Tree};
use super::frames::{
    assertion, own_files, sanitizer_report, shim_frames, top_own_functions, Frame,
};
use super::network::PumaNetwork;
use super::probe::inputs_only_output;
use pimdiff_engine::finding::{abstract_message, Kind, Signature};
use pimdiff_engine::process::{signal_name, Clock, Status};

/// One compile's (and check's) outcome.
#[derive(Clone, Debug, Serialize)]
pub struct PumaOutcome {
    pub tree: Tree,
    pub kind: Kind,
    /// `None` for pass, unsupported and the tooling's own kinds.
    pub signature: Option<Signature>,
    /// One line for people.
    pub detail: String,
    /// A crash's or abort's frames, innermost first.
    pub frames: Vec<Frame>,
    /// A crash's, abort's or rejection's own message.
    pub message: Option<String>,
    /// The sanitizer that reported it.
    pub sanitizer: Option<String>,
    /// The machine's check, when the compile succeeded.
    pub checked: Option<Checked>,
    /// Why an `unsupported` case was not judged.
    pub decline: Option<String>,
}

/// Kinds in order of severity: a case's kind is its most severe tree's.
pub const SEVERITY: [Kind; 12] = [
    Kind::Crash,
    Kind::Abort,
    Kind::Hang,
    Kind::Mismatch,
    Kind::Fault,
    Kind::Deadlock,
    Kind::CompileError,
    Kind::Rejected,
    Kind::OutOfSteps,
    Kind::Poisoned,
    Kind::Unsupported,
    Kind::Pass,
];

/// A kind's rank (0 = most severe).
pub fn severity(kind: Kind) -> usize {
    SEVERITY
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(SEVERITY.len())
}

impl PumaOutcome {
    pub fn new(
        tree: Tree,
        kind: Kind,
        signature: Option<Signature>,
        detail: String,
    ) -> PumaOutcome {
        PumaOutcome {
            tree,
            kind,
            signature,
            detail,
            frames: Vec::new(),
            message: None,
            sanitizer: None,
            checked: None,
            decline: None,
        }
    }

    /// A failure of the tooling (counted, never a finding).
    pub fn poisoned(tree: Tree, detail: String) -> PumaOutcome {
        PumaOutcome::new(tree, Kind::Poisoned, None, detail)
    }
}

/// The driver's progress lines (`scripts/puma-driver/puma-driver.cpp`).
const PROGRESS: [&str; 4] = ["building", "compiling", "binding weights", "done"];

/// The last line of `text` that is neither a frame line nor the driver's or the compiler's
/// progress report.
fn last_message(text: &str) -> Option<String> {
    let progress = |l: &str| {
        l.ends_with("done.")
            || l.strip_prefix("puma-driver: ")
                .is_some_and(|rest| PROGRESS.iter().any(|p| rest.starts_with(p)))
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("PIMDIFF-FRAME") && !l.starts_with('#'))
        .rfind(|l| !progress(l))
        .map(str::to_string)
}

fn frames_detail(functions: &[String]) -> String {
    if functions.is_empty() {
        "no-frames".to_string()
    } else {
        functions.join("<")
    }
}

/// The signal a sanitizer's report stands for: its deadly-signal reports (`SEGV` →
/// `SIGSEGV`), and UndefinedBehaviorSanitizer's uses of a pointer to no object (a null
/// pointer, a stale or garbage one), which the plain tree meets as a SIGSEGV or as silently
/// wrong data: one bug met in both trees is one finding.
fn sanitizer_signal(what: &str) -> Option<&'static str> {
    match what {
        "SEGV" => Some("SIGSEGV"),
        "BUS" => Some("SIGBUS"),
        "FPE" => Some("SIGFPE"),
        "ILL" => Some("SIGILL"),
        w if w.contains("null pointer") || w.contains("does not point to an object") => {
            Some("SIGSEGV")
        }
        _ => None,
    }
}

/// What a crash or abort of `net`'s compile is signed with besides its place: when the failure
/// came while the library compiled (the driver printed `compiling`; a crash while the network
/// is built is not about it) and an output of the network is computed from inputs alone,
/// which the partitioner cannot place ([`super::probe::inputs_only_output`]). Why: that
/// network property makes the compile abort in `Partitioner::getVMVMU`, where the last
/// placement pass's order over a pointer-ordered set makes others abort too (a convolution
/// whose accumulation chains end in padding taps); the frames below the assertion are the same
/// for both (`insertLoadsAndStores` ← the partitioner's constructor), so only the network tells
/// the two causes apart, and they are two findings. A network written by hand (`pimdiff puma
/// MODEL.cpp`) has no generated network to ask: no note. The note is added only to a failure
/// in the partitioner ([`in_placement`]).
fn cause_note(run: &CompileRun, net: Option<&PumaNetwork>) -> &'static str {
    let Some(net) = net else {
        return "";
    };
    let compiling = run
        .stdout
        .lines()
        .any(|l| l.trim() == "puma-driver: compiling");
    if compiling && inputs_only_output(net) {
        " (an output computed from inputs alone)"
    } else {
        ""
    }
}

/// Whether a failure signed `detail` lies where an output computed from inputs alone fails:
/// in the partitioner, the pass that places operations (`Partitioner::…`, its assertion or its
/// frames). The note of [`cause_note`] is for those only: the same network failing elsewhere
/// (the debug printer, a convolution's bookkeeping) fails for another reason, and the note
/// would split that finding in two.
fn in_placement(detail: &str) -> bool {
    detail.contains("Partitioner::")
}

/// Classifies a compile of `net` (`None`: a network written by hand, not generated); `None`
/// when it succeeded (exit 0) and its output is to be checked.
pub fn compile_outcome(
    setup: &PumaSetup,
    run: &CompileRun,
    net: Option<&PumaNetwork>,
) -> Option<PumaOutcome> {
    let note = cause_note(run, net);
    let tree_dir = setup.tree(run.tree).unwrap_or(&setup.plain);
    let tree = run.tree;
    if tree == Tree::Sanitize
        && !matches!(
            run.status,
            Status::TimedOut { .. } | Status::MemoryLimit { .. }
        )
    {
        if let Some(report) = sanitizer_report(&run.stderr, &own_files(tree_dir)) {
            let top = frames_detail(&top_own_functions(&report.frames, 3));
            let head = match sanitizer_signal(&report.what) {
                Some(signal) => signal.to_string(),
                None if report.sanitizer == "AddressSanitizer" => format!("asan {}", report.what),
                None => format!("ubsan {}", report.what),
            };
            let note = if in_placement(&top) { note } else { "" };
            let sig = Signature::new(Kind::Crash, format!("{head}/{top}{note}"));
            return Some(PumaOutcome {
                frames: report.frames,
                message: Some(report.message.clone()),
                sanitizer: Some(report.sanitizer.clone()),
                ..PumaOutcome::new(tree, Kind::Crash, Some(sig), report.message)
            });
        }
    }
    match &run.status {
        Status::Signaled { signal, name } => {
            let mut outcome = signaled(tree, tree_dir, run, *signal, name);
            if let Some(sig) = outcome.signature.as_mut() {
                if in_placement(&sig.detail) {
                    sig.detail.push_str(note);
                }
            }
            Some(outcome)
        }
        Status::TimedOut { .. } => {
            // A compile that blocked (the wall-clock backstop) is another bug than one that
            // computed past its CPU time: `blocked`, not `timeout`.
            let overrun = run.status.overrun();
            let what = match overrun {
                Some(o) if o.clock == Clock::Wall => "blocked",
                _ => "timeout",
            };
            Some(PumaOutcome::new(
                tree,
                Kind::Hang,
                Some(Signature::new(Kind::Hang, what)),
                overrun.map_or_else(
                    || format!("no exit within {:.0} s", setup.timeout.as_secs_f64()),
                    |o| o.describe(setup.timeout),
                ),
            ))
        }
        Status::MemoryLimit { rss_bytes, .. } => Some(PumaOutcome::new(
            tree,
            Kind::Hang,
            Some(Signature::new(Kind::Hang, "memory")),
            format!(
                "resident memory {} MiB over the limit of {} MiB",
                rss_bytes >> 20,
                setup.max_rss_bytes >> 20
            ),
        )),
        Status::Cancelled => Some(PumaOutcome::poisoned(tree, "cancelled".into())),
        Status::Exited { code: 0 } => None,
        Status::Exited { code: 2 } => Some(PumaOutcome::poisoned(
            tree,
            format!(
                "the driver refused pimdiff's files (a bug in pimdiff): {}",
                last_message(&run.stderr).unwrap_or_default()
            ),
        )),
        Status::Exited { code } => {
            let message = last_message(&run.stderr)
                .or_else(|| last_message(&run.stdout))
                .unwrap_or_default();
            let sig = Signature::new(
                Kind::Rejected,
                format!("exit {code}: {}", abstract_message(&message)),
            );
            Some(PumaOutcome {
                message: Some(message.clone()),
                ..PumaOutcome::new(
                    tree,
                    Kind::Rejected,
                    Some(sig),
                    format!("exit {code}: {message}"),
                )
            })
        }
    }
}

/// A compile killed by a signal: an abort (signed by its assertion) or a crash (by its
/// frames inside the compiler).
fn signaled(
    tree: Tree,
    tree_dir: &std::path::Path,
    run: &CompileRun,
    signal: i32,
    name: &str,
) -> PumaOutcome {
    let frames = if tree == Tree::Plain {
        shim_frames(tree_dir, &run.stderr)
    } else {
        Vec::new()
    };
    let top = top_own_functions(&frames, 3);
    let at = frames
        .iter()
        .find(|f| f.own)
        .map_or("??".to_string(), Frame::text);
    if signal == libc::SIGABRT {
        let (detail_sig, message) = match assertion(&run.stderr) {
            Some((file, function, cond)) => (
                abstract_message(&format!("{file} {function}: {cond}")),
                format!("{file}: {function}: Assertion `{cond}' failed"),
            ),
            None => {
                let m = last_message(&run.stderr).unwrap_or_default();
                (
                    format!("{}/{}", abstract_message(&m), frames_detail(&top)),
                    m,
                )
            }
        };
        return PumaOutcome {
            frames,
            message: Some(message.clone()),
            ..PumaOutcome::new(
                tree,
                Kind::Abort,
                Some(Signature::new(Kind::Abort, detail_sig)),
                format!("SIGABRT in {at}: {message}"),
            )
        };
    }
    let name = if name.is_empty() {
        signal_name(signal)
    } else {
        name.to_string()
    };
    let sig = Signature::new(Kind::Crash, format!("{name}/{}", frames_detail(&top)));
    PumaOutcome {
        frames,
        message: Some(format!("{name} in {at}")),
        ..PumaOutcome::new(tree, Kind::Crash, Some(sig), format!("{name} in {at}"))
    }
}

/// A fault's signature detail: its kind and the faulting instruction's mnemonic, except for an
/// address beyond the tile memory, which whichever transfer comes first meets (the allocator
/// ran out of memory, not an instruction).
fn fault_detail(kind: &str, opcode: &str) -> String {
    if kind == "TileMemoryRange" {
        kind.to_string()
    } else {
        format!("{kind}/{opcode}")
    }
}

/// The outcome of a successful compile's check.
pub fn check_outcome(tree: Tree, checked: Checked) -> PumaOutcome {
    let (kind, signature, detail, decline) = match &checked.verdict {
        Verdict::Pass { compared, unknown } => (
            Kind::Pass,
            None,
            format!("{compared} elements exact, {unknown} unknown"),
            None,
        ),
        Verdict::AllUnknown { elements } => {
            let why = if *elements == 0 {
                "no outputs to compare".to_string()
            } else {
                "every output element is unknown (sig, tanh or unstreamed pixels)".to_string()
            };
            (Kind::Unsupported, None, why.clone(), Some(why))
        }
        Verdict::Mismatch(m) => {
            let sig = m.root().op.clone();
            let value = |v: Option<i64>| v.map_or("nothing".to_string(), |v| v.to_string());
            (
                Kind::Mismatch,
                Some(Signature::new(Kind::Mismatch, sig)),
                format!(
                    "`{}`{:?} is {}, expected {} ({} of {} known elements of `{}` wrong)",
                    m.output,
                    m.index,
                    value(m.actual),
                    m.expected,
                    m.wrong,
                    m.known,
                    m.output
                ),
                None,
            )
        }
        Verdict::Fault {
            kind,
            opcode,
            at,
            text,
            message,
        } => (
            Kind::Fault,
            Some(Signature::new(Kind::Fault, fault_detail(kind, opcode))),
            format!("{at}: {text}: {message}"),
            None,
        ),
        Verdict::Deadlock { opcodes, report } => (
            Kind::Deadlock,
            Some(Signature::new(Kind::Deadlock, opcodes.join("+"))),
            report.lines().next().unwrap_or("deadlock").to_string(),
            None,
        ),
        Verdict::OutOfSteps { steps } => (
            Kind::OutOfSteps,
            None,
            format!("the step budget ran out after {steps} steps"),
            None,
        ),
        Verdict::Unloadable { what, message } => (
            Kind::CompileError,
            Some(Signature::new(
                Kind::CompileError,
                format!("{what}: {}", abstract_message(message)),
            )),
            format!("{what}: {message}"),
            None,
        ),
    };
    PumaOutcome {
        checked: Some(checked),
        decline,
        ..PumaOutcome::new(tree, kind, signature, detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_placement_failures_carry_the_inputs_only_note() {
        assert!(in_placement(
            "partitioner.cpp Partitioner::getVMVMU: isVMVMUAssigned(op) && \"Virtual MVMU not assigned!\""
        ));
        assert!(in_placement(
            "SIGSEGV/Partitioner::assignVCore<Partitioner::Partitioner"
        ));
        assert!(!in_placement(
            "SIGSEGV/AbstractTensor::printNodeName[abi:cxx11]<InputImagePixelStreamImpl::printNodeAndEdges<ModelImpl::printGraph"
        ));
        assert!(!in_placement("SIGSEGV/maxpool"));
    }

    #[test]
    fn severity_orders_findings_before_tooling_and_passes() {
        assert!(severity(Kind::Crash) < severity(Kind::Mismatch));
        assert!(severity(Kind::Rejected) < severity(Kind::Poisoned));
        assert!(severity(Kind::Unsupported) < severity(Kind::Pass));
        assert_eq!(severity(Kind::Race), SEVERITY.len());
        assert_eq!(
            last_message("puma-driver: building net\nPartitioning graph... done.\nboom\n"),
            Some("boom".to_string())
        );
    }
}
