//! The fast and the direct implementations agree, on values and on overflow.

mod common;

use ndarray::{Array1, Array2, Array4};
use pimdiff_oracle::conv::{conv2d_blocked, Blocking};
use pimdiff_oracle::{conv2d, conv2d_direct, mvm, mvm_direct, CaseSpec, Op, OracleError};
use proptest::prelude::*;

/// Bias values: usually small, sometimes at the edges of int32 so that overflow happens.
fn bias_value() -> impl Strategy<Value = i32> {
    prop_oneof![
        4 => -100_000i32..=100_000,
        1 => (i32::MAX - 300_000)..=i32::MAX,
        1 => i32::MIN..=(i32::MIN + 300_000),
    ]
}

/// Tensors for a spec: int8 values over the whole range (or only extremes, which stress the
/// exactness bound), and a bias.
fn with_tensors(spec: CaseSpec) -> impl Strategy<Value = (CaseSpec, Vec<i8>, Vec<i8>, Vec<i32>)> {
    let input_len: usize = spec.input_shape.iter().product();
    let weight_len: usize = spec.weight_shape().iter().product();
    let bias_len = spec.bias_len().unwrap_or(0);
    let value = prop_oneof![3 => any::<i8>(), 1 => prop_oneof![Just(-128i8), Just(127i8)]];
    (
        Just(spec),
        proptest::collection::vec(value.clone(), input_len),
        proptest::collection::vec(value, weight_len),
        proptest::collection::vec(bias_value(), bias_len),
    )
}

/// A result with the error reduced to what both implementations must agree on.
fn outcome<D: ndarray::Dimension>(
    r: Result<ndarray::Array<i32, D>, OracleError>,
) -> Result<Vec<i32>, (Vec<usize>, i64)> {
    match r {
        Ok(a) => Ok(a.iter().copied().collect()),
        Err(OracleError::Overflow { index, value }) => Err((index, value)),
        Err(e) => panic!("a valid spec was refused: {e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn conv2d_fast_equals_direct(
        (spec, x, w, b) in common::conv_spec().prop_flat_map(with_tensors),
        small_blocks in proptest::option::of((1usize..200, 1usize..20)),
        portable in any::<bool>(),
    ) {
        let Op::Conv2d(p) = spec.op else { unreachable!() };
        let s = &spec.input_shape;
        let input = Array4::from_shape_vec((s[0], s[1], s[2], s[3]), x).unwrap();
        let ws = spec.weight_shape();
        let weight = Array4::from_shape_vec((ws[0], ws[1], ws[2], ws[3]), w).unwrap();
        let bias = spec.bias_len().map(|_| Array1::from(b));
        let blocking = match small_blocks {
            Some((col_budget, r_chunk)) => Blocking { col_budget, r_chunk, portable },
            None => Blocking { portable, ..Blocking::DEFAULT },
        };
        let fast = conv2d_blocked(input.view(), weight.view(), bias.as_ref().map(|b| b.view()), &p, blocking);
        let direct = conv2d_direct(input.view(), weight.view(), bias.as_ref().map(|b| b.view()), &p);
        if let Ok(a) = &fast {
            prop_assert_eq!(a.shape(), &spec.output_shape()[..]);
        }
        prop_assert_eq!(outcome(fast), outcome(direct));
    }

    #[test]
    fn mvm_fast_equals_direct((spec, x, w, b) in common::mvm_spec().prop_flat_map(with_tensors)) {
        let Op::Mvm(p) = spec.op else { unreachable!() };
        let input = Array2::from_shape_vec((spec.input_shape[0], p.in_features), x).unwrap();
        let weight = Array2::from_shape_vec((p.out_features, p.in_features), w).unwrap();
        let bias = spec.bias_len().map(|_| Array1::from(b));
        let fast = mvm(input.view(), weight.view(), bias.as_ref().map(|b| b.view()), &p);
        let direct = mvm_direct(input.view(), weight.view(), bias.as_ref().map(|b| b.view()), &p);
        // The same weight stored transposed, as columns of a wider GEMM matrix `[in, out + 3]`
        // (the graph reference's slices of a fully connected layer), takes the column-block path.
        let mut gemm = Array2::<i8>::zeros((p.in_features, p.out_features + 3));
        gemm.slice_mut(ndarray::s![.., ..p.out_features]).assign(&weight.t());
        let columns = gemm.slice(ndarray::s![.., ..p.out_features]);
        let by_columns = mvm(input.view(), columns.t(), bias.as_ref().map(|b| b.view()), &p);
        let direct = outcome(direct);
        prop_assert_eq!(&outcome(by_columns), &direct);
        prop_assert_eq!(outcome(fast), direct);
    }

    /// Views with strides other than row-major (a transposed-back copy) give the same result.
    #[test]
    fn conv2d_accepts_any_layout((spec, x, w, b) in common::conv_spec().prop_flat_map(with_tensors)) {
        let Op::Conv2d(p) = spec.op else { unreachable!() };
        let s = &spec.input_shape;
        let input = Array4::from_shape_vec((s[0], s[1], s[2], s[3]), x).unwrap();
        let fortran = input.t().as_standard_layout().into_owned();
        let ws = spec.weight_shape();
        let weight = Array4::from_shape_vec((ws[0], ws[1], ws[2], ws[3]), w).unwrap();
        let bias = spec.bias_len().map(|_| Array1::from(b));
        let a = conv2d(input.view(), weight.view(), bias.as_ref().map(|b| b.view()), &p);
        let c = conv2d(fortran.t(), weight.view(), bias.as_ref().map(|b| b.view()), &p);
        prop_assert_eq!(outcome(a), outcome(c));
    }
}
