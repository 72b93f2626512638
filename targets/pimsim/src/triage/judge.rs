//! Judging an edited program: rerun it on the failing case and on every probe input, and say
//! whether the edit repaired the failure, improved it, or did nothing. Shared by the repair
//! search over instructions (`localize`) and over the crossbar export (`crossbar_repairs`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use ndarray::ArrayD;
use pimdiff_isa::bundle::Bundle;
use pimdiff_oracle::Case;

use super::values::Probe;
use crate::check::outcome::Outcome;
use crate::check::{run_bundle, RunConfig};

/// The failing run that localization tries to repair.
pub(crate) struct Failure<'a> {
    pub case: &'a Case,
    pub bundle: &'a Bundle,
    pub oracle: &'a ArrayD<i32>,
    pub outcome: &'a Outcome,
    /// The machine's (wrong) output, for a mismatch.
    pub output: Option<&'a ArrayD<i32>>,
    /// The same case with other inputs (see [`super::values::probes`]).
    pub probes: Vec<Probe>,
}

/// What an edit did to the failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// The output equals the oracle's.
    Repaired,
    /// `fixed` of the `of` differing elements became right; none went wrong.
    Improved { fixed: usize, of: usize },
    /// No element became right and none went wrong, but the wrong elements moved closer to
    /// the oracle's (their absolute errors shrank by `gain` in all). Too weak to name a
    /// suspect; a candidate part of a joint repair, where one bug at several sites adds up in
    /// the same elements (see `localize`).
    Closer { gain: u64 },
    /// Anything else.
    Nothing,
}

/// Bounds of one search.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub max_runs: u64,
    pub deadline: Option<Instant>,
}

/// The configuration edited bundles are judged with: a wrong output, fault or deadlock is
/// repaired when the output is right, so the race and uninitialized-read checks and schedule
/// exploration (which judge latent bugs of a *right* output) stay off; a race or an
/// uninitialized read is repaired only when its check no longer fires.
pub(crate) fn judging_config(failure: &Failure, cfg: &RunConfig) -> RunConfig {
    let mut cfg = cfg.clone();
    match failure.outcome {
        Outcome::Race { .. }
        | Outcome::UninitializedRead { .. }
        | Outcome::ScheduleDependent { .. } => {}
        _ => {
            cfg.race_check = false;
            cfg.uninit_check = false;
            cfg.explore.clear();
        }
    }
    cfg
}

/// The effect of an edited bundle `work` on `failure`: it is rerun on the case and on every
/// probe input. A repair must be right on every probe, an improvement must not make any
/// probe element wrong that the unedited program got right.
pub(crate) fn judge_bundle(failure: &Failure, work: &Bundle, cfg: &RunConfig) -> Effect {
    // The edited program is still a valid program; an interpreter panic on it would be a bug
    // of the tooling, which must not take the hunt down: it counts as no effect.
    let run = |case: &Case, oracle: &ArrayD<i32>| {
        catch_unwind(AssertUnwindSafe(|| run_bundle(case, work, oracle, cfg))).ok()
    };
    let mut effect = match run(failure.case, failure.oracle) {
        Some((outcome, output)) => judge(
            failure.oracle,
            failure.outcome,
            failure.output,
            &outcome,
            output.as_ref(),
        ),
        None => Effect::Nothing,
    };
    if let Effect::Closer { .. } = effect {
        // Only a joint repair can use it, and that is judged on the probes itself.
        return effect;
    }
    for p in &failure.probes {
        if effect == Effect::Nothing {
            break;
        }
        let Some((outcome, output)) = run(&p.case, &p.oracle) else {
            effect = Effect::Nothing;
            break;
        };
        if outcome == Outcome::Pass && effect == Effect::Repaired {
            continue;
        }
        // Right on the case but not on this probe: at best an improvement (the case's
        // differing elements all fixed), if it breaks nothing the probe had right.
        if effect == Effect::Repaired {
            let of = differing(failure.oracle, failure.output);
            effect = Effect::Improved { fixed: of, of };
        }
        let holds = match &p.buggy {
            Some((_, before)) => no_new_wrong(&p.oracle, before, output.as_ref()),
            None => matches!(outcome, Outcome::Mismatch(_) | Outcome::Pass),
        };
        if !holds {
            effect = Effect::Nothing;
        } else if let (Effect::Improved { fixed, of }, Some((_, before)), Some(after)) =
            (effect, &p.buggy, output.as_ref())
        {
            // Fixes on the probes count too: an edit that only fixes an element whose right
            // value does not depend on the input (a padding pixel) ranks below one that fixes
            // the computation.
            let more = fixes(&p.oracle, before, after);
            effect = Effect::Improved {
                fixed: fixed + more,
                of: of + differing(&p.oracle, Some(before)),
            };
        }
    }
    effect
}

