//! The proof that the loop finds bugs: every injected miscompilation class is
//! detected by a short hunt on the default generator, and minimized to a small case with
//! the same signature.

use std::time::Duration;

use pimdiff::check::{check_case, RunConfig};
use pimdiff::compilers::injected::BugClass;
use pimdiff::compilers::CompilerUnderTest;
use pimdiff::engine::MinimizeConfig;
use pimdiff::targets::tensor::detection::first_detection;
use pimdiff::targets::tensor::generate::GenConfig;
use pimdiff::targets::tensor::shrink::{case_size, minimize};

/// Cases a short hunt may take per class. The median is far lower (see
/// `cargo bench --bench harness -- bugs`); this bounds the slowest class on seed 0.
const MAX_CASES: usize = 2_000;

#[test]
fn at_least_eight_classes() {
    assert!(BugClass::ALL.len() >= 8);
}

#[test]
fn every_injected_bug_is_found_and_minimized() {
    let gen = GenConfig::default();
    let mcfg = MinimizeConfig {
        time_budget: Duration::from_secs(8),
        max_steps: 5_000,
    };
    let mut lines = Vec::new();
    for bug in BugClass::ALL {
        let found = first_detection(bug, &gen, 0, MAX_CASES)
            .unwrap_or_else(|| panic!("{bug}: not detected in {MAX_CASES} cases"));
        let cfg = RunConfig::with_compiler(CompilerUnderTest::Mutated(
            bug,
            pimdiff_compiler::Lowering::Channel,
        ));
        let small = minimize(&found.case, &cfg, &found.signature, &mcfg);
        // Signature-preserving: the minimized case fails the same way, and passes without the bug.
        assert_eq!(
            check_case(&small.case, &cfg).outcome.signature().as_ref(),
            Some(&found.signature),
            "{bug}"
        );
        assert_eq!(small.signature, found.signature);
        assert!(small.kept <= small.tried);
        assert!(
            small.log.last().unwrap().starts_with("stopped: "),
            "{bug}: {:?}",
            small.log
        );
        let (before, after) = (case_size(&found.case), case_size(&small.case));
        assert!(after <= before, "{bug}: {before} → {after}");
        // Small: a few dozen tensor elements at most.
        assert!(
            after <= 120,
            "{bug}: minimized case still has size {after}: {}",
            pimdiff::targets::tensor::generate::describe_case(&small.case)
        );
        lines.push(format!(
            "{bug}: case {} (seed {}), size {before} → {after}, {}",
            found.cases,
            found.seed,
            pimdiff::targets::tensor::generate::describe_case(&small.case)
        ));
    }
    eprintln!("{}", lines.join("\n"));
}

/// A bundle without a site for a bug is left alone; one with a site changes.
#[test]
fn inject_reports_whether_it_found_a_site() {
    use pimdiff::compilers::injected::inject;
    use pimdiff_compiler::{compile, CompileOptions};
    // The plain 1×1 MVM with weight 3 (an all-zero weight would be skipped entirely).
    let plain = pimdiff::targets::tensor::generate::plain_case();
    let case = pimdiff_oracle::Case::new(
        plain.spec,
        plain.input,
        plain.weight.mapv(|_| 3),
        None,
        None,
    )
    .unwrap();
    let correct = compile(&case, &CompileOptions::default()).unwrap();
    // One core, no bias, no ReLU, one crossbar: no send/recv, no partial sums, no bias.
    for bug in [
        BugClass::WrongSendSize,
        BugClass::RecvWrongCore,
        BugClass::DroppedPartialSum,
        BugClass::WrongSetbwBeforeReduction,
        BugClass::MissingBias,
        BugClass::ReluOnPartialSum,
        BugClass::MissingRelu,
        BugClass::PaddingOffByOne,
        BugClass::TransposedCells,
    ] {
        let mut bundle = correct.clone();
        assert!(!inject(bug, &case, &mut bundle), "{bug}");
        assert_eq!(bundle, correct, "{bug}");
    }
    for bug in [BugClass::StoreOffByOne, BugClass::ShortInputLoad] {
        let mut bundle = correct.clone();
        assert!(inject(bug, &case, &mut bundle), "{bug}");
        assert_ne!(bundle, correct, "{bug}");
    }
}
