//! The differential driver: case → compiler → bundle → interpreter → output, and
//! case → oracle; compare exactly.
//!
//! [`check_case`] is the one function every caller uses (hunts, repro, replay, the fuzz
//! targets, the tests). It never panics and never fails: whatever happens becomes an
//! [`Outcome`]. The in-repo path is entirely in memory (no files), so a hunt checks
//! thousands of cases per second; an external compiler goes through a case directory and a
//! bundle directory ([`crate::external`]).
//!
//! The machine runs on the *case's* architecture (cores, arrays, array size, local memory),
//! not on whatever the bundle's config claims: a compiler that assumes more than the case
//! allows is caught by the machine's setup checks or by faults, never silently trusted.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use ndarray::ArrayD;
use pimdiff_compiler::{compile, CompileError, CompileOptions};
use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::machine::{Machine, MachineOptions, RunOutcome, Schedule};
use pimdiff_isa::Arch;
use pimdiff_oracle::Case;

use crate::compare::compare;
use crate::mutate::BugClass;
pub use crate::outcome::{Mismatch, Outcome, Signature};

/// Which compiler produces the bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompilerUnderTest {
    /// The in-repo channel-wise compiler with these options.
    InRepo(CompileOptions),
    /// Any command that reads a case directory and writes a bundle directory; `{case}` and
    /// `{out}` are replaced by the two paths (see [`crate::external`] for the exact rules).
    External { command: String },
    /// The in-repo compiler with a deliberately injected miscompilation (see
    /// [`crate::mutate`]): for proving that the loop finds bugs, and as a sanity check of a
    /// setup. A case without a site for the bug compiles correctly.
    Mutated(BugClass),
}

impl Default for CompilerUnderTest {
    fn default() -> Self {
        CompilerUnderTest::InRepo(CompileOptions::default())
    }
}

impl CompilerUnderTest {
    /// A stable description, recorded in findings so that `repro` can say when the compiler
    /// differs: e.g. `in-repo pimdiff-compiler 0.1.0 (skip_padding, weight_skipping)`,
    /// `external: mycc {case} {out}`, `in-repo pimdiff-compiler 0.1.0 + injected bug missing-bias`.
    pub fn describe(&self) -> String {
        let in_repo = |o: &CompileOptions| {
            let mut opts = Vec::new();
            if o.skip_padding {
                opts.push("skip_padding");
            }
            if o.weight_skipping {
                opts.push("weight_skipping");
            }
            let opts = if opts.is_empty() {
                "no optimizations".to_string()
            } else {
                opts.join(", ")
            };
            format!(
                "in-repo pimdiff-compiler {} ({opts})",
                env!("CARGO_PKG_VERSION")
            )
        };
        match self {
            CompilerUnderTest::InRepo(o) => in_repo(o),
            CompilerUnderTest::External { command } => format!("external: {command}"),
            CompilerUnderTest::Mutated(bug) => {
                format!(
                    "{} + injected bug {}",
                    in_repo(&CompileOptions::default()),
                    bug.name()
                )
            }
        }
    }
}

/// How cases are checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunConfig {
    pub compiler: CompilerUnderTest,
    /// Core interleaving of the interpreter (fixed by default; a seeded random order exposes
    /// races through global memory).
    pub schedule: Schedule,
    /// Instructions executed, over all cores, before a run stops as `out-of-steps`.
    pub step_budget: u64,
    /// Wall-clock limit of one external compiler run; past it the run is `poisoned`.
    pub external_timeout: Duration,
}

impl RunConfig {
    /// 2^26 instructions: programs are straight-line, and a default generated case compiles
    /// to a few hundred; even the largest cases the limits allow stay far below.
    pub const DEFAULT_STEP_BUDGET: u64 = 1 << 26;
    /// 60 s: generous for any real compiler on a small case, short enough for a hunt.
    pub const DEFAULT_EXTERNAL_TIMEOUT: Duration = Duration::from_secs(60);

