//! Triage: one root cause, one finding, the culprit instruction named.
//!
//! A hunt meets the same bug on many cases, in many *shapes* (which channels, pixels and batch
//! entries differ). Triage turns that stream into one finding per root cause, and names the
//! instruction at fault. The hunt calls three functions, from cheap to expensive:
//!
//! 1. [`pre_signature`] on every failing outcome during the sweep: a bucket key that costs
//!    nothing (today's shape signature). Passing cases never reach triage, so the clean path
//!    pays nothing.
//! 2. [`cause`] on one (unminimized) case per bucket: a cheap, deterministic *cause*
//!    signature, so buckets of the same root cause merge before anything is minimized.
//! 3. [`triage`] on one representative per cause: minimize while only the outcome *kind* is
//!    kept (wrong output, fault kind, deadlock) and the case does not drift into another bug,
//!    then localize on the minimized program. It returns the minimized case, the final
//!    signature (the localized cause; the shape only where localization fails) and ranked
//!    [`Suspect`]s. Representatives whose final signatures are equal are one finding.
//!
//! Localization never recompiles: it edits the compiled bundle (one instruction at a time,
//! from a catalog of plausible repairs) and reruns it against the oracle, so it works the same
//! for the in-repo compiler, an injected bug and an external command.
//!
//! A finding is judged once into a [`Dossier`] ([`judge`]: suspects, what the program computed,
//! the reference program); `crate::report` renders it (`report.md`, the pictures) without
//! running anything.
//!
//! Everything is deterministic: the same case, configuration and [`Budget::max_runs`] give the
//! same signature, suspects and minimized case. Only two things can end work early, and both
//! are reported (`cut_short`): the wall-clock [`Budget::deadline`] and the `cancel` flag, which
//! is polled between candidate runs.

mod attempt;
mod cause;
mod crossbar_repairs;
pub mod dossier;
mod joint;
mod judge;
mod localize;
mod machine;
mod repairs;
mod suspect;
mod uninit;
mod values;
mod variants;

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use pimdiff_isa::machine::RunOutcome;
use pimdiff_oracle::Case;

use self::attempt::{Localization, Rule};
pub use self::cause::Cause;
use self::cause::{kind_key, shape, signature_of};
pub use self::dossier::{judge, Dossier, Explanation, SuspectSource, Suspects};
use self::judge::{Effect, Failure, Limits};
use self::localize::{localize, rule_helps};
pub use self::suspect::{Suspect, MAX_SUSPECTS};
use crate::check::n_version::attributed;
use crate::check::outcome::{Outcome, Signature};
use crate::check::{check_case, CaseResult, RunConfig};
use crate::compilers::CompileFailure;
use crate::shrink::{case_size, shrink_case};
use pimdiff_engine::hunt::shrink::{ShrinkOptions, Shrunk};

pub use pimdiff_engine::hunt::Budget;

/// The default budget of [`cause`]: 3,000 runs, enough for the whole repair catalog on a
/// program of a few hundred instructions (a few hundred milliseconds in-process).
pub const CAUSE_RUNS: u64 = 3_000;
/// The default budget of [`triage`]: 25,000 runs (minimization and localization together).
pub const TRIAGE_RUNS: u64 = 25_000;
/// The bound of a report's localization (`dossier::judge`): the catalog of a minimized
/// program fits many times.
pub const REPORT_RUNS: u64 = 5_000;

/// The result of [`triage`].
#[derive(Clone, Debug)]
pub struct Triaged {
    /// The minimized case (the original when nothing smaller kept the failure), with
    /// `expected` set to the oracle's output.
    pub case: Case,
    /// `check_case` of [`Triaged::case`].
    pub result: CaseResult,
    /// The final signature: the localized cause, or the outcome's shape signature where
    /// localization found nothing (`localized` is then false).
    pub signature: Signature,
    /// Whether [`Triaged::signature`] is a localized cause.
    pub localized: bool,
    /// The other explanations that hold for the minimized case (see [`Cause::also`]).
    pub also: Vec<String>,
    /// Ranked suspects, best first (empty when nothing could be localized).
    pub suspects: Vec<Suspect>,
    /// How minimization went.
    pub minimization: MinimizationLog,
    /// Whether the deadline or `cancel` ended minimization or localization early.
    pub cut_short: bool,
}

