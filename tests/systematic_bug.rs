//! A systematic bug is one cause: a compiler that puts every core's last `mvmul` in array
//! group 0 is wrong the same way at every site. No single-site repair fixes a case where
//! several cores are wrong, so before the joint repair (`triage::joint`) a hunt reported one
//! localized finding plus several signed by their symptom shapes. Now it reports at most two,
//! and the cause it names is the kind of edit every site needs.

use std::sync::Arc;
use std::time::Duration;

use pimdiff::check::RunConfig;
use pimdiff::compilers::injected::BugClass;
use pimdiff::compilers::CompilerUnderTest;
use pimdiff::engine::{run_hunt, HuntConfig, HuntControl, Limit, MinimizeConfig, Shard};
use pimdiff::targets::tensor::generate::GenConfig;
use pimdiff::targets::tensor::TensorTarget;

#[test]
fn one_bug_at_every_site_is_at_most_two_findings_named_by_its_kind() {
    let tmp = tempfile::tempdir().unwrap();
    let mut named = 0;
    for seed in 1..=5 {
        let cfg = HuntConfig {
            seed,
            limit: Limit::Cases(1000),
            jobs: 2,
            shard: Shard::ALL,
            // The run caps, not the clock, bound triage (the same findings on a loaded machine).
            minimize: MinimizeConfig {
                time_budget: Duration::from_secs(600),
                ..MinimizeConfig::default()
            },
            max_unsupported: None,
            out: tmp.path().join(format!("seed{seed}")),
        };
        let compiler = CompilerUnderTest::Mutated(
            BugClass::LastMvmulGroupZero,
            pimdiff_compiler::Lowering::Channel,
        );
        let target = TensorTarget::new(&GenConfig::default(), RunConfig::with_compiler(compiler));
        let s = run_hunt(&cfg, Arc::new(target), &HuntControl::default()).unwrap();
        let sigs: Vec<&str> = s.findings.iter().map(|f| f.signature.as_str()).collect();
        assert!((1..=2).contains(&sigs.len()), "seed {seed}: {sigs:?}");
        named += sigs
            .iter()
            .filter(|s| **s == "mismatch: mvmul group")
            .count();
    }
    assert!(named >= 4, "the cause is named on most seeds: {named} of 5");
}
