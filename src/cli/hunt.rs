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
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args as _;

use crate::cli::exit_codes::help;
use crate::cli::repro::{parse_duration_arg, CompilerArgs};
use crate::cli::{exit_with, EXIT_BAD_INPUT, EXIT_FINDING, EXIT_NO_VERDICT, EXIT_OK};
use crate::engine::shrink::MinimizeConfig;
use crate::engine::{
    load_corpus, render_summary, run_guided_hunt, run_hunt, Guidance, GuidedTarget, HuntConfig,
    HuntControl, Limit, Shard,
};
use crate::finding::Kind;
use crate::summary::HuntSummary;
use crate::targets::pimcomp_nn::case::CaseContext;
use crate::targets::pimcomp_nn::compile::{CompilerSetup, Pipeline, ZeroedMemory};
use crate::targets::pimcomp_nn::network::NetConfig;
use crate::targets::pimcomp_nn::PimcompTarget;
use crate::targets::puma::case::CaseContext as PumaCases;
use crate::targets::puma::check::CheckOptions;
use crate::targets::puma::compile::PumaSetup;
use crate::targets::puma::inject::Injection;
use crate::targets::puma::{PumaNetConfig, PumaTarget};
use crate::targets::tensor::generate::GenConfig;
use crate::targets::tensor::TensorTarget;

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
    /// Time budget of each finding's triage (minimization and localization).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg, default_value = "10s")]
    pub minimize_time: Duration,
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
    /// What to hunt: `cases` (conv2d/MVM through the in-repo compiler or --compiler-cmd),
    /// `pimcomp-nn` (random networks through the real PIMCOMP-NN) or `puma` (random networks
    /// through the PUMA compiler).
    #[arg(long, value_enum, default_value = "cases")]
    pub target: Target,
    #[command(flatten)]
    pub compiler: CompilerArgs,
    #[command(flatten)]
    pub generator: GeneratorArgs,
    #[command(flatten)]
    pub pimcomp: PimcompTargetArgs,
    #[command(flatten)]
    pub puma: PumaTargetArgs,
    #[command(flatten)]
    pub coverage: CoverageArgs,
}

/// What the hunt generates and which compiler it runs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Target {
    /// Conv2d/MVM cases through --compiler (the in-repo compiler by default).
    #[default]
    Cases,
    /// Random networks through the real PIMCOMP-NN binary, checked with `pimdiff pimcomp`.
    PimcompNn,
    /// Random networks through the PUMA compiler (`puma-driver`), checked on the PUMA machine.
    Puma,
}

/// PIMCOMP-NN's pipelines to hunt.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipelineMode {
    Batch,
    Element,
    Both,
}

/// Flags of `--target pimcomp-nn`.
#[derive(clap::Args, Debug, Clone)]
pub struct PimcompTargetArgs {
    /// PIMCOMP-NN pipeline(s) (--target pimcomp-nn).
    #[arg(long, value_enum, default_value = "both")]
    pub mode: PipelineMode,
    /// The PIMCOMP-NN binary (default: $PIMCOMP_NN_BIN); scripts/build-pimcomp.sh builds it
    /// with config.json and the time-pinning shim beside it.
    #[arg(long, value_name = "PATH")]
    pub pimcomp_bin: Option<PathBuf>,
    /// Timeout of one PIMCOMP-NN compile.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg, default_value = "30s")]
    pub compile_timeout: Duration,
    /// Resident-memory limit of one PIMCOMP-NN compile, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 4096)]
    pub max_rss_mib: u64,
    /// Largest number of blocks of a generated network (--target pimcomp-nn).
    #[arg(long, value_name = "N")]
    pub max_blocks: Option<usize>,
    /// How PIMCOMP-NN's zeroed memory is provided (the shim beside the binary). The compiled
    /// programs are the same in every mode; `lazy` compiles over 10 times as fast as `small`.
    #[arg(long, value_enum, default_value = "lazy")]
    pub pimcomp_pages: ZeroedMemory,
}

