//! `pimdiff-puma-api.jsonl`, written by the PUMA compiler with pimdiff's patch
//! (`scripts/puma-patches/0002-model-graph.patch`): the API calls a program made, one JSON
//! object per line, and what they ask for.
//!
//! ```json
//! {"op": "mvm", "model": 4, "out": 9, "a": 7, "b": 0, "tensor": 5, "imm": 0, "h": 0, "w": 0}
//! ```
//!
//! `op` is `input` (an input read as a value: `tensor` is the input), `alu` (`h` is the
//! opcode's number in `ALUVectorOperation::OpCode`, `src/operations.h:257-265`; `b` the second
//! operand, `imm` the immediate of `muli`), `sig-stream`, `maxpool` (`h` and `w` the spans),
//! `mvm` and `conv` (`tensor` the matrix), `assign` (`tensor` the output, `a` the value) or
//! `training`; every value and tensor is named by its address, as in `<model>-graph.json`
//! ([`super::graph`]), and 0 is none.
//!
//! The dumped graph is what the compiler built from these calls, so a defect in how a call
//! builds its operations (a convolution's padding or its reads of a strided stream, max
//! pooling's windows: `src/operations.cpp`) is in the graph too, and a program that computes
//! its graph faithfully still computes the wrong thing. [`describe`] rebuilds one model's calls
//! as a network description ([`PumaNetwork`], the hunt's) over the dumped model's tensors, when
//! the calls stay within what a description expresses and the API's rules
//! ([`PumaNetwork::check`]); its exact reference ([`super::reference`]) is what the calls ask
//! for, the same meaning a hunt checks against.

use std::collections::BTreeMap;
use std::path::Path;

use ndarray::{ArrayD, IxDyn};
use pimdiff_input::{read, Limit};
use serde::Deserialize;

use super::graph::{GraphData, MatrixShape, ModelGraph, TensorShape};
use super::network::{CompileOptions, Input, Matrix, NetworkError, Op, Output, PumaNetwork};
use super::reference::{reference, NumericRange, OutputTensor};
use super::tensors::NetworkData;

/// The log's name in the program's working directory.
pub const API_LOG: &str = "pimdiff-puma-api.jsonl";

/// The largest log read: 256 MiB (about 150 bytes per call).
pub const MAX_API_BYTES: Limit = Limit {
    name: "MAX_API_BYTES",
    bytes: 256 << 20,
};

/// `ALUVectorOperation::OpCode` in the order of its declaration (`src/operations.h:257-265`).
const ALU_CODES: [&str; 26] = [
    "add",
    "sub",
    "mul",
    "div",
    "muli",
    "and",
    "or",
    "not",
    "eq",
    "neq",
    "lt",
    "leq",
    "gt",
    "geq",
    "min",
    "max",
    "mse",
    "sig",
    "tanh",
    "exp",
    "log",
    "relu",
    "relud",
    "log_softmax",
    "log_softmaxd",
    "rndcmp",
];

/// One logged call.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    pub op: String,
    pub model: u64,
    pub out: u64,
    pub a: u64,
    pub b: u64,
    pub tensor: u64,
    pub imm: f64,
    pub h: u32,
    pub w: u32,
}

/// Reads the log in `dir`; `Ok(None)` when there is none (the program made no call).
pub fn read_calls(dir: &Path) -> Result<Option<Vec<Call>>, String> {
    let path = dir.join(API_LOG);
    if !path.exists() {
        return Ok(None);
    }
    let bytes = read(&path, MAX_API_BYTES).map_err(|e| format!("{API_LOG}: {e}"))?;
    String::from_utf8_lossy(&bytes)
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| serde_json::from_str(l).map_err(|e| format!("{API_LOG}:{}: {e}", n + 1)))
        .collect::<Result<Vec<Call>, String>>()
        .map(Some)
}

/// A model's calls as a description, and for each of its outputs the dumped model's output.
#[derive(Clone, Debug, PartialEq)]
pub struct Described {
    pub network: PumaNetwork,
    /// `outputs[j]` is the index in [`ModelGraph::outputs`] of the description's output `j`.
    pub outputs: Vec<usize>,
}

