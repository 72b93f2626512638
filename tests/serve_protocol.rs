//! The persistent external-compiler protocol (`--compiler-protocol serve`): `pimdiff compile
//! --serve` finds nothing and what the process-per-case protocol finds on the same seed; a
//! compiler with a bug gives the same findings through either protocol (in Rust, and in Python
//! through `python/pimdiff_serve.py`); a server that crashes, hangs, answers garbage or too
//! long a line gives a crash, a timeout or a protocol error for the case in flight while the
//! hunt goes on; a finding made in serve mode reproduces.

#[path = "support/cli.rs"]
mod cli;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use pimdiff::engine::HuntSummary;
use pimdiff::finding::{FindingMeta, Kind};

use cli::{path, pimdiff, text};

const BIN: &str = env!("CARGO_BIN_EXE_pimdiff");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// A hunt of `cases` cases (seed 7, 2 jobs) with `extra` flags; its exit status and summary.
fn hunt(out: &Path, cases: &str, extra: &[&str]) -> (Option<i32>, HuntSummary) {
    let mut args = vec![
        "hunt",
        "--seed",
        "7",
        "--cases",
        cases,
        "--quiet",
        "--out",
        path(out),
    ];
    for (flag, default) in [("--jobs", "2"), ("--minimize-time", "5s")] {
        if !extra.contains(&flag) {
            args.extend([flag, default]);
        }
    }
    args.extend(extra);
    let o = pimdiff(&args);
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap_or_else(|e| {
        panic!(
            "no summary.json ({e}):\n{}{}",
            text(&o.stdout),
            text(&o.stderr)
        )
    });
    (o.status.code(), serde_json::from_str(&summary).unwrap())
}

/// What must be equal between two hunts of one compiler through the two protocols: outcome
/// counts and each finding's signature, first case and occurrences.
/// A finding as compared: signature, kind, first case index and seed, occurrences.
type Compared = (String, Kind, u64, u64, u64);

fn findings(s: &HuntSummary) -> (BTreeMap<Kind, u64>, Vec<Compared>) {
    let counts = s
        .outcomes
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(&k, &n)| (k, n))
        .collect();
    let found = s
        .findings
        .iter()
        .map(|f| {
            (
                f.signature.clone(),
                f.outcome,
                f.case_index,
                f.case_seed,
                f.occurrences,
            )
        })
        .collect();
    (counts, found)
}

fn serve_cmd(extra: &str) -> String {
    format!("'{BIN}' compile --serve{extra}")
}

#[test]
fn the_reference_server_finds_nothing_and_what_process_per_case_finds() {
    let tmp = tempfile::tempdir().unwrap();
    let serve = serve_cmd("");
    let process = format!("'{BIN}' compile {{case}} -o {{out}}");
    let flags = |protocol: &'static str, cmd: &str| -> Vec<String> {
        vec![
            "--compiler-protocol".into(),
            protocol.into(),
            "--compiler-cmd".into(),
            cmd.into(),
            "--overcommit-ratio".into(),
            "0.3".into(),
        ]
    };
    let run = |name: &str, protocol: &'static str, cmd: &str| {
        let f = flags(protocol, cmd);
        let f: Vec<&str> = f.iter().map(String::as_str).collect();
        hunt(&tmp.path().join(name), "60", &f)
    };
    let (code, served) = run("serve", "serve", &serve);
    assert_eq!(code, Some(0), "{:?}", served.failures);
    let (_, processed) = run("process", "process", &process);
    assert!(served.findings.is_empty());
    assert!(served.outcomes.get(&Kind::Pass).copied().unwrap_or(0) > 0);
    assert!(
        served
            .outcomes
            .get(&Kind::Unsupported)
            .copied()
            .unwrap_or(0)
            > 0,
        "no declined case exercised the unsupported answer: {:?}",
        served.outcomes
    );
    assert_eq!(findings(&served), findings(&processed));
}

