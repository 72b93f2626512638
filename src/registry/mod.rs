//! The compilers under test `pimdiff` knows, one module each: its `--target` name, its flag
//! group, and how its crate's `Target` is built from those flags. Adding a target is its crate
//! plus one registration here: a module, a [`TargetName`] variant, its flag group in
//! [`TargetFlags`] and one arm of [`TargetFlags::hunt`]. A flag of one target is refused with
//! any other ([`check_flags`]), read from the groups' own definitions.

pub mod cim_mlc;
pub mod flags;
pub mod pimcomp;
pub mod puma;
pub mod tensor;

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args as _;
use pimdiff_engine::hunt::{load_corpus, run_guided_hunt, Guidance, GuidedTarget};
use pimdiff_engine::{run_hunt, HuntConfig, HuntControl, HuntError, HuntSummary};

/// What the hunt generates and which compiler it runs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TargetName {
    /// Conv2d/MVM cases through --compiler (the in-repo compiler by default).
    #[default]
    Cases,
    /// Random networks through the real PIMCOMP-NN binary, checked with `pimdiff pimcomp`.
    PimcompNn,
    /// Random networks through the PUMA compiler (`puma-driver`), checked on the PUMA machine.
    Puma,
    /// Random ONNX networks through CIM-MLC, its meta-operator flows run on the CIM-MLC
    /// machine at every granularity.
    CimMlc,
}

/// The flags that choose and describe the compiler under test: `--target` and each target's
/// own group (the groups' flags are refused with another target: [`check_flags`]).
#[derive(clap::Args, Debug)]
pub struct TargetFlags {
    /// What to hunt: `cases` (conv2d/MVM through the in-repo compiler or --compiler-cmd),
    /// `pimcomp-nn` (random networks through the real PIMCOMP-NN), `puma` (random networks
    /// through the PUMA compiler) or `cim-mlc` (random ONNX networks through CIM-MLC).
    #[arg(long, value_enum, default_value = "cases")]
    pub target: TargetName,
    #[command(flatten)]
    pub compiler: tensor::CompilerArgs,
    #[command(flatten)]
    pub generator: tensor::GeneratorArgs,
    #[command(flatten)]
    pub pimcomp: pimcomp::PimcompTargetArgs,
    #[command(flatten)]
    pub puma: puma::PumaTargetArgs,
    #[command(flatten)]
    pub cim_mlc: cim_mlc::CimMlcTargetArgs,
    #[command(flatten)]
    pub coverage: CoverageArgs,
}

/// A `--guided` hunt's corpus to start from and its share of fresh cases.
#[derive(Clone, Debug)]
pub struct Guided {
    pub corpus: Option<PathBuf>,
    pub fresh_every: u64,
}

impl TargetFlags {
    /// The hunt of the chosen target: `Err` when its flags do not describe one (a missing
    /// build, say), else the engine's result.
    pub fn hunt(
        &self,
        cfg: &HuntConfig,
        control: &HuntControl,
        guided: Option<&Guided>,
    ) -> anyhow::Result<Result<HuntSummary, HuntError>> {
        match self.target {
            TargetName::Cases => tensor::hunt(self, cfg, control, guided),
            TargetName::PimcompNn => pimcomp::hunt(self, cfg, control, guided),
            TargetName::Puma => puma::hunt(self, cfg, control, guided),
            TargetName::CimMlc => cim_mlc::hunt(self, cfg, control, guided),
        }
    }
}

/// The hunt of `target`, coverage-guided with `--guided` (its `--corpus` read first: a
/// malformed entry is an error naming it).
fn hunt_maybe_guided<T: GuidedTarget>(
    cfg: &HuntConfig,
    target: T,
    control: &HuntControl,
    guided: Option<&Guided>,
) -> anyhow::Result<Result<HuntSummary, HuntError>> {
    let Some(guided) = guided else {
        return Ok(run_hunt(cfg, Arc::new(target), control));
    };
    let corpus = match &guided.corpus {
        Some(dir) => load_corpus(&target, dir)?,
        None => Vec::new(),
    };
    let guidance = Guidance {
        corpus,
        fresh_every: guided.fresh_every,
    };
    Ok(run_guided_hunt(cfg, Arc::new(target), control, guidance))
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

/// The flags each target takes besides the engine's own, by their long names: read from the
/// flag groups' own definitions, so a new flag is placed by the group it is declared in.
fn target_flags(target: TargetName) -> Vec<String> {
    let longs = |c: clap::Command| -> Vec<String> {
        c.get_arguments()
            .filter_map(|a| a.get_long())
            .map(str::to_string)
            .collect()
    };
    let generator = longs(tensor::GeneratorArgs::augment_args(clap::Command::new("g")));
    match target {
        TargetName::Cases => [
            generator,
            longs(tensor::CompilerArgs::augment_args(clap::Command::new("c"))),
        ]
        .concat(),
        TargetName::PimcompNn | TargetName::Puma | TargetName::CimMlc => {
            let shared = ["max-channels", "max-spatial", "max-kernel"];
            let mut v = match target {
                TargetName::Puma => {
                    longs(puma::PumaTargetArgs::augment_args(clap::Command::new("p")))
                }
                TargetName::CimMlc => longs(cim_mlc::CimMlcTargetArgs::augment_args(
                    clap::Command::new("p"),
                )),
                _ => longs(pimcomp::PimcompTargetArgs::augment_args(
                    clap::Command::new("p"),
                )),
            };
            if target != TargetName::CimMlc {
                v.extend(longs(CoverageArgs::augment_args(clap::Command::new("v"))));
            }
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
pub fn check_flags(target: TargetName, given: &[String]) -> anyhow::Result<()> {
    let all = [
        TargetName::Cases,
        TargetName::PimcompNn,
        TargetName::Puma,
        TargetName::CimMlc,
    ];
    let flags: Vec<(TargetName, Vec<String>)> = all.iter().map(|&t| (t, target_flags(t))).collect();
    let takers = |flag: &String| -> Vec<TargetName> {
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

impl TargetName {
    /// The name `--target` spells.
    pub fn name(self) -> &'static str {
        match self {
            TargetName::Cases => "cases",
            TargetName::PimcompNn => "pimcomp-nn",
            TargetName::Puma => "puma",
            TargetName::CimMlc => "cim-mlc",
        }
    }
}
