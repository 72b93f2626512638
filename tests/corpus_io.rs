//! Corpus files: atomic directories, interrupted writes, expectations, metadata errors,
//! finding round trips, discovery and replay.

use std::fs;
use std::path::{Path, PathBuf};

use pimdiff::check::{check_case, RunConfig};
use pimdiff::corpus::{
    self, discover, read_entry_meta, replay, save_finding, Attachment, CorpusError, ExpectFile,
};
use pimdiff::finding::Kind;
use pimdiff::finding::{
    Expectation, ExpectationParseError, FindingMeta, MinimizationStats, Observed, Origin,
    META_FORMAT,
};
use pimdiff_atomic::{clean_temp as clean_temp_dirs, AtomicDir};
use pimdiff_oracle::io::{read_case, write_npy_atomic};

fn corpus_case(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name)
}

/// Copies the case files (not the metadata) of a corpus entry into `dest`.
fn copy_case(src: &Path, dest: &Path) {
    fs::create_dir_all(dest).unwrap();
    for f in [
        "case.json",
        "input.npy",
        "weight.npy",
        "bias.npy",
        "expected.npy",
    ] {
        if src.join(f).exists() {
            fs::copy(src.join(f), dest.join(f)).unwrap();
        }
    }
}

fn visible(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    v.sort();
    v
}

fn all_entries(dir: &Path) -> usize {
    fs::read_dir(dir).unwrap().count()
}

#[test]
fn an_interrupted_write_leaves_nothing_visible_and_is_cleaned_next_time() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("001-finding");
    let dir = AtomicDir::create(&dest).unwrap();
    fs::write(dir.path().join("case.json"), "{}").unwrap();
    // A process killed here never runs the destructor.
    std::mem::forget(dir);
    assert!(!dest.exists());
    assert_eq!(visible(tmp.path()), Vec::<String>::new());
    assert_eq!(all_entries(tmp.path()), 1);
    assert!(matches!(
        discover(&[tmp.path().to_path_buf()]),
        Err(CorpusError::NoCases { .. })
    ));
    assert_eq!(clean_temp_dirs(tmp.path()).unwrap(), 1);
    assert_eq!(all_entries(tmp.path()), 0);
}

#[test]
fn a_failed_write_removes_its_temporary_directory_and_a_commit_is_complete() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("x");
    {
        let dir = AtomicDir::create(&dest).unwrap();
        fs::write(dir.path().join("a"), "1").unwrap();
        // Dropped without commit: an error on the way.
    }
    assert_eq!(all_entries(tmp.path()), 0);
    let dir = AtomicDir::create(&dest).unwrap();
    fs::write(dir.path().join("a"), "1").unwrap();
    assert_eq!(dir.commit().unwrap(), dest);
    assert_eq!(fs::read_to_string(dest.join("a")).unwrap(), "1");
    assert!(matches!(
        AtomicDir::create(&dest),
        Err(pimdiff_atomic::Error::Exists { .. })
    ));
}

#[test]
fn expectations_parse_print_and_match() {
    let cases = [
        ("pass", Expectation::Pass),
        ("unsupported", Expectation::Unsupported(None)),
        (
            "unsupported: not enough",
            Expectation::Unsupported(Some("not enough".into())),
        ),
        ("fault", Expectation::Kind(Kind::Fault)),
        ("finding", Expectation::AnyFinding),
        (
            "signature: fault: recv: SizeMismatch",
            Expectation::Signature("fault: recv: SizeMismatch".into()),
        ),
    ];
    for (text, e) in cases {
        assert_eq!(Expectation::parse(text), Ok(e.clone()));
        assert_eq!(e.to_string(), text);
    }
    assert_eq!(Expectation::parse(" "), Err(ExpectationParseError::Empty));
    assert_eq!(
        Expectation::parse("signature:"),
        Err(ExpectationParseError::EmptySignature)
    );
    assert_eq!(
        Expectation::parse("explode"),
        Err(ExpectationParseError::Unknown("explode".into()))
    );

    let fault = Observed {
        kind: Kind::Fault,
        finding: true,
        signature: Some("fault: recv: SizeMismatch".into()),
        unsupported_reason: None,
    };
    let unsupported = Observed {
        kind: Kind::Unsupported,
        finding: false,
        signature: None,
        unsupported_reason: Some("not enough crossbar arrays: 3 needed".into()),
    };
    assert!(Expectation::parse("signature: fault: recv: SizeMismatch")
        .unwrap()
        .is_met_by(&fault));
    assert!(Expectation::AnyFinding.is_met_by(&fault));
    assert!(!Expectation::Pass.is_met_by(&fault));
    assert!(Expectation::parse("unsupported: not enough")
        .unwrap()
        .is_met_by(&unsupported));
    assert!(!Expectation::parse("unsupported: memory")
        .unwrap()
        .is_met_by(&unsupported));
    assert!(!Expectation::AnyFinding.is_met_by(&unsupported));
}

