//! The wrap-8 reference of a whole network: every node's output, exactly, when every value is a
//! signed 8-bit integer and arithmetic wraps.
//!
//! This is what a program of the PIMSim ISA computes under `setbw 8/8` (`docs/isa.md`): `mvmul`
//! sums exactly and wraps its outputs to 8 bits, `vvadd` wraps, `vrelu` and `vvmax` compare
//! signed values. Wrapping `+` and `×` form a ring homomorphism onto the integers mod 2^8, so
//! however a compiler splits a dot product (rows over crossbars, partial sums added with
//! `vvadd`, across cores, with the bias added last) the result is `wrap8(x·W + b)`; only `max`
//! (ReLU, max pooling) is not modular, and it is applied to fully reduced values. So each node
//! here is the exact integer operator followed by one wrap, and a program that computes the
//! same network must agree bit for bit (`docs/pimcomp-numerics.md` §2).
//!
//! Layout: every tensor is one image, `[H, W, C]` (channels innermost, as the programs keep
//! them); a fully connected layer's output is `[1, 1, out]`. Weights are GEMM matrices as a
//! crossbar holds them: rows `(kh, kw, cin)` (HWC im2col order), columns the output channels.
//! A grouped or depthwise convolution has one dense `kh·kw·Cin × Cout` matrix that must be
//! zero outside each group's block. A flatten (or reshape to a vector) is HWC order.
//!
//! The arithmetic is the oracle's own: convolutions go through [`conv2d`], fully connected
//! layers through [`mvm()`] (exact int32), and the result is wrapped here; pools, concat, add
//! and ReLU are a few lines each.
//!
//! Operators a network may hold that this reference does not model become
//! [`Value::Unavailable`] with a reason, as do all nodes that depend on them: a caller can
//! report them as unchecked instead of comparing against something invented.

use ndarray::{s, Array1, Array2, Array3, Array4, ArrayView3, Axis};
use rayon::prelude::*;

use crate::case::{Conv2d, Mvm};
use crate::conv::conv2d;
use crate::error::OracleError;
use crate::mvm::mvm;

/// A network in topological order: a node's inputs come before it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Graph {
    pub nodes: Vec<Node>,
}

/// One operator and the nodes it reads (in order: concatenation follows it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub op: NodeOp,
    pub inputs: Vec<usize>,
}

/// `[H, W, C]` of one image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    pub h: usize,
    pub w: usize,
    pub c: usize,
}

impl Shape {
    pub fn len(&self) -> usize {
        self.h * self.w * self.c
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The operators of the reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeOp {
    /// The network input (no inputs): the image handed to [`evaluate`].
    Input(Shape),
    Conv(ConvNode),
    FullyConnected(FcNode),
    Pool(PoolNode),
    /// Channel concatenation of all inputs (same `H`, `W`), in input order.
    Concat,
    /// Element-wise wrapping sum of all inputs (same shape).
    Add,
    /// `max(x, 0)` on the signed value.
    Relu,
    /// The input unchanged (operators a program does not compute, e.g. LRN or dropout at
    /// inference, softmax or clip when the compiler ignores them).
    Identity,
    /// `[H, W, C]` → `[1, 1, H·W·C]` in HWC order.
    Flatten,
    /// Not modelled; the reason says why. Its value, and every value depending on it, is
    /// [`Value::Unavailable`].
    Unsupported(String),
}

/// A convolution (`dilation` 1). Weights come from [`NodeParams::matrix`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvNode {
    pub in_channels: usize,
    pub out_channels: usize,
    /// `[kh, kw]`.
    pub kernel: [usize; 2],
    /// `[along H, along W]`.
    pub stride: [usize; 2],
    /// `[top, left, bottom, right]`.
    pub padding: [usize; 4],
    pub groups: usize,
    /// Whether [`NodeParams::bias`] is added.
    pub bias: bool,
    /// ReLU after the wrap.
    pub relu: bool,
}

/// A fully connected layer over the input flattened in HWC order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FcNode {
    pub in_features: usize,
    pub out_features: usize,
    pub bias: bool,
    pub relu: bool,
}

/// Max or average pooling over the in-bounds part of each window (padding positions are left
/// out, not read as zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolNode {
    pub kind: PoolKind,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    /// `[top, left, bottom, right]`.
    pub padding: [usize; 4],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    /// The largest in-bounds value.
    Max,
    /// `wrap8(wrap8(Σ in-bounds values) · scale(n))`, `n` the number of in-bounds positions,
    /// where `scale(n)` is the integer a program can multiply by: `1/n` truncated toward zero
    /// (`docs/isa.md`: an `lldi` immediate given as a float is truncated), so 1 for a
    /// one-element window and 0 otherwise. A caller should treat the resulting constant as
    /// uninformative, not as agreement.
    Average,
}

