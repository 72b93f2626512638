//! The compilers under test: what turns a case into a [`Bundle`].
//!
//! Four kinds, one enum ([`CompilerUnderTest`]): the in-repo channel-wise compiler
//! ([`in_repo`]), any external command that follows the bundle protocol, run once per case
//! ([`external`]) or kept running and sent one request per case ([`serve`]), and the
//! in-repo compiler with a deliberately injected miscompilation ([`mutated`]), which proves that
//! the loop finds bugs. They report failure in one vocabulary, [`CompileFailure`], which the
//! checker ([`crate::check`]) turns into outcomes; this module knows nothing of outcomes,
//! interpreters or oracles.

pub mod decline;
pub mod external;
pub mod in_repo;
pub mod injected;
pub mod races;
pub mod record;
pub mod serve;

use std::time::Duration;

use pimdiff_engine::process::Overrun;

use pimdiff_compiler::{CompileOptions, Lowering};
use pimdiff_isa::bundle::Bundle;
use pimdiff_oracle::Case;

pub use self::decline::{Claim, Resource};
use self::injected::BugClass;

/// Where the case and bundle directories handed to an external compiler are made: the engine's
/// scratch directory (`/dev/shm` when writable; see [`pimdiff_engine::process::scratch_dir`]).
pub use pimdiff_engine::process::scratch_dir;

/// Writes the case an external compiler reads into `dir` (an empty directory), without its
/// expected output (the compiler must not see the answer). Plain writes, no sync and no atomic
/// rename: the directory is scratch that lives for one compile and is never read after a
/// crash, and the syncs of an atomic write were a tenth of a served case's time.
fn write_scratch_case(case: &Case, dir: &std::path::Path) -> Result<(), String> {
    let mut case = case.clone();
    case.expected = None;
    pimdiff_oracle::io::write_case_files(&case, dir).map_err(|e| e.to_string())
}

/// Which compiler produces the bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompilerUnderTest {
    /// The in-repo channel-wise compiler with these options.
    InRepo(CompileOptions),
    /// Any command that reads a case directory and writes a bundle directory; `{case}` and
    /// `{out}` are replaced by the two paths (see [`external`] for the exact rules).
    External { command: String },
    /// A command that speaks the persistent protocol (`--compiler-protocol serve`): started
    /// once per worker, one request line per case (see [`serve`]). No placeholders.
    Served { command: String },
    /// The in-repo compiler (default options, this lowering) with a deliberately injected
    /// miscompilation (see [`mutated`]): for proving that the loop finds bugs, and as a sanity
    /// check of a setup. A case without a site for the bug compiles correctly.
    Mutated(BugClass, Lowering),
}

impl CompilerUnderTest {
    /// Which stage and function of the in-repo compiler emitted each instruction of `case`'s
    /// program, for the in-repo compiler and its injected-bug variants (for an injected bug:
    /// of the program before the bug was injected); `None` for an external compiler or a
    /// case the compiler declines.
    pub fn provenance(&self, case: &Case) -> Option<pimdiff_compiler::Provenance> {
        let options = match self {
            CompilerUnderTest::InRepo(options) => *options,
            CompilerUnderTest::Mutated(bug, lowering) => injected::options_for(*bug, *lowering),
            CompilerUnderTest::External { .. } | CompilerUnderTest::Served { .. } => return None,
        };
        std::panic::catch_unwind(|| pimdiff_compiler::compile_with_provenance(case, &options))
            .ok()?
            .ok()
            .map(|(_, provenance)| provenance)
    }
}

impl Default for CompilerUnderTest {
    fn default() -> Self {
        CompilerUnderTest::InRepo(CompileOptions::default())
    }
}

