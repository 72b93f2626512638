//! Judging a checked case once: the [`Dossier`] every rendering of a finding reads.
//!
//! A finding is judged here, in one place: its suspects (localized within a budget, or taken
//! from triage), what the program computed instead (a nearby specification), the in-repo
//! compiler's provenance of each suspect, and the reference program the failing one is
//! compared with. `report.md`, the pictures and `finding.json` are renderings of this value
//! (`crate::report`); none of them runs, checks or compiles anything.

use std::sync::atomic::AtomicBool;

use pimdiff_compiler::{compile, CompileOptions};
use pimdiff_isa::bundle::Bundle;
use pimdiff_oracle::Case;

use super::localize::localize;
use super::suspect::{self, Suspect};
use super::{failure_of, limits, structured_end, variants, with_provenance, REPORT_RUNS};
use crate::check::outcome::Outcome;
use crate::check::{CaseResult, RunConfig};
use crate::compilers::CompilerUnderTest;
use pimdiff_engine::hunt::Budget;

/// Everything judged about one checked case (see the module docs).
#[derive(Clone, Debug)]
pub struct Dossier {
    /// The case, with `expected` set to the oracle's output when the check had one.
    pub case: Case,
    /// Its check.
    pub result: CaseResult,
    /// The compiler under test and the run's settings, in words (the report's header).
    pub compiler: String,
    pub schedule: String,
    pub step_budget: u64,
    /// The `## Suspects` section's content.
    pub suspects: Suspects,
    /// What the program computed instead, when that is a nearby specification.
    pub explanation: Option<Explanation>,
    /// The program the failing one is compared with, for the in-repo compiler: what it is
    /// and the bundle.
    pub reference: Option<(String, Bundle)>,
}

/// What a dossier says about suspects.
#[derive(Clone, Debug, PartialEq)]
pub enum Suspects {
    /// Not judged yet (a finding saved the moment it was met): no section, no explanation;
    /// the final finding has them.
    NotYet,
    /// Nothing to localize (not a finding, or no program): no section.
    NotApplicable,
    /// The ranked suspects, best first (empty: none stands out).
    Found(Vec<Suspect>),
}

impl Suspects {
    /// The suspects found, if any.
    pub fn list(&self) -> &[Suspect] {
        match self {
            Suspects::Found(list) => list,
            _ => &[],
        }
    }
}

/// The wrong output as the oracle's output of a nearby specification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    /// What changed, in the case's terms (`with its padding moved from … to …`).
    pub description: String,
    /// The cause it signs (`computes the convolution with its padding moved by one`).
    pub label: String,
}

/// Where a dossier's suspects come from.
#[derive(Clone, Debug)]
pub enum SuspectSource {
    /// Localize now, within [`REPORT_RUNS`] (what `repro` and `from-fuzz` do).
    Localize,
    /// Triage localized the case already: these are its suspects.
    Known(Vec<Suspect>),
    /// Not yet: a finding saved before triage.
    NotYet,
}

/// Judges `case` (checked as `result` under `cfg`): the one place a finding's suspects,
/// explanation and reference program are computed.
pub fn judge(case: &Case, result: &CaseResult, cfg: &RunConfig, source: SuspectSource) -> Dossier {
    let judged = !matches!(source, SuspectSource::NotYet);
    let suspects = match source {
        SuspectSource::NotYet => Suspects::NotYet,
        SuspectSource::Known(list) => match &result.bundle {
            Some(_) if result.outcome.is_finding() => Suspects::Found(list),
            _ => Suspects::NotApplicable,
        },
        SuspectSource::Localize => localized(case, result, cfg),
    };
    Dossier {
        case: case.clone(),
        result: result.clone(),
        compiler: cfg.describe_compiler(),
        schedule: format!("{:?}", cfg.schedule),
        step_budget: cfg.step_budget,
        suspects,
        explanation: if judged {
            explain(case, result, cfg)
        } else {
            None
        },
        reference: if matches!(result.outcome, Outcome::Pass) {
            None
        } else {
            reference_bundle(case, result, cfg)
        },
    }
}

/// Localizes the checked case within [`REPORT_RUNS`] runs: on a minimized case the catalog
/// fits the budget, so the suspects are those triage returns.
fn localized(case: &Case, result: &CaseResult, cfg: &RunConfig) -> Suspects {
    let (Some(bundle), Some(failure)) = (&result.bundle, failure_of(case, result, cfg)) else {
        return Suspects::NotApplicable;
    };
    let budget = Budget {
        deadline: None,
        max_runs: REPORT_RUNS,
    };
    let loc = localize(
        &failure,
        cfg,
        &limits(&budget, budget.max_runs),
        &AtomicBool::new(false),
    );
    let end = structured_end(case, result, cfg);
    let ranked = suspect::rank(&loc, end.as_ref(), bundle);
    Suspects::Found(with_provenance(ranked, case, result, cfg))
}

/// When the wrong output is exactly the oracle's output of a nearby specification (see
/// `variants`), which; none otherwise (and for outcomes other than a wrong output).
fn explain(case: &Case, result: &CaseResult, cfg: &RunConfig) -> Option<Explanation> {
    if !matches!(result.outcome, Outcome::Mismatch(_)) {
        return None;
    }
    let failure = failure_of(case, result, cfg)?;
    let output = failure.output?;
    let v = variants::explain(case, output, &failure.probes)?;
    Some(Explanation {
        description: v.describe(case),
        label: v.label().to_string(),
    })
}

/// What the failing bundle is compared with, for the in-repo compiler: the same case compiled
/// with optimizations off (when they were on), or the correct compilation of an injected bug.
fn reference_bundle(case: &Case, result: &CaseResult, cfg: &RunConfig) -> Option<(String, Bundle)> {
    result.bundle.as_ref()?;
    // An N-version finding shows the wrong version's program: compare with its own reference.
    let shown = result.attribution.as_ref().map_or(0, |a| a.shown);
    let (what, options) = match cfg.version(shown) {
        CompilerUnderTest::InRepo(o) if o.skip_padding || o.weight_skipping => {
            let mut off = *o;
            off.skip_padding = false;
            off.weight_skipping = false;
            ("the same case compiled with optimizations off", off)
        }
        CompilerUnderTest::Mutated(_, lowering) => (
            "the correct compilation (no injected bug)",
            CompileOptions {
                lowering: *lowering,
                ..CompileOptions::default()
            },
        ),
        _ => return None,
    };
    let bundle = pimdiff_engine::hunt::panic::catch(|| compile(case, &options))
        .ok()?
        .ok()?;
    Some((what.to_string(), bundle))
}
