//! Exports (`model.onnx`, `op.mlir`, `check.py`) and `import-onnx`, without Python: the
//! exported graph node by node, the MLIR text (snapshots), export → import round trips over the
//! generator, every refusal of the importer with its exact message, and atomic writing.
//! `tests/interop_python.rs` runs the exports through ONNX, IREE and NumPy.

use ndarray::ArrayD;
use pimdiff::interop::import_onnx::{import_model, ImportError};
use pimdiff::interop::onnx_proto::{
    attribute_proto::AttributeType, tensor_proto::DataLocation, tensor_proto::DataType,
    tensor_shape_proto::dimension, type_proto, AttributeProto, ModelProto, NodeProto, TensorProto,
};
use pimdiff::interop::{mlir, onnx, write_case_with_exports, write_exports};
use pimdiff::targets::tensor::generate::{case_strategy, GenConfig};
use pimdiff_oracle::{random_tensors, Case, CaseArch, CaseSpec, Conv2d, Mvm, Op};
use proptest::prelude::*;
use prost::Message;

const ARCH: CaseArch = CaseArch {
    cores: 2,
    arrays_per_core: 4,
    array_rows: 8,
    array_cols: 8,
    local_memory_bytes: 65536,
};

fn conv(p: Conv2d, n: usize, h: usize, w: usize, seed: u64) -> Case {
    let spec = CaseSpec {
        op: Op::Conv2d(p),
        input_shape: vec![n, p.in_channels, h, w],
        arch: ARCH,
    };
    random_tensors(&spec, seed).expect("a valid test case")
}

fn mvm(p: Mvm, n: usize, seed: u64) -> Case {
    let spec = CaseSpec {
        op: Op::Mvm(p),
        input_shape: vec![n, p.in_features],
        arch: ARCH,
    };
    random_tensors(&spec, seed).expect("a valid test case")
}

fn conv_params() -> Conv2d {
    Conv2d {
        in_channels: 2,
        out_channels: 2,
        kernel: [2, 2],
        stride: [1, 1],
        padding: [0; 4],
        dilation: [1, 1],
        groups: 1,
        bias: false,
        relu: false,
    }
}

fn small_conv() -> Case {
    conv(
        Conv2d {
            padding: [1, 0, 0, 1],
            bias: true,
            relu: true,
            ..conv_params()
        },
        1,
        3,
        3,
        1,
    )
}

fn small_mvm() -> Case {
    mvm(
        Mvm {
            in_features: 3,
            out_features: 2,
            bias: true,
            relu: false,
        },
        2,
        2,
    )
}

