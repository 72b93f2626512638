//! One hunt case: network `k` of a seed, compiled and checked in each requested pipeline.

use serde::Serialize;

use super::compile::{compile, CompileRun, CompilerSetup, Pipeline};
use super::cross;
use super::outcome::{check_outcome, compile_outcome, severity, CaseOutcome, NodeSeen};
use super::profile::{self, Phase};
use crate::network::{NetConfig, Network};
use pimdiff_engine::finding::{Kind, Signature};
use pimdiff_engine::hunt::Edges;

/// The value `time()` returns while case `case_seed` compiles: a fixed date plus a
/// seed-dependent number of seconds (under four years), recorded in every finding.
pub fn pin_time(case_seed: u64) -> u64 {
    1_600_000_000 + case_seed % 120_000_000
}

/// The pipeline a finding is filed under: the one its signature names (`element` for a
/// `cross-mode` finding, which compiles both: [`finding_pipelines`]).
pub fn finding_pipeline(signature: &Signature) -> Pipeline {
    if is_cross(signature) || signature.detail.starts_with("element/") {
        Pipeline::Element
    } else {
        Pipeline::Batch
    }
}

/// Whether `signature` is a `cross-mode` finding's (batch and element compared).
pub fn is_cross(signature: &Signature) -> bool {
    signature.kind == Kind::CrossMode
}

/// Every pipeline a finding of `signature` compiles (and saves): both for a `cross-mode`
/// finding, batch first, else the signature's own.
pub fn finding_pipelines(signature: &Signature) -> Vec<Pipeline> {
    if is_cross(signature) {
        vec![Pipeline::Batch, Pipeline::Element]
    } else {
        vec![finding_pipeline(signature)]
    }
}

/// What every case of one hunt shares.
#[derive(Clone, Debug)]
pub struct CaseContext {
    pub net: NetConfig,
    pub setup: CompilerSetup,
    pub pipelines: Vec<Pipeline>,
}

/// One case's results, per pipeline.
pub struct CaseResult {
    pub network: Network,
    pub case_seed: u64,
    pub outcomes: Vec<(CaseOutcome, Option<CompileRun>)>,
    /// With both pipelines: the two checks disagree where the reference cannot say which is
    /// wrong ([`cross`]).
    pub cross: Option<CaseOutcome>,
    /// The edges the compiles entered (all pipelines), when coverage is measured.
    pub edges: Option<Edges>,
}

/// A case's outcome kind over all pipelines (the most severe) and its finding signatures.
#[derive(Clone, Debug, Serialize)]
pub struct CaseSummary {
    pub kind: Kind,
    pub signatures: Vec<Signature>,
    pub decline: Option<String>,
}

impl CaseContext {
    /// Compiles and checks `network` in `pipeline`; keeps the compile's files when `keep`.
    pub fn run_one(
        &self,
        network: &Network,
        case_seed: u64,
        pipeline: Pipeline,
        keep: bool,
    ) -> (CaseOutcome, Option<CompileRun>) {
        let (o, run, _, _) = self.run_observed(network, case_seed, pipeline, keep);
        (o, run)
    }

    /// [`run_one`](Self::run_one) with the check's per-node observations.
    fn run_observed(
        &self,
        network: &Network,
        case_seed: u64,
        pipeline: Pipeline,
        keep: bool,
    ) -> (
        CaseOutcome,
        Option<CompileRun>,
        Option<Vec<NodeSeen>>,
        Option<Edges>,
    ) {
        let unsupported =
            |detail: String| CaseOutcome::new(pipeline, Kind::Unsupported, None, detail);
        let json = match network.to_model_json() {
            Ok(j) => j,
            Err(e) => return (unsupported(format!("network: {e}")), None, None, None),
        };
        let run = match compile(&self.setup, &json, pipeline, pin_time(case_seed)) {
            Ok(r) => r,
            Err(e) => {
                return (
                    unsupported(format!("cannot run PIMCOMP-NN: {e}")),
                    None,
                    None,
                    None,
                )
            }
        };
        let (outcome, seen) = profile::timed(Phase::Check, || {
            match compile_outcome(&self.setup, pipeline, &run) {
                Some(o) => (o, None),
                None => check_outcome(pipeline, &run, case_seed),
            }
        });
        let edges = run.edges.clone();
        (outcome, keep.then_some(run), seen, edges)
    }