/// Coverage of the compiler's own source, for `--target pimcomp-nn` and `--target puma`
/// (the C++ compilers, built for it by their scripts).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CoverageArgs {
    /// Measure the compiler's coverage (--target pimcomp-nn: --pimcomp-bin a
    /// `scripts/build-pimcomp.sh --coverage` build; --target puma: --puma-dir a
    /// `scripts/build-puma.sh --coverage` tree): each case's edges, and line and branch totals
    /// in summary.json.
    #[arg(long)]
    pub coverage: bool,
    /// With --coverage: also an HTML report by gcovr in DIR (gcovr from $PATH or
    /// the environment of scripts/setup-python.sh).
    #[arg(long, value_name = "DIR", requires = "coverage")]
    pub coverage_html: Option<PathBuf>,
}

/// The PUMA compiler's trees (`scripts/build-puma.sh`), for `hunt --target puma` and `repro`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PumaTreeArgs {
    /// The PUMA compiler's plain tree, with src/libpuma.so, include/puma.h and
    /// bin/puma-driver (default: $PUMA_DIR; `scripts/build-puma.sh | tail -1` prints it).
    #[arg(long, value_name = "DIR")]
    pub puma_dir: Option<PathBuf>,
    /// The sanitizer tree (default: $PUMA_SANITIZE_DIR, else the plain tree's sibling
    /// `../sanitize`, where scripts/build-puma.sh puts it).
    #[arg(long, value_name = "DIR")]
    pub puma_sanitize_dir: Option<PathBuf>,
}

/// The machine's semantics where the PUMA simulator and compiler disagree.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuirksChoice {
    /// What the compiler's output clearly means (`docs/puma-findings.md`).
    Compiler,
    /// The simulator's behaviour: "would it run on the simulator".
    Simulator,
}

/// Flags of `--target puma`.
#[derive(clap::Args, Debug, Clone)]
pub struct PumaTargetArgs {
    #[command(flatten)]
    pub trees: PumaTreeArgs,
    /// The machine's semantics where the simulator contradicts the compiler's output
    /// (--target puma).
    #[arg(long, value_enum, default_value = "compiler")]
    pub puma_quirks: QuirksChoice,
    /// Share of the cases whose plain compile succeeds that the sanitizer tree compiles and
    /// checks too, 0..=1 (--target puma).
    #[arg(long, value_name = "R", value_parser = ratio, default_value = "0.25")]
    pub puma_sanitize_rate: f64,
    /// Timeout of one compile (--target puma). Generated networks compile in well under a
    /// second, the slowest seen in about 20 s (docs/puma-findings.md); past this it is a hang.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg, default_value = "60s")]
    pub puma_timeout: Duration,
    /// Resident-memory limit of one compile, in MiB (--target puma).
    #[arg(long, value_name = "MIB", default_value_t = 4096)]
    pub puma_max_rss_mib: u64,
    /// Testing pimdiff itself: inject a known miscompilation into every compile's output
    /// (`load-address`, `weight-rows`).
    #[arg(long, value_name = "CLASS", value_parser = parse_injection, hide = true)]
    pub puma_inject: Option<Injection>,
}

fn parse_injection(s: &str) -> Result<Injection, String> {
    Injection::from_name(s)
        .ok_or_else(|| format!("unknown injection {s:?} (known: load-address, weight-rows)"))
}

