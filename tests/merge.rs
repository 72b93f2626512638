//! `pimdiff merge` and `pimdiff::finding::merge`: shards of a hunt with an injected bug merge
//! into one finding per root cause with counts that add up, in any order and through earlier
//! merges; a PIMCOMP-NN hunt's outputs merge the same way; bad inputs are refused naming the
//! file or the inputs.

#[path = "support/cli.rs"]
mod cli;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pimdiff::engine::{run_hunt, HuntConfig, HuntControl, Limit, MinimizeConfig, Shard};
use pimdiff::finding::{Kind, Verdict};
use pimdiff::summary::merge::{merge, MergeError};
use pimdiff::summary::{render_summary, HuntSummary};
use pimdiff::targets::pimcomp_nn::case::CaseContext;
use pimdiff::targets::pimcomp_nn::compile::{CompilerSetup, Pipeline};
use pimdiff::targets::pimcomp_nn::network::NetConfig;
use pimdiff::targets::pimcomp_nn::PimcompTarget;

use cli::{pimdiff, summary};

/// A hunt of the in-repo compiler with `missing-bias` injected, through the binary.
fn bug_hunt(out: &Path, seed: &str, shard: &str) -> HuntSummary {
    let o = pimdiff(&[
        "hunt",
        "--seed",
        seed,
        "--shard",
        shard,
        "--cases",
        "24",
        "--jobs",
        "2",
        "--inject-bug",
        "missing-bias",
        // Triage ends by its run count, long before this: the same findings on any machine.
        "--minimize-time",
        "60s",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    summary(out)
}

/// Occurrences per signature.
fn by_signature(summaries: &[&HuntSummary]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for s in summaries {
        for f in &s.findings {
            *m.entry(f.signature.clone()).or_insert(0) += f.occurrences;
        }
    }
    m
}

#[test]
fn shards_merge_into_one_finding_per_cause_with_counts_that_add_up() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("shard0"), tmp.path().join("shard1"));
    let s0 = bug_hunt(&a, "5", "0/2");
    let s1 = bug_hunt(&b, "5", "1/2");
    let out = tmp.path().join("merged");
    let o = pimdiff(&[
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let m = summary(&out);
    assert_eq!(m.verdict(), Verdict::Findings);

    // One finding per signature, with the occurrences of both shards.
    let want = by_signature(&[&s0, &s1]);
    assert_eq!(by_signature(&[&m]), want);
    assert_eq!(m.findings.len(), want.len());
    // Counts add up.
    assert_eq!(m.cases_run, s0.cases_run + s1.cases_run);
    assert_eq!(m.cases_run, 24);
    for kind in Kind::ALL {
        let n = |s: &HuntSummary| s.outcomes.get(kind).copied().unwrap_or(0);
        assert_eq!(n(&m), n(&s0) + n(&s1), "{kind}");
    }
    assert_eq!(
        m.declines.declined,
        s0.declines.declined + s1.declines.declined
    );
    // The two shards of one seed are the whole hunt of --cases 24.
    assert_eq!(
        (m.seed, m.shard, m.cases_requested),
        (5, Shard::ALL, Some(24))
    );
    let shards: Vec<String> = m.merged_from.iter().map(|h| h.shard.to_string()).collect();
    assert_eq!(shards, ["0/2", "1/2"]);
    assert_eq!(
        m.failures[0],
        format!("{} finding(s), saved under findings/", want.len())
    );

    for (n, f) in m.findings.iter().enumerate() {
        // Renumbered, complete, and each copy recorded.
        assert!(
            f.dir.starts_with(&format!("findings/{:03}-", n + 1)),
            "{}",
            f.dir
        );
        let dir = out.join(&f.dir);
        for file in ["finding.json", "case.json", "report.md"] {
            assert!(dir.join(file).is_file(), "{file} in {}", dir.display());
        }
        let copies: u64 = f.found_in.iter().map(|p| p.occurrences).sum();
        assert_eq!(copies, f.occurrences);
        for p in &f.found_in {
            let input = Path::new(&p.input);
            assert!(input == a || input == b, "{}", p.input);
            assert!(input.join(&p.dir).join("finding.json").is_file());
        }
    }
    // The merged directory alone reproduces a finding.
    let first = out.join(&m.findings[0].dir);
    assert_eq!(
        pimdiff(&["repro", first.to_str().unwrap()]).status.code(),
        Some(1)
    );
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.starts_with("# pimdiff merge --target cases: 2 hunt output(s)\n"),
        "{md}"
    );

    // The order of the inputs does not matter, and a merge merges again.
    let swapped = merge(&[b.clone(), a.clone()], &tmp.path().join("swapped")).unwrap();
    assert_eq!(swapped.summary.findings, m.findings);
    let c = tmp.path().join("night2");
    let s2 = bug_hunt(&c, "6", "0/1");
    let three = merge(
        &[a.clone(), b.clone(), c.clone()],
        &tmp.path().join("three"),
    )
    .unwrap();
    let nested = merge(&[out.clone(), c.clone()], &tmp.path().join("nested")).unwrap();
    assert_eq!(nested.summary.findings, three.summary.findings);
    assert_eq!(nested.summary.merged_from, three.summary.merged_from);
    assert_eq!(
        by_signature(&[&three.summary]),
        by_signature(&[&s0, &s1, &s2])
    );
    assert_eq!(three.summary.cases_requested, Some(48));
}

fn fake_hunt(out: &Path, seed: u64) -> HuntSummary {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pimcomp-fake/PIMCOMP-NN");
    let cfg = HuntConfig {
        seed,
        limit: Limit::Cases(8),
        jobs: 2,
        shard: Shard::ALL,
        minimize: MinimizeConfig {
            time_budget: Duration::from_secs(3600),
            max_steps: 60,
        },
        max_unsupported: None,
        out: out.to_path_buf(),
    };
    let target = PimcompTarget {
        cases: CaseContext {
            net: NetConfig::default(),
            setup: CompilerSetup::locate(Some(&bin), Duration::from_secs(20), 1 << 32).unwrap(),
            pipelines: vec![Pipeline::Element],
        },
    };
    run_hunt(&cfg, Arc::new(target), &HuntControl::default()).unwrap()
}

#[test]
fn pimcomp_nn_hunts_merge_too() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let (sa, sb) = (fake_hunt(&a, 3), fake_hunt(&b, 4));
    let merged = merge(&[a, b], &tmp.path().join("m")).unwrap().summary;
    assert_eq!(merged.target, "pimcomp-nn");
    assert_eq!(by_signature(&[&merged]), by_signature(&[&sa, &sb]));
    assert_eq!(merged.cases_run, 16);
    // The fake compiler crashes on every network with an element-wise add: one crash.
    let crashes: Vec<&str> = merged
        .findings
        .iter()
        .filter(|f| f.outcome == Kind::Crash)
        .map(|f| f.signature.as_str())
        .collect();
    assert_eq!(crashes, ["crash: element/SIGSEGV/no-frames"]);
    assert_eq!(merged.details, sa.details);
    assert!(tmp.path().join("m/summary.md").is_file());
}

