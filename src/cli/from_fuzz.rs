//! `pimdiff from-fuzz ARTIFACT --target conv_lowering|mvm_lowering OUT_DIR`: turns a libFuzzer
//! crash artifact of a lowering target into a minimized finding directory that
//! `pimdiff repro OUT_DIR` reproduces without libFuzzer or nightly.
//!
//! The case is rebuilt from the artifact's bytes by the very function the target calls
//! ([`lowering_case`]), checked with the target's configuration, shrunk by the harness's
//! minimizer while its signature holds, and saved like a hunt finding (`case.json` + `.npy`
//! with `expected.npy` = the oracle's output, `bundle/`, `report.md`, `finding.json`).
//!
//! Exit codes (`pimdiff::cli::exit_codes`): 0 the artifact does not reproduce a finding (the
//! case passes, or the bytes decode to no case; nothing is written, and the message says what
//! the case did instead); 1 the artifact is a finding (saved to OUT_DIR); 2 bad input
//! (unreadable artifact, OUT_DIR already exists, bad flags); 4 no verdict: the compiler
//! declines the case, or its run ran out of steps (nothing is written).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use pimdiff_input::limits::MAX_FUZZ_ARTIFACT_BYTES;
use pimdiff_oracle::Case;

use crate::check::outcome::Signature;
use crate::check::{check_case, CaseResult, RunConfig};
use crate::cli::exit_codes::help;
use crate::cli::{exit, exit_with, EXIT_FINDING, EXIT_NO_VERDICT, EXIT_OK};
use crate::corpus::{record_compiler, save_finding};
use crate::engine::shrink::MinimizeConfig;
use crate::finding::{FindingMeta, MinimizationStats, Verdict};
use crate::fuzz_targets::{lowering_case, lowering_gen_config, LoweringTarget};
use crate::registry::flags::parse_duration_arg;
use crate::registry::tensor::CompilerArgs;
use crate::report::render_report;
use crate::targets::tensor::generate::describe_case;
use crate::targets::tensor::shrink::{case_size, minimize};

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[
        (
            EXIT_OK,
            "the artifact does not reproduce a finding (the case passes); nothing is written",
        ),
        (EXIT_FINDING, "the artifact is a finding, saved to OUT_DIR"),
        (
            EXIT_NO_VERDICT,
            "no verdict: the compiler declines the case or its run ran out of steps",
        ),
    ],
    "pimdiff from-fuzz fuzz/artifacts/conv_lowering/crash-1a2b --target conv_lowering findings/conv-1",
))]
pub struct Args {
    /// The crash artifact libFuzzer wrote (e.g. fuzz/artifacts/conv_lowering/crash-<sha1>).
    pub artifact: PathBuf,
    /// The fuzz target that wrote it.
    #[arg(long, value_enum)]
    pub target: LoweringTarget,
    /// The finding directory to create (it must not exist yet).
    pub out_dir: PathBuf,
    /// How long the minimizer may shrink the case (e.g. 10s, 2m); 0s saves it as found.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = parse_duration_arg)]
    pub minimize_time: Duration,
    /// The compiler the case is checked with. The default is what the fuzz targets use (the
    /// in-repo compiler); pass `--inject-bug CLASS` for an artifact found with
    /// `PIMDIFF_FUZZ_INJECT_BUG=CLASS` set.
    #[command(flatten)]
    pub compiler: CompilerArgs,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    // Through the bounded reader (`MAX_FUZZ_ARTIFACT_BYTES`); no bytes is an input like any other.
    let bytes = pimdiff_input::read_maybe_empty(&args.artifact, MAX_FUZZ_ARTIFACT_BYTES)
        .with_context(|| format!("cannot read the fuzz artifact {}", args.artifact.display()))?;
    if args.out_dir.exists() {
        anyhow::bail!(
            "{} already exists (from-fuzz creates a new finding directory)",
            args.out_dir.display()
        );
    }
    let target = args.target;
    let Some(original) = lowering_case(target, &bytes) else {
        println!(
            "no finding: the {} bytes of {} do not decode to a case for {} (the target checks nothing for them)",
            bytes.len(),
            args.artifact.display(),
            target.name()
        );
        return Ok(exit(EXIT_OK));
    };
    args.compiler.check()?;
    let run = args.compiler.run_config();
    let first = check_case(&original, &run);
    let Some(signature) = first.outcome.signature() else {
        let verdict = first.outcome.verdict();
        println!(
            "{}: the artifact does not reproduce ({} case `{}` gives `{}` with {})",
            if verdict == Verdict::NoVerdict {
                "no verdict"
            } else {
                "no finding"
            },
            target.name(),
            describe_case(&original),
            first.outcome.summary(),
            run.compiler.describe()
        );
        println!("(a libFuzzer timeout or out-of-memory artifact, or one found with another compiler, does this)");
        return Ok(exit_with(verdict));
    };
    println!("finding: {signature}");
    println!("case:    {}", describe_case(&original));

