//! Conv2d and MVM cases through a compiler that speaks the bundle protocol: the in-repo
//! compiler (either lowering, or both as N versions), an external command, or an injected bug.
//!
//! The first target, and the one with the deepest judgement: a case is generated
//! ([`generate`]), compiled, run on the PIMSim interpreter and compared with the oracle
//! (`crate::check`); buckets of failing cases merge by their localized cause and one
//! representative per cause is minimized and localized, and judged once into a `Dossier`
//! (`crate::triage`); a finding is a case directory with its bundle, and the report and
//! pictures rendered from the dossier ([`files`], `crate::report`).

pub mod check;
pub mod compilers;
pub mod corpus;
#[cfg(feature = "coverage-counters")]
pub mod counters;
pub mod detection;
pub mod files;
pub mod fuzz_targets;
pub mod generate;
pub use generate::options;
pub mod guided;
pub mod interop;
pub mod mutate;
pub mod report;
pub mod shrink;
pub mod triage;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use pimdiff_oracle::Case;

use self::generate::{case_and_options_from_seed, GenConfig};
use self::options::CaseOptions;
use crate::check::outcome::timeout_outcome;
use crate::check::{check_case, check_case_staged, stage_limit, CaseResult, Outcome, RunConfig};
use crate::compilers::CompilerUnderTest;
use crate::triage::{judge, Dossier, SuspectSource};
use pimdiff_engine::finding::{abstract_message, FindingMeta, Kind, MinimizationStats, Signature};
use pimdiff_engine::hunt::grouping::Cause;
use pimdiff_engine::hunt::watchdog::{Stage, StageClock};
use pimdiff_engine::hunt::{Budget, Observation, Target, Triaged};
use pimdiff_engine::summary::DEFAULT_MARGIN;

/// The tensor target: cases of `generator` checked with `run`'s compiler and machine.
#[derive(Clone, Debug)]
pub struct TensorTarget {
    generator: GenConfig,
    run: RunConfig,
    /// The in-repo compiler's options of `run` when cases may vary them
    /// ([`CaseOptions::variable_in`]).
    variable: Option<pimdiff_compiler::CompileOptions>,
}

/// A tensor case as a hunt makes, runs, minimizes and saves it: the case, and the options of
/// the in-repo compiler it is compiled with ([`options`]; `None`: the run's own, as for an
/// external compiler or an injected bug).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorCase {
    pub case: Case,
    pub options: Option<CaseOptions>,
}

impl TensorCase {
    /// A case compiled with the run's own options.
    pub fn plain(case: Case) -> TensorCase {
        TensorCase {
            case,
            options: None,
        }
    }

    /// The same options with another case (a reduction or a mutation of this one).
    pub fn with_case(&self, case: Case) -> TensorCase {
        TensorCase {
            case,
            options: self.options,
        }
    }
}

impl TensorTarget {
    /// A target generating with `generator` (sanitized: ratios within 0..=1) and checking
    /// with `run`.
    pub fn new(generator: &GenConfig, run: RunConfig) -> TensorTarget {
        TensorTarget {
            generator: generator.sanitized(),
            variable: CaseOptions::variable_in(&run),
            run,
        }
    }

    /// The run configuration `case` is checked with: the target's, with the case's options.
    pub fn run_for(&self, case: &TensorCase) -> std::borrow::Cow<'_, RunConfig> {
        CaseOptions::run_for(case.options.as_ref(), &self.run)
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
    type Case = TensorCase;
    type Run = CaseResult;
    type Evidence = Dossier;

