//! The outcome of checking one case, and its *signature*.
//!
//! Outcomes follow the design ("Outcomes"): `pass`, `mismatch`, `fault`, `deadlock`,
//! `compile-error`, `unsupported`; three findings the hunt needs to be trustworthy: `timeout`
//! (a compile or run that did not finish within the watchdog's limit: a hang is a bug, as in
//! libFuzzer), `interpreter-panic` (a bug in pimdiff itself, never hidden) and
//! `bogus-unsupported` (a decline whose claimed numbers the harness refutes); plus two kinds
//! that are limits rather than verdicts:
//! `out-of-steps` (the step budget ran out; programs are straight-line, so this only happens
//! when a program is longer than the budget) and `poisoned` (the tooling itself failed, e.g.
//! an external compiler timed out or a temporary directory could not be made). Following
//! wasmtime's differential fuzzing, those two are counted and reported, never mistaken for a
//! bug or for agreement.
//!
//! A [`Signature`] identifies a failure abstractly enough that the same bug on different cases
//! gets the same signature: the outcome kind plus the faulting opcode and fault kind, the
//! blocked instructions of a deadlock, or the *shape class* of a mismatch (which channels,
//! pixels and batch entries differ, as "all"/"some"/"border only"...). Hunts deduplicate
//! findings by signature and the minimizer shrinks a case while its signature stays the same.

use std::fmt;
use std::time::Duration;

pub use pimdiff_engine::finding::{abstract_message, Signature};
use pimdiff_engine::finding::{is_unjudged, Kind, Verdict};

use pimdiff_isa::Opcode;
use serde::{Deserialize, Serialize};

/// What happened to one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Compiled, ran to completion, and the output equals the oracle's exactly.
    Pass,
    /// Ran to completion but the output differs from the oracle's.
    Mismatch(Mismatch),
    /// The interpreter stopped on a fault. `report` is the interpreter's text (core, pc,
    /// instruction, reason); `kind` is the fault kind's name (e.g. `LmemRange`).
    Fault {
        report: String,
        opcode: Opcode,
        kind: String,
    },
    /// Every unfinished core blocked. `report` is the interpreter's per-core wait report;
    /// `waits` an abstract summary of it (`blocked at recv, send`: the blocked opcodes), used
    /// in the signature.
    Deadlock { report: String, waits: String },
    /// The step budget ran out before the program finished (a limit, not a finding).
    OutOfSteps { executed: u64 },
    /// The compiler failed on a case it did not decline, or produced a bundle that cannot be
    /// loaded (unreadable files, a manifest that disagrees with the case, crossbars that do
    /// not fit the architecture).
    CompileError { message: String },
    /// The compiler declined the case, with its reason (not a finding).
    Unsupported { reason: String },
    /// A limit of the tooling itself, e.g. a temporary directory could not be made (not a
    /// finding).
    Poisoned { reason: String },
    /// A stage of the check (`compile`, `run`, `oracle`) did not finish within `limit`: the
    /// compiler under test (or the interpreter) hangs. `overrun` records the CPU and wall
    /// time of an external compiler killed by its process limits (`None` for the watchdog's
    /// wall-clock stage limit).
    Timeout {
        stage: String,
        limit: Duration,
        overrun: Option<pimdiff_engine::process::Overrun>,
    },
    /// The interpreter panicked: a bug in pimdiff itself, reported as a finding of its own.
    InterpreterPanic { message: String },
    /// In-process code of the check panicked in `stage`: the in-repo compiler (`compile`), the
    /// reference (`oracle`), the harness around the run. A crash of that code, with its
    /// message and the `file:line` where it happened.
    Crash {
        stage: String,
        message: String,
        location: Option<String>,
    },
    /// The compiler declined the case with a claim (needed vs. available) that the harness
    /// refutes; `problem` says how.
    BogusUnsupported { reason: String, problem: String },
    /// Two cores accessed the same global bytes, at least one writing, with no `sync`/`wait`
    /// or message ordering them (`report`: both sites and the bytes; `detail`: the two
    /// opcodes and access kinds, for the signature).
    Race { report: String, detail: String },
    /// An instruction read bytes that neither the host nor an instruction wrote (`detail`:
    /// its opcode and memory space).
    UninitializedRead { report: String, detail: String },
    /// The run's result changed with the core interleaving: under `schedule` it ended
    /// differently from the fixed schedule (`detail`: the two endings, abstractly).
    ScheduleDependent {
        schedule: String,
        report: String,
        detail: String,
    },
}

