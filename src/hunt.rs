//! `pimdiff hunt`: parallel, interruptible, reproducible campaigns.
//!
//! A hunt has a seed `S` and an *index space* `k = 0, 1, 2, …`; case `k` is
//! `generate::case_from_seed(cfg, case_seed(S, k))`. A shard `i/n` takes the indices with
//! `k mod n == i`, so CI jobs split one seed space without overlap, and the union of the
//! shards of `--cases N` is exactly the unsharded run of `--cases N`.
//!
//! Cases run in chunks on a rayon pool ([`sweep`]); outcomes are counted and findings are
//! deduplicated by signature, keeping for each signature the case with the *lowest* index.
//! That choice, not the order in which threads happen to finish, decides which case is
//! minimized and saved, so the same seed, case count and build always give the same findings.
//!
//! Stopping (Ctrl-C, SIGTERM, the `--duration` deadline) is cooperative: no new case starts,
//! in-flight cases finish, and what was found so far is minimized, saved and summarized.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::Hash;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::corpus::{self, CorpusError, FindingMeta, MinimizationStats, Origin};
use crate::driver::{check_case, RunConfig, Signature};
use crate::generate::{case_from_seed, GenConfig};
use crate::minimize::{case_size, minimize, MinimizeConfig};

/// The generator seed of case `k` of a hunt seeded with `hunt_seed`.
///
/// SplitMix64 of `hunt_seed + (k + 1)·γ`: a bijection in `k` for a fixed hunt seed (so two
/// indices never share a case seed) that scatters neighbouring seeds and indices.
pub fn case_seed(hunt_seed: u64, k: u64) -> u64 {
    const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut z = hunt_seed.wrapping_add(k.wrapping_add(1).wrapping_mul(GAMMA));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

// ---------------------------------------------------------------------------------------------
// Shards, limits, durations.

/// Shard `index` of `count` (0-based): the indices `k` with `k mod count == index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// The whole index space.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// A shard, checked: `count >= 1` and `index < count`.
    pub fn new(index: u64, count: u64) -> Result<Shard, ShardError> {
        if count == 0 {
            return Err(ShardError::ZeroCount);
        }
        if index >= count {
            return Err(ShardError::IndexTooLarge { index, count });
        }
        Ok(Shard { index, count })
    }

    /// The `j`-th index of this shard (`index + j·count`), `None` past `u64::MAX`.
    pub fn nth(&self, j: u64) -> Option<u64> {
        j.checked_mul(self.count)?.checked_add(self.index)
    }

    /// How many of this shard's indices are below `n`.
    pub fn count_below(&self, n: u64) -> u64 {
        if n <= self.index {
            0
        } else {
            (n - self.index - 1) / self.count + 1
        }
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Why a `--shard` value is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("{0:?} is not of the form i/n (e.g. 0/4)")]
    Syntax(String),
    #[error("the shard count n must be at least 1")]
    ZeroCount,
    #[error(
        "shard index {index} is not below the shard count {count} (shards are numbered 0..n-1)"
    )]
    IndexTooLarge { index: u64, count: u64 },
}

impl FromStr for Shard {
    type Err = ShardError;
    fn from_str(s: &str) -> Result<Shard, ShardError> {
        let syntax = || ShardError::Syntax(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(syntax)?;
        let i: u64 = i.trim().parse().map_err(|_| syntax())?;
        let n: u64 = n.trim().parse().map_err(|_| syntax())?;
        Shard::new(i, n)
    }
}

impl Serialize for Shard {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Shard {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// How long a hunt runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The indices `0..N` (this shard's part of them).
    Cases(u64),
    /// Until the deadline; the index space is unbounded.
    Duration(Duration),
}

/// Why a duration such as `10m` is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("empty duration")]
    Empty,
    #[error("{0:?} is not a duration like 500ms, 30s, 10m, 1h or 1h30m")]
    Syntax(String),
    #[error("{0:?} is too long")]
    Overflow(String),
}

/// Parses `500ms`, `30s`, `10m`, `1h`, or a sequence such as `1h30m`. A bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(DurationError::Empty);
    }
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let syntax = || DurationError::Syntax(s.to_string());
    let overflow = || DurationError::Overflow(s.to_string());
    let mut total_ms: u64 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .ok_or_else(syntax)?;
        if digits == 0 {
            return Err(syntax());
        }
        let value: u64 = rest[..digits].parse().map_err(|_| overflow())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let per_unit_ms = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            _ => return Err(syntax()),
        };
        rest = &rest[unit_len..];
        total_ms = value
            .checked_mul(per_unit_ms)
            .and_then(|v| v.checked_add(total_ms))
            .ok_or_else(overflow)?;
    }
    Ok(Duration::from_millis(total_ms))
}