/// The values one node needs besides its inputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeParams {
    /// Convolution or fully connected weights: `[rows, out]` (see the module docs).
    pub matrix: Option<Array2<i8>>,
    /// The bias vector (`out` values) when the node adds one.
    pub bias: Option<Array1<i8>>,
}

/// A node's reference output, or why there is none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Tensor(Array3<i8>),
    Unavailable(String),
}

impl Value {
    pub fn tensor(&self) -> Option<&Array3<i8>> {
        match self {
            Value::Tensor(t) => Some(t),
            Value::Unavailable(_) => None,
        }
    }
}

/// Why a graph cannot be evaluated at all: the graph or its parameters are malformed (a
/// caller's mistake, not a property of the network).
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    #[error("node {node}: input {input} is not an earlier node")]
    NotTopological { node: usize, input: usize },
    #[error("{params} parameter sets for {nodes} nodes")]
    ParamsLength { params: usize, nodes: usize },
    #[error("node {node}: {what}")]
    BadParams { node: usize, what: String },
    #[error("node {node}: {source}")]
    Oracle { node: usize, source: OracleError },
}

/// Every node's output for `image` (`[H, W, C]`, used by every [`NodeOp::Input`]).
pub fn evaluate(
    graph: &Graph,
    image: ArrayView3<i8>,
    params: &[NodeParams],
) -> Result<Vec<Value>, GraphError> {
    if params.len() != graph.nodes.len() {
        return Err(GraphError::ParamsLength {
            params: params.len(),
            nodes: graph.nodes.len(),
        });
    }
    let mut values: Vec<Value> = Vec::with_capacity(graph.nodes.len());
    for (index, node) in graph.nodes.iter().enumerate() {
        if let Some(&input) = node.inputs.iter().find(|&&i| i >= index) {
            return Err(GraphError::NotTopological { node: index, input });
        }
        let inputs: Result<Vec<&Array3<i8>>, String> = node
            .inputs
            .iter()
            .map(|&i| match &values[i] {
                Value::Tensor(t) => Ok(t),
                Value::Unavailable(_) => Err(format!("input node {i} has no reference value")),
            })
            .collect();
        let value = match inputs {
            Err(reason) => Value::Unavailable(reason),
            Ok(inputs) => match node_value(index, &node.op, &inputs, image, &params[index])? {
                Ok(t) => Value::Tensor(t),
                Err(reason) => Value::Unavailable(reason),
            },
        };
        values.push(value);
    }
    Ok(values)
}

/// The outer `Err` stops evaluation (bad parameters); the inner one makes the node unavailable.
type NodeResult = Result<Result<Array3<i8>, String>, GraphError>;

fn node_value(
    index: usize,
    op: &NodeOp,
    inputs: &[&Array3<i8>],
    image: ArrayView3<i8>,
    params: &NodeParams,
) -> NodeResult {
    let arity = |n: usize| -> Result<(), String> {
        if inputs.len() == n {
            Ok(())
        } else {
            Err(format!("expects {n} input(s), has {}", inputs.len()))
        }
    };
    let one = || -> Result<&Array3<i8>, String> { arity(1).map(|()| inputs[0]) };
    Ok(match op {
        NodeOp::Input(shape) => {
            let found = image.dim();
            if found != (shape.h, shape.w, shape.c) {
                return Err(GraphError::BadParams {
                    node: index,
                    what: format!("the image is {found:?}, the input node wants {shape:?}"),
                });
            }
            Ok(image.to_owned())
        }
        NodeOp::Conv(c) => match one() {
            Ok(x) => conv_value(index, c, x, params)?,
            Err(e) => Err(e),
        },
        NodeOp::FullyConnected(f) => match one() {
            Ok(x) => fc_value(index, f, x, params)?,
            Err(e) => Err(e),
        },
        NodeOp::Pool(p) => one().and_then(|x| pool_value(p, x)),
        NodeOp::Concat => concat_value(inputs),
        NodeOp::Add => add_value(inputs),
        NodeOp::Relu => one().map(|x| x.mapv(|v| v.max(0))),
        NodeOp::Identity => one().cloned(),
        NodeOp::Flatten => one().map(|x| {
            let flat: Vec<i8> = x.iter().copied().collect();
            let n = flat.len();
            Array3::from_shape_vec((1, 1, n), flat).expect("length matches")
        }),
        NodeOp::Unsupported(reason) => Err(reason.clone()),
    })
}

/// The low 8 bits of `v`, as a signed value.
fn wrap8(v: i32) -> i8 {
    v as i8
}

