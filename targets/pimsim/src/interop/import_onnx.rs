//! `pimdiff import-onnx`: a one-operator ONNX model becomes a case.
//!
//! What is imported: a graph whose nodes are one of
//!
//! - `Conv` / `ConvInteger` (2-D: input `[N, C, H, W]`, weight `[K, C/group, kh, kw]`; every
//!   attribute: `kernel_shape`, `strides`, `pads`, `dilations`, `group`, `auto_pad` including
//!   `SAME_UPPER` / `SAME_LOWER` / `VALID`),
//! - `MatMul` / `MatMulInteger` (input `[N, in]`, weight `[in, out]`),
//! - `Gemm` (input `[N, in]` with `transA = 0`, weight `[in, out]` or with `transB = 1`
//!   `[out, in]`, `alpha = beta = 1`),
//!
//! optionally followed by `Add` with a constant (the bias: per channel `[1, K, 1, 1]` or
//! `[K, 1, 1]` for a convolution, `[out]` or `[1, out]` for the others, or one value for all)
//! and then `Relu`. `Conv`'s `B` and `Gemm`'s `C` are biases too. Weights and biases must be
//! initializers holding integers: int8 range for the weight, int32 for the bias, in any ONNX
//! integer or floating-point type (a float model whose values are integers imports;
//! `ConvInteger` / `MatMulInteger` zero points must be 0). The graph input must have a static
//! shape. Anything else is refused with an [`ImportError`] that names what is unsupported.
//!
//! A model carries no input values, so the case's `input.npy` is random int8 (seeded, as
//! `pimdiff new-case` makes it); the architecture comes from the caller.

use std::collections::HashMap;

use ndarray::{Array1, ArrayD, IxDyn};
use pimdiff_oracle::{random_tensors, Case, CaseArch, CaseSpec, Conv2d, Mvm, Op};
use prost::Message;

use super::onnx_proto::{
    attribute_proto::AttributeType, tensor_proto::DataLocation, tensor_proto::DataType,
    tensor_shape_proto::dimension, type_proto, AttributeProto, GraphProto, ModelProto, NodeProto,
    TensorProto,
};

/// The operators that can make the case, as listed in errors.
const MAIN_OPS: &str = "Conv, ConvInteger, MatMul, MatMulInteger, Gemm";

/// Why a model cannot be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The bytes are not an ONNX model (protobuf decoding failed).
    #[error("not an ONNX model: {0}")]
    Decode(String),
    /// A valid model that uses something the case format cannot express.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A model that contradicts itself (a missing tensor, shapes that disagree).
    #[error("malformed model: {0}")]
    Malformed(String),
    /// The operator is understood but its sizes do not make a valid case.
    #[error("the model does not make a valid case: {0}")]
    Case(pimdiff_oracle::CaseError),
}

use ImportError::{Malformed, Unsupported};

/// Decodes `bytes` as an ONNX model and turns it into a case on `arch`, with a random int8
/// input from `seed` and `expected` left empty.
pub fn import_model(bytes: &[u8], arch: CaseArch, seed: u64) -> Result<Case, ImportError> {
    let model = ModelProto::decode(bytes).map_err(|e| ImportError::Decode(e.to_string()))?;
    let graph = model
        .graph
        .as_ref()
        .ok_or_else(|| Malformed("the model has no graph".into()))?;
    let parts = Parts::from_graph(graph)?;
    let op = parts.op;
    let spec = CaseSpec {
        op,
        input_shape: parts.input_shape,
        arch,
    };
    spec.validate().map_err(ImportError::Case)?;
    let input = random_tensors(&spec, seed)
        .map_err(ImportError::Case)?
        .input;
    Case::new(spec, input, parts.weight, parts.bias, None).map_err(ImportError::Case)
}

/// What the graph says: the operator, the input shape, the weight and bias in case layout.
struct Parts {
    op: Op,
    input_shape: Vec<usize>,
    weight: ArrayD<i8>,
    bias: Option<Array1<i32>>,
}