// ---------------------------------------------------------------------------------------------
// The sweep: run the index space in parallel, count outcomes, keep the first case of each
// signature.

/// What one case did, as far as the sweep cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation<S> {
    /// The outcome kind (`Outcome::kind()`), the key of the per-outcome counts.
    pub kind: &'static str,
    /// The signature, for a finding.
    pub signature: Option<S>,
}

/// The first (lowest-index) case of one signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FirstSeen<S> {
    pub index: u64,
    pub signature: S,
    /// How many cases of the sweep had this signature.
    pub occurrences: u64,
}

/// The result of [`sweep`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sweep<S> {
    /// Cases that ran to completion.
    pub cases_run: u64,
    /// Cases per outcome kind.
    pub counts: BTreeMap<String, u64>,
    /// One entry per unique signature, sorted by index.
    pub firsts: Vec<FirstSeen<S>>,
    /// Whether the sweep stopped because `stop` was set (not because it was done).
    pub interrupted: bool,
    pub elapsed: Duration,
}

/// Progress after each chunk, for a progress bar.
#[derive(Clone, Debug)]
pub struct SweepProgress<'a> {
    pub cases_run: u64,
    /// This shard's total, when the limit is a case count.
    pub total: Option<u64>,
    pub counts: &'a BTreeMap<String, u64>,
    pub unique_findings: usize,
    pub elapsed: Duration,
}

/// Cases per chunk and worker thread: large enough that the per-chunk synchronization is
/// noise, small enough (tens of milliseconds) that a stop request and the progress bar are
/// prompt.
const CHUNK_PER_THREAD: u64 = 64;

