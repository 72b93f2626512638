//! Hunt throughput: cases per second of `pimdiff hunt` on the default generator
//! with the in-repo compiler, with 1 and 2 worker threads. Target: at least 2,000 cases/s
//! with both cores.
//!
//! ```sh
//! cargo bench --bench hunt            # 20,000 cases per configuration
//! PIMDIFF_BENCH_CASES=5000 cargo bench --bench hunt
//! ```
//!
//! A plain `main` (harness = false): a hunt is already a long, many-case loop, so one timed
//! run per configuration after a warm-up is a stable figure; criterion's sampling would only
//! multiply the run time.

use std::time::Duration;

use pimdiff::check::RunConfig;
use pimdiff::engine::MinimizeConfig;
use pimdiff::engine::{run_hunt, HuntConfig, HuntControl, Limit, Shard};
use pimdiff::targets::tensor::generate::GenConfig;
use pimdiff::targets::tensor::TensorTarget;

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this once as a smoke test.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let cases: u64 = std::env::var("PIMDIFF_BENCH_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if smoke { 200 } else { 20_000 });
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let hunt = |name: &str, jobs: usize, cases: u64| {
        let cfg = HuntConfig {
            seed: 1,
            limit: Limit::Cases(cases),
            jobs,
            shard: Shard::ALL,
            minimize: MinimizeConfig {
                time_budget: Duration::from_secs(10),
                ..MinimizeConfig::default()
            },
            max_unsupported: None,
            out: tmp.path().join(name),
        };
        let target = TensorTarget::new(&GenConfig::default(), RunConfig::default());
        run_hunt(&cfg, std::sync::Arc::new(target), &HuntControl::default()).expect("the hunt runs")
    };
    hunt("warm-up", 2, cases / 10 + 1);
    for jobs in [1, 2] {
        let s = hunt(&format!("jobs-{jobs}"), jobs, cases);
        println!(
            "hunt/default-generator/in-repo/jobs={jobs}: {} cases in {:.2} s = {:.0} cases/s ({} findings; {:?})",
            s.cases_run,
            s.sweep_time_s,
            s.cases_per_second,
            s.findings.len(),
            s.outcomes
        );
    }
}
