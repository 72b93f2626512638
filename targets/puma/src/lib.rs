//! The PUMA compiler (ASPLOS'19, snapshot c2ef1ac) as a compiler under test:
//! `pimdiff hunt --target puma` ([`PumaTarget`]).
//!
//! A case is a [`PumaNetwork`] drawn from a case seed ([`network_from_seed`]) with its data
//! ([`network_data`]: small integers inside the machine's range, drawn again from the seed for
//! every minimized variant). [`driver_input`] writes the two files `puma-driver` (built by
//! `scripts/build-puma.sh`) reads; [`compile`] runs it in a directory of its own, pinned
//! (fixed environment, ASLR off), under a deadline and a memory limit, in the plain tree and,
//! for a share of the cases, the sanitizer tree ([`case`]). A crash is signed by its frames
//! ([`frames`]); a compile that succeeds is checked ([`check`]): its programs and weights run
//! on the PUMA machine with the inputs where the [`placement`] file says, and every known output
//! element must equal the exact [`reference`]; a wrong one is traced back to the instructions
//! that computed it ([`localize`]). [`outcome`] files everything on the shared `Kind`s with
//! signatures by root cause; [`reductions`] make networks smaller for the engine's minimizer;
//! [`files`] writes a finding (the network, the driver's files, a standalone [`model_cpp`],
//! the compiler's outputs, the machine's report) and [`repro`] replays one. [`inject`] puts
//! known miscompilations into a compile's output, for tests of the set-up.
//! `docs/puma.md` describes the API's semantics, the formats and the numerics;
//! `docs/puma-findings.md` what hunts found.

pub mod api;
pub mod case;
pub mod check;
pub mod compile;
pub mod data;
pub mod driver_input;
pub mod files;
pub mod frames;
pub mod generate;
pub mod graph;
pub mod inject;
pub mod localize;
pub mod model_cpp;
pub mod network;
pub mod outcome;
pub mod placement;
pub mod probe;
pub mod reductions;
pub mod reference;
pub mod repair;
pub mod repro;
pub mod tensors;
pub mod user_check;
pub mod user_model;

pub use data::network_data;
pub use generate::{network_from_seed, PumaNetConfig};
pub use network::{PumaNetwork, Shape};
pub use reference::{reference, NumericRange, Reference};
pub use tensors::NetworkData;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use self::case::{CaseContext, CaseRun, PumaCase, TreeRun};
use self::compile::Tree;
use self::files::Evidence;
use pimdiff_engine::coverage::Coverage;
use pimdiff_engine::finding::{FindingMeta, Kind, Signature};
use pimdiff_engine::hunt::grouping::Cause;
use pimdiff_engine::hunt::shrink::{shrink, ShrinkOptions};
use pimdiff_engine::hunt::watchdog::{Stage, StageClock};
use pimdiff_engine::hunt::Edges;
use pimdiff_engine::hunt::{Budget, Observation, Target, Triaged};

/// The PUMA target: networks of `cases.net` through the trees of `cases.setup`, checked under
/// `cases.check`.
#[derive(Clone, Debug)]
pub struct PumaTarget {
    pub cases: CaseContext,
}

impl PumaTarget {
    /// The trees of the set-up, plain first.
    fn trees(&self) -> impl Iterator<Item = Tree> + '_ {
        [Tree::Plain, Tree::Sanitize]
            .into_iter()
            .filter(|&t| self.cases.setup.tree(t).is_some())
    }

    /// The tree in which `case` shows `signature` (plain first), if any, with its run. A
    /// mismatch signed by its cause shows when that repair makes the compile right
    /// ([`CaseContext::showing`]).
    fn tree_showing(&self, case: &PumaCase, signature: &Signature) -> Option<(Tree, TreeRun)> {
        self.trees()
            .map(|t| (t, self.cases.showing(case, t, signature)))
            .find(|(_, (_, shows))| *shows)
            .map(|(t, (run, _))| (t, run))
    }

    /// The evidence of `case` for `signature`, from `run` when it shows it, else from a new
    /// run in each tree.
    fn evidence_of(
        &self,
        case: &PumaCase,
        original: &PumaNetwork,
        run: Option<(TreeRun, bool)>,
        signature: &Signature,
    ) -> Evidence {
        let found = run
            .filter(|(_, shows)| *shows)
            .map(|(r, _)| (r.outcome.tree, r))
            .or_else(|| self.tree_showing(case, signature));
        let (reproduced, run) = match found {
            Some((_, r)) => (true, r),
            None => (false, self.cases.run_in(case, Tree::Plain)),
        };
        Evidence {
            signature: signature.clone(),
            case_seed: case.seed,
            original: original.clone(),
            reproduced,
            run,
        }
    }
}

impl Target for PumaTarget {
    type Case = PumaCase;
    type Run = CaseRun;
    type Evidence = Evidence;

