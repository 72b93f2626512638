//! The one hunt engine: parallel, interruptible, reproducible campaigns over any [`Target`],
//! whose findings survive any kill.
//!
//! A hunt has a seed `S` and an *index space* `k = 0, 1, 2, …`; case `k` is the target's case
//! of `case_seed(S, k)`. A shard `i/n` takes the indices with `k mod n == i`, so CI jobs split
//! one seed space without overlap, and the union of the shards of `--cases N` is exactly the
//! unsharded run of `--cases N`.
//!
//! A hunt runs in three phases:
//!
//! 1. **Sweep** ([`sweep`]): cases run on worker threads under a per-stage watchdog (a case
//!    that hangs is a `timeout` finding, its thread abandoned; a panic of the target is a
//!    `crash` finding); outcomes are counted and failing cases bucketed by signature, keeping
//!    each bucket's *lowest* index. Each new bucket is saved to disk at once, unminimized
//!    (`early_save`).
//! 2. **Triage** (`settle`): buckets with the same cheap cause merge ([`grouping`]); one
//!    representative per cause is minimized ([`shrink`]) and judged by the target; causes
//!    with the same final signature are one finding. Jobs run on detached threads under the
//!    same kind of watchdog (`jobs`).
//! 3. **Saving**: each finding's triaged form replaces its unminimized directories; the summary
//!    is written ([`crate::summary`]).
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
mod early_save;
pub mod grouping;
pub mod guided;
mod jobs;
pub mod panic;
pub(crate) mod progress;
mod settle;
pub mod shrink;
mod sweep;
pub mod target;
pub mod watchdog;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub use self::config::{
    HuntConfig, HuntControl, HuntError, CAUSE_RUNS, FINDINGS_DIR, MAX_ADAPTED_TRIAGE, MAX_STUCK,
    STOP_GRACE, STOP_TRIAGE, SUMMARY_JSON, SUMMARY_MD,
};
pub use self::guided::{load_corpus, CorpusError, Guidance, GuidedTarget};
pub use self::shrink::MinimizeConfig;
pub use self::sweep::{sweep, Checker, FirstSeen, Sweep, SweepConfig, SweepEvent, SweepProgress};
pub use self::target::{Budget, Observation, Target, Triaged};
pub use crate::coverage::Edges;
pub use crate::plan::{case_seed, parse_duration, DurationError, Limit, Shard, ShardError};
pub use crate::summary::{render_summary, Declines, FindingSummary, HuntSummary, SweepEnd};

use self::config::{Timeline, WRITE_RESERVE};
use self::early_save::{Context, Saver};
use self::progress::{progress_bar, update_bar};
use self::settle::settle;
use self::watchdog::Stage;
use crate::finding::{to_json_text, Kind, Signature};

/// Runs a hunt of `target` (see the module docs) and writes `summary.json` and `summary.md`.
/// Findings are returned in the summary (they are data, not errors).
pub fn run_hunt<T: Target>(
    cfg: &HuntConfig,
    target: Arc<T>,
    control: &HuntControl,
) -> Result<HuntSummary, HuntError> {
    hunt(cfg, target, control, None)
}

/// Runs a coverage-guided hunt of `target` ([`guided`]): `guidance.corpus` (a `--corpus`,
/// see [`guided::load_corpus`]) is replayed first, and the corpus grows under `OUT/corpus/`.
/// The summary's `details.guided` holds the corpus statistics.
pub fn run_guided_hunt<T: guided::GuidedTarget>(
    cfg: &HuntConfig,
    target: Arc<T>,
    control: &HuntControl,
    guidance: guided::Guidance<T::Case>,
) -> Result<HuntSummary, HuntError> {
    let corpus_dir = cfg.out.join(guided::CORPUS_DIR);
    prepare_corpus(&corpus_dir)?;
    let corpus = guided::Corpus::new(
        Arc::clone(&target),
        cfg.seed,
        cfg.shard,
        corpus_dir,
        guidance,
    );
    hunt(cfg, target, control, Some(Arc::new(corpus)))
}

