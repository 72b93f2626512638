//! Harness figures. A plain `main` (no criterion) that prints:
//!
//! * `throughput`: cases per second of generate + `check_case` on the default generator with
//!   the in-repo compiler, on one thread and with rayon on every core;
//! * `minimize`: wall-clock time to minimize each injected bug's first detection;
//! * `bugs`: per injected bug class, the median number of cases until the first detection
//!   over several seed streams, and the size of the minimized case.
//!
//! `cargo bench --bench harness` runs all three; `cargo bench --bench harness -- bugs` (or
//! `throughput`, `minimize`) only one. `--cases N` sets the throughput sample (default 20,000)
//! and `--streams K` the seed streams per bug class (default 7).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use pimdiff::check::{check_case, RunConfig};
use pimdiff::compilers::injected::BugClass;
use pimdiff::compilers::CompilerUnderTest;
use pimdiff::engine::MinimizeConfig;
use pimdiff::targets::tensor::detection::first_detection;
use pimdiff::targets::tensor::generate::{case_from_seed, describe_case, GenConfig};
use pimdiff::targets::tensor::shrink::{case_size, minimize};
use rayon::prelude::*;

/// Seed streams are this far apart, so they never overlap in a bench run.
const STREAM_STRIDE: u64 = 1_000_003;
/// Cases a seed stream may take before the class counts as undetected on it.
const MAX_CASES: usize = 20_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str, default: usize| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let cases = value("--cases", 20_000);
    let streams = value("--streams", 7);
    let wanted: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| ["throughput", "minimize", "bugs"].contains(a))
        .collect();
    let run = |name: &str| wanted.is_empty() || wanted.contains(&name);
    if run("throughput") {
        throughput(cases);
    }
    if run("minimize") {
        minimize_times();
    }
    if run("bugs") {
        bug_table(streams);
    }
}

fn throughput(cases: usize) {
    let gen = GenConfig::default();
    let cfg = RunConfig::default();
    let one = |seed: u64| check_case(&case_from_seed(&gen, seed), &cfg).outcome.kind();
    // Warm-up (page faults, allocator).
    for seed in 0..500 {
        one(seed);
    }
    let start = Instant::now();
    let mut kinds: BTreeMap<pimdiff::finding::Kind, usize> = BTreeMap::new();
    for seed in 0..cases as u64 {
        *kinds.entry(one(seed)).or_insert(0) += 1;
    }
    let single = cases as f64 / start.elapsed().as_secs_f64();
    let threads = rayon::current_num_threads();
    let start = Instant::now();
    let par: Vec<pimdiff::finding::Kind> = (0..cases as u64).into_par_iter().map(one).collect();
    let parallel = cases as f64 / start.elapsed().as_secs_f64();
    assert_eq!(par.len(), cases);
    println!("## throughput (default GenConfig, in-repo compiler, {cases} cases)\n");
    println!("| threads | cases/s |");
    println!("|---:|---:|");
    println!("| 1 | {single:.0} |");
    println!("| {threads} (rayon) | {parallel:.0} |");
    println!("\noutcomes: {kinds:?}\n");
}

fn minimize_times() {
    let gen = GenConfig::default();
    println!("## minimization time (first detection on seed stream 0, default MinimizeConfig)\n");
    println!("| bug class | candidates tried | kept | time |");
    println!("|---|---:|---:|---:|");
    for bug in BugClass::ALL {
        let Some(found) = first_detection(bug, &gen, 0, MAX_CASES) else {
            println!("| {bug} | not detected | | |");
            continue;
        };
        let cfg = RunConfig::with_compiler(CompilerUnderTest::Mutated(
            bug,
            pimdiff_compiler::Lowering::Channel,
        ));
        let start = Instant::now();
        let m = minimize(
            &found.case,
            &cfg,
            &found.signature,
            &MinimizeConfig::default(),
        );
        println!(
            "| {bug} | {} | {} | {:.1} ms |",
            m.tried,
            m.kept,
            start.elapsed().as_secs_f64() * 1e3
        );
    }
    println!();
}

fn bug_table(streams: usize) {
    let gen = GenConfig::default();
    println!("## injected bugs: cases until first detection over {streams} seed streams, minimized size\n");
    println!("| bug class | median cases | min–max | detected streams | signature (stream 0) | size before → after | minimized case |");
    println!("|---|---:|---:|---:|---|---:|---|");
    for bug in BugClass::ALL {
        let found: Vec<_> = (0..streams as u64)
            .into_par_iter()
            .map(|k| first_detection(bug, &gen, k * STREAM_STRIDE, MAX_CASES))
            .collect();
        let mut counts: Vec<usize> = found.iter().flatten().map(|d| d.cases).collect();
        counts.sort_unstable();
        let median = counts
            .get(counts.len() / 2)
            .map_or("-".to_string(), |c| c.to_string());
        let range = match (counts.first(), counts.last()) {
            (Some(a), Some(b)) => format!("{a}–{b}"),
            _ => "-".into(),
        };
        let (sig, sizes, small) = match found.iter().flatten().next() {
            Some(d) => {
                let cfg = RunConfig::with_compiler(CompilerUnderTest::Mutated(
                    bug,
                    pimdiff_compiler::Lowering::Channel,
                ));
                let m = minimize(
                    &d.case,
                    &cfg,
                    &d.signature,
                    &MinimizeConfig {
                        time_budget: Duration::from_secs(10),
                        ..Default::default()
                    },
                );
                (
                    d.signature.to_string(),
                    format!("{} → {}", case_size(&d.case), case_size(&m.case)),
                    describe_case(&m.case),
                )
            }
            None => ("-".into(), "-".into(), "-".into()),
        };
        println!(
            "| {bug} | {median} | {range} | {}/{streams} | `{sig}` | {sizes} | `{small}` |",
            counts.len()
        );
    }
    println!();
}
