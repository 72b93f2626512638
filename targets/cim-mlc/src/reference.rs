//! The exact reference: every node's output of a network on its data, in `i64`, by ONNX's
//! definition of each operator (NCHW, batch 1), written here from the definitions and sharing
//! nothing with the machine that runs CIM-MLC's flows.
//!
//! Every value is an integer and every operation is checked: a value that would leave `i64`
//! is an error (`Overflow`), never a wrapped number, so the reference is either exact or says
//! it cannot judge. With the generator's value ranges it never overflows.

use ndarray::{ArrayD, IxDyn};

use crate::data::{bias_name, constant_name, weight_name, NetData};
use crate::network::{Network, Op, ShapeError, Src};

/// Why there is no reference.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    #[error(transparent)]
    Shape(#[from] ShapeError),
    #[error("node {node}: a value leaves the range of i64")]
    Overflow { node: usize },
    #[error("node {node}: the data has no initializer `{name}`")]
    Missing { node: usize, name: String },
}

/// Every node's output, in node order.
pub fn reference(network: &Network, data: &NetData) -> Result<Vec<ArrayD<i64>>, ReferenceError> {
    let shapes = network.shapes()?;
    let mut outs: Vec<ArrayD<i64>> = Vec::with_capacity(network.nodes.len());
    for (i, node) in network.nodes.iter().enumerate() {
        let value = |src: Src| -> &ArrayD<i64> {
            match src {
                Src::Input => &data.input,
                Src::Node(j) => &outs[j],
            }
        };
        let param = |name: String| -> Result<&ArrayD<i64>, ReferenceError> {
            data.params
                .get(&name)
                .ok_or(ReferenceError::Missing { node: i, name })
        };
        let x = value(node.inputs[0]);
        let shape = &shapes[i];
        let overflow = || ReferenceError::Overflow { node: i };
        let out = match &node.op {
            Op::Conv {
                stride,
                pads,
                group,
                bias,
                ..
            } => {
                let b = if *bias {
                    Some(param(bias_name(i))?)
                } else {
                    None
                };
                conv(x, param(weight_name(i))?, b, *stride, *pads, *group, shape)
                    .ok_or_else(overflow)?
            }
            Op::Gemm { bias, trans_b, .. } => {
                let w = param(weight_name(i))?;
                let w = if *trans_b {
                    w.t().to_owned().into_dyn()
                } else {
                    w.clone()
                };
                let b = if *bias {
                    Some(param(bias_name(i))?)
                } else {
                    None
                };
                matmul(x, &w, b).ok_or_else(overflow)?
            }
            Op::MatMul { .. } => matmul(x, param(weight_name(i))?, None).ok_or_else(overflow)?,
            Op::MaxPool {
                kernel,
                stride,
                pads,
            } => max_pool(x, *kernel, *stride, *pads, shape),
            Op::Relu => x.mapv(|v| v.max(0)),
            Op::Add { constant } => {
                let y = second(
                    *constant,
                    node.inputs.get(1),
                    &value,
                    param(constant_name(i)),
                )?;
                zip(x, y, i64::checked_add).ok_or_else(overflow)?
            }
            Op::Mul { constant } => {
                let y = second(
                    *constant,
                    node.inputs.get(1),
                    &value,
                    param(constant_name(i)),
                )?;
                zip(x, y, i64::checked_mul).ok_or_else(overflow)?
            }
            Op::Concat => {
                let parts: Vec<_> = node.inputs.iter().map(|&s| value(s).view()).collect();
                ndarray::concatenate(ndarray::Axis(1), &parts).expect("shapes were checked")
            }
            Op::Flatten | Op::Reshape => x
                .as_standard_layout()
                .into_owned()
                .into_shape_with_order(IxDyn(shape))
                .expect("sizes were checked"),
        };
        outs.push(out);
    }
    Ok(outs)
}

/// The second operand of an element-wise operator: a node's value or the constant.
fn second<'a>(
    constant: bool,
    src: Option<&Src>,
    value: &impl Fn(Src) -> &'a ArrayD<i64>,
    param: Result<&'a ArrayD<i64>, ReferenceError>,
) -> Result<&'a ArrayD<i64>, ReferenceError> {
    match (constant, src) {
        (false, Some(&s)) => Ok(value(s)),
        _ => param,
    }
}

fn zip(a: &ArrayD<i64>, b: &ArrayD<i64>, f: fn(i64, i64) -> Option<i64>) -> Option<ArrayD<i64>> {
    let mut out = Vec::with_capacity(a.len());
    for (x, y) in a.iter().zip(b.iter()) {
        out.push(f(*x, *y)?);
    }
    ArrayD::from_shape_vec(a.raw_dim(), out).ok()
}

