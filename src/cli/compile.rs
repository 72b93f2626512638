//! `pimdiff compile CASE_DIR -o BUNDLE_DIR [--emit STAGE] [--lowering channel|pixel]
//! [--no-skip-padding] [--no-weight-skipping]`: compile a case with the in-repo compiler
//! (channel-wise, or the pixel-wise baseline) and write the bundle (or, with `--emit`, print
//! one stage's IR instead).
//!
//! It follows the external-compiler protocol it is the reference for (`pimdiff::external`), so
//! `--compiler-cmd 'pimdiff compile {case} -o {out}'` tests it like any other compiler. Exit
//! codes (`pimdiff::cli::exit_codes`): 0 compiled; 1 an internal compiler error; 2 bad input
//! (an unreadable or invalid case, an unwritable bundle); 3 the compiler declines the case
//! (unsupported: the last line of standard error is the reason, with the numbers). This is
//! the only command that returns 3: it is the protocol external compilers implement.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use pimdiff_compiler::{compile, emit, CompileError, CompileOptions, Lowering, Reduction, Stage};

use super::exit_codes::help;
use super::{exit, EXIT_FINDING, EXIT_OK, EXIT_UNSUPPORTED};

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[
        (EXIT_OK, "compiled: the bundle is written (or --emit printed)"),
        (EXIT_FINDING, "an internal compiler error"),
        (
            EXIT_UNSUPPORTED,
            "the compiler declines the case; the reason is the last line of stderr (the \
             bundle protocol's \"unsupported\", which external compilers implement)",
        ),
    ],
    "pimdiff compile my-case -o bundle   # then: pimdiff run bundle/",
))]
pub struct Args {
    /// The case directory (case.json, input.npy, weight.npy, ...).
    pub case: PathBuf,
    /// Where to write the bundle (created if missing). Not needed with --emit.
    #[arg(short = 'o', long = "output", required_unless_present = "emit")]
    pub output: Option<PathBuf>,
    /// Print this stage's IR instead of writing a bundle: spatial, mapping, pim, asm or
    /// provenance (the program with the compiler function that emitted each instruction).
    #[arg(long, value_parser = parse_stage)]
    pub emit: Option<Stage>,
    /// Multiply padding zeros instead of skipping kernel positions that fall in the padding.
    #[arg(long)]
    pub no_skip_padding: bool,
    /// Keep crossbars whose weights are all zero.
    #[arg(long)]
    pub no_weight_skipping: bool,
    /// channel (the thesis's channel-wise lowering) or pixel (the pixel-wise baseline).
    #[arg(long, default_value = "channel", value_parser = parse_lowering)]
    pub lowering: Lowering,
    /// noc (`send`/`recv`, default) or gmem (`st`, `sync`, `wait`, `ld`): how partial sums
    /// are reduced across cores (channel-wise lowering).
    #[arg(long, default_value = "noc", value_parser = parse_reduction)]
    pub reduction: Reduction,
}

fn parse_reduction(s: &str) -> Result<Reduction, String> {
    s.parse()
}

fn parse_lowering(s: &str) -> Result<Lowering, String> {
    s.parse()
}

fn parse_stage(s: &str) -> Result<Stage, String> {
    s.parse()
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let case = pimdiff_oracle::io::read_case(&args.case)
        .with_context(|| format!("reading case {}", args.case.display()))?;
    let options = CompileOptions {
        skip_padding: !args.no_skip_padding,
        weight_skipping: !args.no_weight_skipping,
        lowering: args.lowering,
        reduction: args.reduction,
    };
    if let Some(stage) = args.emit {
        return Ok(match emit(&case, &options, stage) {
            Ok(text) => {
                print!("{text}");
                exit(EXIT_OK)
            }
            Err(e) => declined(e),
        });
    }
    let bundle = match compile(&case, &options) {
        Ok(b) => b,
        Err(e) => return Ok(declined(e)),
    };
    let Some(out) = args.output else {
        anyhow::bail!("-o BUNDLE_DIR is required unless --emit is given");
    };
    bundle
        .write_dir(&out)
        .with_context(|| format!("writing bundle {}", out.display()))?;
    let insts: usize = bundle.program.cores.iter().map(Vec::len).sum();
    let arrays: usize = bundle.xbars.cores.values().map(|c| c.groups.len()).sum();
    eprintln!(
        "compiled {} -> {}: {} instructions on {} core(s), {} crossbar arrays",
        args.case.display(),
        out.display(),
        insts,
        bundle.program.cores.len(),
        arrays
    );
    Ok(exit(EXIT_OK))
}

/// Unsupported: exit 3 with the reason alone on the last line of standard error (the
/// protocol's reason, the same text the harness records for the in-repo compiler). Anything
/// else: exit 1.
fn declined(e: CompileError) -> ExitCode {
    match e {
        CompileError::Unsupported(reason) => {
            eprintln!("pimdiff compile: the case is unsupported:");
            eprintln!("{reason}");
            exit(EXIT_UNSUPPORTED)
        }
        CompileError::Internal(_) => {
            eprintln!("pimdiff compile: {e}");
            exit(EXIT_FINDING)
        }
    }
}