/// What minimization did, for `finding.json` and the summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MinimizationLog {
    /// Candidate cases checked.
    pub tried: u64,
    /// Candidates kept.
    pub kept: u64,
    /// `shrink::case_size` before and after.
    pub original_size: u64,
    pub minimized_size: u64,
    /// One line per kept reduction, then why it stopped.
    pub log: Vec<String>,
}

/// The bucket key of a failing check during the sweep (`None` for an outcome that is not a
/// finding). Costs nothing beyond the outcome itself: today's shape signature (with the
/// N-version attribution, when there is one).
pub fn pre_signature(result: &CaseResult) -> Option<Signature> {
    result.signature()
}

/// A cheap, deterministic cause signature of an unminimized failing case (`result` is its
/// `check_case`): the opcode and field of a repair when one catalog edit makes the output
/// right within `budget`, else the fault kind and opcode of a fault, the wait-graph shape of
/// a deadlock, or, not localized, the pre-signature itself (the bucket stays on its own). Buckets with equal causes are one root
/// cause. An outcome that is not a finding signs with its kind alone.
pub fn cause(
    case: &Case,
    result: &CaseResult,
    cfg: &RunConfig,
    budget: &Budget,
    cancel: &AtomicBool,
) -> Cause {
    if let Some(c) = claim_cause(case, result, cfg) {
        return c;
    }
    let Some(failure) = failure_of(case, result, cfg) else {
        return Cause {
            signature: shape_of(result),
            localized: false,
            also: Vec::new(),
        };
    };
    let loc = localize(&failure, cfg, &limits(budget, budget.max_runs), cancel);
    let end = structured_end(case, result, cfg);
    let found = signature_of(&result.outcome, &loc, end.as_ref());
    if found.localized {
        attributed_cause(found, result)
    } else {
        // Not localized: no evidence that this bucket shares a cause with another, so it
        // keeps its own key (merging by a coarser shape could hide a second bug).
        Cause {
            signature: shape_of(result),
            localized: false,
            also: Vec::new(),
        }
    }
}

/// The cause of a `bogus-unsupported` check whose refuted claim holds for a nearby
/// specification (see `variants::explain_claim`): the compiler sized the case it wrongly
/// computes, one bug with the wrong outputs it gives elsewhere. One more compilation.
fn claim_cause(case: &Case, result: &CaseResult, cfg: &RunConfig) -> Option<Cause> {
    if !matches!(result.outcome, Outcome::BogusUnsupported { .. }) || result.attribution.is_some() {
        return None;
    }
    let Err(CompileFailure::Unsupported {
        claim: Some(claim), ..
    }) = cfg.compiler.compile(case, cfg.external_timeout)
    else {
        return None;
    };
    let model = cfg.compiler.capacity_model();
    let refuted = |c: &Case| crate::check::refute::refute(c, &claim, model.as_ref()).is_some();
    let v = variants::explain_claim(case, refuted)?;
    Some(Cause {
        signature: Signature::new(result.outcome.kind(), v.label()),
        localized: true,
        also: Vec::new(),
    })
}

/// `cause` with the check's N-version attribution on its signature and alternatives.
fn attributed_cause(cause: Cause, result: &CaseResult) -> Cause {
    let also = cause
        .also
        .into_iter()
        .map(|detail| attributed(Signature::new(cause.signature.kind, detail), result).detail)
        .collect();
    Cause {
        signature: attributed(cause.signature, result),
        localized: cause.localized,
        also,
    }
}

