//! `pimdiff import-onnx MODEL.onnx --out CASE_DIR [--seed S] [arch flags]`: turn a
//! one-operator ONNX model (Conv, ConvInteger, MatMul, MatMulInteger or Gemm, optionally
//! followed by a constant Add and Relu) into a case directory, with `expected.npy` from the
//! oracle and the exports (`model.onnx`, `op.mlir`, `check.py`).
//!
//! The model has no input values, so `input.npy` is random int8 from `--seed`. What is
//! imported and what is refused: [`crate::interop::import_onnx`]. Exit codes
//! (`pimdiff::cli::exit_codes`): 0 imported, or 2 when the model cannot be read or uses
//! something a case cannot express (the message names it).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use pimdiff_input::limits::MAX_ONNX_MODEL_BYTES;
use pimdiff_oracle::reference;

use super::exit_codes::help;
use super::new_case::ArchArgs;
use super::{exit, EXIT_OK};
use crate::interop::import_onnx::import_model;
use crate::interop::{summary, write_case_with_exports};

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[(EXIT_OK, "the case directory is written")],
    "pimdiff import-onnx conv.onnx --out my-case",
))]
pub struct Args {
    /// The ONNX model (one operator node; weights as initializers).
    pub model: PathBuf,
    /// The case directory to create (must not exist, or be empty).
    #[arg(long, value_name = "CASE_DIR")]
    pub out: PathBuf,
    /// Seed of the random int8 input (ChaCha8).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub arch: ArchArgs,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let path = &args.model;
    // Through the bounded reader: a model above `MAX_ONNX_MODEL_BYTES` is refused from its size.
    let bytes = pimdiff_input::read(path, MAX_ONNX_MODEL_BYTES)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut case = import_model(&bytes, args.arch.to_arch(), args.seed)
        .with_context(|| format!("cannot import {}", path.display()))?;
    case.expected = Some(reference(&case).context("computing expected.npy")?);
    write_case_with_exports(&case, &args.out)
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    println!(
        "wrote {}: {}; input seed {}",
        args.out.display(),
        summary(&case),
        args.seed
    );
    Ok(exit(EXIT_OK))
}
