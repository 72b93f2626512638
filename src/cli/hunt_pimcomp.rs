//! `pimdiff hunt --target pimcomp-nn`: the hunt over PIMCOMP-NN itself (see
//! [`crate::targets::pimcomp_nn`]). Exit 0 when nothing was found, 1 with findings, 2 when the
//! binary cannot be found or the output directory cannot be used.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::hunt::{install_signal_handler, seed_and_limit, Args, PipelineMode};
use crate::cli::{exit, EXIT_FINDING, EXIT_OK};
use crate::engine::{HuntControl, Shard};
use crate::targets::pimcomp_nn::case::CaseContext;
use crate::targets::pimcomp_nn::compile::{CompilerSetup, Pipeline};
use crate::targets::pimcomp_nn::files::render_summary;
use crate::targets::pimcomp_nn::network::NetConfig;
use crate::targets::pimcomp_nn::{run_pimcomp_hunt, PimcompHuntConfig};

/// Most compiles one finding's minimization may run.
const MINIMIZE_RUNS: u64 = 400;

pub fn main(mut args: Args) -> anyhow::Result<ExitCode> {
    let (seed, limit) = seed_and_limit(&mut args)?;
    let args = &args;
    let t = &args.pimcomp;
    let setup = CompilerSetup::locate(
        t.pimcomp_bin.as_deref(),
        t.compile_timeout,
        t.max_rss_mib.saturating_mul(1 << 20),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let (pipelines, mode) = match t.mode {
        PipelineMode::Batch => (vec![Pipeline::Batch], "batch"),
        PipelineMode::Element => (vec![Pipeline::Element], "element"),
        PipelineMode::Both => (vec![Pipeline::Batch, Pipeline::Element], "both"),
    };
    let mut net = NetConfig::default();
    if let Some(v) = args.generator.max_channels {
        net.max_channels = v;
    }
    if let Some(v) = args.generator.max_spatial {
        net.max_spatial = v;
    }
    if let Some(v) = args.generator.max_kernel {
        net.max_kernel = v;
    }
    if let Some(v) = t.max_blocks {
        net.max_blocks = v;
    }
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
    let cfg = PimcompHuntConfig {
        limit,
        jobs: args.jobs.unwrap_or(0) as usize,
        shard: args.shard,
        cases: CaseContext {
            seed,
            net,
            setup,
            pipelines,
        },
        mode: mode.to_string(),
        minimize_time: args.minimize_time,
        minimize_runs: MINIMIZE_RUNS,
        out,
    };
    let control = HuntControl {
        progress: !args.quiet && std::io::stderr().is_terminal(),
        ..HuntControl::default()
    };
    install_signal_handler(&control)?;
    let summary = run_pimcomp_hunt(&cfg, &control)
        .with_context(|| format!("hunt in {}", cfg.out.display()))?;
    print!("{}", render_summary(&summary));
    println!(
        "\nsummary: {}",
        cfg.out.join(crate::engine::SUMMARY_MD).display()
    );
    Ok(exit(if summary.findings.is_empty() {
        EXIT_OK
    } else {
        EXIT_FINDING
    }))
}