/// How triage checks cases and reruns edited bundles: a [`RunConfig`] (what the hunt uses:
/// `check_case` and `check::run_bundle`), or any other way to compile and check a case, e.g.
/// a test's compiler with two injected bugs.
pub trait Checker {
    /// Compiles, runs and compares `case`, as `check_case` does.
    fn check(&self, case: &Case) -> CaseResult;
    /// The configuration edited bundles are rerun with (schedule, step budget).
    fn run_config(&self) -> &RunConfig;
}

impl Checker for RunConfig {
    fn check(&self, case: &Case) -> CaseResult {
        check_case(case, self)
    }
    fn run_config(&self) -> &RunConfig {
        self
    }
}

/// `suspects` of `result`'s program with the in-repo compiler's provenance, when `cfg`
/// compiles with it (see `CompilerUnderTest::provenance`); not for an N-version result, whose
/// program may be the other lowering's.
fn with_provenance(
    mut suspects: Vec<Suspect>,
    case: &Case,
    result: &CaseResult,
    cfg: &RunConfig,
) -> Vec<Suspect> {
    let Some(bundle) = &result.bundle else {
        return suspects;
    };
    if suspects.is_empty() || result.attribution.is_some() {
        return suspects;
    }
    if let Some(p) = cfg.compiler.provenance(case) {
        suspect::annotate(&mut suspects, &p, bundle);
    }
    suspects
}

/// Largest number of runs the drift guard spends on one minimization candidate.
const GUARD_RUNS: usize = 64;

/// Minimizes one representative failing case and localizes its cause (see the module docs).
/// Never fails: a case that is not a finding comes back unchanged, signed with its outcome's
/// kind, without suspects.
///
/// Steps: the case's values are made generic when the failure survives that (see
/// [`values`]); it is localized, giving the drift guard (its best repair or improvement);
/// it is shrunk, shapes only, keeping the outcome kind, an input-dependent oracle output and
/// the guard; the result is localized. The budget is shared: at most an eighth of the runs
/// for the first localization, half for minimization, the rest for the last localization.
pub fn triage(case: &Case, cfg: &RunConfig, budget: &Budget, cancel: &AtomicBool) -> Triaged {
    triage_with(case, cfg, budget, cancel)
}