/// Generator size flags (each maps to the [`GenConfig`] field of the same name; unset flags
/// keep the defaults).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct GeneratorArgs {
    /// Largest channel count (conv2d C and K, MVM features).
    #[arg(long, value_name = "N", value_parser = positive)]
    pub max_channels: Option<usize>,
    /// Largest input height and width.
    #[arg(long, value_name = "N", value_parser = positive)]
    pub max_spatial: Option<usize>,
    /// Largest kernel height and width.
    #[arg(long, value_name = "N", value_parser = positive)]
    pub max_kernel: Option<usize>,
    /// Largest batch.
    #[arg(long, value_name = "N", value_parser = positive)]
    pub max_batch: Option<usize>,
    /// Largest core count.
    #[arg(long, value_name = "N", value_parser = positive)]
    pub max_cores: Option<usize>,
    /// Largest number of arrays per core.
    #[arg(long, value_name = "N", value_parser = positive)]
    pub max_arrays_per_core: Option<usize>,
    /// Largest array rows / columns.
    #[arg(long, value_name = "N", value_parser = positive)]
    pub max_array_dim: Option<usize>,
    /// Largest local memory per core, in bytes.
    #[arg(long, value_name = "BYTES", value_parser = positive)]
    pub max_local_memory_bytes: Option<usize>,
    /// Share of MVM cases (0..=1).
    #[arg(long, value_name = "R", value_parser = ratio)]
    pub mvm_ratio: Option<f64>,
    /// Share of edge choices (0..=1).
    #[arg(long, value_name = "R", value_parser = ratio)]
    pub edge_ratio: Option<f64>,
    /// Share of cases that deliberately overcommit their architecture (0..=1).
    #[arg(long, value_name = "R", value_parser = ratio)]
    pub overcommit_ratio: Option<f64>,
}

impl GeneratorArgs {
    /// The default configuration with the flags given applied.
    pub fn config(&self) -> GenConfig {
        let mut c = GenConfig::default();
        let set = |field: &mut usize, v: Option<usize>| {
            if let Some(v) = v {
                *field = v;
            }
        };
        set(&mut c.max_channels, self.max_channels);
        set(&mut c.max_spatial, self.max_spatial);
        set(&mut c.max_kernel, self.max_kernel);
        set(&mut c.max_batch, self.max_batch);
        set(&mut c.max_cores, self.max_cores);
        set(&mut c.max_arrays_per_core, self.max_arrays_per_core);
        set(&mut c.max_array_dim, self.max_array_dim);
        set(&mut c.max_local_memory_bytes, self.max_local_memory_bytes);
        for (field, v) in [
            (&mut c.mvm_ratio, self.mvm_ratio),
            (&mut c.edge_ratio, self.edge_ratio),
            (&mut c.overcommit_ratio, self.overcommit_ratio),
        ] {
            if let Some(v) = v {
                *field = v;
            }
        }
        c
    }
}

fn positive(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("{s:?} is not a positive integer")),
    }
}

fn ratio(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a number between 0 and 1")),
    }
}

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

/// PCT schedules each hunt case runs under after the fixed one (`--schedules`): chosen by
/// measurement (`docs/results/throughput.md`) to keep the clean hunt's throughput.
pub const DEFAULT_SCHEDULES: u32 = 1;

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

/// Most compiles one PIMCOMP-NN finding's minimization may run.
const PIMCOMP_MINIMIZE_RUNS: u64 = 400;
/// Most compiles one PUMA finding's minimization may run (a compile takes 10 ms to 1 s;
/// `--minimize-time` is the bound that matters).
const PUMA_MINIMIZE_RUNS: u64 = 5000;

