//! `pimdiff hunt`: parallel, interruptible, reproducible campaigns whose findings survive any
//! kill.
//!
//! A hunt has a seed `S` and an *index space* `k = 0, 1, 2, …`; case `k` is
//! `generate::case_from_seed(cfg, case_seed(S, k))`. A shard `i/n` takes the indices with
//! `k mod n == i`, so CI jobs split one seed space without overlap, and the union of the
//! shards of `--cases N` is exactly the unsharded run of `--cases N`.
//!
//! A hunt runs in three phases:
//!
//! 1. **Sweep** ([`sweep`]): cases run on worker threads under a per-case watchdog (a case
//!    that hangs is a `timeout` finding, its thread abandoned); outcomes are counted and
//!    failing cases bucketed by a cheap key, keeping each bucket's *lowest* index. Each new
//!    bucket is saved to disk at once, unminimized ([`findings`]).
//! 2. **Triage** ([`crate::triage`]): buckets with the same cheap cause merge; one representative
//!    per cause is minimized (and localized); representatives with the same final signature
//!    are one finding. Jobs run on detached threads under the same kind of watchdog ([`jobs`]).
//! 3. **Saving**: each finding's triaged form replaces its unminimized directories; the summary
//!    is written.
//!
//! Which case represents a bucket, and which buckets a finding merges, depend only on the
//! seed, the case count and the build, never on thread timing: the same findings for any
//! `--jobs`.
//!
//! **Time.** `--duration` bounds the whole hunt: the sweep stops early enough to leave a
//! quarter of the duration for triage once there is a finding, and triage is cut at the end
//! (findings it did not reach stay unminimized). A stop request (Ctrl-C, SIGTERM) ends the
//! sweep within [`STOP_GRACE`], gives triage [`STOP_TRIAGE`], and saves; a second request
//! ends triage at once. Threads still stuck in a hung compiler are left behind: the process
//! exit ends them.

mod config;
pub mod declines;
mod early_save;
pub mod grouping;
mod jobs;
mod plan;
pub(crate) mod progress;
mod settle;
pub mod shrink;
mod sweep;
pub mod watchdog;

use std::path::Path;
use std::sync::Arc;

pub use self::config::{
    HuntConfig, HuntControl, HuntError, FINDINGS_DIR, MAX_STUCK, STOP_GRACE, STOP_TRIAGE,
    SUMMARY_JSON, SUMMARY_MD,
};
pub use self::declines::Declines;
pub use self::early_save::slug;
pub use self::plan::{case_seed, parse_duration, DurationError, Limit, Shard, ShardError};
pub use self::sweep::{
    sweep, Checker, FirstSeen, Observation, Sweep, SweepConfig, SweepEnd, SweepEvent, SweepProgress,
};
pub use crate::finding::summary::{render_summary, FindingSummary, HuntSummary};

use self::config::{Timeline, WRITE_RESERVE};
use self::early_save::{Context, Saver};
use self::progress::{progress_bar, update_bar};
use self::settle::settle;
use crate::check::outcome::abstract_message;
use crate::check::outcome::timeout_outcome;
use crate::check::{check_case_staged, CaseResult, Outcome, Signature};
use crate::corpus::{self, CorpusError};
use crate::finding::Kind;
use crate::targets::tensor::generate::GenConfig;

/// Runs a hunt (see the module docs) and writes `summary.json` and `summary.md`. Findings are
/// returned in the summary (they are data, not errors).
pub fn run_hunt(cfg: &HuntConfig, control: &HuntControl) -> Result<HuntSummary, HuntError> {
    let clock = Timeline::new(cfg.limit);
    let findings_dir = cfg.out.join(FINDINGS_DIR);
    prepare_out(&cfg.out, &findings_dir)?;
    let jobs = if cfg.jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        cfg.jobs
    };
    let generator = cfg.generator.sanitized();
    let ctx = Arc::new(Context {
        seed: cfg.seed,
        generator: generator.clone(),
        run: cfg.run.clone(),
        findings_dir,
    });
    let saver = Saver::start(Arc::clone(&ctx));
    let swept = run_sweep(cfg, &ctx, jobs, control, &clock, &saver);
    clock.observe_stop(control);
    let provisional = saver.finish(clock.triage_deadline());
    let findings = settle(cfg, &ctx, jobs, control, &clock, &swept, &provisional)?;
    // A hunt that ends with external compilers still running (stopped, or past hung cases)
    // kills them: they run in process groups of their own.
    crate::compilers::external::kill_running_commands();
    let summary = summarize(cfg, &generator, jobs, &clock, swept, findings);
    pimdiff_atomic::write_file(
        &cfg.out.join(SUMMARY_JSON),
        corpus::to_json_text(&summary).as_bytes(),
    )?;
    pimdiff_atomic::write_file(
        &cfg.out.join(SUMMARY_MD),
        render_summary(&summary).as_bytes(),
    )?;
    Ok(summary)
}

