//! Phases 2 and 3 of a hunt: from the sweep's buckets to findings on disk.
//!
//! Each bucket (one per signature, with its lowest index) gets its target's cheap cause;
//! buckets merge by cause (`grouping`: ambiguous buckets join the cause one of their
//! explanations signs); one representative per cause is triaged (minimized and judged by the
//! target); representatives whose final causes merge are one finding. Every decision is made
//! in index order, so the findings do not depend on thread timing. Timeouts are neither rerun
//! nor minimized: each rerun of a hung case would cost a thread and the full timeout.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::config::{HuntConfig, HuntControl, HuntError, Timeline, CAUSE_RUNS, MAX_ADAPTED_TRIAGE};
use super::early_save::{Context, Record};
use super::grouping::{final_cause, group_by_cause, Cause, Group};
use super::jobs::{run_jobs, JobLimits};
use super::panic;
use super::sweep::Sweep;
use super::target::{Budget, Target, Triaged};
use crate::finding::{final_name, relative_dir, Kind, MinimizationStats, Signature};
use crate::plan::case_seed;
use crate::summary::FindingSummary;

/// One finding being assembled: its final cause, its buckets (indices into the sweep's
/// firsts, ascending) and the triage of its representative, when there is one.
struct Final<T: Target> {
    cause: Cause,
    buckets: Vec<usize>,
    /// The bucket whose case `triaged` minimized (the saved case's origin).
    representative: usize,
    triaged: Option<Triaged<T>>,
}

/// The share of a finding's triage budget its cause may spend (a quarter: causes are cheap
/// signatures, computed on every bucket before grouping).
const CAUSE_SHARE: u32 = 4;

/// Merges, triages and saves the sweep's buckets; returns the findings in order of their first
/// case index. `provisional` holds the directories saved during the sweep, per signature.
pub(super) fn settle<T: Target>(
    cfg: &HuntConfig,
    ctx: &Arc<Context<T>>,
    jobs: usize,
    control: &HuntControl,
    clock: &Timeline,
    swept: &Sweep,
    provisional: &BTreeMap<Signature, PathBuf>,
) -> Result<Vec<FindingSummary>, HuntError> {
    let should_end = || clock.triage_over(control);
    if control.progress && !swept.firsts.is_empty() {
        eprintln!(
            "triaging {} bucket(s) of failing cases...",
            swept.firsts.len()
        );
    }
    let time = triage_time(cfg, control, swept, jobs);
    let causes = causes(time, ctx, jobs, &should_end, swept);
    let groups = group_by_cause(&causes);
    let triaged = triage_all((time, cfg), ctx, jobs, clock, &should_end, swept, &groups);
    let mut finals: Vec<Final<T>> = Vec::new();
    for (g, t) in groups.into_iter().zip(triaged) {
        let cause = final_cause(&g.cause, t.as_ref().map(|t| &t.cause));
        let key = cause.merge_key();
        match finals.iter_mut().find(|f| f.cause.merge_key() == key) {
            Some(f) => {
                f.buckets.extend(g.buckets);
                f.buckets.sort_unstable();
                if f.triaged.is_none() {
                    f.triaged = t;
                    f.representative = g.representative;
                }
            }
            None => finals.push(Final {
                cause,
                buckets: g.buckets,
                representative: g.representative,
                triaged: t,
            }),
        }
    }
    finals.sort_by_key(|f| f.buckets[0]);
    let mut out = Vec::with_capacity(finals.len());
    for (n, f) in finals.iter().enumerate() {
        out.push(save_final(ctx, clock, swept, provisional, n + 1, f)?);
    }
    // What is left of the sweep's directories belongs to cases outside the hunt's reported
    // range (past the end a hang imposed): removed, so the findings are the same for any jobs.
    for path in provisional.values() {
        pimdiff_atomic::remove_dir(path)?;
    }
    Ok(out)
}

/// The time budget of each finding's triage: `--minimize-time`, or when the hunt adapts it
/// ([`HuntControl::triage_checks`]) at least that many checks at the sweep's speed per worker.
fn triage_time(cfg: &HuntConfig, control: &HuntControl, swept: &Sweep, jobs: usize) -> Duration {
    let speed = (swept.elapsed, swept.cases_run, jobs);
    adapted_time(cfg.minimize.time_budget, control.triage_checks, speed)
}

/// `configured`, or the time of `checks` checks at the sweep's speed per worker (`elapsed` for
/// `cases` cases on `jobs` workers) when that is longer, up to [`MAX_ADAPTED_TRIAGE`].
fn adapted_time(
    configured: Duration,
    checks: Option<u64>,
    (elapsed, cases, jobs): (Duration, u64, usize),
) -> Duration {
    let Some(checks) = checks.filter(|_| cases > 0) else {
        return configured;
    };
    let per_check = elapsed.mul_f64(jobs as f64 / cases as f64);
    let adapted = per_check
        .saturating_mul(u32::try_from(checks).unwrap_or(u32::MAX))
        .min(MAX_ADAPTED_TRIAGE);
    configured.max(adapted)
}

