//! Shared by `tests/triage.rs` and `benches/triage.rs`: a hunt in miniature over the triage
//! API (sweep with the pre-signature, one cause per bucket, one triage per cause, findings
//! keyed by final signature), a compiler with two injected bugs, and the ground truth of
//! which instructions a bug corrupted.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use pimdiff::check::outcome::Outcome;
use pimdiff::check::{run_bundle, CaseResult, RunConfig, Signature};
use pimdiff::compilers::injected::{compile_mutated, inject, BugClass};
use pimdiff::compilers::{in_repo, CompileFailure};
use pimdiff::engine::case_seed;
use pimdiff::engine::grouping::{final_cause, group_by_cause, merge_key};
use pimdiff::targets::tensor::generate::{case_from_seed, GenConfig};
use pimdiff::triage::{
    cause, pre_signature, triage_with, Budget, Cause, Checker, Suspect, Triaged,
};
use pimdiff_compiler::CompileOptions;
use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::inst::MemOp;
use pimdiff_isa::Inst;
use pimdiff_oracle::Case;
use rayon::prelude::*;

/// The in-repo compiler with two injected bugs (`first` as `CompilerUnderTest::Mutated`
/// injects it, then `second` injected into the same bundle).
pub struct TwoBugs {
    pub first: BugClass,
    pub second: BugClass,
    pub run: RunConfig,
}

impl TwoBugs {
    pub fn new(first: BugClass, second: BugClass) -> TwoBugs {
        TwoBugs {
            first,
            second,
            run: RunConfig::default(),
        }
    }

    fn compile(&self, case: &Case) -> Result<Bundle, CompileFailure> {
        let mut bundle = compile_mutated(self.first, pimdiff_compiler::Lowering::Channel, case)?;
        inject(self.second, case, &mut bundle);
        Ok(bundle)
    }
}

impl Checker for TwoBugs {
    fn check(&self, case: &Case) -> CaseResult {
        let none = |outcome| CaseResult {
            outcome,
            bundle: None,
            oracle: None,
            machine_output: None,
            attribution: None,
        };
        let Ok(oracle) = pimdiff_oracle::reference(case) else {
            return none(Outcome::Poisoned {
                reason: "oracle".into(),
            });
        };
        let bundle = match self.compile(case) {
            Ok(b) => b,
            Err(CompileFailure::Unsupported { reason, .. }) => {
                return CaseResult {
                    oracle: Some(oracle),
                    ..none(Outcome::Unsupported { reason })
                }
            }
            Err(CompileFailure::Failed { message }) => {
                return CaseResult {
                    oracle: Some(oracle),
                    ..none(Outcome::CompileError { message })
                }
            }
            Err(CompileFailure::Died { message }) => {
                return CaseResult {
                    oracle: Some(oracle),
                    ..none(Outcome::Crash {
                        stage: "compile".into(),
                        message,
                        location: None,
                    })
                }
            }
            Err(CompileFailure::Poisoned { reason }) => return none(Outcome::Poisoned { reason }),
            Err(CompileFailure::TimedOut { limit, .. }) => {
                return none(Outcome::Poisoned {
                    reason: format!("compile timed out after {limit:?}"),
                })
            }
            Err(CompileFailure::Panicked { message, location }) => {
                return CaseResult {
                    oracle: Some(oracle),
                    ..none(Outcome::Crash {
                        stage: "compile".into(),
                        message,
                        location,
                    })
                }
            }
        };
        let (outcome, machine_output) = run_bundle(case, &bundle, &oracle, &self.run);
        CaseResult {
            outcome,
            bundle: Some(bundle),
            oracle: Some(oracle),
            machine_output,
            attribution: None,
        }
    }

    fn run_config(&self) -> &RunConfig {
        &self.run
    }
}

/// One finding of a [`mini_hunt`].
pub struct Finding {
    pub triaged: Triaged,
    /// Cases of the sweep it stands for, and the lowest case index.
    pub occurrences: u64,
    pub first_index: u64,
}

/// What a [`mini_hunt`] found.
pub struct HuntResult {
    pub failing: u64,
    /// Distinct pre-signatures (what the hunt saved before triage).
    pub buckets: usize,
    /// Distinct cause signatures of the buckets.
    pub causes: usize,
    /// One per distinct final signature, by first case index.
    pub findings: Vec<Finding>,
}

