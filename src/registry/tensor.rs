//! `--target cases` (the default): conv2d/MVM cases through the in-repo compiler, an injected
//! bug or `--compiler-cmd`, checked on the PIMSim interpreter (`pimdiff-target-pimsim`). Its
//! compiler flags are also `repro`'s, `replay`'s and `from-fuzz`'s.

use std::time::Duration;

use pimdiff_compiler::{CompileOptions, Lowering, Reduction};
use pimdiff_engine::{HuntConfig, HuntControl, HuntError, HuntSummary};
use pimdiff_isa::machine::Schedule;
use pimdiff_target_pimsim::check::n_version::LoweringChoice;
use pimdiff_target_pimsim::check::RunConfig;
use pimdiff_target_pimsim::compilers::injected::BugClass;
use pimdiff_target_pimsim::compilers::record::{ExternalCompiler, Protocol};
use pimdiff_target_pimsim::compilers::CompilerUnderTest;
use pimdiff_target_pimsim::generate::GenConfig;
use pimdiff_target_pimsim::TensorTarget;

use super::flags::{
    parse_bug, parse_duration_arg, parse_opcode, parse_positive_duration, parse_schedule, positive,
    ratio,
};
use super::{hunt_maybe_guided, Guided, TargetFlags};

/// PCT schedules each hunt case runs under after the fixed one (`--schedules`): chosen by
/// measurement (`docs/results/throughput.md`) to keep the clean hunt's throughput.
pub const DEFAULT_SCHEDULES: u32 = 1;

/// The hunt of `--target cases` the flags describe.
pub fn hunt(
    flags: &TargetFlags,
    cfg: &HuntConfig,
    control: &HuntControl,
    guided: Option<&Guided>,
) -> anyhow::Result<Result<HuntSummary, HuntError>> {
    flags.compiler.check()?;
    let mut compiler = flags.compiler.clone();
    compiler.schedules = compiler.schedules.or(Some(DEFAULT_SCHEDULES));
    let target = TensorTarget::new(&flags.generator.config(), compiler.run_config());
    if target.run_config().external.is_some() {
        preflight(&target, cfg)?;
    }
    hunt_maybe_guided(cfg, target, control, guided)
}

/// Checks the hunt's first cases (at most `setup::PROBE_CASES`) for a set-up mistake of the
/// external compiler: when every one fails the same way (command not found, a server that does
/// not answer, ...), the hunt stops with the fix before anything is saved (exit 2). The first
/// case that compiles, declines or fails otherwise ends the check: the compiler works.
fn preflight(target: &TensorTarget, cfg: &HuntConfig) -> anyhow::Result<()> {
    use pimdiff_engine::hunt::Target as _;
    use pimdiff_target_pimsim::check::setup::{diagnose, PROBE_CASES};
    let cases = match cfg.limit {
        pimdiff_engine::Limit::Cases(n) => n.div_ceil(cfg.shard.count.max(1)).min(PROBE_CASES),
        pimdiff_engine::Limit::Duration(_) => PROBE_CASES,
    };
    let mut seen = None;
    for i in 0..cases {
        let k = cfg.shard.index + i * cfg.shard.count;
        let case = target.case(pimdiff_engine::hunt::case_seed(cfg.seed, k));
        let result =
            pimdiff_target_pimsim::check::check_case_within(&case.case, &target.run_for(&case));
        match diagnose(&result.outcome) {
            Some(s)
                if seen.as_ref().is_none_or(
                    |f: &pimdiff_target_pimsim::check::setup::Setup| f.mistake == s.mistake,
                ) =>
            {
                seen = Some(s)
            }
            _ => return Ok(()),
        }
    }
    let Some(s) = seen else { return Ok(()) };
    anyhow::bail!(
        "the compiler under test is not set up: the first {cases} case(s) all failed before \
         compiling anything, so the hunt did not start and saved nothing\n  compiler: {}\n  \
         what happened: {}\n  fix: {}",
        target.run_config().describe_compiler(),
        s.what.replace('\n', "\n    "),
        s.fix
    )
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
    /// An environment variable for --compiler-cmd, `NAME=VALUE` (repeatable): added to
    /// pimdiff's own environment and recorded in every finding, so that `repro` runs the
    /// compiler the same way.
    #[arg(long, value_name = "NAME=VALUE", value_parser = parse_env_var, requires = "compiler_cmd")]
    pub compiler_env: Vec<(String, String)>,
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
    /// CPU-time limit of one external compiler run (e.g. `30s`): the user + system time of the
    /// command's whole process group, so a loaded machine does not make a hang. Past it, or
    /// past ten times it of wall time (a command blocked without using CPU), the group is
    /// killed and the case is a `timeout` finding that records both times. Default 60s.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub compiler_timeout: Option<Duration>,
    /// Wall-clock limit of each stage of a case (compile, run, oracle; an external compiler's
    /// stage gets ten times --compiler-timeout on top, its wall-clock backstop); past it the
    /// case is a `timeout` finding and its thread is abandoned. Default 10s.
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
            if pimdiff_target_pimsim::compilers::serve::has_placeholder(command) {
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
        let external = self.external();
        let compiler = if let Some(record) = &external {
            // It runs where pimdiff runs; the directory is recorded for `repro` elsewhere.
            ExternalCompiler {
                workdir: None,
                ..record.clone()
            }
            .compiler()
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
        run.external = external;
        if let Some(choice) = self.lowering {
            run = run.with_lowering(choice, self.inject_into);
        }
        if let Some(s) = self.schedule {
            run.schedule = s;
        }
        run.race_check = !self.no_race_check;
        run.explore = (0..self.schedules.unwrap_or(0))
            .map(|k| pimdiff_target_pimsim::check::concurrency::pct_schedule(0, k))
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

impl CompilerArgs {
    /// The external compiler these flags ask for, with the directory pimdiff runs in.
    pub fn external(&self) -> Option<ExternalCompiler> {
        let command = self.compiler_cmd.clone()?;
        Some(ExternalCompiler {
            protocol: match self.compiler_protocol.unwrap_or_default() {
                CompilerProtocol::Process => Protocol::Process,
                CompilerProtocol::Serve => Protocol::Serve,
            },
            command,
            workdir: std::env::current_dir().ok(),
            env: self.compiler_env.iter().cloned().collect(),
            timeout_ms: self
                .compiler_timeout
                .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        })
    }
}

/// `NAME=VALUE` of `--compiler-env`.
fn parse_env_var(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not NAME=VALUE"))?;
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!(
            "`{name}` is not a variable name (letters, digits and _, not starting with a digit)"
        ));
    }
    Ok((name.to_string(), value.to_string()))
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
