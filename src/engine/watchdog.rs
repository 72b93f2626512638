//! The per-case watchdog: a check that does not finish in time is a `timeout` finding.
//!
//! A check runs in stages ([`Stage`]); the thread running it records the stage it is in and
//! since when on a [`StageClock`], and another thread (the sweep's coordinator, or
//! `check::check_case_within`) reads the clock and declares the case *overdue* once a stage has
//! run longer than the limit its target sets for it.
//!
//! A thread stuck in the compiler under test cannot be stopped from outside (Rust threads
//! cannot be killed, and the in-repo compiler has no cancellation points). It is abandoned:
//! [`deprioritize`] lowers its scheduling priority as far as it goes so that it takes almost
//! no CPU from the threads still working, and it ends with the process.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A stage of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// The reference output.
    Oracle,
    /// The compiler under test.
    Compile,
    /// The interpreter, and the comparison.
    Run,
}

impl Stage {
    /// `oracle`, `compile`, `run`: the detail of a `timeout` signature.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Oracle => "oracle",
            Stage::Compile => "compile",
            Stage::Run => "run",
        }
    }
}

/// Which stage a check is in, and since when: written by the thread running the check, read
/// by a watchdog. Also records the running thread's id, so that an abandoned thread can be
/// deprioritized.
#[derive(Debug, Default)]
pub struct StageClock {
    state: Mutex<ClockState>,
}

#[derive(Debug, Default)]
struct ClockState {
    current: Option<(Stage, Instant)>,
    thread: Option<i64>,
}

impl StageClock {
    pub fn new() -> StageClock {
        StageClock::default()
    }

    /// The calling thread starts `stage` now.
    pub fn enter(&self, stage: Stage) {
        let mut s = self.lock();
        s.current = Some((stage, Instant::now()));
        if s.thread.is_none() {
            s.thread = current_thread_id();
        }
    }

    /// The check is over.
    pub fn finish(&self) {
        self.lock().current = None;
    }

    /// The stage running now and for how long.
    pub fn current(&self) -> Option<(Stage, Duration)> {
        self.lock().current.map(|(s, since)| (s, since.elapsed()))
    }

    /// The stage running now when it has run longer than its limit (`limit_of` the stage),
    /// with the limit.
    pub fn overdue(&self, limit_of: impl Fn(Stage) -> Duration) -> Option<(Stage, Duration)> {
        let (stage, elapsed) = self.current()?;
        let limit = limit_of(stage);
        (elapsed > limit).then_some((stage, limit))
    }

    /// Lowers the priority of the thread that ran the check (see [`deprioritize`]).
    pub fn deprioritize_thread(&self) {
        if let Some(tid) = self.lock().thread {
            deprioritize(tid);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ClockState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The kernel's id of the calling thread (Linux), for [`deprioritize`].
pub fn current_thread_id() -> Option<i64> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions and cannot fail.
        Some(unsafe { libc::syscall(libc::SYS_gettid) })
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Gives thread `tid` the lowest scheduling priority (nice 19; on Linux `setpriority` acts on
/// one thread), so that an abandoned thread spinning in a hung compiler takes almost no CPU
/// from the threads still working. Lowering one's own priority needs no privilege; a failure
/// is ignored (the thread then keeps its share until the process ends).
pub fn deprioritize(tid: i64) {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority only reads its arguments; an unknown thread id is an error return.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS as _, tid as libc::id_t, 19);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = tid;
}
