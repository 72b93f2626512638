//! Running a third-party program (a compiler under test) the way a fuzzer runs its target:
//! in a process group of its own, in a fresh temporary working directory, under a CPU-time
//! limit (with a wall-clock backstop) and a resident-memory limit that kill the whole group,
//! with its output captured up to a bound and its nondeterminism optionally pinned. Every target's compiler runs through
//! [`Invocation::run`] (or, kept running and answering one line per request,
//! [`Invocation::serve`]); [`kill_all`] ends every program still running.
//!
//! Why it is built the way it is (figures from `cargo bench --bench process`):
//!
//! * **No `pre_exec` hook.** A hook makes std `fork()` instead of using posix_spawn, and a
//!   fork copies the harness's page tables: `/bin/true` spawned and waited for in 0.8 ms with
//!   posix_spawn, 50 ms with a hook once the harness holds 1 GiB (`--ballast 1024`). The group comes from
//!   posix_spawn's own `setpgid` (`process_group(0)`); address-space randomization is turned
//!   off on the spawning thread around the spawn (`pin`). For the same reason a bare program
//!   name is looked up here when the pinned environment changes `PATH`.
//! * **Deadline without polling.** The waiting thread sleeps in one `poll` on a pidfd of the
//!   leader (readable when it exits) and on both output pipes, with the deadline as its timeout.
//!   No thread is started and no `kill` program spawned.
//! * **SIGKILL to the group, no SIGTERM first.** A grace period would only let the program
//!   tidy files that are thrown away with its working directory, while a program that ignores
//!   SIGTERM (or a child of it that does) would use all of it. Every process left in the group
//!   is killed when the leader exits too, so nothing of a run outlives it; after a kill the run
//!   waits (on pidfds, not by polling) until no process of the group is left running.
//! * **Time is CPU time of the group, with a wall-clock backstop.** A compile's limit
//!   ([`Limits::cpu_time`]) is the CPU time (user + system) of every process in the group,
//!   summed from `/proc` by the same waiting thread (no sooner than the group could have used
//!   it: see `watch::CpuWatch`). Why not wall time: on a machine shared by a dozen builds a
//!   20 s compile takes minutes of wall time, and was filed as a hang. A program that blocks
//!   without using CPU (waiting on a pipe, a lock, a sleep) never reaches a CPU limit, so the
//!   wall clock still ends it at [`WALL_BACKSTOP_FACTOR`] times the limit. A run that ends at
//!   either is [`Status::TimedOut`], which records both times and which limit it was.
//! * **Memory is resident memory of the group, sampled.** The waiting thread wakes every
//!   [`Limits::rss_interval`] to sum the resident set of every process in the group from
//!   `/proc` (like libFuzzer's `-rss_limit_mb`); over the limit, the group is killed and the run
//!   ends as [`Status::MemoryLimit`]. An address-space limit (`RLIMIT_AS`) is no substitute:
//!   AddressSanitizer reserves terabytes of shadow memory at start-up, so a sanitizer build
//!   under any useful `RLIMIT_AS` cannot start, and what a program reserves says nothing of
//!   what it touches (PIMCOMP-NN reserves far more than it uses).
//!
//! Linux only: pidfds (Linux 5.3) and `/proc`.

mod capture;
mod group;
mod pin;
pub mod pool;
mod server;
mod watch;

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use capture::Captured;
pub use group::{kill_all, kill_scope, scope, set_scope, Scope};
pub use pin::{Environment, Pinning};
pub use pool::{scratch_dir, Dirs, PoolError, Recipe, Scratch, ServerPool};
pub use server::{Answer, Server};

/// How many times its CPU-time limit a program may run by the wall clock ([`Limits::cpu_time`]):
/// ten, so that a compile on a machine loaded ten times over still ends by its CPU time, and a
/// program blocked without using CPU still ends.
pub const WALL_BACKSTOP_FACTOR: u32 = 10;

/// How long a program may run and how much it may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// CPU time (user + system) of the whole group, from spawn; `None`: not limited, the
    /// wall clock alone ends the run.
    pub cpu: Option<Duration>,
    /// Wall-clock time from spawn to the leader's exit: the limit itself without `cpu`, the
    /// backstop for a program that blocks without using CPU with it.
    pub timeout: Duration,
    /// Resident memory of the whole group, in bytes; `None`: not watched.
    pub rss_bytes: Option<u64>,
    /// How often resident memory is sampled when it is watched.
    pub rss_interval: Duration,
    /// Bytes kept of each of standard output and standard error (the last ones).
    pub output_bytes: usize,
}

impl Limits {
    /// `timeout` of wall-clock time (CPU time not limited), memory not watched, 64 KiB of
    /// each stream, sampling every 50 ms.
    pub fn new(timeout: Duration) -> Limits {
        Limits {
            cpu: None,
            timeout,
            rss_bytes: None,
            rss_interval: Duration::from_millis(50),
            output_bytes: 64 << 10,
        }
    }