/// Phase 1: the sweep, with every new bucket handed to the saver.
fn run_sweep(
    cfg: &HuntConfig,
    ctx: &Arc<Context>,
    jobs: usize,
    control: &HuntControl,
    clock: &Timeline,
    saver: &Saver,
) -> Sweep<Signature> {
    let bar = progress_bar(control.progress, cfg.limit, cfg.shard);
    let say = |msg: String| {
        if bar.is_hidden() {
            eprintln!("{msg}");
        } else {
            bar.println(msg);
        }
    };
    let c = Arc::clone(ctx);
    let check: Checker<Signature> = Arc::new(move |k, stage_clock| {
        let case = c.case(k);
        observe(&check_case_staged(&case, &c.run, Some(stage_clock)))
    });
    let sweep_cfg = SweepConfig {
        limit: cfg.limit,
        shard: cfg.shard,
        jobs,
        deadline: clock.end.map(|e| e.checked_sub(WRITE_RESERVE).unwrap_or(e)),
        deadline_with_findings: clock.triage_share,
        max_stuck: MAX_STUCK,
        grace: STOP_GRACE,
    };
    let run = &cfg.run;
    let result = sweep(
        &sweep_cfg,
        &control.stop,
        check,
        |stage_clock| stage_clock.overdue(|s| crate::check::stage_limit(run, s)),
        |stage, limit| observe_outcome(&timeout_outcome(stage, limit)),
        |event| {
            match event {
            SweepEvent::Found { index, observation } => {
                if let Some(sig) = &observation.signature {
                    if observation.kind == Kind::InterpreterPanic {
                        say(format!(
                            "INTERPRETER PANIC on case k={index} (a bug in pimdiff itself): {sig}"
                        ));
                    }
                    saver.save(index, sig);
                }
            }
            SweepEvent::Stuck {
                index,
                stage,
                limit,
            } => say(format!(
                "timeout: case k={index} did not finish its {} stage within {:.1} s; its thread is abandoned",
                stage.name(),
                limit.as_secs_f64()
            )),
            SweepEvent::Progress(p) => update_bar(&bar, &p),
        }
        },
    );
    bar.finish_and_clear();
    result
}

/// What the sweep keeps of a check (the signature with its N-version attribution).
fn observe(result: &CaseResult) -> Observation<Signature> {
    Observation {
        signature: crate::triage::pre_signature(result),
        ..observe_outcome(&result.outcome)
    }
}

/// What the sweep keeps of an outcome.
fn observe_outcome(outcome: &Outcome) -> Observation<Signature> {
    Observation {
        kind: outcome.kind(),
        signature: outcome.signature(),
        decline_reason: match outcome {
            Outcome::Unsupported { reason } | Outcome::BogusUnsupported { reason, .. } => {
                Some(abstract_message(reason))
            }
            _ => None,
        },
    }
}

/// Creates `out` and `out/findings`, removes leftovers of an interrupted earlier run, and
/// refuses a findings directory that already holds findings.
fn prepare_out(out: &Path, findings_dir: &Path) -> Result<(), HuntError> {
    std::fs::create_dir_all(findings_dir).map_err(|source| CorpusError::Io {
        path: findings_dir.to_path_buf(),
        source,
    })?;
    pimdiff_atomic::clean_temp(out)?;
    pimdiff_atomic::clean_temp(findings_dir)?;
    let mut entries = std::fs::read_dir(findings_dir).map_err(|source| CorpusError::Io {
        path: findings_dir.to_path_buf(),
        source,
    })?;
    if entries.any(|e| e.is_ok_and(|e| !e.file_name().to_string_lossy().starts_with('.'))) {
        return Err(HuntError::OutNotEmpty {
            path: findings_dir.to_path_buf(),
        });
    }
    Ok(())
}

/// The summary of a finished hunt.
fn summarize(
    cfg: &HuntConfig,
    generator: &GenConfig,
    jobs: usize,
    clock: &Timeline,
    swept: Sweep<Signature>,
    findings: Vec<FindingSummary>,
) -> HuntSummary {
    let count = |k: Kind| swept.counts.get(&k).copied().unwrap_or(0);
    let max_share = cfg
        .max_unsupported
        .unwrap_or_else(|| declines::default_max_share(generator));
    let declines = Declines::judge(
        count(Kind::Unsupported) + count(Kind::BogusUnsupported),
        swept.cases_run,
        max_share,
        swept.decline_reasons.clone(),
    );
    let mut failures = Vec::new();
    if !findings.is_empty() {
        failures.push(format!(
            "{} finding(s), saved under {FINDINGS_DIR}/",
            findings.len()
        ));
    }
    failures.extend(declines.explanation(swept.cases_run));
    let secs = swept.elapsed.as_secs_f64();
    HuntSummary {
        pimdiff_version: env!("CARGO_PKG_VERSION").to_string(),
        seed: cfg.seed,
        shard: cfg.shard,
        cases_requested: match cfg.limit {
            Limit::Cases(n) => Some(n),
            Limit::Duration(_) => None,
        },
        duration_requested_s: match cfg.limit {
            Limit::Cases(_) => None,
            Limit::Duration(d) => Some(d.as_secs_f64()),
        },
        end: swept.end,
        interrupted: swept.end == SweepEnd::Interrupted,
        cases_run: swept.cases_run,
        timeouts: count(Kind::Timeout),
        interpreter_panics: count(Kind::InterpreterPanic),
        abandoned_threads: swept.abandoned,
        unfinished_cases: swept.unfinished,
        outcomes: swept.counts,
        findings,
        declines,
        failures,
        jobs,
        case_timeout_s: cfg.run.case_timeout.as_secs_f64(),
        cases_per_second: if secs > 0.0 {
            swept.cases_run as f64 / secs
        } else {
            0.0
        },
        sweep_time_s: secs,
        wall_time_s: clock.start.elapsed().as_secs_f64(),
        compiler: cfg.run.describe_compiler(),
        generator: generator.clone(),
    }
}
