//! CIM-MLC (the multi-level compilation stack for computing-in-memory accelerators, ASPLOS'24;
//! snapshot b81e62b, Python) as a compiler under test: `pimdiff hunt --target cim-mlc`
//! ([`CimMlcTarget`]).
//!
//! A case is a network over what CIM-MLC's front end claims to read ([`network`], drawn by
//! [`generate`]) with integer data ([`data`]), an architecture in CIM-MLC's own configuration
//! format ([`arch`]) and the precisions `main.py` takes: `model.onnx` ([`onnx`]), `arch.py` and
//! `case.json`. CIM-MLC compiles it through pimdiff's driver kept running as a server
//! ([`driver`], in a tree of `scripts/build-cim-mlc.sh`: [`tree`]) into meta-operator flows at
//! up to three granularities plus `layout.json`, its own record of where every layer's weights
//! and every value went. The flows run on the CIM-MLC machine (`pimdiff-cim-mlc`), each
//! granularity on its own, and every network output is compared exactly with the [`reference`]
//! ([`check`]); the granularities are also compared with each other. [`outcome`] files
//! everything on the shared kinds with signatures by root cause; [`reductions`] make cases
//! smaller for the engine's one minimizer; [`files`] writes a finding and [`repro`] replays one.
//! `docs/cim-mlc.md` is the target's page, `docs/cim-mlc-isa.md` the machine's semantics.

pub mod arch;
pub mod blame;
pub mod case;
pub mod check;
pub mod data;
pub mod driver;
pub mod files;
pub mod generate;
pub mod network;
pub mod onnx;
pub mod origins;
pub mod outcome;
pub mod reductions;
pub mod reference;
pub mod repro;
pub mod tree;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use pimdiff_engine::finding::{FindingMeta, Kind, Signature};
use pimdiff_engine::hunt::grouping::Cause;
use pimdiff_engine::hunt::target::minimize;
use pimdiff_engine::hunt::watchdog::{Stage, StageClock};
use pimdiff_engine::hunt::{Budget, Observation, Target, Triaged};

use self::case::{CaseContext, CaseRun, CimCase};
use self::files::Evidence;
use self::generate::{network_from_seed, setting_from_seed};

/// The CIM-MLC target: cases of `cases.net` through `cases.tree`'s driver.
#[derive(Clone, Debug)]
pub struct CimMlcTarget {
    pub cases: CaseContext,
}

impl Target for CimMlcTarget {
    type Case = CimCase;
    type Run = CaseRun;
    type Evidence = Evidence;

