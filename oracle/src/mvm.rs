//! MVM (`y = W x + b` for each of `N` input rows), twice: [`mvm_direct`] (plain i64 loops)
//! and [`mvm`] (row dot products, or for a transposed weight — a GEMM matrix `[in, out]` —
//! rows of the matrix scaled and added per block of outputs; both in i16×i16→i32,
//! vectorized, on every rayon thread; exact for the reasons given in
//! the [`conv`](crate::conv) module docs: products of int8 values fit i16, and at most
//! 2^16 of them are summed in i32 before moving to i64).

use ndarray::{s, Array2, ArrayView1, ArrayView2, Axis};
use rayon::prelude::*;

use crate::case::{check_bias, check_shape, validate_operator, Mvm, Op};
use crate::conv::PARALLEL_MIN_MACS;
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
    let x = input.as_standard_layout();
    let x = x.as_slice().expect("standard layout");
    // A GEMM matrix `[in, out]` arrives transposed: multiply it as it lies, row by row,
    // instead of copying 37 M weights into the other order first.
    let wt = weight.t();
    let sums = match wt.strides()[1] {
        1 => by_columns(x, wt, len, outs),
        _ => {
            let w = weight.as_standard_layout();
            by_rows(x, w.as_slice().expect("standard layout"), len, outs)
        }
    };
    let mut out = Array2::<i32>::zeros((n_rows, outs));
    for ((n, o), slot) in out.indexed_iter_mut() {
        let sum = sums[n * outs + o] + bias.as_ref().map_or(0, |b| b[o] as i64);
        let v = i32::try_from(sum).map_err(|_| OracleError::Overflow {
            index: vec![n, o],
            value: sum,
        })?;
        *slot = if p.relu { v.max(0) } else { v };
    }
    Ok(out)
}

/// `Σ_i w[o, i] · x[n, i]` for a row-major `w` `[outs, len]`, row-major `[N, outs]`: one dot
/// product per output, on every rayon thread when the product is large.
fn by_rows(x: &[i8], w: &[i8], len: usize, outs: usize) -> Vec<i64> {
    let parallel = parallel(x.len(), outs);
    x.chunks(len.max(1))
        .flat_map(|xr| {
            let dot_row = |o: usize| {
                let wr = &w[o * len..(o + 1) * len];
                xr.chunks(R_CHUNK)
                    .zip(wr.chunks(R_CHUNK))
                    .map(|(xc, wc)| dot(xc, wc) as i64)
                    .sum::<i64>()
            };
            if parallel {
                (0..outs).into_par_iter().map(dot_row).collect::<Vec<i64>>()
            } else {
                (0..outs).map(dot_row).collect::<Vec<i64>>()
            }
        })
        .collect()
}

/// Whether `x` (all rows) times `outs` outputs is worth the pool: below
/// [`PARALLEL_MIN_MACS`] multiply-accumulates (every MVM of a hunt's cases) the work runs on the
/// calling thread, since waking the pool's threads for a few thousand products cost more than
/// the products (a tenth of a served tensor case's time went to the pool's spinning).
fn parallel(x_len: usize, outs: usize) -> bool {
    x_len as u64 * outs as u64 >= PARALLEL_MIN_MACS
}

/// Output columns of one task in [`by_columns`]: a 4 KiB i32 accumulator row stays in L1.
const COLUMN_BLOCK: usize = 1024;

/// The same sums for `wt` = `w` transposed, `[len, outs]` with contiguous rows (a GEMM
/// matrix or a slice of its columns): each task owns a block of output columns and adds
/// `x[n, i] · wt[i, block]` row after row (contiguous, vectorized), in i32 over at most
/// `R_CHUNK` rows, then in i64 (exact for the reasons in the module docs).
fn by_columns(x: &[i8], wt: ArrayView2<i8>, len: usize, outs: usize) -> Vec<i64> {
    let blocks: Vec<usize> = (0..outs).step_by(COLUMN_BLOCK).collect();
    let parallel = parallel(x.len(), outs);
    x.chunks(len.max(1))
        .flat_map(|xr| {
            let block_sums = |&o0: &usize| {
                let block = wt.slice(s![.., o0..(o0 + COLUMN_BLOCK).min(outs)]);
                let mut wide = vec![0i64; block.ncols()];
                let mut acc = vec![0i32; block.ncols()];
                for (xc, rows) in xr
                    .chunks(R_CHUNK)
                    .zip(block.axis_chunks_iter(Axis(0), R_CHUNK))
                {
                    acc.fill(0);
                    for (&xi, row) in xc.iter().zip(rows.rows()) {
                        axpy(&mut acc, xi, row.as_slice().expect("contiguous rows"));
                    }
                    wide.iter_mut().zip(&acc).for_each(|(s, &a)| *s += a as i64);
                }
                wide
            };
            if parallel {
                blocks
                    .par_iter()
                    .flat_map_iter(block_sums)
                    .collect::<Vec<i64>>()
            } else {
                blocks.iter().flat_map(block_sums).collect::<Vec<i64>>()
            }
        })
        .collect()
}

/// `acc[j] += a · w[j]`, each product exact in i16.
fn axpy(acc: &mut [i32], a: i8, w: &[i8]) {
    let a = a as i16;
    for (s, &b) in acc.iter_mut().zip(w) {
        *s = s.wrapping_add(a.wrapping_mul(b as i16) as i32);
    }
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
