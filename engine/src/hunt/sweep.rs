//! The sweep: run the index space on worker threads under a watchdog, count outcomes, keep the
//! first case of each signature.
//!
//! **Workers.** `jobs` detached threads take indices `j = 0, 1, 2, …` of this shard from one
//! counter, in order, and check case `shard.nth(j)`, recording each stage on their
//! [`StageClock`], and leave their results in their slot. The coordinator (the calling
//! thread) never waits on a worker: every few milliseconds it collects the results and looks
//! at the clocks, the stop flag and the deadline.
//!
//! **Watchdog.** A case whose stage overruns its limit is *stuck*: it is recorded as the
//! caller's timeout observation, its thread is abandoned (and deprioritized: a thread cannot be
//! killed, and a hung compiler never returns) and a fresh worker takes its place. At most
//! [`SweepConfig::max_stuck`] threads are abandoned; the sweep then ends at the
//! `max_stuck`-th hanging index (see below), so that a compiler that hangs everywhere does not
//! fill the process with spinning threads.
//!
//! **Determinism.** Results are applied in index order: a result waits until every lower index
//! is resolved (finished or stuck). So the counts and each signature's first (lowest) index
//! depend only on the set of indices run, never on thread timing — and for a case-count limit
//! that set is `0..N`, or, when too many threads were abandoned, every index up to and
//! including the `max_stuck`-th hanging one: the same for any number of jobs.
//!
//! **Stopping.** A stop request or the deadline ends dispensing at once; cases in flight get
//! [`SweepConfig::grace`] to finish, then are abandoned. What was resolved is kept (an
//! interrupted sweep is, by nature, not reproducible).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::target::Observation;
use super::watchdog::{Stage, StageClock};
use crate::finding::{Kind, Signature};
use crate::plan::{Limit, Shard};
use crate::summary::SweepEnd;

/// The first (lowest-index) case of one signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FirstSeen {
    pub index: u64,
    pub signature: Signature,
    /// How many cases of the sweep had this signature.
    pub occurrences: u64,
}

/// The result of [`sweep`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sweep {
    /// Cases resolved (finished or stuck) and counted.
    pub cases_run: u64,
    /// Cases per outcome kind.
    pub counts: BTreeMap<Kind, u64>,
    /// Declined cases per abstracted reason.
    pub decline_reasons: BTreeMap<String, u64>,
    /// One entry per unique signature, sorted by index.
    pub firsts: Vec<FirstSeen>,
    pub end: SweepEnd,
    /// Threads abandoned because their case was stuck.
    pub abandoned: usize,
    /// Cases still in flight when a stop request or the deadline ended the sweep.
    pub unfinished: Vec<u64>,
    pub elapsed: Duration,
}

/// Progress, for a progress bar (about ten times a second).
#[derive(Clone, Debug)]
pub struct SweepProgress<'a> {
    pub cases_run: u64,
    /// This shard's total, when the limit is a case count.
    pub total: Option<u64>,
    pub counts: &'a BTreeMap<Kind, u64>,
    pub unique_findings: usize,
    pub elapsed: Duration,
}

/// What the sweep tells its caller while it runs (on the calling thread).
#[derive(Debug)]
pub enum SweepEvent<'a> {
    /// A signature arrived for the first time (in arrival order, which depends on timing:
    /// for saving a finding the moment it is found, not for deciding which case represents
    /// it).
    Found {
        index: u64,
        /// The signature met for the first time (one of the observation's).
        signature: &'a Signature,
        observation: &'a Observation,
    },
    /// A case overran its stage limit; its thread is abandoned.
    Stuck {
        index: u64,
        stage: Stage,
        limit: Duration,
    },
    Progress(SweepProgress<'a>),
}

