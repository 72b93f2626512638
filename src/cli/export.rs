//! `pimdiff export CASE_DIR`: write `model.onnx`, `op.mlir` and `check.py` into an existing
//! case directory (`docs/case-format.md`, "Exports").
//!
//! The case is read and validated first; the three files are then written atomically, each
//! replacing an earlier export. Exit codes (`pimdiff::cli::exit_codes`): 0 written, or 2 on a
//! bad case or an unwritable directory.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use pimdiff_oracle::io::read_case;

use super::exit_codes::help;
use super::{exit, EXIT_OK};
use crate::interop::{write_exports, CHECK_PY, MODEL_ONNX, OP_MLIR};

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[(EXIT_OK, "model.onnx, op.mlir and check.py are written")],
    "pimdiff export my-case   # then: python3 my-case/check.py",
))]
pub struct Args {
    /// The case directory (case.json, input.npy, weight.npy, [bias.npy], [expected.npy]).
    pub case_dir: PathBuf,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let dir = &args.case_dir;
    let case = read_case(dir).with_context(|| format!("invalid case {}", dir.display()))?;
    write_exports(&case, dir).context("cannot write the exports")?;
    println!(
        "wrote {MODEL_ONNX}, {OP_MLIR}, {CHECK_PY} in {}{}",
        dir.display(),
        if case.expected.is_none() {
            " (no expected.npy: check.py has nothing to compare until one is written)"
        } else {
            ""
        }
    );
    Ok(exit(EXIT_OK))
}
