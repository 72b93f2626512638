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
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

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
    #[error("shard index {index} is not below the shard count {count} (shards are numbered 0..n-1)")]
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
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
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
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(syntax)?;
        if digits == 0 {
            return Err(syntax());
        }
        let value: u64 = rest[..digits].parse().map_err(|_| overflow())?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let per_unit_ms = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            _ => return Err(syntax()),
        };
        rest = &rest[unit_len..];
        total_ms = value.checked_mul(per_unit_ms).and_then(|v| v.checked_add(total_ms)).ok_or_else(overflow)?;
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
        .map(|(signature, (index, occurrences))| FirstSeen { index, signature, occurrences })
        .collect();
    firsts.sort_by_key(|f| f.index);
    Sweep { cases_run, counts, firsts, interrupted, elapsed: start.elapsed() }
}
