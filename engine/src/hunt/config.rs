//! What a hunt is given (configuration, steering), its errors, its constants, and the
//! instants that bound it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::shrink::MinimizeConfig;
use crate::plan::{Limit, Shard};

/// What a hunt of any target is given: the engine's own settings. What is compiled and how
/// is the target's (see `Target`).
#[derive(Clone, Debug)]
pub struct HuntConfig {
    /// The hunt seed `S`.
    pub seed: u64,
    pub limit: Limit,
    /// Worker threads; 0 means one per available core.
    pub jobs: usize,
    pub shard: Shard,
    /// The budget of each finding's triage (`time_budget`: `--minimize-time`; `max_steps`).
    pub minimize: MinimizeConfig,
    /// The share of declined cases allowed (`--max-unsupported`); `None`: the target's own
    /// default (`Target::max_unsupported_share`).
    pub max_unsupported: Option<f64>,
    /// Where `findings/`, `summary.json` and `summary.md` go.
    pub out: PathBuf,
}

/// How a hunt is steered from outside: stop requests (first Ctrl-C), triage cut short (second
/// Ctrl-C), and whether to draw a progress bar.
#[derive(Clone, Debug, Default)]
pub struct HuntControl {
    /// Set: no new case starts; what was found is saved and summarized within seconds.
    pub stop: Arc<AtomicBool>,
    /// Set: triage still running is abandoned and findings are saved unminimized.
    pub abort_minimization: Arc<AtomicBool>,
    /// Draw an indicatif progress bar on stderr (the caller decides: a terminal, no --quiet).
    pub progress: bool,
    /// When set, each finding's triage gets at least the time of this many checks of a case
    /// at the speed the sweep measured, up to [`MAX_ADAPTED_TRIAGE`] (the CLI sets it when
    /// `--minimize-time` is not given): a compiler that takes half a second per case gets the
    /// runs it needs, where a fixed 10 s would cut every minimization short.
    pub triage_checks: Option<u64>,
}

/// The longest an adapted triage budget grows (see [`HuntControl::triage_checks`]).
pub const MAX_ADAPTED_TRIAGE: Duration = Duration::from_secs(600);

/// Why a hunt could not run or could not save its results (bad set-up, not findings).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HuntError {
    /// `OUT/findings` already holds findings of an earlier hunt.
    #[error("{}: already holds findings of an earlier hunt; choose another --out or remove them", path.display())]
    OutNotEmpty { path: PathBuf },
    /// `OUT/corpus` of a guided hunt already holds entries of an earlier hunt.
    #[error("{}: already holds the corpus of an earlier hunt; choose another --out (to start from it, pass it as --corpus)", path.display())]
    CorpusNotEmpty { path: PathBuf },
    /// The output directory or a finding could not be written.
    #[error(transparent)]
    Write(#[from] pimdiff_atomic::Error),
}

pub use crate::finding::FINDINGS_DIR;
pub use crate::summary::{SUMMARY_JSON, SUMMARY_MD};

/// How long cases in flight may finish after a stop request.
pub const STOP_GRACE: Duration = Duration::from_millis(500);
/// How long triage may still run after a stop request (then findings not reached are saved
/// unminimized): with [`STOP_GRACE`] and the writing of the summary, a stopped hunt ends
/// within five seconds.
pub const STOP_TRIAGE: Duration = Duration::from_millis(2500);
/// A case-count hunt ends its sweep after this many cases hung (their threads cannot be
/// reclaimed); see [`super::sweep`].
pub const MAX_STUCK: usize = 8;
/// The run budget of each [`Target::cause`](super::Target::cause) call: enough for the tensor
/// target's whole repair catalog on a program of a few hundred instructions (a few hundred
/// milliseconds in-process).
pub const CAUSE_RUNS: u64 = 3_000;

/// The instants that bound a hunt.
pub(super) struct Timeline {
    pub start: Instant,
    /// `--duration`'s end.
    pub end: Option<Instant>,
    /// Part of the duration kept for triage once there is a finding.
    pub triage_share: Option<Instant>,
    /// When the hunt first saw a stop request.
    stop_seen: Mutex<Option<Instant>>,
}

/// Part of a `--duration` reserved at its end for writing findings and the summary.
pub(super) const WRITE_RESERVE: Duration = Duration::from_millis(500);

impl Timeline {
    pub fn new(limit: Limit) -> Timeline {
        let start = Instant::now();
        let (end, triage_share) = match limit {
            Limit::Duration(d) => (start.checked_add(d), start.checked_add(d.mul_f64(0.75))),
            Limit::Cases(_) => (None, None),
        };
        Timeline {
            start,
            end,
            triage_share,
            stop_seen: Mutex::new(None),
        }
    }

    /// Records the first time a stop request is seen.
    pub fn observe_stop(&self, control: &HuntControl) {
        if control.stop.load(Ordering::SeqCst) {
            let mut seen = self.stop_seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.get_or_insert_with(Instant::now);
        }
    }

    /// Triage ends here: the duration's end (minus the time to write), or soon after a stop.
    pub fn triage_deadline(&self) -> Option<Instant> {
        let by_duration = self.end.map(|e| e.checked_sub(WRITE_RESERVE).unwrap_or(e));
        let by_stop = self
            .stop_seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map(|s| s + STOP_TRIAGE);
        match (by_duration, by_stop) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether triage must end now.
    pub fn triage_over(&self, control: &HuntControl) -> bool {
        self.observe_stop(control);
        control.abort_minimization.load(Ordering::SeqCst)
            || self.triage_deadline().is_some_and(|d| Instant::now() >= d)
    }
}