/// A hunt keeps one server per worker for all its cases, and every request finds what the
/// protocol promises however the request before ended: a case directory holding just its
/// case and an empty bundle directory (the recording server leaves a stray file in the bundle
/// directory each time).
#[test]
fn each_worker_keeps_its_server_and_every_request_finds_clean_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("requests.jsonl");
    let cmd = format!(
        "exec python3 '{FIXTURES}/serve/recording_server.py' '{}' '{BIN}'",
        path(&log)
    );
    let (code, summary) = hunt(
        &tmp.path().join("out"),
        "24",
        &["--compiler-protocol", "serve", "--compiler-cmd", &cmd],
    );
    assert_eq!(code, Some(0), "{:?}", summary.failures);
    let text = std::fs::read_to_string(&log).unwrap();
    let seen: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The 24 cases, and case 0 once more: before it starts, the hunt checks its first case
    // for a set-up mistake (`check::setup`), on a server that its workers then reuse.
    assert_eq!(seen.len(), 25);
    let servers: std::collections::BTreeSet<u64> =
        seen.iter().map(|s| s["pid"].as_u64().unwrap()).collect();
    assert!(
        (1..=2).contains(&servers.len()),
        "{} servers for 2 jobs",
        servers.len()
    );
    for s in &seen {
        let case_files: Vec<&str> = s["case_files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        let expected_files: &[&str] = if case_files.contains(&"bias.npy") {
            &["bias.npy", "case.json", "input.npy", "weight.npy"]
        } else {
            &["case.json", "input.npy", "weight.npy"]
        };
        assert_eq!(case_files, expected_files, "{s}");
        assert_eq!(s["out_files"], serde_json::json!([]), "{s}");
    }
}

/// A server that replaces its bundle directory, or the directory holding its case and bundle
/// directories, with a symbolic link to another directory gets a broken-bundle error, and
/// pimdiff, emptying its directories after the request, never empties what the link names.
#[test]
fn directories_replaced_by_links_are_not_followed_when_emptied() {
    for mode in ["bundle", "parent"] {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        let precious = [
            victim.join("precious.txt"),
            victim.join("case/precious.txt"),
            victim.join("bundle/precious.txt"),
        ];
        for file in &precious {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, "keep me\n").unwrap();
        }
        let cmd = format!(
            "exec python3 '{FIXTURES}/serve/symlinking_server.py' {mode} '{}'",
            path(&victim)
        );
        // The directories a server moved aside are its doing, not the harness's to remove:
        // they go with the test's own scratch directory.
        let scratch = tmp.path().join("scratch");
        std::fs::create_dir(&scratch).unwrap();
        let out = tmp.path().join("out");
        let o = Command::new(BIN)
            .args([
                "hunt", "--seed", "7", "--cases", "6", "--jobs", "2", "--quiet",
            ])
            .args(["--minimize-time", "1s", "--compiler-protocol", "serve"])
            .args(["--compiler-cmd", &cmd, "--out", path(&out)])
            .env("PIMDIFF_SCRATCH", &scratch)
            .output()
            .unwrap();
        let summary: HuntSummary =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(o.status.code(), Some(1), "{mode}: {:?}", summary.failures);
        assert_eq!(
            summary.outcomes.get(&Kind::CompileError).copied(),
            Some(6),
            "{mode}: {:?}",
            summary.outcomes
        );
        for file in &precious {
            assert_eq!(
                std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{mode}: {e}")),
                "keep me\n"
            );
        }
    }
}

#[test]
fn an_injected_bug_gives_the_same_findings_through_either_protocol_for_any_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    let serve = serve_cmd(" --inject-bug missing-bias");
    let process = format!("'{BIN}' compile {{case}} -o {{out}} --inject-bug missing-bias");
    let (code, served) = hunt(
        &tmp.path().join("serve"),
        "40",
        &["--compiler-protocol", "serve", "--compiler-cmd", &serve],
    );
    assert_eq!(code, Some(1));
    let (_, processed) = hunt(
        &tmp.path().join("process"),
        "40",
        &["--compiler-cmd", &process],
    );
    let (_, one_job) = hunt(
        &tmp.path().join("serve-1"),
        "40",
        &[
            "--compiler-protocol",
            "serve",
            "--compiler-cmd",
            &serve,
            "--jobs",
            "1",
        ],
    );
    let (counts, found) = findings(&served);
    assert!(
        counts.get(&Kind::Mismatch).copied().unwrap_or(0) > 0,
        "{counts:?}"
    );
    assert!(found.iter().all(|f| f.1 == Kind::Mismatch), "{found:?}");
    assert_eq!(findings(&served), findings(&processed));
    assert_eq!(findings(&served), findings(&one_job));
}