impl Parts {
    fn from_graph(graph: &GraphProto) -> Result<Parts, ImportError> {
        let initializers: HashMap<&str, &TensorProto> =
            graph.initializer.iter().map(|t| (t.name(), t)).collect();
        let data_inputs: Vec<_> = graph
            .input
            .iter()
            .filter(|v| !initializers.contains_key(v.name()))
            .collect();
        let [input] = data_inputs[..] else {
            return Err(Unsupported(format!(
                "the graph has {} inputs besides initializers; a case has exactly one (the \
                 activation)",
                data_inputs.len()
            )));
        };
        let input_shape = static_shape(input.name(), input.r#type.as_ref())?;
        let chain = Chain::parse(graph)?;
        let main = Main::parse(chain.main, input.name(), &input_shape, &initializers)?;
        let add_bias = match chain.add {
            Some(add) => Some(add_bias(add, &chain.main.output[0], &main, &initializers)?),
            None => None,
        };
        let bias = match (main.bias.clone(), add_bias) {
            (Some(_), Some(_)) => {
                return Err(Unsupported(format!(
                    "two biases: `{}` has one and so does the `Add` after it",
                    chain.main.op_type()
                )))
            }
            (b, None) | (None, b) => b,
        };
        let relu = chain.relu.is_some();
        let has_bias = bias.is_some();
        let op = match main.kind {
            MainKind::Conv(mut p) => {
                p.bias = has_bias;
                p.relu = relu;
                Op::Conv2d(p)
            }
            MainKind::Mvm(mut p) => {
                p.bias = has_bias;
                p.relu = relu;
                Op::Mvm(p)
            }
        };
        Ok(Parts {
            op,
            input_shape,
            weight: main.weight,
            bias: bias.map(Array1::from),
        })
    }
}

/// The nodes of the graph: the operator, then optionally `Add` (bias), then optionally `Relu`.
struct Chain<'g> {
    main: &'g NodeProto,
    add: Option<&'g NodeProto>,
    relu: Option<&'g NodeProto>,
}

