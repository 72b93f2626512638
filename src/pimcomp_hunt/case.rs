//! One hunt case: network `k` of a seed, compiled and checked in each requested pipeline.

use serde::Serialize;

use super::compile::{compile, CompileRun, CompilerSetup, Pipeline};
use super::outcome::{check_outcome, compile_outcome, severity, CaseOutcome};
use crate::generate::network::{network_from_seed, NetConfig, Network};
use crate::hunt::case_seed;

/// The value `time()` returns while case `case_seed` compiles: a fixed date plus a
/// seed-dependent number of seconds (under four years), recorded in every finding.
pub fn pin_time(case_seed: u64) -> u64 {
    1_600_000_000 + case_seed % 120_000_000
}

/// What every case of one hunt shares.
#[derive(Clone, Debug)]
pub struct CaseContext {
    pub seed: u64,
    pub net: NetConfig,
    pub setup: CompilerSetup,
    pub pipelines: Vec<Pipeline>,
}

/// One case's results, per pipeline.
pub struct CaseResult {
    pub network: Network,
    pub case_seed: u64,
    pub outcomes: Vec<(CaseOutcome, Option<CompileRun>)>,
}

/// A case's outcome kind over all pipelines (the most severe) and its finding signatures.
#[derive(Clone, Debug, Serialize)]
pub struct CaseSummary {
    pub kind: &'static str,
    pub signatures: Vec<String>,
    pub decline: Option<String>,
}

impl CaseContext {
    pub fn network(&self, k: u64) -> (Network, u64) {
        let s = case_seed(self.seed, k);
        (network_from_seed(&self.net, s), s)
    }

    /// Compiles and checks `network` in `pipeline`; keeps the compile's files when `keep`.
    pub fn run_one(
        &self,
        network: &Network,
        case_seed: u64,
        pipeline: Pipeline,
        keep: bool,
    ) -> (CaseOutcome, Option<CompileRun>) {
        let unsupported = |detail: String| CaseOutcome {
            pipeline,
            kind: "unsupported",
            signature: None,
            detail,
            frames: Vec::new(),
        };
        let json = match network.to_model_json() {
            Ok(j) => j,
            Err(e) => return (unsupported(format!("network: {e}")), None),
        };
        let run = match compile(&self.setup, &json, pipeline, pin_time(case_seed)) {
            Ok(r) => r,
            Err(e) => return (unsupported(format!("cannot run PIMCOMP-NN: {e}")), None),
        };
        let outcome = compile_outcome(&self.setup, pipeline, &run)
            .unwrap_or_else(|| check_outcome(pipeline, &run, case_seed));
        (outcome, keep.then_some(run))
    }

    /// Case `k` in every pipeline of the hunt.
    pub fn run_case(&self, k: u64, keep: bool) -> CaseResult {
        let (network, s) = self.network(k);
        let outcomes = self
            .pipelines
            .iter()
            .map(|&p| self.run_one(&network, s, p, keep))
            .collect();
        CaseResult {
            network,
            case_seed: s,
            outcomes,
        }
    }
}

impl CaseResult {
    pub fn summary(&self) -> CaseSummary {
        let kind = self
            .outcomes
            .iter()
            .map(|(o, _)| o.kind)
            .min_by_key(|k| severity(k))
            .unwrap_or("pass");
        let signatures = self
            .outcomes
            .iter()
            .filter_map(|(o, _)| o.signature.clone())
            .collect();
        let decline = self
            .outcomes
            .iter()
            .find(|(o, _)| o.kind == "unsupported")
            .map(|(o, _)| crate::check::outcome::abstract_message(&o.detail));
        CaseSummary {
            kind,
            signatures,
            decline,
        }
    }
}
