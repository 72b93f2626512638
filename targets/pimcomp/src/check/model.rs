//! The side table's `node_list` as the oracle's wrap-8 [`Graph`], with what PIMCOMP-NN does
//! and does not compute (`docs/pimcomp-numerics.md` §3–§5).

use pimdiff_oracle::graph::{ConvNode, FcNode, Graph, Node, NodeOp, PoolKind, PoolNode, Shape};

use super::error::PimcompError;
use super::table::{TInst, TableNode};

/// How PIMCOMP-NN scheduled the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Element pipeline: one pass through the network, `VER` points in the table.
    Element,
    /// Batch pipeline: each CONV/FC layer on its own, tensors named by negative addresses.
    Batch,
}

/// The model: the graph the reference evaluates, and per node its kind and expected shape.
pub struct Model {
    pub graph: Graph,
    pub nodes: Vec<ModelNode>,
    /// The node whose output the program stores to global memory 0 (element mode).
    pub last_node: Option<usize>,
}

pub struct ModelNode {
    pub name: String,
    /// `operation` as the table spells it (`OP_CONV`, ...).
    pub op: String,
    /// The output shape `node_list` states.
    pub shape: Shape,
    /// CONV and FC: the node has a GEMM matrix on crossbars.
    pub weighted: bool,
}

impl Model {
    /// Builds the model from the table. `instructions` tells which node is stored (element
    /// mode: PIMCOMP-NN skips the activation of that node, ElementPipelineSchedule.cpp:2422).
    pub fn new(
        nodes: &[TableNode],
        mode: Mode,
        instructions: &[&TInst],
    ) -> Result<Model, PimcompError> {
        let last_node = match mode {
            Mode::Element => instructions
                .iter()
                .find(|t| t.op == super::table::TOp::St)
                .map(|t| t.node as usize),
            Mode::Batch => None,
        };
        let mut graph = Graph::default();
        let mut out = Vec::with_capacity(nodes.len());
        for (index, n) in nodes.iter().enumerate() {
            let inputs = n
                .provider_index
                .iter()
                .map(|&p| {
                    usize::try_from(p)
                        .ok()
                        .filter(|&p| p < index)
                        .ok_or_else(|| {
                            PimcompError::Model(format!(
                                "node {index} ({}): provider {p} is not an earlier node",
                                n.name
                            ))
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let shape = shape_of(&n.output_dim).ok_or_else(|| {
                PimcompError::Model(format!(
                    "node {index} ({}): output_dim {:?} is not [1, C, H, W] or [1, N]",
                    n.name, n.output_dim
                ))
            })?;
            let skip_act = last_node == Some(index);
            let op = node_op(n, shape, skip_act);
            out.push(ModelNode {
                name: n.name.clone(),
                op: n.operation.clone(),
                shape,
                weighted: matches!(op, NodeOp::Conv(_) | NodeOp::FullyConnected(_)),
            });
            graph.nodes.push(Node { op, inputs });
        }
        Ok(Model {
            graph,
            nodes: out,
            last_node,
        })
    }
}

fn shape_of(dim: &[i64]) -> Option<Shape> {
    let u = |v: i64| usize::try_from(v).ok().filter(|&v| v > 0 && v <= 1 << 24);
    match dim {
        [1, c, h, w] => Some(Shape {
            h: u(*h)?,
            w: u(*w)?,
            c: u(*c)?,
        }),
        [1, n] => Some(Shape {
            h: 1,
            w: 1,
            c: u(*n)?,
        }),
        _ => None,
    }
}

/// A parameter that must be a size: present, and in `lo..=2^16`.
fn size(n: &TableNode, name: &str, v: Option<i64>, lo: i64) -> Result<usize, String> {
    match v {
        Some(v) if (lo..=1 << 16).contains(&v) => Ok(v as usize),
        Some(v) => Err(format!("{} has param.{name} = {v}", n.operation)),
        None => Err(format!("{} lacks param.{name}", n.operation)),
    }
}

fn node_op(n: &TableNode, shape: Shape, skip_act: bool) -> NodeOp {
    match try_node_op(n, shape, skip_act) {
        Ok(op) => op,
        Err(reason) => NodeOp::Unsupported(reason),
    }
}

/// Kernel, stride and padding `[top, left, bottom, right]` of a window.
type Window = ([usize; 2], [usize; 2], [usize; 4]);

fn try_node_op(n: &TableNode, shape: Shape, skip_act: bool) -> Result<NodeOp, String> {
    let p = &n.param;
    let relu = || -> Result<bool, String> {
        match (n.with_act, n.act_type) {
            (0, _) => Ok(false),
            (_, 0) => Ok(!skip_act),
            (_, t) => Err(format!(
                "activation type {t} (vtanh/vsigmoid) is not modelled"
            )),
        }
    };
    let window = || -> Result<Window, String> {
        Ok((
            [
                size(n, "kernel_h", p.kernel_h, 1)?,
                size(n, "kernel_w", p.kernel_w, 1)?,
            ],
            [
                size(n, "stride_h", p.stride_h, 1)?,
                size(n, "stride_w", p.stride_w, 1)?,
            ],
            [
                size(n, "pad_h0", p.pad_h0, 0)?,
                size(n, "pad_w0", p.pad_w0, 0)?,
                size(n, "pad_h1", p.pad_h1, 0)?,
                size(n, "pad_w1", p.pad_w1, 0)?,
            ],
        ))
    };
    Ok(match n.operation.as_str() {
        "OP_INPUT" => NodeOp::Input(shape),
        "OP_CONV" => {
            if p.dilation_h.unwrap_or(1) != 1 || p.dilation_w.unwrap_or(1) != 1 {
                return Err("dilated convolution is not modelled".into());
            }
            let (kernel, stride, padding) = window()?;
            NodeOp::Conv(ConvNode {
                in_channels: size(n, "input_channel", p.input_channel, 1)?,
                out_channels: size(n, "output_channel", p.output_channel, 1)?,
                kernel,
                stride,
                padding,
                groups: size(n, "group", Some(p.group.unwrap_or(1)), 1)?,
                bias: p.with_bias.unwrap_or(0) != 0,
                relu: relu()?,
            })
        }
        "OP_FC" => NodeOp::FullyConnected(FcNode {
            in_features: size(n, "num_input", p.num_input, 1)?,
            out_features: size(n, "num_output", p.num_output, 1)?,
            bias: p.with_bias.unwrap_or(0) != 0,
            relu: relu()?,
        }),
        "OP_POOL" => {
            let (kernel, stride, padding) = window()?;
            let kind = match p.pool_method {
                Some(0) => PoolKind::Max,
                Some(1) => PoolKind::Average,
                other => return Err(format!("pool_method {other:?} is not modelled")),
            };
            NodeOp::Pool(PoolNode {
                kind,
                kernel,
                stride,
                padding,
            })
        }
        "OP_CONCAT" => NodeOp::Concat,
        "OP_ELTWISE" => match p.eletype {
            Some(2) => NodeOp::Add,
            other => {
                return Err(format!(
                    "eltwise type {other:?} is not modelled (2 = add is)"
                ))
            }
        },
        "OP_RELU" => NodeOp::Relu,
        // Not emitted by PIMCOMP-NN; its own checker neutralises them (verification.py:69-123).
        "OP_LRN" | "OP_DROPOUT" | "OP_SOFTMAX" | "OP_CLIP" | "OP_BATCHNORM" => NodeOp::Identity,
        "OP_RESHAPE" | "OP_FLATTEN" => NodeOp::Flatten,
        other => return Err(format!("{other} is not modelled")),
    })
}
