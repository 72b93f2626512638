//! The exact reference of PUMA networks: hand-computed values for every operation, what is
//! unknown and why, the range check, and a cross-check of convolutions and MVMs against the
//! oracle crate's own (where values fit its int8 operands).

#[path = "support/puma.rs"]
mod puma_support;

use ndarray::{arr1, Array2, Array4, ArrayD, IxDyn};
use pimdiff::targets::puma::network::{Op, PumaNetwork};
use pimdiff::targets::puma::reference::{reference, NumericRange, Reference, ReferenceError};
use pimdiff::targets::puma::tensors::{DataError, NetworkData};
use pimdiff_oracle::{conv2d_direct, mvm_direct, Conv2d, Mvm};
use proptest::prelude::*;
use puma_support::Net;

fn tensor(shape: &[usize], values: &[i64]) -> ArrayD<i64> {
    ArrayD::from_shape_vec(IxDyn(shape), values.to_vec()).expect("shape")
}

fn run(net: &PumaNetwork, inputs: Vec<ArrayD<i64>>, weights: Vec<ArrayD<i64>>) -> Reference {
    reference(
        net,
        &NetworkData { inputs, weights },
        NumericRange::PUMA_WORD,
    )
    .expect("reference")
}

/// Output `i`'s values, with unknown elements as `None`.
fn values(r: &Reference, i: usize) -> Vec<Option<i64>> {
    let o = &r.outputs[i];
    o.value
        .iter()
        .zip(o.known.iter())
        .map(|(&v, &k)| k.then_some(v))
        .collect()
}

fn known(v: &[i64]) -> Vec<Option<i64>> {
    v.iter().map(|&x| Some(x)).collect()
}

#[test]
fn a_dense_matrix_multiplies_rows_by_the_vector() {
    let mut n = Net::new("mv");
    let x = n.input_vector("x", 3);
    let m = n.dense("m", 3, 2);
    let y = n.mvm(m, x);
    n.output("y", y);
    let r = run(
        &n.0,
        vec![tensor(&[3], &[1, 0, -1])],
        vec![tensor(&[2, 3], &[1, 2, 3, 4, 5, 6])],
    );
    assert_eq!(values(&r, 0), known(&[-2, -2]));
    // Σ|w·x| of the rows: 1 + 3 and 4 + 6.
    assert_eq!(r.peak, 10);
}

/// A single-channel 3 × 3 image 1..9 under an all-ones kernel of `k` at `stride`.
fn ones_conv(kw: u32, kh: u32, stride: u32) -> Vec<Option<i64>> {
    let mut n = Net::new("c");
    let x = n.input_image("img", 3, 3, 1, 1);
    let k = n.conv_matrix("k", kw, kh, 1, 1, stride, 3, 3);
    let y = n.conv(k, x);
    n.output("y", y);
    let weights = tensor(
        &[kh as usize, kw as usize, 1, 1],
        &vec![1; (kw * kh) as usize],
    );
    let r = run(
        &n.0,
        vec![tensor(&[3, 3, 1], &[1, 2, 3, 4, 5, 6, 7, 8, 9])],
        vec![weights],
    );
    values(&r, 0)
}

#[test]
fn a_convolution_pads_half_its_kernel_on_every_side() {
    // Each output is the sum of the 3 × 3 neighbourhood, zeros outside.
    assert_eq!(
        ones_conv(3, 3, 1),
        known(&[12, 21, 16, 27, 45, 33, 24, 39, 28])
    );
    // Stride 2 keeps the outputs at even positions.
    assert_eq!(ones_conv(3, 3, 2), known(&[12, 16, 24, 28]));
    // A 2-wide kernel pads 1 on both sides: 4 outputs per row, windows [j-1, j].
    assert_eq!(
        ones_conv(2, 1, 1),
        known(&[1, 3, 5, 3, 4, 9, 11, 6, 7, 15, 17, 9])
    );
    // A 1 × 3 kernel (width 1, height 3) sums columns of three.
    assert_eq!(
        ones_conv(1, 3, 1),
        known(&[5, 7, 9, 12, 15, 18, 11, 13, 15])
    );
}

