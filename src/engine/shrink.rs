//! Minimization of a failing case.
//!
//! [`shrink_while`] shrinks a case greedily, one *reduction* at a time, keeping a candidate
//! only when a caller's predicate accepts its [`check_case`] result; [`minimize`] is the
//! common case, keeping exactly the same [`Signature`] (triage keeps less: see
//! `crate::triage`). Reductions are tried in the
//! design's order — batch, spatial size, channels, groups, kernel, stride, dilation, padding,
//! bias/ReLU, cores, arrays per core, array size — then tensor values are pushed to 0 and
//! toward 1. Whenever a reduction is kept the pass continues with the smaller case; passes
//! repeat until one keeps nothing (a fixpoint) or the budget runs out.
//!
//! When a shape shrinks, the tensors are *sliced* (the first rows/channels/kernel positions
//! are kept), so the smaller case keeps as much of the original data as possible. Every
//! candidate is built with `Case::new`, so it is valid; one that is not is skipped.
//!
//! Deterministic: the same case, configuration and signature give the same steps and the
//! same result (the candidate order is fixed and `check_case` is deterministic), except that
//! the wall-clock `time_budget` may stop a slow run earlier than another; `max_steps` is the
//! deterministic bound.

use crate::targets::tensor::reductions;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pimdiff_oracle::Case;

use crate::check::outcome::Signature;
use crate::check::{check_case, CaseResult, RunConfig};
pub use crate::targets::tensor::generate::describe_case;

/// Budget of a minimization.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MinimizeConfig {
    /// Wall-clock limit; the best case so far is returned when it runs out.
    pub time_budget: Duration,
    /// Largest number of candidates checked.
    pub max_steps: usize,
}

impl Default for MinimizeConfig {
    /// 10 s and 20,000 candidates: a default-sized case reaches its fixpoint in well under a
    /// second; the bounds only matter for large cases or slow external compilers.
    fn default() -> Self {
        MinimizeConfig {
            time_budget: Duration::from_secs(10),
            max_steps: 20_000,
        }
    }
}

/// The result of a minimization.
#[derive(Clone, Debug)]
pub struct Minimized {
    /// The smallest case found with the signature.
    pub case: Case,
    pub signature: Signature,
    /// Candidates checked.
    pub tried: usize,
    /// Candidates kept (they had the same signature).
    pub kept: usize,
    /// One line per kept reduction, e.g. `batch 2 → 1`, plus a last line on why it stopped.
    pub log: Vec<String>,
}

/// The size of a case, as minimization measures it: elements of input, weight, bias and
/// output, plus the number of nonzero input and weight values.
pub fn case_size(case: &Case) -> u64 {
    let out: usize = case.spec.output_shape().iter().product();
    let bias = case.bias.as_ref().map_or(0, |b| b.len());
    let nonzero = case
        .input
        .iter()
        .chain(case.weight.iter())
        .filter(|&&v| v != 0)
        .count();
    (case.input.len() + case.weight.len() + bias + out + nonzero) as u64
}

/// Shrinks `case` while `check_case(.., cfg)` keeps `signature` (see the module docs).
pub fn minimize(
    case: &Case,
    cfg: &RunConfig,
    signature: &Signature,
    mcfg: &MinimizeConfig,
) -> Minimized {
    let deadline = Instant::now().checked_add(mcfg.time_budget);
    let s = shrink_while(
        case,
        &ShrinkOptions {
            max_steps: mcfg.max_steps,
            deadline,
            values: true,
        },
        &AtomicBool::new(false),
        |c| check_case(c, cfg),
        |_, result| result.signature().as_ref() == Some(signature),
    );
    Minimized {
        case: s.case,
        signature: signature.clone(),
        tried: s.tried,
        kept: s.kept,
        log: s.log,
    }
}

