//! The differential driver: case → compiler → bundle → interpreter → output, and
//! case → oracle; compare exactly.
//!
//! [`check_case`] is the one function every caller uses (hunts, repro, replay, the fuzz
//! targets, the tests). It never panics and never fails: whatever happens becomes an
//! [`Outcome`]. The in-repo path is entirely in memory (no files), so a hunt checks
//! thousands of cases per second; an external compiler goes through a case directory and a
//! bundle directory ([`crate::compilers::external`]).
//!
//! The machine runs on the *case's* architecture (cores, arrays, array size, local memory),
//! not on whatever the bundle's config claims: a compiler that assumes more than the case
//! allows is caught by the machine's setup checks or by faults, never silently trusted. In
//! the same spirit a decline is not taken on trust: its numbers are held against the case
//! ([`claims`], with the harness's own capacity model in [`capacity`]).
//!
//! A check that never ends (a hanging compiler) is caught by a watchdog on another thread
//! (`pimdiff_engine::hunt::watchdog`); [`check_case_staged`] reports the stages to it.

pub mod bundle;
pub mod capacity;
pub mod compare;
pub mod concurrency;
pub mod n_version;
pub mod outcome;
pub mod refute;
mod run_config;
pub mod setup;

use std::cell::Cell;

use ndarray::ArrayD;
use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::machine::{Machine, MachineOptions, RunOutcome, Schedule};
use pimdiff_isa::{Arch, Opcode};
use pimdiff_oracle::Case;

use self::compare::compare;
use self::concurrency::Checks;
pub use self::outcome::{Mismatch, Outcome, Signature};
pub use self::run_config::{stage_limit, RunConfig};
use crate::compilers::{CompileFailure, CompilerUnderTest};
pub use pimdiff_engine::hunt::watchdog::{Stage, StageClock};

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
    /// Which version is wrong, for a finding of an N-version check (`--lowering both`);
    /// `None` otherwise.
    pub attribution: Option<n_version::Attribution>,
}

impl CaseResult {
    /// The signature of a finding, with its N-version attribution when it has one (see
    /// [`n_version::attributed`]); `None` when the outcome is not a finding.
    pub fn signature(&self) -> Option<Signature> {
        self.outcome
            .signature()
            .map(|s| n_version::attributed(s, self))
    }
}

/// Checks one case against the compiler under test. Never panics (a panicking in-repo
/// compiler is a `compile-error` finding, a panicking interpreter an `interpreter-panic`);
/// every failure is an [`Outcome`]. No watchdog: a compiler that hangs hangs this call (see
/// [`check_case_within`]).
pub fn check_case(case: &Case, cfg: &RunConfig) -> CaseResult {
    check_case_staged(case, cfg, None)
}

/// [`check_case`], recording each stage on `clock` for a watchdog on another thread. A panic
/// of in-process code that nothing nearer caught (the reference, the harness) is a `crash`
/// of the stage it happened in.
pub fn check_case_staged(case: &Case, cfg: &RunConfig, clock: Option<&StageClock>) -> CaseResult {
    let stage = Cell::new(Stage::Oracle);
    let enter = |s| {
        stage.set(s);
        if let Some(c) = clock {
            c.enter(s);
        }
    };
    let result = match pimdiff_engine::hunt::panic::catch(|| check_stages(case, cfg, &enter)) {
        Ok(r) => r,
        Err(p) => CaseResult {
            outcome: Outcome::Crash {
                stage: stage.get().name().to_string(),
                message: p.message,
                location: p.location,
            },
            bundle: None,
            oracle: None,
            machine_output: None,
            attribution: None,
        },
    };
    if let Some(c) = clock {
        c.finish();
    }
    result
}

fn check_stages(case: &Case, cfg: &RunConfig, enter: &dyn Fn(Stage)) -> CaseResult {
    let Some(second) = &cfg.second else {
        return check_version(case, cfg, &cfg.compiler, enter);
    };
    let first = check_version(case, cfg, &cfg.compiler, enter);
    if first.oracle.is_none() {
        return first; // poisoned: the oracle refused the case
    }
    let second = check_version(case, cfg, second, enter);
    let names = [cfg.compiler.version_name(), second_name(cfg)];
    n_version::combine(names, first, second)
}

fn second_name(cfg: &RunConfig) -> &'static str {
    cfg.second
        .as_ref()
        .map_or("second", CompilerUnderTest::version_name)
}

