//! The one minimization loop: greedy, deterministic, bounded, for every target.
//!
//! [`shrink`] takes a case and a target's *passes* of reductions (for tensor cases: batch,
//! spatial size, channels, …; for networks: cut after a node, drop a node, …). Each pass lists
//! the smaller variants of the current case, simplest first; the first one the caller's
//! predicate keeps replaces the current case and the pass goes on — at that position, when
//! the lists line up from one case to the next (`resume`: the candidates before it were just
//! tried and failed), else from its first candidate again; a pass ends when none of its
//! candidates is kept. Passes repeat until one round keeps nothing (a fixpoint) or the budget
//! runs out; a pass that restarts and ends without keeping anything has just tried every
//! candidate of the current case, and is not tried again until another pass changes it.
//! The default triage of a target (`target::minimize`) shrinks with it while a run still shows the
//! finding's signature.
//!
//! Deterministic: the same case, passes and predicate give the same steps and the same
//! result; only the wall-clock `deadline` (and `cancel`) can end a run earlier than another,
//! and the result says so (`cut_short`). `max_steps` is the deterministic bound.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The budget of each finding's minimization in a hunt (`--minimize-time`, and a run cap).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MinimizeConfig {
    /// Wall-clock limit; the best case so far is kept when it runs out.
    pub time_budget: Duration,
    /// Largest number of candidate runs.
    pub max_steps: usize,
}

impl Default for MinimizeConfig {
    /// 10 s and 20,000 candidates: a default-sized tensor case reaches its fixpoint in well
    /// under a second; the bounds only matter for large cases or slow external compilers.
    fn default() -> Self {
        MinimizeConfig {
            time_budget: Duration::from_secs(10),
            max_steps: 20_000,
        }
    }
}

/// The bounds of [`shrink`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShrinkOptions {
    /// Largest number of candidates checked (the deterministic bound).
    pub max_steps: usize,
    /// Wall-clock end; the best case so far is returned when it passes.
    pub deadline: Option<Instant>,
    /// Whether a pass goes on at the position of its last kept candidate (lists that line up
    /// from one case to the next, as element-wise reductions do) or from its first.
    pub resume: bool,
}

/// The result of [`shrink`].
#[derive(Clone, Debug)]
pub struct Shrunk<C> {
    /// The smallest case found that the predicate kept (the original when none was).
    pub case: C,
    /// Candidates checked.
    pub tried: usize,
    /// Candidates kept.
    pub kept: usize,
    /// One line per kept reduction, plus a last line on why it stopped.
    pub log: Vec<String>,
    /// Whether a bound or `cancel` stopped it before a fixpoint.
    pub cut_short: bool,
}