    fn name(&self) -> &'static str {
        "cases"
    }

    /// The run's compiler; when cases vary its options, says so (each finding names its own).
    fn compiler(&self) -> String {
        let own = self.run.describe_compiler();
        match self.variable {
            Some(_) => format!("{own}; options drawn per case"),
            None => own,
        }
    }

    fn generator(&self) -> serde_json::Value {
        serde_json::to_value(&self.generator).unwrap_or_default()
    }

    /// The case of the seed, with the options drawn for it when the run's compiler has them
    /// (forced by the run's own where a flag set them).
    fn case(&self, case_seed: u64) -> TensorCase {
        let (case, drawn) = case_and_options_from_seed(&self.generator, case_seed);
        TensorCase {
            options: self.variable.map(|forced| drawn.forced_by(&forced)),
            case,
        }
    }

    fn size(&self, case: &TensorCase) -> u64 {
        shrink::case_size(&case.case)
    }

    fn run(&self, case: &TensorCase, clock: &StageClock) -> CaseResult {
        check_case_staged(&case.case, &self.run_for(case), Some(clock))
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

    /// Smaller cases with the same options: minimization keeps what the case compiles with.
    fn candidates(&self, pass: usize, case: &TensorCase) -> Vec<(String, TensorCase)> {
        shrink::FAMILIES.get(pass).map_or_else(Vec::new, |&f| {
            shrink::candidates(f, &case.case)
                .into_iter()
                .map(|(name, c)| (name, case.with_case(c)))
                .collect()
        })
    }

    /// The localized cause (`triage::cause`): buckets of one root cause merge whatever their
    /// shapes.
    fn cause(
        &self,
        case: &TensorCase,
        _signature: &Signature,
        budget: &Budget,
        cancel: &AtomicBool,
    ) -> Cause {
        let run = self.run_for(case);
        let result = check_case(&case.case, &run);
        crate::triage::cause(&case.case, &result, &run, budget, cancel)
    }

    /// Minimization that keeps the outcome kind and guards against drifting into another bug,
    /// then localization (`triage::triage`).
    fn triage(
        &self,
        case: &TensorCase,
        _cause: &Cause,
        budget: &Budget,
        cancel: &AtomicBool,
    ) -> Triaged<Self> {
        let run = self.run_for(case);
        let t = crate::triage::triage(&case.case, &run, budget, cancel);
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
            evidence: judge(&t.case, &t.result, &run, SuspectSource::Known(t.suspects)),
            case: case.with_case(t.case),
        }
    }

    /// A case not run again is a timeout's: its result carries the oracle's output, unless
    /// the oracle was what hung.
    fn evidence(
        &self,
        case: &TensorCase,
        run: Option<CaseResult>,
        signature: &Signature,
    ) -> Dossier {
        let cfg = self.run_for(case);
        let case = &case.case;
        let result = run.unwrap_or_else(|| {
            let stage = [Stage::Oracle, Stage::Compile, Stage::Run]
                .into_iter()
                .find(|s| signature.kind == Kind::Timeout && s.name() == signature.detail)
                .unwrap_or(Stage::Compile);
            CaseResult {
                outcome: timeout_outcome(stage, stage_limit(&cfg, stage)),
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
        judge(&case, &result, &cfg, SuspectSource::NotYet)
    }

    fn write_finding(
        &self,
        dir: &Path,
        case: &TensorCase,
        evidence: &Dossier,
        meta: &mut FindingMeta,
    ) -> Result<(), pimdiff_atomic::Error> {
        let report = crate::report::render_filed(evidence, Some(&meta.signature));
        // The compiler as this case was compiled, options included (what `repro` compares).
        meta.compiler = evidence.compiler.clone();
        if let Some(options) = &case.options {
            meta.details = options.to_details();
        }
        // How an external compiler was run: `repro` and `replay` run it again the same way.
        if let Some(external) = &self.run.external {
            meta.details = external.into_details(std::mem::take(&mut meta.details));
        }
        // What `repro` and `replay` can confirm without localizing: the saved case's own
        // outcome signature (the finding's `signature` may be a localized cause).
        if let Some(own) = evidence.result.outcome.signature() {
            meta.expect = pimdiff_engine::finding::Expectation::Signature(own.to_string());
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