/// The hunt, guided when `guide` makes a guide.
fn hunt<T: Target>(
    cfg: &HuntConfig,
    target: Arc<T>,
    control: &HuntControl,
    guide: Option<Arc<dyn guided::Guide<T>>>,
) -> Result<HuntSummary, HuntError> {
    let clock = Timeline::new(cfg.limit);
    let findings_dir = cfg.out.join(FINDINGS_DIR);
    prepare_out(&cfg.out, &findings_dir)?;
    let scope = crate::process::Scope::enter();
    let jobs = if cfg.jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        cfg.jobs
    };
    let ctx = Arc::new(Context {
        target,
        seed: cfg.seed,
        findings_dir,
        guide,
    });
    let saver = Saver::start(Arc::clone(&ctx));
    let swept = run_sweep(cfg, &ctx, jobs, control, &clock, &saver);
    clock.observe_stop(control);
    let provisional = saver.finish(clock.triage_deadline());
    let findings = settle(cfg, &ctx, jobs, control, &clock, &swept, &provisional)?;
    // A hunt that ends with external compilers still running (stopped, or past hung cases)
    // kills them: they run in process groups of their own. Only its own: another hunt in the
    // same process (a library user's, a parallel test) keeps its compilers.
    crate::process::kill_scope(scope.id());
    let mut summary = summarize(cfg, ctx.target.as_ref(), jobs, &clock, swept, findings);
    if let Some(g) = &ctx.guide {
        summary.details = with_guided(std::mem::take(&mut summary.details), g.stats());
    }
    pimdiff_atomic::write_file(
        &cfg.out.join(SUMMARY_JSON),
        to_json_text(&summary).as_bytes(),
    )?;
    pimdiff_atomic::write_file(
        &cfg.out.join(SUMMARY_MD),
        render_summary(&summary).as_bytes(),
    )?;
    Ok(summary)
}

