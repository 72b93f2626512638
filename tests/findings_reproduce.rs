//! A saved finding reproduces from its directory alone: `finding.json` records everything
//! besides the case that compiling it again needs — the injected bug (and, in an N-version
//! hunt, the lowering it went into), the lowering(s) and the in-repo compiler's options — so
//! `pimdiff repro DIR` exits 1 and `pimdiff replay DIR` meets the recorded expectation, for
//! every way a tensor finding is written (`hunt`, `from-fuzz`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pimdiff(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("running pimdiff")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn finding_json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("finding.json")).unwrap()).unwrap()
}

/// A committed seed of the conv_lowering fuzz target whose case the `missing-bias` bug
/// miscompiles (the in-repo compiler passes it).
fn artifact() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/conv_lowering/seed-random-1000")
}

fn assert_reproduces(dir: &Path, cwd: &Path) {
    let repro = pimdiff(&["repro", dir.to_str().unwrap()], cwd);
    assert_eq!(repro.status.code(), Some(1), "{}", text(&repro));
    let replay = pimdiff(&["replay", dir.to_str().unwrap()], cwd);
    assert_eq!(replay.status.code(), Some(0), "{}", text(&replay));
}

#[test]
fn a_from_fuzz_finding_of_an_injected_bug_records_it_and_reproduces() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pimdiff(
        &[
            "from-fuzz",
            artifact().to_str().unwrap(),
            "--target",
            "conv_lowering",
            "ff",
            "--inject-bug",
            "missing-bias",
        ],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).ends_with("saved:   ff\nreproduce: pimdiff repro ff\n"),
        "{}",
        text(&out)
    );
    let meta = finding_json(&tmp.path().join("ff"));
    assert_eq!(meta["injected_bug"], "missing-bias");
    assert_eq!(meta["lowering"], "channel");
    // An injected bug compiles with its own options: none are recorded.
    assert_eq!(meta.get("details"), None);
    assert_reproduces(Path::new("ff"), tmp.path());
    // The same case is no finding without the bug: `repro` really uses the record.
    let in_repo = format!(
        "{} compile {{case}} -o {{out}}",
        env!("CARGO_BIN_EXE_pimdiff")
    );
    let clean = pimdiff(&["repro", "ff", "--compiler-cmd", &in_repo], tmp.path());
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean));
}

#[test]
fn an_unminimized_from_fuzz_finding_reproduces_too() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pimdiff(
        &[
            "from-fuzz",
            artifact().to_str().unwrap(),
            "--target",
            "conv_lowering",
            "ff",
            "--inject-bug",
            "missing-bias",
            "--minimize-time",
            "0s",
        ],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // Unminimized, the case is the artifact's own.
    assert_eq!(
        finding_json(&tmp.path().join("ff"))["minimization"],
        serde_json::Value::Null
    );
    assert_reproduces(Path::new("ff"), tmp.path());
}

#[test]
fn from_fuzz_names_the_compiler_command_repro_needs_for_an_external_compiler() {
    let tmp = tempfile::tempdir().unwrap();
    let cmd = format!(
        "{} compile {{case}} -o {{out}} --inject-bug missing-bias",
        env!("CARGO_BIN_EXE_pimdiff")
    );
    let out = pimdiff(
        &[
            "from-fuzz",
            artifact().to_str().unwrap(),
            "--target",
            "conv_lowering",
            "ext",
            "--minimize-time",
            "0s",
            "--compiler-cmd",
            &cmd,
        ],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let hint = format!("reproduce: pimdiff repro ext --compiler-cmd '{cmd}'\n");
    assert!(text(&out).ends_with(&hint), "{}", text(&out));
    let meta = finding_json(&tmp.path().join("ext"));
    assert_eq!(meta.get("injected_bug"), None);
    assert_eq!(meta["compiler"], format!("external: {cmd}"));
    let repro = pimdiff(&["repro", "ext", "--compiler-cmd", &cmd], tmp.path());
    assert_eq!(repro.status.code(), Some(1), "{}", text(&repro));
}

#[test]
fn an_n_version_finding_records_the_lowering_its_injected_bug_went_into() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pimdiff(
        &[
            "hunt",
            "--seed",
            "7",
            "--cases",
            "300",
            "--lowering",
            "both",
            "--inject-bug",
            "missing-bias",
            "--inject-into",
            "pixel",
            "--out",
            "pb",
            "--quiet",
        ],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let dir = Path::new("pb/findings/001-mismatch-pixel-only-ld-of-uninitialised-global-m");
    let meta = finding_json(&tmp.path().join(dir));
    assert_eq!(meta["injected_bug"], "missing-bias");
    assert_eq!(meta["lowering"], "both");
    assert_eq!(meta["details"]["injected_into"], "pixel");
    assert_eq!(
        meta["expect"],
        "signature: mismatch: pixel only: channels all, pixels all, batch all"
    );
    assert_reproduces(dir, tmp.path());

    // A record naming no lowering is refused, naming the field.
    let mut bad = meta.clone();
    bad["details"]["injected_into"] = "diagonal".into();
    std::fs::write(
        tmp.path().join(dir).join("finding.json"),
        serde_json::to_string_pretty(&bad).unwrap(),
    )
    .unwrap();
    let repro = pimdiff(&["repro", dir.to_str().unwrap()], tmp.path());
    assert_eq!(repro.status.code(), Some(2), "{}", text(&repro));
    assert!(
        text(&repro).contains("field `details.injected_into`"),
        "{}",
        text(&repro)
    );
}