#[test]
fn a_python_server_with_a_bug_finds_what_its_process_per_case_twin_finds() {
    let tmp = tempfile::tempdir().unwrap();
    let serve = format!("python3 '{FIXTURES}/serve/buggy_server.py' '{BIN}'");
    let process = format!(
        "python3 '{FIXTURES}/systematic/last_mvmul_group_zero.py' '{BIN}' {{case}} {{out}}"
    );
    let (code, served) = hunt(
        &tmp.path().join("serve"),
        "16",
        &["--compiler-protocol", "serve", "--compiler-cmd", &serve],
    );
    assert_eq!(code, Some(1), "{:?}", served.failures);
    let (_, processed) = hunt(
        &tmp.path().join("process"),
        "16",
        &["--compiler-cmd", &process],
    );
    // The same cases fail the same way; how failing cases group into findings can differ,
    // because localization is bounded in time and the process-per-case twin is much slower.
    let occurrences = |s: &HuntSummary| s.findings.iter().map(|f| f.occurrences).sum::<u64>();
    assert!(!served.findings.is_empty());
    assert_eq!(findings(&served).0, findings(&processed).0);
    assert_eq!(occurrences(&served), occurrences(&processed));
    assert_eq!(
        served.findings[0].case_index,
        processed.findings[0].case_index
    );
}

