//! How cases are checked: the compiler under test, the interpreter's schedule and budget, and
//! the watchdog's limits.

use std::time::Duration;

use pimdiff_isa::machine::Schedule;
use pimdiff_isa::Opcode;

use pimdiff_compiler::{CompileOptions, Lowering};

use super::n_version::LoweringChoice;
use crate::compilers::CompilerUnderTest;
use pimdiff_engine::hunt::watchdog::Stage;

/// How cases are checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunConfig {
    pub compiler: CompilerUnderTest,
    /// The second version of an N-version check (`--lowering both`: the pixel-wise lowering,
    /// `compiler` being the channel-wise one); `None` for a single compiler. See
    /// [`super::n_version`].
    pub second: Option<CompilerUnderTest>,
    /// Core interleaving of the interpreter (fixed by default; a seeded random order exposes
    /// races through global memory).
    pub schedule: Schedule,
    /// Report races (two cores touching the same global bytes, unordered): `race` findings.
    /// On by default; `--no-race-check` turns it off.
    pub race_check: bool,
    /// Report reads of bytes nothing wrote: `uninitialized-read` findings. On by default.
    pub uninit_check: bool,
    /// More schedules each program runs under after `schedule`; an output or ending that
    /// differs is a `schedule-dependent` finding. Empty by default (hunts add PCT schedules,
    /// `--schedules K`).
    pub explore: Vec<Schedule>,
    /// Instructions executed, over all cores, before a run stops as `out-of-steps`.
    pub step_budget: u64,
    /// Wall-clock limit of one external compiler run; past it the command is killed and the
    /// case is a `timeout` finding.
    pub external_timeout: Duration,
    /// Wall-clock limit of each stage of one check (compile, run, oracle) for the watchdog
    /// ([`pimdiff_engine::hunt::watchdog`]); an external compiler's stage gets `external_timeout` on top.
    pub case_timeout: Duration,
    /// Test seam: the interpreter panics when the program holds an instruction with this
    /// opcode, as an interpreter bug would (proves that a hunt reports `interpreter-panic`).
    /// `None` (the default) for the real interpreter.
    pub interpreter_panic_on: Option<Opcode>,
    /// How the external compiler of `compiler` was asked for (command, protocol, directory,
    /// environment), recorded in each finding so that `repro` and `replay` compile with it;
    /// `None` for the in-repo compiler, or when nobody recorded it.
    pub external: Option<crate::compilers::record::ExternalCompiler>,
}

impl RunConfig {
    /// 2^26 instructions: programs are straight-line, and a default generated case compiles
    /// to a few hundred; even the largest cases the limits allow stay far below.
    pub const DEFAULT_STEP_BUDGET: u64 = 1 << 26;
    /// 60 s: generous for any real compiler on a small case, short enough for a hunt.
    pub const DEFAULT_EXTERNAL_TIMEOUT: Duration = Duration::from_secs(60);
    /// 10 s: a default generated case compiles and runs in well under a millisecond, and the
    /// largest cases the limits allow in seconds; ten seconds of one stage is a hang.
    pub const DEFAULT_CASE_TIMEOUT: Duration = Duration::from_secs(10);

    /// The compiler of version `i` of an N-version check (0: `compiler`, 1: `second`).
    pub fn version(&self, i: usize) -> &CompilerUnderTest {
        match (i, &self.second) {
            (1, Some(second)) => second,
            _ => &self.compiler,
        }
    }

    /// `CompilerUnderTest::describe` of the compiler, or of both versions
    /// (`channel: ... | pixel: ...`).
    pub fn describe_compiler(&self) -> String {
        match &self.second {
            None => self.compiler.describe(),
            Some(second) => format!(
                "{}: {} | {}: {}",
                self.compiler.version_name(),
                self.compiler.describe(),
                second.version_name(),
                second.describe()
            ),
        }
    }

    /// Which lowering(s) this configuration compiles with (`None`: an external compiler).
    pub fn lowering_choice(&self) -> Option<LoweringChoice> {
        if self.second.is_some() {
            return Some(LoweringChoice::Both);
        }
        self.compiler.lowering().map(LoweringChoice::from)
    }

    /// This configuration with the in-repo compiler switched to `choice` (an external
    /// compiler is left as it is). For `both`, the channel-wise version comes first; an
    /// injected bug goes into `inject_into` (default: the lowering it was in) and the other
    /// version is the correct compiler with the same options.
    pub fn with_lowering(
        &self,
        choice: LoweringChoice,
        inject_into: Option<Lowering>,
    ) -> RunConfig {
        let with = |c: &CompilerUnderTest, l: Lowering| -> CompilerUnderTest {
            match c {
                CompilerUnderTest::InRepo(o) => {
                    CompilerUnderTest::InRepo(CompileOptions { lowering: l, ..*o })
                }
                CompilerUnderTest::Mutated(bug, _) => CompilerUnderTest::Mutated(*bug, l),
                other => other.clone(),
            }
        };
        let mut run = self.clone();
        let base = self.compiler.clone();
        if base.is_external() {
            return run;
        }
        run.second = None;
        match choice.single() {
            Some(l) => run.compiler = with(&base, l),
            None => {
                let clean = match &base {
                    CompilerUnderTest::Mutated(..) => {
                        CompilerUnderTest::InRepo(CompileOptions::default())
                    }
                    other => other.clone(),
                };
                let buggy = match &base {
                    CompilerUnderTest::Mutated(_, l) => Some(inject_into.unwrap_or(*l)),
                    _ => None,
                };
                let version = |l: Lowering| {
                    if buggy == Some(l) {
                        with(&base, l)
                    } else {
                        with(&clean, l)
                    }
                };
                run.compiler = version(Lowering::Channel);
                run.second = Some(version(Lowering::Pixel));
            }
        }
        run
    }

    /// The default configuration with another compiler.
    pub fn with_compiler(compiler: CompilerUnderTest) -> RunConfig {
        RunConfig {
            compiler,
            ..RunConfig::default()
        }
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            compiler: CompilerUnderTest::default(),
            second: None,
            schedule: Schedule::Fixed,
            race_check: true,
            uninit_check: true,
            explore: Vec::new(),
            step_budget: Self::DEFAULT_STEP_BUDGET,
            external_timeout: Self::DEFAULT_EXTERNAL_TIMEOUT,
            case_timeout: Self::DEFAULT_CASE_TIMEOUT,
            interpreter_panic_on: None,
            external: None,
        }
    }
}

/// How long `stage` may run under `cfg`: the case timeout, plus the external compiler's own
/// wall-clock backstop for its stage (its limit is CPU time; the process watch kills the
/// command first and reports the timeout itself, with both times).
pub fn stage_limit(cfg: &RunConfig, stage: Stage) -> Duration {
    match stage {
        Stage::Compile if cfg.compiler.is_external() => cfg.case_timeout.saturating_add(
            cfg.external_timeout
                .saturating_mul(pimdiff_engine::process::WALL_BACKSTOP_FACTOR),
        ),
        _ => cfg.case_timeout,
    }
}
