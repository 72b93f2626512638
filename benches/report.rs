//! Report and picture figures. A plain `main` (no criterion) that prints the median time of
//! `render_report` and `render_pictures` on:
//!
//! * a large passing case: conv2d 16→16 channels, 46×46, 3×3 kernel, bias and ReLU on 4 cores
//!   of 16 arrays of 16×16 (about 60,000 instructions), with the in-repo compiler;
//! * the same case with an injected `store-off-by-one` (one instruction differs from the
//!   correct compilation; the output differs in ~22,000 elements);
//! * a small multi-core finding (the kind a minimized hunt saves), with both pictures.
//!
//! `cargo bench --bench report` (`--runs N`, default 5).

use std::time::{Duration, Instant};

use pimdiff::check::{check_case, CaseResult, RunConfig};
use pimdiff::compilers::injected::BugClass;
use pimdiff::compilers::CompilerUnderTest;
use pimdiff::report::pictures::render_pictures;
use pimdiff::report::render_report;
use pimdiff_oracle::{random_tensors, Case, CaseArch, CaseSpec, Conv2d, Op};

fn conv([channels, out]: [usize; 2], hw: usize, arch: CaseArch, batch: usize) -> Case {
    let spec = CaseSpec {
        op: Op::Conv2d(Conv2d {
            in_channels: channels,
            out_channels: out,
            kernel: [3, 3],
            stride: [1, 1],
            padding: [1, 1, 1, 1],
            dilation: [1, 1],
            groups: 1,
            bias: true,
            relu: true,
        }),
        input_shape: vec![batch, channels, hw, hw],
        arch,
    };
    random_tensors(&spec, 0).expect("a valid case")
}

/// The median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut() -> usize) -> (Duration, usize) {
    let mut times = Vec::new();
    let mut size = 0;
    for _ in 0..runs {
        let start = Instant::now();
        size = std::hint::black_box(f());
        times.push(start.elapsed());
    }
    times.sort();
    (times[times.len() / 2], size)
}

fn row(name: &str, case: &Case, result: &CaseResult, cfg: &RunConfig, runs: usize) {
    let instructions: usize = result
        .bundle
        .as_ref()
        .map_or(0, |b| b.program.cores.iter().map(Vec::len).sum());
    let (report, bytes) = median(runs, || render_report(case, result, cfg).len());
    let (pictures, svg_bytes) = median(runs, || {
        render_pictures(case, result)
            .expect("pictures")
            .iter()
            .map(|p| p.svg.len())
            .sum()
    });
    println!(
        "| {name} | {instructions} | {} | {:.1} ms | {bytes} | {:.1} ms | {svg_bytes} |",
        result.outcome.kind(),
        report.as_secs_f64() * 1e3,
        pictures.as_secs_f64() * 1e3,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    println!("| case | instructions | outcome | report | bytes | pictures | SVG bytes |");
    println!("|---|---:|---|---:|---:|---:|---:|");
    let big_arch = CaseArch {
        cores: 4,
        arrays_per_core: 16,
        array_rows: 16,
        array_cols: 16,
        local_memory_bytes: 262_144,
    };
    let big = conv([16, 16], 46, big_arch, 1);
    let cfg = RunConfig::default();
    row("large, passing", &big, &check_case(&big, &cfg), &cfg, runs);
    let cfg = RunConfig::with_compiler(CompilerUnderTest::Mutated(
        BugClass::StoreOffByOne,
        pimdiff_compiler::Lowering::Channel,
    ));
    row(
        "large, store-off-by-one",
        &big,
        &check_case(&big, &cfg),
        &cfg,
        runs,
    );
    let small_arch = CaseArch {
        cores: 3,
        arrays_per_core: 6,
        array_rows: 1,
        array_cols: 2,
        local_memory_bytes: 65_536,
    };
    let small = conv([1, 2], 3, small_arch, 2);
    let cfg = RunConfig::with_compiler(CompilerUnderTest::Mutated(
        BugClass::MissingBias,
        pimdiff_compiler::Lowering::Channel,
    ));
    row(
        "small, missing-bias",
        &small,
        &check_case(&small, &cfg),
        &cfg,
        runs,
    );
}