/// A hand-made hunt output: `summary.json` from `text`, nothing else.
fn fake_output(dir: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("findings")).unwrap();
    std::fs::write(dir.join("summary.json"), text).unwrap();
    dir.to_path_buf()
}

#[test]
fn bad_inputs_are_refused_naming_the_file_or_the_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let good = t.join("good");
    bug_hunt(&good, "7", "0/1");
    let text = std::fs::read_to_string(good.join("summary.json")).unwrap();
    let out = |name: &str| t.join(name);

    let err = merge(&[t.join("absent")], &out("m1")).unwrap_err();
    assert!(
        matches!(&err, MergeError::Read { path, .. } if *path == t.join("absent/summary.json"))
    );
    assert!(err.to_string().starts_with(&format!(
        "cannot read {}: ",
        t.join("absent/summary.json").display()
    )));

    let bad = fake_output(&t.join("bad"), "{\"seed\": ");
    let err = merge(&[bad], &out("m2")).unwrap_err();
    assert!(
        matches!(&err, MergeError::Malformed { path, .. } if *path == t.join("bad/summary.json")),
        "{err}"
    );

    let mut puma: HuntSummary = serde_json::from_str(&text).unwrap();
    puma.target = "puma".into();
    puma.findings.clear();
    let mixed = fake_output(&t.join("mixed"), &serde_json::to_string(&puma).unwrap());
    let err = merge(&[good.clone(), mixed.clone()], &out("m3")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot merge hunts of different targets: {} is --target cases, {} is --target puma",
            good.display(),
            mixed.display()
        )
    );

    let err = merge(&[good.clone(), good.clone()], &out("m4")).unwrap_err();
    assert!(matches!(err, MergeError::Overlap { seed: 7, .. }), "{err}");

    let escaping = fake_output(
        &t.join("escaping"),
        &text.replacen("\"dir\": \"findings/", "\"dir\": \"../findings/", 1),
    );
    let err = merge(&[escaping], &out("m5")).unwrap_err();
    assert!(err.to_string().contains("is not findings/<name>"), "{err}");

    // A listed finding without its finding.json: the path is named.
    let gutted = t.join("gutted");
    fake_output(&gutted, &text);
    let s: HuntSummary = serde_json::from_str(&text).unwrap();
    let err = merge(std::slice::from_ref(&gutted), &out("m6")).unwrap_err();
    let missing = gutted.join(&s.findings[0].dir).join("finding.json");
    assert!(
        matches!(&err, MergeError::Read { path, .. } if *path == missing),
        "{err}"
    );

    // Nothing was written for a refused merge; a merge does not overwrite findings.
    assert!(!out("m3").exists());
    let err = merge(std::slice::from_ref(&good), &good).unwrap_err();
    assert!(matches!(err, MergeError::OutNotEmpty { .. }), "{err}");
}

#[test]
fn a_merged_summary_renders_its_hunts_and_where_each_finding_was_found() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    bug_hunt(&a, "5", "0/2");
    bug_hunt(&b, "5", "1/2");
    let mut m = merge(&[a, b], &tmp.path().join("m")).unwrap().summary;
    // Times and paths vary from run to run.
    m.cases_per_second = 0.0;
    m.sweep_time_s = 0.0;
    m.wall_time_s = 0.0;
    let md = render_summary(&m).replace(&tmp.path().display().to_string(), "TMP");
    insta::assert_snapshot!(md);
}