/// [`triage`] with any [`Checker`].
pub fn triage_with(
    case: &Case,
    checker: &dyn Checker,
    budget: &Budget,
    cancel: &AtomicBool,
) -> Triaged {
    let cfg = checker.run_config();
    let original_size = case_size(case);
    let first = checker.check(case);
    let Some(key) = key_of(&first) else {
        return shrink_unlocalized(case, first, checker, budget, cancel, original_size);
    };
    let mut log = Vec::new();
    let generic = (0..values::GENERIC_ATTEMPTS).find_map(|attempt| {
        let g = values::generic(case, attempt)?;
        let r = checker.check(&g);
        (key_of(&r).as_ref() == Some(&key)).then_some((g, r))
    });
    let (start, start_result) = match generic {
        Some(g) => {
            log.push("values made generic (random, nonzero)".to_string());
            g
        }
        None => (case.clone(), first),
    };
    let Some(failure) = failure_of(&start, &start_result, cfg) else {
        return shrink_unlocalized(&start, start_result, checker, budget, cancel, original_size);
    };
    let loc0 = localize(&failure, cfg, &limits(budget, budget.max_runs / 8), cancel);
    let guard = guard_of(&loc0);
    let input_matters = values::input_matters(failure.oracle, &failure.probes);
    let options = ShrinkOptions {
        max_steps: usize::try_from(budget.max_runs / 2).unwrap_or(usize::MAX),
        deadline: shrink_deadline(budget),
        resume: true,
    };
    let shrink = |keep_shape: Option<&Signature>| {
        shrink_case(&start, false, &options, cancel, |c| {
            let r = checker.check(c);
            let same = match keep_shape {
                Some(sig) => r.signature().as_ref() == Some(sig),
                None => key_of(&r).as_ref() == Some(&key),
            };
            same && representative(c, &r, &guard, input_matters, cfg)
        })
    };
    let mut shrunk = shrink(None);
    let spent = |s: &Shrunk<Case>| loc0.runs + s.tried as u64;
    let mut done = finish(
        &shrunk.case,
        checker,
        budget,
        budget.max_runs.saturating_sub(spent(&shrunk)),
        cancel,
    );
    // Without a guard the minimization may have drifted into another bug of the same
    // compiler: a repair of the small case must at least improve the start case. If it does
    // not, minimize again keeping the exact shape signature (no drift possible).
    if guard.is_empty() {
        if let Some(best) = done.loc.cause_repair() {
            let drifted = !rule_helps(
                &failure,
                best.rule(),
                Effect::Improved { fixed: 0, of: 0 },
                cfg,
                GUARD_RUNS,
            );
            if drifted {
                log.push(format!(
                    "drifted into another bug ({}): minimized again keeping the shape",
                    best.label()
                ));
                let tried = shrunk.tried;
                shrunk = shrink(Some(&shape_of(&start_result)));
                shrunk.tried += tried;
                done = finish(
                    &shrunk.case,
                    checker,
                    budget,
                    budget.max_runs.saturating_sub(spent(&shrunk)),
                    cancel,
                );
            }
        }
    }
    log.append(&mut shrunk.log);
    let left = budget.max_runs.saturating_sub(spent(&shrunk));
    if let Some(original) = no_larger(case, &done, checker, budget, left, cancel, &mut log) {
        shrunk.kept = 0;
        done = original;
    }
    Triaged {
        minimization: MinimizationLog {
            tried: shrunk.tried as u64,
            kept: shrunk.kept as u64,
            original_size,
            minimized_size: case_size(&done.case),
            log,
        },
        cut_short: shrunk.cut_short || done.loc.cut_short,
        case: done.case,
        result: done.result,
        signature: done.cause.signature,
        localized: done.cause.localized,
        also: done.cause.also,
        suspects: done.suspects,
    }
}

/// The original case, checked and localized, when `done` (the shrunk case) is larger than it.
/// Generic values have more nonzero cells than the original (a size `case_size` counts), and
/// when shrinking did not win that back (cut short, or nothing kept) the original is saved
/// instead: minimization never grows a case, and the figures describe what is saved.
fn no_larger(
    case: &Case,
    done: &Finished,
    checker: &dyn Checker,
    budget: &Budget,
    runs: u64,
    cancel: &AtomicBool,
    log: &mut Vec<String>,
) -> Option<Finished> {
    let (shrunk, original) = (case_size(&done.case), case_size(case));
    if shrunk <= original {
        return None;
    }
    log.push(format!(
        "the shrunk case ({shrunk}) is not smaller than the original ({original}): the original is saved"
    ));
    Some(finish(case, checker, budget, runs, cancel))
}

/// Minimization ends by this instant, so that half of what is left of the budget's time stays
/// for localizing the result: a slow compiler would otherwise spend all of it on candidates,
/// and a case cut short that is not localized signs with its symptom.
fn shrink_deadline(budget: &Budget) -> Option<Instant> {
    let now = Instant::now();
    budget
        .deadline
        .map(|d| now + d.saturating_duration_since(now) / 2)
}

/// A minimized case, checked and localized.
struct Finished {
    case: Case,
    result: CaseResult,
    loc: Localization,
    cause: Cause,
    suspects: Vec<Suspect>,
}