/// The budget of one job: its own time from now, and never past the hunt's triage deadline.
fn job_budget(time: Duration, end: Option<Instant>, max_runs: u64) -> Budget {
    let own = Instant::now().checked_add(time);
    let deadline = match (own, end) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Budget { deadline, max_runs }
}

/// How long one job of `time` may run before it is abandoned: its budget, plus two stage
/// limits of the target (a candidate run in flight when the budget ends), plus slack.
fn job_limit<T: Target>(target: &T, time: Duration) -> Duration {
    let stage = [
        super::watchdog::Stage::Oracle,
        super::watchdog::Stage::Compile,
        super::watchdog::Stage::Run,
    ]
    .into_iter()
    .filter_map(|s| target.stage_limit(s))
    .max()
    .unwrap_or(Duration::from_secs(60));
    time.saturating_add(stage.saturating_mul(2))
        .saturating_add(Duration::from_secs(2))
}

/// The cause of each bucket (its signature, unlocalized, when it was not reached in time,
/// and for timeouts).
fn causes<T: Target>(
    time: Duration,
    ctx: &Arc<Context<T>>,
    jobs: usize,
    should_end: &dyn Fn() -> bool,
    swept: &Sweep,
) -> Vec<Cause> {
    let items: Vec<(u64, Signature)> = swept
        .firsts
        .iter()
        .filter(|f| f.signature.kind != Kind::Timeout)
        .map(|f| (f.index, f.signature.clone()))
        .collect();
    let cancel = Arc::new(AtomicBool::new(false));
    let time = time / CAUSE_SHARE;
    let limits = JobLimits {
        threads: jobs,
        per_job: job_limit(ctx.target.as_ref(), time),
        should_end,
        cancel: Arc::clone(&cancel),
    };
    let c = Arc::clone(ctx);
    let max_runs = CAUSE_RUNS;
    let mut found = run_jobs(items, &limits, move |(k, sig): (u64, Signature)| {
        let budget = job_budget(time, None, max_runs);
        panic::catch(|| c.target.cause(&c.case(k), &sig, &budget, &cancel)).ok()
    })
    .into_iter();
    swept
        .firsts
        .iter()
        .map(|f| {
            let key = || Cause::unlocalized(f.signature.clone());
            if f.signature.kind == Kind::Timeout {
                key()
            } else {
                found.next().flatten().flatten().unwrap_or_else(key)
            }
        })
        .collect()
}

/// Triages each cause's representative (none for timeouts); `None` where triage did not
/// finish in time (or the target panicked in it).
fn triage_all<T: Target>(
    (time, cfg): (Duration, &HuntConfig),
    ctx: &Arc<Context<T>>,
    jobs: usize,
    clock: &Timeline,
    should_end: &dyn Fn() -> bool,
    swept: &Sweep,
    groups: &[Group],
) -> Vec<Option<Triaged<T>>> {
    let items: Vec<(u64, Cause)> = groups
        .iter()
        .filter(|g| g.cause.signature.kind != Kind::Timeout)
        .map(|g| (swept.firsts[g.representative].index, g.cause.clone()))
        .collect();
    let which: Vec<usize> = groups
        .iter()
        .enumerate()
        .filter(|(_, g)| g.cause.signature.kind != Kind::Timeout)
        .map(|(i, _)| i)
        .collect();
    let cancel = Arc::new(AtomicBool::new(false));
    let max_runs = cfg.minimize.max_steps as u64;
    let limits = JobLimits {
        threads: jobs,
        per_job: job_limit(ctx.target.as_ref(), time),
        should_end,
        cancel: Arc::clone(&cancel),
    };
    let (c, end) = (Arc::clone(ctx), clock.triage_deadline());
    let done = run_jobs(items, &limits, move |(k, cause): (u64, Cause)| {
        let budget = job_budget(time, end, max_runs);
        panic::catch(|| c.target.triage(&c.case(k), &cause, &budget, &cancel)).ok()
    });
    let mut out: Vec<Option<Triaged<T>>> = (0..groups.len()).map(|_| None).collect();
    for (i, t) in which.into_iter().zip(done) {
        out[i] = t.flatten();
    }
    out
}