fn check_bias(index: usize, want: bool, out: usize, params: &NodeParams) -> Result<(), GraphError> {
    match (&params.bias, want) {
        (Some(b), true) if b.len() == out => Ok(()),
        (Some(b), true) => Err(GraphError::BadParams {
            node: index,
            what: format!("bias has {} values, the node has {out} outputs", b.len()),
        }),
        (None, true) => Err(GraphError::BadParams {
            node: index,
            what: "the node adds a bias but none was given".into(),
        }),
        (Some(_), false) => Err(GraphError::BadParams {
            node: index,
            what: "a bias was given to a node without one".into(),
        }),
        (None, false) => Ok(()),
    }
}

fn conv_value(index: usize, c: &ConvNode, x: &Array3<i8>, params: &NodeParams) -> NodeResult {
    let (h, w, cin) = x.dim();
    if cin != c.in_channels {
        return Ok(Err(format!(
            "expects {} input channels, its input has {cin}",
            c.in_channels
        )));
    }
    let p = Conv2d {
        in_channels: c.in_channels,
        out_channels: c.out_channels,
        kernel: c.kernel,
        stride: c.stride,
        padding: c.padding,
        dilation: [1, 1],
        groups: c.groups,
        bias: c.bias,
        relu: false,
    };
    if p.validate().is_err() || p.output_hw(h, w).is_none() {
        return Ok(Err(format!(
            "not a valid convolution over a {h}×{w} input: {c:?}"
        )));
    }
    check_bias(index, c.bias, c.out_channels, params)?;
    let weight = grouped_weight(index, c, params)?;
    let input = x.view().permuted_axes([2, 0, 1]).insert_axis(Axis(0));
    let bias = params.bias.as_ref().map(|b| b.mapv(i32::from));
    let out =
        conv2d(input, weight.view(), bias.as_ref().map(|b| b.view()), &p).map_err(|source| {
            GraphError::Oracle {
                node: index,
                source,
            }
        })?;
    let out = out.index_axis_move(Axis(0), 0).permuted_axes([1, 2, 0]);
    Ok(Ok(finish(out.mapv(wrap8), c.relu)))
}

/// The oracle's `[K, C/groups, kh, kw]` weight from the dense GEMM matrix, refusing a matrix
/// with a nonzero entry outside its output channel's group (the reference would ignore it).
fn grouped_weight(
    index: usize,
    c: &ConvNode,
    params: &NodeParams,
) -> Result<Array4<i8>, GraphError> {
    let bad = |what: String| GraphError::BadParams { node: index, what };
    let m = params
        .matrix
        .as_ref()
        .ok_or_else(|| bad("a convolution needs a weight matrix".into()))?;
    let [kh, kw] = c.kernel;
    let rows = kh * kw * c.in_channels;
    if m.dim() != (rows, c.out_channels) {
        return Err(bad(format!(
            "weight matrix is {:?}, the convolution needs ({rows}, {})",
            m.dim(),
            c.out_channels
        )));
    }
    let (cg, kg) = (c.in_channels / c.groups, c.out_channels / c.groups);
    if c.groups > 1 {
        for ((r, k), &v) in m.indexed_iter() {
            let group_of_row = (r % c.in_channels) / cg;
            if v != 0 && group_of_row != k / kg {
                return Err(bad(format!(
                    "weight matrix entry ({r}, {k}) = {v} lies outside output channel {k}'s group"
                )));
            }
        }
    }
    Ok(Array4::from_shape_fn(
        (c.out_channels, cg, kh, kw),
        |(k, cl, i, j)| m[[(i * kw + j) * c.in_channels + (k / kg) * cg + cl, k]],
    ))
}

