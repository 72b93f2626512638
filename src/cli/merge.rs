//! `pimdiff merge OUT... --out MERGED`: join the outputs of several hunts of one target (the
//! shards of a hunt, several nights, earlier merges) into one, each finding once
//! ([`crate::summary::merge`]). Prints the merged summary like a hunt does.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::exit_codes::{exit_with, help, EXIT_FINDING, EXIT_NO_VERDICT, EXIT_OK};
use crate::summary::merge::merge;
use crate::summary::{render_summary, SUMMARY_MD};

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[
        (EXIT_OK, "merged; the merged hunt found nothing"),
        (EXIT_FINDING, "merged; the merged hunt has findings"),
        (
            EXIT_NO_VERDICT,
            "merged; no verdict: more declines than the generators explain, or no case judged",
        ),
        (
            super::exit_codes::EXIT_BAD_INPUT,
            "bad usage or bad input: a missing or malformed summary.json or finding.json \
             (named), hunts of different targets or of the same cases, MERGED already holds findings",
        ),
    ],
    "pimdiff merge shard0/hunt shard1/hunt --out merged   # then: cat merged/summary.md",
))]
pub struct Args {
    /// Hunt output directories (each with summary.json and findings/), of one target.
    #[arg(required = true, value_name = "OUT")]
    pub inputs: Vec<PathBuf>,
    /// Where the merged findings/, summary.json and summary.md go (a new directory, or one
    /// without findings).
    #[arg(long, value_name = "MERGED")]
    pub out: PathBuf,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let merged = merge(&args.inputs, &args.out)
        .with_context(|| format!("cannot merge into {}", args.out.display()))?;
    for w in &merged.warnings {
        eprintln!("warning: {w}");
    }
    print!("{}", render_summary(&merged.summary));
    println!("\nsummary: {}", args.out.join(SUMMARY_MD).display());
    Ok(exit_with(merged.summary.verdict()))
}
