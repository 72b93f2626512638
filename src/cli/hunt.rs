//! `pimdiff hunt`: generate cases from a seed, check them in parallel, minimize and save every
//! unique finding, summarize (see [`crate::hunt`]).
//!
//! Exit 0 when nothing was found, 1 when there are findings, 2 on bad arguments or when the
//! output directory cannot be used. Ctrl-C / SIGTERM stops cleanly: in-flight cases finish,
//! what was found is minimized and saved, the summary is written; a second signal cuts
//! minimization short (findings are then saved unminimized); a third exits at once (only
//! hidden temporary directories can be left, removed by the next hunt).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::cli::repro::{parse_duration_arg, CompilerArgs};
use crate::cli::{exit, EXIT_FINDING, EXIT_OK};
use crate::generate::GenConfig;
use crate::hunt::{render_summary, run_hunt, HuntConfig, HuntControl, Limit, Shard};
use crate::minimize::MinimizeConfig;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The hunt seed: case k of the hunt is generated from a seed derived from (SEED, k).
    #[arg(long)]
    pub seed: u64,
    /// Run the case indices 0..N (this shard's share of them).
    #[arg(
        long,
        value_name = "N",
        required_unless_present = "duration",
        conflicts_with = "duration"
    )]
    pub cases: Option<u64>,
    /// Run cases until this much time has passed: `30s`, `10m`, `1h`, `500ms`. Minimizing
    /// and saving the findings comes after (each minimization within --minimize-time).
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
    /// Time budget of each finding's minimization.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg, default_value = "10s")]
    pub minimize_time: Duration,
    /// No progress bar (it is also hidden when stderr is not a terminal).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub compiler: CompilerArgs,
    #[command(flatten)]
    pub generator: GeneratorArgs,
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

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let limit = match (args.cases, args.duration) {
        (Some(n), _) => Limit::Cases(n),
        (None, Some(d)) => Limit::Duration(d),
        (None, None) => anyhow::bail!("give --cases N or --duration D"),
    };
    let out = args.out.clone().unwrap_or_else(|| {
        if args.shard == Shard::ALL {
            PathBuf::from(format!("hunt-{}", args.seed))
        } else {
            PathBuf::from(format!(
                "hunt-{}-shard{}of{}",
                args.seed, args.shard.index, args.shard.count
            ))
        }
    });
    let cfg = HuntConfig {
        seed: args.seed,
        limit,
        jobs: args.jobs.unwrap_or(0) as usize,
        shard: args.shard,
        generator: args.generator.config(),
        run: args.compiler.run_config(),
        minimize: MinimizeConfig {
            time_budget: args.minimize_time,
            ..MinimizeConfig::default()
        },
        out,
    };
    let control = HuntControl {
        progress: !args.quiet && std::io::stderr().is_terminal(),
        ..HuntControl::default()
    };
    install_signal_handler(&control)?;
    let summary =
        run_hunt(&cfg, &control).with_context(|| format!("hunt in {}", cfg.out.display()))?;
    print!("{}", render_summary(&summary));
    println!(
        "\nsummary: {}",
        cfg.out.join(crate::hunt::SUMMARY_MD).display()
    );
    Ok(exit(if summary.findings.is_empty() {
        EXIT_OK
    } else {
        EXIT_FINDING
    }))
}

/// Ctrl-C / SIGTERM: the first asks the hunt to stop, the second cuts minimization short,
/// the third exits at once (status 130).
fn install_signal_handler(control: &HuntControl) -> anyhow::Result<()> {
    let stop = Arc::clone(&control.stop);
    let abort = Arc::clone(&control.abort_minimization);
    let count = AtomicUsize::new(0);
    ctrlc::set_handler(move || match count.fetch_add(1, Ordering::SeqCst) {
        0 => {
            eprintln!("\nstopping: finishing the cases in flight, then saving what was found (again to cut minimization short)");
            stop.store(true, Ordering::SeqCst);
        }
        1 => {
            eprintln!("\ncutting minimization short; saving findings unminimized");
            abort.store(true, Ordering::SeqCst);
        }
        _ => std::process::exit(130),
    })
    .context("cannot install the Ctrl-C handler")
}