fn fc_value(index: usize, f: &FcNode, x: &Array3<i8>, params: &NodeParams) -> NodeResult {
    if x.len() != f.in_features {
        return Ok(Err(format!(
            "expects {} inputs, its input has {} values",
            f.in_features,
            x.len()
        )));
    }
    let p = Mvm {
        in_features: f.in_features,
        out_features: f.out_features,
        bias: f.bias,
        relu: false,
    };
    if p.validate().is_err() {
        return Ok(Err(format!("not a valid fully connected layer: {f:?}")));
    }
    check_bias(index, f.bias, f.out_features, params)?;
    let m = params
        .matrix
        .as_ref()
        .ok_or_else(|| GraphError::BadParams {
            node: index,
            what: "a fully connected layer needs a weight matrix".into(),
        })?;
    if m.dim() != (f.in_features, f.out_features) {
        return Err(GraphError::BadParams {
            node: index,
            what: format!(
                "weight matrix is {:?}, the layer needs ({}, {})",
                m.dim(),
                f.in_features,
                f.out_features
            ),
        });
    }
    let flat: Array2<i8> =
        Array2::from_shape_vec((1, x.len()), x.iter().copied().collect()).expect("length matches");
    let bias = params.bias.as_ref().map(|b| b.mapv(i32::from));
    // Outputs are independent, so a layer larger than the oracle's weight limit is computed
    // in slices of output columns, each within the limit, on all cores.
    let step = (crate::limits::MAX_WEIGHT_ELEMENTS / f.in_features).clamp(1, f.out_features);
    let slices: Vec<usize> = (0..f.out_features).step_by(step).collect();
    let parts = slices
        .par_iter()
        .map(|&o0| {
            let o1 = (o0 + step).min(f.out_features);
            let p = Mvm {
                out_features: o1 - o0,
                ..p
            };
            let b = bias.as_ref().map(|b| b.slice(s![o0..o1]));
            mvm(flat.view(), m.slice(s![.., o0..o1]).t(), b, &p)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| GraphError::Oracle {
            node: index,
            source,
        })?;
    let values: Vec<i32> = parts.iter().flat_map(|a| a.iter().copied()).collect();
    let out = Array3::from_shape_vec((1, 1, f.out_features), values).expect("one value per output");
    Ok(Ok(finish(out.mapv(wrap8), f.relu)))
}

fn finish(x: Array3<i8>, relu: bool) -> Array3<i8> {
    let x = x.as_standard_layout().into_owned();
    if relu {
        x.mapv(|v| v.max(0))
    } else {
        x
    }
}

/// Output extent of a window sliding over `len` with the given padding, or `None` when the
/// window never fits.
fn extent(len: usize, before: usize, after: usize, k: usize, s: usize) -> Option<usize> {
    let padded = len + before + after;
    (k >= 1 && s >= 1 && padded >= k).then(|| (padded - k) / s + 1)
}

fn pool_value(p: &PoolNode, x: &Array3<i8>) -> Result<Array3<i8>, String> {
    let (h, w, c) = x.dim();
    let [pt, pl, pb, pr] = p.padding;
    let (Some(oh), Some(ow)) = (
        extent(h, pt, pb, p.kernel[0], p.stride[0]),
        extent(w, pl, pr, p.kernel[1], p.stride[1]),
    ) else {
        return Err(format!(
            "the pooling window never fits a {h}×{w} input: {p:?}"
        ));
    };
    let mut out = Array3::<i8>::zeros((oh, ow, c));
    for oy in 0..oh {
        for ox in 0..ow {
            // In-bounds rows and columns of this window.
            let y0 = (oy * p.stride[0]).saturating_sub(pt);
            let y1 = (oy * p.stride[0] + p.kernel[0]).saturating_sub(pt).min(h);
            let x0 = (ox * p.stride[1]).saturating_sub(pl);
            let x1 = (ox * p.stride[1] + p.kernel[1]).saturating_sub(pl).min(w);
            if y0 >= y1 || x0 >= x1 {
                return Err(format!(
                    "pooling window ({oy}, {ox}) lies entirely in the padding"
                ));
            }
            let window = x.slice(s![y0..y1, x0..x1, ..]);
            let mut dst = out.slice_mut(s![oy, ox, ..]);
            match p.kind {
                PoolKind::Max => {
                    for ch in 0..c {
                        dst[ch] = window
                            .slice(s![.., .., ch])
                            .iter()
                            .copied()
                            .max()
                            .unwrap_or(0);
                    }
                }
                PoolKind::Average => {
                    let n = (y1 - y0) * (x1 - x0);
                    let scale = (1.0f64 / n as f64).trunc() as i32;
                    for ch in 0..c {
                        let sum = window
                            .slice(s![.., .., ch])
                            .iter()
                            .fold(0i32, |a, &v| a + v as i32);
                        dst[ch] = wrap8(wrap8(sum) as i32 * scale);
                    }
                }
            }
        }
    }
    Ok(out)
}

fn concat_value(inputs: &[&Array3<i8>]) -> Result<Array3<i8>, String> {
    let Some(first) = inputs.first() else {
        return Err("concatenates nothing".into());
    };
    let (h, w, _) = first.dim();
    if let Some(odd) = inputs.iter().find(|x| (x.dim().0, x.dim().1) != (h, w)) {
        return Err(format!(
            "concatenates {h}×{w} with {}×{}",
            odd.dim().0,
            odd.dim().1
        ));
    }
    let views: Vec<_> = inputs.iter().map(|x| x.view()).collect();
    ndarray::concatenate(Axis(2), &views).map_err(|e| e.to_string())
}

fn add_value(inputs: &[&Array3<i8>]) -> Result<Array3<i8>, String> {
    let Some(first) = inputs.first() else {
        return Err("adds nothing".into());
    };
    let mut sum = (*first).clone();
    for x in &inputs[1..] {
        if x.dim() != sum.dim() {
            return Err(format!("adds {:?} to {:?}", x.dim(), sum.dim()));
        }
        sum.zip_mut_with(x, |a, &b| *a = a.wrapping_add(b));
    }
    Ok(sum)
}
