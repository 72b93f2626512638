//! One PUMA case through the compiler's trees and the check.
//!
//! A case is a network and the seed its data is drawn from ([`super::network_data`]): the
//! data is always regenerated from the seed, so a minimized network gets data that fits it
//! and stays in range. A run compiles the case in the plain tree; a compile that succeeds is
//! checked on the machine ([`super::check`]). The sanitizer tree also compiles (and checks)
//! the cases whose plain compile succeeded, a fixed share of them chosen by the case seed
//! ([`CaseContext::sanitize_rate`]): the sanitizers find memory errors that do not crash the
//! plain build, and the sanitizer tree's heap order gives another schedule of the compiler's
//! pointer-ordered passes. A plain crash is not compiled again with the sanitizers: its frames
//! already sign it, and the sanitizer tree would cost three to five times a plain compile.

use super::check::{check, CheckOptions, Mismatch, Verdict};
use super::compile::{compile, CompileRun, PumaSetup, Tree};
use super::driver_input::{network_text, weights_text};
use super::inject::{Injected, Injection};
use super::network::PumaNetwork;
use super::outcome::{check_outcome, compile_outcome, severity, PumaOutcome};
use super::placement::{placement_file, Placement};
use super::probe::probe_network;
use super::reference::{reference, NumericRange, Reference};
use super::repair::{Judge, Repair};
use super::tensors::NetworkData;
use super::{network_data, PumaNetConfig};
use pimdiff_engine::finding::{Kind, Signature};
use pimdiff_puma::formats::load_model;

/// One network and the seed of its data.
#[derive(Clone, Debug, PartialEq)]
pub struct PumaCase {
    pub network: PumaNetwork,
    pub seed: u64,
}

/// Everything a case needs besides itself.
#[derive(Clone, Debug)]
pub struct CaseContext {
    pub setup: PumaSetup,
    pub net: PumaNetConfig,
    pub check: CheckOptions,
    /// The share of cases (whose plain compile succeeded) also compiled in the sanitizer
    /// tree, chosen by the case seed; 0 never, 1 always.
    pub sanitize_rate: f64,
    /// A miscompilation injected into every compile's output (tests of the set-up).
    pub inject: Option<Injection>,
}

/// A case's data, reference and the driver's two files.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub data: NetworkData,
    pub reference: Reference,
    pub network_text: String,
    pub weights_text: String,
}

/// One tree's compile and outcome.
#[derive(Clone, Debug)]
pub struct TreeRun {
    /// `None` when the compiler could not be run (a poisoned outcome says why).
    pub compile: Option<CompileRun>,
    pub outcome: PumaOutcome,
    pub injected: Option<Injected>,
}

/// A case's runs: the plain tree's, then the sanitizer tree's when it ran.
#[derive(Clone, Debug, Default)]
pub struct CaseRun {
    pub runs: Vec<TreeRun>,
}

impl CaseRun {
    /// The most severe outcome's kind.
    pub fn kind(&self) -> Kind {
        self.runs
            .iter()
            .map(|r| r.outcome.kind)
            .min_by_key(|k| severity(*k))
            .unwrap_or(Kind::Poisoned)
    }

    /// Every finding signature, each once, most severe first.
    pub fn signatures(&self) -> Vec<Signature> {
        let mut sigs: Vec<Signature> = self
            .runs
            .iter()
            .filter_map(|r| r.outcome.signature.clone())
            .collect();
        sigs.sort_by_key(|s| (severity(s.kind), s.clone()));
        sigs.dedup();
        sigs
    }

    /// The run that shows `signature`, if any.
    pub fn showing(&self, signature: &Signature) -> Option<&TreeRun> {
        self.runs
            .iter()
            .find(|r| r.outcome.signature.as_ref() == Some(signature))
    }
}

