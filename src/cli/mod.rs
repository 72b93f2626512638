//! Subcommands of the `pimdiff` binary, one module each. Each module exposes an
//! `Args` (clap) and a `main(Args) -> anyhow::Result<ExitCode>`.
//!
//! Every command follows one exit-code contract, defined in [`exit_codes`] (0 nothing found,
//! 1 found something, 2 bad usage or input, 3 `compile`'s "unsupported", 4 could not judge);
//! an `Err` returned from `main` is code 2. Each `Args` carries its `--help` text for the codes
//! it returns and one example ([`exit_codes::help`]).

pub use self::exit_codes::{
    exit, exit_with, EXIT_BAD_INPUT, EXIT_FINDING, EXIT_NO_VERDICT, EXIT_OK, EXIT_UNSUPPORTED,
};

pub mod asm;
pub mod check_bundle;
pub mod compile;
pub mod completions;
pub mod errors;
pub mod exit_codes;
pub mod export;
pub mod from_fuzz;
pub mod gmem;
pub mod hunt;
pub mod import_onnx;
pub mod lowerings;
pub mod man;
pub mod merge;
pub mod new_case;
pub mod oracle;
pub mod pimcomp;
pub mod puma;
pub mod replay;
pub mod repro;
pub mod run;
