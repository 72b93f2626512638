//! The GMem reduction strategy (`Reduction::Gmem`): programs agree with the oracle on
//! generated cases and on the corpus, and have the shape the strategy promises.

use pimdiff::check::{check_case, Outcome, RunConfig};
use pimdiff::compilers::CompilerUnderTest;
use pimdiff::targets::tensor::generate::{case_from_seed, GenConfig};
use pimdiff_compiler::{compile, CompileOptions, Reduction};
use pimdiff_isa::Inst;

fn gmem() -> CompileOptions {
    CompileOptions {
        reduction: Reduction::Gmem,
        ..CompileOptions::default()
    }
}

#[test]
fn gmem_reduced_programs_agree_with_the_oracle_on_generated_cases() {
    let run = RunConfig::with_compiler(CompilerUnderTest::InRepo(gmem()));
    let gen = GenConfig::default();
    let mut reduced = 0;
    for seed in 0..1500 {
        let case = case_from_seed(&gen, seed);
        let r = check_case(&case, &run);
        assert!(
            matches!(r.outcome, Outcome::Pass | Outcome::Unsupported { .. }),
            "seed {seed}: {}",
            r.outcome.summary()
        );
        if let Some(b) = &r.bundle {
            let insts = || b.program.cores.iter().flatten();
            assert!(!insts().any(|i| matches!(i, Inst::Send { .. } | Inst::Recv { .. })));
            reduced += insts().any(|i| matches!(i, Inst::Sync { .. })) as usize;
        }
    }
    assert!(reduced >= 100, "only {reduced} cases reduce across cores");
}

use pimdiff::compilers::injected::{compile_mutated, BugClass};
use pimdiff::compilers::races::gmem_sites;
use pimdiff_compiler::Lowering;
use pimdiff_isa::bundle::Bundle;

/// The ordering flaws of a GMem-reduced program, read off the bundle (no interpreter):
/// `missing-wait` (an `ld` of bytes another core `st`s, with no earlier `wait` on that
/// core's event register), `early-sync` (the `wait` before the `ld` is matched by a `sync`
/// that comes before the `st`: no more waits before the ld than syncs before the st),
/// `overlapping-stores` (two cores' `st` ranges overlap).
fn flaws(b: &Bundle) -> Vec<&'static str> {
    let cores = &b.program.cores;
    let sites: Vec<_> = cores.iter().map(|c| gmem_sites(c)).collect();
    let overlap = |a: (u64, u64), b: (u64, u64)| a.0 < b.1 && b.0 < a.1;
    let mut out = Vec::new();
    for (o, ss) in sites.iter().enumerate() {
        for ld in ss.iter().filter(|s| !s.store) {
            let Some(r) = ld.range else { continue };
            for (c, cs) in sites.iter().enumerate().filter(|&(c, _)| c != o) {
                let Some(st) = cs
                    .iter()
                    .find(|s| s.store && s.range.is_some_and(|x| overlap(x, r)))
                else {
                    continue;
                };
                // Correct: the `wait`s before the `ld` outnumber the `sync`s before the `st`
                // (the last wait matches a sync that follows the st).
                let waits = cores[o][..ld.pc]
                    .iter()
                    .filter(|i| matches!(i, Inst::Wait { event, .. } if event.index() == c))
                    .count();
                let syncs = cores[c][..st.pc]
                    .iter()
                    .filter(|i| matches!(i, Inst::Sync { event, core } if event.index() == c && *core as usize == o))
                    .count();
                if waits == 0 {
                    out.push("missing-wait");
                } else if waits <= syncs {
                    out.push("early-sync");
                }
            }
        }
    }
    for (a, sa) in sites.iter().enumerate() {
        for (bi, sb) in sites.iter().enumerate().skip(a + 1) {
            let hit = sa.iter().filter(|s| s.store).any(|x| {
                sb.iter()
                    .filter(|s| s.store)
                    .any(|y| matches!((x.range, y.range), (Some(p), Some(q)) if overlap(p, q)))
            });
            if hit && a != bi {
                out.push("overlapping-stores");
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[test]
fn correct_gmem_programs_have_no_ordering_flaw() {
    let gen = GenConfig::default();
    for seed in 0..400 {
        let case = case_from_seed(&gen, seed);
        if let Ok(b) = compile(&case, &gmem()) {
            assert_eq!(flaws(&b), Vec::<&str>::new(), "seed {seed}");
        }
    }
}

#[test]
fn each_injected_race_class_is_racy_by_construction() {
    let gen = GenConfig::default();
    for bug in BugClass::RACES {
        let mut sites = 0;
        for seed in 0..400 {
            let case = case_from_seed(&gen, seed);
            let Ok(correct) = compile(&case, &gmem()) else {
                continue;
            };
            let bad = compile_mutated(bug, Lowering::Channel, &case).expect("compiles");
            if bad.program == correct.program {
                assert!(
                    !correct
                        .program
                        .cores
                        .iter()
                        .flatten()
                        .any(|i| matches!(i, Inst::Sync { .. })),
                    "{bug}, seed {seed}: a GMem reduction without a site"
                );
                continue;
            }
            sites += 1;
            assert!(
                flaws(&bad).contains(&bug.name()),
                "{bug}, seed {seed}: {:?}",
                flaws(&bad)
            );
        }
        assert!(sites >= 25, "{bug}: only {sites} cases with a site");
    }
}
