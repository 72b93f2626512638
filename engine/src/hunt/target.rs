//! What a compiler under test must provide to be hunted: the [`Target`] trait.
//!
//! The engine owns everything that is the same for every compiler: seeding, the worker
//! threads and their watchdog, Ctrl-C, deduplication by signature, grouping by cause, the
//! time-bounded minimization loop, the finding directories, the summary, the exit status. A
//! target owns what differs: what a case is and how one is generated, run, judged, made
//! smaller and saved. `ARCHITECTURE.md` ("Adding a target") walks through an implementation.
//!
//! Every method is called from several threads at once and must be deterministic for a given
//! case (the same seed gives the same findings for any `--jobs`). A panic inside a method is
//! caught by the engine (a `crash` observation); a target that can tell more about its own
//! panics (which stage, which code) turns them into outcomes itself.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::grouping::Cause;
use super::panic;
use super::shrink::{shrink, ShrinkOptions, Shrunk};
use super::watchdog::{Stage, StageClock};
use crate::finding::{abstract_message, FindingMeta, Kind, MinimizationStats, Signature};

/// A compiler under test, as the engine runs it (see the module docs).
pub trait Target: Send + Sync + 'static {
    /// One generated input: a tensor case, a network.
    type Case: Clone + Send + Sync + 'static;
    /// Everything one run of a case produced that judging and saving need.
    type Run: Send + 'static;
    /// What a finding directory is written from: the run of the saved case, judged.
    type Evidence: Send + 'static;

    /// The name `--target` spells (`cases`, `pimcomp-nn`, `puma`), recorded in every finding.
    fn name(&self) -> &'static str;
    /// The compiler under test in words, for the summary and every finding.
    fn compiler(&self) -> String;
    /// The generator's configuration, recorded so that any case can be made again.
    fn generator(&self) -> serde_json::Value;

    /// The case of `case_seed` (the engine derives it from the hunt seed and the case index).
    fn case(&self, case_seed: u64) -> Self::Case;
    /// How large a case is; minimization only ever lowers it.
    fn size(&self, case: &Self::Case) -> u64;

    /// Compiles, runs and checks one case, recording its stages on `clock`.
    fn run(&self, case: &Self::Case, clock: &StageClock) -> Self::Run;
    /// What the sweep keeps of a run: its kind, its finding signatures, a decline's reason.
    fn observe(&self, run: &Self::Run) -> Observation;
    /// How long a run may stay in `stage` before the watchdog abandons it as a `timeout`;
    /// `None` for no watchdog (a target whose external processes carry their own deadline).
    fn stage_limit(&self, stage: Stage) -> Option<Duration>;
    /// The largest share of declined (`unsupported`) cases that is not a failure of the hunt;
    /// `None`: declines never fail it.
    fn max_unsupported_share(&self) -> Option<f64> {
        None
    }

    /// The reduction passes of minimization, tried in this order (see `engine::shrink`).
    fn passes(&self) -> usize;
    /// The smaller variants of `case` that pass `pass` proposes, simplest first, each valid.
    fn candidates(&self, pass: usize, case: &Self::Case) -> Vec<(String, Self::Case)>;

    /// A cheap cause of a bucket of failing cases, computed on its first (unminimized) case,
    /// so that buckets of one root cause merge before anything is minimized. The default
    /// keeps each signature apart.
    fn cause(
        &self,
        _case: &Self::Case,
        signature: &Signature,
        _budget: &Budget,
        _cancel: &AtomicBool,
    ) -> Cause {
        Cause::unlocalized(signature.clone())
    }

    /// Minimizes the representative case of one cause and judges the result. The default
    /// shrinks while a run still shows the cause's signature ([`minimize`])
    /// and takes the evidence of the smallest case.
    fn triage(
        &self,
        case: &Self::Case,
        cause: &Cause,
        budget: &Budget,
        cancel: &AtomicBool,
    ) -> Triaged<Self>
    where
        Self: Sized,
    {
        minimize(self, case, cause, budget, cancel)
    }

    /// The evidence of `case` as a finding of `signature`: `run` is its run, or `None` when it
    /// is not run again (it hung once).
    fn evidence(
        &self,
        case: &Self::Case,
        run: Option<Self::Run>,
        signature: &Signature,
    ) -> Self::Evidence;

    /// Writes the target's files of a finding into `dir` (a directory under construction
    /// that the engine commits) and fills the target's fields of `meta` (`finding.json`).
    fn write_finding(
        &self,
        dir: &Path,
        case: &Self::Case,
        evidence: &Self::Evidence,
        meta: &mut FindingMeta,
    ) -> Result<(), pimdiff_atomic::Error>;

    /// One line for people about a finding (the summary's `detail`).
    fn describe(&self, _evidence: &Self::Evidence) -> String {
        String::new()
    }

    /// The edges of the compiler under test that `run` entered, for coverage-guided
    /// generation: ids stable across the runs of one hunt, compared and merged with
    /// [`Edges`](crate::coverage::Edges)'s methods. `None` when not measured (the default;
    /// a PIMCOMP-NN hunt measures them with `--coverage`).
    fn edges(&self, _run: &Self::Run) -> Option<crate::coverage::Edges> {
        None
    }

    /// Line and branch coverage of the compiler's own source over the whole hunt, read once
    /// after the last run (`summary.json`'s `coverage`). `None` when not measured.
    fn coverage(&self) -> Option<crate::coverage::Coverage> {
        None
    }

    /// What only this target reports in `summary.json` (`details`): a pipeline mode, say.
    fn summary_details(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// What the sweep keeps of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    /// The outcome kind, the key of the per-outcome counts.
    pub kind: Kind,
    /// The run's findings: usually none or one; a run that shows several (two pipelines of one
    /// compiler, say) has one signature for each, and each is deduplicated on its own.
    pub signatures: Vec<Signature>,
    /// The abstracted reason of a decline, for the per-reason counts.
    pub decline_reason: Option<String>,
}

