//! conv2d, twice: [`conv2d_direct`] (the definition as plain loops) and [`conv2d`] (im2col
//! and an exact integer matrix product; what the harness uses). They share only argument
//! validation; proptest checks that they agree.
//!
//! # Exactness of the fast path
//!
//! Every product of an int8 input and an int8 weight lies in `[-16256, 16384]`
//! (`-128·-128 = 16384` is the largest magnitude), so it is exact in i16 and its
//! sign-extension to i32 is exact. Products are summed in i32 over at most
//! `R_CHUNK` = 2^16 terms, so a partial sum's magnitude is at most `2^14 · 2^16 = 2^30 <
//! 2^31`: no i32 overflow. Partial sums of longer reductions are added in i64, whose range
//! (2^63) exceeds `2^14 · MAX_WEIGHT_ELEMENTS = 2^38` by far. The bias is added in i64 and the
//! result checked against the int32 range before ReLU. So the fast path computes the exact
//! mathematical value, the same as the i64 direct loop.

use ndarray::{Array4, ArrayView1, ArrayView4};

use crate::case::{check_bias, check_shape, validate_operator, Conv2d, Op};
use crate::error::{CaseError, OracleError, WEIGHT_NPY};

/// Reduction length summed in i32 before moving to i64 (see the module docs for the bound).
const R_CHUNK: usize = 1 << 16;

/// Output channels computed together: each im2col element loaded feeds this many
/// multiply-adds.
const K_BLOCK: usize = 4;

/// Target size (elements) of one im2col block: about 512 KiB of i16, so a block stays in L2
/// while every output channel of the group sweeps over it.
const COL_BUDGET: usize = 1 << 18;

/// The exact int32 conv2d of an NCHW int8 `input` with `weight` `[K, C/groups, kh, kw]`,
/// plus `bias` (when `p.bias`), then ReLU (when `p.relu`). Output `[N, K, OH, OW]`.
///
/// Fast path: im2col in blocks of output pixels, and an i16×i16→i32 product that the
/// compiler vectorizes (exact: see the module docs). Single-threaded.
///
/// Errors: [`OracleError::Invalid`] when `p` is invalid or a shape disagrees with it (the
/// same checks as [`CaseSpec::validate`](crate::CaseSpec::validate), including the limits);
/// [`OracleError::Overflow`] with the first output index (row-major) whose value before
/// ReLU does not fit int32.
pub fn conv2d(
    input: ArrayView4<i8>,
    weight: ArrayView4<i8>,
    bias: Option<ArrayView1<i32>>,
    p: &Conv2d,
) -> Result<Array4<i32>, OracleError> {
    conv2d_blocked(input, weight, bias, p, Blocking::DEFAULT)
}

/// Block sizes of the fast path. Only tests change them: small blocks make small shapes
/// cross every block boundary (pixel blocks, reduction chunks) that real layers cross.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Blocking {
    /// Target im2col block size in elements (at least 8 output pixels are taken anyway).
    pub col_budget: usize,
    /// Reduction terms summed in i32 before moving to i64; clamped to `1..=R_CHUNK`, the
    /// exactness bound.
    pub r_chunk: usize,
}

impl Blocking {
    #[doc(hidden)]
    pub const DEFAULT: Blocking = Blocking {
        col_budget: COL_BUDGET,
        r_chunk: R_CHUNK,
    };
}