    /// `network` in each of `pipelines`, and with both, the cross-pipeline comparison.
    pub fn run_pipelines(
        &self,
        network: &Network,
        case_seed: u64,
        pipelines: &[Pipeline],
        keep: bool,
    ) -> (Vec<(CaseOutcome, Option<CompileRun>)>, Option<CaseOutcome>) {
        let (outcomes, cross, _) = self.run_pipelines_measured(network, case_seed, pipelines, keep);
        (outcomes, cross)
    }

    /// [`run_pipelines`](Self::run_pipelines) with the union of the compiles' edges.
    #[allow(clippy::type_complexity)]
    fn run_pipelines_measured(
        &self,
        network: &Network,
        case_seed: u64,
        pipelines: &[Pipeline],
        keep: bool,
    ) -> (
        Vec<(CaseOutcome, Option<CompileRun>)>,
        Option<CaseOutcome>,
        Option<Edges>,
    ) {
        let mut outcomes = Vec::new();
        let mut seen = Vec::new();
        let mut edges: Option<Edges> = None;
        for &p in pipelines {
            let (o, run, s, e) = self.run_observed(network, case_seed, p, keep);
            outcomes.push((o, run));
            seen.push((p, s));
            if let Some(e) = e {
                edges.get_or_insert_with(Edges::default).union_with(&e);
            }
        }
        let of = |p| {
            seen.iter()
                .find(|(q, _)| *q == p)
                .and_then(|(_, s)| s.as_ref())
        };
        let cross = profile::timed(Phase::Cross, || {
            match (of(Pipeline::Batch), of(Pipeline::Element)) {
                (Some(b), Some(e)) => cross::compare(b, e).disagreement.map(|d| {
                    CaseOutcome::new(
                        Pipeline::Element,
                        Kind::CrossMode,
                        Some(d.signature()),
                        d.detail(),
                    )
                }),
                _ => None,
            }
        });
        (outcomes, cross, edges)
    }

    /// `network` compiled as a finding of `signature` needs ([`finding_pipelines`]): the
    /// outcome that carries `signature` when one does, else the last pipeline's, and with
    /// `keep` every compile's files, in pipeline order (none without `keep`). What a
    /// minimization step runs.
    pub fn run_for_signature(
        &self,
        network: &Network,
        case_seed: u64,
        signature: &Signature,
        keep: bool,
    ) -> (CaseOutcome, Vec<(Pipeline, CompileRun)>) {
        let pipelines = finding_pipelines(signature);
        let (outcomes, cross) = self.run_pipelines(network, case_seed, &pipelines, keep);
        let mut last = None;
        let mut runs = Vec::new();
        for (o, run) in outcomes {
            if let Some(run) = run {
                runs.push((o.pipeline, run));
            }
            last = Some(o);
        }
        let last = last.unwrap_or_else(|| unreachable!("one outcome per pipeline"));
        match cross {
            Some(c) if c.has(signature) => (c, runs),
            _ => (last, runs),
        }
    }

    /// Network `network` (of case seed `case_seed`) in every pipeline of the hunt.
    pub fn run_case(&self, network: &Network, case_seed: u64, keep: bool) -> CaseResult {
        let (outcomes, cross, edges) =
            self.run_pipelines_measured(network, case_seed, &self.pipelines, keep);
        CaseResult {
            network: network.clone(),
            case_seed,
            outcomes,
            cross,
            edges,
        }
    }
}

impl CaseResult {
    pub fn summary(&self) -> CaseSummary {
        let all = || self.outcomes.iter().map(|(o, _)| o).chain(&self.cross);
        let kind = all()
            .map(|o| o.kind)
            .min_by_key(|k| severity(*k))
            .unwrap_or(Kind::Pass);
        let signatures = all().flat_map(|o| o.signatures().cloned()).collect();
        let decline = self.outcomes.iter().find_map(|(o, _)| {
            let why = if o.kind == Kind::Unsupported {
                Some(o.detail.as_str())
            } else {
                o.unchecked.as_deref()
            };
            why.map(pimdiff_engine::finding::abstract_message)
        });
        CaseSummary {
            kind,
            signatures,
            decline,
        }
    }
}
