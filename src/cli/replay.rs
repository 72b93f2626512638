//! `pimdiff replay DIR...`: run every case directory (a corpus) and compare each with the
//! expectation recorded in its `finding.json` / `expect.json`; print a table and a summary.
//!
//! `replay` judges expectations: an entry expected to be declined that is declined meets its
//! expectation (the corpus's `limits/` entries). Exit codes (`pimdiff::cli::exit_codes`): 0
//! every case meets its expectation (a case without one must pass); 1 a case does not (a
//! finding where none was expected, a recorded finding gone, another finding); 2 a case cannot
//! be read, or bad flags; 4 no case failed, but some could not be judged: declined although
//! their expectation is not `unsupported`, out of steps, or the tooling failed (`NO VERDICT`
//! rows). Unreadable cases take precedence, then failures.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::exit_codes::help;
use crate::cli::{exit, exit_with, EXIT_BAD_INPUT, EXIT_FINDING, EXIT_NO_VERDICT, EXIT_OK};
use crate::corpus::{replay_with_lowering, ReplayRow};
use crate::finding::{is_unjudged, Verdict};
use crate::registry::tensor::CompilerArgs;

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[
        (
            EXIT_OK,
            "every case meets its expectation (one expected to be declined and declined does)",
        ),
        (EXIT_FINDING, "a case does not meet its expectation"),
        (
            EXIT_BAD_INPUT,
            "bad usage, or a case cannot be read (named in the table); takes precedence",
        ),
        (
            EXIT_NO_VERDICT,
            "no failure, but a case could not be judged (declined though not expected to be, \
             or out of steps)",
        ),
    ],
    "pimdiff replay corpus nightly-out/   # every case below these directories",
))]
pub struct Args {
    /// Case directories, or directories holding case directories (searched recursively).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long, short = 'j', value_name = "J")]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub compiler: CompilerArgs,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    args.compiler.check()?;
    let base = args.compiler.run_config();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()?;
    let lowering = args.compiler.lowering;
    let rows = pool.install(|| replay_with_lowering(&args.dirs, &base, lowering))?;
    print!("{}", render_table(&rows));
    for row in &rows {
        if let Ok(checked) = &row.result {
            let recorded = checked.run.external.is_some() && base.external.is_none();
            crate::cli::repro::refuse_setup_failure(checked, recorded)
                .with_context(|| format!("replaying {}", row.dir.display()))?;
        }
    }
    if rows.iter().any(|r| r.result.is_err()) {
        return Ok(exit(EXIT_BAD_INPUT));
    }
    Ok(exit_with(
        rows.iter()
            .map(row_verdict)
            .fold(Verdict::Clean, Verdict::and),
    ))
}

/// One row's verdict: clean when it meets its expectation (or, without one, passes); no
/// verdict when it does not because the case could not be judged (declined, out of steps,
/// tooling) and is no finding; a failure otherwise (an unreadable row too).
pub fn row_verdict(row: &ReplayRow) -> Verdict {
    let Ok(r) = &row.result else {
        return Verdict::Findings;
    };
    match r.meets_expectation {
        Some(true) => Verdict::Clean,
        _ if r.is_finding() => Verdict::Findings,
        _ if is_unjudged(r.observed.kind) => Verdict::NoVerdict,
        Some(false) => Verdict::Findings,
        None => Verdict::Clean,
    }
}

/// The table (status, case, expected, observed) and a one-line summary.
pub fn render_table(rows: &[ReplayRow]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let width = rows
        .iter()
        .map(|r| r.dir.display().to_string().len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "{:<10} {:<width$}  {:<40}  observed",
        "status", "case", "expected"
    );
    let mut counts = [0usize; 4];
    for r in rows {
        let dir = r.dir.display().to_string();
        let expected = r
            .expectation
            .as_ref()
            .map_or("(none: must pass)".to_string(), |e| e.to_string());
        let (status, observed) = match &r.result {
            Err(e) => ("ERROR", format!("unreadable: {e}")),
            Ok(res) => (
                match row_verdict(r) {
                    Verdict::Clean => "ok",
                    Verdict::NoVerdict => "NO VERDICT",
                    Verdict::Findings => "FAIL",
                },
                observed_text(res),
            ),
        };
        counts[match status {
            "ok" => 0,
            "FAIL" => 1,
            "NO VERDICT" => 2,
            _ => 3,
        }] += 1;
        let _ = writeln!(
            out,
            "{status:<10} {dir:<width$}  {expected:<40}  {observed}"
        );
    }
    let [ok, failed, unjudged, unreadable] = counts;
    let _ = writeln!(
        out,
        "\n{} case(s): {ok} as expected, {failed} not as expected, {unjudged} without a verdict, \
         {unreadable} unreadable",
        rows.len(),
    );
    out
}

/// What a checked row observed, as the table's last column.
fn observed_text(res: &crate::corpus::EntryResult) -> String {
    let mut o =
        res.observed
            .signature
            .clone()
            .unwrap_or_else(|| match &res.observed.unsupported_reason {
                Some(reason) => format!("unsupported: {reason}"),
                None => res.observed.kind.to_string(),
            });
    if let Some(d) = &res.expected_disagrees {
        o.push_str(&format!(
            " (expected.npy disagrees with the oracle in {} elements)",
            d.count
        ));
    }
    o
}
