//! N-version checks and hunts (`--lowering both`): the correct compiler agrees with itself and
//! the oracle; an injected bug in one lowering is attributed to that lowering, in the check,
//! in the hunt's findings and in what `finding.json` records for `repro`.

use std::path::Path;
use std::time::Duration;

use pimdiff::check::n_version::{Disagreement, LoweringChoice, Wrong};
use pimdiff::check::{check_case, Outcome, RunConfig};
use pimdiff::compilers::injected::BugClass;
use pimdiff::compilers::CompilerUnderTest;
use pimdiff::corpus::{check_entry, load_entry};
use pimdiff::engine::MinimizeConfig;
use pimdiff::engine::{run_hunt, HuntConfig, HuntControl, Limit, Shard};
use pimdiff::finding::Kind;
use pimdiff::targets::tensor::generate::{case_from_seed, GenConfig};
use pimdiff::targets::tensor::TensorTarget;
use pimdiff_compiler::{CompileOptions, Lowering};

fn both(compiler: CompilerUnderTest, inject_into: Option<Lowering>) -> RunConfig {
    RunConfig::with_compiler(compiler).with_lowering(LoweringChoice::Both, inject_into)
}

fn hunt(out: &Path, run: RunConfig, cases: u64) -> pimdiff::engine::HuntSummary {
    let cfg = HuntConfig {
        seed: 20261123,
        limit: Limit::Cases(cases),
        jobs: 2,
        shard: Shard::ALL,
        minimize: MinimizeConfig {
            time_budget: Duration::from_secs(20),
            ..MinimizeConfig::default()
        },
        max_unsupported: None,
        out: out.to_path_buf(),
    };
    let target = TensorTarget::new(&GenConfig::default(), run);
    run_hunt(&cfg, std::sync::Arc::new(target), &HuntControl::default()).unwrap()
}

#[test]
fn both_puts_the_channel_wise_version_first_and_the_bug_where_asked() {
    let run = both(CompilerUnderTest::default(), None);
    assert_eq!(
        run.compiler,
        CompilerUnderTest::InRepo(CompileOptions::default())
    );
    assert_eq!(
        run.second,
        Some(CompilerUnderTest::InRepo(CompileOptions {
            lowering: Lowering::Pixel,
            ..CompileOptions::default()
        }))
    );
    assert_eq!(run.lowering_choice(), Some(LoweringChoice::Both));
    let bug = CompilerUnderTest::Mutated(BugClass::MissingBias, Lowering::Channel);
    let run = both(bug, Some(Lowering::Pixel));
    assert_eq!(
        run.compiler,
        CompilerUnderTest::InRepo(CompileOptions::default())
    );
    assert_eq!(
        run.second,
        Some(CompilerUnderTest::Mutated(
            BugClass::MissingBias,
            Lowering::Pixel
        ))
    );
    // Back to one lowering: the second version is gone, the bug moves with the lowering.
    let one = run.with_lowering(LoweringChoice::Pixel, None);
    assert_eq!(one.second, None);
    assert_eq!(one.lowering_choice(), Some(LoweringChoice::Pixel));
    assert_eq!("both".parse::<LoweringChoice>(), Ok(LoweringChoice::Both));
    assert_eq!(
        "diagonal".parse::<LoweringChoice>(),
        Err("unknown lowering \"diagonal\" (expected channel, pixel or both)".to_string())
    );
}

#[test]
fn an_injected_bug_is_attributed_to_the_lowering_it_is_in() {
    let gen = GenConfig::default();
    for into in [Lowering::Channel, Lowering::Pixel] {
        let run = both(
            CompilerUnderTest::Mutated(BugClass::MissingBias, Lowering::Channel),
            Some(into),
        );
        let mut attributed = 0;
        for seed in 0..200 {
            let case = case_from_seed(&gen, seed);
            let r = check_case(&case, &run);
            let Some(sig) = r.signature() else {
                assert!(r.attribution.is_none(), "seed {seed}");
                continue;
            };
            let a = r
                .attribution
                .as_ref()
                .expect("an N-version finding is attributed");
            let (wrong, name) = match into {
                Lowering::Channel => (Wrong::First, "channel"),
                Lowering::Pixel => (Wrong::Second, "pixel"),
            };
            assert_eq!(a.wrong, wrong, "seed {seed}");
            assert_eq!(a.wrong_name(), name);
            // With an all-zero bias the output is right, and the load of the missing
            // constant is a latent uninitialized read: same values, a finding all the same.
            let how = if sig.kind == Kind::UninitializedRead {
                Disagreement::SameWrongValues
            } else {
                Disagreement::Values
            };
            assert_eq!(a.how, how, "seed {seed}: missing bias ({sig})");
            assert_eq!(a.names, ["channel", "pixel"]);
            assert_eq!(a.summaries[1 - a.shown], "pass");
            assert!(sig.detail.starts_with(&format!("{name} only: ")), "{sig}");
            attributed += 1;
        }
        assert!(
            attributed >= 50,
            "{into}: only {attributed} cases with a bias"
        );
    }
}