/// Checks and localizes the minimized case.
fn finish(
    case: &Case,
    checker: &dyn Checker,
    budget: &Budget,
    runs: u64,
    cancel: &AtomicBool,
) -> Finished {
    let cfg = checker.run_config();
    let mut result = checker.check(case);
    let loc = match failure_of(case, &result, cfg) {
        Some(f) => localize(&f, cfg, &limits(budget, runs), cancel),
        None => Localization::default(),
    };
    let end = structured_end(case, &result, cfg);
    let found = match claim_cause(case, &result, cfg) {
        Some(c) => c,
        None => attributed_cause(signature_of(&result.outcome, &loc, end.as_ref()), &result),
    };
    let suspects = match &result.bundle {
        Some(b) => with_provenance(suspect::rank(&loc, end.as_ref(), b), case, &result, cfg),
        None => Vec::new(),
    };
    let mut case = case.clone();
    case.expected = result.oracle.take();
    result.oracle = case.expected.clone();
    Finished {
        case,
        result,
        loc,
        cause: found,
        suspects,
    }
}

/// The result for a case that is not a finding (or has no program to localize).
/// A finding without a bundle to localize in (the compiler crashed, panicked or failed):
/// minimized while every check shows its exact signature — a crash keeps its message and
/// `file:line` — and judged without localization. A timeout is not minimized: every check
/// of a candidate could take the whole deadline.
fn shrink_unlocalized(
    case: &Case,
    result: CaseResult,
    checker: &dyn Checker,
    budget: &Budget,
    cancel: &AtomicBool,
    size: u64,
) -> Triaged {
    let timeout = matches!(result.outcome, Outcome::Timeout { .. });
    let signature = match result.signature() {
        Some(s) if result.outcome.is_finding() && !timeout => s,
        _ => return unminimized(case, result, size),
    };
    let options = ShrinkOptions {
        max_steps: usize::try_from(budget.max_runs).unwrap_or(usize::MAX),
        deadline: budget.deadline,
        resume: true,
    };
    let shrunk = shrink_case(case, false, &options, cancel, |c| {
        checker.check(c).signature().as_ref() == Some(&signature)
    });
    let result = checker.check(&shrunk.case);
    let mut t = unminimized(&shrunk.case, result, size);
    t.minimization = MinimizationLog {
        tried: shrunk.tried as u64,
        kept: shrunk.kept as u64,
        original_size: size,
        minimized_size: case_size(&shrunk.case),
        log: shrunk.log,
    };
    t.cut_short = shrunk.cut_short;
    t
}

fn unminimized(case: &Case, result: CaseResult, size: u64) -> Triaged {
    let mut case = case.clone();
    case.expected = result.oracle.clone();
    Triaged {
        case,
        signature: shape_of(&result),
        result,
        localized: false,
        also: Vec::new(),
        suspects: Vec::new(),
        minimization: MinimizationLog {
            tried: 0,
            kept: 0,
            original_size: size,
            minimized_size: size,
            log: Vec::new(),
        },
        cut_short: false,
    }
}

/// Most rules the drift guard keeps of each kind.
const GUARD_RULES: usize = 4;

/// What minimization must keep besides the outcome kind, so that it cannot drift from one
/// bug of the compiler into another.
#[derive(Clone, Debug, Default)]
struct Guard {
    /// One of these rules (the start case's best repairs) must still repair a candidate.
    /// Several, because a small case can have coincidental repairs besides the true one
    /// (shifting every input by one pixel repairs a store one pixel off, by the translation
    /// symmetry of a convolution), and the smaller case may keep only the true one.
    repaired_by: Vec<Rule>,
    /// None of these rules (the best improvements of a start case that no edit repairs) may
    /// repair a candidate: what they do not explain is a second bug, which must stay.
    residue_of: Vec<Rule>,
    /// Whether a candidate must load global memory nothing initialises, as the start case
    /// does when no edit repairs it.
    uninitialised: bool,
    /// The kind of nearby specification whose output the start case's wrong output is (see
    /// `variants`): a candidate must be explained by one of the same kind. It replaces the
    /// other guards: it is the cause the finding is signed with.
    variant: Option<variants::Variant>,
}

impl Guard {
    fn is_empty(&self) -> bool {
        self.repaired_by.is_empty()
            && self.residue_of.is_empty()
            && !self.uninitialised
            && self.variant.is_none()
    }
}