    fn name(&self) -> &'static str {
        "puma"
    }

    fn compiler(&self) -> String {
        format!(
            "PUMA compiler (puma-driver of {})",
            self.cases.setup.plain.display()
        )
    }

    fn generator(&self) -> serde_json::Value {
        serde_json::to_value(&self.cases.net).unwrap_or_default()
    }

    fn case(&self, case_seed: u64) -> PumaCase {
        PumaCase {
            network: network_from_seed(&self.cases.net, case_seed),
            seed: case_seed,
        }
    }

    fn size(&self, case: &PumaCase) -> u64 {
        reductions::size_of(&case.network)
    }

    fn run(&self, case: &PumaCase, _clock: &StageClock) -> CaseRun {
        self.cases.run_case(case)
    }

    fn observe(&self, run: &CaseRun) -> Observation {
        if let (Some(c), Some(e)) = (&self.cases.setup.coverage, self.edges(run)) {
            c.record(&e);
        }
        let kind = run.kind();
        Observation {
            kind,
            signatures: run.signatures(),
            decline_reason: run
                .runs
                .iter()
                .find(|r| r.outcome.kind == Kind::Unsupported)
                .and_then(|r| r.outcome.decline.clone())
                .filter(|_| kind == Kind::Unsupported),
        }
    }

    /// Each compile has its own deadline and memory limit, and the machine its step budget:
    /// no watchdog thread.
    fn stage_limit(&self, _stage: Stage) -> Option<Duration> {
        None
    }

    fn passes(&self) -> usize {
        reductions::PASSES
    }

    fn candidates(&self, pass: usize, case: &PumaCase) -> Vec<(String, PumaCase)> {
        reductions::candidates(pass, &case.network)
            .into_iter()
            .map(|(line, network)| {
                (
                    line,
                    PumaCase {
                        network,
                        seed: case.seed,
                    },
                )
            })
            .collect()
    }

    /// A mismatch's cause is the repair of its compiled program ([`repair`]): buckets of
    /// different operations whose first cases one edit repairs are one finding. Other
    /// signatures are their own cause. The repair is searched in the tree that shows the
    /// signature, within the budget (a search cut short leaves the signature as it is).
    fn cause(
        &self,
        case: &PumaCase,
        signature: &Signature,
        budget: &Budget,
        cancel: &AtomicBool,
    ) -> Cause {
        if signature.kind != Kind::Mismatch {
            return Cause::unlocalized(signature.clone());
        }
        let stop = || cancel.load(Ordering::SeqCst) || budget.expired();
        for tree in self.trees() {
            let (run, found) = self.cases.repair(case, tree, &stop);
            if run.outcome.kind != Kind::Mismatch {
                continue;
            }
            return match found {
                Some(r) => Cause {
                    signature: Signature::new(Kind::Mismatch, r.name),
                    localized: true,
                    also: r.also,
                },
                None => Cause::unlocalized(signature.clone()),
            };
        }
        Cause::unlocalized(signature.clone())
    }

    /// Minimization recompiles every candidate in the tree that showed the finding (the
    /// compiler's output depends on the heap, so nothing is assumed to survive an edit); a
    /// candidate keeps a mismatch's cause while the cause's repair still makes it right,
    /// whatever operation it then shows. A hang is not minimized (each try would cost the
    /// whole limit), nor a finding that no longer shows on the representative case.
    fn triage(
        &self,
        case: &PumaCase,
        cause: &Cause,
        budget: &Budget,
        cancel: &AtomicBool,
    ) -> Triaged<Self> {
        let sig = &cause.signature;
        let shown = self.tree_showing(case, sig);
        let tree = shown.as_ref().map_or(Tree::Plain, |(t, _)| *t);
        let stopped = AtomicBool::new(true);
        let skip = sig.kind == Kind::Hang || shown.is_none();
        let passes: Vec<usize> = (0..self.passes()).collect();
        let shrunk = shrink(
            case,
            &passes,
            |pass, c| self.candidates(pass, c),
            &ShrinkOptions {
                max_steps: usize::try_from(budget.max_runs).unwrap_or(usize::MAX),
                deadline: budget.deadline,
                resume: false,
            },
            if skip { &stopped } else { cancel },
            |c| self.cases.showing(c, tree, sig).1,
        );
        let run = if shrunk.kept == 0 {
            shown.map(|(_, r)| (r, true))
        } else {
            Some(self.cases.showing(&shrunk.case, tree, sig))
        };
        let evidence = self.evidence_of(&shrunk.case, &case.network, run, sig);
        Triaged::of_shrunk(self, case, shrunk, cause.clone(), evidence)
    }

    fn evidence(&self, case: &PumaCase, run: Option<CaseRun>, signature: &Signature) -> Evidence {
        let shown = run.and_then(|r| {
            r.runs
                .into_iter()
                .find(|t| t.outcome.signature.as_ref() == Some(signature))
        });
        self.evidence_of(case, &case.network, shown.map(|r| (r, true)), signature)
    }

    fn write_finding(
        &self,
        dir: &Path,
        case: &PumaCase,
        evidence: &Evidence,
        meta: &mut FindingMeta,
    ) -> Result<(), pimdiff_atomic::Error> {
        files::write_files(&self.cases, dir, case, evidence, meta)
    }

    fn describe(&self, evidence: &Evidence) -> String {
        evidence.run.outcome.detail.clone()
    }

    /// The plain compile's edges (the sanitizer tree is not instrumented).
    fn edges(&self, run: &CaseRun) -> Option<Edges> {
        run.runs
            .iter()
            .filter_map(|r| r.compile.as_ref())
            .find(|c| c.tree == Tree::Plain)?
            .edges
            .clone()
    }

    /// gcov's counts over the PUMA compiler's sources (`src/`, `include/` of the coverage
    /// tree), when the hunt measures them.
    fn coverage(&self) -> Option<Coverage> {
        self.cases.setup.coverage.as_ref()?.summary()
    }

    fn summary_details(&self) -> serde_json::Value {
        serde_json::json!({
            "quirks": self.cases.check.quirks_name(),
            "frac_bits": 0,
            "sanitize_rate": self.cases.sanitize_rate,
            "plain_tree": self.cases.setup.plain,
            "sanitize_tree": self.cases.setup.sanitize,
            "inject": self.cases.inject.map(|i| i.name()),
        })
    }
}
