//! Which cases a hunt runs: the case seed of index `k`, shards of the index space, and the
//! limit (a case count or a duration).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

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