/// One compiler's check of `case`: oracle, compile with `compiler`, run, compare.
fn check_version(
    case: &Case,
    cfg: &RunConfig,
    compiler: &CompilerUnderTest,
    enter: &dyn Fn(Stage),
) -> CaseResult {
    enter(Stage::Oracle);
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
                attribution: None,
            }
        }
    };
    enter(Stage::Compile);
    let bundle = match compiler.compile(case, cfg.external_timeout) {
        Ok(b) => b,
        Err(failure) => {
            return CaseResult {
                outcome: failure_outcome(case, compiler, failure),
                bundle: None,
                oracle: Some(oracle),
                machine_output: None,
                attribution: None,
            }
        }
    };
    enter(Stage::Run);
    // An interpreter panic is a bug of pimdiff itself: a finding of its own kind.
    let (outcome, machine_output) =
        match pimdiff_engine::hunt::panic::catch(|| run_bundle(case, &bundle, &oracle, cfg)) {
            Ok(r) => r,
            Err(p) => (Outcome::InterpreterPanic { message: p.message }, None),
        };
    CaseResult {
        outcome,
        bundle: Some(bundle),
        oracle: Some(oracle),
        machine_output,
        attribution: None,
    }
}

/// [`check_case`] under the watchdog (`pimdiff_engine::hunt::watchdog::run_watched`): the check
/// runs on a thread of its own; when a stage overruns its limit the thread is abandoned (and
/// deprioritized) and the outcome is a `timeout`. For one-off checks (repro, replay,
/// minimization candidates); a hunt watches its own worker threads instead of starting one
/// per case.
pub fn check_case_within(case: &Case, cfg: &RunConfig) -> CaseResult {
    let (case_owned, cfg_owned) = (case.clone(), cfg.clone());
    let watched = pimdiff_engine::hunt::watchdog::run_watched(
        move |clock| check_case_staged(&case_owned, &cfg_owned, Some(clock)),
        |s| stage_limit(cfg, s),
    );
    match watched {
        Ok(result) => result,
        Err((stage, limit)) => CaseResult {
            outcome: outcome::timeout_outcome(stage, limit),
            bundle: None,
            oracle: None,
            machine_output: None,
            attribution: None,
        },
    }
}

/// A compiler's failure as the outcome of the check; a decline whose claim does not hold is
/// `bogus-unsupported`.
fn failure_outcome(case: &Case, compiler: &CompilerUnderTest, failure: CompileFailure) -> Outcome {
    match failure {
        CompileFailure::Unsupported { reason, claim } => {
            let model = compiler.capacity_model();
            match claim.and_then(|c| refute::refute(case, &c, model.as_ref())) {
                Some(problem) => Outcome::BogusUnsupported { reason, problem },
                None => Outcome::Unsupported { reason },
            }
        }
        CompileFailure::Failed { message } => Outcome::CompileError { message },
        CompileFailure::TimedOut { limit, overrun } => Outcome::Timeout {
            stage: Stage::Compile.name().to_string(),
            limit,
            overrun,
        },
        CompileFailure::Panicked { message, location } => Outcome::Crash {
            stage: Stage::Compile.name().to_string(),
            message,
            location,
        },
        CompileFailure::Died { message } => Outcome::Crash {
            stage: Stage::Compile.name().to_string(),
            message,
            location: None,
        },
        CompileFailure::Poisoned { reason } => Outcome::Poisoned { reason },
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
    if let Some(op) = cfg.interpreter_panic_on {
        injected_interpreter_panic(bundle, op);
    }
    let mut machine = match load_machine(case, bundle, cfg, cfg.schedule) {
        Ok(m) => m,
        Err(o) => return (o, None),
    };
    let mut checks = Checks::new(cfg.race_check, cfg.uninit_check, &bundle.program);
    let run = if checks.any() {
        machine.run_observed(&mut checks)
    } else {
        machine.run()
    };
    if let Some(o) = run_failure(run) {
        return (o, None);
    }
    let (bytes, output) = match read_output(&machine, &bundle.manifest) {
        Ok(o) => o,
        Err(o) => return (o, None),
    };
    if let Some(m) = compare(oracle, &output) {
        return (Outcome::Mismatch(m), Some(output));
    }
    if let Some(o) = checks.race_finding() {
        return (o, Some(output));
    }
    if let Some(o) = checks.uninit_finding() {
        return (o, Some(output));
    }
    if let Some(o) = explore(case, bundle, cfg, &bytes) {
        return (o, Some(output));
    }
    (Outcome::Pass, Some(output))
}

/// A machine for `bundle` on the case's architecture under `schedule`, with the case's input
/// and the manifest's constants written; a bundle that does not fit is a `compile-error`.
fn load_machine<'b>(
    case: &Case,
    bundle: &'b Bundle,
    cfg: &RunConfig,
    schedule: Schedule,
) -> Result<Machine<'b>, Outcome> {
    let bad = |what: &str, e: &dyn std::fmt::Display| Outcome::CompileError {
        message: format!("{what}: {e}"),
    };
    let options = MachineOptions {
        schedule,
        step_budget: cfg.step_budget,
        ..MachineOptions::default()
    };
    let mut machine = Machine::new(&bundle.program, &bundle.xbars, machine_arch(case), options)
        .map_err(|e| bad("the bundle does not fit the case's architecture", &e))?;
    let manifest = &bundle.manifest;
    let input = manifest
        .encode_input(&case.input)
        .map_err(|e| bad("the io manifest does not fit the case", &e))?;
    machine
        .write_gmem(manifest.input.addr, &input)
        .map_err(|e| bad("the io manifest's input slot", &e))?;
    for c in &manifest.constants {
        machine
            .write_gmem(c.addr, &c.data)
            .map_err(|e| bad(&format!("the io manifest's constant {:?}", c.name), &e))?;
    }
    Ok(machine)
}

