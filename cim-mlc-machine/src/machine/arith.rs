//! The tensor arithmetic of the meta-operators, on exact integers: convolution and pooling
//! over feature maps in the buffer's channel-fastest order, element-wise ALU operations with
//! ONNX broadcasting, transposition. Pure functions; the machine reads and writes the buffer
//! around them. Every overflow is an error, never a wrap.

use super::fault::FaultKind;
use super::weights::Placed;
use crate::flow::{AluOp, PoolKind};

/// `[N, C, H, W]`.
pub(crate) type Shape4 = [usize; 4];

fn hwc(s: &Shape4, n: usize, c: usize, h: usize, w: usize) -> usize {
    ((n * s[2] + h) * s[3] + w) * s[1] + c
}

/// Output extent of a window sliding over `len` padded by `before + after` (floor, as torch
/// and ONNX's default `ceil_mode = 0`); `None` when the window does not fit once.
pub(crate) fn out_extent(
    len: usize,
    before: usize,
    after: usize,
    k: usize,
    s: usize,
) -> Option<usize> {
    let padded = len.checked_add(before)?.checked_add(after)?;
    (padded >= k && s > 0).then(|| (padded - k) / s + 1)
}

/// Padding in the order top, bottom, left, right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pads {
    pub top: usize,
    pub bottom: usize,
    pub left: usize,
    pub right: usize,
}

/// A convolution with the dense kernel of `w` over an `input` in channel-fastest order.
pub(crate) fn conv2d(
    input: &[i64],
    s: Shape4,
    w: &Placed,
    stride: (usize, usize),
    pads: Pads,
) -> Result<(Vec<i64>, Shape4), FaultKind> {
    let Placed::Conv {
        oc, cin, kh, kw, ..
    } = *w
    else {
        return Err(FaultKind::BadOperand {
            what: "a convolution with a matrix's weights".into(),
        });
    };
    let oh = out_extent(s[2], pads.top, pads.bottom, kh, stride.0);
    let ow = out_extent(s[3], pads.left, pads.right, kw, stride.1);
    let (Some(oh), Some(ow)) = (oh, ow) else {
        return Err(FaultKind::BadOperand {
            what: format!("a {kh}x{kw} kernel does not fit the padded input {s:?}"),
        });
    };
    let os = [s[0], oc, oh, ow];
    let mut out = vec![0i64; s[0] * oc * oh * ow];
    let mut window = vec![0i64; kh * kw * cin];
    for n in 0..s[0] {
        for y in 0..oh {
            for x in 0..ow {
                // The window, row (kh, kw, c) as the crossbars hold the weights; zeros outside.
                for i in 0..kh {
                    for j in 0..kw {
                        let iy = (y * stride.0 + i)
                            .checked_sub(pads.top)
                            .filter(|v| *v < s[2]);
                        let ix = (x * stride.1 + j)
                            .checked_sub(pads.left)
                            .filter(|v| *v < s[3]);
                        for c in 0..cin {
                            window[(i * kw + j) * cin + c] = match (iy, ix) {
                                (Some(iy), Some(ix)) => input[hwc(&s, n, c, iy, ix)],
                                _ => 0,
                            };
                        }
                    }
                }
                let values = w.multiply(&window, 0, 0..oc).ok_or(FaultKind::Overflow)?;
                let base = hwc(&os, n, 0, y, x);
                out[base..base + oc].copy_from_slice(&values);
            }
        }
    }
    Ok((out, os))
}

