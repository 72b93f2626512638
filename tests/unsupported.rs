//! Honest `unsupported`: every decline of the in-repo compiler agrees with the harness's own
//! capacity model, and declines whose numbers do not hold become `bogus-unsupported`.

use std::collections::BTreeMap;

use pimdiff::check::capacity::demand;
use pimdiff::check::{check_case, Outcome, RunConfig};
use pimdiff::compilers::injected::BugClass;
use pimdiff::compilers::{CompileFailure, CompilerUnderTest, Resource};
use pimdiff::targets::tensor::generate::{case_from_seed, GenConfig};
use pimdiff_compiler::{CompileOptions, Lowering};

/// Generator settings under which most cases overcommit their architecture.
fn overcommitting() -> Vec<GenConfig> {
    let base = GenConfig {
        overcommit_ratio: 1.0,
        ..GenConfig::default()
    };
    vec![
        base.clone(),
        GenConfig {
            max_local_memory_bytes: 256,
            ..base.clone()
        },
        GenConfig {
            max_channels: 24,
            max_array_dim: 4,
            max_cores: 6,
            ..base
        },
    ]
}

#[test]
fn every_decline_of_the_in_repo_compiler_agrees_with_the_model() {
    let mut declines: BTreeMap<String, u64> = BTreeMap::new();
    for (g, gen) in overcommitting().iter().enumerate() {
        for (skip_padding, weight_skipping, lowering) in [
            (true, true, Lowering::Channel),
            (false, false, Lowering::Channel),
            (true, false, Lowering::Channel),
            (true, true, Lowering::Pixel),
            (false, false, Lowering::Pixel),
        ] {
            let cfg = RunConfig::with_compiler(CompilerUnderTest::InRepo(CompileOptions {
                skip_padding,
                weight_skipping,
                lowering,
                reduction: pimdiff_compiler::Reduction::Noc,
            }));
            for seed in 0..400u64 {
                let case = case_from_seed(gen, seed * 7 + g as u64);
                match check_case(&case, &cfg).outcome {
                    Outcome::Unsupported { reason } => {
                        let key = reason.split(':').next().unwrap_or("").to_string();
                        *declines.entry(key).or_default() += 1;
                    }
                    Outcome::BogusUnsupported { reason, problem } => panic!(
                        "seed {seed} (generator {g}, {skip_padding}/{weight_skipping}): {reason}\n{problem}\n{}",
                        pimdiff::targets::tensor::generate::describe_case(&case)
                    ),
                    _ => {}
                }
            }
        }
    }
    // Both capacity checks a generated case can hit were exercised.
    assert!(declines["not enough crossbar arrays"] > 100, "{declines:?}");
    let lmem: u64 = declines
        .iter()
        .filter(|(k, _)| k.starts_with("local memory"))
        .map(|(_, n)| n)
        .sum();
    assert!(lmem > 20, "{declines:?}");
}

/// The first cases of `gen` on which the correct compiler passes and `pred` holds.
fn passing_cases(
    gen: &GenConfig,
    count: usize,
    pred: impl Fn(&pimdiff_oracle::Case) -> bool,
) -> Vec<pimdiff_oracle::Case> {
    let correct = RunConfig::default();
    (0u64..)
        .map(|seed| case_from_seed(gen, seed))
        .filter(|case| pred(case) && check_case(case, &correct).outcome == Outcome::Pass)
        .take(count)
        .collect()
}

#[test]
fn a_flipped_instruction_check_is_caught_on_every_case_and_its_numbers_match_the_model() {
    let mutant = RunConfig::with_compiler(CompilerUnderTest::Mutated(
        BugClass::FlippedInstructionCheck,
        pimdiff_compiler::Lowering::Channel,
    ));
    for case in passing_cases(&GenConfig::default(), 60, |_| true) {
        // The mutant's estimate is the compiler's own; the model derives the same number.
        let Err(CompileFailure::Unsupported {
            claim: Some(claim), ..
        }) = mutant.compiler.compile(&case, mutant.external_timeout)
        else {
            panic!(
                "the mutant compiled {}",
                pimdiff::targets::tensor::generate::describe_case(&case)
            )
        };
        assert_eq!(claim.resource, Resource::Instructions);
        assert_eq!(
            claim.needed,
            demand(&case, &CompileOptions::default()).instructions
        );
        let outcome = check_case(&case, &mutant).outcome;
        assert_eq!(
            outcome.signature().unwrap().to_string(),
            "bogus-unsupported: instructions: the claim contradicts itself: N needed is not more than N available"
        );
    }
}

