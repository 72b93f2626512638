//! pimdiff: the differential-testing harness for crossbar compilers.
//!
//! The modules follow one turn of the loop, in order:
//!
//! | stage | module | what it does |
//! |---|---|---|
//! | generate | [`generate`] | random valid cases (seed, proptest, `arbitrary`), edge-biased |
//! | compile | [`compilers`] | the compilers under test: in-repo, external command, injected bug |
//! | check | [`check`] | case → compiler → interpreter → output, case → oracle; exact comparison, outcomes |
//! | shrink | [`shrink`] | signature-preserving minimization of a failing case |
//! | triage | [`triage`] | what a person reads about a finding: reports |
//! | keep | [`corpus`] | findings and regression entries on disk (atomic), replay |
//! | hunt | [`hunt`] | sharded, parallel, interruptible, reproducible campaigns |
//!
//! [`interop`] writes and reads a case in its users' formats (ONNX, MLIR, a standalone
//! `check.py`). [`pimcomp`] checks a third-party compiler's real programs (PIMCOMP-NN's, with
//! their side tables) bit for bit against a wrap-8 reference of the whole network.
//! [`targets`] holds the compiler side of other third-party compilers as hunt targets (the
//! PUMA compiler's: network descriptions, their generator, data and exact reference, the
//! files its driver reads and the placement it writes).
//!
//! [`fuzz_targets`] holds the bodies of the cargo-fuzz targets and [`cli`] the subcommands;
//! both are thin callers of the stages. The CLI binary (`src/main.rs`) is a thin caller of
//! [`cli`].

pub mod check;
#[cfg(feature = "cli")]
pub mod cli;
pub mod compilers;
pub mod corpus;
pub mod coverage;
pub mod engine;
pub mod finding;
pub mod fuzz_targets;
pub mod interop;
pub mod process;
pub mod report;
pub mod targets;
pub mod triage;
