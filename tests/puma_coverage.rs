//! The PUMA compiler's coverage (`scripts/build-puma.sh --coverage`, `hunt --target puma
//! --coverage`): a tree that is not a coverage build is refused by name; a coverage hunt
//! reports consistent line and branch totals over the compiler's own sources and per-case
//! edges, and compiles what the plain tree compiles. The tests that need a real build skip
//! with a message when it is not named: `PUMA_COVERAGE_DIR` (the coverage tree) and, for the
//! comparison, `PUMA_DIR` (the plain tree).

use std::path::{Path, PathBuf};
use std::time::Duration;

use pimdiff::coverage::{CoverageError, CoverageRun, Totals};
use pimdiff::engine::Edges;
use pimdiff::engine::{HuntConfig, HuntSummary, Target};
use pimdiff::summary::render_summary;
use pimdiff::targets::puma::case::CaseContext;
use pimdiff::targets::puma::check::CheckOptions;
use pimdiff::targets::puma::compile::{PumaSetup, VENDORED};
use pimdiff::targets::puma::{PumaNetConfig, PumaTarget};

#[path = "support/hunts.rs"]
mod hunts;

fn tree(var: &str, how: &str) -> Option<PathBuf> {
    let dir = std::env::var_os(var).filter(|d| Path::new(d).join("bin/puma-driver").is_file());
    if dir.is_none() {
        eprintln!("skipped: {var} is not set to a PUMA compiler tree ({how} builds one)");
    }
    dir.map(PathBuf::from)
}

fn config(out: &Path, cases: u64) -> HuntConfig {
    hunts::step_capped(out, 7, cases)
}

/// The target of `dir` alone (no sanitizer tree: its compiles are not counted, and the
/// comparison is of one tree against another).
fn target(dir: &Path) -> PumaTarget {
    let mut setup = PumaSetup::locate(Some(dir), None, Duration::from_secs(60), 4 << 30).unwrap();
    setup.sanitize = None;
    PumaTarget {
        cases: CaseContext {
            setup,
            net: PumaNetConfig::default(),
            check: CheckOptions::default(),
            sanitize_rate: 0.0,
            inject: None,
        },
    }
}

#[test]
fn a_tree_without_coverage_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let err = CoverageRun::for_tree(tmp.path(), Path::new("out"), &VENDORED).unwrap_err();
    assert!(matches!(err, CoverageError::NotABuild { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "{}: ",
            tmp.path().join("coverage-source.txt").display()
        )),
        "{text}"
    );
    assert!(
        text.ends_with(
            "(not a --coverage build of scripts/build-pimcomp.sh or scripts/build-puma.sh?)"
        ),
        "{text}"
    );
}

#[test]
fn a_coverage_tree_names_its_sources_and_puts_counts_under_the_hunt() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("coverage-source.txt"), "/trees/coverage\n").unwrap();
    let run = CoverageRun::for_tree(tmp.path(), Path::new("/hunt"), &VENDORED).unwrap();
    assert_eq!(run.layout.source_root, Path::new("/trees/coverage"));
    assert_eq!(run.layout.prefix, Path::new("/hunt/coverage-data"));
    assert!(run.layout.excluded.is_empty());
    assert_eq!(
        run.environment(),
        [("GCOV_PREFIX".to_string(), "/hunt/coverage-data".to_string())]
    );
}

/// `summary.json` of a 20-case coverage hunt (`--seed 7 --cases 20 --jobs 2`, tree paths
/// replaced): its `coverage` object has PIMCOMP-NN's schema, and `summary.md` its section.
#[test]
fn a_puma_coverage_summary_reads_back_and_renders_its_section() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/puma-coverage/summary.json");
    let text = std::fs::read_to_string(path).unwrap();
    let s: HuntSummary = serde_json::from_str(&text).unwrap();
    let c = s.coverage.as_ref().unwrap();
    assert_eq!(
        c.totals,
        Totals {
            lines_total: 2819,
            lines_hit: 1941,
            branches_total: 4116,
            branches_hit: 2249
        }
    );
    assert_eq!(c.edges_hit, Some(6531));
    assert_eq!(c.files.len(), 20);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_value(c).unwrap(), value["coverage"]);
    let md = render_summary(&s);
    let section = &md[md.find("## Coverage").unwrap()..];
    insta::assert_snapshot!(section);
}

#[test]
fn a_coverage_hunt_reports_consistent_totals_and_edges() {
    let Some(dir) = tree("PUMA_COVERAGE_DIR", "scripts/build-puma.sh --coverage") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path(), 6);
    let mut t = target(&dir);
    t.cases.setup.coverage = Some(CoverageRun::for_tree(&dir, tmp.path(), &VENDORED).unwrap());
    // One case's edges, as guided generation would read them.
    let case = t.case(3);
    let run = t.run(&case, &Default::default());
    let edges: Edges = t.edges(&run).expect("a coverage tree records edges");
    assert!(edges.len() > 500, "{} edges", edges.len());
    let recorded = &run.runs[0].compile.as_ref().unwrap().pinning;
    let pimdiff::process::Environment::Exactly { vars } = &recorded.environment else {
        panic!("a PUMA compile's environment is exact");
    };
    assert!(!vars.contains_key("GCOV_PREFIX"), "{vars:?}");
    assert!(!vars.contains_key("PIMDIFF_EDGE_MAP"), "{vars:?}");

    let s = hunts::run(&cfg, t);
    let c = s.coverage.expect("summary.json has a coverage object");
    hunts::assert_consistent_coverage(&c, &edges, tmp.path());
    // Only the compiler's own sources: not the driver, not the shim, not system headers.
    for f in &c.files {
        assert!(
            f.file.starts_with("src/") || f.file.starts_with("include/"),
            "{}",
            f.file
        );
    }
    for own in ["src/codegen.cpp", "src/model.cpp", "src/placer.cpp"] {
        assert!(c.files.iter().any(|f| f.file == own), "{own}");
    }
    let json = std::fs::read_to_string(tmp.path().join("summary.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["coverage"]["lines_hit"], c.totals.lines_hit);
    assert_eq!(json["coverage"]["branches_total"], c.totals.branches_total);
}

/// The instrumentation measures the compiler without changing what it compiles: the same
/// cases give the same outcomes and signatures in the coverage tree as in the plain tree.
#[test]
fn the_coverage_tree_compiles_what_the_plain_tree_compiles() {
    let (Some(cov), Some(plain)) = (
        tree("PUMA_COVERAGE_DIR", "scripts/build-puma.sh --coverage"),
        tree("PUMA_DIR", "scripts/build-puma.sh"),
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut covered = target(&cov);
    covered.cases.setup.coverage =
        Some(CoverageRun::for_tree(&cov, &tmp.path().join("cov"), &VENDORED).unwrap());
    let a = hunts::run(&config(&tmp.path().join("cov"), 12), covered);
    let b = hunts::run(&config(&tmp.path().join("plain"), 12), target(&plain));
    assert_eq!(a.outcomes, b.outcomes);
    let sigs = |s: &HuntSummary| {
        let mut v: Vec<String> = s.findings.iter().map(|f| f.signature.clone()).collect();
        v.sort();
        v
    };
    assert_eq!(sigs(&a), sigs(&b));
    assert!(a.coverage.is_some() && b.coverage.is_none());
}
