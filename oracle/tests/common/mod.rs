//! Strategies and fixtures shared by the integration tests.

// Each test crate uses a part of this module.
#![allow(dead_code)]

use pimdiff_oracle::{CaseArch, CaseSpec, Conv2d, Mvm, Op};
use proptest::prelude::*;

/// A valid conv2d spec with small sizes: groups (including depthwise), strides, dilations,
/// asymmetric padding, batch up to 2.
pub fn conv_spec() -> impl Strategy<Value = CaseSpec> {
    (
        (1usize..=3, 1usize..=3, 1usize..=5, 1usize..=2),
        (
            [1usize..=4, 1usize..=4],
            [1usize..=3, 1usize..=3],
            [1usize..=3, 1usize..=3],
        ),
        [0usize..=3, 0usize..=3, 0usize..=3, 0usize..=3],
        (1usize..=2, 1usize..=11, 1usize..=11),
        any::<(bool, bool)>(),
    )
        .prop_filter_map(
            "output below 1",
            |(
                (groups, cg, kg, _),
                (kernel, stride, dilation),
                padding,
                (n, h, w),
                (bias, relu),
            )| {
                let p = Conv2d {
                    in_channels: groups * cg,
                    out_channels: groups * kg,
                    kernel,
                    stride,
                    padding,
                    dilation,
                    groups,
                    bias,
                    relu,
                };
                p.output_hw(h, w)?;
                Some(CaseSpec {
                    op: Op::Conv2d(p),
                    input_shape: vec![n, p.in_channels, h, w],
                    arch: arch(),
                })
            },
        )
}

/// A valid MVM spec with small sizes.
pub fn mvm_spec() -> impl Strategy<Value = CaseSpec> {
    (1usize..=3, 1usize..=40, 1usize..=12, any::<(bool, bool)>()).prop_map(
        |(n, i, o, (bias, relu))| CaseSpec {
            op: Op::Mvm(Mvm {
                in_features: i,
                out_features: o,
                bias,
                relu,
            }),
            input_shape: vec![n, i],
            arch: arch(),
        },
    )
}

pub fn arch() -> CaseArch {
    CaseArch {
        cores: 4,
        arrays_per_core: 8,
        array_rows: 16,
        array_cols: 16,
        local_memory_bytes: 262144,
    }
}