/// Elements wrong in `before` and right in `after`.
fn fixes(oracle: &ArrayD<i32>, before: &ArrayD<i32>, after: &ArrayD<i32>) -> usize {
    if before.shape() != after.shape() {
        return 0;
    }
    oracle
        .iter()
        .zip(before.iter())
        .zip(after.iter())
        .filter(|((o, b), a)| o != b && o == a)
        .count()
}

/// Elements of `output` that differ from `oracle` (0 without an output).
fn differing(oracle: &ArrayD<i32>, output: Option<&ArrayD<i32>>) -> usize {
    output.map_or(0, |o| {
        oracle.iter().zip(o.iter()).filter(|(a, b)| a != b).count()
    })
}

/// Whether `after` has every element right that `before` had right.
fn no_new_wrong(oracle: &ArrayD<i32>, before: &ArrayD<i32>, after: Option<&ArrayD<i32>>) -> bool {
    after.is_some_and(|a| {
        a.shape() == before.shape()
            && oracle
                .iter()
                .zip(before.iter())
                .zip(a.iter())
                .all(|((o, b), a)| o != b || o == a)
    })
}

/// The effect of a rerun (`outcome`, `output`) on a failure (`before`, `before_output`)
/// against `oracle`.
fn judge(
    oracle: &ArrayD<i32>,
    before: &Outcome,
    before_output: Option<&ArrayD<i32>>,
    outcome: &Outcome,
    output: Option<&ArrayD<i32>>,
) -> Effect {
    if *outcome == Outcome::Pass {
        return Effect::Repaired;
    }
    // A fault or deadlock that an edit turns into a finished run is improved.
    if matches!(before, Outcome::Fault { .. } | Outcome::Deadlock { .. })
        && matches!(outcome, Outcome::Mismatch(_))
    {
        return Effect::Improved { fixed: 0, of: 0 };
    }
    let (Outcome::Mismatch(_), Outcome::Mismatch(_), Some(b), Some(a)) =
        (before, outcome, before_output, output)
    else {
        return Effect::Nothing;
    };
    if b.shape() != a.shape() || b.shape() != oracle.shape() {
        return Effect::Nothing;
    }
    let (mut fixed, mut of) = (0, 0);
    let (mut error_before, mut error_after) = (0u64, 0u64);
    for ((o, b), a) in oracle.iter().zip(b.iter()).zip(a.iter()) {
        let was_right = o == b;
        let is_right = o == a;
        if was_right && !is_right {
            return Effect::Nothing;
        }
        if !was_right {
            of += 1;
            if is_right {
                fixed += 1;
            }
            error_before += (i64::from(*o) - i64::from(*b)).unsigned_abs();
            error_after += (i64::from(*o) - i64::from(*a)).unsigned_abs();
        }
    }
    if fixed > 0 {
        Effect::Improved { fixed, of }
    } else if error_after < error_before {
        Effect::Closer {
            gain: error_before - error_after,
        }
    } else {
        Effect::Nothing
    }
}