/// Runs `check(k)` for this shard's indices within `limit` on `pool`, until done, past the
/// deadline, or `stop` is set (then in-flight cases finish and the rest are not started).
///
/// Deterministic for a case-count limit that is not interrupted: the counts and the first
/// index of each signature do not depend on thread timing.
pub fn sweep<S, F, P>(
    limit: Limit,
    shard: Shard,
    pool: &rayon::ThreadPool,
    stop: &AtomicBool,
    check: F,
    mut progress: P,
) -> Sweep<S>
where
    S: Eq + Hash + Clone + Send,
    F: Fn(u64) -> Observation<S> + Sync,
    P: FnMut(&SweepProgress<'_>),
{
    let start = Instant::now();
    let (total, deadline) = match limit {
        Limit::Cases(n) => (Some(shard.count_below(n)), None),
        Limit::Duration(d) => (None, Some(start + d)),
    };
    let chunk = CHUNK_PER_THREAD * pool.current_num_threads().max(1) as u64;
    let past_deadline = || deadline.is_some_and(|d| Instant::now() >= d);
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut firsts: HashMap<S, (u64, u64)> = HashMap::new();
    let mut cases_run = 0u64;
    let mut next_j = 0u64;
    let mut interrupted = false;
    loop {
        if stop.load(Ordering::SeqCst) {
            interrupted = true;
            break;
        }
        if past_deadline() {
            break;
        }
        let end_j = match total {
            Some(t) if next_j >= t => break,
            Some(t) => (next_j + chunk).min(t),
            None => next_j.saturating_add(chunk),
        };
        let results: Vec<Option<(u64, Observation<S>)>> = pool.install(|| {
            (next_j..end_j)
                .into_par_iter()
                .map(|j| {
                    if stop.load(Ordering::Relaxed) || past_deadline() {
                        return None;
                    }
                    let k = shard.nth(j)?;
                    Some((k, check(k)))
                })
                .collect()
        });
        next_j = end_j;
        for (k, obs) in results.into_iter().flatten() {
            cases_run += 1;
            *counts.entry(obs.kind.to_string()).or_default() += 1;
            if let Some(sig) = obs.signature {
                let e = firsts.entry(sig).or_insert((k, 0));
                e.0 = e.0.min(k);
                e.1 += 1;
            }
        }
        progress(&SweepProgress {
            cases_run,
            total,
            counts: &counts,
            unique_findings: firsts.len(),
            elapsed: start.elapsed(),
        });
        if next_j == u64::MAX {
            break;
        }
    }
    if stop.load(Ordering::SeqCst) {
        interrupted = true;
    }
    let mut firsts: Vec<FirstSeen<S>> = firsts
        .into_iter()
        .map(|(signature, (index, occurrences))| FirstSeen {
            index,
            signature,
            occurrences,
        })
        .collect();
    firsts.sort_by_key(|f| f.index);
    Sweep {
        cases_run,
        counts,
        firsts,
        interrupted,
        elapsed: start.elapsed(),
    }
}

// ---------------------------------------------------------------------------------------------
// The hunt: sweep, then minimize and save the first case of every signature, then summarize.

/// Everything a hunt needs.
#[derive(Clone, Debug)]
pub struct HuntConfig {
    /// The hunt seed `S`.
    pub seed: u64,
    pub limit: Limit,
    /// Worker threads; 0 means one per available core.
    pub jobs: usize,
    pub shard: Shard,
    pub generator: GenConfig,
    pub run: RunConfig,
    pub minimize: MinimizeConfig,
    /// Where `findings/`, `summary.json` and `summary.md` go.
    pub out: PathBuf,
}

/// How a hunt is steered from outside: stop requests (first Ctrl-C), minimization cut short
/// (second Ctrl-C), and whether to draw a progress bar.
#[derive(Clone, Debug, Default)]
pub struct HuntControl {
    /// Set: no new case starts; what was found is minimized, saved and summarized.
    pub stop: Arc<AtomicBool>,
    /// Set: minimizations still running are abandoned and their findings saved unminimized.
    pub abort_minimization: Arc<AtomicBool>,
    /// Draw an indicatif progress bar on stderr (the caller decides: a terminal, no --quiet).
    pub progress: bool,
}

/// Why a hunt could not run or could not save its results (bad set-up, not findings).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HuntError {
    /// `OUT/findings` already holds findings of an earlier hunt.
    #[error("{}: already holds findings of an earlier hunt; choose another --out or remove them", path.display())]
    OutNotEmpty { path: PathBuf },
    /// The worker pool could not be created.
    #[error("cannot start {jobs} worker threads: {message}")]
    Pool { jobs: usize, message: String },
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    #[error(transparent)]
    Save(#[from] corpus::EntryError),
}

/// One unique finding of a hunt, as listed in the summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingSummary {
    /// The finding directory, relative to the hunt's `--out` (`findings/001-...`).
    pub dir: String,
    /// The signature's display form.
    pub signature: String,
    pub outcome: String,
    /// The first (lowest) case index with this signature, and its generator seed.
    pub case_index: u64,
    pub case_seed: u64,
    /// Cases of the hunt with this signature.
    pub occurrences: u64,
    pub minimization: MinimizationStats,
}