fn ints(node: &NodeProto, name: &str) -> Vec<i64> {
    let a = node
        .attribute
        .iter()
        .find(|a| a.name() == name)
        .unwrap_or_else(|| panic!("no attribute {name}"));
    assert_eq!(a.r#type(), AttributeType::Ints);
    a.ints.clone()
}

#[test]
fn conv_model_is_conv_integer_add_relu_with_every_attribute() {
    let case = conv(
        Conv2d {
            in_channels: 4,
            out_channels: 6,
            kernel: [3, 2],
            stride: [2, 1],
            padding: [1, 2, 0, 3],
            dilation: [1, 2],
            groups: 2,
            bias: true,
            relu: true,
        },
        2,
        7,
        6,
        3,
    );
    let model = ModelProto::decode(&onnx::model_bytes(&case)[..]).unwrap();
    assert_eq!(model.ir_version(), onnx::IR_VERSION);
    assert_eq!(model.opset_import[0].version(), onnx::OPSET);
    let g = model.graph.unwrap();
    let ops: Vec<&str> = g.node.iter().map(|n| n.op_type()).collect();
    assert_eq!(ops, ["ConvInteger", "Add", "Relu"]);
    let c = &g.node[0];
    assert_eq!(c.input, ["input", "weight"]);
    assert_eq!(ints(c, "kernel_shape"), [3, 2]);
    assert_eq!(ints(c, "strides"), [2, 1]);
    assert_eq!(ints(c, "pads"), [1, 2, 0, 3]);
    assert_eq!(ints(c, "dilations"), [1, 2]);
    let group = c.attribute.iter().find(|a| a.name() == "group").unwrap();
    assert_eq!((group.r#type(), group.i()), (AttributeType::Int, 2));
    assert_eq!(g.node[1].input, [c.output[0].clone(), "bias".to_string()]);
    assert_eq!(g.node[2].input, g.node[1].output);
    assert_eq!(g.node[2].output, ["output"]);
    let w = &g.initializer[0];
    assert_eq!((w.name(), w.data_type()), ("weight", DataType::Int8 as i32));
    assert_eq!(w.dims, [6, 2, 3, 2]);
    let bytes: Vec<u8> = case.weight.iter().map(|&v| v as u8).collect();
    assert_eq!(w.raw_data(), &bytes[..]);
    let b = &g.initializer[1];
    assert_eq!((b.name(), b.data_type()), ("bias", DataType::Int32 as i32));
    assert_eq!(b.dims, [1, 6, 1, 1]);
    let bias: Vec<u8> = case
        .bias
        .as_ref()
        .unwrap()
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(b.raw_data(), &bias[..]);
    let shape = |v: &pimdiff::interop::onnx_proto::ValueInfoProto| -> (i32, Vec<i64>) {
        let Some(type_proto::Value::TensorType(t)) = v.r#type.as_ref().unwrap().value.clone()
        else {
            panic!("not a tensor");
        };
        let dims = t.shape.as_ref().unwrap().dim.iter().map(|d| match d.value {
            Some(dimension::Value::DimValue(v)) => v,
            _ => panic!("symbolic"),
        });
        (t.elem_type(), dims.collect())
    };
    assert_eq!(
        shape(&g.input[0]),
        (DataType::Int8 as i32, vec![2, 4, 7, 6])
    );
    assert_eq!(
        shape(&g.output[0]),
        (DataType::Int32 as i32, vec![2, 6, 3, 9])
    );
}

#[test]
fn mvm_model_multiplies_by_the_transposed_weight() {
    let case = mvm(
        Mvm {
            in_features: 3,
            out_features: 2,
            bias: false,
            relu: false,
        },
        1,
        5,
    );
    let g = ModelProto::decode(&onnx::model_bytes(&case)[..])
        .unwrap()
        .graph
        .unwrap();
    assert_eq!(g.node.len(), 1);
    assert_eq!(g.node[0].op_type(), "MatMulInteger");
    assert_eq!(g.node[0].output, ["output"]);
    let w = &g.initializer[0];
    assert_eq!(w.dims, [3, 2]);
    // Row-major [in, out]: element (i, o) is weight.npy's (o, i).
    let as_stored: Vec<u8> = (0..3)
        .flat_map(|i| (0..2).map(move |o| (i, o)))
        .map(|(i, o)| case.weight[[o, i]] as u8)
        .collect();
    assert_eq!(w.raw_data(), &as_stored[..]);
}

#[test]
fn mlir_of_a_padded_conv_with_bias_and_relu() {
    insta::assert_snapshot!(mlir::module_text(&small_conv()));
}

#[test]
fn mlir_of_a_grouped_strided_dilated_conv() {
    let case = conv(
        Conv2d {
            in_channels: 2,
            out_channels: 2,
            kernel: [1, 2],
            stride: [2, 1],
            dilation: [1, 2],
            groups: 2,
            ..conv_params()
        },
        1,
        3,
        4,
        4,
    );
    insta::assert_snapshot!(mlir::module_text(&case));
}

#[test]
fn mlir_of_a_batched_mvm_with_bias() {
    insta::assert_snapshot!(mlir::module_text(&small_mvm()));
}

#[test]
fn large_constants_are_written_as_hex() {
    let case = conv(
        Conv2d {
            in_channels: 8,
            out_channels: 64,
            kernel: [3, 3],
            ..conv_params()
        },
        1,
        3,
        3,
        6,
    );
    assert!(case.weight.len() > mlir::LITERAL_MAX_ELEMENTS);
    let text = mlir::module_text(&case);
    let hex: String = case
        .weight
        .iter()
        .map(|&v| format!("{:02X}", v as u8))
        .collect();
    assert!(
        text.contains(&format!(
            "%weight = arith.constant dense<\"0x{hex}\"> : tensor<64x8x3x3xi8>"
        )),
        "no hex weight constant in:\n{}",
        &text[..text.len().min(2000)]
    );
}

fn reimport(case: &Case) -> Case {
    import_model(&onnx::model_bytes(case), case.spec.arch, 0)
        .unwrap_or_else(|e| panic!("cannot import the export of {:?}: {e}", case.spec))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Exporting a case and importing the model gives back its operator, shapes, weight and
    /// bias (only the input values differ: a model carries none).
    #[test]
    fn export_then_import_is_the_same_case(case in case_strategy(GenConfig::default())) {
        let back = reimport(&case);
        prop_assert_eq!(&back.spec, &case.spec);
        prop_assert_eq!(&back.weight, &case.weight);
        prop_assert_eq!(&back.bias, &case.bias);
        prop_assert_eq!(back.input.shape(), case.input.shape());
    }
}

/// The exported model of a case with everything (bias, relu), to be altered by each test.
fn exported(case: &Case) -> ModelProto {
    onnx::model(case)
}

fn import_err(model: &ModelProto) -> String {
    match import_model(&model.encode_to_vec(), ARCH, 0) {
        Ok(c) => panic!("imported {:?}", c.spec),
        Err(e) => e.to_string(),
    }
}

fn node(op: &str, inputs: &[&str], output: &str) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.into()],
        ..Default::default()
    }
}

