//! A network as CIM-MLC's front end reads it: a small directed acyclic graph of the operators its
//! `process_node` dispatch claims (convolutions, fully connected layers, pooling, activations,
//! element-wise `Add`/`Mul`, `Concat`, `Flatten`/`Reshape`), over one NCHW input with batch 1,
//! with the shape rules of ONNX.
//!
//! The description is what the generator draws, the minimizer edits, the reference computes
//! and `model.onnx` spells; it is checked ([`Network::shapes`]) so that every network handed
//! to CIM-MLC is a valid ONNX model: a finding is then about CIM-MLC, never about a model that
//! ONNX Runtime (which CIM-MLC runs for its shapes) would refuse.
//!
//! Attributes that ONNX gives defaults (`strides` 1, `pads` 0, `dilations` 1, `group` 1,
//! Gemm's `alpha`, `beta`, `transA`, `transB`, Flatten's `axis`) are written or left out per
//! node ([`Spelling`]): real exporters omit them, and the front end must read both.
//! `kernel_shape` is optional too (ONNX infers it from the weight).

use serde::{Deserialize, Serialize};

/// Where a value comes from: the network's input or a node's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Src {
    Input,
    Node(usize),
}

/// One operator and its attributes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Op {
    /// A 2-D convolution with `out_channels` filters, padding `[top, left, bottom, right]`
    /// (ONNX's order), grouped when `group > 1` (depthwise when it equals the channels).
    Conv {
        out_channels: usize,
        kernel: [usize; 2],
        stride: [usize; 2],
        pads: [usize; 4],
        group: usize,
        bias: bool,
    },
    /// `Y = X · B (+ C)` on a `[1, N]` input; `B` is stored `[out, N]` when `trans_b`.
    Gemm {
        out: usize,
        bias: bool,
        trans_b: bool,
    },
    /// `Y = X · B` on a `[1, N]` input, `B` stored `[N, out]`.
    MatMul {
        out: usize,
    },
    /// Max pooling (`ceil_mode` 0), padding never reaching a whole window.
    MaxPool {
        kernel: [usize; 2],
        stride: [usize; 2],
        pads: [usize; 4],
    },
    Relu,
    /// Element-wise sum of two values of one shape; `constant`: the second is an initializer.
    Add {
        constant: bool,
    },
    /// Element-wise product, as `Add`.
    Mul {
        constant: bool,
    },
    /// Along the channels (axis 1), of two or more values alike in every other dimension.
    Concat,
    /// To `[1, everything else]` (axis 1).
    Flatten,
    /// To `[1, everything else]`, through a shape initializer `[1, -1]`.
    Reshape,
}

/// How a node's optional attributes are spelled in `model.onnx`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Spelling {
    /// Attributes at their ONNX defaults are written (else left out).
    pub defaults: bool,
    /// A convolution's or pooling's `kernel_shape` is written (pooling must write it; for a
    /// convolution ONNX infers it from the weight).
    pub kernel_shape: bool,
}

/// One node: its operator, its sources (in ONNX input order) and its spelling.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    #[serde(flatten)]
    pub op: Op,
    pub inputs: Vec<Src>,
    #[serde(default)]
    pub spelling: Spelling,
}

/// A network: its input shape (`[1, C, H, W]`, or `[1, N]` for one that starts fully
/// connected), its nodes in topological order (a node reads only the input and earlier
/// nodes), and the values that are its outputs (each a node's, in order, no repeats).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Network {
    pub input: Vec<usize>,
    pub nodes: Vec<Node>,
    pub outputs: Vec<usize>,
}

/// Why a network description is not a valid model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("the input shape {0:?} is neither [1, C, H, W] nor [1, N] with every size positive")]
    Input(Vec<usize>),
    #[error("node {node} reads {src:?}, which is not the input or an earlier node")]
    Order { node: usize, src: Src },
    #[error("node {node} ({op}) takes {want} input(s), has {got}")]
    Arity {
        node: usize,
        op: &'static str,
        want: &'static str,
        got: usize,
    },
    #[error("node {node} ({op}): {why}")]
    Shape {
        node: usize,
        op: &'static str,
        why: String,
    },
    #[error("the outputs {0:?} are empty, repeat a node or name no node")]
    Outputs(Vec<usize>),
    #[error("node {0} is neither an output nor read by a later node")]
    Dead(usize),
}