/// `summary.json`: the whole hunt in one file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HuntSummary {
    pub pimdiff_version: String,
    pub seed: u64,
    pub shard: Shard,
    /// `--cases N` when the hunt was limited by a case count.
    pub cases_requested: Option<u64>,
    /// `--duration` in seconds when the hunt was limited by time.
    pub duration_requested_s: Option<f64>,
    /// Whether Ctrl-C / SIGTERM ended the hunt early.
    pub interrupted: bool,
    pub cases_run: u64,
    /// Cases per outcome kind.
    pub outcomes: BTreeMap<String, u64>,
    pub findings: Vec<FindingSummary>,
    pub jobs: usize,
    /// Cases per second of the sweep (generation, compilation, interpretation, comparison).
    pub cases_per_second: f64,
    /// Seconds spent running cases, and in total (with minimization and saving).
    pub sweep_time_s: f64,
    pub wall_time_s: f64,
    /// `CompilerUnderTest::describe()`.
    pub compiler: String,
    pub generator: GenConfig,
}

/// The summary files inside `--out`.
pub const SUMMARY_JSON: &str = "summary.json";
pub const SUMMARY_MD: &str = "summary.md";
/// The directory of finding directories inside `--out`.
pub const FINDINGS_DIR: &str = "findings";

/// Runs a hunt: sweep, minimize and save every unique finding, write `summary.json` and
/// `summary.md`. Findings are returned in the summary (they are data, not errors).
pub fn run_hunt(cfg: &HuntConfig, control: &HuntControl) -> Result<HuntSummary, HuntError> {
    let start = Instant::now();
    let findings_dir = cfg.out.join(FINDINGS_DIR);
    prepare_out(&cfg.out, &findings_dir)?;
    let jobs = if cfg.jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        cfg.jobs
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .thread_name(|i| format!("pimdiff-hunt-{i}"))
        .build()
        .map_err(|e| HuntError::Pool {
            jobs,
            message: e.to_string(),
        })?;
    let generator = cfg.generator.sanitized();

    let bar = progress_bar(control.progress, cfg.limit, cfg.shard);
    let result = sweep(
        cfg.limit,
        cfg.shard,
        &pool,
        &control.stop,
        |k| {
            let case = case_from_seed(&generator, case_seed(cfg.seed, k));
            let outcome = check_case(&case, &cfg.run).outcome;
            Observation {
                kind: outcome.kind(),
                signature: outcome.signature(),
            }
        },
        |p| update_bar(&bar, p),
    );
    bar.finish_and_clear();
    let sweep_time = result.elapsed;

    if control.progress && !result.firsts.is_empty() {
        eprintln!("minimizing {} unique finding(s)...", result.firsts.len());
    }
    let saved: Vec<Result<FindingSummary, HuntError>> = pool.install(|| {
        result
            .firsts
            .par_iter()
            .enumerate()
            .map(|(i, first)| save_one(cfg, &generator, control, &findings_dir, i + 1, first))
            .collect()
    });
    let findings = saved.into_iter().collect::<Result<Vec<_>, _>>()?;

    let secs = sweep_time.as_secs_f64();
    let summary = HuntSummary {
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
        interrupted: result.interrupted,
        cases_run: result.cases_run,
        outcomes: result.counts,
        findings,
        jobs,
        cases_per_second: if secs > 0.0 {
            result.cases_run as f64 / secs
        } else {
            0.0
        },
        sweep_time_s: secs,
        wall_time_s: start.elapsed().as_secs_f64(),
        compiler: cfg.run.compiler.describe(),
        generator,
    };
    corpus::write_file_atomic(
        &cfg.out.join(SUMMARY_JSON),
        corpus::to_json_text(&summary).as_bytes(),
    )?;
    corpus::write_file_atomic(
        &cfg.out.join(SUMMARY_MD),
        render_summary(&summary).as_bytes(),
    )?;
    Ok(summary)
}

