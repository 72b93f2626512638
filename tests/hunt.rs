//! Whole hunts through the library: reproducibility, shards, stopping, the output directory.

use std::fs;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use pimdiff::check::RunConfig;
use pimdiff::compilers::injected::BugClass;
use pimdiff::compilers::CompilerUnderTest;
use pimdiff::engine::MinimizeConfig;
use pimdiff::engine::{HuntConfig, HuntControl, HuntError, HuntSummary, Limit, Shard};
use pimdiff::finding::Kind;
use pimdiff::targets::tensor::generate::GenConfig;
use pimdiff::targets::tensor::TensorTarget;

/// A hunt of the tensor target: the engine's configuration and what the target runs.
struct Hunt {
    cfg: HuntConfig,
    run: RunConfig,
}

/// The engine's hunt of the tensor target `h` describes.
fn run_hunt(h: &Hunt, control: &HuntControl) -> Result<HuntSummary, HuntError> {
    let target = TensorTarget::new(&GenConfig::default(), h.run.clone());
    pimdiff::engine::run_hunt(&h.cfg, Arc::new(target), control)
}

fn config(out: &Path, cases: u64, jobs: usize, shard: Shard) -> Hunt {
    Hunt {
        cfg: HuntConfig {
            seed: 11,
            limit: Limit::Cases(cases),
            jobs,
            shard,
            minimize: MinimizeConfig {
                time_budget: Duration::from_secs(30),
                ..MinimizeConfig::default()
            },
            max_unsupported: None,
            out: out.to_path_buf(),
        },
        run: RunConfig::with_compiler(CompilerUnderTest::Mutated(
            BugClass::MissingBias,
            pimdiff_compiler::Lowering::Channel,
        )),
    }
}

/// The parts of a summary that must not depend on timing.
fn stable(s: &HuntSummary) -> String {
    let mut s = s.clone();
    s.cases_per_second = 0.0;
    s.sweep_time_s = 0.0;
    s.wall_time_s = 0.0;
    s.jobs = 0;
    serde_json::to_string_pretty(&s).unwrap()
}

fn read_summary(out: &Path) -> HuntSummary {
    serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// Every file under `dir`, relative, with its bytes.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.push((rel, fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_same_seed_gives_the_same_findings_whatever_the_thread_count() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |jobs: usize| {
        let out = tmp.path().join(format!("jobs{jobs}"));
        let s = run_hunt(
            &config(&out, 300, jobs, Shard::ALL),
            &HuntControl::default(),
        )
        .unwrap();
        (out, s)
    };
    let (a, one) = run(1);
    assert!(!one.findings.is_empty());
    assert_eq!(one.cases_run, 300);
    assert_eq!(stable(&read_summary(&a)), stable(&one));
    let files = tree(&a.join("findings"));
    // Each report is titled with the signature its finding is filed under (finding.json's,
    // the folder's name), whether or not that is the case's own outcome signature.
    for f in &one.findings {
        let dir = a.join(&f.dir);
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("finding.json")).unwrap()).unwrap();
        let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
        let title = report.lines().next().unwrap();
        assert_eq!(
            title,
            format!("# pimdiff: {}", meta["signature"].as_str().unwrap())
        );
    }
    for jobs in [2, 4] {
        let (b, many) = run(jobs);
        assert_eq!(stable(&one), stable(&many), "{jobs} jobs");
        // The same directories with byte-identical files (cases, bundles, reports, metadata).
        let other = tree(&b.join("findings"));
        let names = |t: &[(String, Vec<u8>)]| t.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&files), names(&other), "{jobs} jobs");
        for ((name, x), (_, y)) in files.iter().zip(&other) {
            assert!(x == y, "{name} differs between 1 and {jobs} jobs");
        }
    }
    // Findings are numbered in order of their first case, and the directories saved during
    // the sweep (k<index>-...) were replaced.
    let indices: Vec<u64> = one.findings.iter().map(|f| f.case_index).collect();
    let mut sorted = indices.clone();
    sorted.sort();
    assert_eq!(indices, sorted);
    assert!(one.findings[0].dir.starts_with("findings/001-mismatch-"));
    let dirs: Vec<String> = fs::read_dir(a.join("findings"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(dirs.len(), one.findings.len(), "{dirs:?}");
    assert!(
        dirs.iter()
            .all(|d| !d.starts_with('k') && !d.starts_with('.')),
        "{dirs:?}"
    );
    for f in &one.findings {
        assert!(
            f.triaged && f.occurrences >= 1 && !f.buckets.is_empty(),
            "{f:?}"
        );
    }
    // Every failing case is counted by exactly one finding.
    let total: u64 = one.findings.iter().map(|f| f.occurrences).sum();
    let failing: u64 = one
        .outcomes
        .iter()
        .filter(|(kind, _)| !["pass", "unsupported"].contains(&kind.as_str()))
        .map(|(_, n)| *n)
        .sum();
    assert_eq!(total, failing, "{:?}", one.outcomes);
    let md = fs::read_to_string(a.join("summary.md")).unwrap();
    assert!(md.contains("## Findings: "), "{md}");
}

#[test]
fn shards_split_the_cases_of_an_unsharded_hunt() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = run_hunt(
        &config(&tmp.path().join("w"), 200, 2, Shard::ALL),
        &HuntControl::default(),
    )
    .unwrap();
    let s0 = run_hunt(
        &config(&tmp.path().join("s0"), 200, 2, Shard::new(0, 2).unwrap()),
        &HuntControl::default(),
    )
    .unwrap();
    let s1 = run_hunt(
        &config(&tmp.path().join("s1"), 200, 2, Shard::new(1, 2).unwrap()),
        &HuntControl::default(),
    )
    .unwrap();
    assert_eq!((s0.cases_run, s1.cases_run), (100, 100));
    for (kind, n) in &whole.outcomes {
        assert_eq!(
            s0.outcomes.get(kind).unwrap_or(&0) + s1.outcomes.get(kind).unwrap_or(&0),
            *n,
            "{kind}"
        );
    }
    assert!(s0.findings.iter().all(|f| f.case_index % 2 == 0));
    assert!(s1.findings.iter().all(|f| f.case_index % 2 == 1));
    // Each signature's first case overall is the earlier of the shards' firsts.
    for f in &whole.findings {
        let firsts: Vec<u64> = s0
            .findings
            .iter()
            .chain(&s1.findings)
            .filter(|g| g.signature == f.signature)
            .map(|g| g.case_index)
            .collect();
        assert_eq!(firsts.iter().min(), Some(&f.case_index), "{}", f.signature);
        let occurrences: u64 = s0
            .findings
            .iter()
            .chain(&s1.findings)
            .filter(|g| g.signature == f.signature)
            .map(|g| g.occurrences)
            .sum();
        assert_eq!(occurrences, f.occurrences);
    }
}

