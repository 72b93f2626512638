//! The in-repo compiler's options drawn per case (`targets::tensor::options`): how often a
//! default hunt varies them, that flags still force them, that minimization keeps them, and
//! that a saved finding's options are what `repro` and `replay` compile with (a missing record
//! meaning the defaults).

use std::path::Path;

use ndarray::{arr2, ArrayD};
use pimdiff::check::RunConfig;
use pimdiff::compilers::CompilerUnderTest;
use pimdiff::corpus::{check_entry, load_entry, run_config_for, write_json, ExpectFile};
use pimdiff::engine::Target;
use pimdiff::finding::{Expectation, FindingMeta, Kind, Signature, META_FORMAT};
use pimdiff::targets::tensor::generate::{
    case_and_options_from_seed, case_from_seed, generate, GenConfig, SeedChoices,
};
use pimdiff::targets::tensor::options::CaseOptions;
use pimdiff::targets::tensor::{TensorCase, TensorTarget};
use pimdiff_compiler::{CompileOptions, Reduction};
use pimdiff_oracle::{Case, CaseArch, CaseSpec, Mvm, Op};

/// What the first 3,000 seeds of the default generator draw: counts of padding skipping off,
/// weight skipping off, both off, and cases compiled with the GMem reduction.
#[test]
fn a_default_hunt_varies_the_options_of_some_cases() {
    let cfg = GenConfig::default();
    let (mut no_pad, mut no_weight, mut neither, mut gmem) = (0, 0, 0, 0);
    for seed in 0..3_000u64 {
        let (case, o) = case_and_options_from_seed(&cfg, seed);
        no_pad += !o.skip_padding as usize;
        no_weight += !o.weight_skipping as usize;
        neither += (!o.skip_padding && !o.weight_skipping) as usize;
        gmem += (o.reduction == Reduction::Gmem) as usize;
        assert_eq!(
            o.reduction,
            Reduction::PerCase.for_case(&case),
            "seed {seed}"
        );
        assert_eq!(case_from_seed(&cfg, seed), case);
    }
    assert_eq!((no_pad, no_weight, neither, gmem), (479, 299, 51, 1510));
}

/// A case with the default options is the case the generator made before options were drawn:
/// only cases whose local memory sits at a bufferization edge move, and only when their drawn
/// options move the edge.
#[test]
fn cases_with_default_options_are_unchanged() {
    let cfg = GenConfig::default();
    let mut moved = 0;
    for seed in 0..1_000u64 {
        let (case, o) = case_and_options_from_seed(&cfg, seed);
        let before = generate(&cfg, &mut SeedChoices::new(seed));
        if o.skip_padding && o.weight_skipping {
            assert_eq!(case, before, "seed {seed}");
        } else if case != before {
            assert_eq!(case.spec.op, before.spec.op, "seed {seed}");
            assert_eq!(case.input, before.input, "seed {seed}");
            moved += 1;
        }
    }
    assert_eq!(moved, 28);
}

#[test]
fn flags_force_every_case_and_other_compilers_keep_their_own() {
    let forced = RunConfig::with_compiler(CompilerUnderTest::InRepo(CompileOptions {
        skip_padding: false,
        reduction: Reduction::Gmem,
        ..CompileOptions::default()
    }));
    let target = TensorTarget::new(&GenConfig::default(), forced);
    for seed in 0..200 {
        let o = target
            .case(seed)
            .options
            .expect("the in-repo compiler has options");
        assert!(!o.skip_padding && o.reduction == Reduction::Gmem, "{o:?}");
    }
    let injected = RunConfig::with_compiler(CompilerUnderTest::Mutated(
        pimdiff::compilers::injected::BugClass::MissingBias,
        pimdiff_compiler::Lowering::Channel,
    ));
    let target = TensorTarget::new(&GenConfig::default(), injected);
    assert!((0..200).all(|seed| target.case(seed).options.is_none()));
}