    /// `cpu` of CPU time of the group, with a wall-clock backstop of
    /// [`WALL_BACKSTOP_FACTOR`] times it; otherwise as [`Limits::new`]. Every compiler under
    /// test runs under this (see the module docs).
    pub fn cpu_time(cpu: Duration) -> Limits {
        Limits {
            cpu: Some(cpu),
            ..Limits::new(cpu.saturating_mul(WALL_BACKSTOP_FACTOR))
        }
    }
}

/// Which limit ended a run that did not finish in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Clock {
    /// The group's CPU time reached [`Limits::cpu`]: the program computed too long.
    Cpu,
    /// The wall clock reached [`Limits::timeout`]: without a CPU limit, the limit itself;
    /// with one, the program blocked (or was starved) without using its CPU time.
    Wall,
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Status {
    /// The program exited with this code.
    Exited { code: i32 },
    /// A signal the harness did not send ended it (`name` like `SIGSEGV`).
    Signaled { signal: i32, name: String },
    /// Still running at its CPU-time limit or at the wall-clock deadline (`clock` says
    /// which): the group was killed. Both times are recorded, in milliseconds: the group's CPU
    /// time by then and the wall time since spawn.
    TimedOut {
        clock: Clock,
        cpu_ms: u64,
        wall_ms: u64,
    },
    /// The group's resident memory went over the limit: the group was killed.
    MemoryLimit { rss_bytes: u64, limit_bytes: u64 },
    /// [`kill_all`] killed it.
    Cancelled,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Exited { code } => write!(f, "exit status {code}"),
            Status::Signaled { signal, name } => write!(f, "killed by {name} (signal {signal})"),
            Status::TimedOut {
                clock,
                cpu_ms,
                wall_ms,
            } => {
                let (cpu, wall) = (*cpu_ms as f64 / 1e3, *wall_ms as f64 / 1e3);
                match clock {
                    Clock::Cpu => write!(
                        f,
                        "timed out: {cpu:.1} s of CPU time ({wall:.1} s wall), its limit"
                    ),
                    Clock::Wall => write!(
                        f,
                        "timed out: {wall:.1} s wall, its limit, with {cpu:.1} s of CPU time"
                    ),
                }
            }
            Status::MemoryLimit {
                rss_bytes,
                limit_bytes,
            } => write!(
                f,
                "resident memory {} MiB over the limit of {} MiB",
                rss_bytes >> 20,
                limit_bytes >> 20
            ),
            Status::Cancelled => write!(f, "cancelled"),
        }
    }
}

impl Status {
    /// How a run that did not finish in time used its time; `None` for any other end.
    pub fn overrun(&self) -> Option<Overrun> {
        match *self {
            Status::TimedOut {
                clock,
                cpu_ms,
                wall_ms,
            } => Some(Overrun {
                clock,
                cpu: Duration::from_millis(cpu_ms),
                wall: Duration::from_millis(wall_ms),
            }),
            _ => None,
        }
    }
}

/// How a program that did not finish in time used it: what a `hang` (or `timeout`) finding
/// records, so that a reader can tell a program that computed too long (`clock` CPU, its CPU
/// time at the limit) from one that blocked (`clock` wall, little CPU time) and from a machine
/// too loaded to judge (CPU time far below the wall time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overrun {
    pub clock: Clock,
    pub cpu: Duration,
    pub wall: Duration,
}

impl Overrun {
    /// One line: `1.0 s of CPU time, its limit, in 1.3 s of wall time` or `no exit within
    /// 10.0 s of wall time (10 × its CPU limit of 1.0 s), with 0.0 s of CPU time`.
    pub fn describe(&self, cpu_limit: Duration) -> String {
        let (cpu, wall) = (self.cpu.as_secs_f64(), self.wall.as_secs_f64());
        match self.clock {
            Clock::Cpu => format!(
                "{cpu:.1} s of CPU time (its limit {:.1} s) in {wall:.1} s of wall time",
                cpu_limit.as_secs_f64()
            ),
            Clock::Wall => format!(
                "no exit within {wall:.1} s of wall time ({WALL_BACKSTOP_FACTOR} × its CPU limit of \
                 {:.1} s), with {cpu:.1} s of CPU time: blocked, not computing",
                cpu_limit.as_secs_f64()
            ),
        }
    }
}

/// The name of signal `signal` (`SIGSEGV`), or `SIG<n>` for one without a name.
pub fn signal_name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("SIG{signal}"))
}

/// One finished run.
#[derive(Debug)]
pub struct Run {
    pub status: Status,
    /// From spawn until the leader exited (or the group was killed).
    pub wall: Duration,
    /// The group's CPU time (user + system): the larger of the last sample and the kernel's
    /// account of the leader and the children it waited for.
    pub cpu: Duration,
    /// The largest resident memory seen: the larger of the kernel's peak for the leader and
    /// the children it waited for, and the largest sampled sum over the group.
    pub peak_rss_bytes: u64,
    pub stdout: Captured,
    pub stderr: Captured,
    /// What the program ran under.
    pub pinning: Pinning,
    /// The leader's pid, which was also the group's id.
    pub pid: u32,
    /// The run's working directory, removed when this is dropped unless kept
    /// (`tempfile::TempDir::keep`).
    pub dir: tempfile::TempDir,
}