#[test]
fn an_array_capacity_check_off_by_one_is_caught_on_cases_that_fit_exactly() {
    let exact = |case: &pimdiff_oracle::Case| {
        let a = &case.spec.arch;
        demand(case, &CompileOptions::default()).arrays == (a.cores * a.arrays_per_core) as u64
    };
    let mutant = RunConfig::with_compiler(CompilerUnderTest::Mutated(
        BugClass::ArrayCapacityOffByOne,
        pimdiff_compiler::Lowering::Channel,
    ));
    let cases = passing_cases(&GenConfig::default(), 20, exact);
    assert_eq!(cases.len(), 20);
    for case in &cases {
        let outcome = check_case(case, &mutant).outcome;
        let Outcome::BogusUnsupported { reason, problem } = &outcome else {
            panic!("{outcome:?}")
        };
        let a = case.spec.arch.cores * case.spec.arch.arrays_per_core;
        assert_eq!(
            reason,
            &format!(
                "not enough crossbar arrays: {a} needed, {a} available (cores × arrays_per_core)"
            )
        );
        assert_eq!(
            problem,
            &format!("crossbar arrays: the claim contradicts itself: {a} needed is not more than {a} available")
        );
    }
    // Cases with room to spare still compile and pass.
    for case in passing_cases(&GenConfig::default(), 20, |c| !exact(c)) {
        assert_eq!(check_case(&case, &mutant).outcome, Outcome::Pass);
    }
}

#[test]
fn claims_that_misstate_the_architecture_or_the_need_are_refuted() {
    use pimdiff::check::refute::refute;
    use pimdiff::compilers::Claim;
    let opts = CompileOptions::default();
    let case = passing_cases(&GenConfig::default(), 1, |c| c.spec.arch.cores >= 2)
        .pop()
        .unwrap();
    let a = case.spec.arch;
    let arrays = (a.cores * a.arrays_per_core) as u64;
    let d = demand(&case, &opts);
    let claim = |resource, needed, available| Claim {
        resource,
        needed,
        available,
    };
    // A true need above a false availability: the availability is wrong.
    assert_eq!(
        refute(
            &case,
            &claim(Resource::Arrays, arrays + 5, arrays - 1),
            Some(&opts)
        ),
        Some(format!(
            "crossbar arrays: the claim says {} available; compared with `arch.cores` × \
             `arch.arrays_per_core` = {} × {} = {arrays} (the chip's total; a claim about one \
             core says `per core`)",
            arrays - 1,
            a.cores,
            a.arrays_per_core
        ))
    );
    // The right availability, a need the model does not see.
    assert_eq!(
        refute(&case, &claim(Resource::Arrays, arrays + 1, arrays), Some(&opts)),
        Some(format!(
            "crossbar arrays: the claim says {} needed, the harness's model of the lowering needs {}",
            arrays + 1,
            d.arrays
        ))
    );
    // The same claim from a compiler whose lowering the model does not describe stands.
    assert_eq!(
        refute(&case, &claim(Resource::Arrays, arrays + 1, arrays), None),
        None
    );
    let lmem = a.local_memory_bytes as u64;
    assert_eq!(
        refute(&case, &claim(Resource::LocalMemory, lmem + 1, lmem), Some(&opts)),
        Some(format!(
            "local memory bytes: the claim says {} needed, the harness's model of the lowering needs {}",
            lmem + 1,
            d.local_memory.unwrap()
        ))
    );
    assert_eq!(
        refute(&case, &claim(Resource::Other, 3, 3), None),
        Some("(unnamed resource): the claim contradicts itself: 3 needed is not more than 3 available".into())
    );
    assert_eq!(
        refute(&case, &claim(Resource::Other, 4, 3), Some(&opts)),
        None
    );
}

fn declining(mode: &str) -> RunConfig {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/declining_compiler.sh");
    RunConfig::with_compiler(CompilerUnderTest::External {
        command: format!(
            "sh {} {mode}",
            pimdiff::compilers::external::shell_quote(&script.to_string_lossy())
        ),
    })
}

#[test]
fn external_declines_are_read_for_numbers() {
    let case = case_from_seed(&GenConfig::default(), 1);
    let sig = |mode| {
        check_case(&case, &declining(mode))
            .outcome
            .signature()
            .map(|s| s.to_string())
    };
    assert_eq!(sig("plain"), None);
    assert_eq!(sig("honest"), None);
    assert_eq!(
        sig("contradicting").as_deref(),
        Some("bogus-unsupported: crossbar arrays: the claim contradicts itself: N needed is not more than N available")
    );
    // A claim about one core is compared with one core's arrays.
    assert_eq!(
        sig("per-core").as_deref(),
        Some("bogus-unsupported: crossbar arrays per core: the claim says N available; compared with `arch.arrays_per_core` = N (one ")
    );
    assert_eq!(
        sig("wrong-arch").as_deref(),
        Some("bogus-unsupported: crossbar arrays: the claim says N available; compared with `arch.cores` × `arch.arrays_per_core` = N")
    );
}
