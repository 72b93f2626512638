//! Hand-computed results: every expected array below was worked out on paper from the
//! definition, and both implementations must produce it exactly.

mod common;

use common::arch;
use ndarray::{arr1, arr2, Array, Array1, Array2, Array4, ArrayD, IxDyn};
use pimdiff_oracle::{
    conv2d, conv2d_direct, mvm, mvm_direct, reference, Case, CaseError, CaseSpec, Conv2d, Mvm, Op,
    OracleError,
};

fn conv(
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 4],
    dilation: [usize; 2],
) -> Conv2d {
    Conv2d {
        in_channels: 1,
        out_channels: 1,
        kernel,
        stride,
        padding,
        dilation,
        groups: 1,
        bias: false,
        relu: false,
    }
}

/// The 5×5 input 0, 1, ..., 24 as `[1, 1, 5, 5]`.
fn arange5() -> Array4<i8> {
    Array::from_iter(0..25i8)
        .into_shape_with_order((1, 1, 5, 5))
        .unwrap()
}

/// Runs both implementations, checks they agree, and returns the `[OH, OW]` plane of image 0,
/// channel `k`.
fn both(
    input: &Array4<i8>,
    weight: &Array4<i8>,
    bias: Option<&Array1<i32>>,
    p: &Conv2d,
) -> Array4<i32> {
    let fast = conv2d(input.view(), weight.view(), bias.map(|b| b.view()), p).unwrap();
    let direct = conv2d_direct(input.view(), weight.view(), bias.map(|b| b.view()), p).unwrap();
    assert_eq!(fast, direct);
    fast
}

fn plane(a: &Array4<i32>, k: usize) -> Array2<i32> {
    a.index_axis(ndarray::Axis(0), 0)
        .index_axis(ndarray::Axis(0), k)
        .to_owned()
}

#[test]
fn arange_5x5_ones_3x3_no_padding() {
    let out = both(
        &arange5(),
        &Array4::ones((1, 1, 3, 3)),
        None,
        &conv([3, 3], [1, 1], [0; 4], [1, 1]),
    );
    // Each output is the sum of a 3×3 window: 9 times its centre.
    assert_eq!(out.shape(), &[1, 1, 3, 3]);
    assert_eq!(
        plane(&out, 0),
        arr2(&[[54, 63, 72], [99, 108, 117], [144, 153, 162]])
    );
}

#[test]
fn arange_5x5_ones_3x3_padding_1() {
    let out = both(
        &arange5(),
        &Array4::ones((1, 1, 3, 3)),
        None,
        &conv([3, 3], [1, 1], [1; 4], [1, 1]),
    );
    assert_eq!(
        plane(&out, 0),
        arr2(&[
            [12, 21, 27, 33, 24],
            [33, 54, 63, 72, 51],
            [63, 99, 108, 117, 81],
            [93, 144, 153, 162, 111],
            [72, 111, 117, 123, 84],
        ])
    );
}

#[test]
fn arange_5x5_ones_3x3_padding_1_stride_2() {
    let out = both(
        &arange5(),
        &Array4::ones((1, 1, 3, 3)),
        None,
        &conv([3, 3], [2, 2], [1; 4], [1, 1]),
    );
    assert_eq!(
        plane(&out, 0),
        arr2(&[[12, 27, 24], [63, 108, 81], [72, 117, 84]])
    );
}

#[test]
fn arange_5x5_ones_3x3_stride_2_no_padding() {
    let out = both(
        &arange5(),
        &Array4::ones((1, 1, 3, 3)),
        None,
        &conv([3, 3], [2, 2], [0; 4], [1, 1]),
    );
    assert_eq!(plane(&out, 0), arr2(&[[54, 72], [144, 162]]));
}

#[test]
fn depthwise_with_bias() {
    // Channel 0 is 0..8, channel 1 is 1..9; each channel has its own 2×2 kernel.
    let input = Array::from_iter((0..9i8).chain(1..10))
        .into_shape_with_order((1, 2, 3, 3))
        .unwrap();
    let weight = Array4::from_shape_vec((2, 1, 2, 2), vec![1, 0, 0, -1, 2, 2, 2, 2]).unwrap();
    let p = Conv2d {
        in_channels: 2,
        out_channels: 2,
        groups: 2,
        bias: true,
        ..conv([2, 2], [1, 1], [0; 4], [1, 1])
    };
    let out = both(&input, &weight, Some(&arr1(&[10, -100])), &p);
    // Channel 0: x[i][j] - x[i+1][j+1] = -4, plus 10. Channel 1: twice each window sum, minus 100.
    assert_eq!(plane(&out, 0), arr2(&[[6, 6], [6, 6]]));
    assert_eq!(plane(&out, 1), arr2(&[[-76, -68], [-52, -44]]));
}

