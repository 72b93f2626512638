//! `model.onnx`: a network and its data as the ONNX model CIM-MLC reads.
//!
//! Opset [`OPSET`], IR version [`IR_VERSION`] (what CIM-MLC's pinned onnx 1.13 reads). Every
//! tensor is float32, as CIM-MLC's own exporter writes them and as ONNX Runtime (which CIM-MLC
//! runs for the shapes) expects, holding the network's integer values exactly. The one graph
//! input is named `input`; node `i`'s output is `n{i}_out`, except that a node whose value is
//! a network output is named `output` (the first) or `output_{k}`; initializers are named by
//! [`crate::data`]. Attributes at their defaults are written or left out per node
//! ([`crate::network::Spelling`]).

use pimdiff_onnx::{
    attribute_proto::AttributeType, tensor_proto::DataType, tensor_shape_proto, type_proto,
    AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto, TensorShapeProto, TypeProto,
    ValueInfoProto,
};
use prost::Message;

use crate::data::{bias_name, constant_name, shape_name, weight_name, NetData, INPUT};
use crate::network::{Network, Op, ShapeError, Src};

/// The default-domain opset the model imports.
pub const OPSET: i64 = 13;
/// The IR version that goes with it.
pub const IR_VERSION: i64 = 7;

/// The name of a value in the model.
pub fn value_name(network: &Network, src: Src) -> String {
    match src {
        Src::Input => INPUT.to_string(),
        Src::Node(i) => match network.outputs.iter().position(|&o| o == i) {
            Some(0) => "output".to_string(),
            Some(k) => format!("output_{k}"),
            None => format!("n{i}_out"),
        },
    }
}

/// The serialized model (the bytes of `model.onnx`).
pub fn model_bytes(network: &Network, data: &NetData) -> Result<Vec<u8>, ShapeError> {
    Ok(model(network, data)?.encode_to_vec())
}

/// The model (see the module docs).
pub fn model(network: &Network, data: &NetData) -> Result<ModelProto, ShapeError> {
    let shapes = network.shapes()?;
    let mut nodes = Vec::new();
    let mut initializers: Vec<TensorProto> = data
        .params
        .iter()
        .map(|(name, values)| {
            float_tensor(
                name,
                values.shape(),
                values.iter().map(|&v| v as f32).collect(),
            )
        })
        .collect();
    for (i, node) in network.nodes.iter().enumerate() {
        let mut inputs: Vec<String> = node
            .inputs
            .iter()
            .map(|&s| value_name(network, s))
            .collect();
        let d = node.spelling.defaults;
        let mut attrs = Vec::new();
        match &node.op {
            Op::Conv {
                kernel,
                stride,
                pads,
                group,
                bias,
                ..
            } => {
                inputs.push(weight_name(i));
                if *bias {
                    inputs.push(bias_name(i));
                }
                if node.spelling.kernel_shape {
                    attrs.push(ints("kernel_shape", kernel));
                }
                push_unless_default(&mut attrs, d, ints("strides", stride), stride == &[1, 1]);
                push_unless_default(&mut attrs, d, ints("pads", pads), pads == &[0; 4]);
                push_unless_default(&mut attrs, d, ints("dilations", &[1, 1]), true);
                push_unless_default(&mut attrs, d, int("group", *group), *group == 1);
            }
            Op::Gemm { bias, trans_b, .. } => {
                inputs.push(weight_name(i));
                if *bias {
                    inputs.push(bias_name(i));
                }
                push_unless_default(&mut attrs, d, float("alpha", 1.0), true);
                push_unless_default(&mut attrs, d, float("beta", 1.0), true);
                push_unless_default(&mut attrs, d, int("transA", 0), true);
                push_unless_default(&mut attrs, d, int("transB", *trans_b as usize), !trans_b);
            }
            Op::MatMul { .. } => inputs.push(weight_name(i)),
            Op::MaxPool {
                kernel,
                stride,
                pads,
            } => {
                attrs.push(ints("kernel_shape", kernel));
                push_unless_default(&mut attrs, d, ints("strides", stride), stride == &[1, 1]);
                push_unless_default(&mut attrs, d, ints("pads", pads), pads == &[0; 4]);
                push_unless_default(&mut attrs, d, int("ceil_mode", 0), true);
            }
            Op::Add { constant: true } | Op::Mul { constant: true } => {
                inputs.push(constant_name(i))
            }
            Op::Concat => attrs.push(int("axis", 1)),
            Op::Flatten => push_unless_default(&mut attrs, d, int("axis", 1), true),
            Op::Reshape => {
                inputs.push(shape_name(i));
                initializers.push(TensorProto {
                    name: Some(shape_name(i)),
                    dims: vec![2],
                    data_type: Some(DataType::Int64 as i32),
                    int64_data: vec![1, -1],
                    ..Default::default()
                });
            }
            Op::Relu | Op::Add { .. } | Op::Mul { .. } => {}
        }
        nodes.push(NodeProto {
            name: Some(format!("n{i}_{}", node.op.onnx_type().to_ascii_lowercase())),
            op_type: Some(node.op.onnx_type().to_string()),
            input: inputs,
            output: vec![value_name(network, Src::Node(i))],
            attribute: attrs,
            ..Default::default()
        });
    }
    let outputs = network
        .outputs
        .iter()
        .map(|&o| value_info(&value_name(network, Src::Node(o)), &shapes[o]))
        .collect();
    let graph = GraphProto {
        name: Some("pimdiff_network".to_string()),
        node: nodes,
        initializer: initializers,
        input: vec![value_info(INPUT, &network.input)],
        output: outputs,
        ..Default::default()
    };
    Ok(pimdiff_onnx::pimdiff_model(
        IR_VERSION,
        OPSET,
        env!("CARGO_PKG_VERSION"),
        "A pimdiff network for CIM-MLC: float32 tensors holding integers (docs/cim-mlc.md).",
        graph,
    ))
}

fn push_unless_default(
    attrs: &mut Vec<AttributeProto>,
    write: bool,
    a: AttributeProto,
    is_default: bool,
) {
    if write || !is_default {
        attrs.push(a);
    }
}

fn ints(name: &str, values: &[usize]) -> AttributeProto {
    AttributeProto {
        name: Some(name.to_string()),
        r#type: Some(AttributeType::Ints as i32),
        ints: values.iter().map(|&v| v as i64).collect(),
        ..Default::default()
    }
}

fn int(name: &str, value: usize) -> AttributeProto {
    AttributeProto {
        name: Some(name.to_string()),
        r#type: Some(AttributeType::Int as i32),
        i: Some(value as i64),
        ..Default::default()
    }
}

fn float(name: &str, value: f32) -> AttributeProto {
    AttributeProto {
        name: Some(name.to_string()),
        r#type: Some(AttributeType::Float as i32),
        f: Some(value),
        ..Default::default()
    }
}

fn float_tensor(name: &str, dims: &[usize], values: Vec<f32>) -> TensorProto {
    TensorProto {
        name: Some(name.to_string()),
        dims: dims.iter().map(|&d| d as i64).collect(),
        data_type: Some(DataType::Float as i32),
        float_data: values,
        ..Default::default()
    }
}

fn value_info(name: &str, shape: &[usize]) -> ValueInfoProto {
    let dims = shape
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
                elem_type: Some(DataType::Float as i32),
                shape: Some(TensorShapeProto { dim: dims }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}