    fn name(&self) -> &'static str {
        "cim-mlc"
    }

    fn compiler(&self) -> String {
        format!(
            "CIM-MLC b81e62b (tree {}{})",
            self.cases.tree.dir.display(),
            if self.cases.tree.patches.is_empty() {
                String::new()
            } else {
                format!(", patches {}", self.cases.tree.patches.join(", "))
            }
        )
    }

    fn generator(&self) -> serde_json::Value {
        serde_json::to_value(&self.cases.net).unwrap_or_default()
    }

    fn case(&self, case_seed: u64) -> CimCase {
        CimCase {
            network: network_from_seed(&self.cases.net, case_seed),
            setting: setting_from_seed(&self.cases.net, case_seed),
            seed: case_seed,
        }
    }

    fn size(&self, case: &CimCase) -> u64 {
        reductions::size_of(case)
    }

    fn run(&self, case: &CimCase, _clock: &StageClock) -> CaseRun {
        self.cases.run_case(case)
    }

    fn observe(&self, run: &CaseRun) -> Observation {
        Observation {
            kind: run.kind(),
            signatures: run.signatures(),
            decline_reason: run.outcomes.iter().find_map(|o| o.decline.clone()),
        }
    }

    /// Each compile has its own deadline and memory limit (the driver's server), and the
    /// machine its step budget: no watchdog thread.
    fn stage_limit(&self, _stage: Stage) -> Option<Duration> {
        None
    }

    /// A fault or wrong value at a meta-operator whose printing line is known is localized to
    /// that line of CIM-MLC's code generator: buckets of one line merge, whatever the outcome
    /// kind ([`check::is_localized`]). Crashes are signed by their exception's site already.
    fn cause(
        &self,
        _case: &CimCase,
        signature: &Signature,
        _budget: &Budget,
        _cancel: &AtomicBool,
    ) -> Cause {
        Cause {
            signature: signature.clone(),
            localized: check::is_localized(signature),
            also: Vec::new(),
        }
    }

    /// The engine's minimization by the bucket's signature, then the input probe on the
    /// minimized case: a crash that goes away with the network's input behind a convolution
    /// is signed by the pass that failed (`outcome::input_reader_crash`), so the handlers one
    /// such defect trips over (each raising its own exception) end as one finding.
    fn triage(
        &self,
        case: &CimCase,
        cause: &Cause,
        budget: &Budget,
        cancel: &AtomicBool,
    ) -> Triaged<Self> {
        let mut t = minimize(self, case, cause, budget, cancel);
        if cause.signature.kind != Kind::Crash || !t.evidence.reproduced {
            return t;
        }
        if let Some(signature) = self.cases.probe_input(&t.case, &mut t.evidence.run) {
            t.evidence.signature = signature.clone();
            t.cause = Cause {
                signature,
                localized: true,
                also: Vec::new(),
            };
        }
        t
    }

    fn passes(&self) -> usize {
        reductions::PASSES
    }

    fn candidates(&self, pass: usize, case: &CimCase) -> Vec<(String, CimCase)> {
        reductions::candidates(pass, case)
    }

    fn evidence(&self, case: &CimCase, run: Option<CaseRun>, signature: &Signature) -> Evidence {
        let run = run.unwrap_or_else(|| self.cases.run_case(case));
        Evidence {
            signature: signature.clone(),
            reproduced: run.signatures().contains(signature),
            run,
        }
    }

    fn write_finding(
        &self,
        dir: &Path,
        case: &CimCase,
        evidence: &Evidence,
        meta: &mut FindingMeta,
    ) -> Result<(), pimdiff_atomic::Error> {
        files::write_files(&self.cases, dir, case, evidence, meta)
    }

    fn describe(&self, evidence: &Evidence) -> String {
        evidence
            .run
            .outcomes
            .iter()
            .find(|o| o.signature.as_ref() == Some(&evidence.signature))
            .map(|o| o.detail.clone())
            .unwrap_or_default()
    }

    /// The share of declined networks that does not fail a hunt: the driver declines only
    /// networks CIM-MLC cannot take by design, which the generator does not draw.
    fn max_unsupported_share(&self) -> Option<f64> {
        Some(0.02)
    }

    fn summary_details(&self) -> serde_json::Value {
        serde_json::json!({
            "tree": self.cases.tree.dir,
            "tree_key": self.cases.tree.key,
            "patches": self.cases.tree.patches,
            "torch_cuda": self.cases.tree.torch_cuda,
            "compile_timeout_s": self.cases.timeout.as_secs_f64(),
        })
    }
}

impl CaseRun {
    /// The run's kind: a finding's when there is one (the most severe first), else what the
    /// run came to.
    pub fn kind(&self) -> Kind {
        let rank = |k: Kind| match k {
            Kind::Crash | Kind::Hang => 0,
            Kind::Fault => 1,
            Kind::Mismatch => 2,
            Kind::Poisoned => 4,
            Kind::Unsupported => 5,
            Kind::Pass => 6,
            _ => 3,
        };
        self.outcomes
            .iter()
            .map(|o| o.kind)
            .min_by_key(|&k| rank(k))
            .unwrap_or(Kind::Pass)
    }

    /// Every finding the run shows.
    pub fn signatures(&self) -> Vec<Signature> {
        self.outcomes
            .iter()
            .filter_map(|o| o.signature.clone())
            .collect()
    }
}