    let (case, result, stats) = shrink(&original, first, &run, &signature, args.minimize_time);
    if let Some(stats) = &stats {
        println!(
            "minimized: {} (size {} → {}, {} candidates tried, {} kept{})",
            describe_case(&case),
            stats.original_size,
            stats.minimized_size,
            stats.tried,
            stats.kept,
            if stats.cut_short {
                ", cut short by --minimize-time"
            } else {
                ""
            }
        );
    }
    let dir = save(&args, &bytes, case, result, &run, stats)?;
    println!("saved:   {}", dir.display());
    println!("reproduce: {}", repro_command(&dir, &args.compiler));
    Ok(exit(EXIT_FINDING))
}

/// Minimizes `original` for at most `time` and rechecks the result (for its bundle, oracle
/// and report). Keeps the original when the budget is zero or when the recheck does not give
/// the same signature (only a flaky external compiler can do that: minimization is
/// deterministic).
fn shrink(
    original: &Case,
    first: CaseResult,
    run: &RunConfig,
    signature: &Signature,
    time: Duration,
) -> (Case, CaseResult, Option<MinimizationStats>) {
    if time.is_zero() {
        return (original.clone(), first, None);
    }
    let m = minimize(
        original,
        run,
        signature,
        &MinimizeConfig {
            time_budget: time,
            ..MinimizeConfig::default()
        },
    );
    let cut_short = m
        .log
        .last()
        .is_some_and(|l| l.starts_with("stopped: budget"));
    let result = check_case(&m.case, run);
    if result.outcome.signature().as_ref() != Some(signature) {
        return (original.clone(), first, None);
    }
    let stats = MinimizationStats {
        tried: m.tried as u64,
        kept: m.kept as u64,
        original_size: case_size(original),
        minimized_size: case_size(&m.case),
        cut_short,
    };
    (m.case, result, Some(stats))
}

/// Saves the finding directory with the corpus module's atomic writer; `report.md` starts
/// with where the case came from.
fn save(
    args: &Args,
    bytes: &[u8],
    mut case: Case,
    mut result: CaseResult,
    run: &RunConfig,
    stats: Option<MinimizationStats>,
) -> anyhow::Result<PathBuf> {
    // With its N-version attribution (`pixel only: …`), as `repro` shows it.
    let signature = result.signature().expect("a finding has a signature");
    case.expected = result.oracle.take();
    let origin = format!(
        "From the cargo-fuzz target `{}`, artifact `{}` ({} bytes), converted by `pimdiff from-fuzz`{}.\n\n",
        args.target.name(),
        file_name(&args.artifact),
        bytes.len(),
        if stats.is_some() { " and minimized" } else { "" }
    );
    // The origin goes right under the report's title line.
    let rendered = render_report(&case, &result, run);
    let report = match rendered.split_once("\n\n") {
        Some((title, rest)) => format!("{title}\n\n{origin}{rest}"),
        None => format!("{origin}{rendered}"),
    };
    let mut meta = FindingMeta {
        generator: serde_json::to_value(lowering_gen_config(args.target)).unwrap_or_default(),
        minimization: stats,
        schedule: result.outcome.schedule().map(str::to_string),
        target: Some("cases".to_string()),
        ..FindingMeta::new(&signature, run.compiler.describe())
    };
    // The injected bug, lowering and compiler options, so that `pimdiff repro DIR` compiles
    // the case as it was checked here, from the directory alone.
    record_compiler(&mut meta, run, &case, None);
    save_finding(
        &args.out_dir,
        &case,
        result.bundle.as_ref(),
        &report,
        &meta,
        &crate::report::attachments(&case, &result),
    )
    .with_context(|| format!("cannot save the finding to {}", args.out_dir.display()))
}

/// The `pimdiff repro` command that reproduces the saved finding: the directory records the
/// in-repo compiler's injected bug, lowering and options, but not an external compiler's
/// command, which must be given again.
fn repro_command(dir: &Path, compiler: &CompilerArgs) -> String {
    let mut command = format!("pimdiff repro {}", dir.display());
    if let Some(cmd) = &compiler.compiler_cmd {
        if compiler.compiler_protocol == Some(crate::registry::tensor::CompilerProtocol::Serve) {
            command.push_str(" --compiler-protocol serve");
        }
        command.push_str(&format!(" --compiler-cmd '{}'", cmd.replace('\'', "'\\''")));
    }
    command
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}
