//! `--target pimcomp-nn`: random networks through the real PIMCOMP-NN binary
//! (`pimdiff-target-pimcomp`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use pimdiff_engine::{HuntConfig, HuntControl, HuntError, HuntSummary};
use pimdiff_target_pimcomp::case::CaseContext;
use pimdiff_target_pimcomp::compile::{CompilerSetup, Pipeline, ZeroedMemory};
use pimdiff_target_pimcomp::network::NetConfig;
use pimdiff_target_pimcomp::PimcompTarget;

use super::flags::parse_duration_arg;
use super::{hunt_maybe_guided, Guided, TargetFlags};

/// Most compiles one PIMCOMP-NN finding's minimization may run.
const PIMCOMP_MINIMIZE_RUNS: u64 = 400;

/// The hunt of `--target pimcomp-nn` the flags describe; with `--coverage-html`, the report
/// is written after it.
pub fn hunt(
    flags: &TargetFlags,
    cfg: &HuntConfig,
    control: &HuntControl,
    guided: Option<&Guided>,
) -> anyhow::Result<Result<HuntSummary, HuntError>> {
    let mut cfg = cfg.clone();
    cfg.minimize.max_steps = PIMCOMP_MINIMIZE_RUNS as usize;
    let target = pimcomp_target(flags, &cfg.out)?;
    let coverage = target.cases.setup.coverage.clone();
    let summary = hunt_maybe_guided(&cfg, target, control, guided)?;
    pimdiff_target_pimcomp::profile::report();
    if let (Some(dir), Some(c)) = (&flags.coverage.coverage_html, &coverage) {
        c.write_html(dir);
    }
    Ok(summary)
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
    /// CPU-time limit of one PIMCOMP-NN compile (user + system time of its process group, so a
    /// loaded machine does not make a hang); past it, or past ten times it of wall time (a
    /// compile blocked without using CPU), the compile is killed: a `hang` finding recording
    /// both times (`…/timeout`, or `…/blocked` for the wall clock).
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

/// The PIMCOMP-NN target the flags describe.
fn pimcomp_target(args: &TargetFlags, out: &Path) -> anyhow::Result<PimcompTarget> {
    let t = &args.pimcomp;
    let mut setup = CompilerSetup::locate(
        t.pimcomp_bin.as_deref(),
        t.compile_timeout,
        t.max_rss_mib.saturating_mul(1 << 20),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    setup.zeroed_memory = t.pimcomp_pages;
    if args.coverage.coverage {
        let vendored = pimdiff_target_pimcomp::VENDORED;
        setup.coverage = Some(
            pimdiff_engine::coverage::CoverageRun::for_build(&setup.bin, out, &vendored)
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