/// A hunt through `misbehaving_server.py MODE`: MVM cases misbehave, conv2d cases compile.
fn misbehaving(tmp: &Path, mode: &str) -> (HuntSummary, String) {
    let cmd = misbehaving_cmd(mode);
    // The limit is CPU time: a loaded machine does not make Python's start-up count, so the
    // hang (a spin) needs only a short one.
    let timeout = if mode == "hang" { "2s" } else { "60s" };
    let out = tmp.join(mode);
    let (code, summary) = hunt(
        &out,
        "10",
        &[
            "--compiler-protocol",
            "serve",
            "--compiler-cmd",
            &cmd,
            "--compiler-timeout",
            timeout,
            "--minimize-time",
            "1s",
        ],
    );
    assert_eq!(code, Some(1), "{:?}", summary.failures);
    assert_eq!(summary.findings.len(), 1, "{:?}", summary.findings);
    let passes = summary.outcomes.get(&Kind::Pass).copied().unwrap_or(0);
    assert!(passes > 0, "the hunt did not go on: {:?}", summary.outcomes);
    let finding = &summary.findings[0];
    assert_eq!(
        summary.outcomes.get(&finding.outcome).copied(),
        Some(finding.occurrences)
    );
    assert_eq!(
        passes + finding.occurrences + summary.outcomes.get(&Kind::Unsupported).unwrap_or(&0),
        10
    );
    let meta: FindingMeta = serde_json::from_str(
        &std::fs::read_to_string(out.join(&finding.dir).join("finding.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(meta.compiler, format!("external (serve protocol): {cmd}"));
    (
        summary.clone(),
        out.join(&finding.dir).to_string_lossy().into_owned(),
    )
}

/// `exec`: the shell gives way to Python, so a signal that kills the server is seen as one
/// (the shell would report it as exit status 128 + N).
fn misbehaving_cmd(mode: &str) -> String {
    format!("exec python3 '{FIXTURES}/serve/misbehaving_server.py' {mode} '{BIN}'")
}

#[test]
fn a_server_that_crashes_is_a_crash_of_the_case_in_flight_and_reproduces() {
    let tmp = tempfile::tempdir().unwrap();
    let (summary, dir) = misbehaving(tmp.path(), "crash");
    assert_eq!(
        summary.findings[0].signature,
        "crash: compile: the compile server died (killed by SIGSEGV (signal N)): \
         misbehaving_server: about to crash on an MVM"
    );
    let cmd = misbehaving_cmd("crash");
    let o = pimdiff(&[
        "repro",
        &dir,
        "--compiler-protocol",
        "serve",
        "--compiler-cmd",
        &cmd,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains(&format!("compiler: external (serve protocol): {cmd}\n")),
        "{out}"
    );
    assert!(!out.contains("different compiler"), "{out}");
    assert!(
        out.contains(
            "outcome: crash in the compile stage: the compile server died (killed by SIGSEGV \
             (signal 11)): misbehaving_server: about to crash on an MVM case\n"
        ),
        "{out}"
    );
}

#[test]
fn a_server_that_exits_without_answering_is_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let (summary, _) = misbehaving(tmp.path(), "exit");
    assert_eq!(
        summary.findings[0].signature,
        "crash: compile: the compile server died (exit status N)"
    );
}

#[test]
fn a_server_past_its_deadline_is_killed_and_is_a_timeout_of_the_compile_stage() {
    let tmp = tempfile::tempdir().unwrap();
    let (summary, _) = misbehaving(tmp.path(), "hang");
    assert_eq!(summary.findings[0].signature, "timeout: compile");
}

#[test]
fn a_garbage_answer_is_a_protocol_error_showing_the_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (summary, _) = misbehaving(tmp.path(), "garbage");
    assert_eq!(
        summary.findings[0].signature,
        "compile-error: the compile server broke the protocol: the answer is not a JSON answer: \
         expected ident at line N col"
    );
}

#[test]
fn an_answer_longer_than_the_limit_is_a_protocol_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (summary, _) = misbehaving(tmp.path(), "long");
    assert_eq!(
        summary.findings[0].signature,
        "compile-error: the compile server broke the protocol: an answer line longer than N \
         bytes; the line: \"xxxxxxxxxxxxxx"
    );
}

#[test]
fn placeholders_are_refused_in_serve_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let o = pimdiff(&[
        "hunt",
        "--cases",
        "1",
        "--out",
        path(&tmp.path().join("h")),
        "--compiler-protocol",
        "serve",
        "--compiler-cmd",
        "mycc {case} {out}",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains(
            "--compiler-protocol serve takes a command without {case} or {out} (the directories \
             are sent in each request): `mycc {case} {out}`"
        ),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn the_reference_server_answers_each_request_and_refuses_a_malformed_line() {
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("case");
    let made = pimdiff(&["new-case", "--op", "mvm", path(&case)]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made.stderr));
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let requests = format!(
        "{{\"protocol\":1,\"id\":1,\"case\":\"{}\",\"out\":\"{}\"}}\n\
         {{\"protocol\":1,\"id\":2,\"case\":\"{}/missing\",\"out\":\"{}\"}}\n\
         not a request\n",
        path(&case),
        path(&out),
        path(tmp.path()),
        path(&out)
    );
    let o = run_with_input(&["compile", "--serve"], &requests);
    assert_eq!(o.status.code(), Some(2));
    let lines: Vec<String> = text(&o.stdout).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0], r#"{"id":1,"status":"compiled"}"#);
    assert!(
        lines[1].starts_with(r#"{"id":2,"message":"reading case "#),
        "{}",
        lines[1]
    );
    assert!(lines[1].ends_with(r#""status":"error"}"#), "{}", lines[1]);
    assert!(out.join("io.json").is_file());
    assert_eq!(
        text(&o.stderr),
        "pimdiff compile --serve: not a request (expected ident at line 1 column 2): \"not a request\\n\"\n"
    );
    let o = run_with_input(&["compile", "--serve"], "");
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(text(&o.stdout), "");
    let o = run_with_input(
        &["compile", "--serve"],
        "{\"protocol\":2,\"id\":1,\"case\":\"c\",\"out\":\"o\"}\n",
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        "pimdiff compile --serve: protocol version 2 requested, this server speaks 1\n"
    );
}

fn run_with_input(args: &[&str], input: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn pimdiff");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}
