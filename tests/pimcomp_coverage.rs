//! PIMCOMP-NN's coverage and compile paths: a `--coverage` hunt reports consistent line and
//! branch totals and per-case edges; huge and small pages give the same hunt. The tests that
//! need a real build skip with a message when it is not named: `PIMCOMP_NN_BIN` (from
//! `scripts/build-pimcomp.sh`) and `PIMCOMP_NN_COVERAGE_BIN` (from `--coverage`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use pimdiff::coverage::{CoverageError, CoverageRun};
use pimdiff::engine::Edges;
use pimdiff::engine::{HuntConfig, HuntSummary, Target};
use pimdiff::targets::pimcomp_nn::case::CaseContext;
use pimdiff::targets::pimcomp_nn::compile::{CompilerSetup, Pipeline, ZeroedMemory};
use pimdiff::targets::pimcomp_nn::network::NetConfig;
use pimdiff::targets::pimcomp_nn::{PimcompTarget, VENDORED};

#[path = "support/hunts.rs"]
mod hunts;

fn built(var: &str, how: &str) -> Option<PathBuf> {
    let bin = std::env::var_os(var).filter(|b| Path::new(b).is_file());
    if bin.is_none() {
        eprintln!("skipped: {var} is not set to a PIMCOMP-NN binary ({how} builds one)");
    }
    bin.map(PathBuf::from)
}

fn config(out: &Path, cases: u64) -> HuntConfig {
    hunts::step_capped(out, 11, cases)
}

fn target(bin: &Path) -> PimcompTarget {
    PimcompTarget {
        cases: CaseContext {
            net: NetConfig::default(),
            setup: CompilerSetup::locate(Some(bin), Duration::from_secs(60), 8 << 30).unwrap(),
            pipelines: vec![Pipeline::Batch, Pipeline::Element],
        },
    }
}

#[test]
fn a_binary_without_coverage_is_refused_by_name() {
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pimcomp-fake/PIMCOMP-NN");
    let err = CoverageRun::for_build(&fake, Path::new("out"), &VENDORED).unwrap_err();
    assert!(matches!(err, CoverageError::NotABuild { .. }), "{err}");
    assert!(err.to_string().contains("coverage-source.txt"), "{err}");
}

#[test]
fn a_coverage_hunt_reports_consistent_totals_and_edges() {
    let Some(bin) = built(
        "PIMCOMP_NN_COVERAGE_BIN",
        "scripts/build-pimcomp.sh --coverage",
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path(), 2);
    let mut t = target(&bin);
    t.cases.setup.coverage = Some(CoverageRun::for_build(&bin, tmp.path(), &VENDORED).unwrap());
    // One case's edges, as guided generation reads them.
    let case = t.case(5);
    let run = t.run(&case, &Default::default());
    let edges: Edges = t.edges(&run).expect("a coverage build records edges");
    assert!(edges.len() > 1000, "{} edges", edges.len());

    let s = hunts::run(&cfg, t);
    let c = s.coverage.expect("summary.json has a coverage object");
    hunts::assert_consistent_coverage(&c, &edges, tmp.path());
    assert!(c.files.iter().all(|f| !f.file.starts_with("backend/zlib")));
    assert!(c.files.iter().any(|f| f.file == "main.cpp"));
}

/// Lazy zeroing and huge pages change how fast the compiler gets its zeroed memory, not what
/// it compiles: the three modes give the same hunt.
#[test]
fn every_way_of_zeroing_gives_the_same_hunt() {
    let Some(bin) = built("PIMCOMP_NN_BIN", "scripts/build-pimcomp.sh") else {
        return;
    };
    let run = |memory: ZeroedMemory| {
        let dir = tempfile::tempdir().unwrap();
        let mut t = target(&bin);
        t.cases.setup.zeroed_memory = memory;
        hunts::run(&config(dir.path(), 6), t)
    };
    let sigs = |s: &HuntSummary| -> Vec<String> {
        s.findings.iter().map(|f| f.signature.clone()).collect()
    };
    let small = run(ZeroedMemory::Small);
    for memory in [ZeroedMemory::Lazy, ZeroedMemory::Huge] {
        let other = run(memory);
        assert_eq!(small.outcomes, other.outcomes, "{memory:?}");
        assert_eq!(sigs(&small), sigs(&other), "{memory:?}");
    }
}
