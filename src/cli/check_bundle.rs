//! `pimdiff check-bundle DIR [--case CASE]`: is this directory a bundle pimdiff can run, and
//! does it fit its case? The same check every external compiler's bundle goes through in a
//! hunt (`pimdiff::check::bundle`), with the format in `docs/reference/bundle-format.md`.
//!
//! Exit codes (`pimdiff::cli::exit_codes`): 0 the bundle is valid (and fits the case when one
//! is given); 2 it is not, or the case cannot be read: the message names the file, the field
//! and what was expected.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::exit_codes::help;
use super::{exit, EXIT_OK};
use crate::check::bundle::read_bundle;

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[(
        EXIT_OK,
        "the bundle is valid (and, with --case, fits the case: the case's architecture \
         governs, config.json may only restate it)",
    )],
    "pimdiff check-bundle out/ --case my-case",
))]
pub struct Args {
    /// The bundle directory (config.json, core_<i>.json, xbars/, io.json, constant files).
    pub dir: PathBuf,
    /// The case it was compiled from: also check the bundle against it (core count and
    /// architecture, tensor shapes, the bias constant, crossbar contents).
    #[arg(long, value_name = "CASE_DIR")]
    pub case: Option<PathBuf>,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let case = match &args.case {
        Some(dir) => Some(
            pimdiff_oracle::io::read_case(dir)
                .with_context(|| format!("invalid case {}", dir.display()))?,
        ),
        None => None,
    };
    let bundle = read_bundle(&args.dir, case.as_ref())
        .map_err(|m| anyhow::anyhow!("{}: not a valid bundle: {m}", args.dir.display()))?;
    let instructions: usize = bundle.program.cores.iter().map(Vec::len).sum();
    let arrays: usize = bundle
        .xbars
        .cores
        .values()
        .map(|c| c.groups.iter().map(|g| g.arrays.len()).sum::<usize>())
        .sum();
    let against = match &args.case {
        Some(dir) => format!("; it fits the case {}", dir.display()),
        None => "; pass --case to check it against its case".to_string(),
    };
    println!(
        "ok: {} is a valid bundle: {} core(s), {instructions} instruction(s), {arrays} \
         crossbar array(s) in groups, {} constant segment(s){against}",
        args.dir.display(),
        bundle.program.cores.len(),
        bundle.manifest.constants.len()
    );
    Ok(exit(EXIT_OK))
}