#[test]
fn a_stopped_hunt_still_writes_its_summary_and_an_aborted_minimization_saves_unminimized() {
    let tmp = tempfile::tempdir().unwrap();
    let control = HuntControl::default();
    control.stop.store(true, Ordering::SeqCst);
    let s = run_hunt(
        &config(&tmp.path().join("stopped"), 1000, 2, Shard::ALL),
        &control,
    )
    .unwrap();
    assert!(s.interrupted);
    assert_eq!(s.cases_run, 0);
    assert!(tmp.path().join("stopped/summary.md").is_file());
    assert_eq!(read_summary(&tmp.path().join("stopped")), s);

    let control = HuntControl::default();
    control.abort_minimization.store(true, Ordering::SeqCst);
    let s = run_hunt(
        &config(&tmp.path().join("unminimized"), 100, 2, Shard::ALL),
        &control,
    )
    .unwrap();
    assert!(!s.findings.is_empty());
    for f in &s.findings {
        assert_eq!((f.minimization.tried, f.minimization.cut_short), (0, true));
        assert_eq!(f.minimization.original_size, f.minimization.minimized_size);
    }
}

#[test]
fn an_output_directory_with_earlier_findings_is_refused_and_leftovers_are_cleaned() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    fs::create_dir_all(out.join("findings/.pimdiff-tmp-001-x-1-0")).unwrap();
    let s = run_hunt(&config(&out, 50, 1, Shard::ALL), &HuntControl::default()).unwrap();
    assert!(!s.findings.is_empty());
    let hidden = fs::read_dir(out.join("findings"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.')
        })
        .count();
    assert_eq!(hidden, 0);
    match run_hunt(&config(&out, 50, 1, Shard::ALL), &HuntControl::default()) {
        Err(HuntError::OutNotEmpty { path }) => assert_eq!(path, out.join("findings")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_correct_compiler_passes_a_short_hunt() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(&tmp.path().join("clean"), 300, 2, Shard::ALL);
    cfg.run = RunConfig::default();
    let s = run_hunt(&cfg, &HuntControl::default()).unwrap();
    assert_eq!(s.findings, vec![]);
    assert_eq!(s.outcomes.values().sum::<u64>(), 300);
    assert_eq!(
        s.outcomes
            .keys()
            .filter(|k| !matches!(k, Kind::Pass | Kind::Unsupported))
            .count(),
        0,
        "{:?}",
        s.outcomes
    );
}
