//! `pimdiff hunt --target pimcomp-nn`: random networks through the real PIMCOMP-NN compiler,
//! every crash and miscompilation minimized to a small network.
//!
//! A case is the network [`network::network_from_seed`] of its case seed, compiled in each
//! requested pipeline ([`compile`]: own working tree, timeout, memory watchdog, `time()`
//! pinned to [`case::pin_time`]) and checked with `pimdiff pimcomp`'s check ([`check`],
//! judged in [`outcome`]); with both pipelines, their outputs are also compared where the
//! reference cannot judge ([`cross`]). A case can show several findings (one per pipeline, a
//! `core-count` beside a mismatch): each is its own signature. Minimization ([`reductions`])
//! recompiles only the pipelines a signature needs. A finding directory ([`files`]) holds the
//! minimized model, the compiles, the check's report and a `repro.sh`.

pub mod case;
pub mod check;
pub mod compile;
pub mod cores;
pub mod cross;
pub mod files;
pub mod guided;
pub mod mutate;
pub mod network;
pub mod outcome;
pub mod profile;
pub mod reductions;

/// PIMCOMP-NN's vendored libraries, which its coverage does not count as its own source.
pub const VENDORED: [&str; 4] = [
    "backend/zlib",
    "backend/zstr",
    "backend/json",
    "backend/jsoncpp.cpp",
];

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use self::case::{finding_pipeline, CaseContext, CaseResult};
use self::files::FindingRecord;
use self::network::{network_from_seed, Network};
use self::reductions::Shrunk;
use pimdiff_engine::coverage::Coverage;
use pimdiff_engine::finding::{FindingMeta, Kind, MinimizationStats, Signature};
use pimdiff_engine::hunt::grouping::Cause;
use pimdiff_engine::hunt::shrink::{shrink, ShrinkOptions};
use pimdiff_engine::hunt::watchdog::{Stage, StageClock};
use pimdiff_engine::hunt::Edges;
use pimdiff_engine::hunt::{Budget, Observation, Target, Triaged};

/// The PIMCOMP-NN target: networks of `cases.net` through `cases.setup`'s binary in each of
/// `cases.pipelines`.
#[derive(Clone, Debug)]
pub struct PimcompTarget {
    pub cases: CaseContext,
}

/// One network and the seed it was made from (which also seeds the check and pins `time()`).
#[derive(Clone, Debug, PartialEq)]
pub struct NetCase {
    pub network: Network,
    pub seed: u64,
}

impl PimcompTarget {
    /// `both`, `batch` or `element`: the pipelines hunted.
    pub fn mode(&self) -> &'static str {
        match self.cases.pipelines.as_slice() {
            [compile::Pipeline::Batch] => "batch",
            [compile::Pipeline::Element] => "element",
            _ => "both",
        }
    }

    /// `case` compiled as a finding of `signature` needs (keeping the compiles' files), with
    /// `original` the network it was minimized from.
    fn record(
        &self,
        case: &NetCase,
        original: &Network,
        signature: &Signature,
        stats: Shrunk,
    ) -> FindingRecord {
        let (outcome, runs) =
            self.cases
                .run_for_signature(&case.network, case.seed, signature, true);
        FindingRecord {
            signature: signature.clone(),
            pipeline: finding_pipeline(signature),
            case_seed: case.seed,
            original: original.clone(),
            minimized: case.network.clone(),
            stats,
            outcome,
            runs,
        }
    }
}

/// A network's size for the engine's statistics: nodes, then the largest channel count and
/// spatial size (the reductions lower them in that order of importance).
fn size_of(net: &Network) -> u64 {
    let (nodes, channels, spatial) = net.size();
    (nodes as u64) * 1_000_000 + (channels.min(999) as u64) * 1_000 + spatial.min(999) as u64
}

impl Target for PimcompTarget {
    type Case = NetCase;
    type Run = CaseResult;
    type Evidence = FindingRecord;

