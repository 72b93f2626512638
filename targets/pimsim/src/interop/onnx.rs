//! `model.onnx`: a case as one ONNX graph with the case's integer semantics exactly.
//!
//! The graph (opset [`OPSET`], IR version [`IR_VERSION`]):
//!
//! | case | nodes |
//! |---|---|
//! | conv2d | `ConvInteger(input, weight)` → [`Add(·, bias)`] → [`Relu`] → `output` |
//! | mvm | `MatMulInteger(input, weight)` → [`Add(·, bias)`] → [`Relu`] → `output` |
//!
//! - One graph input, `input`: int8, the shape of `input.npy` (NCHW for conv2d, `[N, in]` for
//!   MVM). One graph output, `output`: int32, the shape of `expected.npy`.
//! - `weight` is an int8 initializer. For conv2d it is `weight.npy` as it is (`[K, C/groups,
//!   kh, kw]`, ONNX's own layout); for MVM it is the **transpose** of `weight.npy`, `[in, out]`,
//!   because `MatMulInteger` computes `input · weight`.
//! - `bias` (when the case has one) is an int32 initializer: `[1, K, 1, 1]` for conv2d (so it
//!   broadcasts over NCHW), `[out]` for MVM. The ReLU is a node of its own, after the bias.
//! - Every `ConvInteger` attribute is written explicitly: `kernel_shape`, `strides`, `pads`
//!   (`[top, left, bottom, right]`, the case format's order), `dilations`, `group`. No zero
//!   points: both default to 0.
//!
//! `ConvInteger` and `MatMulInteger` multiply int8 by int8 into int32, and `Add`/`Relu` work on
//! int32, so the graph computes exactly what the oracle computes (the case reader has already
//! refused cases whose exact values do not fit int32). `tests/interop_python.rs` checks this
//! with ONNX's own checker and reference evaluator.

use ndarray::ArrayD;
use pimdiff_oracle::{Case, Op};
use prost::Message;

use super::onnx_proto::{
    attribute_proto::AttributeType, tensor_proto::DataType, tensor_shape_proto, type_proto,
    AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto, TensorShapeProto, TypeProto,
    ValueInfoProto,
};

/// The default-domain opset the model imports: 17 (`Relu` on int32 needs 14 or newer).
pub const OPSET: i64 = 17;
/// The IR version of the model: 8, the one that goes with opset 17.
pub const IR_VERSION: i64 = 8;
/// Name of the graph input (the case's `input.npy`).
pub const INPUT: &str = "input";
/// Name of the graph output (the case's `expected.npy`).
pub const OUTPUT: &str = "output";
/// Name of the weight initializer.
pub const WEIGHT: &str = "weight";
/// Name of the bias initializer.
pub const BIAS: &str = "bias";

/// The case as a serialized ONNX model (the bytes of `model.onnx`).
pub fn model_bytes(case: &Case) -> Vec<u8> {
    model(case).encode_to_vec()
}

/// The case as an ONNX model (see the module documentation for its layout).
pub fn model(case: &Case) -> ModelProto {
    let spec = &case.spec;
    let (main, weight) = match &spec.op {
        Op::Conv2d(p) => {
            let attributes = vec![
                ints_attribute("kernel_shape", &p.kernel),
                ints_attribute("strides", &p.stride),
                ints_attribute("pads", &p.padding),
                ints_attribute("dilations", &p.dilation),
                int_attribute("group", p.groups),
            ];
            let weight = i8_tensor(WEIGHT, &case.weight, "weight.npy: [K, C/groups, kh, kw]");
            (("ConvInteger", attributes), weight)
        }
        Op::Mvm(_) => {
            let transposed = case.weight.t().as_standard_layout().into_owned();
            let weight = i8_tensor(
                WEIGHT,
                &transposed,
                "the transpose of weight.npy: [in, out]",
            );
            (("MatMulInteger", Vec::new()), weight)
        }
    };
    let mut initializers = vec![weight];
    let mut steps: Vec<(&str, Vec<AttributeProto>, Vec<String>)> =
        vec![(main.0, main.1, vec![INPUT.to_string(), WEIGHT.to_string()])];
    if let Some(bias) = &case.bias {
        let shape = match &spec.op {
            Op::Conv2d(_) => vec![1, bias.len(), 1, 1],
            Op::Mvm(_) => vec![bias.len()],
        };
        initializers.push(i32_tensor(BIAS, &shape, bias.iter().copied(), "bias.npy"));
        steps.push(("Add", Vec::new(), vec![String::new(), BIAS.to_string()]));
    }
    if spec.op.has_relu() {
        steps.push(("Relu", Vec::new(), vec![String::new()]));
    }
    let nodes = chain(steps);
    let graph = GraphProto {
        name: Some("pimdiff_case".to_string()),
        doc_string: Some(describe(case)),
        node: nodes,
        initializer: initializers,
        input: vec![value_info(INPUT, DataType::Int8, &spec.input_shape)],
        output: vec![value_info(OUTPUT, DataType::Int32, &spec.output_shape())],
        ..Default::default()
    };
    pimdiff_onnx::pimdiff_model(
        IR_VERSION,
        OPSET,
        env!("CARGO_PKG_VERSION"),
        "A pimdiff case: int8 input and weights, exact int32 result (docs/case-format.md).",
        graph,
    )
}

