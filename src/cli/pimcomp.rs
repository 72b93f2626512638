//! `pimdiff pimcomp PROGRAM --verification TABLE`: check a PIMCOMP-NN program bit for bit
//! against the wrap-8 reference of its model (see `pimdiff::pimcomp`).
//!
//! Exit status: 0 when no node mismatches and the program agrees with its table (only exact,
//! degenerate and unchecked nodes); 1 on a mismatch, an operand disagreement or a run that
//! does not finish; 2 on bad input.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::pimcomp::{self, report, Control, Options};
use anyhow::Context;
use pimdiff_isa::machine::Schedule;

use super::{exit, EXIT_FINDING, EXIT_OK};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The program PIMCOMP-NN wrote (-s=YES): JSON, plain or .gz.
    pub program: PathBuf,
    /// The side table of the same compile (-v=YES, VerificationInfo): JSON, plain or .gz.
    #[arg(long, value_name = "TABLE")]
    pub verification: PathBuf,
    /// Seed of the synthesised image and weights.
    #[arg(long, default_value_t = pimcomp::synth::DEFAULT_SEED)]
    pub seed: u64,
    /// Core interleaving: `fixed` or `random:SEED`.
    #[arg(long, default_value = "fixed", value_parser = parse_schedule, value_name = "fixed|random:SEED|pct:SEED:D")]
    pub schedule: Schedule,
    /// Write summary.json, report.md, the run's inputs and per mismatching node its tensors
    /// into DIR (which must not exist or be empty).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Do not turn VER points into probe stores (element mode: only the stored last node is
    /// checked).
    #[arg(long)]
    pub no_probes: bool,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let opts = Options {
        program: args.program.clone(),
        table: args.verification.clone(),
        seed: args.seed,
        schedule: args.schedule,
        probes: !args.no_probes,
        control: Control::None,
    };
    let checked = pimcomp::check(&opts)?;
    print!(
        "{}",
        report::table(&checked, &args.program, args.seed, args.schedule)
    );
    if let Some(out) = &args.out {
        report::write(&checked, out, &args.program, args.seed, args.schedule)
            .with_context(|| format!("cannot write {}", out.display()))?;
        println!("report: {}", out.join("report.md").display());
    }
    Ok(exit(if checked.is_finding() {
        EXIT_FINDING
    } else {
        EXIT_OK
    }))
}

fn parse_schedule(s: &str) -> anyhow::Result<Schedule> {
    s.parse().map_err(|e: String| anyhow::anyhow!(e))
}