/// Why a compiler produced no bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompileFailure {
    /// The compiler declined the case, with its reason and, when the reason states them, its
    /// numbers (not a finding by itself; a claim the checker refutes is).
    Unsupported {
        reason: String,
        claim: Option<Claim>,
    },
    /// The compiler failed on a case it did not decline, panicked, or wrote a bundle that
    /// cannot be read: a finding.
    Failed { message: String },
    /// An external compiler still ran after its time limit (`limit` of CPU time, with a
    /// wall-clock backstop) and was killed: a hang of the compiler under test, a finding.
    /// `overrun` says which limit and records both times.
    TimedOut {
        limit: Duration,
        overrun: Option<Overrun>,
    },
    /// A compile server ([`serve`]) ended before answering (a signal, an exit, its memory
    /// limit): a crash of the compiler under test, with its status and standard error.
    Died { message: String },
    /// The in-process compiler panicked: a crash, with the message and where it happened.
    Panicked {
        message: String,
        location: Option<String>,
    },
    /// The tooling around the compiler failed (a temporary directory, starting `sh`):
    /// counted, never reported as a bug of the compiler.
    Poisoned { reason: String },
}

impl CompilerUnderTest {
    /// Compiles `case`; `external_timeout` bounds an external command.
    pub fn compile(
        &self,
        case: &Case,
        external_timeout: Duration,
    ) -> Result<Bundle, CompileFailure> {
        match self {
            CompilerUnderTest::InRepo(options) => in_repo::compile(case, options),
            CompilerUnderTest::Mutated(bug, lowering) => {
                injected::compile_mutated(*bug, *lowering, case)
            }
            CompilerUnderTest::External { command } => {
                external::compile_external(case, command, external_timeout)
            }
            CompilerUnderTest::Served { command } => {
                serve::compile_served(case, command, external_timeout)
            }
        }
    }

    /// A stable description, recorded in findings so that `repro` can say when the compiler
    /// differs: e.g. `in-repo pimdiff-compiler 0.1.0 (skip_padding, weight_skipping)`,
    /// `external: mycc {case} {out}`, `external (serve protocol): mycc --serve`, `in-repo pimdiff-compiler 0.1.0 + injected bug missing-bias`.
    pub fn describe(&self) -> String {
        match self {
            CompilerUnderTest::InRepo(o) => in_repo::describe(o),
            CompilerUnderTest::External { command } => format!("external: {command}"),
            CompilerUnderTest::Served { command } => {
                format!("external (serve protocol): {command}")
            }
            CompilerUnderTest::Mutated(bug, lowering) => format!(
                "{} + injected bug {}",
                in_repo::describe(&CompileOptions {
                    lowering: *lowering,
                    ..CompileOptions::default()
                }),
                bug.name()
            ),
        }
    }

    /// The options of the channel-wise lowering whose needs a decline of this compiler is held
    /// against (`check`'s capacity model): the in-repo compiler's own options, the defaults
    /// for an injected bug; `None` for an external compiler, whose lowering is its own (its
    /// claims are checked for consistency and against the architecture only).
    pub fn capacity_model(&self) -> Option<CompileOptions> {
        match self {
            CompilerUnderTest::InRepo(o) => Some(*o),
            CompilerUnderTest::Mutated(_, lowering) => Some(CompileOptions {
                lowering: *lowering,
                ..CompileOptions::default()
            }),
            CompilerUnderTest::External { .. } | CompilerUnderTest::Served { .. } => None,
        }
    }

    /// The in-repo lowering this compiler uses (`None` for an external compiler): the name an
    /// N-version check ([`crate::check::n_version`]) gives its result.
    pub fn lowering(&self) -> Option<Lowering> {
        match self {
            CompilerUnderTest::InRepo(o) => Some(o.lowering),
            CompilerUnderTest::Mutated(_, lowering) => Some(*lowering),
            CompilerUnderTest::External { .. } | CompilerUnderTest::Served { .. } => None,
        }
    }

    /// A short name for this compiler among the versions of an N-version check: the
    /// lowering's name (`channel`, `pixel`), or `external`.
    pub fn version_name(&self) -> &'static str {
        self.lowering().map_or("external", Lowering::name)
    }

    /// Whether the compiler runs as a separate process (its time is bounded by its own
    /// timeout, on top of the per-case watchdog's).
    pub fn is_external(&self) -> bool {
        matches!(
            self,
            CompilerUnderTest::External { .. } | CompilerUnderTest::Served { .. }
        )
    }
}
