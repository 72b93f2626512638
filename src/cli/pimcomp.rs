//! `pimdiff pimcomp PROGRAM --verification TABLE`: check a PIMCOMP-NN program bit for bit
//! against the wrap-8 reference of its model (see `pimdiff::targets::pimcomp_nn::check`).
//!
//! With `--cross PROGRAM2 --cross-verification TABLE2` (the other pipeline's compile of the
//! same model: one batch, one element, in either order) both programs are checked with the
//! same options, both tables printed, and then one line comparing the two checks node by node
//! (`pimdiff::targets::pimcomp_nn::cross`): the number of nodes they agree on, or the disagreement's
//! signature and detail — the `cross-mode` finding of `hunt --target pimcomp-nn --mode both`.
//!
//! Exit codes (`pimdiff::cli::exit_codes`): 0 no node mismatches, the program agrees with its
//! table and at least one node was checked exactly — with `--cross`, both programs, and the two
//! checks do not disagree; 1 a mismatch, an operand disagreement, a run that does not finish
//! or a cross disagreement; 2 bad input (with `--cross`, also two programs of the same
//! pipeline); 4 no finding, but no node could be checked exactly (every node degenerate or
//! unchecked; with `--cross`, in either program): no verdict.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::finding::Verdict;
use crate::registry::flags::parse_schedule;
use crate::targets::pimcomp_nn::check::{
    self as pimcomp, report, Checked, Control, Options, Status,
};
use crate::targets::pimcomp_nn::cross;
use anyhow::Context;
use pimdiff_isa::machine::Schedule;

use super::exit_codes::help;
use super::{exit_with, EXIT_FINDING, EXIT_NO_VERDICT, EXIT_OK};

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[
        (
            EXIT_OK,
            "every node checked agrees (at least one exactly), program and table agree",
        ),
        (
            EXIT_FINDING,
            "a node mismatches, program and table disagree, the run does not finish, or \
             (--cross) the two pipelines disagree",
        ),
        (
            EXIT_NO_VERDICT,
            "no finding, but no node could be checked exactly (all degenerate or unchecked)",
        ),
    ],
    "pimdiff pimcomp output/SimulationInfo.gz --verification output/VerificationInfo.json --out report",
))]
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
    /// into DIR (which must not exist or be empty). With --cross: each check's into DIR/batch
    /// and DIR/element, and the comparison into DIR/cross.json.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The other pipeline's program of the same model (batch for an element PROGRAM, element
    /// for a batch one): check both and compare them node by node.
    #[arg(long, value_name = "PROGRAM2", requires = "cross_verification")]
    pub cross: Option<PathBuf>,
    /// The side table of the --cross program's compile.
    #[arg(long, value_name = "TABLE2", requires = "cross")]
    pub cross_verification: Option<PathBuf>,
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
    if let (Some(program), Some(table)) = (&args.cross, &args.cross_verification) {
        let other = Options {
            program: program.clone(),
            table: table.clone(),
            ..opts.clone()
        };
        return cross_main(&opts, &other, args.out.as_deref());
    }
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
    Ok(exit_with(verdict(&checked)))
}

/// A check's verdict: a finding; no verdict when no node was checked exactly; clean.
fn verdict(checked: &Checked) -> Verdict {
    if checked.is_finding() {
        Verdict::Findings
    } else if checked.verdicts.iter().any(|v| v.status == Status::Exact) {
        Verdict::Clean
    } else {
        Verdict::NoVerdict
    }
}

/// `--cross`: both checks, their comparison, and under `--out` all three reports.
fn cross_main(first: &Options, second: &Options, out: Option<&Path>) -> anyhow::Result<ExitCode> {
    let pair = cross::check_pair(first, second)?;
    print!("{}", pair.text(first.seed, first.schedule));
    if let Some(out) = out {
        pair.write(out, first.seed, first.schedule)
            .with_context(|| format!("cannot write {}", out.display()))?;
        println!("reports: {}", out.display());
    }
    Ok(exit_with(if pair.is_finding() {
        Verdict::Findings
    } else {
        verdict(&pair.batch.1).and(verdict(&pair.element.1))
    }))
}
