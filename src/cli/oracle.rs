//! `pimdiff oracle CASE_DIR [--out FILE.npy]`: validate a case, compute its exact reference
//! output, optionally write it, and compare it with the case's `expected.npy`.
//!
//! Exit codes (`pimdiff::cli::exit_codes`): 0 the case is valid and agrees with its
//! `expected.npy` (or has none); 1 `expected.npy` differs from the oracle (the count and the
//! first differing elements are printed); 2 a bad case (the error names the file and the
//! field) or an unwritable `--out`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use pimdiff_oracle::io::{read_case, write_npy_atomic};
use pimdiff_oracle::reference;

use super::exit_codes::help;
use super::{exit, EXIT_FINDING, EXIT_OK};
use crate::check::compare::compare;

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[
        (
            EXIT_OK,
            "the case is valid and agrees with its expected.npy (or has none)",
        ),
        (EXIT_FINDING, "expected.npy differs from the oracle's output"),
    ],
    "pimdiff oracle my-case --out reference.npy",
))]
pub struct Args {
    /// The case directory (case.json, input.npy, weight.npy, [bias.npy], [expected.npy]).
    pub case_dir: PathBuf,
    /// Write the reference output here as an int32 .npy (atomically: a temporary file beside
    /// it, then a rename; an existing file is replaced).
    #[arg(long, value_name = "FILE.npy")]
    pub out: Option<PathBuf>,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let dir = &args.case_dir;
    let case = read_case(dir).with_context(|| format!("invalid case {}", dir.display()))?;
    let output = reference(&case).with_context(|| format!("case {}", dir.display()))?;
    if let Some(out) = &args.out {
        write_npy_atomic(out, &output).with_context(|| format!("writing {}", out.display()))?;
    }
    let op = case.spec.op.kind();
    let shape = output.shape().to_vec();
    let Some(expected) = &case.expected else {
        println!(
            "ok: {}: {op}, output {shape:?} ({} elements); no expected.npy to compare",
            dir.display(),
            output.len()
        );
        return Ok(exit(EXIT_OK));
    };
    match compare(&output, expected) {
        None => {
            println!(
                "ok: {}: {op}, output {shape:?} ({} elements) equals expected.npy",
                dir.display(),
                output.len()
            );
            Ok(exit(EXIT_OK))
        }
        Some(m) => {
            println!(
                "mismatch: {}: {op}, output {shape:?}: {} of {} elements of expected.npy differ from the oracle",
                dir.display(),
                m.differing,
                m.total
            );
            for (index, oracle, exp) in &m.first {
                println!("  at {index:?}: expected {exp}, oracle {oracle}");
            }
            if m.differing > m.first.len() {
                println!("  ... and {} more", m.differing - m.first.len());
            }
            Ok(exit(EXIT_FINDING))
        }
    }
}