/// Max or average pooling over an `input` in channel-fastest order; pads are ignored cells
/// (an average divides by the cells inside the input, ONNX's `count_include_pad = 0`).
pub(crate) fn pool(
    kind: PoolKind,
    input: &[i64],
    s: Shape4,
    k: (usize, usize),
    stride: (usize, usize),
    pads: Pads,
) -> Result<(Vec<i64>, Shape4), FaultKind> {
    let oh = out_extent(s[2], pads.top, pads.bottom, k.0, stride.0);
    let ow = out_extent(s[3], pads.left, pads.right, k.1, stride.1);
    let (Some(oh), Some(ow)) = (oh, ow) else {
        return Err(FaultKind::BadOperand {
            what: format!(
                "a {}x{} window does not fit the padded input {s:?}",
                k.0, k.1
            ),
        });
    };
    let os = [s[0], s[1], oh, ow];
    let mut out = vec![0i64; s[0] * s[1] * oh * ow];
    let mut cells = Vec::new();
    for n in 0..s[0] {
        for y in 0..oh {
            for x in 0..ow {
                for c in 0..s[1] {
                    cells.clear();
                    for i in 0..k.0 {
                        for j in 0..k.1 {
                            let iy = (y * stride.0 + i)
                                .checked_sub(pads.top)
                                .filter(|v| *v < s[2]);
                            let ix = (x * stride.1 + j)
                                .checked_sub(pads.left)
                                .filter(|v| *v < s[3]);
                            if let (Some(iy), Some(ix)) = (iy, ix) {
                                cells.push(input[hwc(&s, n, c, iy, ix)]);
                            }
                        }
                    }
                    out[hwc(&os, n, c, y, x)] = reduce_window(kind, &cells)?;
                }
            }
        }
    }
    Ok((out, os))
}

fn reduce_window(kind: PoolKind, cells: &[i64]) -> Result<i64, FaultKind> {
    let Some(&first) = cells.first() else {
        return Err(FaultKind::BadOperand {
            what: "a pooling window that covers only padding".into(),
        });
    };
    match kind {
        PoolKind::Max => Ok(cells.iter().copied().fold(first, i64::max)),
        PoolKind::Average => {
            let sum = cells
                .iter()
                .try_fold(0i64, |a, &v| a.checked_add(v))
                .ok_or(FaultKind::Overflow)?;
            let n = cells.len() as i64;
            if sum % n != 0 {
                return Err(FaultKind::Inexact {
                    what: format!("the average {sum}/{n}"),
                });
            }
            Ok(sum / n)
        }
    }
}

/// One element-wise ALU operation.
pub(crate) fn alu(op: AluOp, a: i64, b: i64) -> Result<i64, FaultKind> {
    match op {
        AluOp::Add => a.checked_add(b).ok_or(FaultKind::Overflow),
        AluOp::Sub => a.checked_sub(b).ok_or(FaultKind::Overflow),
        AluOp::Mul => a.checked_mul(b).ok_or(FaultKind::Overflow),
        AluOp::Equal => Ok(i64::from(a == b)),
        AluOp::Div => {
            if b == 0 {
                return Err(FaultKind::DivideByZero);
            }
            if a.checked_rem(b).ok_or(FaultKind::Overflow)? != 0 {
                return Err(FaultKind::Inexact {
                    what: format!("the quotient {a}/{b}"),
                });
            }
            a.checked_div(b).ok_or(FaultKind::Overflow)
        }
        AluOp::Pow => {
            if b < 0 {
                return match a {
                    1 => Ok(1),
                    -1 => Ok(if b % 2 == 0 { 1 } else { -1 }),
                    0 => Err(FaultKind::DivideByZero),
                    _ => Err(FaultKind::Inexact {
                        what: format!("the power {a}^{b}"),
                    }),
                };
            }
            let e = u32::try_from(b).map_err(|_| FaultKind::Overflow)?;
            a.checked_pow(e).ok_or(FaultKind::Overflow)
        }
    }
}

/// ONNX's (numpy's) broadcast of two shapes.
pub(crate) fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let dim = |s: &[usize], i: usize| {
        let k = rank - s.len();
        if i < k {
            1
        } else {
            s[i - k]
        }
    };
    (0..rank)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// The element of `values` (row-major over `shape`) that broadcasts to index `flat` of `out`.
fn broadcast_index(shape: &[usize], out: &[usize], mut flat: usize) -> usize {
    let k = out.len() - shape.len();
    let mut idx = 0;
    let mut stride = 1;
    for i in (0..out.len()).rev() {
        let coord = flat % out[i];
        flat /= out[i];
        if i >= k {
            let d = shape[i - k];
            if d != 1 {
                idx += coord * stride;
            }
            stride *= d;
        }
    }
    idx
}

