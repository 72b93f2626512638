//! `--target puma`: random networks through the PUMA compiler, checked on the PUMA machine
//! (`pimdiff-target-puma`); and `repro` of a PUMA finding.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use pimdiff_engine::finding::Verdict;
use pimdiff_engine::{run_hunt, HuntConfig, HuntControl, HuntError, HuntSummary};
use pimdiff_target_puma::case::CaseContext as PumaCases;
use pimdiff_target_puma::check::CheckOptions;
use pimdiff_target_puma::compile::PumaSetup;
use pimdiff_target_puma::inject::Injection;
use pimdiff_target_puma::{PumaNetConfig, PumaTarget};

use super::flags::{parse_duration_arg, ratio};
use super::{Guided, TargetFlags};

/// Most compiles one PUMA finding's minimization may run (a compile takes 10 ms to 1 s;
/// `--minimize-time` is the bound that matters).
const PUMA_MINIMIZE_RUNS: u64 = 5000;

/// The hunt of `--target puma` the flags describe; with `--coverage-html`, the report is
/// written after it.
pub fn hunt(
    flags: &TargetFlags,
    cfg: &HuntConfig,
    control: &HuntControl,
    guided: Option<&Guided>,
) -> anyhow::Result<Result<HuntSummary, HuntError>> {
    if guided.is_some() {
        // Not silently ignored: the PUMA target has no case mutations yet.
        anyhow::bail!(
            "--guided is taken by --target cases and --target pimcomp-nn, not by --target puma"
        );
    }
    let mut cfg = cfg.clone();
    cfg.minimize.max_steps = PUMA_MINIMIZE_RUNS as usize;
    let target = puma_target(flags, &cfg.out)?;
    let coverage = target.cases.setup.coverage.clone();
    let summary = run_hunt(&cfg, Arc::new(target), control);
    if let (Some(dir), Some(c)) = (&flags.coverage.coverage_html, &coverage) {
        c.write_html(dir);
    }
    Ok(summary)
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
    /// CPU-time limit of one compile (--target puma): user + system time of the driver's
    /// process group, so a loaded machine does not make a hang. Generated networks compile in
    /// well under a second of CPU, the slowest seen in about 20 s (docs/puma-findings.md).
    /// Past it the compile is a `hang: timeout` finding, past ten times it of wall time (a
    /// compile blocked without using CPU) a `hang: blocked` one; both record CPU and wall time.
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

/// The PUMA target the flags describe; with `--coverage`, the plain tree must be a coverage
/// tree, whose counts go under `out`.
fn puma_target(args: &TargetFlags, out: &Path) -> anyhow::Result<PumaTarget> {
    let t = &args.puma;
    let mut setup = PumaSetup::locate(
        t.trees.puma_dir.as_deref(),
        t.trees.puma_sanitize_dir.as_deref(),
        t.puma_timeout,
        t.puma_max_rss_mib.saturating_mul(1 << 20),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    if args.coverage.coverage {
        let vendored = pimdiff_target_puma::compile::VENDORED;
        setup.coverage = Some(
            pimdiff_engine::coverage::CoverageRun::for_tree(&setup.plain, out, &vendored)
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

/// CPU-time limit of a PUMA finding's compile in `repro` (ten times it of wall time: blocked).
const PUMA_REPRO_TIMEOUT: Duration = Duration::from_secs(60);

/// `repro` of a PUMA finding: the PUMA driver runs again on the saved files, in the saved
/// tree or `--puma-dir` / `--puma-sanitize-dir`: [`Verdict::Findings`] while it still shows the
/// saved signature, [`Verdict::Clean`] once it does not.
pub fn repro(dir: &Path, trees: &PumaTreeArgs) -> anyhow::Result<Verdict> {
    use pimdiff_target_puma::repro::repro;
    let r = repro(
        dir,
        trees.puma_dir.as_deref(),
        trees.puma_sanitize_dir.as_deref(),
        PUMA_REPRO_TIMEOUT,
    )
    .with_context(|| format!("cannot replay the PUMA finding {}", dir.display()))?;
    println!("finding: {}", dir.display());
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
        Ok(Verdict::Findings)
    } else {
        println!("does not reproduce");
        Ok(Verdict::Clean)
    }
}