/// Phase 1: the sweep, with every new bucket handed to the saver.
fn run_sweep<T: Target>(
    cfg: &HuntConfig,
    ctx: &Arc<Context<T>>,
    jobs: usize,
    control: &HuntControl,
    clock: &Timeline,
    saver: &Saver,
) -> Sweep {
    let bar = progress_bar(control.progress, cfg.limit, cfg.shard);
    let say = |msg: String| {
        if bar.is_hidden() {
            eprintln!("{msg}");
        } else {
            bar.println(msg);
        }
    };
    let c = Arc::clone(ctx);
    let check: Checker = match &ctx.guide {
        Some(g) => {
            let g = Arc::clone(g);
            Arc::new(move |k, stage_clock| g.check(k, stage_clock))
        }
        None => Arc::new(move |k, stage_clock| {
            let case = c.case(k);
            match panic::catch(|| c.target.observe(&c.target.run(&case, stage_clock))) {
                Ok(o) => o,
                Err(p) => target::panic_observation(&p),
            }
        }),
    };
    let sweep_cfg = SweepConfig {
        limit: cfg.limit,
        shard: cfg.shard,
        jobs,
        deadline: clock.end.map(|e| e.checked_sub(WRITE_RESERVE).unwrap_or(e)),
        deadline_with_findings: clock.triage_share,
        max_stuck: MAX_STUCK,
        grace: STOP_GRACE,
    };
    let target = Arc::clone(&ctx.target);
    let result = sweep(
        &sweep_cfg,
        &control.stop,
        check,
        |stage_clock| stage_clock.overdue(|s| target.stage_limit(s).unwrap_or(Duration::MAX)),
        |stage, _limit| Observation::finding(timeout_signature(stage)),
        |event| {
            match event {
            SweepEvent::Found {
                index,
                signature,
                observation: _,
            } => {
                if signature.kind == Kind::InterpreterPanic {
                    say(format!(
                        "INTERPRETER PANIC on case k={index} (a bug in pimdiff itself): {signature}"
                    ));
                }
                saver.save(index, signature);
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

/// The signature of a case the watchdog abandoned in `stage`.
pub fn timeout_signature(stage: Stage) -> Signature {
    Signature::new(Kind::Timeout, stage.name())
}

/// Creates `out` and `out/findings`, removes leftovers of an interrupted earlier run, and
/// refuses a findings directory that already holds findings.
fn prepare_out(out: &Path, findings_dir: &Path) -> Result<(), HuntError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| pimdiff_atomic::Error::Io { path, source }
    };
    std::fs::create_dir_all(findings_dir).map_err(io(findings_dir))?;
    pimdiff_atomic::clean_temp(out)?;
    pimdiff_atomic::clean_temp(findings_dir)?;
    let mut entries = std::fs::read_dir(findings_dir).map_err(io(findings_dir))?;
    if entries.any(|e| e.is_ok_and(|e| !e.file_name().to_string_lossy().starts_with('.'))) {
        return Err(HuntError::OutNotEmpty {
            path: findings_dir.to_path_buf(),
        });
    }
    Ok(())
}

/// Creates a guided hunt's corpus directory, removes leftovers of interrupted writes, and
/// refuses one that already holds entries (they would be taken for this hunt's).
fn prepare_corpus(dir: &Path) -> Result<(), HuntError> {
    std::fs::create_dir_all(dir).map_err(|source| pimdiff_atomic::Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    pimdiff_atomic::clean_temp(dir)?;
    if !pimdiff_atomic::absent_or_empty(dir)? {
        return Err(HuntError::CorpusNotEmpty {
            path: dir.to_path_buf(),
        });
    }
    Ok(())
}

/// A target's summary details with a guided hunt's statistics beside them, under `guided`
/// (a target's object of details keeps its keys; anything else moves under `target`).
fn with_guided(details: serde_json::Value, stats: serde_json::Value) -> serde_json::Value {
    let mut map = match details {
        serde_json::Value::Object(m) => m,
        serde_json::Value::Null => serde_json::Map::new(),
        other => serde_json::Map::from_iter([("target".to_string(), other)]),
    };
    map.insert("guided".to_string(), stats);
    serde_json::Value::Object(map)
}

/// The summary of a finished hunt.
fn summarize<T: Target>(
    cfg: &HuntConfig,
    target: &T,
    jobs: usize,
    clock: &Timeline,
    swept: Sweep,
    findings: Vec<FindingSummary>,
) -> HuntSummary {
    let count = |k: Kind| swept.counts.get(&k).copied().unwrap_or(0);
    let max_share = cfg
        .max_unsupported
        .or(target.max_unsupported_share())
        .unwrap_or(1.0);
    let declines = Declines::judge(
        count(Kind::Unsupported) + count(Kind::BogusUnsupported),
        swept.cases_run,
        max_share,
        swept.decline_reasons.clone(),
    );
    let secs = swept.elapsed.as_secs_f64();
    let case_timeout = [Stage::Oracle, Stage::Compile, Stage::Run]
        .into_iter()
        .filter_map(|s| target.stage_limit(s))
        .min()
        .unwrap_or(Duration::ZERO);
    let mut summary = HuntSummary {
        pimdiff_version: env!("CARGO_PKG_VERSION").to_string(),
        target: target.name().to_string(),
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
        failures: Vec::new(),
        jobs,
        case_timeout_s: case_timeout.as_secs_f64(),
        cases_per_second: if secs > 0.0 {
            swept.cases_run as f64 / secs
        } else {
            0.0
        },
        sweep_time_s: secs,
        wall_time_s: clock.start.elapsed().as_secs_f64(),
        compiler: target.compiler(),
        generator: target.generator(),
        details: target.summary_details(),
        merged_from: Vec::new(),
        coverage: target.coverage(),
    };
    summary.failures = summary.failure_reasons();
    summary
}
