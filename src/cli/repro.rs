//! `pimdiff repro DIR`: recompile and rerun a saved case, compare with the oracle (and with
//! `expected.npy` when present), print the outcome and the report.
//!
//! A finding of another target is dispatched on its `finding.json`'s `target`: a PUMA
//! finding (`puma`) runs the PUMA driver again on the saved files, in the saved tree or
//! `--puma-dir` / `--puma-sanitize-dir` (`targets::puma::repro`), a CIM-MLC finding
//! (`cim-mlc`) CIM-MLC in the saved tree or `--cim-mlc-dir` (`targets::cim_mlc::repro`); each
//! prints the outcome and exits 1 while it still shows the saved signature, 0 once it does
//! not.
//!
//! Exit codes (`pimdiff::cli::exit_codes`): 0 the case passes; 1 a finding (mismatch, fault,
//! deadlock, compile error, timeout, race, bogus unsupported, …, or an `expected.npy` that
//! disagrees with the oracle); 2 the case cannot be read (the error names the file and field);
//! 4 no verdict: the compiler declines the case (also when the case is expected to be
//! declined: whether it would compile correctly stays unknown), or the run ran out of steps or
//! the tooling failed. `repro` judges the case, not its expectation: it prints whether the
//! expectation is met, and `replay` exits on that.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::exit_codes::help;
use crate::cli::{exit_with, EXIT_FINDING, EXIT_NO_VERDICT, EXIT_OK};
use crate::corpus::{check_entry, load_entry, EntryResult};
use crate::finding::Verdict;
use crate::registry::cim_mlc::CimMlcTreeArgs;
use crate::registry::puma::PumaTreeArgs;
use crate::registry::tensor::CompilerArgs;
use crate::targets::tensor::generate::describe_case;

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[
        (EXIT_OK, "the case passes"),
        (
            EXIT_FINDING,
            "a finding (mismatch, fault, deadlock, race, ...) or an expected.npy that disagrees \
             with the oracle",
        ),
        (
            EXIT_NO_VERDICT,
            "no verdict: the compiler declines the case (even when that is expected), or the \
             run ran out of steps",
        ),
    ],
    "pimdiff repro hunt-out/findings/001-mismatch-channels-all   # add --compiler-cmd CMD to \
     rerun it with your compiler",
))]
pub struct Args {
    /// A case directory (a saved finding or a plain case).
    pub dir: PathBuf,
    #[command(flatten)]
    pub compiler: CompilerArgs,
    #[command(flatten)]
    pub puma: PumaTreeArgs,
    #[command(flatten)]
    pub cim_mlc: CimMlcTreeArgs,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    if crate::targets::puma::repro::is_puma_finding(&args.dir) {
        let verdict = crate::registry::puma::repro(&args.dir, &args.puma)?;
        return Ok(exit_with(verdict));
    }
    if crate::targets::cim_mlc::repro::is_cim_mlc_finding(&args.dir) {
        let verdict = crate::registry::cim_mlc::repro(&args.dir, &args.cim_mlc)?;
        return Ok(exit_with(verdict));
    }
    args.compiler.check()?;
    let mut entry = load_entry(&args.dir)
        .with_context(|| format!("cannot read the case {}", args.dir.display()))?;
    if args.compiler.lowering.is_some() {
        entry.lowering = args.compiler.lowering;
    }
    // A finding's recorded `--inject-bug` says how it was found (a curated entry's
    // `expect.json` mutation is its purpose, and stays): an explicit compiler choice wins.
    let curated = entry
        .meta
        .expect_file
        .as_ref()
        .is_some_and(|e| e.mutation.is_some());
    if !curated && (args.compiler.compiler_cmd.is_some() || args.compiler.inject_bug.is_some()) {
        entry.mutation = args.compiler.inject_bug;
        entry.inject_into = args.compiler.inject_into;
    }
    let base = args.compiler.run_config();
    let recorded = crate::corpus::recorded_external(&entry, &base).is_some();
    let checked = check_entry(&entry, &base);
    refuse_setup_failure(&checked, recorded)?;
    if recorded {
        println!(
            "note: compiling with the compiler recorded in {}/finding.json \
             (details.external_compiler); --compiler-cmd chooses another",
            args.dir.display()
        );
    }
    print!("{}", render(&entry, &checked));
    let verdict = if checked.is_finding() {
        Verdict::Findings
    } else {
        checked.result.outcome.verdict()
    };
    Ok(exit_with(verdict))
}

/// A compiler that could not even start (not found, not executable, not speaking its
/// protocol) judges nothing: an error naming it and the fix (exit 2), unless that failure is
/// what the finding itself recorded. Never a pass or a finding of a compiler that did not run.
pub fn refuse_setup_failure(checked: &EntryResult, recorded: bool) -> anyhow::Result<()> {
    if checked.meets_expectation == Some(true) {
        return Ok(());
    }
    let Some(s) = crate::check::setup::diagnose(&checked.result.outcome) else {
        return Ok(());
    };
    let whose = if recorded {
        "the compiler recorded in finding.json"
    } else {
        "the compiler"
    };
    anyhow::bail!(
        "{whose} cannot be run, so the case was not judged\n  compiler: {}\n  what \
         happened: {}\n  fix: {}; or pass --compiler-cmd (and --compiler-protocol) to use \
         another compiler",
        checked.run.describe_compiler(),
        s.what.replace('\n', "\n    "),
        s.fix
    )
}

/// What `repro` prints: the case, the compiler (and whether it differs from the recorded
/// one), the outcome, an `expected.npy` disagreement, the expectation, then the report.
pub fn render(entry: &crate::corpus::Entry, checked: &EntryResult) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "case: {}", entry.dir.display());
    let _ = writeln!(out, "      {}", describe_case(&entry.case));
    let now = checked.run.describe_compiler();
    let _ = writeln!(out, "compiler: {now}");
    if let Some(f) = &entry.meta.finding {
        if f.compiler != now && checked.run.external.as_ref() != entry.external.as_ref() {
            let _ = writeln!(
                out,
                "note: the finding was recorded with a different compiler: {}",
                f.compiler
            );
        }
    }
    let _ = writeln!(out, "outcome: {}", checked.result.outcome.summary());
    let own = checked.result.signature().map(|s| s.to_string());
    if let Some(sig) = &own {
        let _ = writeln!(out, "signature: {sig}");
    }
    // A finding is filed under the cause triage named; say it when that is not the outcome's
    // own signature, so the folder's name and this output do not seem to disagree.
    if let Some(f) = entry
        .meta
        .finding
        .as_ref()
        .filter(|f| Some(&f.signature) != own.as_ref())
    {
        let _ = writeln!(out, "filed as: {}", f.signature);
    }
    if let Some(d) = &checked.expected_disagrees {
        let _ = writeln!(
            out,
            "expected.npy disagrees with the oracle: {} element(s) differ",
            d.count
        );
        for (idx, expected, oracle) in &d.first {
            let _ = writeln!(
                out,
                "  at {idx:?}: expected.npy {expected}, oracle {oracle}"
            );
        }
    }
    if let (Some(e), Some(met)) = (entry.meta.expectation(), checked.meets_expectation) {
        let _ = writeln!(
            out,
            "expectation: {e} ({})",
            if met { "met" } else { "NOT met" }
        );
    }
    let _ = writeln!(out);
    out.push_str(&crate::report::render_report(
        &entry.case,
        &checked.result,
        &checked.run,
    ));
    out
}