/// Shrinks `start` greedily (see the module docs): `candidates(pass, case)` lists the smaller
/// variants of `case` that `pass` proposes, each with a log line; `keep(candidate)` says
/// whether a candidate still shows what must be kept. `cancel` is polled before every
/// candidate.
pub fn shrink<C: Clone, P: Copy>(
    start: &C,
    passes: &[P],
    candidates: impl Fn(P, &C) -> Vec<(String, C)>,
    options: &ShrinkOptions,
    cancel: &AtomicBool,
    mut keep: impl FnMut(&C) -> bool,
) -> Shrunk<C> {
    let mut m = Shrunk {
        case: start.clone(),
        tried: 0,
        kept: 0,
        log: Vec::new(),
        cut_short: false,
    };
    let out_of_budget = |m: &Shrunk<C>| {
        m.tried >= options.max_steps
            || options.deadline.is_some_and(|d| Instant::now() >= d)
            || cancel.load(Ordering::Relaxed)
    };
    // The number of kept candidates when each pass last tried every candidate of the case
    // without keeping one (restart mode only): a case that has not changed since needs no
    // second look.
    let mut clean_at: Vec<Option<usize>> = vec![None; passes.len()];
    loop {
        let mut progress = false;
        for (p, &pass) in passes.iter().enumerate() {
            if clean_at[p] == Some(m.kept) {
                continue;
            }
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
                for (k, (what, candidate)) in candidates(pass, &m.case)
                    .into_iter()
                    .enumerate()
                    .skip(resume)
                {
                    if out_of_budget(&m) {
                        break;
                    }
                    m.tried += 1;
                    if keep(&candidate) {
                        m.kept += 1;
                        m.log.push(what);
                        m.case = candidate;
                        kept_at = Some(k);
                        progress = true;
                        break;
                    }
                }
                match kept_at {
                    Some(k) if options.resume => resume = k,
                    Some(_) => resume = 0,
                    None => {
                        if !options.resume && !out_of_budget(&m) {
                            clean_at[p] = Some(m.kept);
                        }
                        break;
                    }
                }
            }
        }
        if !progress || (!options.resume && clean_at.iter().all(|c| *c == Some(m.kept))) {
            m.log
                .push(format!("stopped: fixpoint after {} candidates", m.tried));
            return m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shrinking a list of numbers: drop one element, or halve one.
    #[allow(clippy::ptr_arg)] // the case type of these tests is `Vec<u32>`
    fn candidates(pass: u8, v: &Vec<u32>) -> Vec<(String, Vec<u32>)> {
        (0..v.len())
            .filter_map(|i| {
                let mut c = v.clone();
                match pass {
                    0 => {
                        c.remove(i);
                    }
                    _ if c[i] > 0 => c[i] /= 2,
                    _ => return None,
                }
                Some((format!("pass {pass} at {i}"), c))
            })
            .collect()
    }

    #[test]
    fn shrinks_to_a_fixpoint_keeping_what_the_predicate_needs() {
        let opts = ShrinkOptions {
            max_steps: 10_000,
            deadline: None,
            resume: true,
        };
        let keep = |v: &Vec<u32>| v.iter().sum::<u32>() >= 10;
        let s = shrink(
            &vec![7, 3, 9, 20],
            &[0u8, 1],
            candidates,
            &opts,
            &AtomicBool::new(false),
            keep,
        );
        assert_eq!(s.case, vec![10]);
        assert!(!s.cut_short);
        assert_eq!(
            s.log.last().unwrap(),
            &format!("stopped: fixpoint after {} candidates", s.tried)
        );
        // The same inputs give the same steps.
        let again = shrink(
            &vec![7, 3, 9, 20],
            &[0u8, 1],
            candidates,
            &opts,
            &AtomicBool::new(false),
            keep,
        );
        assert_eq!((again.tried, again.kept), (s.tried, s.kept));
    }

    #[test]
    fn restarting_passes_end_after_one_clean_scan_of_the_final_case() {
        let keep = |v: &Vec<u32>| v.iter().sum::<u32>() >= 10;
        let opts = ShrinkOptions {
            max_steps: 10_000,
            deadline: None,
            resume: false,
        };
        let s = shrink(
            &vec![7, 3, 9, 20],
            &[0u8],
            candidates,
            &opts,
            &AtomicBool::new(false),
            keep,
        );
        // Kept: drop 7, drop 3, drop 9 (each the first candidate of a restarted scan), then
        // one clean scan of [20] (1 candidate): no second round.
        assert_eq!(s.case, vec![20]);
        assert_eq!((s.kept, s.tried), (3, 4));
    }

    #[test]
    fn the_step_bound_and_cancel_cut_it_short() {
        let keep = |v: &Vec<u32>| !v.is_empty();
        let opts = ShrinkOptions {
            max_steps: 2,
            deadline: None,
            resume: true,
        };
        let s = shrink(
            &vec![1, 2, 3, 4],
            &[0u8],
            candidates,
            &opts,
            &AtomicBool::new(false),
            keep,
        );
        assert_eq!((s.tried, s.kept, s.cut_short), (2, 2, true));
        let opts = ShrinkOptions {
            max_steps: 100,
            deadline: None,
            resume: true,
        };
        let s = shrink(
            &vec![1, 2],
            &[0u8],
            candidates,
            &opts,
            &AtomicBool::new(true),
            keep,
        );
        assert_eq!((s.tried, s.case), (0, vec![1, 2]));
    }
}