#[test]
fn dilation_2() {
    // out[i][j] = x[i][j] + 2·x[i][j+2] + 3·x[i+2][j] + 4·x[i+2][j+2] with x = 5i + j,
    // which is 50i + 10j + 82.
    let weight = Array4::from_shape_vec((1, 1, 2, 2), vec![1, 2, 3, 4]).unwrap();
    let out = both(
        &arange5(),
        &weight,
        None,
        &conv([2, 2], [1, 1], [0; 4], [2, 2]),
    );
    assert_eq!(
        plane(&out, 0),
        arr2(&[[82, 92, 102], [132, 142, 152], [182, 192, 202]])
    );
}

#[test]
fn asymmetric_padding() {
    // 3×3 input 0..8, 2×2 ones, padding top 1, left 0, bottom 0, right 2: the padded input
    // is 4×5 and the output 3×4.
    let input = Array::from_iter(0..9i8)
        .into_shape_with_order((1, 1, 3, 3))
        .unwrap();
    let out = both(
        &input,
        &Array4::ones((1, 1, 2, 2)),
        None,
        &conv([2, 2], [1, 1], [1, 0, 0, 2], [1, 1]),
    );
    assert_eq!(
        plane(&out, 0),
        arr2(&[[1, 3, 2, 0], [8, 12, 7, 0], [20, 24, 13, 0]])
    );
}

#[test]
fn relu_applies_to_the_final_sum_only() {
    // Two input channels whose contributions cancel: a ReLU on partial sums would give 5.
    let input = Array4::from_shape_vec((1, 2, 1, 1), vec![5, 5]).unwrap();
    let weight = Array4::from_shape_vec((1, 2, 1, 1), vec![1, -1]).unwrap();
    let p = Conv2d {
        in_channels: 2,
        relu: true,
        bias: true,
        ..conv([1, 1], [1, 1], [0; 4], [1, 1])
    };
    let out = both(&input, &weight, Some(&arr1(&[-3])), &p);
    assert_eq!(out.into_raw_vec_and_offset().0, vec![0]);
}

#[test]
fn mvm_bias_and_relu() {
    let w = arr2(&[[1i8, 2, 3], [-1, 0, 2]]);
    let x = arr2(&[[1i8, 1, 1], [2, -3, 0]]);
    let b = arr1(&[-5, 1]);
    let plain = Mvm {
        in_features: 3,
        out_features: 2,
        bias: true,
        relu: false,
    };
    // Row 0: [6 - 5, 1 + 1]; row 1: [2 - 6 - 5, -2 + 1].
    for f in [mvm, mvm_direct] {
        assert_eq!(
            f(x.view(), w.view(), Some(b.view()), &plain).unwrap(),
            arr2(&[[1, 2], [-9, -1]])
        );
        let relu = Mvm {
            relu: true,
            ..plain
        };
        assert_eq!(
            f(x.view(), w.view(), Some(b.view()), &relu).unwrap(),
            arr2(&[[1, 2], [0, 0]])
        );
    }
}

#[test]
fn long_reduction_is_exact() {
    // 8192 channels × 3×3 = 73 728 terms of (-128)·(-128) = 16 384: 1 207 959 552, which fits
    // int32 but needs the fast path's i64 carry between 2^16-term chunks.
    let p = Conv2d {
        in_channels: 8192,
        ..conv([3, 3], [1, 1], [0; 4], [1, 1])
    };
    let input = Array4::from_elem((1, 8192, 3, 3), -128i8);
    let weight = Array4::from_elem((1, 8192, 3, 3), -128i8);
    let out = both(&input, &weight, None, &p);
    assert_eq!(out.into_raw_vec_and_offset().0, vec![1_207_959_552]);
}

#[test]
fn overflow_is_reported_with_the_first_index() {
    // Same reduction plus a bias of 2^30 in channel 1 and 2^31 - 1 in channel 2: channel 0
    // fits, channels 1 and 2 do not; the first (row-major) is reported.
    let p = Conv2d {
        in_channels: 8192,
        out_channels: 3,
        bias: true,
        ..conv([3, 3], [1, 1], [0; 4], [1, 1])
    };
    let input = Array4::from_elem((1, 8192, 3, 3), -128i8);
    let weight = Array4::from_elem((3, 8192, 3, 3), -128i8);
    let bias = arr1(&[0, 1 << 30, i32::MAX]);
    for f in [conv2d, conv2d_direct] {
        match f(input.view(), weight.view(), Some(bias.view()), &p) {
            Err(OracleError::Overflow { index, value }) => {
                assert_eq!(index, vec![0, 1, 0, 0]);
                assert_eq!(value, 1_207_959_552 + (1 << 30));
            }
            other => panic!("expected Overflow, got {other:?}"),
        }
    }
}

