//! `pimdiff hunt` through the binary: exit codes, bad arguments, saved findings that
//! reproduce, and a clean stop on SIGINT.

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use pimdiff::hunt::HuntSummary;

fn pimdiff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .args(args)
        .output()
        .unwrap()
}

fn summary(out: &Path) -> HuntSummary {
    serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

fn hidden_entries(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

#[test]
fn bad_arguments_exit_2() {
    for args in [
        &["hunt", "--seed", "1"][..],
        &["hunt", "--seed", "1", "--cases", "5", "--shard", "2/2"],
        &["hunt", "--seed", "1", "--duration", "10x"],
        &["hunt", "--seed", "1", "--cases", "5", "--max-channels", "0"],
        &["hunt", "--seed", "1", "--cases", "5", "--mvm-ratio", "1.5"],
        &[
            "hunt",
            "--seed",
            "1",
            "--cases",
            "5",
            "--inject-bug",
            "gremlins",
        ],
        &["hunt", "--seed", "1", "--cases", "5", "--duration", "1s"],
    ] {
        let o = pimdiff(args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn a_clean_hunt_exits_0_and_a_buggy_one_exits_1_with_reproducible_findings() {
    let tmp = tempfile::tempdir().unwrap();
    let clean = tmp.path().join("clean");
    let o = pimdiff(&[
        "hunt",
        "--seed",
        "3",
        "--cases",
        "200",
        "--jobs",
        "2",
        "--out",
        clean.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s = summary(&clean);
    assert_eq!((s.cases_run, s.findings.len()), (200, 0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("## Unique findings: 0"));

    let buggy = tmp.path().join("buggy");
    let o = pimdiff(&[
        "hunt",
        "--seed",
        "3",
        "--cases",
        "200",
        "--out",
        buggy.to_str().unwrap(),
        "--inject-bug",
        "wrong-send-size",
        "--max-cores",
        "3",
        "--minimize-time",
        "5s",
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s = summary(&buggy);
    assert!(!s.findings.is_empty());
    assert_eq!(s.generator.max_cores, 3);
    assert!(
        s.compiler.ends_with("+ injected bug wrong-send-size"),
        "{}",
        s.compiler
    );
    let first = buggy.join(&s.findings[0].dir);
    // With the same injected bug the finding reproduces; with the correct compiler it passes
    // and repro says the compiler differs.
    let o = pimdiff(&[
        "repro",
        first.to_str().unwrap(),
        "--inject-bug",
        "wrong-send-size",
    ]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(&format!("signature: {}", s.findings[0].signature)),
        "{out}"
    );
    let o = pimdiff(&["repro", first.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("note: the finding was recorded with a different compiler"),
        "{out}"
    );
}

#[test]
fn sigint_stops_the_hunt_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .args([
            "hunt",
            "--seed",
            "5",
            "--duration",
            "60s",
            "--inject-bug",
            "missing-bias",
            "--minimize-time",
            "2s",
        ])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The handler is installed before the output directory is made: wait for it, then let
    // the hunt run a little.
    let started = Instant::now();
    while !out.join("findings").is_dir() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the hunt did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1000));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let sent = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if sent.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the hunt did not stop within 20 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let waited = sent.elapsed();
    assert!(waited < Duration::from_secs(10), "stopping took {waited:?}");
    assert_eq!(status.code(), Some(1));
    let s = summary(&out);
    assert!(s.interrupted);
    assert!(s.cases_run > 0);
    assert!(!s.findings.is_empty());
    for f in &s.findings {
        assert!(out.join(&f.dir).join("finding.json").is_file(), "{}", f.dir);
    }
    assert!(out.join("summary.md").is_file());
    assert_eq!(hidden_entries(&out), Vec::<String>::new());
    assert_eq!(hidden_entries(&out.join("findings")), Vec::<String>::new());
}
