//! Phases 2 and 3 of a hunt: from the sweep's buckets to findings on disk.
//!
//! Buckets (one per cheap key, each with its lowest index) are merged by their cause (see
//! `triage::grouping`: ambiguous buckets join the cause one of their explanations signs);
//! one representative per cause is triaged; representatives whose final causes merge are one
//! finding. Every decision is made in index order,
//! so the findings do not depend on thread timing. Timeouts are neither rerun nor minimized:
//! each rerun of a hung case would cost a thread and the full timeout.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::config::{HuntConfig, HuntControl, HuntError, Timeline, FINDINGS_DIR};
use super::early_save::{final_name, Context, Record};
use super::jobs::{run_jobs, JobLimits};
use super::plan::case_seed;
use super::sweep::Sweep;
use crate::check::{check_case, Signature};
use crate::corpus::MinimizationStats;
use crate::engine::grouping::{final_cause, group_by_cause, merge_key, Group};
use crate::engine::shrink::case_size;
use crate::finding::summary::FindingSummary;
use crate::finding::Kind;
use crate::triage::{self, Budget, Cause, Triaged};

/// One finding being assembled: its final signature, its buckets (indices into the sweep's
/// firsts, ascending) and the triage of its representative, when there is one.
struct Final {
    signature: Signature,
    localized: bool,
    buckets: Vec<usize>,
    /// The bucket whose case `triaged` minimized (the saved case's origin).
    representative: usize,
    triaged: Option<Triaged>,
}

