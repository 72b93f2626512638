//! `pimdiff hunt --target pimcomp-nn`: random networks through the real PIMCOMP-NN compiler,
//! every crash and miscompilation minimized to a small network.
//!
//! Case `k` of seed `S` is the network [`network_from_seed`](crate::targets::pimcomp_nn::network) of
//! `case_seed(S, k)`, compiled in each requested pipeline ([`compile`]: own working tree,
//! timeout, memory watchdog, `time()` pinned to [`case::pin_time`]) and checked with
//! `pimdiff pimcomp`'s check ([`outcome`]). The sweep is the hunt engine's own
//! ([`crate::engine::sweep`]): the same sharding, watchdog, progress bar, stop handling and
//! index-ordered aggregation, so the same seed gives the same findings for any `--jobs`. A
//! case's bucket key is the sorted list of its finding signatures; settling splits buckets
//! into single signatures (each with its lowest case index), minimizes one network per
//! signature ([`minimize`]) and saves it ([`save`]).
//!
//! Files: every new signature is written at once as `findings/k<index>-<slug>/` (its model
//! and outcome, no recompile), so a killed hunt keeps what it met; at the end each finding is
//! written minimized as `findings/<nnn>-<slug>/` and the early directory removed.

pub mod case;
pub mod check;
pub mod compile;
pub mod cores;
pub mod cross;
pub mod files;
pub mod network;
pub mod outcome;
pub mod reductions;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use self::case::CaseContext;
use self::files::{FindingRecord, PimcompHuntSummary};
use self::network::Network;
use crate::engine::progress::{progress_bar, update_bar};
use crate::engine::{
    sweep, Checker, HuntControl, HuntError, Limit, Observation, Shard, Sweep, SweepConfig,
    SweepEvent, FINDINGS_DIR, MAX_STUCK, STOP_GRACE,
};
use crate::finding::Kind;

/// A `--target pimcomp-nn` hunt.
#[derive(Clone, Debug)]
pub struct PimcompHuntConfig {
    pub limit: Limit,
    pub jobs: usize,
    pub shard: Shard,
    pub cases: CaseContext,
    /// `both`, `batch` or `element`, as given.
    pub mode: String,
    /// Time bound of each finding's minimization.
    pub minimize_time: Duration,
    /// Most compiles one minimization may run.
    pub minimize_runs: u64,
    pub out: PathBuf,
}

/// One distinct signature and the first case that showed it.
#[derive(Clone, Debug)]
struct Distinct {
    signature: String,
    index: u64,
    occurrences: u64,
}

/// Runs the hunt; writes `summary.json`, `summary.md` and `findings/`.
pub fn run_pimcomp_hunt(
    cfg: &PimcompHuntConfig,
    control: &HuntControl,
) -> Result<PimcompHuntSummary, HuntError> {
    let start = Instant::now();
    let findings_dir = cfg.out.join(FINDINGS_DIR);
    files::prepare_out(&cfg.out, &findings_dir)?;
    let jobs = if cfg.jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        cfg.jobs
    };
    let end = match cfg.limit {
        Limit::Duration(d) => start.checked_add(d),
        Limit::Cases(_) => None,
    };
    let swept = run_sweep(cfg, jobs, control, end, &findings_dir);
    let distinct = split_buckets(&swept);
    let triage_end = end.map(|e| e.checked_sub(Duration::from_millis(500)).unwrap_or(e));
    let records = settle(cfg, jobs, control, triage_end, &distinct);
    let mut findings = Vec::new();
    for (n, (d, record)) in distinct.iter().zip(records).enumerate() {
        findings.push(files::save_final(
            &cfg.cases,
            &findings_dir,
            n + 1,
            d.index,
            d.occurrences,
            &record,
        )?);
    }
    files::remove_early_dirs(&findings_dir)?;
    crate::compilers::external::kill_running_commands();
    let summary = files::summarize(cfg, jobs, &swept, findings, start.elapsed());
    files::write_summary(&cfg.out, &summary)?;
    Ok(summary)
}