fn float_tensor(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(DataType::Float as i32),
        float_data: values.to_vec(),
        ..Default::default()
    }
}

#[test]
fn import_refuses_other_operators_naming_them() {
    let mut m = exported(&small_conv());
    m.graph.as_mut().unwrap().node[0].op_type = Some("MaxPool".into());
    assert_eq!(
        import_err(&m),
        "unsupported: operator `MaxPool` (node 0, `convinteger_0`); a case is one of Conv, \
         ConvInteger, MatMul, MatMulInteger, Gemm, optionally followed by Add (a constant bias) \
         and Relu"
    );
    let mut m = exported(&small_conv());
    let g = m.graph.as_mut().unwrap();
    g.node[2].op_type = Some("Sigmoid".into());
    assert_eq!(
        import_err(&m),
        "unsupported: operator `Sigmoid` at node 2 (graph: ConvInteger -> Add -> Sigmoid); a case \
         is one of Conv, ConvInteger, MatMul, MatMulInteger, Gemm, optionally followed by Add (a \
         constant bias) and Relu"
    );
    let mut m = exported(&small_conv());
    m.graph.as_mut().unwrap().node[0].domain = Some("com.microsoft".into());
    assert!(import_err(&m).starts_with("unsupported: operator `com.microsoft::ConvInteger`"));
}

#[test]
fn import_refuses_graphs_that_are_not_one_chain() {
    let mut m = exported(&small_conv());
    m.graph.as_mut().unwrap().node.clear();
    assert!(import_err(&m).starts_with("unsupported: the graph has no nodes;"));

    let mut m = exported(&small_mvm());
    let g = m.graph.as_mut().unwrap();
    g.node.push(node("Relu", &["output"], "y"));
    g.node.push(node("Relu", &["y"], "z"));
    assert!(
        import_err(&m).starts_with("unsupported: operator `Relu` at node 3"),
        "{}",
        import_err(&m)
    );

    let mut m = exported(&small_conv());
    let g = m.graph.as_mut().unwrap();
    g.node[2].input = vec!["input".into()];
    assert_eq!(
        import_err(&m),
        "unsupported: `Relu` does not consume the output of `Add`; only a chain of nodes is a case"
    );

    let mut m = exported(&small_conv());
    let extra = m.graph.as_ref().unwrap().output[0].clone();
    m.graph.as_mut().unwrap().output.push(extra);
    assert_eq!(
        import_err(&m),
        "unsupported: graph outputs [\"output\", \"output\"]: a case has exactly one, the output of \
         the last node (`Relu`)"
    );

    let mut m = exported(&small_conv());
    let mut second = m.graph.as_ref().unwrap().input[0].clone();
    second.name = Some("other".into());
    m.graph.as_mut().unwrap().input.push(second);
    assert_eq!(
        import_err(&m),
        "unsupported: the graph has 2 inputs besides initializers; a case has exactly one (the \
         activation)"
    );
}