/// The drift guard of the start case's localization (see [`Guard`]).
fn guard_of(loc: &Localization) -> Guard {
    if let Some(v) = loc.variant.filter(|_| loc.uninitialised.is_empty()) {
        return Guard {
            variant: Some(v),
            ..Guard::default()
        };
    }
    let distinct = |found: Vec<&attempt::Found>| {
        let mut rules: Vec<Rule> = Vec::new();
        for f in found {
            if rules.len() < GUARD_RULES && !rules.contains(&f.rule()) {
                rules.push(f.rule());
            }
        }
        rules
    };
    let repaired_by = distinct(loc.repairs_ranked());
    let residue_of = if repaired_by.is_empty() {
        distinct(
            loc.improvements()
                .into_iter()
                .filter(|f| matches!(f.effect, Effect::Improved { fixed, .. } if fixed > 0))
                .collect(),
        )
    } else {
        Vec::new()
    };
    Guard {
        uninitialised: repaired_by.is_empty() && !loc.uninitialised.is_empty(),
        repaired_by,
        residue_of,
        variant: None,
    }
}

/// Whether a minimization candidate with the right outcome may stand for the finding: its
/// oracle output depends on its input (when the start case's does: `input_matters`), and it
/// passes the drift guard.
fn representative(
    case: &Case,
    result: &CaseResult,
    guard: &Guard,
    input_matters: bool,
    cfg: &RunConfig,
) -> bool {
    let Some(f) = failure_of(case, result, cfg) else {
        return false;
    };
    if let Some(v) = guard.variant {
        return f
            .output
            .is_some_and(|out| variants::explained_alike(v, f.case, out, &f.probes));
    }
    let repairs = |rule: &Rule| rule_helps(&f, *rule, Effect::Repaired, cfg, GUARD_RUNS);
    (!input_matters || values::input_matters(f.oracle, &f.probes))
        && (guard.repaired_by.is_empty() || guard.repaired_by.iter().any(repairs))
        && !guard.residue_of.iter().any(repairs)
        && (!guard.uninitialised || !uninit::uninitialised_loads(f.bundle).is_empty())
}

/// The failing run of a checked case, when it has a bundle and an oracle output (from the
/// check, or the case's `expected`), with its probes.
fn failure_of<'a>(case: &'a Case, result: &'a CaseResult, cfg: &RunConfig) -> Option<Failure<'a>> {
    if !result.outcome.is_finding() {
        return None;
    }
    let bundle = result.bundle.as_ref()?;
    Some(Failure {
        case,
        bundle,
        // A saved finding carries the oracle's output in the case (`expected`) instead.
        oracle: result.oracle.as_ref().or(case.expected.as_ref())?,
        outcome: &result.outcome,
        output: result.machine_output.as_ref(),
        probes: values::probes(case, bundle, cfg),
    })
}

/// [`kind_key`] of a check, with its N-version attribution (minimization keeps both).
fn key_of(result: &CaseResult) -> Option<String> {
    kind_key(&result.outcome).map(|k| match &result.attribution {
        Some(a) => format!("{k} [{} wrong]", a.wrong_name()),
        None => k,
    })
}

/// [`shape`] of a check, with its N-version attribution.
fn shape_of(result: &CaseResult) -> Signature {
    attributed(shape(&result.outcome), result)
}

/// The structured end of a fault or deadlock (one more run); `None` for other outcomes.
fn structured_end(case: &Case, result: &CaseResult, cfg: &RunConfig) -> Option<RunOutcome> {
    if !matches!(
        result.outcome,
        Outcome::Fault { .. } | Outcome::Deadlock { .. }
    ) {
        return None;
    }
    machine::run_structured(case, result.bundle.as_ref()?, cfg)
}

/// Localization limits within `budget`, at most `runs` runs.
fn limits(budget: &Budget, runs: u64) -> Limits {
    Limits {
        max_runs: runs.min(budget.max_runs),
        deadline: budget.deadline,
    }
}
