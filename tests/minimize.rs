//! The minimizer: deterministic, bounded, signature-preserving.

use std::time::Duration;

use pimdiff::check::{check_case, RunConfig};
use pimdiff::compilers::injected::BugClass;
use pimdiff::compilers::CompilerUnderTest;
use pimdiff::engine::MinimizeConfig;
use pimdiff::finding::Kind;
use pimdiff::targets::tensor::detection::first_detection;
use pimdiff::targets::tensor::generate::{describe_case, GenConfig};
use pimdiff::targets::tensor::shrink::{case_size, minimize};

fn detection(bug: BugClass) -> (pimdiff::targets::tensor::detection::Detection, RunConfig) {
    let found = first_detection(bug, &GenConfig::default(), 0, 2_000).expect("detected");
    (
        found,
        RunConfig::with_compiler(CompilerUnderTest::Mutated(
            bug,
            pimdiff_compiler::Lowering::Channel,
        )),
    )
}

#[test]
fn deterministic() {
    let (found, cfg) = detection(BugClass::DroppedPartialSum);
    let mcfg = MinimizeConfig::default();
    let a = minimize(&found.case, &cfg, &found.signature, &mcfg);
    let b = minimize(&found.case, &cfg, &found.signature, &mcfg);
    assert_eq!(a.case, b.case);
    assert_eq!((a.tried, a.kept), (b.tried, b.kept));
    assert_eq!(a.log, b.log);
    assert_eq!(
        a.kept + 1,
        a.log.len(),
        "one line per kept reduction plus the stop line"
    );
}

#[test]
fn zero_steps_returns_the_case_unchanged() {
    let (found, cfg) = detection(BugClass::MissingBias);
    let m = minimize(
        &found.case,
        &cfg,
        &found.signature,
        &MinimizeConfig {
            time_budget: Duration::from_secs(10),
            max_steps: 0,
        },
    );
    assert_eq!(m.case, found.case);
    assert_eq!((m.tried, m.kept), (0, 0));
    assert_eq!(
        m.log,
        vec!["stopped: budget exhausted after 0 candidates".to_string()]
    );
}

#[test]
fn step_budget_is_respected_and_progress_kept() {
    let (found, cfg) = detection(BugClass::ShortInputLoad);
    let m = minimize(
        &found.case,
        &cfg,
        &found.signature,
        &MinimizeConfig {
            time_budget: Duration::from_secs(10),
            max_steps: 5,
        },
    );
    assert!(m.tried <= 5);
    assert!(case_size(&m.case) <= case_size(&found.case));
    assert_eq!(
        check_case(&m.case, &cfg).outcome.signature(),
        Some(found.signature.clone())
    );
}

/// A passing case has no signature to keep: nothing is kept, the case comes back as it was.
#[test]
fn a_signature_that_never_occurs_keeps_nothing() {
    let (found, cfg) = detection(BugClass::MissingBias);
    let other = pimdiff::check::outcome::Signature {
        kind: Kind::Fault,
        detail: "st: GmemRange".into(),
    };
    let m = minimize(&found.case, &cfg, &other, &MinimizeConfig::default());
    assert_eq!(m.kept, 0);
    assert_eq!(m.case, found.case);
    assert!(m.tried > 0);
}

#[test]
fn shrinks_a_mismatch_to_a_tiny_case() {
    let (found, cfg) = detection(BugClass::MissingBias);
    let m = minimize(
        &found.case,
        &cfg,
        &found.signature,
        &MinimizeConfig::default(),
    );
    insta::assert_snapshot!(
        format!("{}\n{}\n{}", found.signature, describe_case(&m.case), m.log.join("\n")),
        @r"
        mismatch: channels some, pixels all, batch all
        conv2d N1 C2→K2 1×1 k1×1 s1×1 p[0, 0, 0, 0] d1×1 g2 +bias | 1 core × 1 arrays of 1×1, 65536 B local
        height 5 → 1 (first)
        width 4 → 1 (first)
        groups 7 → 3
        groups 3 → 2
        kernel height 3 → 2
        stride[0] 5 → 1
        padding[0] 1 → 0
        padding[1] 2 → 0
        cores 4 → 1
        arrays per core 16 → 8
        arrays per core 8 → 4
        arrays per core 4 → 2
        array cols 5 → 1
        weight[6..12] → 0
        weight[1] → 0
        weight[2] → 0
        weight[3] → 0
        weight[4] → 0
        weight[5] → 0
        bias[1] → 0
        input → ±1
        weight → ±1
        bias → ±1
        kernel width 3 → 2
        padding[3] 2 → 1
        relu removed
        arrays per core 2 → 1
        input → 0
        weight → 0
        kernel height 2 → 1
        kernel width 2 → 1
        stride[1] 2 → 1
        padding[2] 1 → 0
        padding[3] 1 → 0
        stopped: fixpoint after 68 candidates
        "
    );
}
