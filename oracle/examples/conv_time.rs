//! Times the fast conv2d on ResNet-18's 3×3 64→64 56² layer and prints the median of `RUNS`
//! runs in milliseconds, on the rayon pool's threads (`RAYON_NUM_THREADS` sets them). Used by
//! `scripts/conv-vs-torch.sh`, which times PyTorch on the same layer in the same run.
//!
//! `cargo run --release -p pimdiff-oracle --example conv_time [RUNS]`

use std::time::Instant;

use ndarray::{Array1, Array4};
use pimdiff_oracle::{conv2d, Conv2d};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("RUNS must be a number"))
        .unwrap_or(50);
    let p = Conv2d {
        in_channels: 64,
        out_channels: 64,
        kernel: [3, 3],
        stride: [1, 1],
        padding: [1, 1, 1, 1],
        dilation: [1, 1],
        groups: 1,
        bias: true,
        relu: false,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(18);
    let input = Array4::from_shape_simple_fn((1, 64, 56, 56), || rng.random::<i8>());
    let weight = Array4::from_shape_simple_fn((64, 64, 3, 3), || rng.random::<i8>());
    let bias = Array1::from_shape_simple_fn(64, || rng.random_range(-4096..=4096));
    let mut times: Vec<f64> = (0..runs.max(1) + 3)
        .map(|_| {
            let t = Instant::now();
            let out = conv2d(input.view(), weight.view(), Some(bias.view()), &p).expect("valid");
            std::hint::black_box(out);
            t.elapsed().as_secs_f64() * 1e3
        })
        .skip(3)
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "pimdiff-oracle conv2d (int8 exact, {} threads): median {:.2} ms, min {:.2} ms over {} runs",
        rayon::current_num_threads(),
        times[times.len() / 2],
        times[0],
        times.len()
    );
}