#[test]
fn a_bug_in_the_shared_stages_is_attributed_to_both() {
    // `transposed-cells` edits the crossbar export, which both lowerings share: injected into
    // both versions (single-lowering configurations), each fails on its own; in one N-version
    // configuration with the bug in both, the attribution is `both` with the same wrong output.
    let gen = GenConfig::default();
    let mut run = both(CompilerUnderTest::default(), None);
    run.compiler = CompilerUnderTest::Mutated(BugClass::TransposedCells, Lowering::Channel);
    run.second = Some(CompilerUnderTest::Mutated(
        BugClass::TransposedCells,
        Lowering::Pixel,
    ));
    let found = (0..300)
        .map(|seed| check_case(&case_from_seed(&gen, seed), &run))
        .find(|r| r.outcome.is_finding())
        .expect("transposed cells on some case");
    assert!(found.signature().unwrap().detail.starts_with("both: "));
    let a = found.attribution.expect("attributed");
    assert_eq!(a.wrong, Wrong::Both);
    assert_eq!(a.how, Disagreement::SameWrongValues);
}

#[test]
fn a_fault_in_one_lowering_disagrees_only_in_a_fault() {
    let gen = GenConfig::default();
    let run = both(
        CompilerUnderTest::Mutated(BugClass::WrongSendSize, Lowering::Channel),
        Some(Lowering::Pixel),
    );
    let found = (0..400)
        .map(|seed| check_case(&case_from_seed(&gen, seed), &run))
        .find(|r| r.outcome.is_finding())
        .expect("a multi-core case with a send");
    assert!(
        !matches!(found.outcome, Outcome::Mismatch(_)),
        "{:?}",
        found.outcome
    );
    let a = found.attribution.expect("attributed");
    assert_eq!((a.wrong, a.how), (Wrong::Second, Disagreement::FaultOnly));
}

#[test]
fn a_fixed_seed_hunt_of_both_lowerings_finds_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let s = hunt(tmp.path(), both(CompilerUnderTest::default(), None), 1500);
    assert!(s.findings.is_empty(), "{:?}", s.findings);
    assert_eq!(s.cases_run, 1500);
    assert!(s.outcomes[&Kind::Pass] >= 1400, "{:?}", s.outcomes);
    assert!(s.compiler.starts_with("channel: in-repo"), "{}", s.compiler);
    assert!(s.compiler.contains(" | pixel: in-repo"), "{}", s.compiler);
}

#[test]
fn a_hunt_attributes_and_records_a_pixel_only_bug_and_repro_replays_it() {
    let tmp = tempfile::tempdir().unwrap();
    let run = both(
        CompilerUnderTest::Mutated(BugClass::MissingBias, Lowering::Channel),
        Some(Lowering::Pixel),
    );
    let s = hunt(tmp.path(), run.clone(), 300);
    assert!(!s.findings.is_empty());
    for f in &s.findings {
        assert!(
            f.signature.contains(": pixel only: "),
            "{}: every finding is the pixel lowering's",
            f.signature
        );
    }
    let dir = tmp.path().join(&s.findings[0].dir);
    let entry = load_entry(&dir).unwrap();
    assert_eq!(entry.lowering, Some(LoweringChoice::Both));
    let meta = entry.meta.finding.clone().unwrap();
    assert_eq!(meta.lowering.as_deref(), Some("both"));
    // Replayed with the recorded lowering (the base being the single channel-wise compiler
    // with the bug): the bug is back in the pixel lowering only when asked, so replay with
    // the hunt's own configuration.
    let checked = check_entry(&entry, &run);
    assert_eq!(checked.run.lowering_choice(), Some(LoweringChoice::Both));
    let a = checked.result.attribution.expect("attributed on replay");
    assert_eq!(a.wrong, Wrong::Second);
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains("## Lowerings (N-version check)"),
        "{report}"
    );
    assert!(report.contains("- channel: pass\n"), "{report}");
    assert!(report.contains("Wrong: **pixel**"), "{report}");
    // The finding records its injected bug and the lowering it went into, so the directory
    // alone reproduces it: from the default configuration, the entry brings the bug back into
    // the pixel lowering only.
    assert_eq!(meta.injected_bug.as_deref(), Some("missing-bias"));
    assert_eq!(entry.inject_into, Some(Lowering::Pixel));
    let alone = check_entry(&entry, &RunConfig::default());
    assert_eq!(alone.run.lowering_choice(), Some(LoweringChoice::Both));
    assert!(
        matches!(alone.result.outcome, Outcome::Mismatch(_)),
        "{:?}",
        alone.result.outcome
    );
    assert_eq!(
        alone.result.attribution.expect("attributed").wrong,
        Wrong::Second
    );
    assert_eq!(alone.meets_expectation, Some(true));
}
