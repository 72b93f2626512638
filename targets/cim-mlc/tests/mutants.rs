//! Detection of silent miscompilations injected into CIM-MLC's code generator: each mutation
//! patch in `tests/fixtures/cim-mlc-mutants/` (a tree of `scripts/build-cim-mlc.sh --mutation
//! PATCH`), and a few networks a 3-minute hunt of that mutant caught
//! (`tests/fixtures/mutants/MUTANT/*.json`, the `case-description.json` of its findings,
//! minimized). On the mutant's tree each network must show a fault or a mismatch that it does not
//! show on the plain tree (`CIM_MLC_DIR`), whatever its signature; on the plain tree most of them
//! check exactly at every granularity (a crossbar-level Gemm never does: CIM-MLC names one crossbar
//! too many there). When one is not caught, the check or the generator lost what caught the
//! mutation. `docs/cim-mlc-findings.md` ("Silent miscompilations injected into the code
//! generator") has the hunts these come from.
//!
//! Without `CIM_MLC_DIR` (or when it names a tree with patches) the test says so and passes. It
//! builds each mutant's tree (cached by the script: seconds the first time) and serves each tree
//! once.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pimdiff_engine::finding::Kind;
use pimdiff_target_cim_mlc::case::{CaseContext, CimCase};
use pimdiff_target_cim_mlc::driver::Protocol;
use pimdiff_target_cim_mlc::generate::NetConfig;
use pimdiff_target_cim_mlc::tree::Tree;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The mutants: the patches under `tests/fixtures/cim-mlc-mutants/`, in name order.
fn mutants() -> Vec<String> {
    let dir = repository().join("tests/fixtures/cim-mlc-mutants");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".patch").map(str::to_string))
        .collect();
    names.sort();
    names
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mutants")
}

/// The networks that catch `mutant`, by file name.
fn cases(mutant: &str) -> Vec<(String, CimCase)> {
    let dir = fixtures().join(mutant);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let case: CimCase =
                serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), case)
        })
        .collect()
}

#[test]
fn every_mutant_has_networks_that_catch_it() {
    let mutants = mutants();
    assert!(mutants.len() >= 4, "{mutants:?}");
    let mut dirs: Vec<String> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    assert_eq!(dirs, mutants, "a mutant without networks, or the reverse");
    for mutant in &mutants {
        let cases = cases(mutant);
        assert!(!cases.is_empty(), "{mutant}: no network");
        for (name, case) in cases {
            assert!(case.files().is_ok(), "{mutant}/{name}");
        }
    }
}

/// `scripts/build-cim-mlc.sh ARGS`' tree.
fn build(args: &[&str]) -> Tree {
    let out = Command::new(repository().join("scripts/build-cim-mlc.sh"))
        .args(args)
        .current_dir(repository())
        .output()
        .expect("scripts/build-cim-mlc.sh runs");
    assert!(
        out.status.success(),
        "scripts/build-cim-mlc.sh {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let dir = stdout.lines().last().expect("the script prints the tree");
    Tree::locate(Some(Path::new(dir.trim()))).unwrap()
}

/// What each of `networks` comes to on `tree` (one served context): its kind and signatures.
fn run_all(tree: Tree, networks: &[(String, String, CimCase)]) -> Vec<(Kind, Vec<String>)> {
    let ctx = CaseContext::new(
        NetConfig::default(),
        tree,
        Duration::from_secs(60),
        Protocol::Serve,
    );
    let runs = networks
        .iter()
        .map(|(_, _, case)| {
            let run = ctx.run_case(case);
            let signatures = run.signatures().iter().map(|s| s.to_string()).collect();
            (run.kind(), signatures)
        })
        .collect();
    ctx.driver.shutdown();
    runs
}

#[test]
fn each_mutant_shows_what_the_plain_tree_does_not() {
    let plain = match std::env::var_os("CIM_MLC_DIR") {
        Some(d) if !d.is_empty() => Tree::locate(Some(Path::new(&d))).unwrap(),
        _ => {
            eprintln!("skipped: CIM_MLC_DIR names no tree (scripts/build-cim-mlc.sh builds one)");
            return;
        }
    };
    if !plain.patches.is_empty() {
        eprintln!(
            "skipped: CIM_MLC_DIR is a tree with patches ({}), not the plain snapshot",
            plain.patches.join(", ")
        );
        return;
    }
    let all: Vec<(String, String, CimCase)> = mutants()
        .into_iter()
        .flat_map(|m| {
            cases(&m)
                .into_iter()
                .map(move |(name, case)| (m.clone(), name, case))
        })
        .collect();
    // Every tree at once (each is mostly a Python process importing torch and waiting on it).
    let mutants = mutants();
    let (before, after) = std::thread::scope(|scope| {
        let before = scope.spawn(|| run_all(plain, &all));
        let after: Vec<_> = mutants
            .iter()
            .map(|mutant| {
                let all = &all;
                scope.spawn(move || {
                    let patch = format!("tests/fixtures/cim-mlc-mutants/{mutant}.patch");
                    let tree = build(&["--mutation", &patch]);
                    let mine: Vec<usize> =
                        (0..all.len()).filter(|&i| all[i].0 == *mutant).collect();
                    let networks: Vec<(String, String, CimCase)> =
                        mine.iter().map(|&i| all[i].clone()).collect();
                    mine.into_iter()
                        .zip(run_all(tree, &networks))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let before = before.join().expect("the plain tree's runs");
        let after: Vec<(usize, (Kind, Vec<String>))> = after
            .into_iter()
            .flat_map(|h| h.join().expect("a mutant tree's runs"))
            .collect();
        (before, after)
    });
    let mut wrong = Vec::new();
    for (i, (kind, signatures)) in after {
        let (plain_kind, plain_signatures) = &before[i];
        let new: Vec<&String> = signatures
            .iter()
            .filter(|s| !plain_signatures.contains(s))
            .collect();
        let caught = matches!(kind, Kind::Fault | Kind::Mismatch)
            && new
                .iter()
                .any(|s| s.starts_with("fault: ") || s.starts_with("mismatch: "));
        if !caught || !matches!(plain_kind, Kind::Pass | Kind::Fault | Kind::Mismatch) {
            wrong.push(format!(
                "{}/{}: plain tree {plain_kind:?} {plain_signatures:?}, mutant {kind:?} {signatures:?}; \
                 want a fault or mismatch the plain tree does not show",
                all[i].0, all[i].1
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
