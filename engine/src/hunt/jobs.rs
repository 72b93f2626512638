//! A batch of slow jobs (the triage of findings) on detached threads, under a watchdog.
//!
//! Like the sweep's workers, the threads are never waited on: a job that overruns its limit is
//! abandoned (its thread deprioritized, a fresh thread takes the rest of the queue), and the
//! batch ends at its deadline or when cancelled, whatever is still running. A job that was
//! abandoned or never started has no result.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::hunt::watchdog::{current_thread_id, deprioritize};

/// The limits of a batch.
pub(super) struct JobLimits<'a> {
    pub threads: usize,
    /// Longest a single job may run before it is abandoned.
    pub per_job: Duration,
    /// Polled between results: `true` ends the batch now (a deadline, a stop request).
    pub should_end: &'a dyn Fn() -> bool,
    /// Set when the batch ends early, for jobs that poll it.
    pub cancel: Arc<AtomicBool>,
}

/// What a job thread is doing, for the watchdog.
#[derive(Default)]
struct Slot {
    started: Mutex<Option<Instant>>,
    thread: OnceLock<i64>,
}

/// Runs `work` on every item; `results[i]` is item `i`'s result, `None` when it did not
/// finish within the limits.
pub(super) fn run_jobs<T, R, F>(items: Vec<T>, limits: &JobLimits<'_>, work: F) -> Vec<Option<R>>
where
    T: Send + 'static,
    R: Send + 'static,
    F: Fn(T) -> R + Send + Sync + 'static,
{
    let n = items.len();
    let mut results: Vec<Option<R>> = (0..n).map(|_| None).collect();
    if n == 0 || (limits.should_end)() {
        limits.cancel.store(true, Ordering::SeqCst);
        return results;
    }
    let queue: Arc<Mutex<VecDeque<(usize, T)>>> =
        Arc::new(Mutex::new(items.into_iter().enumerate().collect()));
    let work = Arc::new(work);
    let (tx, rx) = mpsc::channel::<(usize, R)>();
    let mut slots: Vec<(Arc<Slot>, bool)> = Vec::new();
    let spawn = |slots: &mut Vec<(Arc<Slot>, bool)>| {
        let slot = Arc::new(Slot::default());
        let (q, w, tx, s) = (
            Arc::clone(&queue),
            Arc::clone(&work),
            tx.clone(),
            Arc::clone(&slot),
        );
        let scope = crate::process::scope();
        let ok = std::thread::Builder::new()
            .name("pimdiff-triage".into())
            .spawn(move || {
                crate::process::set_scope(scope);
                job_thread(&q, &*w, &tx, &s)
            })
            .is_ok();
        slots.push((slot, ok));
    };
    for _ in 0..limits.threads.clamp(1, n) {
        spawn(&mut slots);
    }
    let mut resolved = 0;
    while resolved < n {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok((i, r)) => {
                results[i] = Some(r);
                resolved += 1;
            }
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if (limits.should_end)() {
            limits.cancel.store(true, Ordering::SeqCst);
            break;
        }
        let mut abandoned = 0;
        for (slot, alive) in slots.iter_mut().filter(|(_, alive)| *alive) {
            let overdue = lock(&slot.started).is_some_and(|t| t.elapsed() > limits.per_job);
            if overdue {
                *alive = false;
                abandoned += 1;
                if let Some(&tid) = slot.thread.get() {
                    deprioritize(tid);
                }
            }
        }
        resolved += abandoned;
        for _ in 0..abandoned {
            spawn(&mut slots);
        }
        if !slots.iter().any(|(_, alive)| *alive) {
            break;
        }
    }
    results
}

fn job_thread<T, R>(
    queue: &Mutex<VecDeque<(usize, T)>>,
    work: &dyn Fn(T) -> R,
    tx: &mpsc::Sender<(usize, R)>,
    slot: &Slot,
) {
    if let Some(tid) = current_thread_id() {
        let _ = slot.thread.set(tid);
    }
    loop {
        let Some((i, item)) = lock(queue).pop_front() else {
            return;
        };
        *lock(&slot.started) = Some(Instant::now());
        let r = work(item);
        *lock(&slot.started) = None;
        if tx.send((i, r)).is_err() {
            return;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
