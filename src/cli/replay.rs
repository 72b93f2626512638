//! `pimdiff replay DIR...`: run every case directory (a corpus) and compare each with the
//! expectation recorded in its `finding.json` / `expect.json`; print a table and a summary.
//!
//! Exit 0 when every case meets its expectation (a case without one must not be a finding),
//! 1 otherwise, 2 when a case cannot be read.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::repro::CompilerArgs;
use crate::cli::{exit, EXIT_BAD_INPUT, EXIT_FINDING, EXIT_OK};
use crate::corpus::{replay_with_lowering, ReplayRow};

#[derive(clap::Args, Debug)]
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
    let base = args.compiler.run_config();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()?;
    let lowering = args.compiler.lowering;
    let rows = pool.install(|| replay_with_lowering(&args.dirs, &base, lowering))?;
    print!("{}", render_table(&rows));
    let unreadable = rows.iter().filter(|r| r.result.is_err()).count();
    let failed = rows.iter().filter(|r| !r.ok()).count();
    Ok(exit(if unreadable > 0 {
        EXIT_BAD_INPUT
    } else if failed > 0 {
        EXIT_FINDING
    } else {
        EXIT_OK
    }))
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
        "{:<6} {:<width$}  {:<40}  observed",
        "status", "case", "expected"
    );
    for r in rows {
        let dir = r.dir.display().to_string();
        let expected = r
            .expectation
            .as_ref()
            .map_or("(none: not a finding)".to_string(), |e| e.to_string());
        let (status, observed) = match &r.result {
            Err(e) => ("ERROR", format!("unreadable: {e}")),
            Ok(res) => {
                let mut o = res.observed.signature.clone().unwrap_or_else(|| {
                    match &res.observed.unsupported_reason {
                        Some(reason) => format!("unsupported: {reason}"),
                        None => res.observed.kind.to_string(),
                    }
                });
                if let Some(d) = &res.expected_disagrees {
                    o.push_str(&format!(
                        " (expected.npy disagrees with the oracle in {} elements)",
                        d.count
                    ));
                }
                (if r.ok() { "ok" } else { "FAIL" }, o)
            }
        };
        let _ = writeln!(out, "{status:<6} {dir:<width$}  {expected:<40}  {observed}");
    }
    let ok = rows.iter().filter(|r| r.ok()).count();
    let unreadable = rows.iter().filter(|r| r.result.is_err()).count();
    let _ = writeln!(
        out,
        "\n{} case(s): {ok} as expected, {} not as expected, {unreadable} unreadable",
        rows.len(),
        rows.len() - ok - unreadable
    );
    out
}