/// [`conv2d`] with explicit block sizes (for tests).
#[doc(hidden)]
pub fn conv2d_blocked(
    input: ArrayView4<i8>,
    weight: ArrayView4<i8>,
    bias: Option<ArrayView1<i32>>,
    p: &Conv2d,
    blocking: Blocking,
) -> Result<Array4<i32>, OracleError> {
    let r_chunk = blocking.r_chunk.clamp(1, R_CHUNK);
    let g = Geometry::new(&input, &weight, bias.as_ref(), p)?;
    let x: Vec<i8> = input.iter().copied().collect();
    let w: Vec<i16> = weight.iter().map(|&v| v as i16).collect();
    let b: Vec<i64> = match &bias {
        Some(b) => b.iter().map(|&v| v as i64).collect(),
        None => vec![0; g.k],
    };
    let mut out = vec![0i32; g.n * g.k * g.oh * g.ow];
    let mut first_overflow: Option<(usize, i64)> = None;

    let r_len = g.cg * g.kh * g.kw;
    let pixels = g.oh * g.ow;
    let block = (blocking.col_budget / r_len).clamp(8, pixels.max(8)) & !7;
    let block = block.min(pixels);
    let mut col = vec![0i16; r_len * block];
    let mut acc = vec![0i32; K_BLOCK * block];
    let mut wide = vec![0i64; K_BLOCK * block];
    let mut base_h = vec![0isize; block];
    let mut base_w = vec![0isize; block];

    for n in 0..g.n {
        for grp in 0..g.groups {
            for p0 in (0..pixels).step_by(block) {
                let pb = block.min(pixels - p0);
                g.im2col(
                    &x,
                    n,
                    grp,
                    p0,
                    pb,
                    &mut col[..r_len * pb],
                    &mut base_h,
                    &mut base_w,
                );
                for k0 in (0..g.kg).step_by(K_BLOCK) {
                    let kb = K_BLOCK.min(g.kg - k0);
                    let k_abs = grp * g.kg + k0;
                    let rows = &w[k_abs * r_len..(k_abs + kb) * r_len];
                    let single_chunk = r_len <= r_chunk;
                    if !single_chunk {
                        wide[..kb * pb].fill(0);
                    }
                    for r0 in (0..r_len).step_by(r_chunk) {
                        let r1 = (r0 + r_chunk).min(r_len);
                        let acc = &mut acc[..kb * pb];
                        acc.fill(0);
                        let g = Gemm {
                            rows,
                            r_len,
                            r: r0..r1,
                            col: &col[..r_len * pb],
                            pb,
                            kb,
                        };
                        gemm_block(&g, acc);
                        if !single_chunk {
                            for (wd, &a) in wide[..kb * pb].iter_mut().zip(acc.iter()) {
                                *wd += a as i64;
                            }
                        }
                    }
                    for kk in 0..kb {
                        let k = k_abs + kk;
                        let row_out = ((n * g.k + k) * pixels) + p0;
                        for q in 0..pb {
                            let sum = if single_chunk {
                                acc[kk * pb + q] as i64
                            } else {
                                wide[kk * pb + q]
                            };
                            let value = sum + b[k];
                            let flat = row_out + q;
                            match i32::try_from(value) {
                                Ok(v) => out[flat] = if p.relu { v.max(0) } else { v },
                                Err(_) => match first_overflow {
                                    Some((f, _)) if f < flat => {}
                                    _ => first_overflow = Some((flat, value)),
                                },
                            }
                        }
                    }
                }
            }
        }
    }
    if let Some((flat, value)) = first_overflow {
        let ow = flat % g.ow;
        let oh = (flat / g.ow) % g.oh;
        let k = (flat / pixels) % g.k;
        let n = flat / (pixels * g.k);
        return Err(OracleError::Overflow {
            index: vec![n, k, oh, ow],
            value,
        });
    }
    Array4::from_shape_vec((g.n, g.k, g.oh, g.ow), out)
        .map_err(|e| OracleError::Internal(format!("conv2d output buffer: {e}")))
}

