//! Rerunning a bundle for its structured end: which core faulted at which pc with which fault
//! kind, which cores block on what. `check::run_bundle` keeps only the outcome's text; triage
//! needs the data, and only for failing cases, so it pays one more interpretation there.

use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::machine::{Machine, MachineOptions, RunOutcome};
use pimdiff_oracle::Case;

use crate::check::{machine_arch, RunConfig};

/// Runs `bundle` on `case`'s input, set up as `check::run_bundle` sets it up (the case's
/// architecture, the manifest's input and constants). `None` when the set-up fails (then
/// `run_bundle` reported a compile error, which has no structured end).
pub(crate) fn run_structured(case: &Case, bundle: &Bundle, cfg: &RunConfig) -> Option<RunOutcome> {
    let options = MachineOptions {
        schedule: cfg.schedule,
        step_budget: cfg.step_budget,
        ..MachineOptions::default()
    };
    let mut machine =
        Machine::new(&bundle.program, &bundle.xbars, machine_arch(case), options).ok()?;
    let manifest = &bundle.manifest;
    let input = manifest.encode_input(&case.input).ok()?;
    machine.write_gmem(manifest.input.addr, &input).ok()?;
    for c in &manifest.constants {
        machine.write_gmem(c.addr, &c.data).ok()?;
    }
    Some(machine.run())
}