#[test]
fn import_refuses_what_a_case_cannot_hold() {
    // A weight that is not a constant.
    let mut m = exported(&small_conv());
    m.graph.as_mut().unwrap().initializer.remove(0);
    assert_eq!(
        import_err(&m),
        "unsupported: `ConvInteger`'s weight `weight` is not an initializer (weights and biases \
         must be constants stored in the model)"
    );
    // A bias that is not a constant.
    let mut m = exported(&small_conv());
    m.graph.as_mut().unwrap().initializer.remove(1);
    assert_eq!(
        import_err(&m),
        "unsupported: `Add` of `bias`, which is not an initializer (only a constant bias is a case)"
    );
    // A per-width bias ([K] broadcasts along W in NCHW, not along channels).
    let mut m = exported(&small_conv());
    m.graph.as_mut().unwrap().initializer[1].dims = vec![2];
    assert_eq!(
        import_err(&m),
        "unsupported: bias `bias` of shape [2]: a bias is one value per output channel ([1, 2, 1, \
         1] or [2, 1, 1]) or one value"
    );
    // Symbolic batch size.
    let mut m = exported(&small_conv());
    if let Some(type_proto::Value::TensorType(t)) = m.graph.as_mut().unwrap().input[0]
        .r#type
        .as_mut()
        .unwrap()
        .value
        .as_mut()
    {
        t.shape.as_mut().unwrap().dim[0].value = Some(dimension::Value::DimParam("N".into()));
    }
    assert_eq!(
        import_err(&m),
        "unsupported: graph input `input`: dimension 0 is symbolic (`N`); a case needs a static \
         shape (fix it, e.g. with onnx.tools.update_model_dims)"
    );
    // Weights outside int8.
    let mut m = exported(&small_conv());
    let w = &mut m.graph.as_mut().unwrap().initializer[0];
    w.data_type = Some(DataType::Int32 as i32);
    w.raw_data = Some([200i32; 16].iter().flat_map(|v| v.to_le_bytes()).collect());
    assert_eq!(
        import_err(&m),
        "unsupported: weight `weight`: value 200 at flat index 0 is outside int8 (-128..=127); a \
         case's weights are int8"
    );
    // External data.
    let mut m = exported(&small_conv());
    m.graph.as_mut().unwrap().initializer[0].data_location = Some(DataLocation::External as i32);
    assert!(import_err(&m).contains("is stored outside the model file (external data)"));
    // A zero point that is not zero.
    let mut m = exported(&small_mvm());
    let g = m.graph.as_mut().unwrap();
    g.node[0].input.extend(["".to_string(), "wzp".to_string()]);
    g.initializer.push(TensorProto {
        name: Some("wzp".into()),
        data_type: Some(DataType::Int8 as i32),
        raw_data: Some(vec![3]),
        ..Default::default()
    });
    assert_eq!(
        import_err(&m),
        "unsupported: `MatMulInteger` with a non-zero weight zero point (a case has no zero points)"
    );
    // An attribute pimdiff does not know.
    let mut m = exported(&small_conv());
    m.graph.as_mut().unwrap().node[0]
        .attribute
        .push(AttributeProto {
            name: Some("quantization".into()),
            r#type: Some(AttributeType::Int as i32),
            i: Some(1),
            ..Default::default()
        });
    assert_eq!(
        import_err(&m),
        "unsupported: `ConvInteger` with attribute `quantization`"
    );
}