#[test]
fn conv_weights_are_kernel_row_kernel_column_out_in() {
    let mut n = Net::new("c");
    let x = n.input_image("img", 1, 1, 2, 1);
    let k = n.conv_matrix("k", 1, 1, 2, 2, 1, 1, 1);
    let y = n.conv(k, x);
    n.output("y", y);
    // [kh][kw][out][in] = [[1, 2], [3, 4]]: out 0 = 1·5 + 2·6, out 1 = 3·5 + 4·6.
    let r = run(
        &n.0,
        vec![tensor(&[1, 1, 2], &[5, 6])],
        vec![tensor(&[1, 1, 2, 2], &[1, 2, 3, 4])],
    );
    assert_eq!(values(&r, 0), known(&[17, 39]));
}

#[test]
fn max_pooling_cuts_the_last_window_at_the_edge() {
    let mut n = Net::new("p");
    let x = n.input_image("img", 3, 3, 1, 1);
    let k = n.conv_matrix("k", 1, 1, 1, 1, 1, 3, 3);
    let y = n.conv(k, x);
    let p = n.op(Op::MaxPool {
        hspan: 2,
        wspan: 2,
        x: y,
    });
    n.output("p", p);
    let r = run(
        &n.0,
        vec![tensor(&[3, 3, 1], &[1, -2, 3, 4, 5, -6, 7, 8, -9])],
        vec![tensor(&[1, 1, 1, 1], &[1])],
    );
    assert_eq!(values(&r, 0), known(&[5, 3, 8, -9]));
}

#[test]
fn element_wise_operations_and_scaling() {
    let mut n = Net::new("e");
    let x = n.input_vector("x", 3);
    let m = n.dense("m", 3, 3);
    let y = n.mvm(m, x);
    let a = n.op(Op::Add { a: x, b: y });
    let s = n.op(Op::Sub { a, b: x });
    let p = n.op(Op::Mul { a: s, b: x });
    let q = n.op(Op::Scale { factor: -3, x: p });
    let r = n.op(Op::Relu { x: q });
    for v in [a, s, p, q, r] {
        n.output(&format!("o{v}"), v);
    }
    // M is the identity times 2: y = 2x.
    let r = run(
        &n.0,
        vec![tensor(&[3], &[1, -2, 3])],
        vec![tensor(&[3, 3], &[2, 0, 0, 0, 2, 0, 0, 0, 2])],
    );
    assert_eq!(values(&r, 0), known(&[3, -6, 9]));
    assert_eq!(values(&r, 1), known(&[2, -4, 6]));
    assert_eq!(values(&r, 2), known(&[2, 8, 18]));
    assert_eq!(values(&r, 3), known(&[-6, -24, -54]));
    assert_eq!(values(&r, 4), known(&[0, 0, 0]));
}

#[test]
fn nonlinear_results_are_unknown_except_through_a_known_zero() {
    let mut n = Net::new("s");
    let x = n.input_vector("x", 2);
    let m = n.dense("m", 2, 2);
    let y = n.mvm(m, x);
    let s = n.op(Op::Sig { x: y });
    let t = n.op(Op::Tanh { x: y });
    let p = n.op(Op::Mul { a: s, b: x });
    let z = n.op(Op::Scale { factor: 0, x: t });
    let back = n.mvm(m, s);
    for v in [s, p, z, back] {
        n.output(&format!("o{v}"), v);
    }
    // x = [0, 5]: sig·x is known where x is 0; 0·tanh is known; M·sig is known only in the
    // row whose weight on the unknown element is zero... both rows use both, so unknown.
    let r = run(
        &n.0,
        vec![tensor(&[2], &[0, 5])],
        vec![tensor(&[2, 2], &[1, 0, 1, 1])],
    );
    assert_eq!(values(&r, 0), vec![None, None]);
    assert_eq!(values(&r, 1), vec![Some(0), None]);
    assert_eq!(values(&r, 2), known(&[0, 0]));
    // Row 0 of M is [1, 0]: it reads only sig(y)[0], still unknown.
    assert_eq!(values(&r, 3), vec![None, None]);
}

