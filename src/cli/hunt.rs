//! `pimdiff hunt`: generate cases of a target from a seed, check them in parallel, minimize and
//! save every unique finding, summarize (see [`crate::engine`]). `--target` picks the compiler
//! under test: `cases` (conv2d/MVM through the in-repo compiler or `--compiler-cmd`, the
//! default), `pimcomp-nn` (random networks through the real PIMCOMP-NN) or `puma` (random
//! networks through the PUMA compiler, checked on the PUMA machine). A flag of another
//! target is refused at parse time, naming the target that takes it.
//!
//! Exit codes (`pimdiff::cli::exit_codes`, from [`HuntSummary::verdict`]): 0 nothing was
//! found; 1 findings (timeouts and interpreter panics among them); 2 bad arguments or an
//! output directory that cannot be used; 4 no finding, but no verdict either: the compiler
//! declined more cases than the generator explains, or no case could be judged at all.
//! Findings take precedence. Ctrl-C / SIGTERM stops cleanly within five seconds,
//! hung cases or not: findings are on disk from the moment they are found, triage gets what
//! is left of the five seconds, the summary is written; a second signal skips what remains of
//! triage; a third exits at once (only hidden temporary directories can be left, removed by
//! the next hunt).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::cli::exit_codes::help;
use crate::cli::{exit_with, EXIT_BAD_INPUT, EXIT_FINDING, EXIT_NO_VERDICT, EXIT_OK};
use crate::engine::shrink::MinimizeConfig;
use crate::engine::{render_summary, HuntConfig, HuntControl, Limit, Shard};
use crate::finding::Kind;
use crate::registry::flags::{parse_duration_arg, ratio};
use crate::registry::{check_flags, Guided, TargetFlags};
use crate::summary::HuntSummary;

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[
        (EXIT_OK, "nothing found"),
        (
            EXIT_FINDING,
            "findings (saved under OUT/findings/, listed in OUT/summary.md)",
        ),
        (
            EXIT_BAD_INPUT,
            "bad usage, a flag of another --target, or an OUT that already holds findings",
        ),
        (
            EXIT_NO_VERDICT,
            "no finding, but no verdict: the compiler declined more cases than the generator \
             explains (--max-unsupported), or no case could be judged",
        ),
    ],
    "pimdiff hunt --cases 500 --compiler-cmd './mycc {case} -o {out}' --out hunt-out",
))]
pub struct Args {
    /// The hunt seed: case k of the hunt is generated from a seed derived from (SEED, k).
    /// Without it a seed is picked from the clock, printed first and recorded in the summary,
    /// so any hunt can be rerun exactly.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run the case indices 0..N (this shard's share of them).
    #[arg(
        long,
        value_name = "N",
        required_unless_present = "duration",
        conflicts_with = "duration"
    )]
    pub cases: Option<u64>,
    /// Run the hunt for this long, triage and saving included: `30s`, `10m`, `1h`, `500ms`.
    /// Once there is a finding, the last quarter is kept for triage.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub duration: Option<Duration>,
    /// Worker threads (default: one per core).
    #[arg(long, short = 'j', value_name = "J", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub jobs: Option<u64>,
    /// Output directory: findings/, summary.json, summary.md (default: hunt-SEED, with
    /// -shardIofN when sharded).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Shard i of n (0-based): only the case indices k with k mod n == i.
    #[arg(long, value_name = "i/n", default_value = "0/1")]
    pub shard: Shard,
    /// Time budget of each finding's triage (minimization and localization). Default: 10s,
    /// or the time of 150 checks of a case at the speed the hunt measured when that is longer
    /// (a slow external compiler; at most 10m).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub minimize_time: Option<Duration>,
    /// Largest share of declined cases (unsupported) that passes, 0..=1. Default: the
    /// generator's --overcommit-ratio plus 0.05 (with a margin for chance on short hunts).
    #[arg(long, value_name = "R", value_parser = ratio)]
    pub max_unsupported: Option<f64>,
    /// No progress bar (it is also hidden when stderr is not a terminal).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Coverage-guided generation: cases that reach new edges of the compiler are kept in a
    /// corpus (OUT/corpus/) and mutated, one case in four fresh. With --jobs 1 a seed gives
    /// the same corpus and findings every time.
    #[arg(long)]
    pub guided: bool,
    /// Start a --guided hunt from this corpus (an earlier hunt's OUT/corpus), replayed first.
    #[arg(long, value_name = "DIR", requires = "guided")]
    pub corpus: Option<PathBuf>,
    /// One --guided case in N is fresh, the others mutate the corpus; 1 makes no mutants (the
    /// unguided hunt's cases with their feedback measured: a baseline).
    #[arg(long, value_name = "N", default_value_t = crate::engine::guided::FRESH_EVERY, value_parser = clap::value_parser!(u64).range(1..), requires = "guided")]
    pub fresh_every: u64,
    #[command(flatten)]
    pub targets: TargetFlags,
}

/// `--minimize-time` when it is not given, for a compiler fast enough to need no more.
const DEFAULT_MINIMIZE_TIME: Duration = Duration::from_secs(10);
/// Checks of a case each finding's triage may take at least when `--minimize-time` is not
/// given: the tiny Python compiler of the guide, run once per case (about 2 cases/s per
/// worker), needs about 40 for minimization and its cause, and 10 s would give it 20.
const TRIAGE_CHECKS: u64 = 150;

/// A seed for a hunt that was given none: the clock's nanoseconds, mixed so that hunts
/// started in the same second differ in every bit.
fn pick_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // splitmix64's finaliser.
    let mut z = nanos ^ u64::from(std::process::id()).rotate_left(32);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The hunt's seed (picked and printed first when `--seed` is absent) and its limit: what
