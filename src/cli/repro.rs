//! `pimdiff repro DIR`: recompile and rerun a saved case, compare with the oracle (and with
//! `expected.npy` when present), print the outcome and the report.
//!
//! A finding of another target is dispatched on its `finding.json`'s `target`: a PUMA
//! finding (`puma`) runs the PUMA driver again on the saved files, in the saved tree or
//! `--puma-dir` / `--puma-sanitize-dir` (`targets::puma::repro`), prints the outcome and
//! exits 1 while it still shows the saved signature, 0 once it does not.
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
use std::time::Duration;

use anyhow::Context;
use pimdiff_compiler::{CompileOptions, Lowering, Reduction};
use pimdiff_isa::machine::Schedule;

use crate::check::n_version::LoweringChoice;
use crate::check::RunConfig;
use crate::cli::exit_codes::help;
use crate::cli::hunt::PumaTreeArgs;
use crate::cli::{exit, exit_with, EXIT_FINDING, EXIT_NO_VERDICT, EXIT_OK};
use crate::compilers::injected::BugClass;
use crate::compilers::CompilerUnderTest;
use crate::corpus::{check_entry, load_entry, EntryResult};
use crate::finding::Verdict;
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
}

/// Timeout of a PUMA finding's compile in `repro`.
const PUMA_REPRO_TIMEOUT: Duration = Duration::from_secs(60);

/// `repro` of a PUMA finding (module docs).
fn puma_main(args: &Args) -> anyhow::Result<ExitCode> {
    use crate::targets::puma::repro::repro;
    let r = repro(
        &args.dir,
        args.puma.puma_dir.as_deref(),
        args.puma.puma_sanitize_dir.as_deref(),
        PUMA_REPRO_TIMEOUT,
    )
    .with_context(|| format!("cannot replay the PUMA finding {}", args.dir.display()))?;
    println!("finding: {}", args.dir.display());
    println!("saved:   {}", r.saved);
    println!(
        "now:     {} ({} tree): {}",
        r.outcome
            .signature
            .as_ref()
            .map_or(r.outcome.kind.to_string(), |s| s.to_string()),
        r.tree.name(),
        r.outcome.detail
    );
    for f in r.outcome.frames.iter().filter(|f| f.own).take(8) {
        println!("  at {}", f.text());
    }
    if r.reproduces {
        println!("reproduces");
        Ok(exit(EXIT_FINDING))
    } else {
        println!("does not reproduce");
        Ok(exit(EXIT_OK))
    }
}

/// The compiler under test and how its programs run; shared by `repro`, `replay` and `hunt`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CompilerArgs {
    /// An external compiler: a shell command with `{case}` (the case directory) and `{out}`
    /// (an empty bundle directory) in it. Default: the in-repo compiler.
    #[arg(long, value_name = "CMD", conflicts_with_all = ["no_skip_padding", "no_weight_skipping", "inject_bug", "lowering", "reduction"])]
    pub compiler_cmd: Option<String>,
    /// How --compiler-cmd is run: `process` (default: once per case, with `{case}`/`{out}`)
    /// or `serve` (started once per job, one JSON request line per case on its standard
    /// input, one answer line back; no placeholders; see docs/serve-protocol.md).
    #[arg(
        long,
        value_name = "process|serve",
        value_enum,
        requires = "compiler_cmd"
    )]
    pub compiler_protocol: Option<CompilerProtocol>,
    /// In-repo compiler: do not skip kernel positions that fall in the padding, in any case.
    /// Without it a hunt switches padding skipping off in some cases (drawn from each case's
    /// seed), and `repro` and `replay` use the options a finding recorded.
    #[arg(long)]
    pub no_skip_padding: bool,
    /// In-repo compiler: do not leave out all-zero crossbars, in any case (without it, as
    /// for --no-skip-padding: some cases of a hunt, or what a finding recorded).
    #[arg(long)]
    pub no_weight_skipping: bool,
    /// Inject a known miscompilation into the in-repo compiler's output (a sanity check that
    /// the set-up detects bugs), e.g. `missing-bias`.
    #[arg(long, value_name = "CLASS", value_parser = parse_bug, conflicts_with_all = ["no_skip_padding", "no_weight_skipping"])]
    pub inject_bug: Option<BugClass>,
    /// In-repo compiler: the lowering, `channel` (default), `pixel`, or `both` (N-version:
    /// each case compiled both ways, each compared with the oracle and with each other; a
    /// finding says which lowering is wrong). `repro` and `replay` default to the lowering a
    /// finding recorded.
    #[arg(long, value_name = "channel|pixel|both")]
    pub lowering: Option<LoweringChoice>,
    /// In-repo compiler: how partial sums are reduced across cores, `noc` (`send`/`recv`),
    /// `gmem` (`st`, `sync`, `wait`, `ld`, as PIMCOMP-NN does) or `per-case` (default: each
    /// generated case one of the two, a fixed function of the case, so a hunt tests both; a
    /// finding records the one it was compiled with and replays with it). The injected race
    /// classes always use `gmem`, the other injected classes `noc`.
    #[arg(long, value_name = "noc|gmem|per-case")]
    pub reduction: Option<Reduction>,
    /// With `--inject-bug` and `--lowering both`: the lowering the bug goes into (default
    /// channel); the other lowering is compiled correctly.
    #[arg(long, value_name = "channel|pixel", requires = "inject_bug")]
    pub inject_into: Option<Lowering>,
    /// Core interleaving of the interpreter: `fixed` (default), `random:SEED` or
    /// `pct:SEED:DEPTH` (PCT: random core priorities with DEPTH-1 change points).
    #[arg(long, value_name = "fixed|random:SEED|pct:SEED:D", value_parser = parse_schedule)]
    pub schedule: Option<Schedule>,
    /// Do not check for races (unordered accesses of two cores to the same global bytes).
    #[arg(long)]
    pub no_race_check: bool,
    /// Run each program under K more PCT schedules (depth 3) after the first; a result that
    /// differs is a `schedule-dependent` finding. Default: hunts 1 (docs/results/throughput.md says why),
    /// repro and replay 0 (plus a finding's recorded schedule).
    #[arg(long, value_name = "K")]
    pub schedules: Option<u32>,
    /// Wall-clock limit of one external compiler run (e.g. `30s`); past it the command is
    /// killed and the case is a `timeout` finding. Default 60s.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub compiler_timeout: Option<Duration>,
    /// Wall-clock limit of each stage of a case (compile, run, oracle; an external compiler's
    /// stage gets --compiler-timeout on top); past it the case is a `timeout` finding and
    /// its thread is abandoned. Default 10s.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration)]
    pub case_timeout: Option<Duration>,
    /// Testing pimdiff itself: the interpreter panics on the first instruction with this
    /// opcode (e.g. `mvmul`), to see how an interpreter bug is reported.
    #[arg(long, value_name = "OPCODE", value_parser = parse_opcode, hide = true)]
    pub inject_interpreter_panic: Option<pimdiff_isa::Opcode>,
}