#[test]
fn bad_metadata_is_refused_with_the_file_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(
        tmp.path().join("expect.json"),
        r#"{"format": 1, "expect": "explode"}"#,
    )
    .unwrap();
    match read_entry_meta(tmp.path()) {
        Err(CorpusError::BadExpectation { path, problem }) => {
            assert_eq!(path, tmp.path().join("expect.json"));
            assert_eq!(problem, ExpectationParseError::Unknown("explode".into()));
        }
        other => panic!("{other:?}"),
    }
    fs::write(
        tmp.path().join("expect.json"),
        r#"{"format": 2, "expect": "pass"}"#,
    )
    .unwrap();
    assert!(matches!(
        read_entry_meta(tmp.path()),
        Err(CorpusError::UnsupportedFormat { found: 2, .. })
    ));
    fs::write(
        tmp.path().join("expect.json"),
        r#"{"format": 1, "expect": "pass", "colour": 1}"#,
    )
    .unwrap();
    match read_entry_meta(tmp.path()) {
        Err(CorpusError::Json { message, .. }) => {
            assert!(message.contains("unknown field `colour`"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    fs::write(
        tmp.path().join("expect.json"),
        r#"{"format": 1, "expect": "pass", "mutation": "gremlins"}"#,
    )
    .unwrap();
    copy_case(&corpus_case("features/mvm-plain"), tmp.path());
    match corpus::load_entry(tmp.path()) {
        Err(corpus::EntryError::UnknownMutation { name, .. }) => assert_eq!(name, "gremlins"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_saved_finding_round_trips() {
    let tmp = tempfile::tempdir().unwrap();
    let mut case = read_case(&corpus_case("features/conv-bias")).unwrap();
    let result = check_case(&case, &RunConfig::default());
    case.expected = result.oracle.clone();
    let meta = FindingMeta {
        format: META_FORMAT,
        signature: "mismatch: channels all, pixels all, batch all".into(),
        signature_detail: serde_json::json!({"kind": "mismatch", "detail": "channels all, pixels all, batch all"}),
        outcome: "mismatch".into(),
        expect: Expectation::Pass,
        compiler: "test compiler".into(),
        lowering: None,
        pimdiff_version: "0.1.0".into(),
        origin: Some(Origin {
            hunt_seed: 1,
            case_index: 2,
            case_seed: 3,
        }),
        generator: serde_json::json!({}),
        schedule: None,
        injected_bug: None,
        minimization: Some(MinimizationStats {
            tried: 5,
            kept: 2,
            original_size: 100,
            minimized_size: 10,
            cut_short: false,
        }),
        suspects: Vec::new(),
        target: Some("cases".into()),
        frames: Vec::new(),
        message: None,
        sanitizer: None,
        details: serde_json::Value::Null,
    };
    let dest = tmp.path().join("findings").join("001-x");
    save_finding(
        &dest,
        &case,
        result.bundle.as_ref(),
        "# report\n",
        &meta,
        &[Attachment {
            name: "note.txt",
            bytes: b"attached".to_vec(),
        }],
    )
    .unwrap();
    assert_eq!(std::fs::read(dest.join("note.txt")).unwrap(), b"attached");
    assert_eq!(
        visible(&dest),
        [
            "bias.npy",
            "bundle",
            "case.json",
            "expected.npy",
            "finding.json",
            "input.npy",
            "note.txt",
            "report.md",
            "weight.npy"
        ]
    );
    assert_eq!(all_entries(&tmp.path().join("findings")), 1);
    let entry = corpus::load_entry(&dest).unwrap();
    assert_eq!(entry.case, case);
    assert_eq!(entry.meta.finding, Some(meta));
    assert_eq!(entry.meta.expectation(), Some(&Expectation::Pass));
    let bundle = pimdiff_isa::bundle::Bundle::read_dir(&dest.join("bundle")).unwrap();
    assert_eq!(Some(&bundle), result.bundle.as_ref());
}

#[test]
fn replay_compares_each_case_with_its_expectation() {
    let tmp = tempfile::tempdir().unwrap();
    // A passing case with an expectation, a plain case without one, and a case whose
    // expected.npy contradicts the oracle.
    let good = tmp.path().join("a-good");
    copy_case(&corpus_case("features/conv-relu"), &good);
    corpus::write_json(
        &good,
        "expect.json",
        &ExpectFile {
            format: 1,
            expect: Expectation::Pass,
            note: String::new(),
            mutation: None,
            lowering: None,
            compile_options: None,
        },
    )
    .unwrap();
    let plain = tmp.path().join("b-plain");
    copy_case(&corpus_case("features/mvm-plain"), &plain);
    let wrong = tmp.path().join("nested").join("c-wrong-expected");
    copy_case(&corpus_case("features/mvm-plain"), &wrong);
    let mut expected = read_case(&wrong).unwrap().expected.unwrap();
    expected[[0, 3]] += 1;
    write_npy_atomic(&wrong.join("expected.npy"), &expected).unwrap();

    let rows = replay(&[tmp.path().to_path_buf()], &RunConfig::default()).unwrap();
    let summary: Vec<(String, bool)> = rows
        .iter()
        .map(|r| {
            (
                r.dir
                    .strip_prefix(tmp.path())
                    .unwrap()
                    .display()
                    .to_string(),
                r.ok(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("a-good".to_string(), true),
            ("b-plain".to_string(), true),
            ("nested/c-wrong-expected".to_string(), false)
        ]
    );
    let wrong_row = rows[2].result.as_ref().unwrap();
    assert_eq!(wrong_row.observed.kind, Kind::Pass);
    let d = wrong_row.expected_disagrees.clone().unwrap();
    assert_eq!(d.count, 1);
    assert_eq!(d.first.len(), 1);
    assert_eq!(d.first[0].0, vec![0, 3]);
    assert_eq!(d.first[0].1, d.first[0].2 + 1);
}