/// A differing output: how many elements differ and the first ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Elements that differ.
    pub differing: usize,
    /// Elements of the output.
    pub total: usize,
    /// The first differing elements in row-major order (at most [`Mismatch::FIRST`]):
    /// `(index, oracle value, machine value)`.
    pub first: Vec<(Vec<usize>, i32, i32)>,
    /// Which parts of the output differ, abstractly (used by the signature).
    pub class: MismatchClass,
}

impl Mismatch {
    /// How many differing elements a mismatch records individually.
    pub const FIRST: usize = 8;
}

/// The abstract shape of a mismatch: a few words that do not depend on the sizes, so that
/// one bug on cases of different sizes classifies the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MismatchClass {
    /// Whether the values differ or the output's shape itself.
    pub what: MismatchWhat,
    /// Output channels (conv2d) or features (MVM) with a difference.
    pub channels: Extent,
    /// Output pixels with a difference (conv2d; not applicable to MVM).
    pub pixels: PixelExtent,
    /// Batch entries with a difference.
    pub batch: Extent,
}

/// What differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MismatchWhat {
    /// Same shape, different values.
    Values,
    /// The machine's output slot has another shape than the oracle's output.
    OutputShape,
}

/// How much of an axis has a difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Extent {
    All,
    Some,
}

/// Which output pixels have a difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PixelExtent {
    All,
    /// Only pixels on the output's border (first/last row or column).
    BorderOnly,
    /// Only pixels off the border.
    InteriorOnly,
    Some,
    /// An MVM output has no pixels.
    NotApplicable,
}

impl fmt::Display for Extent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Extent::All => "all",
            Extent::Some => "some",
        })
    }
}

impl fmt::Display for PixelExtent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PixelExtent::All => "all",
            PixelExtent::BorderOnly => "border only",
            PixelExtent::InteriorOnly => "interior only",
            PixelExtent::Some => "some",
            PixelExtent::NotApplicable => "-",
        })
    }
}

impl fmt::Display for MismatchClass {
    /// `channels all, pixels border only, batch all`, or `output shape`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.what {
            MismatchWhat::Values => {
                write!(
                    f,
                    "channels {}, pixels {}, batch {}",
                    self.channels, self.pixels, self.batch
                )
            }
            MismatchWhat::OutputShape => f.write_str("output shape"),
        }
    }
}

impl Outcome {
    /// The kind as a word: `pass`, `mismatch`, `fault`, `deadlock`, `out-of-steps`,
    /// `compile-error`, `unsupported`, `poisoned`, `timeout`, `interpreter-panic`,
    /// `bogus-unsupported`, `race`, `uninitialized-read`, `schedule-dependent`.
    pub fn kind(&self) -> Kind {
        match self {
            Outcome::Pass => Kind::Pass,
            Outcome::Mismatch(_) => Kind::Mismatch,
            Outcome::Fault { .. } => Kind::Fault,
            Outcome::Deadlock { .. } => Kind::Deadlock,
            Outcome::OutOfSteps { .. } => Kind::OutOfSteps,
            Outcome::CompileError { .. } => Kind::CompileError,
            Outcome::Unsupported { .. } => Kind::Unsupported,
            Outcome::Poisoned { .. } => Kind::Poisoned,
            Outcome::Timeout { .. } => Kind::Timeout,
            Outcome::InterpreterPanic { .. } => Kind::InterpreterPanic,
            Outcome::Crash { .. } => Kind::Crash,
            Outcome::BogusUnsupported { .. } => Kind::BogusUnsupported,
            Outcome::Race { .. } => Kind::Race,
            Outcome::UninitializedRead { .. } => Kind::UninitializedRead,
            Outcome::ScheduleDependent { .. } => Kind::ScheduleDependent,
        }
    }

    /// Whether the outcome is a finding: mismatch, fault, deadlock, compile error, timeout,
    /// interpreter panic, bogus unsupported, race, uninitialized read or schedule-dependent. Pass, unsupported, out-of-steps and poisoned
    /// are not.
    pub fn is_finding(&self) -> bool {
        matches!(
            self,
            Outcome::Mismatch(_)
                | Outcome::Fault { .. }
                | Outcome::Deadlock { .. }
                | Outcome::CompileError { .. }
                | Outcome::Timeout { .. }
                | Outcome::InterpreterPanic { .. }
                | Outcome::Crash { .. }
                | Outcome::BogusUnsupported { .. }
                | Outcome::Race { .. }
                | Outcome::UninitializedRead { .. }
                | Outcome::ScheduleDependent { .. }
        )
    }

