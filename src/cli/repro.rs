//! `pimdiff repro DIR`: recompile and rerun a saved case, compare with the oracle (and with
//! `expected.npy` when present), print the outcome and the report.
//!
//! Exit 0 when the case passes; 1 for a finding (mismatch, fault, deadlock, compile error,
//! unsupported, out of steps, poisoned, or an `expected.npy` that disagrees with the oracle);
//! 2 when the case cannot be read (the error names the file and field).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use pimdiff_compiler::CompileOptions;
use pimdiff_isa::machine::Schedule;

use crate::cli::{exit, EXIT_FINDING, EXIT_OK};
use crate::corpus::{check_entry, load_entry, EntryResult};
use crate::driver::{CompilerUnderTest, RunConfig};
use crate::minimize::describe_case;
use crate::mutate::BugClass;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A case directory (a saved finding or a plain case).
    pub dir: PathBuf,
    #[command(flatten)]
    pub compiler: CompilerArgs,
}

/// The compiler under test and how its programs run; shared by `repro`, `replay` and `hunt`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CompilerArgs {
    /// An external compiler: a shell command with `{case}` (the case directory) and `{out}`
    /// (an empty bundle directory) in it. Default: the in-repo compiler.
    #[arg(long, value_name = "CMD", conflicts_with_all = ["no_skip_padding", "no_weight_skipping", "inject_bug"])]
    pub compiler_cmd: Option<String>,
    /// In-repo compiler: do not skip kernel positions that fall in the padding.
    #[arg(long)]
    pub no_skip_padding: bool,
    /// In-repo compiler: do not leave out all-zero crossbars.
    #[arg(long)]
    pub no_weight_skipping: bool,
    /// Inject a known miscompilation into the in-repo compiler's output (a sanity check that
    /// the set-up detects bugs), e.g. `missing-bias`.
    #[arg(long, value_name = "CLASS", value_parser = parse_bug, conflicts_with_all = ["no_skip_padding", "no_weight_skipping"])]
    pub inject_bug: Option<BugClass>,
    /// Core interleaving of the interpreter: `fixed` (default) or `random:SEED`.
    #[arg(long, value_name = "fixed|random:SEED", value_parser = parse_schedule)]
    pub schedule: Option<Schedule>,
    /// Wall-clock limit of one external compiler run (e.g. `30s`); past it the case is
    /// `poisoned`. Default 60s.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub compiler_timeout: Option<Duration>,
}

impl CompilerArgs {
    /// The run configuration these flags describe.
    pub fn run_config(&self) -> RunConfig {
        let compiler = if let Some(command) = &self.compiler_cmd {
            CompilerUnderTest::External {
                command: command.clone(),
            }
        } else if let Some(bug) = self.inject_bug {
            CompilerUnderTest::Mutated(bug)
        } else {
            CompilerUnderTest::InRepo(CompileOptions {
                skip_padding: !self.no_skip_padding,
                weight_skipping: !self.no_weight_skipping,
            })
        };
        let mut run = RunConfig::with_compiler(compiler);
        if let Some(s) = self.schedule {
            run.schedule = s;
        }
        if let Some(t) = self.compiler_timeout {
            run.external_timeout = t;
        }
        run
    }
}

/// `fixed` or `random:SEED`.
pub fn parse_schedule(s: &str) -> Result<Schedule, String> {
    match s.split_once(':') {
        None if s == "fixed" => Ok(Schedule::Fixed),
        Some(("random", seed)) => seed
            .parse::<u64>()
            .map(Schedule::Random)
            .map_err(|_| format!("{seed:?} is not a seed (a non-negative integer)")),
        _ => Err(format!("{s:?} is not a schedule (fixed or random:SEED)")),
    }
}

/// A bug class name (`BugClass::name`).
pub fn parse_bug(s: &str) -> Result<BugClass, String> {
    BugClass::from_name(s).ok_or_else(|| {
        let known: Vec<&str> = BugClass::ALL.iter().map(|b| b.name()).collect();
        format!("unknown bug class {s:?} (known: {})", known.join(", "))
    })
}

/// A duration such as `500ms`, `30s`, `10m`, `1h`.
pub fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    crate::hunt::parse_duration(s).map_err(|e| e.to_string())
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let entry = load_entry(&args.dir)
        .with_context(|| format!("cannot read the case {}", args.dir.display()))?;
    let base = args.compiler.run_config();
    let checked = check_entry(&entry, &base);
    print!("{}", render(&entry, &checked));
    Ok(exit(
        if checked.is_finding() || checked.observed.kind != "pass" {
            EXIT_FINDING
        } else {
            EXIT_OK
        },
    ))
}

/// What `repro` prints: the case, the compiler (and whether it differs from the recorded
/// one), the outcome, an `expected.npy` disagreement, the expectation, then the report.
pub fn render(entry: &crate::corpus::Entry, checked: &EntryResult) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "case: {}", entry.dir.display());
    let _ = writeln!(out, "      {}", describe_case(&entry.case));
    let now = checked.run.compiler.describe();
    let _ = writeln!(out, "compiler: {now}");
    if let Some(f) = &entry.meta.finding {
        if f.compiler != now {
            let _ = writeln!(
                out,
                "note: the finding was recorded with a different compiler: {}",
                f.compiler
            );
        }
    }
    let _ = writeln!(out, "outcome: {}", checked.result.outcome.summary());
    if let Some(sig) = checked.result.outcome.signature() {
        let _ = writeln!(out, "signature: {sig}");
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
