//! The injected bug classes applied to programs of the pixel-wise lowering: for every class,
//! `mutate::inject` (whose site-finding reads a program's `sldi` constants, not which
//! lowering made it) finds a site in pixel-wise bundles of the default generator's cases,
//! and the loop detects the bug on a case the correct pixel-wise program passes.
//! `padding-off-by-one`, injected through the compiler, is reproduced here the same way:
//! the case is compiled pixel-wise with its padding moved by one and run against the real
//! case.
//!
//! Wiring `--lowering` into `CompilerUnderTest` (so that `hunt`, `repro` and the corpus
//! recipes can mutate pixel-wise programs themselves) is the harness's part.

use pimdiff::check::Outcome;
use pimdiff::check::{run_bundle, RunConfig};
use pimdiff::compilers::injected::{inject, BugClass};
use pimdiff::targets::tensor::generate::{case_from_seed, GenConfig};
use pimdiff_compiler::{compile, CompileOptions, Lowering};
use pimdiff_isa::bundle::Bundle;
use pimdiff_oracle::{Case, Op};

const PIXEL: CompileOptions = CompileOptions {
    skip_padding: true,
    weight_skipping: true,
    lowering: Lowering::Pixel,
    reduction: pimdiff_compiler::Reduction::Noc,
};

/// Cases tried per class before giving up.
const MAX_CASES: u64 = 2_000;

/// The case with one padding moved by one row or column (same padded size and output).
fn shifted_padding(case: &Case) -> Option<Case> {
    let Op::Conv2d(mut op) = case.spec.op else {
        return None;
    };
    let p = op.padding;
    op.padding = if p[0] > 0 {
        [p[0] - 1, p[1], p[2] + 1, p[3]]
    } else if p[1] > 0 {
        [p[0], p[1] - 1, p[2], p[3] + 1]
    } else {
        return None;
    };
    let mut spec = case.spec.clone();
    spec.op = Op::Conv2d(op);
    let (input, weight, bias) = (case.input.clone(), case.weight.clone(), case.bias.clone());
    Case::new(spec, input, weight, bias, None).ok()
}

/// The pixel-wise bundle of `case` with `bug` in it, or `None` when it has no site.
fn mutated(bug: BugClass, case: &Case, correct: &Bundle) -> Option<Bundle> {
    if bug == BugClass::PaddingOffByOne {
        return compile(&shifted_padding(case)?, &PIXEL).ok();
    }
    let mut bundle = correct.clone();
    inject(bug, case, &mut bundle).then_some(bundle)
}

/// `(cases with a site, seed of the first detection)` for `bug`.
fn detect(bug: BugClass) -> (u64, Option<u64>) {
    let gen = GenConfig::default();
    let run = RunConfig::default();
    let mut sites = 0;
    for seed in 0..MAX_CASES {
        let case = case_from_seed(&gen, seed);
        let Ok(correct) = compile(&case, &PIXEL) else {
            continue;
        };
        let oracle = pimdiff_oracle::reference(&case).expect("oracle");
        assert_eq!(
            run_bundle(&case, &correct, &oracle, &run).0,
            Outcome::Pass,
            "seed {seed}: the correct pixel-wise program"
        );
        let Some(bad) = mutated(bug, &case, &correct) else {
            continue;
        };
        sites += 1;
        if run_bundle(&case, &bad, &oracle, &run)
            .0
            .signature()
            .is_some()
        {
            return (sites, Some(seed));
        }
    }
    (sites, None)
}

#[test]
fn every_injected_bug_class_applies_to_pixel_wise_programs_and_is_detected() {
    let mut lines = Vec::new();
    for bug in BugClass::ALL {
        let (sites, found) = detect(bug);
        let seed = found.unwrap_or_else(|| {
            panic!("{bug}: not detected in {MAX_CASES} cases ({sites} with a site)")
        });
        lines.push(format!(
            "{bug}: detected on seed {seed} ({sites} case(s) with a site)"
        ));
    }
    eprintln!("{}", lines.join("\n"));
}
