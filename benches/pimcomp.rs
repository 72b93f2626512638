//! `pimdiff pimcomp` figures. A plain `main` (no criterion) that runs the whole check —
//! loading both files, the reference, the rewrite, the run, the comparison and, where a node
//! mismatches, the localization — and prints the median wall time and each phase's median:
//!
//! * the committed squeezenet-batch conv1_1 fixture (always; it mismatches, so it includes a
//!   localization run);
//! * alexnet-element and resnet18-element from `$PIMDIFF_SHARED/external/pimcomp` (default
//!   the `shared` folder beside the repository), skipped with a message when absent.
//!
//! `cargo bench --bench pimcomp` (`--runs N`, default 3). Peak memory is a property of the
//! process, not of one check: measure it with `/usr/bin/time -v pimdiff pimcomp …`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use pimdiff::targets::pimcomp_nn::check::{check, Control, Options};
use pimdiff_isa::machine::Schedule;

fn bench(name: &str, program: PathBuf, table: PathBuf, runs: usize) {
    let opts = Options {
        program,
        table,
        seed: pimdiff::targets::pimcomp_nn::check::synth::DEFAULT_SEED,
        schedule: Schedule::Fixed,
        probes: true,
        control: Control::None,
    };
    let mut walls = Vec::new();
    let mut phases: Vec<(&'static str, Vec<f64>)> = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let c = check(&opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        walls.push(start.elapsed().as_secs_f64());
        for (k, &(phase, t)) in c.timings.iter().enumerate() {
            if phases.len() <= k {
                phases.push((phase, Vec::new()));
            }
            phases[k].1.push(t);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let detail: Vec<String> = phases
        .iter_mut()
        .map(|(p, v)| format!("{p} {:.2}", median(v)))
        .collect();
    println!(
        "{name:<34} {:>6.2} s   ({})",
        median(&mut walls),
        detail.join(", ")
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(3usize)
        .max(1);
    println!(
        "pimdiff pimcomp, median of {runs} runs, {} rayon threads",
        rayon::current_num_threads()
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixtures = root.join("tests/fixtures/pimcomp");
    bench(
        "squeezenet-batch-conv1 (fixture)",
        fixtures.join("squeezenet-batch-conv1.json.gz"),
        fixtures.join("squeezenet-batch-conv1-verification.json.gz"),
        runs,
    );
    let shared = std::env::var_os("PIMDIFF_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared"))
        .join("external/pimcomp");
    for name in ["alexnet-element", "resnet18-element"] {
        let program = shared.join(format!("{name}.json.gz"));
        let table = shared.join(format!("{name}-verification.json.gz"));
        if program.is_file() && table.is_file() {
            bench(name, program, table, runs);
        } else {
            println!("{name:<34} skipped ({} is absent)", program.display());
        }
    }
}
