//! Compile time of both lowerings (criterion): the tiny cases a hunt compiles thousands of
//! per second, and three ResNet-18 layers on 128×128 arrays
//! ([`pimdiff_compiler::workloads`]). The full per-layer table (instruction classes, bundle
//! bytes, interpretation time) is `pimdiff lowerings --out DIR`.
//!
//! `cargo bench -p pimdiff-compiler --bench resnet18` (all), `-- tiny` (the tiny cases
//! only), `-- channel` / `-- pixel` (one lowering).

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use pimdiff_compiler::workloads::{resnet18_layers, tiny_cases};
use pimdiff_compiler::{compile, CompileOptions, Lowering};

fn options(lowering: Lowering) -> CompileOptions {
    CompileOptions {
        lowering,
        ..CompileOptions::default()
    }
}

/// All tiny cases compiled once per iteration.
fn tiny(c: &mut Criterion) {
    let cases = tiny_cases();
    let mut group = c.benchmark_group("tiny");
    for lowering in Lowering::ALL {
        group.bench_function(BenchmarkId::from_parameter(lowering), |b| {
            b.iter(|| {
                for case in &cases {
                    black_box(compile(black_box(case), &options(lowering)).expect("compiles"));
                }
            })
        });
    }
    group.finish();
}

/// The stride-1 3×3 convolutions at 64 and 256 channels and the FC layer.
fn layers(c: &mut Criterion) {
    let wanted = ["3x3 64->64 @56", "3x3 256->256 @14", "fc 512->1000"];
    let mut group = c.benchmark_group("resnet18");
    group.sample_size(10);
    for layer in resnet18_layers()
        .into_iter()
        .filter(|l| wanted.contains(&l.name.as_str()))
    {
        for lowering in Lowering::ALL {
            let id = BenchmarkId::new(layer.name.as_str(), lowering);
            group.bench_function(id, |b| {
                b.iter(|| compile(black_box(&layer.case), &options(lowering)).expect("compiles"))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, tiny, layers);
criterion_main!(benches);