impl Op {
    /// The ONNX operator type.
    pub fn onnx_type(&self) -> &'static str {
        match self {
            Op::Conv { .. } => "Conv",
            Op::Gemm { .. } => "Gemm",
            Op::MatMul { .. } => "MatMul",
            Op::MaxPool { .. } => "MaxPool",
            Op::Relu => "Relu",
            Op::Add { .. } => "Add",
            Op::Mul { .. } => "Mul",
            Op::Concat => "Concat",
            Op::Flatten => "Flatten",
            Op::Reshape => "Reshape",
        }
    }

    /// Whether the operator holds weights in crossbars (CIM-MLC's `OpwithWeight`,
    /// codegen/Addr.py:14).
    pub fn has_weights(&self) -> bool {
        matches!(self, Op::Conv { .. } | Op::Gemm { .. } | Op::MatMul { .. })
    }

    /// How many node/input sources the operator reads: `(min, max)`.
    fn arity(&self) -> (usize, usize, &'static str) {
        match self {
            Op::Add { constant: false } | Op::Mul { constant: false } => (2, 2, "2"),
            Op::Concat => (2, 4, "2 to 4"),
            _ => (1, 1, "1"),
        }
    }
}

/// The output size of a window of `kernel` sliding with `stride` over `size` padded by
/// `before + after`, or `None` when the window does not fit.
pub fn window_out(
    size: usize,
    kernel: usize,
    stride: usize,
    before: usize,
    after: usize,
) -> Option<usize> {
    let padded = size + before + after;
    (kernel >= 1 && stride >= 1 && padded >= kernel).then(|| (padded - kernel) / stride + 1)
}

impl Network {
    /// Every node's output shape, checking the network (see [`ShapeError`]).
    pub fn shapes(&self) -> Result<Vec<Vec<usize>>, ShapeError> {
        let shapes = self.node_shapes()?;
        let mut seen = self.outputs.clone();
        seen.sort_unstable();
        seen.dedup();
        if self.outputs.is_empty()
            || seen.len() != self.outputs.len()
            || self.outputs.iter().any(|&o| o >= self.nodes.len())
        {
            return Err(ShapeError::Outputs(self.outputs.clone()));
        }
        for i in 0..self.nodes.len() {
            let read = self.nodes[i + 1..]
                .iter()
                .any(|n| n.inputs.contains(&Src::Node(i)));
            if !read && !self.outputs.contains(&i) {
                return Err(ShapeError::Dead(i));
            }
        }
        Ok(shapes)
    }

    /// Every node's output shape, checking the nodes but not the outputs (a network being
    /// built has nodes nothing reads yet).
    pub fn node_shapes(&self) -> Result<Vec<Vec<usize>>, ShapeError> {
        let input_ok = match self.input.as_slice() {
            [1, c, h, w] => *c > 0 && *h > 0 && *w > 0,
            [1, n] => *n > 0,
            _ => false,
        };
        if !input_ok {
            return Err(ShapeError::Input(self.input.clone()));
        }
        let mut shapes: Vec<Vec<usize>> = Vec::with_capacity(self.nodes.len());
        for (i, node) in self.nodes.iter().enumerate() {
            let (lo, hi, want) = node.op.arity();
            if node.inputs.len() < lo || node.inputs.len() > hi {
                return Err(ShapeError::Arity {
                    node: i,
                    op: node.op.onnx_type(),
                    want,
                    got: node.inputs.len(),
                });
            }
            let mut ins = Vec::with_capacity(node.inputs.len());
            for &src in &node.inputs {
                ins.push(match src {
                    Src::Input => self.input.clone(),
                    Src::Node(j) if j < i => shapes[j].clone(),
                    Src::Node(_) => return Err(ShapeError::Order { node: i, src }),
                });
            }
            let bad = |why: String| ShapeError::Shape {
                node: i,
                op: node.op.onnx_type(),
                why,
            };
            shapes.push(output_shape(&node.op, &ins).map_err(bad)?);
        }
        Ok(shapes)
    }

    /// The shape of a source, given the nodes' shapes.
    pub fn shape_of<'a>(&'a self, src: Src, shapes: &'a [Vec<usize>]) -> &'a [usize] {
        match src {
            Src::Input => &self.input,
            Src::Node(j) => &shapes[j],
        }
    }