/// Merges, triages and saves the sweep's buckets; returns the findings in order of their first
/// case index. `provisional` holds the directories saved during the sweep, per bucket key.
pub(super) fn settle(
    cfg: &HuntConfig,
    ctx: &Arc<Context>,
    jobs: usize,
    control: &HuntControl,
    clock: &Timeline,
    swept: &Sweep<Signature>,
    provisional: &BTreeMap<Signature, PathBuf>,
) -> Result<Vec<FindingSummary>, HuntError> {
    let should_end = || clock.triage_over(control);
    if control.progress && !swept.firsts.is_empty() {
        eprintln!(
            "triaging {} bucket(s) of failing cases...",
            swept.firsts.len()
        );
    }
    let causes = causes(cfg, ctx, jobs, &should_end, swept);
    let groups = group_by_cause(&causes);
    let triaged = triage_all(cfg, ctx, jobs, clock, &should_end, swept, &groups);
    let mut finals: Vec<Final> = Vec::new();
    for (g, t) in groups.into_iter().zip(triaged) {
        let (signature, localized) = final_cause(&g.cause, t.as_ref());
        let key = merge_key(&signature, localized);
        match finals
            .iter_mut()
            .find(|f| merge_key(&f.signature, f.localized) == key)
        {
            Some(f) => {
                f.buckets.extend(g.buckets);
                f.buckets.sort_unstable();
                if f.triaged.is_none() {
                    f.triaged = t;
                    f.representative = g.representative;
                }
            }
            None => finals.push(Final {
                signature,
                localized,
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

/// The cause of each bucket (its key when it was not reached in time, and for timeouts).
fn causes(
    cfg: &HuntConfig,
    ctx: &Arc<Context>,
    jobs: usize,
    should_end: &dyn Fn() -> bool,
    swept: &Sweep<Signature>,
) -> Vec<Cause> {
    let items: Vec<(u64, Signature)> = swept
        .firsts
        .iter()
        .filter(|f| f.signature.kind != Kind::Timeout)
        .map(|f| (f.index, f.signature.clone()))
        .collect();
    let cancel = Arc::new(AtomicBool::new(false));
    let time = cfg.minimize.time_budget / 4;
    let limits = JobLimits {
        threads: jobs,
        per_job: time + 2 * cfg.run.case_timeout,
        should_end,
        cancel: Arc::clone(&cancel),
    };
    let c = Arc::clone(ctx);
    let mut found = run_jobs(items, &limits, move |(k, _sig): (u64, Signature)| {
        let case = c.case(k);
        let result = check_case(&case, &c.run);
        let budget = Budget {
            deadline: Instant::now().checked_add(time),
            max_runs: Budget::CAUSE_RUNS,
        };
        triage::cause(&case, &result, &c.run, &budget, &cancel)
    })
    .into_iter();
    swept
        .firsts
        .iter()
        .map(|f| {
            let key = || Cause {
                signature: f.signature.clone(),
                localized: false,
                also: Vec::new(),
            };
            if f.signature.kind == Kind::Timeout {
                key()
            } else {
                found.next().flatten().unwrap_or_else(key)
            }
        })
        .collect()
}

/// Triages each cause's representative (none for timeouts); `None` where triage did not
/// finish in time.
fn triage_all(
    cfg: &HuntConfig,
    ctx: &Arc<Context>,
    jobs: usize,
    clock: &Timeline,
    should_end: &dyn Fn() -> bool,
    swept: &Sweep<Signature>,
    reps: &[Group],
) -> Vec<Option<Triaged>> {
    let items: Vec<(usize, u64)> = reps
        .iter()
        .enumerate()
        .filter(|(_, g)| g.cause.signature.kind != Kind::Timeout)
        .map(|(i, g)| (i, swept.firsts[g.representative].index))
        .collect();
    let which: Vec<usize> = items.iter().map(|&(i, _)| i).collect();
    let cancel = Arc::new(AtomicBool::new(false));
    let time = cfg.minimize.time_budget;
    let max_runs = cfg.minimize.max_steps as u64;
    let limits = JobLimits {
        threads: jobs,
        per_job: time + cfg.run.case_timeout + Duration::from_secs(2),
        should_end,
        cancel: Arc::clone(&cancel),
    };
    let (c, end) = (Arc::clone(ctx), clock.triage_deadline());
    let done = run_jobs(items, &limits, move |(_, k): (usize, u64)| {
        let own = Instant::now().checked_add(time);
        let deadline = match (own, end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let budget = Budget { deadline, max_runs };
        triage::triage(&c.case(k), &c.run, &budget, &cancel)
    });
    let mut out: Vec<Option<Triaged>> = (0..reps.len()).map(|_| None).collect();
    for (i, t) in which.into_iter().zip(done) {
        out[i] = t;
    }
    out
}

/// Writes one finding as `findings/<number>-<signature>`, then removes the directories the
/// sweep saved for its buckets (or renames one into place when time is up).
fn save_final(
    ctx: &Context,
    clock: &Timeline,
    swept: &Sweep<Signature>,
    provisional: &BTreeMap<Signature, PathBuf>,
    number: usize,
    f: &Final,
) -> Result<FindingSummary, HuntError> {
    let name = final_name(number, &f.signature);
    let dest = ctx.findings_dir.join(&name);
    let first = &swept.firsts[f.buckets[0]];
    let hurry = clock.triage_deadline().is_some_and(|d| Instant::now() >= d);
    let saved_early = f
        .buckets
        .iter()
        .find_map(|&b| provisional.get(&swept.firsts[b].signature));
    let stats = match (&f.triaged, saved_early) {
        (Some(t), _) => {
            ctx.write(
                &dest,
                &Record {
                    case: &t.case,
                    result: &t.result,
                    signature: &f.signature,
                    // The case saved is the representative's, minimized.
                    index: swept.firsts[f.representative].index,
                    minimization: Some(stats_of(t)),
                    suspects: &t.suspects,
                    triaged: true,
                },
            )?;
            stats_of(t)
        }
        (None, Some(early)) if hurry => {
            // No time to check it again: the directory saved during the sweep is complete.
            pimdiff_atomic::rename_dir(early, &dest)?;
            unminimized(case_size(&ctx.case(first.index)))
        }
        (None, _) => {
            let (case, result) = ctx.recheck(first.index, &first.signature);
            let stats = unminimized(case_size(&case));
            ctx.write(
                &dest,
                &Record {
                    case: &case,
                    result: &result,
                    signature: &f.signature,
                    index: first.index,
                    minimization: Some(stats.clone()),
                    suspects: &[],
                    triaged: false,
                },
            )?;
            stats
        }
    };
    for &b in &f.buckets {
        if let Some(path) = provisional.get(&swept.firsts[b].signature) {
            pimdiff_atomic::remove_dir(path)?;
        }
    }
    Ok(FindingSummary {
        dir: format!("{FINDINGS_DIR}/{name}"),
        signature: f.signature.to_string(),
        outcome: f.signature.kind.to_string(),
        case_index: first.index,
        case_seed: case_seed(ctx.seed, first.index),
        occurrences: f.buckets.iter().map(|&b| swept.firsts[b].occurrences).sum(),
        buckets: f
            .buckets
            .iter()
            .map(|&b| swept.firsts[b].signature.to_string())
            .collect(),
        triaged: f.triaged.is_some(),
        localized: f.triaged.as_ref().is_some_and(|t| t.localized),
        suspects: f.triaged.as_ref().map_or(0, |t| t.suspects.len()),
        minimization: stats,
    })
}

fn stats_of(t: &Triaged) -> MinimizationStats {
    let m = &t.minimization;
    MinimizationStats {
        tried: m.tried,
        kept: m.kept,
        original_size: m.original_size,
        minimized_size: m.minimized_size,
        cut_short: t.cut_short,
    }
}

/// The statistics of a case saved without minimization.
fn unminimized(size: u64) -> MinimizationStats {
    MinimizationStats {
        tried: 0,
        kept: 0,
        original_size: size,
        minimized_size: size,
        cut_short: true,
    }
}