/// A 64-bit mix of the case seed (splitmix64's finaliser), for choosing sanitized cases.
fn mix(seed: u64) -> u64 {
    let mut z = seed ^ 0x5341_4e49_5449_5a45;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl CaseContext {
    /// Data, reference and files of `case`; `Err` (a poisoned case) only when the network is
    /// invalid or the reference fails, which the generator and the reductions never produce.
    pub fn prepare(&self, case: &PumaCase) -> Result<Prepared, String> {
        let range = NumericRange::PUMA_WORD;
        let data = network_data(&case.network, case.seed, range).map_err(|e| e.to_string())?;
        let reference = reference(&case.network, &data, range).map_err(|e| e.to_string())?;
        Ok(Prepared {
            network_text: network_text(&case.network, false),
            weights_text: weights_text(&case.network, &data),
            data,
            reference,
        })
    }

    /// Whether the sanitizer tree also compiles `case` (when its plain compile succeeds).
    pub fn sanitize_selected(&self, case: &PumaCase) -> bool {
        self.setup.sanitize.is_some()
            && (mix(case.seed) as f64) < self.sanitize_rate * (u64::MAX as f64)
    }

    /// Compiles `case` in `tree` and checks a successful compile (a mismatch with its probe).
    pub fn run_tree(&self, case: &PumaCase, prepared: &Prepared, tree: Tree) -> TreeRun {
        self.run_tree_with(case, prepared, tree, true)
    }

    /// [`CaseContext::run_tree`], with the probe of a mismatch only when `probe` (a cause's
    /// judgement needs the compile, not the first wrong value).
    fn run_tree_with(
        &self,
        case: &PumaCase,
        prepared: &Prepared,
        tree: Tree,
        probe: bool,
    ) -> TreeRun {
        let run = match compile(
            &self.setup,
            tree,
            &prepared.network_text,
            &prepared.weights_text,
        ) {
            Ok(r) => r,
            Err(e) => {
                return TreeRun {
                    compile: None,
                    outcome: PumaOutcome::poisoned(tree, format!("cannot run the compiler: {e}")),
                    injected: None,
                }
            }
        };
        if let Some(outcome) = compile_outcome(&self.setup, &run, Some(&case.network)) {
            return TreeRun {
                compile: Some(run),
                outcome,
                injected: None,
            };
        }
        let injected = match self.inject {
            Some(i) => match i.apply(run.path(), &case.network.model) {
                Ok(done) => done,
                Err(e) => {
                    return TreeRun {
                        outcome: PumaOutcome::poisoned(tree, format!("injection failed: {e}")),
                        compile: Some(run),
                        injected: None,
                    }
                }
            },
            None => None,
        };
        let mut checked = check(
            run.path(),
            &case.network,
            &prepared.data,
            &prepared.reference,
            self.check,
        );
        if let Verdict::Mismatch(m) = &mut checked.verdict {
            if probe {
                m.probe = self.probe(case, tree);
            }
        }
        TreeRun {
            outcome: check_outcome(tree, checked),
            compile: Some(run),
            injected,
        }
    }

    /// The first wrong value of a mismatching `case`: its probe ([`super::probe`]) compiled
    /// and checked in `tree` (without injection: an injected change need not land on the
    /// probe's programs in the same place), when it mismatches too.
    fn probe(&self, case: &PumaCase, tree: Tree) -> Option<Box<Mismatch>> {
        if self.inject.is_some() {
            return None;
        }
        let probe = PumaCase {
            network: probe_network(&case.network)?,
            seed: case.seed,
        };
        let prepared = self.prepare(&probe).ok()?;
        let run = compile(
            &self.setup,
            tree,
            &prepared.network_text,
            &prepared.weights_text,
        )
        .ok()?;
        if compile_outcome(&self.setup, &run, Some(&probe.network)).is_some() {
            return None;
        }
        match check(
            run.path(),
            &probe.network,
            &prepared.data,
            &prepared.reference,
            self.check,
        )
        .verdict
        {
            Verdict::Mismatch(m) => Some(m),
            _ => None,
        }
    }

    /// A hunt's run of `case`: the plain tree, and the sanitizer tree when the plain compile
    /// succeeded and the case is among the sanitized share.
    pub fn run_case(&self, case: &PumaCase) -> CaseRun {
        let prepared = match self.prepare(case) {
            Ok(p) => p,
            Err(e) => {
                return CaseRun {
                    runs: vec![TreeRun {
                        compile: None,
                        outcome: PumaOutcome::poisoned(Tree::Plain, e),
                        injected: None,
                    }],
                }
            }
        };
        let plain = self.run_tree(case, &prepared, Tree::Plain);
        let compiled = plain
            .compile
            .as_ref()
            .is_some_and(|c| c.status == pimdiff_engine::process::Status::Exited { code: 0 });
        let mut runs = vec![plain];
        if compiled && self.sanitize_selected(case) {
            runs.push(self.run_tree(case, &prepared, Tree::Sanitize));
        }
        CaseRun { runs }
    }

    /// `case` in `tree` only (minimization, evidence, repro).
    pub fn run_in(&self, case: &PumaCase, tree: Tree) -> TreeRun {
        match self.prepare(case) {
            Ok(p) => self.run_tree(case, &p, tree),
            Err(e) => TreeRun {
                compile: None,
                outcome: PumaOutcome::poisoned(tree, e),
                injected: None,
            },
        }
    }

    /// Whether `case` shows `signature` in `tree`.
    pub fn shows(&self, case: &PumaCase, tree: Tree, signature: &Signature) -> bool {
        self.run_in(case, tree).outcome.signature.as_ref() == Some(signature)
    }

    /// `case` compiled in `tree` and, when it mismatches, `f` given the judge of its repairs
    /// ([`super::repair`]): the run, and what `f` returned (`None` when the compile does not
    /// mismatch or its files cannot be read). `probe`: whether the run probes a mismatch.
    fn judged<T>(
        &self,
        case: &PumaCase,
        tree: Tree,
        probe: bool,
        f: impl FnOnce(&mut Judge<'_>) -> T,
    ) -> (TreeRun, Option<T>) {
        let prepared = match self.prepare(case) {
            Ok(p) => p,
            Err(e) => {
                let run = TreeRun {
                    compile: None,
                    outcome: PumaOutcome::poisoned(tree, e),
                    injected: None,
                };
                return (run, None);
            }
        };
        let run = self.run_tree_with(case, &prepared, tree, probe);
        if run.outcome.kind != Kind::Mismatch {
            return (run, None);
        }
        let Some(dir) = run.compile.as_ref().map(|c| c.path().to_path_buf()) else {
            return (run, None);
        };
        let net = &case.network;
        let model = load_model(&dir, &net.model).ok();
        let placement = Placement::read(&dir.join(placement_file(&net.model))).ok();
        let (Some(model), Some(placement)) = (model, placement) else {
            return (run, None);
        };
        let judge = Judge::new(
            &model,
            &placement,
            net,
            &prepared.data,
            &prepared.reference,
            self.check,
        );
        let out = judge.map(|mut j| f(&mut j));
        (run, out)
    }

    /// The cause of a mismatch of `case` in `tree`: the repair of its compile
    /// ([`super::repair`]), searched until `stop` says the budget is spent; with the run
    /// (without its probe: the repair is judged on the compile itself, and a probe would cost
    /// a second compile of the cause's budget).
    pub fn repair(
        &self,
        case: &PumaCase,
        tree: Tree,
        stop: &dyn Fn() -> bool,
    ) -> (TreeRun, Option<Repair>) {
        let (run, found) = self.judged(case, tree, false, |j| j.search(stop));
        (run, found.flatten())
    }

    /// Whether `case` shows `signature` in `tree`, with the run: the run's own signature, or,
    /// for a mismatch signed by its cause (a repair's name, [`super::repair`]), a mismatch whose
    /// compile that repair makes right.
    pub fn showing(&self, case: &PumaCase, tree: Tree, signature: &Signature) -> (TreeRun, bool) {
        if signature.kind != Kind::Mismatch || is_op_signature(&signature.detail) {
            let run = self.run_in(case, tree);
            let shows = run.outcome.signature.as_ref() == Some(signature);
            return (run, shows);
        }
        let (run, confirmed) = self.judged(case, tree, false, |j| j.confirms(&signature.detail));
        (run, confirmed == Some(true))
    }
}

/// Whether a mismatch signature's detail is an operation's name (`conv`: the observed
/// signature) rather than a repair's (`copy vec+1`: a cause).
pub fn is_op_signature(detail: &str) -> bool {
    !detail.contains(' ')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sanitized_share_follows_the_rate() {
        let share = |rate: f64| {
            (0..4000u64)
                .filter(|&s| (mix(s) as f64) < rate * (u64::MAX as f64))
                .count()
        };
        assert_eq!(share(0.0), 0);
        assert_eq!(share(1.0), 4000);
        let quarter = share(0.25);
        assert!((900..1100).contains(&quarter), "{quarter}");
    }
}