    /// The default configuration with another compiler.
    pub fn with_compiler(compiler: CompilerUnderTest) -> RunConfig {
        RunConfig {
            compiler,
            ..RunConfig::default()
        }
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            compiler: CompilerUnderTest::default(),
            schedule: Schedule::Fixed,
            step_budget: Self::DEFAULT_STEP_BUDGET,
            external_timeout: Self::DEFAULT_EXTERNAL_TIMEOUT,
        }
    }
}

/// Everything one check produced.
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub outcome: Outcome,
    /// The compiled bundle, when compilation produced one.
    pub bundle: Option<Bundle>,
    /// The oracle's output (always present unless the oracle itself failed: `poisoned`).
    pub oracle: Option<ArrayD<i32>>,
    /// The machine's output, when the program finished and its output could be read.
    pub machine_output: Option<ArrayD<i32>>,
}

/// Checks one case against the compiler under test. Never panics (a panicking in-repo
/// compiler is a `compile-error` finding); every failure is an [`Outcome`].
pub fn check_case(case: &Case, cfg: &RunConfig) -> CaseResult {
    let oracle = match pimdiff_oracle::reference(case) {
        Ok(o) => o,
        Err(e) => {
            return CaseResult {
                outcome: Outcome::Poisoned {
                    reason: format!("the oracle refused the case: {e}"),
                },
                bundle: None,
                oracle: None,
                machine_output: None,
            }
        }
    };
    let compiled = match &cfg.compiler {
        CompilerUnderTest::InRepo(options) => in_repo(case, options),
        CompilerUnderTest::Mutated(bug) => crate::mutate::compile_mutated(*bug, case),
        CompilerUnderTest::External { command } => {
            crate::external::compile_external(case, command, cfg.external_timeout)
        }
    };
    let bundle = match compiled {
        Ok(b) => b,
        Err(outcome) => {
            return CaseResult {
                outcome,
                bundle: None,
                oracle: Some(oracle),
                machine_output: None,
            }
        }
    };
    // An interpreter panic is a bug of the tooling, not of the compiler under test.
    let (outcome, machine_output) =
        match catch_unwind(AssertUnwindSafe(|| run_bundle(case, &bundle, &oracle, cfg))) {
            Ok(r) => r,
            Err(panic) => (
                Outcome::Poisoned {
                    reason: format!("the interpreter panicked: {}", panic_text(&panic)),
                },
                None,
            ),
        };
    CaseResult {
        outcome,
        bundle: Some(bundle),
        oracle: Some(oracle),
        machine_output,
    }
}

/// The in-repo compiler, with its errors as outcomes and a panic as a compile error.
pub(crate) fn in_repo(case: &Case, options: &CompileOptions) -> Result<Bundle, Outcome> {
    match catch_unwind(AssertUnwindSafe(|| compile(case, options))) {
        Ok(Ok(bundle)) => Ok(bundle),
        Ok(Err(e)) => Err(compile_error_outcome(e)),
        Err(panic) => Err(Outcome::CompileError {
            message: format!("the compiler panicked: {}", panic_text(&panic)),
        }),
    }
}

/// `Unsupported` → unsupported, anything else → compile error.
pub(crate) fn compile_error_outcome(e: CompileError) -> Outcome {
    match e {
        CompileError::Unsupported(u) => Outcome::Unsupported {
            reason: u.to_string(),
        },
        other => Outcome::CompileError {
            message: other.to_string(),
        },
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".into()
    }
}

/// The machine architecture of a case: its own sizes, the most square mesh, no fraction bits.
pub fn machine_arch(case: &Case) -> Arch {
    let a = &case.spec.arch;
    let sat = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    let cores = sat(a.cores);
    let [mesh_rows, mesh_cols] = Arch::default_mesh(cores);
    Arch {
        cores,
        arrays_per_core: sat(a.arrays_per_core),
        array_rows: sat(a.array_rows),
        array_cols: sat(a.array_cols),
        local_memory_bytes: sat(a.local_memory_bytes),
        mesh_rows,
        mesh_cols,
        frac_bits: 0,
    }
}

