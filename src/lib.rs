//! pimdiff: the differential-testing harness for crossbar compilers — the command line and the
//! registry of compilers under test.
//!
//! The work is done by crates one floor down, each a room of the architecture
//! (`ARCHITECTURE.md`):
//!
//! | crate | re-exported here as | what it is |
//! |---|---|---|
//! | `pimdiff-engine` | [`engine`] (its `hunt`), [`finding`], [`summary`], [`plan`], [`process`], [`coverage`] | the hunt engine over any `Target`, knowing no compiler |
//! | `pimdiff-target-pimsim` | [`targets::tensor`], and [`check`], [`compilers`], [`triage`], [`report`], [`interop`], [`corpus`], [`fuzz_targets`] | conv2d/MVM cases in the PIMSim ISA through the bundle protocol |
//! | `pimdiff-target-pimcomp` | [`targets::pimcomp_nn`] | PIMCOMP-NN: random networks through the real compiler |
//! | `pimdiff-target-puma` | [`targets::puma`] | the PUMA compiler, checked on the PUMA machine |
//! | `pimdiff-target-cim-mlc` | [`targets::cim_mlc`] | CIM-MLC: ONNX networks, its meta-operator flows run at every granularity |
//!
//! This crate adds the CLI ([`cli`], feature `cli`) and [`registry`]: which targets
//! `pimdiff hunt --target` knows, and how each is built from its flags. Adding a target is its
//! crate plus one registration there. The paths re-exported above are the ones library users
//! and the docs have always named (`pimdiff::engine::run_hunt`, `pimdiff::check::check_case`, …).

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "cli")]
pub mod registry;

pub use pimdiff_engine::hunt as engine;
pub use pimdiff_engine::{coverage, finding, plan, process, summary};
pub use pimdiff_target_pimsim::{check, compilers, corpus, fuzz_targets, interop, report, triage};

/// The compilers under test, one crate each.
pub mod targets {
    pub use pimdiff_target_cim_mlc as cim_mlc;
    pub use pimdiff_target_pimcomp as pimcomp_nn;
    pub use pimdiff_target_pimsim as tensor;
    pub use pimdiff_target_puma as puma;
}
