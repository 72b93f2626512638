//! Every subcommand that reads a file, given one that does not exist: exit 2 and one line
//! that says each thing once (which command step failed, the path, the operating system's
//! reason), however many error layers the reason passed through.

use std::process::Command;

const MISSING: &str = "/nonexistent-pimdiff-test/none";
const ENOENT: &str = "No such file or directory (os error 2)";

fn stderr_of(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .args(args)
        .output()
        .expect("spawn pimdiff");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_message(args: &[&str], expected: String) {
    assert_eq!(
        stderr_of(args),
        (Some(2), expected + "\n"),
        "pimdiff {args:?}"
    );
}

#[test]
fn a_missing_case_directory() {
    let m = MISSING;
    assert_message(&["oracle", m], format!("error: invalid case {m}: {ENOENT}"));
    assert_message(&["export", m], format!("error: invalid case {m}: {ENOENT}"));
    assert_message(
        &["repro", m],
        format!("error: cannot read the case {m}: {ENOENT}"),
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("bundle");
    assert_message(
        &["compile", m, "-o", out.to_str().unwrap()],
        format!("error: reading case {m}: {ENOENT}"),
    );
    assert_message(&["replay", m], format!("error: {m}: {ENOENT}"));
}

#[test]
fn a_missing_program_or_assembly_file() {
    let m = MISSING;
    assert_message(
        &["run", m],
        format!("error: cannot load program {m}: cannot read: {ENOENT}"),
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out = out.to_str().unwrap();
    assert_message(
        &["asm", m, "-o", out],
        format!("error: {m}: no such file or directory"),
    );
    assert_message(
        &["disasm", m, "-o", out],
        format!("error: {m}: no such file or directory"),
    );
}

#[test]
fn a_missing_fuzz_artifact_or_onnx_model() {
    let m = MISSING;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("case");
    let out = out.to_str().unwrap();
    assert_message(
        &["from-fuzz", m, "--target", "conv_lowering", out],
        format!("error: cannot read the fuzz artifact {m}: {ENOENT}"),
    );
    assert_message(
        &["import-onnx", m, "--out", out],
        format!("error: cannot read {m}: {ENOENT}"),
    );
}
