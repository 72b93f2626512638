//! `--target cim-mlc`: random ONNX networks through CIM-MLC, its meta-operator flows run on
//! the CIM-MLC machine at every granularity (`pimdiff-target-cim-mlc`); and `repro` of a
//! CIM-MLC finding.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use pimdiff_engine::finding::Verdict;
use pimdiff_engine::{run_hunt, HuntConfig, HuntControl, HuntError, HuntSummary};
use pimdiff_target_cim_mlc::arch::Api;
use pimdiff_target_cim_mlc::case::CaseContext;
use pimdiff_target_cim_mlc::driver::Protocol;
use pimdiff_target_cim_mlc::generate::NetConfig;
use pimdiff_target_cim_mlc::tree::Tree;
use pimdiff_target_cim_mlc::CimMlcTarget;

use super::flags::parse_duration_arg;
use super::{Guided, TargetFlags};

/// Most compiles one CIM-MLC finding's minimization may run (a served compile takes 10 to
/// 100 ms; `--minimize-time` is the bound that matters).
const CIM_MLC_MINIMIZE_RUNS: u64 = 3000;

/// The CIM-MLC tree (`scripts/build-cim-mlc.sh`), for `hunt --target cim-mlc` and `repro`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CimMlcTreeArgs {
    /// The CIM-MLC tree of scripts/build-cim-mlc.sh (default: $CIM_MLC_DIR; the script prints
    /// it on its last line).
    #[arg(long, value_name = "DIR")]
    pub cim_mlc_dir: Option<PathBuf>,
}

/// The API levels `--cim-mlc-api` takes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiChoice {
    Core,
    Crossbar,
    Wordline,
}

/// How CIM-MLC's driver is run.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolChoice {
    Serve,
    Process,
}

/// Flags of `--target cim-mlc`.
#[derive(clap::Args, Debug, Clone)]
pub struct CimMlcTargetArgs {
    #[command(flatten)]
    pub tree: CimMlcTreeArgs,
    /// CPU time one CIM-MLC compile may use (--target cim-mlc): its driver's whole process group;
    /// ten times it by the wall clock ends a compile that blocks. Either is a `hang` finding.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg, default_value = "60s")]
    pub cim_mlc_timeout: Duration,
    /// Only architectures of this API level (--target cim-mlc; default: all three drawn).
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub cim_mlc_api: Option<ApiChoice>,
    /// How CIM-MLC's driver runs: `serve` (kept running, one request per case) or `process`
    /// (a Python start and torch's import per case, for comparison) (--target cim-mlc).
    #[arg(long, value_enum, default_value = "serve")]
    pub cim_mlc_protocol: ProtocolChoice,
    /// Largest number of layers of a generated network (--target cim-mlc).
    #[arg(long, value_name = "N")]
    pub max_nodes: Option<usize>,
}

/// The hunt of `--target cim-mlc` the flags describe.
pub fn hunt(
    flags: &TargetFlags,
    cfg: &HuntConfig,
    control: &HuntControl,
    guided: Option<&Guided>,
) -> anyhow::Result<Result<HuntSummary, HuntError>> {
    if guided.is_some() {
        anyhow::bail!(
            "--guided is taken by --target cases and --target pimcomp-nn, not by --target cim-mlc"
        );
    }
    let mut cfg = cfg.clone();
    cfg.minimize.max_steps = CIM_MLC_MINIMIZE_RUNS as usize;
    let target = Arc::new(cim_mlc_target(flags)?);
    let summary = run_hunt(&cfg, Arc::clone(&target), control);
    target.cases.driver.shutdown();
    Ok(summary)
}

/// The CIM-MLC target the flags describe; the tree is checked before any case runs.
fn cim_mlc_target(args: &TargetFlags) -> anyhow::Result<CimMlcTarget> {
    let t = &args.cim_mlc;
    let tree = Tree::locate(t.tree.cim_mlc_dir.as_deref())?;
    let mut net = NetConfig::default();
    let g = &args.generator;
    for (field, v) in [
        (&mut net.max_channels, g.max_channels),
        (&mut net.max_spatial, g.max_spatial),
        (&mut net.max_kernel, g.max_kernel),
        (&mut net.max_nodes, t.max_nodes),
    ] {
        if let Some(v) = v {
            *field = v;
        }
    }
    net.api = t.cim_mlc_api.map(|a| match a {
        ApiChoice::Core => Api::Core,
        ApiChoice::Crossbar => Api::Crossbar,
        ApiChoice::Wordline => Api::Wordline,
    });
    let protocol = match t.cim_mlc_protocol {
        ProtocolChoice::Serve => Protocol::Serve,
        ProtocolChoice::Process => Protocol::Process,
    };
    Ok(CimMlcTarget {
        cases: CaseContext::new(net, tree, t.cim_mlc_timeout, protocol),
    })
}

/// Timeout of a CIM-MLC finding's compile in `repro`.
const REPRO_TIMEOUT: Duration = Duration::from_secs(120);

/// `repro` of a CIM-MLC finding: compiled again and checked; [`Verdict::Findings`] while it
/// still shows the saved signature, [`Verdict::Clean`] once it does not.
pub fn repro(dir: &Path, tree: &CimMlcTreeArgs) -> anyhow::Result<Verdict> {
    let r = pimdiff_target_cim_mlc::repro::repro(dir, tree.cim_mlc_dir.as_deref(), REPRO_TIMEOUT)
        .with_context(|| format!("cannot replay the CIM-MLC finding {}", dir.display()))?;
    println!("finding: {}", dir.display());
    println!("saved:   {}", r.saved);
    println!("tree:    {}", r.tree.display());
    for o in &r.run.outcomes {
        match &o.signature {
            Some(s) => println!("now:     {s}: {}", o.detail),
            None => println!("now:     {}: {}", o.kind, o.detail),
        }
    }
    if r.reproduces {
        println!("reproduces");
        Ok(Verdict::Findings)
    } else {
        println!("does not reproduce");
        Ok(Verdict::Clean)
    }
}