#[test]
fn overflow_before_relu_is_refused() {
    // 65 536 terms of 127·(-128) plus i32::MIN: far below int32 before ReLU, 0 after. The
    // value before ReLU is what a lowering computes in int32, so the case is refused.
    let p = Mvm {
        in_features: 65536,
        out_features: 1,
        bias: true,
        relu: true,
    };
    let x = Array2::from_elem((1, 65536), -128i8);
    let w = Array2::from_elem((1, 65536), 127i8);
    let b = arr1(&[i32::MIN]);
    for f in [mvm, mvm_direct] {
        match f(x.view(), w.view(), Some(b.view()), &p) {
            Err(OracleError::Overflow { index, value }) => {
                assert_eq!(index, vec![0, 0]);
                assert_eq!(value, -16256 * 65536 + i32::MIN as i64);
            }
            other => panic!("expected Overflow, got {other:?}"),
        }
    }
}

#[test]
fn case_new_refuses_an_overflowing_case() {
    let op = Mvm {
        in_features: 65536,
        out_features: 1,
        bias: true,
        relu: false,
    };
    let spec = CaseSpec {
        op: Op::Mvm(op),
        input_shape: vec![1, 65536],
        arch: arch(),
    };
    let input = ArrayD::from_elem(IxDyn(&[1, 65536]), -128i8);
    let weight = ArrayD::from_elem(IxDyn(&[1, 65536]), -128i8);
    match Case::new(spec, input, weight, Some(arr1(&[i32::MAX])), None) {
        Err(CaseError::ResultOverflow { index, value }) => {
            assert_eq!(index, vec![0, 0]);
            assert_eq!(value, (1i64 << 30) + i32::MAX as i64);
        }
        other => panic!("expected ResultOverflow, got {other:?}"),
    }
}

/// `Case::new` skips computing the result when `terms · 2^14 + max |bias|` fits int32 and
/// computes it otherwise: at the edge of that bound both sides must give the exact answer. One
/// term of (-128)·(-128) = 2^14 plus a bias: `i32::MAX - 2^14` is within the bound (and fits),
/// `i32::MAX - 2^14 + 1` is past it and overflows by one, and with a smaller product it fits
/// though the bound says nothing.
#[test]
fn case_new_is_exact_at_the_edge_of_the_overflow_bound() {
    let build = |x: i8, bias: i32| {
        let op = Mvm {
            in_features: 1,
            out_features: 1,
            bias: true,
            relu: false,
        };
        let spec = CaseSpec {
            op: Op::Mvm(op),
            input_shape: vec![1, 1],
            arch: arch(),
        };
        let input = ArrayD::from_elem(IxDyn(&[1, 1]), x);
        let weight = ArrayD::from_elem(IxDyn(&[1, 1]), -128i8);
        Case::new(spec, input, weight, Some(arr1(&[bias])), None)
    };
    let edge = i32::MAX - (1 << 14);
    let case = build(-128, edge).unwrap();
    assert_eq!(reference(&case).unwrap(), arr2(&[[i32::MAX]]).into_dyn());
    match build(-128, edge + 1) {
        Err(CaseError::ResultOverflow { index, value }) => {
            assert_eq!(index, vec![0, 0]);
            assert_eq!(value, i32::MAX as i64 + 1);
        }
        other => panic!("expected ResultOverflow, got {other:?}"),
    }
    let case = build(-127, edge + 1).unwrap();
    assert_eq!(
        reference(&case).unwrap(),
        arr2(&[[i32::MAX - 127]]).into_dyn()
    );
    // The negative side, past the bound (|bias| = 2^31 - 2^14) and inside int32:
    // 127 · (-128) = -16256 added to i32::MIN + 2^14.
    let case = build(127, i32::MIN + (1 << 14)).unwrap();
    assert_eq!(
        reference(&case).unwrap(),
        arr2(&[[i32::MIN + (1 << 14) - 16256]]).into_dyn()
    );
}

#[test]
fn reference_dispatches_and_keeps_nchw() {
    let p = Conv2d {
        out_channels: 2,
        ..conv([3, 3], [1, 1], [1; 4], [1, 1])
    };
    let spec = CaseSpec {
        op: Op::Conv2d(p),
        input_shape: vec![1, 1, 5, 5],
        arch: arch(),
    };
    let weight = Array::from_iter([1i8; 9].into_iter().chain([0, 0, 0, 0, -1, 0, 0, 0, 0]))
        .into_shape_with_order(IxDyn(&[2, 1, 3, 3]))
        .unwrap();
    let case = Case::new(spec, arange5().into_dyn(), weight, None, None).unwrap();
    let out = reference(&case).unwrap();
    assert_eq!(out.shape(), &[1, 2, 5, 5]);
    assert_eq!(out[[0, 0, 0, 0]], 12);
    assert_eq!(out[[0, 0, 4, 4]], 84);
    // Channel 1 is minus the identity.
    assert_eq!(out[[0, 1, 2, 3]], -13);
}