#[test]
fn a_strided_stream_carries_every_stride_th_pixel() {
    let strided = |k: u32| {
        let mut n = Net::new("st");
        let x = n.input_image("img", 3, 3, 1, 2);
        let m = n.conv_matrix("k", k, k, 1, 1, 2, 3, 3);
        let y = n.conv(m, x);
        n.output("y", y);
        // Stream pixels (0,0) (0,1) (1,0) (1,1) are image pixels (0,0) (0,2) (2,0) (2,2).
        let weights = tensor(&[k as usize, k as usize, 1, 1], &vec![3; (k * k) as usize]);
        let r = run(&n.0, vec![tensor(&[2, 2, 1], &[1, 2, 3, 4])], vec![weights]);
        values(&r, 0)
    };
    assert_eq!(strided(1), known(&[3, 6, 9, 12]));
    // A 3 × 3 kernel reads pixels the stream does not carry.
    assert_eq!(strided(3), vec![None; 4]);
}

#[test]
fn leaving_the_range_is_an_error_naming_the_value() {
    let mut n = Net::new("big");
    let x = n.input_vector("x", 2);
    let m = n.dense("m", 2, 1);
    let y = n.mvm(m, x);
    let p = n.op(Op::Mul { a: y, b: y });
    n.output("p", p);
    let data = NetworkData {
        inputs: vec![tensor(&[2], &[100, -100])],
        weights: vec![tensor(&[1, 2], &[100, 100])],
    };
    // The sum is 0, but its partial sums reach 10 000 each way; 0 · 0 is fine.
    let r = reference(&n.0, &data, NumericRange::PUMA_WORD).expect("in range");
    assert_eq!((values(&r, 0), r.peak), (known(&[0]), 20_000));
    // 300 · 100 and −100 · 100: a partial sum of 30 000 or −10 000, bounded by 40 000.
    let data = NetworkData {
        inputs: vec![tensor(&[2], &[300, -100])],
        weights: data.weights,
    };
    assert_eq!(
        reference(&n.0, &data, NumericRange::PUMA_WORD),
        Err(ReferenceError::OutOfRange {
            value: 1,
            op: "mvm",
            peak: 40_000,
            limit: 32_767
        })
    );
    let data = NetworkData {
        inputs: vec![tensor(&[2], &[40_000, 0])],
        weights: vec![tensor(&[1, 2], &[0, 0])],
    };
    assert_eq!(
        reference(&n.0, &data, NumericRange::PUMA_WORD),
        Err(ReferenceError::Data(DataError::Range {
            what: "input",
            name: "x".into(),
            index: 0,
            value: 40_000,
            limit: 32_767
        }))
    );
}

#[test]
fn data_of_the_wrong_shape_is_refused() {
    let mut n = Net::new("s");
    let x = n.input_vector("x", 2);
    let m = n.dense("m", 2, 1);
    n.mvm(m, x);
    let data = NetworkData {
        inputs: vec![arr1(&[1, 2, 3]).into_dyn()],
        weights: vec![tensor(&[1, 2], &[1, 1])],
    };
    assert_eq!(
        reference(&n.0, &data, NumericRange::PUMA_WORD),
        Err(ReferenceError::Data(DataError::Shape {
            what: "input",
            name: "x".into(),
            expected: vec![2],
            found: vec![3]
        }))
    );
}

