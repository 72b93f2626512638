//! Whether a hunt's declined cases are more than its generator explains.
//!
//! A compiler that declines a case is not wrong by itself, so one decline is never a finding
//! unless its numbers are refuted (`bogus-unsupported`). But a compiler that declines *too
//! many* cases has stopped compiling: a hunt must not pass it, and cannot give it a verdict
//! either (`Verdict::NoVerdict`, exit 4, unless there are findings). A generator may overcommit
//! a known share of cases on purpose (the tensor target's `overcommit_ratio`), and a few more do
//! not fit by themselves (large depthwise cases, say); so a target names the share it allows
//! by default (`Target::max_unsupported_share`: the tensor target's is its overcommit ratio
//! plus [`DEFAULT_MARGIN`]), and `--max-unsupported R` sets the share instead. Declined means
//! `unsupported` or `bogus-unsupported`.
//!
//! Short hunts are judged with the noise of chance in mind: the hunt does not pass when the declined
//! count exceeds `R·n` by more than three binomial standard deviations `3·√(n·R·(1−R))`, so a
//! 20-case hunt is not failed by two unlucky overcommitted cases, while a compiler that
//! declines everything fails even a 10-case hunt.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The share of declined cases allowed above the generator's overcommit ratio. The default
/// generator overcommits 3 % of its cases and the in-repo compiler declines about 1.3 %; 5
/// points leave room for a compiler without the thesis's optimizations (it needs more arrays)
/// and for generator settings that make tight cases more common.
pub const DEFAULT_MARGIN: f64 = 0.05;

/// The declines of a hunt and the verdict on them (`summary.json`'s `declines`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Declines {
    /// Cases declined (`unsupported` and `bogus-unsupported`).
    pub declined: u64,
    /// `declined / cases run` (0 when nothing ran).
    pub share: f64,
    /// The share allowed (`--max-unsupported`, or the default).
    pub max_share: f64,
    /// The largest declined count that passes for this many cases.
    pub allowed: u64,
    /// Whether the hunt does not pass because of its declines.
    pub exceeded: bool,
    /// Declined cases per reason, with the numbers abstracted (`N needed, N available`).
    pub by_reason: BTreeMap<String, u64>,
}

impl Declines {
    /// The verdict on `declined` of `cases` with `max_share` allowed.
    pub fn judge(
        declined: u64,
        cases: u64,
        max_share: f64,
        by_reason: BTreeMap<String, u64>,
    ) -> Declines {
        let r = max_share.clamp(0.0, 1.0);
        let n = cases as f64;
        let allowed = (r * n + 3.0 * (n * r * (1.0 - r)).sqrt()).floor() as u64;
        Declines {
            declined,
            share: if cases == 0 { 0.0 } else { declined as f64 / n },
            max_share: r,
            allowed,
            exceeded: declined > allowed,
            by_reason,
        }
    }

    /// One sentence on why the hunt does not pass (when it does not).
    pub fn explanation(&self, cases: u64) -> Option<String> {
        self.exceeded.then(|| {
            format!(
                "the compiler declined {} of {cases} cases ({:.1} %), more than the {:.1} % the generator's overcommit explains (at most {} of {cases} by chance): it does not compile cases it should. If these declines are expected, pass --max-unsupported with a larger share.",
                self.declined,
                100.0 * self.share,
                100.0 * self.max_share,
                self.allowed
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chance_is_allowed_and_declining_everything_is_not() {
        let judge = |d, n, r| Declines::judge(d, n, r, BTreeMap::new());
        // 8 % of 20 cases: 1.6 expected, 3σ ≈ 3.6 more.
        assert_eq!(judge(5, 20, 0.08).allowed, 5);
        assert!(!judge(5, 20, 0.08).exceeded);
        assert!(judge(6, 20, 0.08).exceeded);
        assert!(judge(10, 10, 0.08).exceeded);
        // 20,000 cases at 8 %: 1600 + 3·38.4.
        assert_eq!(judge(0, 20_000, 0.08).allowed, 1715);
        assert!(!judge(265, 20_000, 0.08).exceeded);
        // Exact limits at the ends of the range.
        assert!(judge(1, 100, 0.0).exceeded);
        assert!(!judge(100, 100, 1.0).exceeded);
        assert!(!judge(0, 0, 0.08).exceeded);
        assert_eq!(judge(3, 0, 0.5).share, 0.0);
    }
}