#[test]
fn minimization_keeps_the_options() {
    let target = TensorTarget::new(&GenConfig::default(), RunConfig::default());
    let case = (0..)
        .map(|seed| target.case(seed))
        .find(|c| c.options.is_some_and(|o| !o.weight_skipping) && c.case.spec.input_shape[0] > 1)
        .unwrap();
    let mut candidates = 0;
    for pass in 0..target.passes() {
        for (_, c) in target.candidates(pass, &case) {
            assert_eq!(c.options, case.options);
            candidates += 1;
        }
    }
    assert!(candidates > 0);
}

/// An MVM whose weight has one non-zero element, on 1×1 arrays: with weight skipping it needs
/// one crossbar, without it four; the chip has one.
fn skipping_matters() -> Case {
    let spec = CaseSpec {
        op: Op::Mvm(Mvm {
            in_features: 2,
            out_features: 2,
            bias: false,
            relu: false,
        }),
        input_shape: vec![1, 2],
        arch: CaseArch {
            cores: 1,
            arrays_per_core: 1,
            array_rows: 1,
            array_cols: 1,
            local_memory_bytes: 1024,
        },
    };
    let input: ArrayD<i8> = arr2(&[[3i8, 4]]).into_dyn();
    let weight: ArrayD<i8> = arr2(&[[5i8, 0], [0, 0]]).into_dyn();
    Case::new(spec, input, weight, None, None).unwrap()
}

const DECLINED: &str =
    "unsupported: not enough crossbar arrays: 4 needed, 1 available (cores × arrays_per_core)";

fn finding_meta(details: serde_json::Value) -> FindingMeta {
    let mut meta = FindingMeta::new(
        &Signature {
            kind: Kind::Unsupported,
            detail: String::new(),
        },
        "in-repo".into(),
    );
    meta.expect = Expectation::parse(DECLINED).unwrap();
    meta.details = details;
    meta
}

fn entry_dir(root: &Path, name: &str, meta: Option<FindingMeta>) -> std::path::PathBuf {
    let dir = root.join(name);
    pimdiff_oracle::io::write_case(&skipping_matters(), &dir).unwrap();
    if let Some(meta) = meta {
        write_json(&dir, pimdiff::finding::FINDING_JSON, &meta).unwrap();
    }
    dir
}

#[test]
fn replay_compiles_with_the_recorded_options_and_without_a_record_with_the_defaults() {
    let tmp = tempfile::tempdir().unwrap();
    let off = CaseOptions {
        weight_skipping: false,
        ..CaseOptions::default()
    };
    let recorded = entry_dir(tmp.path(), "recorded", Some(finding_meta(off.to_details())));
    let entry = load_entry(&recorded).unwrap();
    assert_eq!(entry.options, Some(off));
    let checked = check_entry(&entry, &RunConfig::default());
    assert_eq!(checked.observed.kind, Kind::Unsupported);
    assert_eq!(checked.meets_expectation, Some(true));

    // The same finding saved before options were recorded: the defaults, so it passes.
    let old = entry_dir(
        tmp.path(),
        "old",
        Some(finding_meta(serde_json::Value::Null)),
    );
    let entry = load_entry(&old).unwrap();
    assert_eq!(entry.options, None);
    let checked = check_entry(&entry, &RunConfig::default());
    assert_eq!(checked.observed.kind, Kind::Pass);
    assert_eq!(checked.meets_expectation, Some(false));

    // expect.json records them too, and takes precedence over finding.json.
    let curated = entry_dir(tmp.path(), "curated", None);
    let expect = ExpectFile {
        format: META_FORMAT,
        expect: Expectation::parse(DECLINED).unwrap(),
        note: String::new(),
        mutation: None,
        lowering: None,
        compile_options: Some(off),
    };
    write_json(&curated, "expect.json", &expect).unwrap();
    let checked = check_entry(&load_entry(&curated).unwrap(), &RunConfig::default());
    assert_eq!(checked.meets_expectation, Some(true));
}