/// every target's hunt starts with.
pub fn seed_and_limit(args: &mut Args) -> anyhow::Result<(u64, Limit)> {
    let seed = *args.seed.get_or_insert_with(|| {
        let seed = pick_seed();
        println!("seed: {seed} (picked; rerun with --seed {seed})");
        seed
    });
    let limit = match (args.cases, args.duration) {
        (Some(n), _) => Limit::Cases(n),
        (None, Some(d)) => Limit::Duration(d),
        (None, None) => anyhow::bail!("give --cases N or --duration D"),
    };
    Ok((seed, limit))
}

/// `pimdiff hunt`: the engine over the chosen target. `given` holds the flags given on the
/// command line (see [`check_flags`]).
pub fn main(mut args: Args, given: &[String]) -> anyhow::Result<ExitCode> {
    check_flags(args.targets.target, given)?;
    let (seed, limit) = seed_and_limit(&mut args)?;
    let out = args.out.clone().unwrap_or_else(|| {
        if args.shard == Shard::ALL {
            PathBuf::from(format!("hunt-{seed}"))
        } else {
            PathBuf::from(format!(
                "hunt-{}-shard{}of{}",
                seed, args.shard.index, args.shard.count
            ))
        }
    });
    let cfg = HuntConfig {
        seed,
        limit,
        jobs: args.jobs.unwrap_or(0) as usize,
        shard: args.shard,
        minimize: MinimizeConfig {
            time_budget: args.minimize_time.unwrap_or(DEFAULT_MINIMIZE_TIME),
            max_steps: crate::triage::TRIAGE_RUNS as usize,
        },
        max_unsupported: args.max_unsupported,
        out,
    };
    let control = HuntControl {
        progress: !args.quiet && std::io::stderr().is_terminal(),
        // The tensor target's triage reruns edited programs in-process and compiles only its
        // minimization candidates; the network targets compile for every step and keep their
        // fixed budget.
        triage_checks: (args.minimize_time.is_none()
            && args.targets.target == crate::registry::TargetName::Cases)
            .then_some(TRIAGE_CHECKS),
        ..HuntControl::default()
    };
    install_signal_handler(&control)?;
    let guided = args.guided.then(|| Guided {
        corpus: args.corpus.clone(),
        fresh_every: args.fresh_every,
    });
    let summary = args
        .targets
        .hunt(&cfg, &control, guided.as_ref())?
        .with_context(|| format!("hunt in {}", cfg.out.display()));
    crate::compilers::serve::shutdown();
    let summary = summary?;
    print!("{}", render_summary(&summary));
    println!(
        "\nsummary: {}",
        cfg.out.join(crate::engine::SUMMARY_MD).display()
    );
    if let Some(first) = summary.findings.first() {
        // The whole command: a finding records its compiler (command, protocol, options,
        // environment), so `repro` needs no flags.
        println!(
            "reproduce the first: pimdiff repro {}   (it compiles with the compiler recorded in \
             its finding.json; no flags needed)",
            cfg.out.join(&first.dir).display()
        );
    }
    warn_loudly(&summary);
    if let Some(g) = summary.details.get("guided") {
        let n = |k: &str| g[k].as_u64().unwrap_or(0);
        println!(
            "guided: {} corpus entries ({} fresh, {} mutants, {} loaded) in {}, {} edges; feedback: {}",
            n("kept_fresh") + n("kept_mutants") + n("kept_loaded"),
            n("kept_fresh"),
            n("kept_mutants"),
            n("kept_loaded"),
            cfg.out.join(crate::engine::guided::CORPUS_DIR).display(),
            n("edges"),
            g["feedback"].as_str().unwrap_or("")
        );
    }
    Ok(exit_with(summary.verdict()))
}

/// What must not scroll by unnoticed goes to stderr too: interpreter panics (a bug in pimdiff),
/// timeouts, too many declined cases.
fn warn_loudly(s: &HuntSummary) {
    let dirs = |kind: Kind| -> Vec<&str> {
        s.findings
            .iter()
            .filter(|f| f.outcome == kind)
            .map(|f| f.dir.as_str())
            .collect()
    };
    if s.interpreter_panics > 0 {
        eprintln!(
            "error: the interpreter panicked on {} case(s): a bug in pimdiff itself, please report it ({})",
            s.interpreter_panics,
            dirs(Kind::InterpreterPanic).join(", ")
        );
    }
    if s.timeouts > 0 {
        eprintln!(
            "error: {} case(s) did not finish within the case timeout ({})",
            s.timeouts,
            dirs(Kind::Timeout).join(", ")
        );
    }
    for why in s
        .declines
        .explanation(s.cases_run)
        .into_iter()
        .chain(s.unjudged_explanation())
    {
        eprintln!("error: {why}");
    }
}

/// Ctrl-C / SIGTERM: the first asks the hunt to stop, the second skips what is left of
/// triage, the third kills every compiler still running and exits at once (status 130).
pub(crate) fn install_signal_handler(control: &HuntControl) -> anyhow::Result<()> {
    let stop = Arc::clone(&control.stop);
    let abort = Arc::clone(&control.abort_minimization);
    let count = AtomicUsize::new(0);
    ctrlc::set_handler(move || match count.fetch_add(1, Ordering::SeqCst) {
        0 => {
            eprintln!("\nstopping: saving what was found and the summary (within 5 s; again to skip minimization)");
            stop.store(true, Ordering::SeqCst);
        }
        1 => {
            eprintln!("\nskipping minimization; saving findings unminimized");
            abort.store(true, Ordering::SeqCst);
        }
        _ => {
            crate::process::kill_all();
            std::process::exit(130)
        }
    })
    .context("cannot install the Ctrl-C handler")
}