/// The calls of `graph`'s model as a description over its tensors (module docs); `Err` says
/// why the calls have no meaning a description expresses.
pub fn describe(calls: &[Call], graph: &ModelGraph) -> Result<Described, String> {
    let mut net = PumaNetwork {
        model: "api".into(),
        options: CompileOptions::default(),
        inputs: graph.inputs.iter().enumerate().map(input).collect(),
        matrices: graph
            .matrices
            .iter()
            .enumerate()
            .map(matrix)
            .collect::<Result<_, _>>()?,
        values: Vec::new(),
        outputs: Vec::new(),
    };
    let find = |what: &str, ids: Vec<u64>, id: u64| {
        ids.iter()
            .position(|&x| x == id && x != 0)
            .ok_or_else(|| format!("a call names {what} {id}, which the dump does not hold"))
    };
    let input_ids: Vec<u64> = graph.inputs.iter().map(|t| t.id).collect();
    let matrix_ids: Vec<u64> = graph.matrices.iter().map(|m| m.id).collect();
    let output_ids: Vec<u64> = graph.outputs.iter().map(|t| t.id).collect();
    let mut values: BTreeMap<u64, usize> = BTreeMap::new();
    let mut outputs = Vec::new();
    for call in calls.iter().filter(|c| c.model == graph.model_id) {
        let operand = |id: u64| {
            values
                .get(&id)
                .copied()
                .ok_or_else(|| format!("a `{}` call reads a value no logged call made", call.op))
        };
        let op = match call.op.as_str() {
            "input" => Op::Input {
                input: find("input", input_ids.clone(), call.tensor)?,
            },
            "mvm" => Op::Mvm {
                matrix: find("matrix", matrix_ids.clone(), call.tensor)?,
                x: operand(call.a)?,
            },
            "conv" => Op::Conv {
                matrix: find("matrix", matrix_ids.clone(), call.tensor)?,
                x: operand(call.a)?,
            },
            "sig-stream" => Op::Sig {
                x: operand(call.a)?,
            },
            "maxpool" => Op::MaxPool {
                hspan: call.h,
                wspan: call.w,
                x: operand(call.a)?,
            },
            "alu" => alu(call, &operand)?,
            "assign" => {
                let o = find("output", output_ids.clone(), call.tensor)?;
                if outputs.contains(&o) {
                    return Err(format!(
                        "output `{}` is assigned twice",
                        graph.outputs[o].name
                    ));
                }
                net.outputs.push(output(graph, o, operand(call.a)?));
                outputs.push(o);
                continue;
            }
            other => return Err(format!("a `{other}` call (the description has none)")),
        };
        net.values.push(op);
        values.insert(call.out, net.values.len() - 1);
    }
    declare_paddings(&mut net)?;
    Ok(Described {
        network: net,
        outputs,
    })
}

fn input((k, t): (usize, &super::graph::GraphTensor)) -> Input {
    let name = format!("i{k}");
    match t.shape {
        TensorShape::Vector { length } => Input::Vector { name, length },
        TensorShape::Image {
            width,
            height,
            channels,
            stride,
            ..
        } => Input::Image {
            name,
            width,
            height,
            channels,
            stride,
        },
    }
}

fn matrix((k, m): (usize, &super::graph::GraphMatrix)) -> Result<Matrix, String> {
    let name = format!("m{k}");
    Ok(match m.shape {
        MatrixShape::Dense { width, height } => Matrix::Dense {
            name,
            width,
            height,
        },
        MatrixShape::Conv {
            kernel_width,
            kernel_height,
            in_channels,
            out_channels,
            stride,
            out_width,
            out_height,
        } => Matrix::Conv {
            name,
            kernel_width,
            kernel_height,
            in_channels,
            out_channels,
            stride,
            out_width,
            out_height,
            padding_width: None,
            padding_height: None,
        },
        MatrixShape::Training { .. } => return Err(format!("training matrix `{}`", m.name)),
    })
}

fn output(graph: &ModelGraph, o: usize, value: usize) -> Output {
    let name = format!("o{o}");
    match graph.outputs[o].shape {
        TensorShape::Vector { length } => Output::Vector {
            name,
            length,
            value,
        },
        TensorShape::Image {
            width,
            height,
            channels,
            ..
        } => Output::Image {
            name,
            width,
            height,
            channels,
            value,
        },
    }
}