/// Creates `out` and `out/findings`, removes leftovers of an interrupted earlier run, and
/// refuses a findings directory that already holds findings.
fn prepare_out(out: &Path, findings_dir: &Path) -> Result<(), HuntError> {
    std::fs::create_dir_all(findings_dir).map_err(|source| CorpusError::Io {
        path: findings_dir.to_path_buf(),
        source,
    })?;
    corpus::clean_temp_dirs(out)?;
    corpus::clean_temp_dirs(findings_dir)?;
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

/// Regenerates the first case of one signature, minimizes it (abandoning the minimization on
/// a second Ctrl-C), reruns the result for its bundle and report, and saves the finding.
fn save_one(
    cfg: &HuntConfig,
    generator: &GenConfig,
    control: &HuntControl,
    findings_dir: &Path,
    number: usize,
    first: &FirstSeen<Signature>,
) -> Result<FindingSummary, HuntError> {
    let seed = case_seed(cfg.seed, first.index);
    let original = case_from_seed(generator, seed);
    let original_size = case_size(&original);
    let (case, tried, kept, cut_short) =
        match minimize_abortable(&original, cfg, &first.signature, control) {
            Some(m) => {
                let cut = m
                    .log
                    .last()
                    .is_some_and(|l| l.starts_with("stopped: budget"));
                (m.case, m.tried as u64, m.kept as u64, cut)
            }
            None => (original.clone(), 0, 0, true),
        };
    let mut result = check_case(&case, &cfg.run);
    let (mut case, mut result) = if result.outcome.signature().as_ref() == Some(&first.signature) {
        (case, result)
    } else {
        // Minimization is deterministic, so this only happens with a flaky external compiler:
        // keep the original case, which showed the signature during the sweep.
        result = check_case(&original, &cfg.run);
        (original.clone(), result)
    };
    case.expected = result.oracle.take();
    let report = crate::report::render_report(&case, &result, &cfg.run);
    let signature = result
        .outcome
        .signature()
        .unwrap_or_else(|| first.signature.clone());
    let stats = MinimizationStats {
        tried,
        kept,
        original_size,
        minimized_size: case_size(&case),
        cut_short,
    };
    let meta = FindingMeta {
        format: corpus::META_FORMAT,
        signature: signature.to_string(),
        signature_detail: serde_json::to_value(&signature).unwrap_or_default(),
        outcome: result.outcome.kind().to_string(),
        expect: corpus::Expectation::Signature(signature.to_string()),
        compiler: cfg.run.compiler.describe(),
        pimdiff_version: env!("CARGO_PKG_VERSION").to_string(),
        origin: Some(Origin {
            hunt_seed: cfg.seed,
            case_index: first.index,
            case_seed: seed,
        }),
        generator: serde_json::to_value(generator).unwrap_or_default(),
        minimization: Some(stats.clone()),
    };
    let name = format!("{number:03}-{}", slug(&first.signature.to_string()));
    corpus::save_finding(
        &findings_dir.join(&name),
        &case,
        result.bundle.as_ref(),
        &report,
        &meta,
    )?;
    Ok(FindingSummary {
        dir: format!("{FINDINGS_DIR}/{name}"),
        signature: first.signature.to_string(),
        outcome: first.signature.kind.clone(),
        case_index: first.index,
        case_seed: seed,
        occurrences: first.occurrences,
        minimization: stats,
    })
}

/// Runs the minimizer on its own thread so that a second Ctrl-C can abandon it (the minimizer
/// has no cancellation hook; an abandoned thread ends with the process). `None` when
/// abandoned.
fn minimize_abortable(
    case: &pimdiff_oracle::Case,
    cfg: &HuntConfig,
    signature: &Signature,
    control: &HuntControl,
) -> Option<crate::minimize::Minimized> {
    if control.abort_minimization.load(Ordering::SeqCst) {
        return None;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let (case, run, sig, mcfg) = (
        case.clone(),
        cfg.run.clone(),
        signature.clone(),
        cfg.minimize.clone(),
    );
    std::thread::Builder::new()
        .name("pimdiff-minimize".into())
        .spawn(move || {
            let _ = tx.send(minimize(&case, &run, &sig, &mcfg));
        })
        .ok()?;
    loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(m) => return Some(m),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if control.abort_minimization.load(Ordering::SeqCst) {
                    return None;
                }
            }
        }
    }
}