/// Bounds and reductions of [`shrink_while`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShrinkOptions {
    /// Largest number of candidates checked (the deterministic bound).
    pub max_steps: usize,
    /// Wall-clock end; the best case so far is returned when it passes.
    pub deadline: Option<Instant>,
    /// Whether tensor values are reduced too (to 0, then toward ±1), after the shapes. Off,
    /// the case keeps its values: localization tells a repair from a coincidence better on
    /// varied values than on zeros and ones.
    pub values: bool,
}

/// The result of [`shrink_while`].
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The smallest case found that `keep` accepted (the original when none was).
    pub case: Case,
    /// Candidates checked.
    pub tried: usize,
    /// Candidates kept.
    pub kept: usize,
    /// One line per kept reduction, plus a last line on why it stopped.
    pub log: Vec<String>,
    /// Whether a bound or `cancel` stopped it before a fixpoint.
    pub cut_short: bool,
}

/// Shrinks `case` greedily, keeping a candidate when `keep(candidate, check(candidate))`
/// holds: the engine behind [`minimize`] (where `check` is `check_case` and `keep` compares
/// signatures), for callers that preserve something else (triage keeps the outcome kind and
/// guards against drifting into another bug). Candidates come in a fixed order, so
/// deterministic `check` and `keep` give deterministic results. `cancel` is polled before
/// every candidate.
pub fn shrink_while(
    case: &Case,
    options: &ShrinkOptions,
    cancel: &AtomicBool,
    mut check: impl FnMut(&Case) -> CaseResult,
    mut keep: impl FnMut(&Case, &CaseResult) -> bool,
) -> Shrunk {
    let mut m = Shrunk {
        case: case.clone(),
        tried: 0,
        kept: 0,
        log: Vec::new(),
        cut_short: false,
    };
    let out_of_budget = |m: &Shrunk| {
        m.tried >= options.max_steps
            || options.deadline.is_some_and(|d| Instant::now() >= d)
            || cancel.load(Ordering::Relaxed)
    };
    loop {
        let mut progress = false;
        for family in FAMILIES
            .iter()
            .filter(|f| options.values || !matches!(f, Family::ZeroValues | Family::UnitValues))
        {
            // Apply this family until none of its candidates is kept. After a kept candidate
            // at position k, the new list resumes at k: the candidates before it were just
            // tried and failed (for value reductions the lists line up exactly, which keeps
            // element-by-element shrinking linear; the outer fixpoint loop retries the rest).
            let mut resume = 0;
            loop {
                if out_of_budget(&m) {
                    m.log.push(format!(
                        "stopped: budget exhausted after {} candidates",
                        m.tried
                    ));
                    m.cut_short = true;
                    return m;
                }
                let mut kept_at = None;
                for (k, (what, candidate)) in reductions::candidates(*family, &m.case)
                    .into_iter()
                    .enumerate()
                    .skip(resume)
                {
                    if out_of_budget(&m) {
                        break;
                    }
                    m.tried += 1;
                    let result = check(&candidate);
                    if keep(&candidate, &result) {
                        m.kept += 1;
                        m.log.push(what);
                        m.case = candidate;
                        kept_at = Some(k);
                        progress = true;
                        break;
                    }
                }
                match kept_at {
                    Some(k) => resume = k,
                    None => break,
                }
            }
        }
        if !progress {
            m.log
                .push(format!("stopped: fixpoint after {} candidates", m.tried));
            return m;
        }
    }
}

/// A family of reductions, in the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Batch,
    Spatial,
    Groups,
    Channels,
    Kernel,
    Stride,
    Dilation,
    Padding,
    BiasRelu,
    Cores,
    ArraysPerCore,
    ArraySize,
    ZeroValues,
    UnitValues,
}

const FAMILIES: &[Family] = &[
    Family::Batch,
    Family::Spatial,
    Family::Groups,
    Family::Channels,
    Family::Kernel,
    Family::Stride,
    Family::Dilation,
    Family::Padding,
    Family::BiasRelu,
    Family::Cores,
    Family::ArraysPerCore,
    Family::ArraySize,
    Family::ZeroValues,
    Family::UnitValues,
];
