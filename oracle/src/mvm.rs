//! MVM (`y = W x + b` for each of `N` input rows), twice: [`mvm_direct`] (plain i64 loops)
//! and [`mvm`] (row dot products in i16×i16→i32, vectorized; exact for the reasons given in
//! the [`conv`](crate::conv) module docs: products of int8 values fit i16, and at most
//! 2^16 of them are summed in i32 before moving to i64).

use ndarray::{Array2, ArrayView1, ArrayView2};
use rayon::prelude::*;

use crate::case::{check_bias, check_shape, validate_operator, Mvm, Op};
use crate::error::{CaseError, OracleError, WEIGHT_NPY};

/// Reduction length summed in i32 before moving to i64 (`2^14 · 2^16 = 2^30 < 2^31`).
const R_CHUNK: usize = 1 << 16;

/// The exact int32 MVM: `out[n, o] = Σ_i weight[o, i] · input[n, i] + bias[o]`, then ReLU
/// when `p.relu`. `input` is `[N, in_features]`, `weight` `[out_features, in_features]`,
/// output `[N, out_features]`.
///
/// Errors as for [`conv2d`](crate::conv2d): [`OracleError::Invalid`] for bad parameters or
/// shapes, [`OracleError::Overflow`] with the first `[n, o]` whose value before ReLU does not
/// fit int32.
pub fn mvm(
    input: ArrayView2<i8>,
    weight: ArrayView2<i8>,
    bias: Option<ArrayView1<i32>>,
    p: &Mvm,
) -> Result<Array2<i32>, OracleError> {
    let (n_rows, len, outs) = check(&input, &weight, bias.as_ref(), p)?;
    // Row-major copies only when the views are not already (a GEMM matrix arrives transposed).
    let x = input.as_standard_layout();
    let w = weight.as_standard_layout();
    let (x, w) = (
        x.as_slice().expect("standard layout"),
        w.as_slice().expect("standard layout"),
    );
    let mut out = Array2::<i32>::zeros((n_rows, outs));
    for n in 0..n_rows {
        let xr = &x[n * len..(n + 1) * len];
        // One output per task, on every rayon thread: a 9216 × 4096 layer is 37 M products.
        let row: Vec<Result<i32, OracleError>> = (0..outs)
            .into_par_iter()
            .map(|o| {
                let wr = &w[o * len..(o + 1) * len];
                let mut sum: i64 = bias.as_ref().map_or(0, |b| b[o] as i64);
                for (xc, wc) in xr.chunks(R_CHUNK).zip(wr.chunks(R_CHUNK)) {
                    sum += dot(xc, wc) as i64;
                }
                let v = i32::try_from(sum).map_err(|_| OracleError::Overflow {
                    index: vec![n, o],
                    value: sum,
                })?;
                Ok(if p.relu { v.max(0) } else { v })
            })
            .collect();
        for (o, v) in row.into_iter().enumerate() {
            out[[n, o]] = v?;
        }
    }
    Ok(out)
}

/// The same operator as [`mvm`], as plain i64 loops over the arrays: the independent check.
pub fn mvm_direct(
    input: ArrayView2<i8>,
    weight: ArrayView2<i8>,
    bias: Option<ArrayView1<i32>>,
    p: &Mvm,
) -> Result<Array2<i32>, OracleError> {
    let (n_rows, len, outs) = check(&input, &weight, bias.as_ref(), p)?;
    let mut out = Array2::<i32>::zeros((n_rows, outs));
    for n in 0..n_rows {
        for o in 0..outs {
            let mut sum: i64 = 0;
            for i in 0..len {
                sum += weight[[o, i]] as i64 * input[[n, i]] as i64;
            }
            if let Some(b) = &bias {
                sum += b[o] as i64;
            }
            let v = i32::try_from(sum).map_err(|_| OracleError::Overflow {
                index: vec![n, o],
                value: sum,
            })?;
            out[[n, o]] = if p.relu { v.max(0) } else { v };
        }
    }
    Ok(out)
}

/// `(N, in_features, out_features)` after checking the parameters and every shape.
fn check(
    input: &ArrayView2<i8>,
    weight: &ArrayView2<i8>,
    bias: Option<&ArrayView1<i32>>,
    p: &Mvm,
) -> Result<(usize, usize, usize), CaseError> {
    validate_operator(&Op::Mvm(*p), input.shape())?;
    check_shape(WEIGHT_NPY, &[p.out_features, p.in_features], weight.shape())?;
    check_bias(p.bias.then_some(p.out_features), bias.map(|b| b.shape()))?;
    Ok((input.nrows(), p.in_features, p.out_features))
}

/// `Σ x[i]·w[i]` for at most `R_CHUNK` terms: exact in i32 (products of int8 values fit i16).
fn dot(x: &[i8], w: &[i8]) -> i32 {
    x.iter().zip(w).fold(0i32, |s, (&a, &b)| {
        s.wrapping_add((a as i16).wrapping_mul(b as i16) as i32)
    })
}