    fn name(&self) -> &'static str {
        "pimcomp-nn"
    }

    fn compiler(&self) -> String {
        self.cases.setup.bin.display().to_string()
    }

    fn generator(&self) -> serde_json::Value {
        serde_json::to_value(&self.cases.net).unwrap_or_default()
    }

    fn case(&self, case_seed: u64) -> NetCase {
        NetCase {
            network: network_from_seed(&self.cases.net, case_seed),
            seed: case_seed,
        }
    }

    fn size(&self, case: &NetCase) -> u64 {
        size_of(&case.network)
    }

    fn run(&self, case: &NetCase, _clock: &StageClock) -> CaseResult {
        self.cases.run_case(&case.network, case.seed, false)
    }

    fn observe(&self, run: &CaseResult) -> Observation {
        if let (Some(c), Some(e)) = (&self.cases.setup.coverage, &run.edges) {
            c.record(e);
        }
        let s = run.summary();
        let mut signatures = s.signatures;
        signatures.sort();
        signatures.dedup();
        Observation {
            kind: s.kind,
            signatures,
            decline_reason: s.decline,
        }
    }

    /// Each compile enforces its own deadline and memory limit, and the check is bounded by
    /// the interpreter's step budget: no watchdog thread.
    fn stage_limit(&self, _stage: Stage) -> Option<Duration> {
        None
    }

    fn passes(&self) -> usize {
        1
    }

    fn candidates(&self, _pass: usize, case: &NetCase) -> Vec<(String, NetCase)> {
        reductions::valid_candidates(&case.network)
            .into_iter()
            .map(|(line, network)| {
                let c = NetCase {
                    network,
                    seed: case.seed,
                };
                (line, c)
            })
            .collect()
    }

    /// A mismatch's cause is what its signature's variants share ([`outcome::mismatch_cause`]):
    /// the pipeline and the instructions that wrote the wrong inputs, or the operator; every
    /// other signature is its own cause. A pure function of the signature: nothing is run.
    fn cause(
        &self,
        _case: &NetCase,
        signature: &Signature,
        _budget: &Budget,
        _cancel: &AtomicBool,
    ) -> Cause {
        match outcome::mismatch_cause(signature) {
            Some((signature, localized)) => Cause {
                signature,
                localized,
                also: Vec::new(),
            },
            None => Cause::unlocalized(signature.clone()),
        }
    }

    /// Minimization recompiles only the pipelines the signature needs, and keeps a candidate
    /// while it shows the cause (any signature whose cause it is); a hang is not minimized
    /// (each try would cost the full compile limit).
    fn triage(
        &self,
        case: &NetCase,
        cause: &Cause,
        budget: &Budget,
        cancel: &AtomicBool,
    ) -> Triaged<Self> {
        let sig = &cause.signature;
        let options = ShrinkOptions {
            max_steps: usize::try_from(budget.max_runs).unwrap_or(usize::MAX),
            deadline: budget.deadline,
            resume: false,
        };
        let stopped = AtomicBool::new(true);
        let shrunk = profile::timed(profile::Phase::Minimize, || {
            shrink(
                case,
                &[0],
                |pass, c| self.candidates(pass, c),
                &options,
                if sig.kind == Kind::Hang {
                    &stopped
                } else {
                    cancel
                },
                |c| {
                    self.cases
                        .run_for_signature(&c.network, c.seed, sig, false)
                        .0
                        .has(sig)
                },
            )
        });
        let stats = Shrunk {
            tried: shrunk.tried as u64,
            kept: shrunk.kept as u64,
            before: case.network.size(),
            after: shrunk.case.network.size(),
            cut_short: shrunk.cut_short,
        };
        let evidence = self.record(&shrunk.case, &case.network, sig, stats);
        Triaged {
            stats: MinimizationStats {
                tried: shrunk.tried as u64,
                kept: shrunk.kept as u64,
                original_size: size_of(&case.network),
                minimized_size: size_of(&shrunk.case.network),
                cut_short: shrunk.cut_short,
            },
            log: shrunk.log,
            cause: cause.clone(),
            case: shrunk.case,
            evidence,
        }
    }

    /// The compiles of `case` for `signature`, kept for saving (the sweep's run did not keep
    /// its files).
    fn evidence(
        &self,
        case: &NetCase,
        _run: Option<CaseResult>,
        signature: &Signature,
    ) -> FindingRecord {
        let size = case.network.size();
        let stats = Shrunk {
            tried: 0,
            kept: 0,
            before: size,
            after: size,
            cut_short: true,
        };
        self.record(case, &case.network, signature, stats)
    }

    fn write_finding(
        &self,
        dir: &Path,
        _case: &NetCase,
        evidence: &FindingRecord,
        meta: &mut FindingMeta,
    ) -> Result<(), pimdiff_atomic::Error> {
        profile::timed(profile::Phase::Write, || {
            files::write_files(&self.cases, dir, evidence, meta)
        })
    }

    fn describe(&self, evidence: &FindingRecord) -> String {
        evidence.outcome.detail.clone()
    }

    fn edges(&self, run: &CaseResult) -> Option<Edges> {
        run.edges.clone()
    }

    /// gcov's counts over PIMCOMP-NN's own files (not its vendored zlib and JSON parser); a
    /// failure to read them is said on stderr and leaves the summary without coverage.
    fn coverage(&self) -> Option<Coverage> {
        self.cases.setup.coverage.as_ref()?.summary()
    }

    fn summary_details(&self) -> serde_json::Value {
        serde_json::json!({ "mode": self.mode() })
    }
}
