//! Subcommands of the `pimdiff` binary, one module each. Each module exposes an
//! `Args` (clap) and a `main(Args) -> anyhow::Result<ExitCode>`.
//!
//! Exit codes are uniform: 0 success / agreement, 1 a finding (mismatch, fault,
//! deadlock, ...), 2 bad input (an `Err` returned from `main`).

use std::process::ExitCode;

/// Agreement, or every core finished.
pub const EXIT_OK: u8 = 0;
/// A finding: mismatch, fault, deadlock, compile error, unsupported where it counts.
pub const EXIT_FINDING: u8 = 1;
/// Bad input: unreadable or invalid file, bad flags.
pub const EXIT_BAD_INPUT: u8 = 2;
/// `pimdiff compile` only: the compiler declines the case (the external-compiler protocol's
/// "unsupported", `pimdiff::external::UNSUPPORTED_EXIT_CODE`).
pub const EXIT_UNSUPPORTED: u8 = 3;

pub fn exit(code: u8) -> ExitCode {
    ExitCode::from(code)
}

pub mod asm;
pub mod compile;
pub mod completions;
pub mod errors;
pub mod export;
pub mod from_fuzz;
pub mod gmem;
pub mod hunt;
pub mod import_onnx;
pub mod lowerings;
pub mod man;
pub mod new_case;
pub mod oracle;
pub mod pimcomp;
pub mod replay;
pub mod repro;
pub mod run;