/// A grouped 2-D convolution with zero padding (ONNX `Conv`, dilation 1).
fn conv(
    x: &ArrayD<i64>,
    w: &ArrayD<i64>,
    bias: Option<&ArrayD<i64>>,
    stride: [usize; 2],
    pads: [usize; 4],
    group: usize,
    shape: &[usize],
) -> Option<ArrayD<i64>> {
    let (c, h, wd) = (x.shape()[1], x.shape()[2], x.shape()[3]);
    let (k, cg, kh, kw) = (w.shape()[0], w.shape()[1], w.shape()[2], w.shape()[3]);
    let (oh, ow) = (shape[2], shape[3]);
    let per_group = k / group;
    let mut out = ArrayD::zeros(IxDyn(shape));
    debug_assert_eq!(c, cg * group);
    for o in 0..k {
        let g = o / per_group;
        for y in 0..oh {
            for xo in 0..ow {
                let mut acc = bias.map_or(0, |b| b[[o]]);
                for ci in 0..cg {
                    for dy in 0..kh {
                        let iy = (y * stride[0] + dy) as isize - pads[0] as isize;
                        if iy < 0 || iy >= h as isize {
                            continue;
                        }
                        for dx in 0..kw {
                            let ix = (xo * stride[1] + dx) as isize - pads[1] as isize;
                            if ix < 0 || ix >= wd as isize {
                                continue;
                            }
                            let v = x[[0, g * cg + ci, iy as usize, ix as usize]];
                            acc = acc.checked_add(v.checked_mul(w[[o, ci, dy, dx]])?)?;
                        }
                    }
                }
                out[[0, o, y, xo]] = acc;
            }
        }
    }
    Some(out)
}

/// `[1, N] · [N, out] (+ bias)`.
fn matmul(x: &ArrayD<i64>, w: &ArrayD<i64>, bias: Option<&ArrayD<i64>>) -> Option<ArrayD<i64>> {
    let (n, o) = (w.shape()[0], w.shape()[1]);
    let mut out = ArrayD::zeros(IxDyn(&[1, o]));
    for j in 0..o {
        let mut acc = bias.map_or(0, |b| b[[j]]);
        for i in 0..n {
            acc = acc.checked_add(x[[0, i]].checked_mul(w[[i, j]])?)?;
        }
        out[[0, j]] = acc;
    }
    Some(out)
}

/// Max pooling: the largest element of each window inside the input (padding is never a
/// candidate, ONNX's `MaxPool`).
fn max_pool(
    x: &ArrayD<i64>,
    kernel: [usize; 2],
    stride: [usize; 2],
    pads: [usize; 4],
    shape: &[usize],
) -> ArrayD<i64> {
    let (h, w) = (x.shape()[2] as isize, x.shape()[3] as isize);
    ArrayD::from_shape_fn(IxDyn(shape), |ix| {
        let (c, y, xo) = (ix[1], ix[2], ix[3]);
        let mut best = i64::MIN;
        for dy in 0..kernel[0] {
            let iy = (y * stride[0] + dy) as isize - pads[0] as isize;
            for dx in 0..kernel[1] {
                let ixx = (xo * stride[1] + dx) as isize - pads[1] as isize;
                if (0..h).contains(&iy) && (0..w).contains(&ixx) {
                    best = best.max(x[[0, c, iy as usize, ixx as usize]]);
                }
            }
        }
        best
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{Node, Spelling};
    use std::collections::BTreeMap;

    fn node(op: Op, inputs: Vec<Src>) -> Node {
        Node {
            op,
            inputs,
            spelling: Spelling::default(),
        }
    }

    #[test]
    fn a_padded_strided_grouped_convolution_and_its_pool_by_hand() {
        // One 3x3 input channel per group, two groups; 2x2 kernels, stride 2, padding 1 top/left.
        let net = Network {
            input: vec![1, 2, 3, 3],
            nodes: vec![
                node(
                    Op::Conv {
                        out_channels: 2,
                        kernel: [2, 2],
                        stride: [2, 2],
                        pads: [1, 1, 0, 0],
                        group: 2,
                        bias: true,
                    },
                    vec![Src::Input],
                ),
                node(
                    Op::MaxPool {
                        kernel: [2, 2],
                        stride: [1, 1],
                        pads: [0, 0, 0, 0],
                    },
                    vec![Src::Node(0)],
                ),
            ],
            outputs: vec![1],
        };
        let input = ArrayD::from_shape_vec(
            IxDyn(&[1, 2, 3, 3]),
            (1..=9).chain((1..=9).map(|v| -v)).collect(),
        )
        .unwrap();
        let mut params = BTreeMap::new();
        params.insert(
            weight_name(0),
            ArrayD::from_shape_vec(IxDyn(&[2, 1, 2, 2]), vec![1, 0, 0, 1, 0, 2, 0, 0]).unwrap(),
        );
        params.insert(
            bias_name(0),
            ArrayD::from_shape_vec(IxDyn(&[2]), vec![10, 0]).unwrap(),
        );
        let outs = reference(&net, &NetData { input, params }).unwrap();
        // Output (y, x) reads input rows 2y-1.. and columns 2x-1.. (padding 1 top and left).
        // Channel 0 (taps top-left and bottom-right, bias 10): 0+1, 0+3, 0+7, 5+9, plus 10.
        // Channel 1 (tap top-right, weight 2): padding, padding, 2*-4, 2*-6.
        assert_eq!(outs[0].shape(), &[1, 2, 2, 2]);
        assert_eq!(
            outs[0].iter().copied().collect::<Vec<_>>(),
            vec![11, 13, 17, 24, 0, 0, -8, -12]
        );
        assert_eq!(outs[1].iter().copied().collect::<Vec<_>>(), vec![24, 0]);
    }
}
