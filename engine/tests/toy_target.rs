//! A compiler under test is a plug-in: a toy target in a few dozen lines gets the whole
//! engine — sweep, dedup, minimization, the shared finding writer and summary — and a panic
//! inside it is a `crash` finding, saved and minimized like any other.

use std::path::Path;
use std::sync::Arc;

use pimdiff_engine::finding::{write_new, FindingMeta, Kind, Signature};
use pimdiff_engine::hunt::watchdog::{Stage, StageClock};
use pimdiff_engine::{run_hunt, HuntConfig, HuntControl, Limit, MinimizeConfig, Shard};
use pimdiff_engine::{Observation, Target};

/// "Compiles" a list of numbers: the reference is the list itself; the compiler adds one to
/// every value above `threshold`, and with `panics` it dies on a value above 90.
struct Toy {
    threshold: i64,
    panics: bool,
    /// Generation itself panics on a case seed divisible by this (a generator bug, outside
    /// the per-case catch).
    generation_panics_every: Option<u64>,
}

impl Target for Toy {
    type Case = Vec<i64>;
    type Run = Vec<i64>;
    type Evidence = Vec<i64>;

    fn name(&self) -> &'static str {
        "toy"
    }
    fn compiler(&self) -> String {
        format!("adds one above {}", self.threshold)
    }
    fn generator(&self) -> serde_json::Value {
        serde_json::json!({ "values": 6 })
    }
    fn case(&self, seed: u64) -> Vec<i64> {
        if let Some(every) = self.generation_panics_every {
            assert!(!seed.is_multiple_of(every), "generator bug");
        }
        (0..6).map(|i| ((seed >> (i * 7)) % 100) as i64).collect()
    }
    fn size(&self, case: &Vec<i64>) -> u64 {
        case.iter().map(|v| v.unsigned_abs() + 1).sum()
    }
    fn run(&self, case: &Vec<i64>, _clock: &StageClock) -> Vec<i64> {
        assert!(
            !self.panics || case.iter().all(|&v| v <= 90),
            "value out of range"
        );
        let bump = |v: i64| if v > self.threshold { v + 1 } else { v };
        case.iter().map(|&v| bump(v)).collect()
    }
    fn observe(&self, output: &Vec<i64>) -> Observation {
        match output.iter().any(|&v| v > self.threshold + 1) {
            true => Observation::finding(Signature::new(Kind::Mismatch, "values off by one")),
            false => Observation::of_kind(Kind::Pass),
        }
    }
    fn stage_limit(&self, _stage: Stage) -> Option<std::time::Duration> {
        None
    }
    fn passes(&self) -> usize {
        2
    }
    fn candidates(&self, pass: usize, case: &Vec<i64>) -> Vec<(String, Vec<i64>)> {
        (0..case.len())
            .map(|i| {
                let mut c = case.clone();
                match pass {
                    0 => drop(c.remove(i)),
                    _ => c[i] -= 1,
                }
                (format!("pass {pass} at {i}"), c)
            })
            .collect()
    }
    fn evidence(&self, case: &Vec<i64>, run: Option<Vec<i64>>, _: &Signature) -> Vec<i64> {
        run.unwrap_or_else(|| case.clone())
    }
    fn write_finding(
        &self,
        dir: &Path,
        case: &Vec<i64>,
        output: &Vec<i64>,
        meta: &mut FindingMeta,
    ) -> Result<(), pimdiff_atomic::Error> {
        meta.details = serde_json::json!({ "output": output });
        write_new(
            &dir.join("case.json"),
            serde_json::json!(case).to_string().as_bytes(),
        )
    }
}

fn hunt(out: &Path, threshold: i64, panics: bool) -> pimdiff_engine::HuntSummary {
    let toy = Toy {
        threshold,
        panics,
        generation_panics_every: None,
    };
    hunt_toy(out, toy)
}

fn hunt_toy(out: &Path, toy: Toy) -> pimdiff_engine::HuntSummary {
    let cfg = HuntConfig {
        seed: 5,
        limit: Limit::Cases(40),
        jobs: 2,
        shard: Shard::ALL,
        minimize: MinimizeConfig::default(),
        max_unsupported: None,
        out: out.to_path_buf(),
    };
    run_hunt(&cfg, Arc::new(toy), &HuntControl::default()).unwrap()
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap()
}

#[test]
fn the_engine_finds_minimizes_and_saves_a_toy_targets_bug() {
    let tmp = tempfile::tempdir().unwrap();
    let s = hunt(tmp.path(), 50, false);
    assert_eq!((s.target.as_str(), s.cases_run), ("toy", 40));
    assert_eq!(s.findings.len(), 1, "{:?}", s.findings);
    let f = &s.findings[0];
    assert_eq!(f.signature, "mismatch: values off by one");
    assert!(f.triaged && !f.minimization.cut_short);
    // One value, just above the threshold: the smallest case that still shows the bug.
    let dir = tmp.path().join(&f.dir);
    assert_eq!(read(&dir, "case.json"), "[51]");
    let meta: FindingMeta = serde_json::from_str(&read(&dir, "finding.json")).unwrap();
    assert_eq!(meta.target.as_deref(), Some("toy"));
    assert_eq!(meta.details["output"], serde_json::json!([52]));
    assert_eq!(meta.minimization.unwrap().minimized_size, 52);
    assert!(tmp.path().join("summary.md").is_file());
}

#[test]
fn a_panic_of_the_target_is_a_crash_finding_and_the_hunt_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let s = hunt(tmp.path(), 1000, true);
    assert_eq!(s.cases_run, 40);
    assert_eq!(s.findings.len(), 1, "{:?}", s.findings);
    let f = &s.findings[0];
    assert_eq!(f.outcome, Kind::Crash);
    let source = include_str!("toy_target.rs");
    let line = source.lines().position(|l| l.contains("fn run(")).unwrap() + 2;
    let at = format!("engine/tests/toy_target.rs:{line}");
    assert_eq!(
        f.signature,
        format!("crash: panic: value out of range at {at}")
    );
    let dir = tmp.path().join(&f.dir);
    assert_eq!(read(&dir, "case.json"), "[91]");
}

/// A panic outside the per-case catch (here: in generating a case) ends its worker; the hunt
/// must still end, with that case reported unfinished, instead of waiting for the worker.
#[test]
fn a_panic_in_generation_ends_the_worker_not_the_hunt() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let toy = Toy {
            threshold: 1000,
            panics: false,
            generation_panics_every: Some(3),
        };
        let _ = tx.send(hunt_toy(&out, toy));
    });
    let summary = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the hunt ended");
    assert!(!summary.unfinished_cases.is_empty());
    assert!(summary.cases_run < 40, "{}", summary.cases_run);
}