/// Writes one finding as `findings/<number>-<signature>`, then removes the directories the
/// sweep saved for its buckets (or renames one into place when time is up).
fn save_final<T: Target>(
    ctx: &Context<T>,
    clock: &Timeline,
    swept: &Sweep,
    provisional: &BTreeMap<Signature, PathBuf>,
    number: usize,
    f: &Final<T>,
) -> Result<FindingSummary, HuntError> {
    let signature = &f.cause.signature;
    let name = final_name(number, signature);
    let dest = ctx.findings_dir.join(&name);
    let first = &swept.firsts[f.buckets[0]];
    let hurry = clock.triage_deadline().is_some_and(|d| Instant::now() >= d);
    let saved_early = f
        .buckets
        .iter()
        .find_map(|&b| provisional.get(&swept.firsts[b].signature));
    let (stats, detail, suspects) = match (&f.triaged, saved_early) {
        (Some(t), _) => {
            let meta = ctx.write(
                &dest,
                &Record::<T> {
                    case: &t.case,
                    evidence: &t.evidence,
                    signature,
                    // The case saved is the representative's, minimized.
                    index: swept.firsts[f.representative].index,
                    minimization: Some(t.stats.clone()),
                },
            )?;
            (
                t.stats.clone(),
                ctx.target.describe(&t.evidence),
                meta.suspects.len(),
            )
        }
        (None, Some(early)) if hurry => {
            // No time to run it again: the directory saved during the sweep is complete; its
            // `finding.json` takes the finding's signature (the bucket's may be a symptom).
            pimdiff_atomic::rename_dir(early, &dest)?;
            resign(&dest, signature)?;
            let size = ctx.target.size(&ctx.case(first.index));
            (MinimizationStats::unminimized(size), String::new(), 0)
        }
        (None, _) => {
            let (case, evidence) = ctx.recheck(first.index, &first.signature);
            let stats = MinimizationStats::unminimized(ctx.target.size(&case));
            let meta = ctx.write(
                &dest,
                &Record::<T> {
                    case: &case,
                    evidence: &evidence,
                    signature,
                    index: first.index,
                    minimization: Some(stats.clone()),
                },
            )?;
            (stats, ctx.target.describe(&evidence), meta.suspects.len())
        }
    };
    for &b in &f.buckets {
        if let Some(path) = provisional.get(&swept.firsts[b].signature) {
            pimdiff_atomic::remove_dir(path)?;
        }
    }
    Ok(FindingSummary {
        dir: relative_dir(&name).to_string_lossy().into_owned(),
        signature: signature.to_string(),
        outcome: signature.kind,
        case_index: first.index,
        case_seed: case_seed(ctx.seed, first.index),
        occurrences: f.buckets.iter().map(|&b| swept.firsts[b].occurrences).sum(),
        buckets: f
            .buckets
            .iter()
            .map(|&b| swept.firsts[b].signature.to_string())
            .collect(),
        triaged: f.triaged.is_some(),
        localized: f.triaged.as_ref().is_some_and(|t| t.cause.localized),
        suspects,
        minimization: stats,
        detail,
        found_in: Vec::new(),
    })
}

/// Gives the finding directory `dir`'s `finding.json` the signature `signature`, atomically
/// (a directory saved during the sweep under its bucket's signature, filed under its group's).
fn resign(dir: &std::path::Path, signature: &Signature) -> Result<(), HuntError> {
    let path = dir.join(crate::finding::FINDING_JSON);
    let io = |e: &dyn std::fmt::Display| pimdiff_atomic::Error::Io {
        path: path.clone(),
        source: std::io::Error::other(e.to_string()),
    };
    let bytes =
        pimdiff_input::read(&path, pimdiff_input::limits::MAX_META_BYTES).map_err(|e| io(&e))?;
    let mut meta: crate::finding::FindingMeta =
        serde_json::from_slice(&bytes).map_err(|e| io(&e))?;
    if meta.signature == signature.to_string() {
        return Ok(());
    }
    let own = crate::finding::FindingMeta::new(signature, String::new());
    meta.signature = own.signature;
    meta.signature_detail = own.signature_detail;
    meta.outcome = own.outcome;
    pimdiff_atomic::write_file(&path, crate::finding::to_json_text(&meta).as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{write_finding, FindingMeta};

    #[test]
    fn the_triage_time_adapts_to_a_slow_compiler_only_when_asked() {
        let ten = Duration::from_secs(10);
        // 200 cases in 100 s on 2 workers: 1 s a check; 150 checks take 150 s.
        let slow = (Duration::from_secs(100), 200, 2);
        assert_eq!(adapted_time(ten, Some(150), slow), Duration::from_secs(150));
        // A fast compiler keeps the configured time; an explicit time is kept as given.
        let fast = (Duration::from_secs(1), 3000, 2);
        assert_eq!(adapted_time(ten, Some(150), fast), ten);
        assert_eq!(adapted_time(ten, None, slow), ten);
        // Nothing ran: nothing to measure.
        assert_eq!(adapted_time(ten, Some(150), (Duration::ZERO, 0, 2)), ten);
        // A compiler that takes a minute a case is capped.
        let glacial = (Duration::from_secs(600), 10, 1);
        assert_eq!(adapted_time(ten, Some(150), glacial), MAX_ADAPTED_TRIAGE);
    }

    #[test]
    fn a_directory_renamed_into_place_takes_its_findings_signature() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("001-x");
        let bucket = Signature::new(Kind::Mismatch, "channels all, pixels all, batch all");
        write_finding(&dir, FindingMeta::new(&bucket, "c".into()), |_, _| Ok(())).unwrap();
        let cause = Signature::new(Kind::Mismatch, "ld of uninitialised global memory");
        resign(&dir, &cause).unwrap();
        let text = std::fs::read_to_string(dir.join("finding.json")).unwrap();
        let meta: FindingMeta = serde_json::from_str(&text).unwrap();
        assert_eq!(meta.signature, cause.to_string());
        assert_eq!(meta.signature_detail, serde_json::to_value(&cause).unwrap());
        // What replay must observe stays the saved case's own outcome.
        assert_eq!(meta.expect.to_string(), format!("signature: {bucket}"));
    }
}
