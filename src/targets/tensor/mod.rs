//! Conv2d and MVM cases through a compiler that speaks the bundle protocol: the in-repo
//! compiler (either lowering, or both as N versions), an external command, or an injected bug.
//!
//! The first target, and the one with the deepest judgement: a case is generated
//! ([`generate`]), compiled, run on the PIMSim interpreter and compared with the oracle
//! (`crate::check`); buckets of failing cases merge by their localized cause and one
//! representative per cause is minimized and localized, and judged once into a `Dossier`
//! (`crate::triage`); a finding is a case directory with its bundle, and the report and
//! pictures rendered from the dossier ([`files`], `crate::report`).

#[cfg(feature = "coverage-counters")]
pub mod counters;
pub mod detection;
pub mod files;
pub mod generate;
pub mod guided;
pub mod mutate;
pub mod shrink;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use pimdiff_oracle::Case;

use self::generate::{case_from_seed, GenConfig};
use crate::check::outcome::timeout_outcome;
use crate::check::{check_case, check_case_staged, stage_limit, CaseResult, Outcome, RunConfig};
use crate::compilers::CompilerUnderTest;
use crate::engine::declines::DEFAULT_MARGIN;
use crate::engine::grouping::Cause;
use crate::engine::watchdog::{Stage, StageClock};
use crate::engine::{Budget, Observation, Target, Triaged};
use crate::finding::{abstract_message, FindingMeta, Kind, MinimizationStats, Signature};
use crate::triage::{judge, Dossier, SuspectSource};

/// The tensor target: cases of `generator` checked with `run`'s compiler and machine.
#[derive(Clone, Debug)]
pub struct TensorTarget {
    generator: GenConfig,
    run: RunConfig,
}

impl TensorTarget {
    /// A target generating with `generator` (sanitized: ratios within 0..=1) and checking
    /// with `run`.
    pub fn new(generator: &GenConfig, run: RunConfig) -> TensorTarget {
        TensorTarget {
            generator: generator.sanitized(),
            run,
        }
    }

    /// How cases are checked (compiler, schedule, step budget, limits).
    pub fn run_config(&self) -> &RunConfig {
        &self.run
    }

    /// How cases are generated.
    pub fn generator_config(&self) -> &GenConfig {
        &self.generator
    }
}

impl Target for TensorTarget {
    type Case = Case;
    type Run = CaseResult;
    type Evidence = Dossier;