/// How a sweep runs.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    pub limit: Limit,
    pub shard: Shard,
    /// Worker threads (at least 1).
    pub jobs: usize,
    /// No new case starts after this instant (a `--duration` hunt's end of sweeping).
    pub deadline: Option<Instant>,
    /// An earlier end used once there is a finding, to leave time for triage.
    pub deadline_with_findings: Option<Instant>,
    /// The sweep ends at this many hanging cases (see the module docs).
    pub max_stuck: usize,
    /// How long cases in flight may still finish after a stop request or the deadline.
    pub grace: Duration,
}

/// The checker of a sweep: case `k`, recording its stages on the clock.
pub type Checker = Arc<dyn Fn(u64, &StageClock) -> Observation + Send + Sync>;

/// Runs this shard's indices within `cfg.limit` (see the module docs). `overdue` says whether
/// a clock's stage has overrun its limit; `stuck` is the observation of a stuck case.
pub fn sweep<O, T, E>(
    cfg: &SweepConfig,
    stop: &AtomicBool,
    check: Checker,
    overdue: O,
    stuck: T,
    mut on_event: E,
) -> Sweep
where
    O: Fn(&StageClock) -> Option<(Stage, Duration)>,
    T: Fn(Stage, Duration) -> Observation,
    E: FnMut(SweepEvent<'_>),
{
    let start = Instant::now();
    let total = match cfg.limit {
        Limit::Cases(n) => Some(cfg.shard.count_below(n)),
        Limit::Duration(_) => None,
    };
    let mut pool = Pool::start(cfg, total, Arc::clone(&check), stop.load(Ordering::SeqCst));
    let mut agg = Aggregate::new();
    let mut stuck_at: Vec<u64> = Vec::new();
    let mut end_j = total.unwrap_or(u64::MAX);
    let mut arrived: HashSet<Signature> = HashSet::new();
    let mut stopping: Option<(Instant, SweepEnd)> = None;
    let mut end = SweepEnd::Completed;
    let mut last_progress = Instant::now();
    let mut last_watch = start.checked_sub(WATCH_EVERY).unwrap_or(start);
    loop {
        pool.wait(WATCH_EVERY.saturating_sub(last_watch.elapsed()));
        let watch = last_watch.elapsed() >= WATCH_EVERY;
        if watch {
            last_watch = Instant::now();
            for (j, obs) in pool.drain() {
                announce(
                    &mut arrived,
                    cfg.shard.nth(j).unwrap_or(j),
                    &obs,
                    &mut on_event,
                );
                agg.pending.entry(j).or_insert(obs);
            }
            for (j, stage, limit) in pool.collect_stuck(&overdue) {
                on_event(SweepEvent::Stuck {
                    index: cfg.shard.nth(j).unwrap_or(j),
                    stage,
                    limit,
                });
                let obs = stuck(stage, limit);
                announce(
                    &mut arrived,
                    cfg.shard.nth(j).unwrap_or(j),
                    &obs,
                    &mut on_event,
                );
                agg.pending.insert(j, obs);
                stuck_at.push(j);
                stuck_at.sort_unstable();
                if stuck_at.len() >= cfg.max_stuck.max(1) {
                    // End at the `max_stuck`-th lowest hanging index: the same set of indices
                    // for any timing, as lower ones that hang only lower the end.
                    end_j = end_j.min(stuck_at[cfg.max_stuck.max(1) - 1] + 1);
                    pool.limit_to(end_j);
                }
                if stopping.is_none() {
                    // Indices below the end may still be waiting for a worker.
                    pool.spawn();
                }
            }
        }
        agg.advance(end_j, cfg.shard);
        if stopping.is_none() && watch {
            let past = |d: Option<Instant>| d.is_some_and(|d| Instant::now() >= d);
            let reason = if stop.load(Ordering::SeqCst) {
                Some(SweepEnd::Interrupted)
            } else if past(cfg.deadline)
                || (!agg.firsts.is_empty() && past(cfg.deadline_with_findings))
            {
                Some(SweepEnd::Deadline)
            } else {
                None
            };
            if let Some(reason) = reason {
                pool.stop_dispensing();
                stopping = Some((Instant::now(), reason));
                end = reason;
            }
        }
        let done = agg.watermark >= end_j || !pool.any_running();
        let grace_over = stopping.is_some_and(|(at, _)| at.elapsed() >= cfg.grace);
        if done || grace_over {
            break;
        }
        if last_progress.elapsed() >= Duration::from_millis(100) {
            last_progress = Instant::now();
            on_event(SweepEvent::Progress(agg.progress(total, start)));
        }
    }
    pool.stop_dispensing();
    // What arrived in the meantime, then whatever is still pending (after a stop, past gaps).
    for (j, obs) in pool.drain() {
        agg.pending.entry(j).or_insert(obs);
    }
    agg.advance(end_j, cfg.shard);
    let unfinished = pool.running_indices(cfg.shard);
    if stopping.is_some() {
        agg.flush(end_j, cfg.shard);
    }
    on_event(SweepEvent::Progress(agg.progress(total, start)));
    if end == SweepEnd::Completed && end_j < total.unwrap_or(u64::MAX) {
        end = SweepEnd::TooManyStuck;
    }
    agg.finish(end, pool.abandoned, unfinished, start.elapsed())
}

/// Tells the caller of every signature of `obs` (case `index`) that arrives for the first time.
fn announce(
    arrived: &mut HashSet<Signature>,
    index: u64,
    obs: &Observation,
    on_event: &mut impl FnMut(SweepEvent<'_>),
) {
    for sig in &obs.signatures {
        if arrived.insert(sig.clone()) {
            on_event(SweepEvent::Found {
                index,
                signature: sig,
                observation: obs,
            });
        }
    }
}

/// How often the coordinator looks at the workers' clocks, the stop flag and the deadline.
const WATCH_EVERY: Duration = Duration::from_millis(10);

/// Results applied in index order.
struct Aggregate {
    /// Every `j` below it is applied.
    watermark: u64,
    pending: BTreeMap<u64, Observation>,
    cases_run: u64,
    counts: BTreeMap<Kind, u64>,
    decline_reasons: BTreeMap<String, u64>,
    /// signature → (first index, occurrences)
    firsts: HashMap<Signature, (u64, u64)>,
}

impl Aggregate {
    fn new() -> Self {
        Aggregate {
            watermark: 0,
            pending: BTreeMap::new(),
            cases_run: 0,
            counts: BTreeMap::new(),
            decline_reasons: BTreeMap::new(),
            firsts: HashMap::new(),
        }
    }

    /// Applies the pending results from the watermark on, as long as they are contiguous and
    /// below `end_j`.
    fn advance(&mut self, end_j: u64, shard: Shard) {
        while self.watermark < end_j {
            let Some(obs) = self.pending.remove(&self.watermark) else {
                break;
            };
            self.apply(shard.nth(self.watermark).unwrap_or(self.watermark), obs);
            self.watermark += 1;
        }
    }

    /// Applies every pending result below `end_j`, gaps or not.
    fn flush(&mut self, end_j: u64, shard: Shard) {
        let pending = std::mem::take(&mut self.pending);
        for (j, obs) in pending.into_iter().filter(|&(j, _)| j < end_j) {
            self.apply(shard.nth(j).unwrap_or(j), obs);
        }
    }

    fn apply(&mut self, k: u64, obs: Observation) {
        self.cases_run += 1;
        *self.counts.entry(obs.kind).or_default() += 1;
        if let Some(reason) = obs.decline_reason {
            *self.decline_reasons.entry(reason).or_default() += 1;
        }
        for sig in obs.signatures {
            let e = self.firsts.entry(sig).or_insert((k, 0));
            e.0 = e.0.min(k);
            e.1 += 1;
        }
    }

    fn progress(&self, total: Option<u64>, start: Instant) -> SweepProgress<'_> {
        SweepProgress {
            cases_run: self.cases_run,
            total,
            counts: &self.counts,
            unique_findings: self.firsts.len(),
            elapsed: start.elapsed(),
        }
    }

    fn finish(
        self,
        end: SweepEnd,
        abandoned: usize,
        unfinished: Vec<u64>,
        elapsed: Duration,
    ) -> Sweep {
        let mut firsts: Vec<FirstSeen> = self
            .firsts
            .into_iter()
            .map(|(signature, (index, occurrences))| FirstSeen {
                index,
                signature,
                occurrences,
            })
            .collect();
        // By index, and the signatures of one case in their own order (a case can show several).
        firsts.sort_by(|a, b| (a.index, &a.signature).cmp(&(b.index, &b.signature)));
        Sweep {
            cases_run: self.cases_run,
            counts: self.counts,
            decline_reasons: self.decline_reasons,
            firsts,
            end,
            abandoned,
            unfinished,
            elapsed,
        }
    }
}

/// One worker's state, shared with the coordinator.
struct Slot {
    clock: StageClock,
    /// The `j` being checked, `u64::MAX` between cases.
    current: AtomicU64,
    /// Results not yet collected by the coordinator. Workers push, the coordinator drains
    /// every [`WATCH_EVERY`]: one uncontended lock per case, and no wake-up of the coordinator
    /// per case (a channel message per case cost more CPU than the rest of the bookkeeping).
    done: Mutex<Vec<(u64, Observation)>>,
}

const IDLE: u64 = u64::MAX;

#[derive(Clone, Copy, PartialEq, Eq)]
enum WorkerState {
    Running,
    Exited,
    Abandoned,
}

/// The worker threads.
struct Pool {
    shared: Arc<Shared>,
    check: Checker,
    shard: Shard,
    /// Workers announce their exit here (it also wakes the coordinator).
    exits_tx: Sender<usize>,
    exits: Receiver<usize>,
    workers: Vec<(Arc<Slot>, WorkerState)>,
    /// Results of abandoned workers from before their stuck case.
    orphaned: Vec<(u64, Observation)>,
    abandoned: usize,
}

/// What every worker reads.
struct Shared {
    next: AtomicU64,
    /// Indices `j` at or above it are not dispensed.
    limit: AtomicU64,
    stop: AtomicBool,
}

impl Pool {
    /// Starts `cfg.jobs` workers; with `stopped`, they exit at once.
    fn start(cfg: &SweepConfig, total: Option<u64>, check: Checker, stopped: bool) -> Pool {
        let (exits_tx, exits) = mpsc::channel();
        let mut pool = Pool {
            shared: Arc::new(Shared {
                next: AtomicU64::new(0),
                limit: AtomicU64::new(total.unwrap_or(u64::MAX)),
                stop: AtomicBool::new(stopped),
            }),
            check,
            shard: cfg.shard,
            exits_tx,
            exits,
            workers: Vec::new(),
            orphaned: Vec::new(),
            abandoned: 0,
        };
        for _ in 0..cfg.jobs.max(1) {
            pool.spawn();
        }
        pool
    }

    /// Starts one more worker (when the thread cannot be created, the others carry on).
    fn spawn(&mut self) {
        let worker = self.workers.len();
        let slot = Arc::new(Slot {
            clock: StageClock::new(),
            current: AtomicU64::new(IDLE),
            done: Mutex::new(Vec::new()),
        });
        let (shared, check, tx, shard) = (
            Arc::clone(&self.shared),
            Arc::clone(&self.check),
            self.exits_tx.clone(),
            self.shard,
        );
        let s = Arc::clone(&slot);
        let scope = crate::process::scope();
        let spawned = std::thread::Builder::new()
            .name(format!("pimdiff-hunt-{worker}"))
            .spawn(move || {
                crate::process::set_scope(scope);
                let _notice = ExitNotice { tx, worker };
                work(&shared, &check, &s, shard);
            });
        let state = if spawned.is_ok() {
            WorkerState::Running
        } else {
            WorkerState::Exited
        };
        self.workers.push((slot, state));
    }

    /// Waits up to `wait` for a worker to exit, noting every exit announced.
    fn wait(&mut self, wait: Duration) {
        let mut next = self.exits.recv_timeout(wait).ok();
        while let Some(worker) = next {
            if self.workers[worker].1 == WorkerState::Running {
                self.workers[worker].1 = WorkerState::Exited;
            }
            next = self.exits.try_recv().ok();
        }
    }

    /// The results of every worker not abandoned, collected since the last call.
    fn drain(&mut self) -> Vec<(u64, Observation)> {
        let mut out = std::mem::take(&mut self.orphaned);
        for (slot, state) in &self.workers {
            if *state != WorkerState::Abandoned {
                out.append(&mut lock(&slot.done));
            }
        }
        out
    }

    /// The running workers whose case overran its limit, now abandoned: `(j, stage, limit)`.
    /// Their results before the stuck case are kept for the next [`Pool::drain`].
    fn collect_stuck(
        &mut self,
        overdue: &dyn Fn(&StageClock) -> Option<(Stage, Duration)>,
    ) -> Vec<(u64, Stage, Duration)> {
        let mut out = Vec::new();
        for (slot, state) in &mut self.workers {
            if *state != WorkerState::Running {
                continue;
            }
            let Some((stage, limit)) = overdue(&slot.clock) else {
                continue;
            };
            let j = slot.current.load(Ordering::SeqCst);
            if j == IDLE {
                continue;
            }
            *state = WorkerState::Abandoned;
            self.orphaned.append(&mut lock(&slot.done));
            slot.clock.deprioritize_thread();
            self.abandoned += 1;
            out.push((j, stage, limit));
        }
        out
    }

    fn limit_to(&self, end_j: u64) {
        self.shared.limit.fetch_min(end_j, Ordering::SeqCst);
    }

    fn stop_dispensing(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
    }

    fn any_running(&self) -> bool {
        self.workers.iter().any(|(_, s)| *s == WorkerState::Running)
    }

    /// The case indices workers are on: running ones, and ones that died mid-case.
    fn running_indices(&self, shard: Shard) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .workers
            .iter()
            // Running, or exited in the middle of a case (a panic outside the per-case
            // catch); an abandoned worker's case was resolved as stuck.
            .filter(|(_, s)| *s != WorkerState::Abandoned)
            .map(|(slot, _)| slot.current.load(Ordering::SeqCst))
            .filter(|&j| j != IDLE)
            .map(|j| shard.nth(j).unwrap_or(j))
            .collect();
        v.sort_unstable();
        v
    }
}

/// A worker: takes the next index until the limit or a stop.
fn work(shared: &Shared, check: &Checker, slot: &Slot, shard: Shard) {
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let j = shared.next.fetch_add(1, Ordering::SeqCst);
        if j >= shared.limit.load(Ordering::SeqCst) {
            break;
        }
        let Some(k) = shard.nth(j) else { break };
        slot.current.store(j, Ordering::SeqCst);
        let obs = check(k, &slot.clock);
        lock(&slot.done).push((j, obs));
        slot.current.store(IDLE, Ordering::SeqCst);
    }
}

/// Announces a worker's exit when dropped, which also happens while a panic unwinds it. Why:
/// a panic outside the per-case catch (a harness or generator bug) would otherwise end the
/// worker silently and leave the coordinator waiting for it forever; with the notice, the
/// sweep ends and the worker's case is reported unfinished.
struct ExitNotice {
    tx: Sender<usize>,
    worker: usize,
}

impl Drop for ExitNotice {
    fn drop(&mut self) {
        let _ = self.tx.send(self.worker);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
