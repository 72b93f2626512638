//! The fast conv2d on a ResNet-18 layer: N=1, 64→64 channels, 3×3, 56×56, padding 1, stride 1
//! (116 M multiply-accumulates), on every core and on one core; the portable micro-kernel (what
//! CPUs without AVX2 run) and the direct definition for scale.
//!
//! `cargo bench -p pimdiff-oracle --bench conv`
//!
//! `scripts/conv-vs-torch.sh` times the same layer against PyTorch (float64) in one run.

use criterion::{criterion_group, criterion_main, Criterion};
use ndarray::{Array1, Array4};
use pimdiff_oracle::conv::{conv2d_blocked, Blocking};
use pimdiff_oracle::{conv2d, conv2d_direct, Conv2d};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn resnet_layer() -> (Array4<i8>, Array4<i8>, Array1<i32>, Conv2d) {
    let p = Conv2d {
        in_channels: 64,
        out_channels: 64,
        kernel: [3, 3],
        stride: [1, 1],
        padding: [1, 1, 1, 1],
        dilation: [1, 1],
        groups: 1,
        bias: true,
        relu: true,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(18);
    let input = Array4::from_shape_simple_fn((1, 64, 56, 56), || rng.random::<i8>());
    let weight = Array4::from_shape_simple_fn((64, 64, 3, 3), || rng.random::<i8>());
    let bias = Array1::from_shape_simple_fn(64, || rng.random_range(-4096..=4096));
    (input, weight, bias, p)
}

fn bench(c: &mut Criterion) {
    let (input, weight, bias, p) = resnet_layer();
    let run = |blocking: Blocking| {
        conv2d_blocked(input.view(), weight.view(), Some(bias.view()), &p, blocking)
            .expect("valid layer")
    };
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a thread pool");
    let mut group = c.benchmark_group("resnet18_64x64_3x3_56x56");
    group.sample_size(20);
    group.bench_function("conv2d (fast, all cores)", |b| {
        b.iter(|| conv2d(input.view(), weight.view(), Some(bias.view()), &p).expect("valid layer"))
    });
    group.bench_function("conv2d (fast, 1 core)", |b| {
        b.iter(|| one_thread.install(|| run(Blocking::DEFAULT)))
    });
    group.bench_function("conv2d (portable kernel, all cores)", |b| {
        b.iter(|| {
            run(Blocking {
                portable: true,
                ..Blocking::DEFAULT
            })
        })
    });
    group.sample_size(10);
    group.bench_function("conv2d_direct", |b| {
        b.iter(|| {
            conv2d_direct(input.view(), weight.view(), Some(bias.view()), &p).expect("valid layer")
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