/// A file-name-safe form of a signature: lowercase letters and digits, runs of anything else
/// as one `-`, at most 48 characters.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 48 {
            break;
        }
    }
    let trimmed = out.trim_end_matches('-');
    if trimmed.is_empty() {
        "finding".to_string()
    } else {
        trimmed.to_string()
    }
}

/// `summary.md`: the summary as a short Markdown document (also printed on stdout).
pub fn render_summary(s: &HuntSummary) -> String {
    use std::fmt::Write;
    let mut md = String::new();
    let _ = writeln!(md, "# pimdiff hunt: seed {}, shard {}", s.seed, s.shard);
    let _ = writeln!(md);
    let limit = match (s.cases_requested, s.duration_requested_s) {
        (Some(n), _) => format!("{n} cases"),
        (None, Some(d)) => format!("{d} s"),
        (None, None) => "-".into(),
    };
    let _ = writeln!(
        md,
        "- limit: {limit}{}",
        if s.interrupted { " (interrupted)" } else { "" }
    );
    let _ = writeln!(md, "- cases run: {}", s.cases_run);
    let _ = writeln!(
        md,
        "- throughput: {:.0} cases/s on {} thread(s); sweep {:.2} s, wall time {:.2} s",
        s.cases_per_second, s.jobs, s.sweep_time_s, s.wall_time_s
    );
    let _ = writeln!(md, "- compiler: {}", s.compiler);
    let _ = writeln!(md, "- pimdiff {}", s.pimdiff_version);
    let _ = writeln!(md);
    let _ = writeln!(md, "## Outcomes");
    let _ = writeln!(md);
    let _ = writeln!(md, "| outcome | cases |");
    let _ = writeln!(md, "|---|---|");
    for (kind, n) in &s.outcomes {
        let _ = writeln!(md, "| {kind} | {n} |");
    }
    let _ = writeln!(md);
    let _ = writeln!(md, "## Unique findings: {}", s.findings.len());
    let _ = writeln!(md);
    if s.findings.is_empty() {
        let _ = writeln!(md, "None.");
    } else {
        let _ = writeln!(
            md,
            "| directory | signature | first case | cases | size (original → minimized) |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|");
        for f in &s.findings {
            let m = &f.minimization;
            let _ = writeln!(
                md,
                "| `{}` | {} | k={} (seed {}) | {} | {} → {}{} |",
                f.dir,
                f.signature.replace('|', "\\|"),
                f.case_index,
                f.case_seed,
                f.occurrences,
                m.original_size,
                m.minimized_size,
                if m.cut_short { " (cut short)" } else { "" }
            );
        }
        let _ = writeln!(md);
        let _ = writeln!(md, "Reproduce one with `pimdiff repro OUT/findings/<dir>`.");
    }
    md
}

fn progress_bar(enabled: bool, limit: Limit, shard: Shard) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    if !enabled {
        return ProgressBar::hidden();
    }
    match limit {
        Limit::Cases(n) => {
            let bar = ProgressBar::with_draw_target(
                Some(shard.count_below(n)),
                ProgressDrawTarget::stderr(),
            );
            if let Ok(style) =
                ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} cases {msg}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        }
        Limit::Duration(_) => {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("{elapsed_precise} {spinner} {pos} cases {msg}")
            {
                bar.set_style(style);
            }
            bar
        }
    }
}

fn update_bar(bar: &indicatif::ProgressBar, p: &SweepProgress<'_>) {
    if bar.is_hidden() {
        return;
    }
    let rate = p.cases_run as f64 / p.elapsed.as_secs_f64().max(1e-9);
    let counts: Vec<String> = p.counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
    bar.set_message(format!(
        "| {rate:.0}/s | {} | unique findings {}",
        counts.join(", "),
        p.unique_findings
    ));
    bar.set_position(p.cases_run);
}