#[test]
fn import_refuses_bytes_that_are_no_model_and_shapes_that_make_no_case() {
    let e = import_model(b"\xff\xff\xff\xff not protobuf", ARCH, 0).unwrap_err();
    assert!(matches!(e, ImportError::Decode(_)), "{e}");
    assert!(e.to_string().starts_with("not an ONNX model: "), "{e}");
    let e = import_model(b"", ARCH, 0).unwrap_err();
    assert_eq!(e.to_string(), "malformed model: the model has no graph");
    // A 1-D convolution.
    let mut m = exported(&small_conv());
    let g = m.graph.as_mut().unwrap();
    g.initializer[0].dims = vec![2, 2, 4];
    assert_eq!(
        import_err(&m),
        "unsupported: a convolution with a weight of rank 3 (only 2-D: [K, C/group, kh, kw])"
    );
    // Hostile sizes: refused by the case limits, before any tensor of that size exists.
    let mut m = exported(&small_mvm());
    if let Some(type_proto::Value::TensorType(t)) = m.graph.as_mut().unwrap().input[0]
        .r#type
        .as_mut()
        .unwrap()
        .value
        .as_mut()
    {
        t.shape.as_mut().unwrap().dim[0].value = Some(dimension::Value::DimValue(1 << 40));
    }
    let e = import_err(&m);
    assert!(
        e.starts_with("the model does not make a valid case: "),
        "{e}"
    );
}

#[test]
fn float_conv_gemm_and_matmul_models_import_when_their_values_are_integers() {
    // Conv with a float weight and bias B, SAME_UPPER padding, stride 2.
    let mut m = exported(&small_conv());
    let g = m.graph.as_mut().unwrap();
    g.node.truncate(1);
    g.node[0] = node("Conv", &["input", "w", "b"], "output");
    g.node[0].attribute = vec![
        AttributeProto {
            name: Some("auto_pad".into()),
            r#type: Some(AttributeType::String as i32),
            s: Some(b"SAME_UPPER".to_vec()),
            ..Default::default()
        },
        AttributeProto {
            name: Some("strides".into()),
            r#type: Some(AttributeType::Ints as i32),
            ints: vec![2, 2],
            ..Default::default()
        },
    ];
    let w: Vec<f32> = (0..16).map(|i| i as f32 - 8.0).collect();
    g.initializer = vec![
        float_tensor("w", &[2, 2, 2, 2], &w),
        float_tensor("b", &[2], &[5.0, -7.0]),
    ];
    let case = import_model(&m.encode_to_vec(), ARCH, 0).unwrap();
    let Op::Conv2d(p) = case.spec.op else {
        panic!()
    };
    // H = W = 3, stride 2: output 2, window 2 → 1 padding row/column, at the end (upper).
    assert_eq!(
        (p.padding, p.stride, p.bias, p.relu),
        ([0, 0, 1, 1], [2, 2], true, false)
    );
    assert_eq!(case.weight.iter().map(|&v| v as f32).collect::<Vec<_>>(), w);
    assert_eq!(case.bias.unwrap().to_vec(), [5, -7]);

    // Hostile attributes are refused by the case limits, without overflow.
    let mut hostile = m.clone();
    hostile.graph.as_mut().unwrap().node[0]
        .attribute
        .push(AttributeProto {
            name: Some("dilations".into()),
            r#type: Some(AttributeType::Ints as i32),
            ints: vec![i64::MAX, 1],
            ..Default::default()
        });
    assert!(
        import_err(&hostile).starts_with("the model does not make a valid case: case.json: "),
        "{}",
        import_err(&hostile)
    );

    // A fractional weight is refused.
    let mut fractional = m.clone();
    fractional.graph.as_mut().unwrap().initializer[0].float_data[3] = 0.5;
    assert_eq!(
        import_err(&fractional),
        "unsupported: weight `w`: value 0.5 is not an integer (a case is integer arithmetic; \
         quantize the model first)"
    );

    // Gemm with transB = 1 keeps B as the [out, in] weight; with a [1, out] C as bias; Relu.
    let mut m = exported(&small_mvm());
    let g = m.graph.as_mut().unwrap();
    g.node = vec![
        node("Gemm", &["input", "B", "C"], "y"),
        node("Relu", &["y"], "output"),
    ];
    g.node[0].attribute = vec![AttributeProto {
        name: Some("transB".into()),
        r#type: Some(AttributeType::Int as i32),
        i: Some(1),
        ..Default::default()
    }];
    g.initializer = vec![
        float_tensor("B", &[2, 3], &[1.0, 2.0, 3.0, -4.0, -5.0, -6.0]),
        float_tensor("C", &[1, 2], &[10.0, 20.0]),
    ];
    let case = import_model(&m.encode_to_vec(), ARCH, 0).unwrap();
    assert_eq!(
        case.spec.op,
        Op::Mvm(Mvm {
            in_features: 3,
            out_features: 2,
            bias: true,
            relu: true
        })
    );
    assert_eq!(
        case.weight,
        ArrayD::from_shape_vec(vec![2, 3], vec![1, 2, 3, -4, -5, -6]).unwrap()
    );

    // Gemm with alpha != 1 is refused.
    let mut scaled = m.clone();
    scaled.graph.as_mut().unwrap().node[0]
        .attribute
        .push(AttributeProto {
            name: Some("alpha".into()),
            r#type: Some(AttributeType::Float as i32),
            f: Some(0.5),
            ..Default::default()
        });
    assert_eq!(
        import_err(&scaled),
        "unsupported: `Gemm` with alpha = 0.5 (only 1)"
    );

    // MatMul: B is [in, out], transposed into the case's [out, in].
    let mut m = exported(&small_mvm());
    let g = m.graph.as_mut().unwrap();
    g.node = vec![node("MatMul", &["input", "B"], "output")];
    g.initializer = vec![float_tensor("B", &[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])];
    let case = import_model(&m.encode_to_vec(), ARCH, 0).unwrap();
    assert_eq!(
        case.weight,
        ArrayD::from_shape_vec(vec![2, 3], vec![1, 3, 5, 2, 4, 6]).unwrap()
    );
    assert!(case.bias.is_none());
}