/// How an external compiler command is run.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompilerProtocol {
    /// Once per case, the directories in its `{case}`/`{out}` placeholders.
    #[default]
    Process,
    /// Started once per job, one request line per case (`pimdiff compile --serve`).
    Serve,
}

impl CompilerArgs {
    /// Refuses flags that contradict each other in ways clap cannot see: a serve-protocol
    /// command with placeholders (its directories travel in the requests).
    pub fn check(&self) -> anyhow::Result<()> {
        if let (Some(CompilerProtocol::Serve), Some(command)) =
            (self.compiler_protocol, &self.compiler_cmd)
        {
            if crate::compilers::serve::has_placeholder(command) {
                anyhow::bail!(
                    "--compiler-protocol serve takes a command without {{case}} or {{out}} (the \
                     directories are sent in each request): `{command}`"
                );
            }
        }
        Ok(())
    }

    /// The run configuration these flags describe.
    pub fn run_config(&self) -> RunConfig {
        let compiler = if let Some(command) = &self.compiler_cmd {
            let command = command.clone();
            match self.compiler_protocol.unwrap_or_default() {
                CompilerProtocol::Process => CompilerUnderTest::External { command },
                CompilerProtocol::Serve => CompilerUnderTest::Served { command },
            }
        } else if let Some(bug) = self.inject_bug {
            CompilerUnderTest::Mutated(bug, self.inject_into.unwrap_or_default())
        } else {
            CompilerUnderTest::InRepo(CompileOptions {
                skip_padding: !self.no_skip_padding,
                weight_skipping: !self.no_weight_skipping,
                // Both strategies get tested, each case always the same way.
                reduction: self.reduction.unwrap_or(Reduction::PerCase),
                ..CompileOptions::default()
            })
        };
        let mut run = RunConfig::with_compiler(compiler);
        if let Some(choice) = self.lowering {
            run = run.with_lowering(choice, self.inject_into);
        }
        if let Some(s) = self.schedule {
            run.schedule = s;
        }
        run.race_check = !self.no_race_check;
        run.explore = (0..self.schedules.unwrap_or(0))
            .map(|k| crate::check::concurrency::pct_schedule(0, k))
            .collect();
        if let Some(t) = self.compiler_timeout {
            run.external_timeout = t;
        }
        if let Some(t) = self.case_timeout {
            run.case_timeout = t;
        }
        run.interpreter_panic_on = self.inject_interpreter_panic;
        run
    }
}

/// `fixed`, `random:SEED` or `pct:SEED:DEPTH`.
pub fn parse_schedule(s: &str) -> Result<Schedule, String> {
    s.parse()
}

/// A bug class name (`BugClass::name`).
pub fn parse_bug(s: &str) -> Result<BugClass, String> {
    BugClass::from_name(s).ok_or_else(|| {
        format!(
            "unknown bug class {s:?} (known: {})",
            BugClass::known_names()
        )
    })
}

/// A duration such as `500ms`, `30s`, `10m`, `1h`.
pub fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    crate::engine::parse_duration(s).map_err(|e| e.to_string())
}

/// A duration that is not zero.
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration_arg(s)? {
        d if d.is_zero() => Err("must be longer than zero".into()),
        d => Ok(d),
    }
}

/// An opcode mnemonic (`mvmul`, `vvadd`, ...).
pub fn parse_opcode(s: &str) -> Result<pimdiff_isa::Opcode, String> {
    pimdiff_isa::Opcode::from_mnemonic(s).ok_or_else(|| format!("{s:?} is not an opcode mnemonic"))
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    if crate::targets::puma::repro::is_puma_finding(&args.dir) {
        return puma_main(&args);
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
    }
    let base = args.compiler.run_config();
    let checked = check_entry(&entry, &base);
    print!("{}", render(&entry, &checked));
    let verdict = if checked.is_finding() {
        Verdict::Findings
    } else {
        checked.result.outcome.verdict()
    };
    Ok(exit_with(verdict))
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
        if f.compiler != now {
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
