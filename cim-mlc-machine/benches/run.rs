//! Machine speed in meta-operators per second: every level of every fixture
//! (`tests/fixtures/`) that runs to its end (unbounded input queues, lenient crossbar ranges),
//! each run from the chip's initial state, repeated for about half a second; and the time to
//! read a fixture's flows and layout.
//!
//! `cargo bench -p pimdiff-cim-mlc --bench run [-- FILTER]`

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pimdiff_cim_mlc::machine::{InputQueue, MachineOptions};
use pimdiff_cim_mlc::{Chip, Flows, Layout, NodeWeights, Tensor};

const FIXTURES: [&str; 8] = [
    "conv1-tiny",
    "gemm-puma-like",
    "gemm-example",
    "conv-relu-pool-tiny",
    "add-branches-wide",
    "two-convs-example",
    "flatten-gemm-example",
    "depthwise-tiny",
];

fn tensor(shape: &[usize]) -> Tensor {
    let n = shape.iter().product();
    Tensor::new(
        shape.to_vec(),
        (0..n)
            .map(|i| (i as i64 * 5 + i as i64 / 7) % 7 - 3)
            .collect(),
    )
    .unwrap()
}

/// Weights of the shapes `layout.json` gives every weighted node.
fn weights(layout: &Layout) -> Vec<(String, NodeWeights)> {
    layout
        .nodes
        .iter()
        .filter(|n| n.is_weighted())
        .map(|n| {
            let ifm = n.ints("ifmsize").unwrap_or_default();
            let ofm = n.ints("ofmsize").unwrap_or_default();
            let w = if n.op_type == "Conv" {
                let k = n.ints("kernel_shape").unwrap_or_default()[0] as usize;
                let g = n.int("group").unwrap_or(1) as usize;
                NodeWeights::conv(tensor(&[ofm[1] as usize, ifm[1] as usize / g, k, k]), None)
            } else {
                let (i, o) = (*ifm.last().unwrap() as usize, *ofm.last().unwrap() as usize);
                let trans = n.int("transB").unwrap_or(0) == 1;
                NodeWeights::gemm(tensor(&if trans { [o, i] } else { [i, o] }), trans, None)
            };
            (n.name.clone(), w)
        })
        .collect()
}

/// Repeat `f` for about `budget`; the mean time of one call.
fn time(budget: Duration, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    let mut n = 0u32;
    while n < 3 || start.elapsed() < budget {
        f();
        n += 1;
    }
    start.elapsed() / n
}

fn main() {
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    println!("| fixture | level | meta-operators | µs per run | meta-operators/s |");
    println!("|---|---|---:|---:|---:|");
    for name in FIXTURES.iter().filter(|n| n.contains(&filter)) {
        let dir: &Path = &root.join(name);
        let load = time(Duration::from_millis(200), || {
            let _ = Flows::load(dir).unwrap();
            let _ = Layout::load(&dir.join("layout.json")).unwrap();
        });
        let flows = Flows::load(dir).unwrap();
        let layout = Layout::load(&dir.join("layout.json")).unwrap();
        let input = &layout.inputs[0];
        let shape: Vec<usize> = input
            .shape
            .iter()
            .map(|d| d.unwrap_or(1) as usize)
            .collect();
        let mut b = Chip::builder(&layout, &flows)
            .input(&input.name, tensor(&shape))
            .options(MachineOptions {
                input_queue: InputQueue::Unbounded,
                exact_crossbar_ranges: false,
                ..MachineOptions::default()
            });
        for (n, w) in weights(&layout) {
            b = b.weights(&n, w);
        }
        let chip = b.build().unwrap();
        println!("| {name} | (load) | | {:.0} | |", load.as_secs_f64() * 1e6);
        for level in flows.levels() {
            let ops = match chip.run(level).finished() {
                Some(f) => f.ops,
                None => continue,
            };
            let t = time(Duration::from_millis(500), || {
                std::hint::black_box(chip.run(level));
            });
            println!(
                "| {name} | {level} | {ops} | {:.1} | {:.3e} |",
                t.as_secs_f64() * 1e6,
                ops as f64 / t.as_secs_f64()
            );
        }
    }
}
