//! The hunt engine of pimdiff, for any compiler under test.
//!
//! A differential-testing campaign is the same for every compiler: cases come from a seed, run
//! on worker threads under a watchdog, failing ones are bucketed by signature, grouped by
//! cause, minimized, saved atomically as finding directories and summarized, with one
//! exit-code contract. What differs — what a case is, how it is compiled, run, judged, made
//! smaller and written — is a [`Target`]. This crate holds the first part and knows no
//! compiler: a team with its own compiler and ISA depends on it and implements [`Target`] in
//! their own crate, the way a libFuzzer target uses libFuzzer. pimdiff's own targets
//! (`pimdiff-target-pimsim`, `-pimcomp`, `-puma`, `-cim-mlc`) are built that way.
//!
//! | module | what it holds |
//! |---|---|
//! | [`hunt`] | [`run_hunt`]: sweep, jobs, watchdog, grouping by cause, the shrink driver, guided corpus |
//! | [`finding`] | the vocabulary: [`Kind`](finding::Kind), [`Signature`](finding::Signature), `finding.json`, the one finding writer |
//! | [`summary`] | `summary.json`/`summary.md` of any hunt, the declines verdict, `merge` of shards |
//! | [`plan`] | case seeds, shards, durations: what makes a hunt reproducible for any `--jobs` |
//! | [`process`] | running a compiler that is a program: own process group, deadline, memory watchdog, pinned environment, persistent servers |
//! | [`coverage`] | edges of a compiler under test (guided hunts) and gcov totals |
//!
//! Layers point down only: `hunt` uses `summary`, which uses `finding`, `plan` and
//! `coverage`; `process` uses nothing of the crate.
//!
//! # A target in a few dozen lines
//!
//! "Compiles" a list of numbers whose reference is the list itself; the compiler under test
//! adds one to every value above 50. The engine finds it, minimizes it to the single value 51
//! and saves one finding:
//!
//! ```
//! use std::{path::Path, sync::Arc, time::Duration};
//! use pimdiff_engine::finding::{write_new, FindingMeta, Kind, Signature};
//! use pimdiff_engine::hunt::watchdog::{Stage, StageClock};
//! use pimdiff_engine::{run_hunt, HuntConfig, HuntControl, Limit, MinimizeConfig, Observation, Shard, Target};
//!
//! struct Toy;
//!
//! impl Target for Toy {
//!     type Case = Vec<i64>;
//!     type Run = Vec<i64>;
//!     type Evidence = Vec<i64>;
//!     fn name(&self) -> &'static str { "toy" }
//!     fn compiler(&self) -> String { "adds one above 50".into() }
//!     fn generator(&self) -> serde_json::Value { serde_json::json!({ "values": 6 }) }
//!     fn case(&self, seed: u64) -> Vec<i64> {
//!         (0..6).map(|i| ((seed >> (i * 7)) % 100) as i64).collect()
//!     }
//!     fn size(&self, case: &Vec<i64>) -> u64 { case.iter().map(|v| v.unsigned_abs() + 1).sum() }
//!     fn run(&self, case: &Vec<i64>, _: &StageClock) -> Vec<i64> {
//!         case.iter().map(|&v| if v > 50 { v + 1 } else { v }).collect()
//!     }
//!     fn observe(&self, out: &Vec<i64>) -> Observation {
//!         if out.iter().any(|&v| v > 51) {
//!             Observation::finding(Signature::new(Kind::Mismatch, "values off by one"))
//!         } else {
//!             Observation::of_kind(Kind::Pass)
//!         }
//!     }
//!     fn stage_limit(&self, _: Stage) -> Option<Duration> { None }
//!     fn passes(&self) -> usize { 2 }
//!     fn candidates(&self, pass: usize, case: &Vec<i64>) -> Vec<(String, Vec<i64>)> {
//!         (0..case.len())
//!             .map(|i| {
//!                 let mut c = case.clone();
//!                 if pass == 0 { c.remove(i); } else { c[i] -= 1; }
//!                 (format!("pass {pass} at {i}"), c)
//!             })
//!             .collect()
//!     }
//!     fn evidence(&self, case: &Vec<i64>, run: Option<Vec<i64>>, _: &Signature) -> Vec<i64> {
//!         run.unwrap_or_else(|| case.clone())
//!     }
//!     fn write_finding(&self, dir: &Path, case: &Vec<i64>, out: &Vec<i64>, meta: &mut FindingMeta)
//!         -> Result<(), pimdiff_atomic::Error> {
//!         meta.details = serde_json::json!({ "output": out });
//!         write_new(&dir.join("case.json"), serde_json::json!(case).to_string().as_bytes())
//!     }
//! }
//!
//! let out = tempfile::tempdir().unwrap();
//! let cfg = HuntConfig {
//!     seed: 5,
//!     limit: Limit::Cases(40),
//!     jobs: 2,
//!     shard: Shard::ALL,
//!     minimize: MinimizeConfig::default(),
//!     max_unsupported: None,
//!     out: out.path().to_path_buf(),
//! };
//! let summary = run_hunt(&cfg, Arc::new(Toy), &HuntControl::default()).unwrap();
//! assert_eq!(summary.findings.len(), 1);
//! let dir = out.path().join(&summary.findings[0].dir);
//! assert_eq!(std::fs::read_to_string(dir.join("case.json")).unwrap(), "[51]");
//! ```
//!
//! `engine/tests/toy_target.rs` is the same target with its tests (a panic of the target is a
//! `crash` finding; a panic in generation ends a worker, not the hunt).

pub mod coverage;
pub mod finding;
pub mod hunt;
pub mod plan;
pub mod process;
pub mod summary;

pub use hunt::{
    run_guided_hunt, run_hunt, Budget, HuntConfig, HuntControl, HuntError, MinimizeConfig,
    Observation, Target, Triaged,
};
pub use plan::{Limit, Shard};
pub use summary::HuntSummary;