/// An ALU call as a description's operation, where it has one.
fn alu(call: &Call, operand: &dyn Fn(u64) -> Result<usize, String>) -> Result<Op, String> {
    let name = ALU_CODES.get(call.h as usize).copied().unwrap_or("unknown");
    let x = operand(call.a)?;
    Ok(match name {
        "add" => Op::Add {
            a: x,
            b: operand(call.b)?,
        },
        "sub" => Op::Sub {
            a: x,
            b: operand(call.b)?,
        },
        "mul" => Op::Mul {
            a: x,
            b: operand(call.b)?,
        },
        "relu" => Op::Relu { x },
        "sig" => Op::Sig { x },
        "tanh" => Op::Tanh { x },
        "muli" if call.imm.fract() == 0.0 && call.imm.abs() <= 32767.0 => Op::Scale {
            factor: call.imm as i32,
            x,
        },
        "muli" => return Err(format!("a scale by {} (not an integer)", call.imm)),
        other => {
            return Err(format!(
                "ALU operation `{other}` (the description has none)"
            ))
        }
    })
}

/// Sets every convolution's padding to the one its declared size implies (the snapshot's test
/// formula solved for the padding, `docs/puma.md`), or says why a size implies none.
fn declare_paddings(net: &mut PumaNetwork) -> Result<(), String> {
    for _ in 0..=2 * net.matrices.len() + 1 {
        let e = match net.check() {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        let NetworkError::ConvOutputSize {
            ref matrix,
            axis,
            declared,
            extent,
            kernel,
            stride,
            ..
        } = e
        else {
            return Err(format!("the calls break the API's rules: {e}"));
        };
        let total =
            i64::from(declared - 1) * i64::from(stride) + i64::from(kernel) - i64::from(extent);
        let Some(m) = net.matrices.iter_mut().find(|m| m.name() == matrix) else {
            return Err(e.to_string());
        };
        let Matrix::Conv {
            padding_width,
            padding_height,
            ..
        } = m
        else {
            return Err(e.to_string());
        };
        let slot = if axis == "width" {
            padding_width
        } else {
            padding_height
        };
        if total < 0 || total % 2 != 0 || slot.is_some() {
            return Err(format!(
                "the calls break the API's rules: {e} (and the size implies no whole padding)"
            ));
        }
        *slot = Some((total / 2) as u32);
    }
    Err("the convolutions' sizes imply no consistent paddings".into())
}

/// The data of a dump as a description's: inputs and weights in the same orders and layouts.
pub fn network_data(net: &PumaNetwork, data: &GraphData) -> Result<NetworkData, String> {
    let shaped = |what: &str, shape: Vec<usize>, v: Vec<i64>| {
        ArrayD::from_shape_vec(IxDyn(&shape), v)
            .map_err(|_| format!("the dump's {what} does not have the shape {shape:?}"))
    };
    Ok(NetworkData {
        inputs: net
            .inputs
            .iter()
            .zip(&data.inputs)
            .map(|(i, v)| shaped("input", i.data_shape(), v.clone()))
            .collect::<Result<_, _>>()?,
        weights: net
            .matrices
            .iter()
            .zip(&data.weights)
            .map(|(m, w)| {
                shaped(
                    "matrix",
                    m.data_shape(),
                    w.iter().map(|&v| v.into()).collect(),
                )
            })
            .collect::<Result<_, _>>()?,
    })
}

/// What the calls ask one of the dumped model's outputs to hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiOutput {
    /// `[length]` or `[height, width, channels]`, meaningful where known.
    pub tensor: OutputTensor,
    /// The description's value assigned to it, and its operation (`conv`, `mvm`, ...).
    pub value: usize,
    pub op: String,
}

/// What the calls ask each of the dumped model's outputs to hold (`None` for an output no
/// call assigned), on `data`.
pub fn expected_outputs(
    described: &Described,
    graph: &ModelGraph,
    data: &GraphData,
) -> Result<Vec<Option<ApiOutput>>, String> {
    let net = &described.network;
    let nd = network_data(net, data)?;
    let r = reference(net, &nd, NumericRange::PUMA_WORD)
        .map_err(|e| format!("the API's reference: {e}"))?;
    let mut out = vec![None; graph.outputs.len()];
    for (j, tensor) in r.outputs.into_iter().enumerate() {
        let value = net.outputs[j].value();
        out[described.outputs[j]] = Some(ApiOutput {
            tensor,
            value,
            op: net.values[value].name().to_string(),
        });
    }
    Ok(out)
}
