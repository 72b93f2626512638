//! The documented limits let every ResNet-18 layer through, on PIMCOMP-NN's own chip.

use pimdiff_oracle::{CaseArch, CaseSpec, Conv2d, Mvm, Op};

/// PIMCOMP-NN's configuration: 136 cores of 64 arrays of 128×128 (1 MiB of local memory each).
const PIMCOMP: CaseArch = CaseArch {
    cores: 136,
    arrays_per_core: 64,
    array_rows: 128,
    array_cols: 128,
    local_memory_bytes: 1 << 20,
};

fn conv(c: usize, k: usize, kernel: usize, stride: usize, pad: usize, hw: usize) -> CaseSpec {
    CaseSpec {
        op: Op::Conv2d(Conv2d {
            in_channels: c,
            out_channels: k,
            kernel: [kernel, kernel],
            stride: [stride, stride],
            padding: [pad; 4],
            dilation: [1, 1],
            groups: 1,
            bias: true,
            relu: true,
        }),
        input_shape: vec![1, c, hw, hw],
        arch: PIMCOMP,
    }
}

#[test]
fn resnet18_layers_are_within_limits() {
    let layers = [
        (conv(3, 64, 7, 2, 3, 224), vec![1, 64, 112, 112]),
        (conv(64, 64, 3, 1, 1, 56), vec![1, 64, 56, 56]),
        (conv(64, 128, 3, 2, 1, 56), vec![1, 128, 28, 28]),
        (conv(128, 256, 3, 2, 1, 28), vec![1, 256, 14, 14]),
        (conv(256, 512, 3, 2, 1, 14), vec![1, 512, 7, 7]),
        (conv(512, 512, 3, 1, 1, 7), vec![1, 512, 7, 7]),
        (conv(256, 512, 1, 2, 0, 14), vec![1, 512, 7, 7]),
    ];
    for (spec, output) in layers {
        spec.validate().unwrap();
        assert_eq!(spec.output_shape(), output);
    }
    let fc = CaseSpec {
        op: Op::Mvm(Mvm {
            in_features: 512,
            out_features: 1000,
            bias: true,
            relu: false,
        }),
        input_shape: vec![1, 512],
        arch: PIMCOMP,
    };
    fc.validate().unwrap();
    assert_eq!(fc.output_shape(), vec![1, 1000]);
    assert_eq!(fc.weight_shape(), vec![1000, 512]);
    assert_eq!(fc.bias_len(), Some(1000));
}