/// The same operator as [`conv2d`], computed as its definition: for every output element, a
/// sum over channels and kernel positions in i64, skipping positions in the padding. Slow;
/// it is the independent check of the fast path.
pub fn conv2d_direct(
    input: ArrayView4<i8>,
    weight: ArrayView4<i8>,
    bias: Option<ArrayView1<i32>>,
    p: &Conv2d,
) -> Result<Array4<i32>, OracleError> {
    let g = Geometry::new(&input, &weight, bias.as_ref(), p)?;
    let mut out = Array4::<i32>::zeros((g.n, g.k, g.oh, g.ow));
    for n in 0..g.n {
        for k in 0..g.k {
            let grp = k / g.kg;
            for oh in 0..g.oh {
                for ow in 0..g.ow {
                    let mut sum: i64 = 0;
                    for c in 0..g.cg {
                        for i in 0..g.kh {
                            // Row in the unpadded input; out of range means padding (zero).
                            let ih = (oh * g.sh + i * g.dh) as isize - g.pt as isize;
                            if ih < 0 || ih >= g.h as isize {
                                continue;
                            }
                            for j in 0..g.kw {
                                let iw = (ow * g.sw + j * g.dw) as isize - g.pl as isize;
                                if iw < 0 || iw >= g.w as isize {
                                    continue;
                                }
                                let xv =
                                    input[[n, grp * g.cg + c, ih as usize, iw as usize]] as i64;
                                let wv = weight[[k, c, i, j]] as i64;
                                sum += xv * wv;
                            }
                        }
                    }
                    if let Some(b) = &bias {
                        sum += b[k] as i64;
                    }
                    let v = i32::try_from(sum).map_err(|_| OracleError::Overflow {
                        index: vec![n, k, oh, ow],
                        value: sum,
                    })?;
                    out[[n, k, oh, ow]] = if p.relu { v.max(0) } else { v };
                }
            }
        }
    }
    Ok(out)
}

/// Every size of one conv2d, checked.
struct Geometry {
    n: usize,
    h: usize,
    w: usize,
    k: usize,
    groups: usize,
    /// Input channels per group.
    cg: usize,
    /// Output channels per group.
    kg: usize,
    kh: usize,
    kw: usize,
    sh: usize,
    sw: usize,
    dh: usize,
    dw: usize,
    pt: usize,
    pl: usize,
    oh: usize,
    ow: usize,
}

impl Geometry {
    fn new(
        input: &ArrayView4<i8>,
        weight: &ArrayView4<i8>,
        bias: Option<&ArrayView1<i32>>,
        p: &Conv2d,
    ) -> Result<Geometry, CaseError> {
        let shape = input.shape();
        validate_operator(&Op::Conv2d(*p), shape)?;
        check_shape(WEIGHT_NPY, &p.weight_shape(), weight.shape())?;
        check_bias(p.bias.then_some(p.out_channels), bias.map(|b| b.shape()))?;
        let (h, w) = (shape[2], shape[3]);
        // `validate_operator` has checked that the output is at least 1×1.
        let (oh, ow) = p.output_hw(h, w).ok_or(CaseError::EmptyOutput {
            axis: "height",
            padded: 0,
            window: 0,
        })?;
        Ok(Geometry {
            n: shape[0],
            h,
            w,
            k: p.out_channels,
            groups: p.groups,
            cg: p.in_channels / p.groups,
            kg: p.out_channels / p.groups,
            kh: p.kernel[0],
            kw: p.kernel[1],
            sh: p.stride[0],
            sw: p.stride[1],
            dh: p.dilation[0],
            dw: p.dilation[1],
            pt: p.padding[0],
            pl: p.padding[1],
            oh,
            ow,
        })
    }

    /// Fills `col[r·pb + q]` with the input value that kernel tap `r = (c, i, j)` of group
    /// `grp` sees at output pixel `p0 + q` of image `n` (0 in the padding).
    #[allow(clippy::too_many_arguments)]
    fn im2col(
        &self,
        x: &[i8],
        n: usize,
        grp: usize,
        p0: usize,
        pb: usize,
        col: &mut [i16],
        base_h: &mut [isize],
        base_w: &mut [isize],
    ) {
        for q in 0..pb {
            let (oh, ow) = ((p0 + q) / self.ow, (p0 + q) % self.ow);
            base_h[q] = (oh * self.sh) as isize - self.pt as isize;
            base_w[q] = (ow * self.sw) as isize - self.pl as isize;
        }
        let (base_h, base_w) = (&base_h[..pb], &base_w[..pb]);
        let plane = self.h * self.w;
        let mut r = 0;
        for c in 0..self.cg {
            let channel = (n * self.groups * self.cg + grp * self.cg + c) * plane;
            let image = &x[channel..channel + plane];
            for i in 0..self.kh {
                for j in 0..self.kw {
                    let row = &mut col[r * pb..(r + 1) * pb];
                    let (di, dj) = ((i * self.dh) as isize, (j * self.dw) as isize);
                    for q in 0..pb {
                        let ih = base_h[q] + di;
                        let iw = base_w[q] + dj;
                        // A negative coordinate becomes huge as usize, so one unsigned
                        // comparison per axis tests both ends.
                        row[q] = if (ih as usize) < self.h && (iw as usize) < self.w {
                            image[ih as usize * self.w + iw as usize] as i16
                        } else {
                            0
                        };
                    }
                    r += 1;
                }
            }
        }
    }
}