    /// What the outcome comes to: a finding; no verdict when the case was declined, ran out
    /// of steps or the tooling failed; clean when it passed.
    pub fn verdict(&self) -> Verdict {
        if self.is_finding() {
            Verdict::Findings
        } else if is_unjudged(self.kind()) {
            Verdict::NoVerdict
        } else {
            Verdict::Clean
        }
    }

    /// The signature of a finding; `None` for every outcome that is not one.
    pub fn signature(&self) -> Option<Signature> {
        let detail = match self {
            Outcome::Mismatch(m) => m.class.to_string(),
            Outcome::Fault { opcode, kind, .. } => format!("{}: {kind}", opcode.mnemonic()),
            Outcome::Deadlock { waits, .. } => waits.clone(),
            Outcome::CompileError { message } => abstract_message(message),
            Outcome::Timeout { stage, .. } => stage.clone(),
            Outcome::InterpreterPanic { message } => abstract_message(message),
            Outcome::Crash {
                stage,
                message,
                location,
            } => match location {
                Some(at) => format!("{stage}: {} at {at}", abstract_message(message)),
                None => format!("{stage}: {}", abstract_message(message)),
            },
            Outcome::BogusUnsupported { problem, .. } => abstract_message(problem),
            Outcome::Race { detail, .. }
            | Outcome::UninitializedRead { detail, .. }
            | Outcome::ScheduleDependent { detail, .. } => detail.clone(),
            _ => return None,
        };
        Some(Signature::new(self.kind(), detail))
    }

    /// The schedule a `schedule-dependent` outcome ran differently under.
    pub fn schedule(&self) -> Option<&str> {
        match self {
            Outcome::ScheduleDependent { schedule, .. } => Some(schedule),
            _ => None,
        }
    }

    /// A one-line description (kind and the first line of the detail), for logs.
    pub fn summary(&self) -> String {
        match self {
            Outcome::Pass => "pass".into(),
            Outcome::Mismatch(m) => {
                format!("mismatch: {} of {} elements differ", m.differing, m.total)
            }
            Outcome::Fault { report, .. } => format!("fault: {}", first_line(report)),
            Outcome::Deadlock { report, .. } => format!("deadlock: {}", first_line(report)),
            Outcome::OutOfSteps { executed } => {
                format!("out of steps after {executed} instructions")
            }
            Outcome::CompileError { message } => format!("compile error: {}", first_line(message)),
            Outcome::Unsupported { reason } => format!("unsupported: {}", first_line(reason)),
            Outcome::Poisoned { reason } => format!("poisoned: {}", first_line(reason)),
            Outcome::Timeout {
                stage,
                limit,
                overrun: Some(o),
            } => format!(
                "timeout: the {stage} stage did not finish: {}",
                o.describe(*limit)
            ),
            Outcome::Timeout { stage, limit, .. } => format!(
                "timeout: the {stage} stage did not finish within {:.1} s",
                limit.as_secs_f64()
            ),
            Outcome::InterpreterPanic { message } => {
                format!("interpreter panic: {}", first_line(message))
            }
            Outcome::Crash {
                stage,
                message,
                location,
            } => format!(
                "crash in the {stage} stage: {}{}",
                first_line(message),
                location
                    .as_deref()
                    .map_or(String::new(), |l| format!(" at {l}"))
            ),
            Outcome::BogusUnsupported { problem, .. } => {
                format!("bogus unsupported: {}", first_line(problem))
            }
            Outcome::Race { report, .. } => first_line(report).to_string(),
            Outcome::UninitializedRead { report, .. } => first_line(report).to_string(),
            Outcome::ScheduleDependent {
                schedule, report, ..
            } => {
                format!(
                    "schedule-dependent under {schedule}: {}",
                    first_line(report)
                )
            }
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// The outcome of a case overdue in `stage`.
pub fn timeout_outcome(stage: pimdiff_engine::hunt::watchdog::Stage, limit: Duration) -> Outcome {
    Outcome::Timeout {
        stage: stage.name().to_string(),
        limit,
        overrun: None,
    }
}