/// Interprets a bundle on the case's input and compares with the oracle. Returns the
/// outcome and the machine's output (when the program finished and it could be read).
pub fn run_bundle(
    case: &Case,
    bundle: &Bundle,
    oracle: &ArrayD<i32>,
    cfg: &RunConfig,
) -> (Outcome, Option<ArrayD<i32>>) {
    let bad = |what: &str, e: &dyn std::fmt::Display| Outcome::CompileError {
        message: format!("{what}: {e}"),
    };
    let arch = machine_arch(case);
    let program_cores = bundle.program.cores.len();
    if program_cores != case.spec.arch.cores {
        return (
            Outcome::CompileError {
                message: format!(
                    "the program has {program_cores} cores, the case's architecture {}",
                    case.spec.arch.cores
                ),
            },
            None,
        );
    }
    let options = MachineOptions {
        schedule: cfg.schedule,
        step_budget: cfg.step_budget,
        ..MachineOptions::default()
    };
    let mut machine = match Machine::new(&bundle.program, &bundle.xbars, arch, options) {
        Ok(m) => m,
        Err(e) => {
            return (
                bad("the bundle does not fit the case's architecture", &e),
                None,
            )
        }
    };
    let manifest = &bundle.manifest;
    let input = match manifest.encode_input(&case.input) {
        Ok(bytes) => bytes,
        Err(e) => return (bad("the io manifest does not fit the case", &e), None),
    };
    if let Err(e) = machine.write_gmem(manifest.input.addr, &input) {
        return (bad("the io manifest's input slot", &e), None);
    }
    for c in &manifest.constants {
        if let Err(e) = machine.write_gmem(c.addr, &c.data) {
            return (
                bad(&format!("the io manifest's constant {:?}", c.name), &e),
                None,
            );
        }
    }
    match machine.run() {
        RunOutcome::Finished => {}
        RunOutcome::Fault(fault) => {
            let kind = variant_name(&format!("{:?}", fault.kind));
            return (
                Outcome::Fault {
                    report: fault.to_string(),
                    opcode: fault.inst.opcode(),
                    kind,
                },
                None,
            );
        }
        RunOutcome::Deadlock(report) => {
            // The blocked opcodes, without core numbers or counts: `blocked at recv, send`.
            let mut waits: Vec<&str> = report
                .blocked
                .iter()
                .map(|b| b.inst.opcode().mnemonic())
                .collect();
            waits.sort_unstable();
            waits.dedup();
            let waits = format!("blocked at {}", waits.join(", "));
            return (
                Outcome::Deadlock {
                    report: report.to_string(),
                    waits,
                },
                None,
            );
        }
        RunOutcome::OutOfSteps { executed } => return (Outcome::OutOfSteps { executed }, None),
    }
    let slot = &manifest.output;
    let len = match u32::try_from(slot.byte_len()) {
        Ok(l) => l,
        Err(_) => {
            return (
                bad("the io manifest's output slot", &"larger than 4 GiB"),
                None,
            )
        }
    };
    let bytes = match machine.read_gmem(slot.addr, len) {
        Ok(b) => b,
        Err(e) => return (bad("the io manifest's output slot", &e), None),
    };
    let output = match manifest.decode_output(&bytes) {
        Ok(o) => o,
        Err(e) => return (bad("the io manifest's output slot", &e), None),
    };
    let outcome = match compare(oracle, &output) {
        None => Outcome::Pass,
        Some(m) => Outcome::Mismatch(m),
    };
    (outcome, Some(output))
}

/// `LmemRange { .. }` → `LmemRange`.
fn variant_name(debug: &str) -> String {
    debug
        .split([' ', '{', '('])
        .next()
        .unwrap_or(debug)
        .to_string()
}