/// One call of the inner product: `acc[kk·pb + q] += Σ_{r in r} rows[kk·r_len + r] ·
/// col[r·pb + q]` for `kk < kb`.
struct Gemm<'a> {
    /// `kb` weight rows of `r_len` taps each.
    rows: &'a [i16],
    r_len: usize,
    /// The taps summed by this call: at most `R_CHUNK` of them.
    r: std::ops::Range<usize>,
    /// The im2col block: `r_len` rows of `pb` pixels.
    col: &'a [i16],
    pb: usize,
    kb: usize,
}

/// Runs `g` into `acc` (`kb` rows of `pb`). The i16 products are exact (|product| ≤ 2^14)
/// and the i32 sums are exact for at most `R_CHUNK` terms (module docs). Runs the AVX2 build
/// of the same code when the CPU has it: the portable build only gets SSE2, which has no
/// 32-bit vector multiply (measured: 12 ms with AVX2, 56 ms without, on the benchmark layer).
fn gemm_block(g: &Gemm, acc: &mut [i32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            unsafe { gemm_block_avx2(g, acc) };
            return;
        }
    }
    gemm_block_portable(g, acc)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gemm_block_avx2(g: &Gemm, acc: &mut [i32]) {
    gemm_block_portable(g, acc)
}

#[inline(always)]
fn gemm_block_portable(g: &Gemm, acc: &mut [i32]) {
    let Gemm {
        rows,
        r_len,
        ref r,
        col,
        pb,
        kb,
    } = *g;
    if kb == K_BLOCK {
        let (a0, rest) = acc.split_at_mut(pb);
        let (a1, rest) = rest.split_at_mut(pb);
        let (a2, a3) = rest.split_at_mut(pb);
        let a3 = &mut a3[..pb];
        for r in r.clone() {
            let c = &col[r * pb..(r + 1) * pb];
            let (w0, w1, w2, w3) = (
                rows[r],
                rows[r_len + r],
                rows[2 * r_len + r],
                rows[3 * r_len + r],
            );
            for q in 0..pb {
                let v = c[q];
                // Exact in i16: |w·v| ≤ 2^14 (module docs); wrapping_mul never wraps here and
                // keeps debug builds free of overflow checks in the hot loop.
                // The i32 sums cannot overflow either (module docs); wrapping_add says so.
                a0[q] = a0[q].wrapping_add(w0.wrapping_mul(v) as i32);
                a1[q] = a1[q].wrapping_add(w1.wrapping_mul(v) as i32);
                a2[q] = a2[q].wrapping_add(w2.wrapping_mul(v) as i32);
                a3[q] = a3[q].wrapping_add(w3.wrapping_mul(v) as i32);
            }
        }
    } else {
        for kk in 0..kb {
            let a = &mut acc[kk * pb..(kk + 1) * pb];
            let wrow = &rows[kk * r_len..(kk + 1) * r_len];
            for r in r.clone() {
                let c = &col[r * pb..(r + 1) * pb];
                let wv = wrow[r];
                for q in 0..pb {
                    a[q] = a[q].wrapping_add(wv.wrapping_mul(c[q]) as i32);
                }
            }
        }
    }
}
