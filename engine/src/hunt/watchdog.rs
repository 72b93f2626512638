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

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
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

/// Runs `work` on a thread of its own, recording its stages on a clock that this thread
/// watches: `Err((stage, limit))` when a stage runs longer than `limit_of(stage)` (the
/// thread is then abandoned and deprioritized: it cannot be killed). A panic of `work` is
/// passed on to the caller's thread. Without a thread to spare, `work` runs here, unwatched.
pub fn run_watched<R: Send + 'static>(
    work: impl FnOnce(&StageClock) -> R + Send + 'static,
    limit_of: impl Fn(Stage) -> Duration,
) -> Result<R, (Stage, Duration)> {
    let clock = Arc::new(StageClock::new());
    let (tx, rx) = mpsc::channel();
    // The work waits in a slot the thread empties: when no thread can be started, the closure
    // given to it is dropped (and with it the sender), and the work is still here to run.
    let slot = Arc::new(Mutex::new(Some(work)));
    let (clock_run, slot_run) = (Arc::clone(&clock), Arc::clone(&slot));
    let scope = crate::process::scope();
    let _ = std::thread::Builder::new()
        .name("pimdiff-watched".into())
        .spawn(move || {
            crate::process::set_scope(scope);
            let work = slot_run.lock().ok().and_then(|mut w| w.take());
            if let Some(work) = work {
                let outcome =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&clock_run)));
                clock_run.finish();
                let _ = tx.send(outcome);
            }
        });
    loop {
        match wait_for(&rx, Duration::from_millis(20)) {
            Ok(Ok(result)) => return Ok(result),
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(RecvTimeoutError::Disconnected) => {
                // No thread was started: run here, unwatched. (A started thread always sends.)
                let work = slot.lock().ok().and_then(|mut w| w.take());
                if let Some(work) = work {
                    return Ok(work(&StageClock::new()));
                }
                return Err((Stage::Run, Duration::ZERO));
            }
            Err(RecvTimeoutError::Timeout) => {
                if let Some(over) = clock.overdue(&limit_of) {
                    clock.deprioritize_thread();
                    return Err(over);
                }
            }
        }
    }
}

/// Waits up to `timeout` for the watched thread's result. On a rayon worker (replay runs
/// checks on the pool) the wait keeps running the pool's other jobs, since the work itself may
/// hand work to the same pool (the oracle's large convolutions) and a blocked worker would
/// starve it.
fn wait_for<R>(rx: &Receiver<R>, timeout: Duration) -> Result<R, RecvTimeoutError> {
    if rayon::current_thread_index().is_none() {
        return rx.recv_timeout(timeout);
    }
    let deadline = Instant::now() + timeout;
    loop {
        match rx.try_recv() {
            Ok(r) => return Ok(r),
            Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
            Err(TryRecvError::Empty) => {}
        }
        if Instant::now() >= deadline {
            return Err(RecvTimeoutError::Timeout);
        }
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            std::thread::sleep(Duration::from_millis(1));
        }
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