/// `pimdiff hunt`: the engine over the chosen target. `given` holds the flags given on the
/// command line (see [`check_flags`]).
pub fn main(mut args: Args, given: &[String]) -> anyhow::Result<ExitCode> {
    check_flags(args.target, given)?;
    if args.guided && args.target == Target::Puma {
        // Not silently ignored: the PUMA target has no case mutations yet.
        anyhow::bail!(
            "--guided is taken by --target cases and --target pimcomp-nn, not by --target puma"
        );
    }
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
    let mut cfg = HuntConfig {
        seed,
        limit,
        jobs: args.jobs.unwrap_or(0) as usize,
        shard: args.shard,
        minimize: MinimizeConfig {
            time_budget: args.minimize_time,
            max_steps: crate::triage::TRIAGE_RUNS as usize,
        },
        max_unsupported: args.max_unsupported,
        out,
    };
    let control = HuntControl {
        progress: !args.quiet && std::io::stderr().is_terminal(),
        ..HuntControl::default()
    };
    install_signal_handler(&control)?;
    let summary = match args.target {
        Target::Cases => {
            args.compiler.check()?;
            let mut compiler = args.compiler.clone();
            compiler.schedules = compiler.schedules.or(Some(DEFAULT_SCHEDULES));
            let target = TensorTarget::new(&args.generator.config(), compiler.run_config());
            hunt_target(&args, &cfg, target, &control)?
        }
        Target::PimcompNn => {
            cfg.minimize.max_steps = PIMCOMP_MINIMIZE_RUNS as usize;
            let target = pimcomp_target(&args, &cfg.out)?;
            let coverage = target.cases.setup.coverage.clone();
            let summary = hunt_target(&args, &cfg, target, &control)?;
            crate::targets::pimcomp_nn::profile::report();
            if let (Some(dir), Some(c)) = (&args.coverage.coverage_html, &coverage) {
                c.write_html(dir);
            }
            summary
        }
        Target::Puma => {
            cfg.minimize.max_steps = PUMA_MINIMIZE_RUNS as usize;
            let target = puma_target(&args, &cfg.out)?;
            let coverage = target.cases.setup.coverage.clone();
            let summary = run_hunt(&cfg, Arc::new(target), &control);
            if let (Some(dir), Some(c)) = (&args.coverage.coverage_html, &coverage) {
                c.write_html(dir);
            }
            summary
        }
    }
    .with_context(|| format!("hunt in {}", cfg.out.display()));
    crate::compilers::serve::shutdown();
    let summary = summary?;
    print!("{}", render_summary(&summary));
    println!(
        "\nsummary: {}",
        cfg.out.join(crate::engine::SUMMARY_MD).display()
    );
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

/// The hunt of `target`, coverage-guided with `--guided` (its `--corpus` read first: a
/// malformed entry is an error naming it).
fn hunt_target<T: GuidedTarget>(
    args: &Args,
    cfg: &HuntConfig,
    target: T,
    control: &HuntControl,
) -> anyhow::Result<Result<HuntSummary, crate::engine::HuntError>> {
    if !args.guided {
        return Ok(run_hunt(cfg, Arc::new(target), control));
    }
    let corpus = match &args.corpus {
        Some(dir) => load_corpus(&target, dir)?,
        None => Vec::new(),
    };
    let guidance = Guidance {
        corpus,
        fresh_every: args.fresh_every,
    };
    Ok(run_guided_hunt(cfg, Arc::new(target), control, guidance))
}

/// The PIMCOMP-NN target the flags describe.
fn pimcomp_target(args: &Args, out: &Path) -> anyhow::Result<PimcompTarget> {
    let t = &args.pimcomp;
    let mut setup = CompilerSetup::locate(
        t.pimcomp_bin.as_deref(),
        t.compile_timeout,
        t.max_rss_mib.saturating_mul(1 << 20),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    setup.zeroed_memory = t.pimcomp_pages;
    if args.coverage.coverage {
        let vendored = crate::targets::pimcomp_nn::VENDORED;
        setup.coverage = Some(
            crate::coverage::CoverageRun::for_build(&setup.bin, out, &vendored)
                .map_err(|e| anyhow::anyhow!("--coverage: {e}"))?,
        );
    }
    let pipelines = match t.mode {
        PipelineMode::Batch => vec![Pipeline::Batch],
        PipelineMode::Element => vec![Pipeline::Element],
        PipelineMode::Both => vec![Pipeline::Batch, Pipeline::Element],
    };
    let mut net = NetConfig::default();
    let g = &args.generator;
    for (field, v) in [
        (&mut net.max_channels, g.max_channels),
        (&mut net.max_spatial, g.max_spatial),
        (&mut net.max_kernel, g.max_kernel),
        (&mut net.max_blocks, t.max_blocks),
    ] {
        if let Some(v) = v {
            *field = v;
        }
    }
    Ok(PimcompTarget {
        cases: CaseContext {
            net,
            setup,
            pipelines,
        },
    })
}

/// The PUMA target the flags describe; with `--coverage`, the plain tree must be a coverage
/// tree, whose counts go under `out`.
fn puma_target(args: &Args, out: &Path) -> anyhow::Result<PumaTarget> {
    let t = &args.puma;
    let mut setup = PumaSetup::locate(
        t.trees.puma_dir.as_deref(),
        t.trees.puma_sanitize_dir.as_deref(),
        t.puma_timeout,
        t.puma_max_rss_mib.saturating_mul(1 << 20),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    if args.coverage.coverage {
        let vendored = crate::targets::puma::compile::VENDORED;
        setup.coverage = Some(
            crate::coverage::CoverageRun::for_tree(&setup.plain, out, &vendored)
                .map_err(|e| anyhow::anyhow!("--coverage: {e}"))?,
        );
    }
    let mut net = PumaNetConfig::default();
    let g = &args.generator;
    for (field, v) in [
        (&mut net.max_channels, g.max_channels),
        (&mut net.max_image, g.max_spatial),
        (&mut net.max_kernel, g.max_kernel),
    ] {
        if let Some(v) = v {
            *field = u32::try_from(v).unwrap_or(u32::MAX);
        }
    }
    let quirks = match t.puma_quirks {
        QuirksChoice::Compiler => pimdiff_puma::Quirks::COMPILER,
        QuirksChoice::Simulator => pimdiff_puma::Quirks::SIMULATOR,
    };
    Ok(PumaTarget {
        cases: PumaCases {
            setup,
            net,
            check: CheckOptions {
                quirks,
                ..CheckOptions::default()
            },
            sanitize_rate: t.puma_sanitize_rate,
            inject: t.puma_inject,
        },
    })
}

/// The flags each target takes besides the engine's own, by their long names: read from the
/// flag groups' own definitions, so a new flag is placed by the group it is declared in.
fn target_flags(target: Target) -> Vec<String> {
    let longs = |c: clap::Command| -> Vec<String> {
        c.get_arguments()
            .filter_map(|a| a.get_long())
            .map(str::to_string)
            .collect()
    };
    let generator = longs(GeneratorArgs::augment_args(clap::Command::new("g")));
    match target {
        Target::Cases => [
            generator,
            longs(CompilerArgs::augment_args(clap::Command::new("c"))),
        ]
        .concat(),
        Target::PimcompNn | Target::Puma => {
            let shared = ["max-channels", "max-spatial", "max-kernel"];
            let mut v = if target == Target::Puma {
                longs(PumaTargetArgs::augment_args(clap::Command::new("p")))
            } else {
                longs(PimcompTargetArgs::augment_args(clap::Command::new("p")))
            };
            v.extend(longs(CoverageArgs::augment_args(clap::Command::new("v"))));
            v.extend(
                generator
                    .into_iter()
                    .filter(|f| shared.contains(&f.as_str())),
            );
            v
        }
    }
}

/// Refuses a flag that the chosen target does not take, naming the target that does:
/// a flag silently ignored would make a hunt test something else than its user thinks.
/// `given` holds the long names of the flags given on the command line.
pub fn check_flags(target: Target, given: &[String]) -> anyhow::Result<()> {
    let all = [Target::Cases, Target::PimcompNn, Target::Puma];
    let flags: Vec<(Target, Vec<String>)> = all.iter().map(|&t| (t, target_flags(t))).collect();
    let takers = |flag: &String| -> Vec<Target> {
        flags
            .iter()
            .filter(|(_, f)| f.contains(flag))
            .map(|(t, _)| *t)
            .collect()
    };
    for flag in given {
        let takers = takers(flag);
        if takers.is_empty() || takers.contains(&target) {
            continue;
        }
        let takers: Vec<&str> = takers.iter().map(|t| t.name()).collect();
        anyhow::bail!(
            "--{flag} is a flag of --target {}, not of --target {}",
            takers.join(" and --target "),
            target.name()
        );
    }
    Ok(())
}

impl Target {
    /// The name `--target` spells.
    pub fn name(self) -> &'static str {
        match self {
            Target::Cases => "cases",
            Target::PimcompNn => "pimcomp-nn",
            Target::Puma => "puma",
        }
    }
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