impl Observation {
    /// An observation of `kind` without findings.
    pub fn of_kind(kind: Kind) -> Observation {
        Observation {
            kind,
            signatures: Vec::new(),
            decline_reason: None,
        }
    }

    /// An observation of one finding.
    pub fn finding(signature: Signature) -> Observation {
        Observation {
            kind: signature.kind,
            signatures: vec![signature],
            decline_reason: None,
        }
    }
}

/// How much work one call may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Wall-clock limit: past it, work stops with the best result so far (marked cut short).
    /// A result cut short by time may differ between runs; the hunt passes its own end here
    /// so that no work outlives the hunt.
    pub deadline: Option<Instant>,
    /// The deterministic limit: the largest number of runs (checks of a candidate, or
    /// interpretations of an edited program).
    pub max_runs: u64,
}

impl Budget {
    /// At most `max_runs` runs and `time` of wall clock from now.
    pub fn new(max_runs: u64, time: Duration) -> Budget {
        Budget {
            deadline: Instant::now().checked_add(time),
            max_runs,
        }
    }

    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// A minimized and judged case: what [`Target::triage`] returns.
pub struct Triaged<T: Target> {
    /// The smallest case that still shows the cause (the original when nothing smaller did).
    pub case: T::Case,
    /// The final cause: the signature the finding is filed under.
    pub cause: Cause,
    /// What the finding is written from.
    pub evidence: T::Evidence,
    /// How minimization went.
    pub stats: MinimizationStats,
    /// One line per kept reduction, then why it stopped.
    pub log: Vec<String>,
}

/// Runs `case` on `target` and observes it; a panic of the target is a `crash` observation
/// (see [`panic_observation`]).
pub fn observe_case<T: Target>(target: &T, case: &T::Case) -> Observation {
    match panic::catch(|| target.observe(&target.run(case, &StageClock::new()))) {
        Ok(o) => o,
        Err(p) => panic_observation(&p),
    }
}

/// The observation of a panic that escaped a target: a `crash` signed with the abstracted
/// message and the place it happened, so the same panic on different cases is one finding.
pub fn panic_observation(p: &panic::Panic) -> Observation {
    let mut detail = format!("panic: {}", abstract_message(&p.message));
    if let Some(at) = &p.location {
        detail.push_str(&format!(" at {at}"));
    }
    Observation::finding(Signature::new(Kind::Crash, detail))
}

/// The default triage of a target (`Target::triage`): shrinks `case` while a run still shows
/// the cause's signature, then takes the evidence of the smallest case.
pub fn minimize<T: Target>(
    target: &T,
    case: &T::Case,
    cause: &Cause,
    budget: &Budget,
    cancel: &AtomicBool,
) -> Triaged<T> {
    let signature = &cause.signature;
    let passes: Vec<usize> = (0..target.passes()).collect();
    let shrunk = shrink(
        case,
        &passes,
        |pass, c| target.candidates(pass, c),
        &ShrinkOptions {
            max_steps: usize::try_from(budget.max_runs).unwrap_or(usize::MAX),
            deadline: budget.deadline,
            resume: false,
        },
        cancel,
        |c| observe_case(target, c).signatures.contains(signature),
    );
    let run = panic::catch(|| target.run(&shrunk.case, &StageClock::new())).ok();
    let evidence = target.evidence(&shrunk.case, run, signature);
    Triaged::of_shrunk(target, case, shrunk, cause.clone(), evidence)
}

impl<T: Target> Triaged<T> {
    /// The triaged case of a minimization of `original` that gave `shrunk`, judged into
    /// `evidence`: what every target that minimizes with [`shrink`] returns.
    pub fn of_shrunk(
        target: &T,
        original: &T::Case,
        shrunk: Shrunk<T::Case>,
        cause: Cause,
        evidence: T::Evidence,
    ) -> Triaged<T> {
        Triaged {
            stats: MinimizationStats {
                tried: shrunk.tried as u64,
                kept: shrunk.kept as u64,
                original_size: target.size(original),
                minimized_size: target.size(&shrunk.case),
                cut_short: shrunk.cut_short,
            },
            case: shrunk.case,
            cause,
            evidence,
            log: shrunk.log,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_a_crash_signed_by_message_and_place() {
        let p = panic::Panic {
            message: "index 12 out of bounds".into(),
            location: Some("compiler/src/tiling.rs:324".into()),
        };
        assert_eq!(
            panic_observation(&p).signatures,
            vec![Signature::new(
                Kind::Crash,
                "panic: index N out of bounds at compiler/src/tiling.rs:324"
            )]
        );
    }
}