#[test]
fn a_new_case_directory_is_written_whole_or_not_at_all() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("case");
    let case = small_conv();
    write_case_with_exports(&case, &dir).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "bias.npy",
            "case.json",
            "check.py",
            "input.npy",
            "model.onnx",
            "op.mlir",
            "weight.npy"
        ]
    );
    assert_eq!(
        std::fs::read(dir.join("model.onnx")).unwrap(),
        onnx::model_bytes(&case)
    );
    // A second write refuses, and leaves no staging directory behind.
    let e = write_case_with_exports(&small_mvm(), &dir).unwrap_err();
    assert!(
        e.to_string().contains("already exists and is not empty"),
        "{e}"
    );
    let siblings: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(siblings.len(), 1);
    // write_exports replaces earlier exports in place.
    write_exports(&small_mvm(), &dir).unwrap();
    assert_eq!(
        std::fs::read(dir.join("model.onnx")).unwrap(),
        onnx::model_bytes(&small_mvm())
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The importer takes untrusted bytes: an exported model with bytes overwritten, or cut
    /// short, or plain noise, gives a case or an error, never a panic.
    #[test]
    fn import_never_panics_on_damaged_models(
        case in case_strategy(GenConfig::default()),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        cut in any::<prop::sample::Index>(),
        noise in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut bytes = onnx::model_bytes(&case);
        for (at, byte) in edits {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        let _ = import_model(&bytes, ARCH, 0);
        let _ = import_model(&bytes[..cut.index(bytes.len() + 1)], ARCH, 0);
        let _ = import_model(&noise, ARCH, 0);
    }
}