/// One convolution as the PUMA API defines it, on int8-range data.
fn conv_case() -> impl Strategy<Value = (u32, u32, u32, u32, u32, u32, u32, u64)> {
    (
        1u32..=4,
        1u32..=4,
        1u32..=3,
        1u32..=3,
        1u32..=3,
        1u32..=3,
        1u32..=2,
        any::<u64>(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The reference's convolution is the oracle's conv2d with padding ⌊k/2⌋ on every side.
    #[test]
    fn convolution_agrees_with_the_oracle((w, h, kw, kh, cin, cout, stride, seed) in conv_case()) {
        use rand::{Rng, SeedableRng};
        let span = |n: u32, k: u32| n + 2 * (k / 2) - k;
        prop_assume!(span(w, kw) % stride == 0 && span(h, kh) % stride == 0);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut n = Net::new("c");
        let x = n.input_image("img", w, h, cin, 1);
        let k = n.conv_matrix("k", kw, kh, cin, cout, stride, w, h);
        let y = n.conv(k, x);
        n.output("y", y);
        let (w, h, kw, kh, cin, cout) = (w as usize, h as usize, kw as usize, kh as usize, cin as usize, cout as usize);
        let img: Vec<i8> = (0..h * w * cin).map(|_| rng.random_range(-5..=5)).collect();
        let wt: Vec<i8> = (0..kh * kw * cout * cin).map(|_| rng.random_range(-5..=5)).collect();
        let r = run(
            &n.0,
            vec![tensor(&[h, w, cin], &img.iter().map(|&v| v as i64).collect::<Vec<_>>())],
            vec![tensor(&[kh, kw, cout, cin], &wt.iter().map(|&v| v as i64).collect::<Vec<_>>())],
        );
        // The oracle: NCHW input, [K, C, kh, kw] weights, [top, left, bottom, right] padding.
        let input = Array4::from_shape_fn((1, cin, h, w), |(_, c, y, x)| img[(y * w + x) * cin + c]);
        let weight = Array4::from_shape_fn((cout, cin, kh, kw), |(o, c, i, j)| wt[((i * kw + j) * cout + o) * cin + c]);
        let p = Conv2d {
            in_channels: cin,
            out_channels: cout,
            kernel: [kh, kw],
            stride: [stride as usize; 2],
            padding: [kh / 2, kw / 2, kh / 2, kw / 2],
            dilation: [1, 1],
            groups: 1,
            bias: false,
            relu: false,
        };
        let want = conv2d_direct(input.view(), weight.view(), None, &p).expect("oracle");
        let got = &r.outputs[0].value;
        prop_assert_eq!(got.shape(), &[want.shape()[2], want.shape()[3], cout][..]);
        for ((_, o, y, x), &v) in want.indexed_iter() {
            prop_assert_eq!(got[[y, x, o]], v as i64);
        }
    }

    /// The reference's MVM is the oracle's.
    #[test]
    fn mvm_agrees_with_the_oracle(rows in 1usize..=140, cols in 1usize..=140, seed in any::<u64>()) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut n = Net::new("m");
        let x = n.input_vector("x", cols as u32);
        let m = n.dense("m", cols as u32, rows as u32);
        let y = n.mvm(m, x);
        n.output("y", y);
        let xs: Vec<i8> = (0..cols).map(|_| rng.random_range(-1..=1)).collect();
        let ws: Vec<i8> = (0..rows * cols).map(|_| rng.random_range(-2..=2)).collect();
        let r = run(
            &n.0,
            vec![tensor(&[cols], &xs.iter().map(|&v| v as i64).collect::<Vec<_>>())],
            vec![tensor(&[rows, cols], &ws.iter().map(|&v| v as i64).collect::<Vec<_>>())],
        );
        let input = Array2::from_shape_vec((1, cols), xs).expect("shape");
        let weight = Array2::from_shape_vec((rows, cols), ws).expect("shape");
        let p = Mvm { in_features: cols, out_features: rows, bias: false, relu: false };
        let want = mvm_direct(input.view(), weight.view(), None, &p).expect("oracle");
        let got: Vec<i64> = r.outputs[0].value.iter().copied().collect();
        let want: Vec<i64> = want.iter().map(|&v| v as i64).collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn stepping_without_the_tensors_a_value_reads_is_an_error() {
    use pimdiff::targets::puma::reference::Evaluator;
    let mut n = Net::new("s");
    let x = n.input_vector("x", 2);
    let m = n.dense("m", 2, 1);
    n.mvm(m, x);
    let mut eval = Evaluator::new(&n.0, NumericRange::PUMA_WORD).expect("valid");
    let no_weights = NetworkData {
        inputs: vec![tensor(&[2], &[1, 2])],
        weights: vec![],
    };
    eval.step(&no_weights).expect("the input is there");
    assert_eq!(
        eval.step(&no_weights),
        Err(ReferenceError::Data(DataError::Count {
            what: "matrices",
            expected: 1,
            found: 0
        }))
    );
    let data = NetworkData {
        inputs: no_weights.inputs,
        weights: vec![tensor(&[1, 2], &[3, 4])],
    };
    eval.step(&data).expect("now it is");
    assert_eq!(
        eval.value(1).map(|t| t.value.clone()),
        Some(tensor(&[1], &[11]))
    );
    assert_eq!(
        eval.step(&data),
        Err(ReferenceError::Data(DataError::Count {
            what: "values to evaluate",
            expected: 2,
            found: 3
        }))
    );
}