impl<'g> Chain<'g> {
    fn parse(graph: &'g GraphProto) -> Result<Chain<'g>, ImportError> {
        let nodes = &graph.node;
        let shape = || {
            nodes
                .iter()
                .map(|n| n.op_type().to_string())
                .collect::<Vec<_>>()
                .join(" -> ")
        };
        let expected = format!(
            "a case is one of {MAIN_OPS}, optionally followed by Add (a constant bias) and Relu"
        );
        let Some((main, rest)) = nodes.split_first() else {
            return Err(Unsupported(format!("the graph has no nodes; {expected}")));
        };
        if !MAIN_OPS.split(", ").any(|op| op == main.op_type()) || !main.domain().is_empty() {
            return Err(Unsupported(format!(
                "operator `{}` (node 0, `{}`); {expected}",
                qualified(main),
                main.name()
            )));
        }
        let mut chain = Chain {
            main,
            add: None,
            relu: None,
        };
        for (i, node) in rest.iter().enumerate() {
            let slot = match node.op_type() {
                "Add" if chain.add.is_none() && chain.relu.is_none() => &mut chain.add,
                "Relu" if chain.relu.is_none() => &mut chain.relu,
                _ => {
                    return Err(Unsupported(format!(
                        "operator `{}` at node {} (graph: {}); {expected}",
                        qualified(node),
                        i + 1,
                        shape()
                    )))
                }
            };
            if !node.domain().is_empty() {
                return Err(Unsupported(format!("operator `{}`", qualified(node))));
            }
            *slot = Some(node);
        }
        let nodes_in_order: Vec<&NodeProto> = [Some(main), chain.add, chain.relu]
            .into_iter()
            .flatten()
            .collect();
        for pair in nodes_in_order.windows(2) {
            let produced = pair[0].output.first().map(String::as_str).unwrap_or("");
            if !pair[1].input.iter().any(|i| i == produced) {
                return Err(Unsupported(format!(
                    "`{}` does not consume the output of `{}`; only a chain of nodes is a case",
                    pair[1].op_type(),
                    pair[0].op_type()
                )));
            }
        }
        let last = nodes_in_order[nodes_in_order.len() - 1];
        let outputs: Vec<&str> = graph.output.iter().map(|o| o.name()).collect();
        if outputs.len() != 1 || last.output.first().map(String::as_str) != Some(outputs[0]) {
            return Err(Unsupported(format!(
                "graph outputs {outputs:?}: a case has exactly one, the output of the last node \
                 (`{}`)",
                last.op_type()
            )));
        }
        if let Some(relu) = chain.relu {
            if relu.input.len() != 1 {
                return Err(Malformed("`Relu` takes exactly one input".into()));
            }
        }
        Ok(chain)
    }
}

fn qualified(node: &NodeProto) -> String {
    if node.domain().is_empty() || node.domain() == "ai.onnx" {
        node.op_type().to_string()
    } else {
        format!("{}::{}", node.domain(), node.op_type())
    }
}

/// The operator node, understood.
struct Main {
    kind: MainKind,
    /// In case layout: conv2d `[K, C/groups, kh, kw]`, mvm `[out, in]`.
    weight: ArrayD<i8>,
    /// `Conv`'s `B` or `Gemm`'s `C`.
    bias: Option<Vec<i32>>,
    /// Output channels / features (the bias length).
    outputs: usize,
}

enum MainKind {
    Conv(Conv2d),
    Mvm(Mvm),
}

impl Main {
    fn parse(
        node: &NodeProto,
        input: &str,
        input_shape: &[usize],
        initializers: &HashMap<&str, &TensorProto>,
    ) -> Result<Main, ImportError> {
        let op = node.op_type();
        if node.input.first().map(String::as_str) != Some(input) {
            return Err(Unsupported(format!(
                "`{op}`'s first input must be the graph input `{input}`"
            )));
        }
        let constant = |i: usize, role: &str| -> Result<Option<Tensor>, ImportError> {
            match node.input.get(i).map(String::as_str) {
                None | Some("") => Ok(None),
                Some(name) => match initializers.get(name) {
                    Some(t) => Tensor::read(t, role).map(Some),
                    None => Err(Unsupported(format!(
                        "`{op}`'s {role} `{name}` is not an initializer (weights and biases must \
                         be constants stored in the model)"
                    ))),
                },
            }
        };
        let weight = constant(1, "weight")?
            .ok_or_else(|| Malformed(format!("`{op}` has no weight input")))?;
        if op.ends_with("Integer") {
            for (i, role) in [(2, "input zero point"), (3, "weight zero point")] {
                if let Some(zp) = constant(i, role)? {
                    if zp.values.iter().any(|&v| v != 0) {
                        return Err(Unsupported(format!(
                            "`{op}` with a non-zero {role} (a case has no zero points)"
                        )));
                    }
                }
            }
        }
        let attrs = Attributes::new(node)?;
        match op {
            "Conv" | "ConvInteger" => {
                let bias = if op == "Conv" {
                    constant(2, "bias")?
                } else {
                    None
                };
                conv(attrs, input_shape, weight, bias)
            }
            "MatMul" | "MatMulInteger" => {
                attrs.only(&[])?;
                matmul(input_shape, weight, false, None)
            }
            _ => {
                attrs.only(&["alpha", "beta", "transA", "transB"])?;
                for (name, value) in [
                    ("alpha", attrs.float("alpha", 1.0)?),
                    ("beta", attrs.float("beta", 1.0)?),
                ] {
                    if value != 1.0 {
                        return Err(Unsupported(format!(
                            "`Gemm` with {name} = {value} (only 1)"
                        )));
                    }
                }
                if attrs.int("transA", 0)? != 0 {
                    return Err(Unsupported("`Gemm` with transA = 1".into()));
                }
                let trans_b = attrs.int("transB", 0)? != 0;
                matmul(input_shape, weight, trans_b, constant(2, "bias C")?)
            }
        }
    }
}

fn conv(
    attrs: Attributes,
    input_shape: &[usize],
    weight: Tensor,
    bias: Option<Tensor>,
) -> Result<Main, ImportError> {
    attrs.only(&[
        "auto_pad",
        "dilations",
        "group",
        "kernel_shape",
        "pads",
        "strides",
    ])?;
    let &[_, c, h, w] = input_shape else {
        return Err(Unsupported(format!(
            "a convolution over an input of rank {} (only 2-D convolution over [N, C, H, W])",
            input_shape.len()
        )));
    };
    let &[k, cg, kh, kw] = &weight.dims[..] else {
        return Err(Unsupported(format!(
            "a convolution with a weight of rank {} (only 2-D: [K, C/group, kh, kw])",
            weight.dims.len()
        )));
    };
    let pair = |name: &str| -> Result<[usize; 2], ImportError> {
        match attrs.ints(name)?.as_deref() {
            None => Ok([1, 1]),
            Some(&[a, b]) => Ok([a, b]),
            Some(v) => Err(Malformed(format!(
                "`{name}` has {} values, a 2-D convolution 2",
                v.len()
            ))),
        }
    };
    let stride = pair("strides")?;
    let dilation = pair("dilations")?;
    if let Some(ks) = attrs.ints("kernel_shape")? {
        if ks != [kh, kw] {
            return Err(Malformed(format!(
                "kernel_shape {ks:?} disagrees with the weight's [{kh}, {kw}]"
            )));
        }
    }
    let groups = attrs.int("group", 1)?;
    let groups = usize::try_from(groups)
        .ok()
        .filter(|&g| g >= 1)
        .ok_or_else(|| Malformed(format!("group = {groups}")))?;
    let padding = match attrs.string("auto_pad")?.as_deref().unwrap_or("NOTSET") {
        "NOTSET" => match attrs.ints("pads")?.as_deref() {
            None => [0; 4],
            Some(&[t, l, b, r]) => [t, l, b, r],
            Some(v) => {
                return Err(Malformed(format!(
                    "`pads` has {} values, a 2-D convolution 4",
                    v.len()
                )))
            }
        },
        "VALID" => [0; 4],
        mode @ ("SAME_UPPER" | "SAME_LOWER") => {
            let upper = mode == "SAME_UPPER";
            let (t, b) = same_padding(h, stride[0], kh, dilation[0], upper);
            let (l, r) = same_padding(w, stride[1], kw, dilation[1], upper);
            [t, l, b, r]
        }
        other => return Err(Unsupported(format!("auto_pad = {other:?}"))),
    };
    if c != cg.saturating_mul(groups) {
        return Err(Malformed(format!(
            "the input has {c} channels but the weight [{k}, {cg}, {kh}, {kw}] with group = \
             {groups} expects {}",
            cg.saturating_mul(groups)
        )));
    }
    let conv = Conv2d {
        in_channels: c,
        out_channels: k,
        kernel: [kh, kw],
        stride,
        padding,
        dilation,
        groups,
        bias: false,
        relu: false,
    };
    Ok(Main {
        kind: MainKind::Conv(conv),
        weight: weight.to_i8()?,
        bias: bias.map(|b| b.to_bias(k, &[&[k]])).transpose()?,
        outputs: k,
    })
}

/// ONNX's `SAME_*` padding along one axis: `(begin, end)`.
fn same_padding(
    size: usize,
    stride: usize,
    kernel: usize,
    dilation: usize,
    upper: bool,
) -> (usize, usize) {
    let stride = stride.max(1);
    let out = size.div_ceil(stride);
    // Saturating: hostile attributes give huge paddings, which the case limits then refuse.
    let window = dilation
        .saturating_mul(kernel.saturating_sub(1))
        .saturating_add(1);
    let needed = out
        .saturating_sub(1)
        .saturating_mul(stride)
        .saturating_add(window)
        .saturating_sub(size);
    let small = needed / 2;
    if upper {
        (small, needed - small)
    } else {
        (needed - small, small)
    }
}

fn matmul(
    input_shape: &[usize],
    weight: Tensor,
    trans_b: bool,
    bias: Option<Tensor>,
) -> Result<Main, ImportError> {
    let &[_, features] = input_shape else {
        return Err(Unsupported(format!(
            "a matrix product with an input of rank {} (only [N, in])",
            input_shape.len()
        )));
    };
    let &[rows, cols] = &weight.dims[..] else {
        return Err(Unsupported(format!(
            "a matrix product with a weight of rank {} (only 2-D)",
            weight.dims.len()
        )));
    };
    let (in_features, out_features) = if trans_b { (cols, rows) } else { (rows, cols) };
    if in_features != features {
        return Err(Malformed(format!(
            "the input has {features} features but the weight {:?} takes {in_features}",
            weight.dims
        )));
    }
    let stored = weight.to_i8()?;
    // The case's weight is [out, in]; ONNX's B is [in, out] unless transB.
    let case_weight = if trans_b {
        stored
    } else {
        stored.reversed_axes().as_standard_layout().into_owned()
    };
    Ok(Main {
        kind: MainKind::Mvm(Mvm {
            in_features,
            out_features,
            bias: false,
            relu: false,
        }),
        weight: case_weight,
        bias: bias
            .map(|b| b.to_bias(out_features, &[&[out_features], &[1, out_features]]))
            .transpose()?,
        outputs: out_features,
    })
}

/// The bias of an `Add` node after the operator: its other input, an initializer.
fn add_bias(
    add: &NodeProto,
    produced: &str,
    main: &Main,
    initializers: &HashMap<&str, &TensorProto>,
) -> Result<Vec<i32>, ImportError> {
    Attributes::new(add)?.only(&[])?;
    let [a, b] = &add.input[..] else {
        return Err(Malformed("`Add` takes two inputs".into()));
    };
    let other = if a == produced { b } else { a };
    let tensor = initializers.get(other.as_str()).ok_or_else(|| {
        Unsupported(format!(
            "`Add` of `{other}`, which is not an initializer (only a constant bias is a case)"
        ))
    })?;
    let n = main.outputs;
    let shapes: &[&[usize]] = match main.kind {
        MainKind::Conv(_) => &[&[1, n, 1, 1], &[n, 1, 1]],
        MainKind::Mvm(_) => &[&[n], &[1, n]],
    };
    Tensor::read(tensor, "bias")?.to_bias(n, shapes)
}

/// The static shape of the graph input.
fn static_shape(
    name: &str,
    ty: Option<&super::onnx_proto::TypeProto>,
) -> Result<Vec<usize>, ImportError> {
    let Some(type_proto::Value::TensorType(t)) = ty.and_then(|t| t.value.as_ref()) else {
        return Err(Unsupported(format!("graph input `{name}` is not a tensor")));
    };
    let elem = t.elem_type();
    if !NUMERIC.contains(&elem) {
        return Err(Unsupported(format!(
            "graph input `{name}` of type {}",
            dtype_name(elem)
        )));
    }
    let shape = t
        .shape
        .as_ref()
        .ok_or_else(|| Unsupported(format!("graph input `{name}` has no shape")))?;
    shape
        .dim
        .iter()
        .enumerate()
        .map(|(i, d)| match d.value {
            Some(dimension::Value::DimValue(v)) if v >= 1 => usize::try_from(v)
                .map_err(|_| Unsupported(format!("graph input `{name}`: dimension {i} is {v}"))),
            Some(dimension::Value::DimValue(v)) => Err(Malformed(format!(
                "graph input `{name}`: dimension {i} is {v}"
            ))),
            Some(dimension::Value::DimParam(ref p)) => Err(Unsupported(format!(
                "graph input `{name}`: dimension {i} is symbolic (`{p}`); a case needs a static \
                 shape (fix it, e.g. with onnx.tools.update_model_dims)"
            ))),
            None => Err(Unsupported(format!(
                "graph input `{name}`: dimension {i} has no size; a case needs a static shape"
            ))),
        })
        .collect()
}

/// The element types a tensor may have (integers and binary floating point).
const NUMERIC: [i32; 10] = [
    DataType::Int8 as i32,
    DataType::Uint8 as i32,
    DataType::Int16 as i32,
    DataType::Uint16 as i32,
    DataType::Int32 as i32,
    DataType::Uint32 as i32,
    DataType::Int64 as i32,
    DataType::Uint64 as i32,
    DataType::Float as i32,
    DataType::Double as i32,
];

fn dtype_name(code: i32) -> String {
    DataType::try_from(code)
        .map(|d| d.as_str_name().to_string())
        .unwrap_or_else(|_| format!("data type {code}"))
}

/// An initializer's values as exact integers, with its dims.
struct Tensor {
    role: String,
    dims: Vec<usize>,
    values: Vec<i64>,
}

impl Tensor {
    fn read(t: &TensorProto, role: &str) -> Result<Tensor, ImportError> {
        let name = t.name();
        let what = format!("{role} `{name}`");
        if t.data_location() == DataLocation::External {
            return Err(Unsupported(format!(
                "{what} is stored outside the model file (external data); save the model with \
                 its data inside"
            )));
        }
        if t.segment.is_some() {
            return Err(Unsupported(format!("{what} is a segment of a tensor")));
        }
        let dims = t
            .dims
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| Malformed(format!("{what}: dimension {d}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let count = dims
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| Malformed(format!("{what}: dims {dims:?} overflow")))?;
        let values = values(t, count, &what)?;
        Ok(Tensor {
            role: what,
            dims,
            values,
        })
    }

    /// The values as int8, in a tensor of `dims` (row-major), or an error naming the first
    /// value outside −128..=127.
    fn to_i8(&self) -> Result<ArrayD<i8>, ImportError> {
        let data = self
            .values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                i8::try_from(v).map_err(|_| {
                    Unsupported(format!(
                        "{}: value {v} at flat index {i} is outside int8 (-128..=127); a case's \
                         weights are int8",
                        self.role
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        ArrayD::from_shape_vec(IxDyn(&self.dims), data)
            .map_err(|e| Malformed(format!("{}: {e}", self.role)))
    }

    /// The values as a bias of length `n`: the tensor has one of `shapes`, or a single value
    /// (broadcast to all `n`).
    fn to_bias(&self, n: usize, shapes: &[&[usize]]) -> Result<Vec<i32>, ImportError> {
        let scalar = self.values.len() == 1 && self.dims.iter().all(|&d| d == 1);
        if !scalar && !shapes.iter().any(|s| *s == self.dims) {
            return Err(Unsupported(format!(
                "{} of shape {:?}: a bias is one value per output channel ({}) or one value",
                self.role,
                self.dims,
                shapes
                    .iter()
                    .map(|s| format!("{s:?}"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            )));
        }
        let values = self
            .values
            .iter()
            .map(|&v| {
                i32::try_from(v)
                    .map_err(|_| Unsupported(format!("{}: value {v} is outside int32", self.role)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(if scalar { vec![values[0]; n] } else { values })
    }
}

/// The `count` values of `t` as exact integers, from `raw_data` or the typed field its data
/// type uses. Floating-point values must be integers.
fn values(t: &TensorProto, count: usize, what: &str) -> Result<Vec<i64>, ImportError> {
    let code = t.data_type();
    let dtype =
        DataType::try_from(code).map_err(|_| Malformed(format!("{what}: data type {code}")))?;
    let width = match dtype {
        DataType::Int8 | DataType::Uint8 => 1,
        DataType::Int16 | DataType::Uint16 => 2,
        DataType::Int32 | DataType::Uint32 | DataType::Float => 4,
        DataType::Int64 | DataType::Uint64 | DataType::Double => 8,
        other => {
            return Err(Unsupported(format!(
                "{what} of type {} (integer and float32/float64 tensors only)",
                other.as_str_name()
            )))
        }
    };
    let wrong_count = |found: usize| {
        Malformed(format!(
            "{what}: {found} values stored for dims {:?} ({count} values)",
            t.dims
        ))
    };
    let out: Vec<i64> = if let Some(raw) = t.raw_data.as_deref().filter(|r| !r.is_empty()) {
        if raw.len() != count.saturating_mul(width) {
            return Err(wrong_count(raw.len() / width));
        }
        raw.chunks_exact(width)
            .map(|b| decode_le(dtype, b))
            .collect::<Result<_, String>>()
            .map_err(|e| Unsupported(format!("{what}: {e}")))?
    } else {
        let typed: Vec<Result<i64, String>> = match dtype {
            DataType::Float => t
                .float_data
                .iter()
                .map(|&v| float_int(f64::from(v)))
                .collect(),
            DataType::Double => t.double_data.iter().map(|&v| float_int(v)).collect(),
            DataType::Int64 => t.int64_data.iter().map(|&v| Ok(v)).collect(),
            DataType::Uint32 | DataType::Uint64 => t
                .uint64_data
                .iter()
                .map(|&v| i64::try_from(v).map_err(|_| format!("value {v} is too large")))
                .collect(),
            // int8, uint8, int16, uint16, int32 live in int32_data.
            _ => t.int32_data.iter().map(|&v| Ok(i64::from(v))).collect(),
        };
        if typed.len() != count {
            return Err(wrong_count(typed.len()));
        }
        typed
            .into_iter()
            .collect::<Result<_, String>>()
            .map_err(|e| Unsupported(format!("{what}: {e}")))?
    };
    Ok(out)
}

fn decode_le(dtype: DataType, b: &[u8]) -> Result<i64, String> {
    let mut buf = [0u8; 8];
    buf[..b.len()].copy_from_slice(b);
    Ok(match dtype {
        DataType::Int8 => i64::from(b[0] as i8),
        DataType::Uint8 => i64::from(b[0]),
        DataType::Int16 => i64::from(i16::from_le_bytes([b[0], b[1]])),
        DataType::Uint16 => i64::from(u16::from_le_bytes([b[0], b[1]])),
        DataType::Int32 => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        DataType::Uint32 => i64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        DataType::Int64 => i64::from_le_bytes(buf),
        DataType::Uint64 => {
            let v = u64::from_le_bytes(buf);
            i64::try_from(v).map_err(|_| format!("value {v} is too large"))?
        }
        DataType::Float => float_int(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))?,
        _ => float_int(f64::from_le_bytes(buf))?,
    })
}

/// A floating-point value that is an integer (and fits i64), else an error.
fn float_int(v: f64) -> Result<i64, String> {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.2e18 {
        Ok(v as i64)
    } else {
        Err(format!(
            "value {v} is not an integer (a case is integer arithmetic; quantize the model first)"
        ))
    }
}

/// A node's attributes by name, with typed getters that name the attribute in errors.
struct Attributes<'n> {
    op: &'n str,
    by_name: HashMap<&'n str, &'n AttributeProto>,
}

impl<'n> Attributes<'n> {
    fn new(node: &'n NodeProto) -> Result<Attributes<'n>, ImportError> {
        let mut by_name = HashMap::new();
        for a in &node.attribute {
            if by_name.insert(a.name(), a).is_some() {
                return Err(Malformed(format!(
                    "`{}` has attribute `{}` twice",
                    node.op_type(),
                    a.name()
                )));
            }
        }
        Ok(Attributes {
            op: node.op_type(),
            by_name,
        })
    }

    /// Refuses attributes outside `known` (an unknown attribute could change the semantics).
    fn only(&self, known: &[&str]) -> Result<(), ImportError> {
        let mut unknown: Vec<&str> = self
            .by_name
            .keys()
            .copied()
            .filter(|k| !known.contains(k))
            .collect();
        unknown.sort_unstable();
        match unknown.first() {
            None => Ok(()),
            Some(name) => Err(Unsupported(format!(
                "`{}` with attribute `{name}`",
                self.op
            ))),
        }
    }

    fn typed(
        &self,
        name: &str,
        ty: AttributeType,
    ) -> Result<Option<&'n AttributeProto>, ImportError> {
        match self.by_name.get(name) {
            None => Ok(None),
            Some(a) if a.r#type() == ty => Ok(Some(a)),
            Some(a) => Err(Malformed(format!(
                "`{}` attribute `{name}` is {}, expected {}",
                self.op,
                a.r#type().as_str_name(),
                ty.as_str_name()
            ))),
        }
    }

    fn int(&self, name: &str, default: i64) -> Result<i64, ImportError> {
        Ok(self
            .typed(name, AttributeType::Int)?
            .map_or(default, |a| a.i()))
    }

    fn float(&self, name: &str, default: f32) -> Result<f32, ImportError> {
        Ok(self
            .typed(name, AttributeType::Float)?
            .map_or(default, |a| a.f()))
    }

    fn string(&self, name: &str) -> Result<Option<String>, ImportError> {
        Ok(self
            .typed(name, AttributeType::String)?
            .map(|a| String::from_utf8_lossy(a.s()).into_owned()))
    }

    /// A list of non-negative integers.
    fn ints(&self, name: &str) -> Result<Option<Vec<usize>>, ImportError> {
        let Some(a) = self.typed(name, AttributeType::Ints)? else {
            return Ok(None);
        };
        a.ints
            .iter()
            .map(|&v| {
                usize::try_from(v)
                    .map_err(|_| Unsupported(format!("`{}` attribute `{name}` holds {v}", self.op)))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}
