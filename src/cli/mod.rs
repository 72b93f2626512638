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

pub fn exit(code: u8) -> ExitCode {
    ExitCode::from(code)
}

pub mod asm;
pub mod compile;
pub mod from_fuzz;
pub mod hunt;
pub mod new_case;
pub mod oracle;
pub mod replay;
pub mod repro;
pub mod run;
