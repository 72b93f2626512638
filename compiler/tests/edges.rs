//! Hand-picked corners of the case space, each checked against the oracle with the
//! optimizations on and off.

mod common;

use common::{arch, conv, conv_case, mvm_case};
use pimdiff_compiler::{emit, CompileOptions, Stage};
use pimdiff_oracle::{Case, Conv2d, Mvm};

fn agrees(case: &Case) {
    let expected = pimdiff_oracle::reference(case).unwrap();
    for options in [
        CompileOptions::default(),
        CompileOptions {
            skip_padding: false,
            weight_skipping: false,
            ..CompileOptions::default()
        },
    ] {
        let out = common::compile_and_run(case, &options)
            .unwrap()
            .expect("supported");
        assert_eq!(out, expected, "{options:?}");
    }
}

#[test]
fn sixty_four_cores_of_one_1x1_array() {
    // 4 x 3 x 4 = 48 crossbars of one cell: nearly every partial sum crosses cores.
    let c = Conv2d {
        padding: [1, 0, 0, 1],
        bias: true,
        relu: true,
        ..conv(4, 3, [2, 2])
    };
    let mut case = conv_case(c, 2, 3, 3, arch(64, 1, 1, 1, 4096), 21);
    case.weight.mapv_inplace(|v| if v == 0 { -1 } else { v });
    agrees(&case);
    let mapping = emit(&case, &CompileOptions::default(), Stage::Mapping).unwrap();
    assert!(
        mapping.starts_with("48 crossbars on 64 core(s)"),
        "{mapping}"
    );
}

#[test]
fn all_zero_weights_give_relu_of_bias() {
    let c = Conv2d {
        bias: true,
        relu: true,
        padding: [1; 4],
        ..conv(3, 5, [3, 3])
    };
    let mut case = conv_case(c, 1, 3, 3, arch(2, 1, 2, 2, 4096), 22);
    case.weight.fill(0);
    // No crossbar at all with weight skipping; the bias alone makes the output.
    let mapping = emit(&case, &CompileOptions::default(), Stage::Mapping).unwrap();
    assert!(mapping.starts_with("0 crossbars on 2 core(s)"), "{mapping}");
    let out = common::compile_and_run(&case, &CompileOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(out, pimdiff_oracle::reference(&case).unwrap());
}

#[test]
fn output_pixels_entirely_in_the_padding() {
    // Padding 3 around a 2x2 input with a 1x1 kernel: most outputs read only padding.
    let c = Conv2d {
        padding: [3, 2, 3, 1],
        stride: [2, 1],
        bias: true,
        ..conv(2, 2, [1, 1])
    };
    agrees(&conv_case(c, 1, 2, 2, arch(1, 4, 4, 4, 4096), 23));
}

#[test]
fn kernel_larger_than_the_input_with_dilation() {
    let c = Conv2d {
        padding: [4, 4, 4, 4],
        dilation: [3, 2],
        relu: true,
        ..conv(3, 2, [3, 4])
    };
    agrees(&conv_case(c, 2, 2, 3, arch(2, 16, 2, 2, 4096), 24));
}

#[test]
fn chunked_by_pixels_with_padding_in_local_memory() {
    // Small local memory forces one-row / few-pixel chunks, also with the zero-padded window.
    let c = Conv2d {
        padding: [1; 4],
        bias: true,
        ..conv(6, 4, [3, 3])
    };
    let case = conv_case(c, 2, 6, 7, arch(2, 16, 4, 4, 400), 25);
    let pim = emit(&case, &CompileOptions::default(), Stage::Pim).unwrap();
    assert!(pim.contains("Pixels(") || pim.contains("Rows("), "{pim}");
    agrees(&case);
}

#[test]
fn mvm_with_many_rows_and_split_tiles() {
    let m = Mvm {
        in_features: 13,
        out_features: 11,
        bias: true,
        relu: true,
    };
    agrees(&mvm_case(m, 7, arch(3, 8, 5, 4, 512), 26));
}

#[test]
fn grouped_conv_with_several_tiles_per_group() {
    let c = Conv2d {
        groups: 3,
        stride: [1, 2],
        padding: [0, 1, 1, 0],
        bias: true,
        ..conv(9, 12, [2, 3])
    };
    agrees(&conv_case(c, 1, 4, 5, arch(4, 24, 2, 3, 2048), 27));
}

#[test]
fn resnet_like_layer_on_128x128_arrays_split_over_cores() {
    // 3x3 256->256 at 7x7: 2 x 2 x 9 = 36 crossbars of 128x128 on 4 cores of 10 arrays, so
    // both output tiles are reduced across cores; local memory forces row chunks.
    let c = Conv2d {
        padding: [1; 4],
        bias: true,
        relu: true,
        ..conv(256, 256, [3, 3])
    };
    let case = conv_case(c, 1, 7, 7, arch(4, 10, 128, 128, 24 * 1024), 28);
    let pim = emit(&case, &CompileOptions::default(), Stage::Pim).unwrap();
    assert!(pim.contains("Rows("), "{pim}");
    let out = common::compile_and_run(&case, &CompileOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(out, pimdiff_oracle::reference(&case).unwrap());
}