/// `op` on two tensors in ONNX's order, broadcast to `out`.
pub(crate) fn alu_broadcast(
    op: AluOp,
    a: (&[i64], &[usize]),
    b: (&[i64], &[usize]),
    out: &[usize],
) -> Result<Vec<i64>, FaultKind> {
    let n: usize = out.iter().product();
    (0..n)
        .map(|i| {
            let x = a.0[broadcast_index(a.1, out, i)];
            let y = b.0[broadcast_index(b.1, out, i)];
            alu(op, x, y)
        })
        .collect()
}

/// ONNX's Transpose of `values` (row-major over `shape`) by `perm`.
pub(crate) fn transpose(values: &[i64], shape: &[usize], perm: &[usize]) -> (Vec<i64>, Vec<usize>) {
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let mut strides = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    let n = values.len();
    let mut out = Vec::with_capacity(n);
    for mut flat in 0..n {
        let mut src = 0;
        for i in (0..out_shape.len()).rev() {
            let coord = flat % out_shape[i];
            flat /= out_shape[i];
            src += coord * strides[perm[i]];
        }
        out.push(values[src]);
    }
    (out, out_shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Tensor;

    #[test]
    fn pooling_and_its_faults() {
        // One channel, 2x3: 1 2 3 / 4 5 6; 2x2 max, stride 1.
        let s = [1, 1, 2, 3];
        let pads = Pads {
            top: 0,
            bottom: 0,
            left: 0,
            right: 0,
        };
        let (out, os) = pool(PoolKind::Max, &[1, 2, 3, 4, 5, 6], s, (2, 2), (1, 1), pads).unwrap();
        assert_eq!((out, os), (vec![5, 6], [1, 1, 1, 2]));
        let e = pool(
            PoolKind::Average,
            &[1, 2, 3, 4, 5, 7],
            s,
            (2, 2),
            (1, 1),
            pads,
        )
        .unwrap_err();
        assert_eq!(
            e,
            FaultKind::Inexact {
                what: "the average 17/4".into()
            }
        );
        let (avg, _) = pool(
            PoolKind::Average,
            &[1, 2, 3, 4, 5, 6],
            s,
            (2, 2),
            (1, 1),
            pads,
        )
        .unwrap();
        assert_eq!(avg, vec![3, 4]);
    }

    #[test]
    fn convolution_of_a_single_pixel_kernel() {
        let w = Placed::conv(&Tensor::new(vec![1, 2, 1, 1], vec![2, 3]).unwrap(), 2, None).unwrap();
        // [1, 2, 1, 2] channel-fastest: (c0, c1) at w0 = (1, 10), at w1 = (2, 20).
        let pads = Pads {
            top: 0,
            bottom: 0,
            left: 1,
            right: 0,
        };
        let (out, os) = conv2d(&[1, 10, 2, 20], [1, 2, 1, 2], &w, (1, 1), pads).unwrap();
        assert_eq!((out, os), (vec![0, 32, 64], [1, 1, 1, 3]));
    }

    #[test]
    fn alu_is_exact() {
        assert_eq!(
            alu(AluOp::Div, 7, 2),
            Err(FaultKind::Inexact {
                what: "the quotient 7/2".into()
            })
        );
        assert_eq!(alu(AluOp::Div, -8, 2), Ok(-4));
        assert_eq!(alu(AluOp::Add, i64::MAX, 1), Err(FaultKind::Overflow));
        assert_eq!(alu(AluOp::Pow, -2, 3), Ok(-8));
        assert_eq!(alu(AluOp::Equal, 3, 3), Ok(1));
        assert_eq!(
            broadcast_shape(&[1, 4, 2, 2], &[4, 1, 1]),
            Some(vec![1, 4, 2, 2])
        );
        assert_eq!(broadcast_shape(&[1, 4, 2, 2], &[4]), None);
        let out = alu_broadcast(
            AluOp::Add,
            (&[1, 2, 3, 4], &[2, 2]),
            (&[10, 20], &[2, 1]),
            &[2, 2],
        );
        assert_eq!(out, Ok(vec![11, 12, 23, 24]));
        assert_eq!(
            transpose(&[1, 2, 3, 4, 5, 6], &[2, 3], &[1, 0]).0,
            vec![1, 4, 2, 5, 3, 6]
        );
    }
}