/// Cases `0..cases` of hunt seed `seed`, swept with `checker`, bucketed by pre-signature,
/// buckets merged by cause (`triage::grouping`, as a hunt does), one triage per cause,
/// findings merged by final cause.
/// Deterministic (`jobs` only changes the speed).
pub fn mini_hunt<C: Checker + Sync>(
    checker: &C,
    gen: &GenConfig,
    seed: u64,
    cases: u64,
    triage_budget: u64,
) -> HuntResult {
    let cancel = AtomicBool::new(false);
    let swept: Vec<(u64, Signature)> = (0..cases)
        .into_par_iter()
        .filter_map(|k| {
            let case = case_from_seed(gen, case_seed(seed, k));
            pre_signature(&checker.check(&case)).map(|s| (k, s))
        })
        .collect();
    let mut buckets: BTreeMap<Signature, (u64, u64)> = BTreeMap::new();
    for (k, s) in &swept {
        let e = buckets.entry(s.clone()).or_insert((*k, 0));
        e.0 = e.0.min(*k);
        e.1 += 1;
    }
    let mut firsts: Vec<(u64, u64)> = buckets.values().copied().collect();
    firsts.sort_unstable();
    let caused: Vec<Cause> = firsts
        .par_iter()
        .map(|&(k, _)| {
            let case = case_from_seed(gen, case_seed(seed, k));
            let result = checker.check(&case);
            let budget = Budget::new(pimdiff::triage::CAUSE_RUNS, Duration::from_secs(60));
            cause(&case, &result, checker.run_config(), &budget, &cancel)
        })
        .collect();
    let groups = group_by_cause(&caused);
    let triaged: Vec<Triaged> = groups
        .par_iter()
        .map(|g| {
            let case = case_from_seed(gen, case_seed(seed, firsts[g.representative].0));
            let budget = Budget::new(triage_budget, Duration::from_secs(120));
            triage_with(&case, checker, &budget, &cancel)
        })
        .collect();
    let mut by_final: Vec<((Option<pimdiff::finding::Kind>, String), Finding)> = Vec::new();
    for (g, mut t) in groups.iter().zip(triaged) {
        let found = Cause {
            signature: t.signature.clone(),
            localized: t.localized,
            also: t.also.clone(),
        };
        let c = final_cause(&g.cause, Some(&found));
        t.signature = c.signature;
        t.localized = c.localized;
        let key = merge_key(&t.signature, t.localized);
        let n: u64 = g.buckets.iter().map(|&b| firsts[b].1).sum();
        let k = firsts[g.buckets[0]].0;
        match by_final.iter_mut().find(|(fk, _)| *fk == key) {
            Some((_, f)) => {
                f.occurrences += n;
                f.first_index = f.first_index.min(k);
            }
            None => by_final.push((
                key,
                Finding {
                    triaged: t,
                    occurrences: n,
                    first_index: k,
                },
            )),
        }
    }
    let causes = groups.len();
    let mut findings: Vec<Finding> = by_final.into_iter().map(|(_, f)| f).collect();
    findings.sort_by_key(|f| f.first_index);
    HuntResult {
        failing: swept.len() as u64,
        buckets: buckets.len(),
        causes,
        findings,
    }
}

/// The instructions a bug corrupted in `buggy`, the bundle of `case`, against the correct
/// in-repo compilation: instructions that differ (aligned by a diff, for a compilation that
/// changed the program's length), `mvmul`s of a group whose crossbar cells differ, and `ld`s
/// that read a constant segment the buggy manifest lacks.
pub fn corrupted_sites(case: &Case, buggy: &Bundle) -> BTreeSet<(u32, u32)> {
    let mut sites = BTreeSet::new();
    let Ok(correct) = in_repo::compile(case, &CompileOptions::default()) else {
        return sites;
    };
    for (c, insts) in buggy.program.cores.iter().enumerate() {
        let text = |v: &[Inst]| v.iter().map(|i| i.to_string()).collect::<Vec<_>>();
        let reference = text(correct.program.cores.get(c).map_or(&[], Vec::as_slice));
        let buggy_text = text(insts);
        for op in similar::capture_diff_slices(similar::Algorithm::Myers, &reference, &buggy_text) {
            if let similar::DiffOp::Replace {
                new_index, new_len, ..
            }
            | similar::DiffOp::Insert {
                new_index, new_len, ..
            } = op
            {
                sites.extend((new_index..new_index + new_len).map(|pc| (c as u32, pc as u32)));
            }
        }
    }
    for (core, x) in &buggy.xbars.cores {
        let Some(o) = correct.xbars.cores.get(core) else {
            continue;
        };
        for g in &x.groups {
            let differs = g.arrays.iter().any(|&a| {
                let a = a as usize;
                a < x.cells.shape()[0]
                    && a < o.cells.shape()[0]
                    && x.cells.index_axis(ndarray::Axis(0), a)
                        != o.cells.index_axis(ndarray::Axis(0), a)
            });
            if differs {
                let insts = &buggy.program.cores[*core as usize];
                for (pc, inst) in insts.iter().enumerate() {
                    if matches!(inst, Inst::Mvmul { group, .. } if *group == g.group) {
                        sites.insert((*core, pc as u32));
                    }
                }
            }
        }
    }
    let missing: Vec<(u64, u64)> = correct
        .manifest
        .constants
        .iter()
        .filter(|c| !buggy.manifest.constants.iter().any(|b| b.addr == c.addr))
        .map(|c| (c.addr as u64, c.addr as u64 + c.data.len() as u64))
        .collect();
    if !missing.is_empty() {
        for (c, insts) in buggy.program.cores.iter().enumerate() {
            let mut regs = [None::<i64>; 32];
            for (pc, inst) in insts.iter().enumerate() {
                match *inst {
                    Inst::Sldi { rd, imm } => regs[rd.index()] = Some(imm as u32 as i64),
                    Inst::Mem {
                        op: MemOp::Ld,
                        rs1,
                        offset,
                        ..
                    } => {
                        let add = if offset.applies_to_rs1() {
                            offset.value as i64
                        } else {
                            0
                        };
                        if let Some(g) = regs[rs1.index()].map(|v| (v + add) as u64) {
                            if missing.iter().any(|&(lo, hi)| g >= lo && g < hi) {
                                sites.insert((c as u32, pc as u32));
                            }
                        }
                    }
                    Inst::Sld { rd, .. } | Inst::Scalar { rd, .. } | Inst::ScalarImm { rd, .. } => {
                        regs[rd.index()] = None
                    }
                    _ => {}
                }
            }
        }
    }
    sites
}

/// Whether one of the first three suspects is in `sites`.
pub fn top3_hit(suspects: &[Suspect], sites: &BTreeSet<(u32, u32)>) -> bool {
    suspects
        .iter()
        .take(3)
        .any(|s| sites.contains(&(s.core, s.pc)))
}