#[test]
fn a_flag_forces_its_value_over_the_record() {
    let tmp = tempfile::tempdir().unwrap();
    let gmem = CaseOptions {
        reduction: Reduction::Gmem,
        ..CaseOptions::default()
    };
    let dir = entry_dir(tmp.path(), "gmem", Some(finding_meta(gmem.to_details())));
    let entry = load_entry(&dir).unwrap();
    let compiled_with = |base: &RunConfig| match run_config_for(&entry, base).compiler {
        CompilerUnderTest::InRepo(o) => (o.skip_padding, o.weight_skipping, o.reduction),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        compiled_with(&RunConfig::with_compiler(CompilerUnderTest::InRepo(
            CompileOptions {
                reduction: Reduction::PerCase,
                ..CompileOptions::default()
            }
        ))),
        (true, true, Reduction::Gmem)
    );
    assert_eq!(
        compiled_with(&RunConfig::with_compiler(CompilerUnderTest::InRepo(
            CompileOptions {
                skip_padding: false,
                reduction: Reduction::Noc,
                ..CompileOptions::default()
            }
        ))),
        (false, true, Reduction::Noc)
    );
}

#[test]
fn a_malformed_record_is_an_error_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = entry_dir(
        tmp.path(),
        "bad",
        Some(finding_meta(
            serde_json::json!({"compile_options": {"reduction": "bus"}}),
        )),
    );
    let e = load_entry(&dir).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: field `details.compile_options`: unknown reduction \"bus\" (expected noc, gmem or per-case)",
            dir.join("finding.json").display()
        )
    );
}

#[test]
fn the_hunt_says_that_options_vary() {
    let target = TensorTarget::new(&GenConfig::default(), RunConfig::default());
    assert!(target.compiler().ends_with("; options drawn per case"));
    let plain = TensorCase::plain(skipping_matters());
    assert_eq!(target.run_for(&plain).as_ref(), &RunConfig::default());
}

#[test]
fn a_guided_corpus_entry_keeps_its_options() {
    use pimdiff::engine::GuidedTarget;
    use pimdiff::targets::tensor::guided::OPTIONS_FILE;
    let target = TensorTarget::new(&GenConfig::default(), RunConfig::default());
    let tmp = tempfile::tempdir().unwrap();
    let case = (0..)
        .map(|seed| target.case(seed))
        .find(|c| c.options.is_some_and(|o| !o.skip_padding))
        .unwrap();
    let dir = tmp.path().join("k1");
    std::fs::create_dir(&dir).unwrap();
    target.write_case(&case, &dir).unwrap();
    assert_eq!(target.read_case(&dir).unwrap(), case);

    std::fs::write(dir.join(OPTIONS_FILE), r#"{"skip_padding": "no"}"#).unwrap();
    let e = target.read_case(&dir).unwrap_err();
    assert_eq!(e.path, dir.join(OPTIONS_FILE));
    assert_eq!(
        e.reason,
        "invalid type: string \"no\", expected a boolean at line 1 column 21"
    );
    std::fs::remove_file(dir.join(OPTIONS_FILE)).unwrap();
    assert_eq!(target.read_case(&dir).unwrap().options, None);
}

/// A hunt's finding records the options its case was compiled with (those drawn for the seed
/// it came from: minimization keeps them), and its `compiler` and report name them.
#[test]
fn a_finding_records_its_options() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("hunt");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .args([
            "hunt",
            "-q",
            "--seed",
            "3",
            "--cases",
            "40",
            "--minimize-time",
            "2s",
        ])
        .args(["--inject-interpreter-panic", "mvmul", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1), "{run:?}");
    let findings: Vec<_> = std::fs::read_dir(out.join("findings"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!findings.is_empty());
    for dir in findings {
        let text = std::fs::read_to_string(dir.join("finding.json")).unwrap();
        let meta: FindingMeta = serde_json::from_str(&text).unwrap();
        let origin = meta.origin.as_ref().unwrap();
        let (_, drawn) = case_and_options_from_seed(&GenConfig::default(), origin.case_seed);
        assert_eq!(CaseOptions::from_details(&meta.details), Ok(Some(drawn)));
        let entry = load_entry(&dir).unwrap();
        // What `repro` and `replay` start from: the in-repo compiler, per-case reduction.
        let base = RunConfig::with_compiler(CompilerUnderTest::InRepo(CompileOptions {
            reduction: Reduction::PerCase,
            ..CompileOptions::default()
        }));
        assert_eq!(
            meta.compiler,
            run_config_for(&entry, &base).describe_compiler()
        );
        let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(report.contains(&format!("- compiler: {}\n", meta.compiler)));
    }
}