/// Why a program could not be run (as opposed to how it ran, which is a [`Status`]).
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot create a temporary working directory in {}: {source}", .dir.display())]
    WorkDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("cannot preload {}: not a file", .0.display())]
    MissingPreload(PathBuf),
    #[error("cannot turn off address-space randomization (personality ADDR_NO_RANDOMIZE refused: {0}); a sandbox's system-call filter may forbid it")]
    AslrUnavailable(std::io::Error),
    #[error("cannot watch `{program}` (pid {pid}): {source}")]
    Watch {
        program: String,
        pid: u32,
        source: std::io::Error,
    },
}

/// Where the program runs.
#[derive(Clone, Debug)]
enum WorkingDir {
    /// This path inside the run's temporary directory (empty: the directory itself).
    Inside(PathBuf),
    /// The harness's own working directory.
    Harness,
}

/// A program to run once, with its fresh temporary working directory. Lay out its inputs in
/// [`Invocation::dir`], then [`Invocation::run`].
#[derive(Debug)]
pub struct Invocation {
    program: OsString,
    args: Vec<OsString>,
    dir: tempfile::TempDir,
    working: WorkingDir,
    limits: Limits,
    pinning: Pinning,
}

impl Invocation {
    /// `program` (a path, or a name looked up in `PATH`), with a new empty temporary directory
    /// named `<prefix>XXXXXX`, a 60 s timeout and nothing pinned.
    pub fn new(program: impl AsRef<OsStr>, prefix: &str) -> Result<Invocation, ProcessError> {
        Invocation::new_in(program, prefix, &std::env::temp_dir())
    }

    /// [`Invocation::new`] with the temporary directory made in `base`.
    pub fn new_in(
        program: impl AsRef<OsStr>,
        prefix: &str,
        base: &Path,
    ) -> Result<Invocation, ProcessError> {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in(base)
            .map_err(|source| ProcessError::WorkDir {
                dir: base.to_path_buf(),
                source,
            })?;
        Ok(Invocation {
            program: program.as_ref().to_os_string(),
            args: Vec::new(),
            dir,
            working: WorkingDir::Inside(PathBuf::new()),
            limits: Limits::new(Duration::from_secs(60)),
            pinning: Pinning::default(),
        })
    }

    /// The run's temporary directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Invocation {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    pub fn args<A: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = A>) -> Invocation {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// Runs the program in `relative` inside the temporary directory (which must exist by
    /// then) instead of the directory itself.
    pub fn current_dir(mut self, relative: impl Into<PathBuf>) -> Invocation {
        self.working = WorkingDir::Inside(relative.into());
        self
    }

    /// Runs the program in the harness's own working directory (for commands given by a user,
    /// whose relative paths mean what they meant where the user typed them).
    pub fn in_harness_dir(mut self) -> Invocation {
        self.working = WorkingDir::Harness;
        self
    }

    pub fn limits(mut self, limits: Limits) -> Invocation {
        self.limits = limits;
        self
    }

    pub fn pinning(mut self, pinning: Pinning) -> Invocation {
        self.pinning = pinning;
        self
    }

    /// Runs the program to its end (or its kill) with standard input closed, and returns how
    /// it went. Errors are the harness's failures; the program's own are in [`Run::status`].
    pub fn run(self) -> Result<Run, ProcessError> {
        let start = Instant::now();
        let (child, program) = self.spawn(Stdio::null())?;
        let pid = child.id();
        let watched =
            watch::supervise(child, &self.limits, start).map_err(|source| ProcessError::Watch {
                program: program.to_string_lossy().into_owned(),
                pid,
                source,
            })?;
        Ok(Run {
            status: watched.status,
            wall: watched.wall,
            cpu: watched.cpu,
            peak_rss_bytes: watched.peak_rss_bytes,
            stdout: watched.stdout,
            stderr: watched.stderr,
            pinning: self.pinning,
            pid,
            dir: self.dir,
        })
    }

    /// Spawns the program in its own process group, with `stdin`, output piped, the pinned
    /// environment, and address-space randomization off when asked; the child and the path it
    /// was spawned from.
    fn spawn(&self, stdin: Stdio) -> Result<(std::process::Child, PathBuf), ProcessError> {
        let program = self.pinning.resolve(&self.program)?;
        let mut cmd = Command::new(&program);
        cmd.args(&self.args)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if let WorkingDir::Inside(relative) = &self.working {
            cmd.current_dir(self.dir.path().join(relative));
        }
        self.pinning.apply(&mut cmd)?;
        let child = {
            let _aslr = self
                .pinning
                .aslr_disabled
                .then(pin::AslrOff::set)
                .transpose()?;
            cmd.spawn()
        }
        .map_err(|source| ProcessError::Spawn {
            program: program.to_string_lossy().into_owned(),
            source,
        })?;
        Ok((child, program))
    }
}