/// Phase 1: the engine's sweep over this target's checker.
fn run_sweep(
    cfg: &PimcompHuntConfig,
    jobs: usize,
    control: &HuntControl,
    end: Option<Instant>,
    findings_dir: &std::path::Path,
) -> Sweep<Vec<String>> {
    let bar = progress_bar(control.progress, cfg.limit, cfg.shard);
    let ctx = Arc::new(cfg.cases.clone());
    let c = Arc::clone(&ctx);
    let check: Checker<Vec<String>> = Arc::new(move |k, _clock| {
        let result = c.run_case(k, false);
        let s = result.summary();
        let mut sigs = s.signatures;
        sigs.sort();
        sigs.dedup();
        Observation {
            kind: s.kind,
            signature: (!sigs.is_empty()).then_some(sigs),
            decline_reason: s.decline,
        }
    });
    let sweep_cfg = SweepConfig {
        limit: cfg.limit,
        shard: cfg.shard,
        jobs,
        deadline: end.map(|e| {
            // Leave time to minimize and save: a third of the duration, at most two minutes.
            let total = e.saturating_duration_since(Instant::now());
            e.checked_sub((total / 3).min(Duration::from_secs(120)))
                .unwrap_or(e)
        }),
        deadline_with_findings: None,
        max_stuck: MAX_STUCK,
        grace: STOP_GRACE,
    };
    let saved = Mutex::new(());
    let result = sweep(
        &sweep_cfg,
        &control.stop,
        check,
        // Each compile enforces its own timeout and memory limit; the check is bounded by
        // the interpreter's step budget.
        |_clock| None,
        |_stage, _limit| Observation::of_kind(Kind::Hang),
        |event| match event {
            SweepEvent::Found { index, observation } => {
                let _guard = saved.lock();
                if let Some(sigs) = &observation.signature {
                    let (network, _) = ctx.network(index);
                    for sig in sigs {
                        if let Err(e) = files::save_early(findings_dir, index, sig, &network) {
                            let msg = format!("warning: cannot save finding {sig} yet: {e}");
                            bar.println(msg);
                        }
                    }
                }
            }
            SweepEvent::Stuck { .. } => {}
            SweepEvent::Progress(p) => update_bar(&bar, &p),
        },
    );
    bar.finish_and_clear();
    result
}

/// One entry per distinct signature with its lowest case index and how many cases showed it,
/// in index order. A bucket's first index is the lowest of its signature set, and every case
/// of a signature lies in some bucket containing it, so the minimum over buckets is exact.
fn split_buckets(swept: &Sweep<Vec<String>>) -> Vec<Distinct> {
    let mut by_sig: BTreeMap<String, Distinct> = BTreeMap::new();
    for f in &swept.firsts {
        for sig in &f.signature {
            let d = by_sig.entry(sig.clone()).or_insert(Distinct {
                signature: sig.clone(),
                index: f.index,
                occurrences: 0,
            });
            d.index = d.index.min(f.index);
            d.occurrences += f.occurrences;
        }
    }
    let mut out: Vec<Distinct> = by_sig.into_values().collect();
    out.sort_by(|a, b| (a.index, &a.signature).cmp(&(b.index, &b.signature)));
    out
}

/// Phase 2: minimizes one network per distinct signature on `jobs` threads (in index order),
/// each within the time bound and the hunt's end.
fn settle(
    cfg: &PimcompHuntConfig,
    jobs: usize,
    control: &HuntControl,
    end: Option<Instant>,
    distinct: &[Distinct],
) -> Vec<FindingRecord> {
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<Option<FindingRecord>>> =
        Mutex::new((0..distinct.len()).map(|_| None).collect());
    let stop = &control.stop;
    let abort = &control.abort_minimization;
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = {
                    let mut n = next.lock().unwrap_or_else(|p| p.into_inner());
                    let i = *n;
                    *n += 1;
                    i
                };
                let Some(d) = distinct.get(i) else { break };
                let hurry =
                    abort.load(Ordering::SeqCst) || end.is_some_and(|e| Instant::now() >= e);
                let record = triage_one(cfg, d, end, hurry, stop);
                results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(record);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|r| r.expect("every index is taken by one worker"))
        .collect()
}

/// Minimizes one finding's network (unless there is no time) and reruns the result, keeping
/// the files of its compiles (both pipelines' for a `cross-mode` finding) for saving.
fn triage_one(
    cfg: &PimcompHuntConfig,
    d: &Distinct,
    end: Option<Instant>,
    hurry: bool,
    stop: &AtomicBool,
) -> FindingRecord {
    let ctx = &cfg.cases;
    let (original, case_seed) = ctx.network(d.index);
    let pipeline = case::finding_pipeline(&d.signature);
    let run = |net: &Network, keep: bool| ctx.run_for_signature(net, case_seed, &d.signature, keep);
    let own = Instant::now().checked_add(cfg.minimize_time);
    let deadline = match (own, end) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let hang = d.signature.starts_with("hang/");
    let (minimized, stats) = if hurry || hang || stop.load(Ordering::SeqCst) {
        let size = original.size();
        (
            original.clone(),
            reductions::Shrunk {
                tried: 0,
                kept: 0,
                before: size,
                after: size,
                cut_short: true,
            },
        )
    } else {
        reductions::minimize(&original, deadline, cfg.minimize_runs, |cand| {
            if stop.load(Ordering::SeqCst) {
                return false;
            }
            run(cand, false).0.has(&d.signature)
        })
    };
    let (outcome, runs) = run(&minimized, true);
    FindingRecord {
        signature: d.signature.clone(),
        pipeline,
        case_seed,
        original,
        minimized,
        stats,
        outcome,
        runs,
    }
}
