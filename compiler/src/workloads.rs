//! Fixed workloads for measuring the compiler, defined once for the compile-time benches
//! (`benches/resnet18.rs`) and `pimdiff lowerings`: ResNet-18's distinct layers on a
//! realistic chip, and the tiny cases a hunt compiles thousands of per second.

use pimdiff_oracle::{random_tensors, Case, CaseArch, CaseSpec, Conv2d, Mvm, Op};

/// The chip of the ResNet-18 measurements: PIMCOMP-NN's core (64 crossbar arrays of
/// 128 × 128 cells, as in its `config.json`), 64 such cores (more than any single layer
/// needs: the largest, 3×3 512→512, uses 144 arrays), and 1 MiB of local memory per core.
pub const RESNET18_ARCH: CaseArch = CaseArch {
    cores: 64,
    arrays_per_core: 64,
    array_rows: 128,
    array_cols: 128,
    local_memory_bytes: 1 << 20,
};

/// One layer of a network, as a case with random int8 tensors.
#[derive(Clone, Debug)]
pub struct Layer {
    /// A short name, e.g. `3x3 64->128 /2 @56`.
    pub name: String,
    pub case: Case,
}

/// A conv2d layer with bias and ReLU on a square image of one batch.
fn conv(c: usize, k: usize, kernel: usize, stride: usize, hw: usize, arch: CaseArch) -> Case {
    let op = Conv2d {
        in_channels: c,
        out_channels: k,
        kernel: [kernel; 2],
        stride: [stride; 2],
        padding: [kernel / 2; 4],
        dilation: [1, 1],
        groups: 1,
        bias: true,
        relu: true,
    };
    let spec = CaseSpec {
        op: Op::Conv2d(op),
        input_shape: vec![1, c, hw, hw],
        arch,
    };
    random_tensors(&spec, (c * 1000 + k + kernel * 7 + stride) as u64)
        .expect("a ResNet-18 layer is a valid case")
}

fn fc(inf: usize, outf: usize, arch: CaseArch) -> Case {
    let spec = CaseSpec {
        op: Op::Mvm(Mvm {
            in_features: inf,
            out_features: outf,
            bias: true,
            relu: false,
        }),
        input_shape: vec![1, inf],
        arch,
    };
    random_tensors(&spec, 18).expect("the FC layer is a valid case")
}

fn layer(name: String, case: Case) -> Layer {
    Layer { name, case }
}

/// ResNet-18's distinct layers on [`RESNET18_ARCH`]: the 7×7/2 stem, the 3×3 convolutions of
/// each stage (stride 1, and the stride-2 first convolution of stages 2–4), the 1×1/2
/// downsample convolutions, and the fully connected layer. Padding is `kernel / 2`, every
/// convolution has bias and ReLU (batch normalization folded in, as deployed).
pub fn resnet18_layers() -> Vec<Layer> {
    let a = RESNET18_ARCH;
    let mut out = vec![layer("7x7 3->64 /2 @224".into(), conv(3, 64, 7, 2, 224, a))];
    for (c, hw) in [(64, 56), (128, 28), (256, 14), (512, 7)] {
        out.push(layer(
            format!("3x3 {c}->{c} @{hw}"),
            conv(c, c, 3, 1, hw, a),
        ));
    }
    for (c, hw) in [(64, 56), (128, 28), (256, 14)] {
        let k = 2 * c;
        out.push(layer(
            format!("3x3 {c}->{k} /2 @{hw}"),
            conv(c, k, 3, 2, hw, a),
        ));
    }
    for (c, hw) in [(64, 56), (128, 28), (256, 14)] {
        let k = 2 * c;
        out.push(layer(
            format!("1x1 {c}->{k} /2 @{hw}"),
            conv(c, k, 1, 2, hw, a),
        ));
    }
    out.push(layer("fc 512->1000".into(), fc(512, 1000, a)));
    out
}

/// The tiny cases of a hunt: 3×3 convolutions up to 5→6 channels on at most 6×6 images and
/// an 8→5 MVM, on 2 cores of 32 arrays of 4×4 and 4 KiB of local memory.
pub fn tiny_cases() -> Vec<Case> {
    let arch = CaseArch {
        cores: 2,
        arrays_per_core: 32,
        array_rows: 4,
        array_cols: 4,
        local_memory_bytes: 4096,
    };
    let mut out: Vec<Case> = [(3, 4, 5), (5, 6, 4), (2, 2, 3), (4, 3, 6)]
        .into_iter()
        .map(|(c, k, hw)| conv(c, k, 3, 1, hw, arch))
        .collect();
    out.push(fc(8, 5, arch));
    out
}