    /// The nodes that read `src`.
    pub fn readers(&self, src: Src) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].inputs.contains(&src))
            .collect()
    }

    /// The same network with its input behind one weighted operator of the input's shape (a
    /// 1×1 convolution `C → C`, or a Gemm `N → N` on a `[1, N]` input), every attribute written,
    /// that every former reader of the input reads instead: what a crash is tried on to tell
    /// whether it is about an operator reading the network's input (`crate::outcome`). `None`
    /// for an input of another rank.
    pub fn with_input_behind_an_operator(&self) -> Option<Network> {
        let op = match self.input.as_slice() {
            [1, c, _, _] => Op::Conv {
                out_channels: *c,
                kernel: [1, 1],
                stride: [1, 1],
                pads: [0; 4],
                group: 1,
                bias: false,
            },
            [1, n] => Op::Gemm {
                out: *n,
                bias: false,
                trans_b: false,
            },
            _ => return None,
        };
        let front = Node {
            op,
            inputs: vec![Src::Input],
            spelling: Spelling {
                defaults: true,
                kernel_shape: true,
            },
        };
        let moved = |s: &Src| match s {
            Src::Input => Src::Node(0),
            Src::Node(j) => Src::Node(j + 1),
        };
        let nodes = std::iter::once(front)
            .chain(self.nodes.iter().map(|n| Node {
                inputs: n.inputs.iter().map(moved).collect(),
                ..n.clone()
            }))
            .collect();
        Some(Network {
            input: self.input.clone(),
            nodes,
            outputs: self.outputs.iter().map(|o| o + 1).collect(),
        })
    }
}