/// The outcome of a run that did not finish; `None` when it did.
fn run_failure(run: RunOutcome) -> Option<Outcome> {
    match run {
        RunOutcome::Finished => None,
        RunOutcome::Fault(fault) => {
            let kind = variant_name(&format!("{:?}", fault.kind));
            Some(Outcome::Fault {
                report: fault.to_string(),
                opcode: fault.inst.opcode(),
                kind,
            })
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
            Some(Outcome::Deadlock {
                report: report.to_string(),
                waits,
            })
        }
        RunOutcome::OutOfSteps { executed } => Some(Outcome::OutOfSteps { executed }),
    }
}

/// The output slot's bytes and their decoded tensor, after a finished run.
fn read_output(
    machine: &Machine<'_>,
    manifest: &pimdiff_isa::IoManifest,
) -> Result<(Vec<u8>, ArrayD<i32>), Outcome> {
    let bad = |e: &dyn std::fmt::Display| Outcome::CompileError {
        message: format!("the io manifest's output slot: {e}"),
    };
    let slot = &manifest.output;
    let len = u32::try_from(slot.byte_len()).map_err(|_| bad(&"larger than 4 GiB"))?;
    let bytes = machine.read_gmem(slot.addr, len).map_err(|e| bad(&e))?;
    let output = manifest.decode_output(&bytes).map_err(|e| bad(&e))?;
    Ok((bytes, output))
}

/// Runs the bundle again under each of `cfg.explore` (no checks: the fixed run had them) and
/// compares the ending and the output bytes with the first run's (`reference`).
fn explore(case: &Case, bundle: &Bundle, cfg: &RunConfig, reference: &[u8]) -> Option<Outcome> {
    if cfg.explore.is_empty() || !concurrency::schedule_sensitive(&bundle.program) {
        return None;
    }
    for &schedule in &cfg.explore {
        let mut machine = load_machine(case, bundle, cfg, schedule).ok()?;
        let run = machine.run();
        let kind = run.kind();
        let bytes = matches!(run, RunOutcome::Finished)
            .then(|| read_output(&machine, &bundle.manifest).ok())
            .flatten()
            .map(|(b, _)| b);
        let ending = concurrency::ending(kind, bytes.as_deref(), Some(reference));
        if ending == "finished" {
            continue;
        }
        let detail = match run_failure(run) {
            Some(o) => o.summary(),
            None => "the output differs from the first schedule's".into(),
        };
        return Some(Outcome::ScheduleDependent {
            schedule: schedule.to_string(),
            report: format!(
                "under {} the program finished; under {schedule}: {detail}",
                cfg.schedule
            ),
            detail: format!("finished / {ending}"),
        });
    }
    None
}

/// The test seam of [`RunConfig::interpreter_panic_on`]: panics at the first instruction with
/// opcode `op`, naming it.
fn injected_interpreter_panic(bundle: &Bundle, op: Opcode) {
    for (core, insts) in bundle.program.cores.iter().enumerate() {
        if let Some(pc) = insts.iter().position(|i| i.opcode() == op) {
            panic!(
                "injected interpreter panic at core {core}, pc {pc} ({})",
                op.mnemonic()
            );
        }
    }
}

/// `LmemRange { .. }` → `LmemRange`.
fn variant_name(debug: &str) -> String {
    debug
        .split([' ', '{', '('])
        .next()
        .unwrap_or(debug)
        .to_string()
}