/// Links the steps into nodes: each step's empty input names the previous step's output; the
/// last step writes [`OUTPUT`], the others `t0`, `t1`, ...
fn chain(steps: Vec<(&str, Vec<AttributeProto>, Vec<String>)>) -> Vec<NodeProto> {
    let count = steps.len();
    let mut previous = String::new();
    let mut nodes = Vec::with_capacity(count);
    for (i, (op, attribute, inputs)) in steps.into_iter().enumerate() {
        let output = if i + 1 == count {
            OUTPUT.to_string()
        } else {
            format!("t{i}")
        };
        let input = inputs
            .into_iter()
            .map(|name| {
                if name.is_empty() {
                    previous.clone()
                } else {
                    name
                }
            })
            .collect();
        nodes.push(NodeProto {
            input,
            output: vec![output.clone()],
            name: Some(format!("{}_{i}", op.to_ascii_lowercase())),
            op_type: Some(op.to_string()),
            domain: Some(String::new()),
            attribute,
            ..Default::default()
        });
        previous = output;
    }
    nodes
}

/// One line naming the operator and its parameters, as the graph's doc string.
fn describe(case: &Case) -> String {
    let spec = &case.spec;
    let epilogue = match (spec.op.has_bias(), spec.op.has_relu()) {
        (true, true) => ", bias, relu",
        (true, false) => ", bias",
        (false, true) => ", relu",
        (false, false) => "",
    };
    match &spec.op {
        Op::Conv2d(p) => format!(
            "conv2d: input {:?}, kernel {:?}, stride {:?}, padding {:?} (top, left, bottom, right), \
             dilation {:?}, groups {}, out_channels {}{epilogue}",
            spec.input_shape, p.kernel, p.stride, p.padding, p.dilation, p.groups, p.out_channels
        ),
        Op::Mvm(p) => format!(
            "mvm: input {:?}, in_features {}, out_features {}{epilogue}",
            spec.input_shape, p.in_features, p.out_features
        ),
    }
}

fn dims(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&d| d as i64).collect()
}

fn ints_attribute(name: &str, values: &[usize]) -> AttributeProto {
    AttributeProto {
        name: Some(name.to_string()),
        r#type: Some(AttributeType::Ints as i32),
        ints: dims(values),
        ..Default::default()
    }
}

fn int_attribute(name: &str, value: usize) -> AttributeProto {
    AttributeProto {
        name: Some(name.to_string()),
        r#type: Some(AttributeType::Int as i32),
        i: Some(value as i64),
        ..Default::default()
    }
}

fn i8_tensor(name: &str, array: &ArrayD<i8>, doc: &str) -> TensorProto {
    TensorProto {
        name: Some(name.to_string()),
        doc_string: Some(doc.to_string()),
        dims: dims(array.shape()),
        data_type: Some(DataType::Int8 as i32),
        // Row-major element order, one byte each (two's complement), as ONNX's raw_data says.
        raw_data: Some(array.iter().map(|&v| v as u8).collect()),
        ..Default::default()
    }
}

fn i32_tensor(
    name: &str,
    shape: &[usize],
    values: impl Iterator<Item = i32>,
    doc: &str,
) -> TensorProto {
    TensorProto {
        name: Some(name.to_string()),
        doc_string: Some(doc.to_string()),
        dims: dims(shape),
        data_type: Some(DataType::Int32 as i32),
        // raw_data is little-endian whatever the host, per the ONNX specification.
        raw_data: Some(values.flat_map(i32::to_le_bytes).collect()),
        ..Default::default()
    }
}

fn value_info(name: &str, elem: DataType, shape: &[usize]) -> ValueInfoProto {
    let dim = shape
        .iter()
        .map(|&d| tensor_shape_proto::Dimension {
            value: Some(tensor_shape_proto::dimension::Value::DimValue(d as i64)),
            ..Default::default()
        })
        .collect();
    ValueInfoProto {
        name: Some(name.to_string()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(elem as i32),
                shape: Some(TensorShapeProto { dim }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}
