//! `pimdiff new-case` and `pimdiff oracle` end to end: exit codes and what they print.

#[path = "support/cli.rs"]
mod cli;

use std::path::Path;

use ndarray::ArrayD;
use ndarray_npy::{read_npy, write_npy};

use cli::{pimdiff, text};

fn new_case(dir: &Path) {
    let out = pimdiff(&[
        "new-case",
        "--op",
        "conv2d",
        "--bias",
        "--relu",
        "--seed",
        "3",
        "--expected",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn agreeing_case_exits_0_and_writes_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    new_case(&dir);
    let out_npy = tmp.path().join("out.npy");
    let out = pimdiff(&[
        "oracle",
        dir.to_str().unwrap(),
        "--out",
        out_npy.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("conv2d, output [1, 8, 8, 8] (512 elements) equals expected.npy"),
        "{stdout}"
    );
    let written: ArrayD<i32> = read_npy(&out_npy).unwrap();
    let expected: ArrayD<i32> = read_npy(dir.join("expected.npy")).unwrap();
    assert_eq!(written, expected);
}

#[test]
fn differing_expected_exits_1_and_lists_elements() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    new_case(&dir);
    let mut expected: ArrayD<i32> = read_npy(dir.join("expected.npy")).unwrap();
    let original = expected.clone();
    expected[[0, 0, 0, 1]] += 1;
    expected[[0, 5, 7, 7]] = -7;
    write_npy(dir.join("expected.npy"), &expected).unwrap();
    let out = pimdiff(&["oracle", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("2 of 512 elements of expected.npy differ from the oracle"),
        "{stdout}"
    );
    let first = format!(
        "at [0, 0, 0, 1]: expected {}, oracle {}",
        original[[0, 0, 0, 1]] + 1,
        original[[0, 0, 0, 1]]
    );
    assert!(stdout.contains(&first), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "at [0, 5, 7, 7]: expected -7, oracle {}",
            original[[0, 5, 7, 7]]
        )),
        "{stdout}"
    );
}

#[test]
fn bad_case_exits_2_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    new_case(&dir);
    let json = std::fs::read_to_string(dir.join("case.json")).unwrap();
    std::fs::write(
        dir.join("case.json"),
        json.replace("\"groups\": 1", "\"groups\": -2"),
    )
    .unwrap();
    let out = pimdiff(&["oracle", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("case.json: field `op.groups` is -2; it must not be negative"),
        "{stderr}"
    );
}

#[test]
fn new_case_refuses_existing_dir_and_bad_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    new_case(&dir);
    let out = pimdiff(&["new-case", "--op", "mvm", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("already exists"),
        "{}",
        text(&out.stderr)
    );

    let other = tmp.path().join("other");
    let out = pimdiff(&[
        "new-case",
        "--op",
        "mvm",
        "--height",
        "4",
        other.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--height applies to --op conv2d only"),
        "{}",
        text(&out.stderr)
    );
    let out = pimdiff(&[
        "new-case",
        "--op",
        "conv2d",
        "--kernel",
        "9x9",
        "--padding",
        "0",
        other.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("output height would be below 1"),
        "{}",
        text(&out.stderr)
    );
    assert!(!other.exists());
}

#[test]
fn new_case_mvm_is_readable_by_oracle() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fc");
    let out = pimdiff(&[
        "new-case",
        "--op",
        "mvm",
        "--in-features",
        "512",
        "--out-features",
        "1000",
        "--bias",
        "--batch",
        "2",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = pimdiff(&["oracle", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("mvm, output [2, 1000] (2000 elements); no expected.npy"),
        "{}",
        text(&out.stdout)
    );
}
