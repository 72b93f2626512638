//! `pimdiff compile` follows the external-compiler protocol it documents: exit 0 with a bundle,
//! exit 3 with the reason as the last line of standard error when it declines a case. Driven
//! through `--compiler-cmd`, it must give a hunt exactly the outcomes the in-repo compiler
//! gives, and so find nothing.

#[path = "support/cli.rs"]
mod cli;

use std::collections::BTreeMap;
use std::path::Path;

use pimdiff::engine::HuntSummary;
use pimdiff::finding::Kind;

use cli::{path, pimdiff, text};

const BIN: &str = env!("CARGO_BIN_EXE_pimdiff");

#[test]
fn an_unsupported_case_exits_3_with_the_reason_as_the_last_stderr_line() {
    let tmp = tempfile::tempdir().unwrap();
    let case = tmp.path().join("big");
    let made = pimdiff(&[
        "new-case",
        "--op",
        "conv2d",
        "--in-channels",
        "40",
        "--out-channels",
        "40",
        "--cores",
        "1",
        "--arrays-per-core",
        "2",
        path(&case),
    ]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made.stderr));
    let out = pimdiff(&["compile", path(&case), "-o", path(&tmp.path().join("b"))]);
    assert_eq!(out.status.code(), Some(3));
    // 40 channels in 16-row arrays: 3 input tiles × 3 output tiles × 9 kernel positions.
    assert_eq!(
        text(&out.stderr),
        "pimdiff compile: the case is unsupported:\nnot enough crossbar arrays: 81 needed, 2 \
         available (cores × arrays_per_core)\n"
    );
    assert!(!tmp.path().join("b").join("io.json").exists());
    // --emit declines the same way.
    let out = pimdiff(&["compile", path(&case), "--emit", "mapping"]);
    assert_eq!(out.status.code(), Some(3));
}

fn hunt(out: &Path, compiler_cmd: Option<&str>) -> HuntSummary {
    let mut args = vec![
        "hunt",
        "--seed",
        "20261123",
        "--cases",
        "48",
        "--overcommit-ratio",
        "0.3",
        "--jobs",
        "2",
        "--quiet",
        "--out",
        path(out),
    ];
    if let Some(cmd) = compiler_cmd {
        args.extend(["--compiler-cmd", cmd]);
    }
    let o = pimdiff(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "the hunt found something or failed:\n{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn a_hunt_through_the_protocol_finds_nothing_and_matches_the_in_repo_compiler() {
    let tmp = tempfile::tempdir().unwrap();
    let cmd = format!("'{BIN}' compile {{case}} -o {{out}}");
    let external = hunt(&tmp.path().join("external"), Some(&cmd));
    let in_repo = hunt(&tmp.path().join("in-repo"), None);
    assert!(external.findings.is_empty());
    let count = |s: &HuntSummary, k: Kind| s.outcomes.get(&k).copied().unwrap_or(0);
    assert!(count(&external, Kind::Pass) > 0, "{:?}", external.outcomes);
    assert!(
        count(&external, Kind::Unsupported) > 0,
        "no unsupported case exercised the exit-3 path: {:?}",
        external.outcomes
    );
    let nonzero = |m: &BTreeMap<Kind, u64>| -> BTreeMap<Kind, u64> {
        m.iter()
            .filter(|(_, &v)| v > 0)
            .map(|(&k, &v)| (k, v))
            .collect()
    };
    assert_eq!(nonzero(&external.outcomes), nonzero(&in_repo.outcomes));
}
