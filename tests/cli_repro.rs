//! `pimdiff repro` and `pimdiff replay` through the binary: exit codes 0 / 1 / 2 and what
//! they print.

#[path = "support/cli.rs"]
mod cli;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use cli::pimdiff;

fn corpus_case(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name)
}

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

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_corpus_case_passes_with_exit_0() {
    let dir = corpus_case("features/conv-padding");
    let o = pimdiff(&["repro", dir.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("\noutcome: pass\n"), "{out}");
    assert!(out.contains("expectation: pass (met)"), "{out}");
}

#[test]
fn a_wrong_expected_npy_is_a_finding_with_the_differing_elements() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    copy_case(&corpus_case("features/conv-bias"), &dir);
    let mut expected = pimdiff_oracle::io::read_case(&dir)
        .unwrap()
        .expected
        .unwrap();
    let oracle = expected[[0, 1, 2, 3]];
    expected[[0, 1, 2, 3]] = oracle + 5;
    pimdiff_oracle::io::write_npy_atomic(&dir.join("expected.npy"), &expected).unwrap();
    let o = pimdiff(&["repro", dir.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("expected.npy disagrees with the oracle: 1 element(s) differ"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "at [0, 1, 2, 3]: expected.npy {}, oracle {oracle}",
            oracle + 5
        )),
        "{out}"
    );
}

#[test]
fn a_broken_case_json_is_bad_input_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    copy_case(&corpus_case("features/conv-stride"), &dir);
    let json = fs::read_to_string(dir.join("case.json")).unwrap();
    let broken = json.replacen("\"groups\": 1", "\"groups\": \"one\"", 1);
    assert_ne!(json, broken);
    fs::write(dir.join("case.json"), broken).unwrap();
    let o = pimdiff(&["repro", dir.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("case.json") && err.contains("op.groups"),
        "{err}"
    );
    let missing = pimdiff(&["repro", tmp.path().join("nowhere").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn an_injected_bug_entry_is_a_finding_and_flags_choose_the_compiler() {
    // expect.json names the bug: repro injects it.
    let o = pimdiff(&["repro", corpus_case("bugs/missing-bias").to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("compiler: in-repo pimdiff-compiler")
            && out.contains("+ injected bug missing-bias"),
        "{out}"
    );
    assert!(out.contains("outcome: mismatch:"), "{out}");
    assert!(out.contains("expectation: mismatch (met)"), "{out}");

    // A plain case with --inject-bug, and a bad flag value.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    copy_case(&corpus_case("features/conv-bias"), &dir);
    let o = pimdiff(&[
        "repro",
        dir.to_str().unwrap(),
        "--inject-bug",
        "missing-bias",
    ]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    let o = pimdiff(&[
        "repro",
        dir.to_str().unwrap(),
        "--no-skip-padding",
        "--no-weight-skipping",
        "--schedule",
        "random:7",
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let o = pimdiff(&["repro", dir.to_str().unwrap(), "--schedule", "sometimes"]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
}

#[test]
fn an_unsupported_case_is_exit_4_no_verdict_with_its_reason() {
    let o = pimdiff(&[
        "repro",
        corpus_case("limits/not-enough-arrays").to_str().unwrap(),
    ]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(4), "{out}");
    assert!(
        out.contains("outcome: unsupported: not enough crossbar arrays"),
        "{out}"
    );
}

#[test]
fn replay_prints_a_table_and_a_summary() {
    let o = pimdiff(&[
        "replay",
        corpus_case("features").to_str().unwrap(),
        corpus_case("bugs").to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(
        out.lines().any(|l| l.starts_with("ok")
            && l.contains("bugs/recv-wrong-core")
            && l.contains("fault")),
        "{out}"
    );
    assert!(
        out.contains("case(s):")
            && out.contains("0 not as expected, 0 without a verdict, 0 unreadable"),
        "{out}"
    );

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    copy_case(&corpus_case("features/mvm-plain"), &dir);
    fs::write(
        dir.join("expect.json"),
        r#"{"format": 1, "expect": "mismatch"}"#,
    )
    .unwrap();
    let o = pimdiff(&["replay", tmp.path().to_str().unwrap()]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("FAIL")
            && out.contains(
                "1 case(s): 0 as expected, 1 not as expected, 0 without a verdict, 0 unreadable"
            ),
        "{out}"
    );

    fs::write(dir.join("weight.npy"), b"not npy").unwrap();
    let o = pimdiff(&["replay", tmp.path().to_str().unwrap()]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("ERROR") && out.contains("weight.npy"), "{out}");
    let o = pimdiff(&["replay", tmp.path().join("empty-nothing").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
}