    fn name(&self) -> &'static str {
        "cases"
    }

    fn compiler(&self) -> String {
        self.run.describe_compiler()
    }

    fn generator(&self) -> serde_json::Value {
        serde_json::to_value(&self.generator).unwrap_or_default()
    }

    fn case(&self, case_seed: u64) -> Case {
        case_from_seed(&self.generator, case_seed)
    }

    fn size(&self, case: &Case) -> u64 {
        shrink::case_size(case)
    }

    fn run(&self, case: &Case, clock: &StageClock) -> CaseResult {
        check_case_staged(case, &self.run, Some(clock))
    }

    fn observe(&self, result: &CaseResult) -> Observation {
        Observation {
            kind: result.outcome.kind(),
            signatures: crate::triage::pre_signature(result).into_iter().collect(),
            decline_reason: match &result.outcome {
                Outcome::Unsupported { reason } | Outcome::BogusUnsupported { reason, .. } => {
                    Some(abstract_message(reason))
                }
                _ => None,
            },
        }
    }

    fn stage_limit(&self, stage: Stage) -> Option<Duration> {
        Some(stage_limit(&self.run, stage))
    }

    /// The generator's overcommit ratio plus [`DEFAULT_MARGIN`]: the generator declines that
    /// share on purpose, and a few more cases do not fit by themselves.
    fn max_unsupported_share(&self) -> Option<f64> {
        Some((self.generator.overcommit_ratio + DEFAULT_MARGIN).clamp(0.0, 1.0))
    }

    fn passes(&self) -> usize {
        shrink::FAMILIES.len()
    }

    fn candidates(&self, pass: usize, case: &Case) -> Vec<(String, Case)> {
        shrink::FAMILIES
            .get(pass)
            .map_or_else(Vec::new, |&f| shrink::candidates(f, case))
    }

    /// The localized cause (`triage::cause`): buckets of one root cause merge whatever their
    /// shapes.
    fn cause(
        &self,
        case: &Case,
        _signature: &Signature,
        budget: &Budget,
        cancel: &AtomicBool,
    ) -> Cause {
        let result = check_case(case, &self.run);
        crate::triage::cause(case, &result, &self.run, budget, cancel)
    }

    /// Minimization that keeps the outcome kind and guards against drifting into another bug,
    /// then localization (`triage::triage`).
    fn triage(
        &self,
        case: &Case,
        _cause: &Cause,
        budget: &Budget,
        cancel: &AtomicBool,
    ) -> Triaged<Self> {
        let t = crate::triage::triage(case, &self.run, budget, cancel);
        let m = &t.minimization;
        Triaged {
            stats: MinimizationStats {
                tried: m.tried,
                kept: m.kept,
                original_size: m.original_size,
                minimized_size: m.minimized_size,
                cut_short: t.cut_short,
            },
            log: m.log.clone(),
            cause: Cause {
                signature: t.signature,
                localized: t.localized,
                also: t.also,
            },
            evidence: judge(
                &t.case,
                &t.result,
                &self.run,
                SuspectSource::Known(t.suspects),
            ),
            case: t.case,
        }
    }

    /// A case not run again is a timeout's: its result carries the oracle's output, unless
    /// the oracle was what hung.
    fn evidence(&self, case: &Case, run: Option<CaseResult>, signature: &Signature) -> Dossier {
        let result = run.unwrap_or_else(|| {
            let stage = [Stage::Oracle, Stage::Compile, Stage::Run]
                .into_iter()
                .find(|s| signature.kind == Kind::Timeout && s.name() == signature.detail)
                .unwrap_or(Stage::Compile);
            CaseResult {
                outcome: timeout_outcome(stage, stage_limit(&self.run, stage)),
                bundle: None,
                oracle: (stage != Stage::Oracle)
                    .then(|| pimdiff_oracle::reference(case).ok())
                    .flatten(),
                machine_output: None,
                attribution: None,
            }
        });
        let mut case = case.clone();
        case.expected = result.oracle.clone();
        judge(&case, &result, &self.run, SuspectSource::NotYet)
    }

    fn write_finding(
        &self,
        dir: &Path,
        _case: &Case,
        evidence: &Dossier,
        meta: &mut FindingMeta,
    ) -> Result<(), pimdiff_atomic::Error> {
        let report = crate::report::render_filed(evidence, Some(&meta.signature));
        // What `repro` and `replay` can confirm without localizing: the saved case's own
        // outcome signature (the finding's `signature` may be a localized cause).
        if let Some(own) = evidence.result.outcome.signature() {
            meta.expect = crate::finding::Expectation::Signature(own.to_string());
        }
        meta.lowering = self.run.lowering_choice().map(|l| l.name().to_string());
        meta.injected_bug = match (&self.run.compiler, &self.run.second) {
            // One version: replaying it needs the bug. (An N-version hunt's bug may sit in
            // either lowering; its finding records the compilers in words only.)
            (CompilerUnderTest::Mutated(bug, _), None) => Some(bug.name().to_string()),
            _ => None,
        };
        meta.suspects = evidence
            .suspects
            .list()
            .iter()
            .filter_map(|s| serde_json::to_value(s).ok())
            .collect();
        meta.schedule = evidence.result.outcome.schedule().map(str::to_string);
        if let Outcome::Crash {
            message, location, ..
        } = &evidence.result.outcome
        {
            meta.message = Some(message.clone());
            meta.frames = location.iter().cloned().collect();
        }
        files::write_files(
            dir,
            &evidence.case,
            evidence.result.bundle.as_ref(),
            &report,
            &crate::report::attachments(&evidence.case, &evidence.result),
        )
    }

    fn describe(&self, evidence: &Dossier) -> String {
        evidence.result.outcome.summary()
    }
}