/// The output shape of `op` on inputs of shapes `ins`, or why there is none.
fn output_shape(op: &Op, ins: &[Vec<usize>]) -> Result<Vec<usize>, String> {
    let first = &ins[0];
    let image = |what: &str| -> Result<[usize; 3], String> {
        match first.as_slice() {
            [1, c, h, w] => Ok([*c, *h, *w]),
            other => Err(format!("{what} takes a [1, C, H, W] input, not {other:?}")),
        }
    };
    let vector = |what: &str| -> Result<usize, String> {
        match first.as_slice() {
            [1, n] => Ok(*n),
            other => Err(format!("{what} takes a [1, N] input, not {other:?}")),
        }
    };
    match op {
        Op::Conv {
            out_channels,
            kernel,
            stride,
            pads,
            group,
            ..
        } => {
            let [c, h, w] = image("a convolution")?;
            if *group == 0 || c % group != 0 || out_channels % group != 0 || *out_channels == 0 {
                return Err(format!(
                    "group {group} must divide the {c} input and {out_channels} output channels"
                ));
            }
            let oh = window_out(h, kernel[0], stride[0], pads[0], pads[2]);
            let ow = window_out(w, kernel[1], stride[1], pads[1], pads[3]);
            match (oh, ow) {
                (Some(oh), Some(ow)) => Ok(vec![1, *out_channels, oh, ow]),
                _ => Err(format!(
                    "a {kernel:?} kernel does not fit the {h}x{w} input padded {pads:?}"
                )),
            }
        }
        Op::Gemm { out, .. } | Op::MatMul { out } => {
            vector("a fully connected layer")?;
            if *out == 0 {
                return Err("no outputs".into());
            }
            Ok(vec![1, *out])
        }
        Op::MaxPool {
            kernel,
            stride,
            pads,
        } => {
            let [c, h, w] = image("pooling")?;
            // ONNX Runtime refuses padding as large as the kernel (every window of it padding).
            if pads[0] >= kernel[0]
                || pads[2] >= kernel[0]
                || pads[1] >= kernel[1]
                || pads[3] >= kernel[1]
            {
                return Err(format!(
                    "padding {pads:?} as large as the {kernel:?} window"
                ));
            }
            let oh = window_out(h, kernel[0], stride[0], pads[0], pads[2]);
            let ow = window_out(w, kernel[1], stride[1], pads[1], pads[3]);
            match (oh, ow) {
                (Some(oh), Some(ow)) => Ok(vec![1, c, oh, ow]),
                _ => Err(format!(
                    "a {kernel:?} window does not fit the {h}x{w} input padded {pads:?}"
                )),
            }
        }
        Op::Relu | Op::Add { constant: true } | Op::Mul { constant: true } => Ok(first.clone()),
        Op::Add { constant: false } | Op::Mul { constant: false } => {
            if ins[1] != *first {
                return Err(format!("operands of shapes {first:?} and {:?}", ins[1]));
            }
            Ok(first.clone())
        }
        Op::Concat => {
            let rest_alike = ins
                .iter()
                .all(|s| s.len() == first.len() && s[0] == 1 && s[2..] == first[2..]);
            if !rest_alike || first.len() < 2 {
                return Err(format!("operands {ins:?} differ beyond the channels"));
            }
            let mut out = first.clone();
            out[1] = ins.iter().map(|s| s[1]).sum();
            Ok(out)
        }
        Op::Flatten | Op::Reshape => Ok(vec![1, first[1..].iter().product()]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(out: usize, k: usize, s: usize, pads: [usize; 4], group: usize, from: Src) -> Node {
        Node {
            op: Op::Conv {
                out_channels: out,
                kernel: [k, k],
                stride: [s, s],
                pads,
                group,
                bias: true,
            },
            inputs: vec![from],
            spelling: Spelling::default(),
        }
    }

    #[test]
    fn the_input_put_behind_an_operator_feeds_every_former_reader() {
        let net = Network {
            input: vec![1, 3, 4, 4],
            nodes: vec![
                Node {
                    op: Op::Relu,
                    inputs: vec![Src::Input],
                    spelling: Spelling::default(),
                },
                Node {
                    op: Op::Concat,
                    inputs: vec![Src::Node(0), Src::Input],
                    spelling: Spelling::default(),
                },
            ],
            outputs: vec![1],
        };
        let behind = net.with_input_behind_an_operator().unwrap();
        assert_eq!(
            behind.nodes[0].op,
            Op::Conv {
                out_channels: 3,
                kernel: [1, 1],
                stride: [1, 1],
                pads: [0; 4],
                group: 1,
                bias: false,
            }
        );
        assert_eq!(behind.nodes[0].inputs, [Src::Input]);
        assert_eq!(behind.nodes[1].inputs, [Src::Node(0)]);
        assert_eq!(behind.nodes[2].inputs, [Src::Node(1), Src::Node(0)]);
        assert_eq!(behind.outputs, [2]);
        assert_eq!(behind.shapes().unwrap()[1..], net.shapes().unwrap());
        let flat = Network {
            input: vec![1, 5],
            nodes: vec![Node {
                op: Op::Relu,
                inputs: vec![Src::Input],
                spelling: Spelling::default(),
            }],
            outputs: vec![0],
        };
        assert_eq!(
            flat.with_input_behind_an_operator().unwrap().nodes[0].op,
            Op::Gemm {
                out: 5,
                bias: false,
                trans_b: false
            }
        );
    }

    #[test]
    fn shapes_follow_onnx() {
        let net = Network {
            input: vec![1, 4, 7, 5],
            nodes: vec![
                conv(6, 3, 2, [1, 0, 2, 1], 2, Src::Input),
                Node {
                    op: Op::MaxPool {
                        kernel: [2, 2],
                        stride: [1, 1],
                        pads: [0, 0, 1, 1],
                    },
                    inputs: vec![Src::Node(0)],
                    spelling: Spelling::default(),
                },
                Node {
                    op: Op::Flatten,
                    inputs: vec![Src::Node(1)],
                    spelling: Spelling::default(),
                },
                Node {
                    op: Op::Gemm {
                        out: 3,
                        bias: false,
                        trans_b: true,
                    },
                    inputs: vec![Src::Node(2)],
                    spelling: Spelling::default(),
                },
            ],
            outputs: vec![3],
        };
        // (7 + 1 + 2 - 3) / 2 + 1 = 4, (5 + 0 + 1 - 3) / 2 + 1 = 2; pooled 4x2 (padding 1).
        assert_eq!(
            net.shapes().unwrap(),
            vec![vec![1, 6, 4, 2], vec![1, 6, 4, 2], vec![1, 48], vec![1, 3]]
        );
    }

    #[test]
    fn invalid_networks_are_refused_with_the_reason() {
        let dead = Network {
            input: vec![1, 2, 3, 3],
            nodes: vec![
                conv(2, 1, 1, [0; 4], 1, Src::Input),
                conv(2, 1, 1, [0; 4], 1, Src::Input),
            ],
            outputs: vec![1],
        };
        assert_eq!(dead.shapes(), Err(ShapeError::Dead(0)));
        let grouped = Network {
            input: vec![1, 3, 3, 3],
            nodes: vec![conv(2, 1, 1, [0; 4], 2, Src::Input)],
            outputs: vec![0],
        };
        assert!(matches!(
            grouped.shapes(),
            Err(ShapeError::Shape { node: 0, .. })
        ));
        let too_small = Network {
            input: vec![1, 1, 2, 2],
            nodes: vec![conv(1, 5, 1, [1, 1, 1, 1], 1, Src::Input)],
            outputs: vec![0],
        };
        assert!(matches!(too_small.shapes(), Err(ShapeError::Shape { .. })));
        let forward = Network {
            input: vec![1, 4],
            nodes: vec![Node {
                op: Op::Relu,
                inputs: vec![Src::Node(0)],
                spelling: Spelling::default(),
            }],
            outputs: vec![0],
        };
        assert_eq!(
            forward.shapes(),
            Err(ShapeError::Order {
                node: 0,
                src: Src::Node(0)
            })
        );
    }
}
