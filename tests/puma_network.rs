//! PUMA networks: the API's rules (exact errors), the generator (validity, determinism,
//! edges), seeded data, the driver's two files and `model.cpp` (snapshots), the placement
//! file, and the compiler's own `test/` programs as descriptions.

#[path = "support/puma.rs"]
mod puma_support;

use ndarray::{arr1, ArrayD, IxDyn};
use pimdiff::targets::puma::data::network_data;
use pimdiff::targets::puma::driver_input::{network_text, weights_text};
use pimdiff::targets::puma::model_cpp::model_cpp;
use pimdiff::targets::puma::network::{
    CompileOptions, ImageShape, Input, Matrix, NetworkError, Op, Output, Partition, PumaNetwork,
    Shape,
};
use pimdiff::targets::puma::placement::{Placement, PlacementError};
use pimdiff::targets::puma::reference::{reference, NumericRange};
use pimdiff::targets::puma::tensors::NetworkData;
use pimdiff::targets::puma::{network_from_seed, PumaNetConfig};
use proptest::prelude::*;
use puma_support::{examples, Net};

/// in (5) → M (5 × 3) → relu → out.
fn small() -> PumaNetwork {
    let mut n = Net::new("small");
    let x = n.input_vector("x", 5);
    let m = n.dense("m", 5, 3);
    let y = n.mvm(m, x);
    let r = n.op(Op::Relu { x: y });
    n.output("y", r);
    n.0
}

/// Every operation once: an image part (conv, pool, sig) and a vector part (mvm, scale, add,
/// sub, mul, relu, tanh), with a shared input.
fn every_op() -> PumaNetwork {
    let mut n = Net::new("every_op");
    let img = n.input_image("img", 3, 2, 2, 1);
    let x = n.input_vector("x", 2);
    let k = n.conv_matrix("k", 3, 3, 2, 2, 1, 3, 2);
    let m = n.dense("m", 2, 2);
    let c = n.conv(k, img);
    let p = n.op(Op::MaxPool {
        hspan: 2,
        wspan: 2,
        x: c,
    });
    let s = n.op(Op::Sig { x: p });
    n.output("pooled", s);
    let y = n.mvm(m, x);
    let a = n.op(Op::Scale { factor: -2, x: y });
    let b = n.op(Op::Add { a, b: x });
    let d = n.op(Op::Sub { a: b, b: y });
    let e = n.op(Op::Mul { a: d, b: y });
    let f = n.op(Op::Relu { x: e });
    let g = n.op(Op::Tanh { x: f });
    n.output("v", f);
    n.output("t", g);
    n.0.options = CompileOptions {
        coalesce: false,
        partition: Partition::ColMajor,
        debug: false,
    };
    n.0
}

#[test]
fn a_valid_network_has_the_shapes_of_the_api() {
    let shapes = every_op().check().expect("valid");
    let img = |w, h, c, stride| {
        Shape::Image(ImageShape {
            width: w,
            height: h,
            channels: c,
            stride,
        })
    };
    assert_eq!(
        shapes,
        vec![
            img(3, 2, 2, 1),
            Shape::Vector(2),
            img(3, 2, 2, 1),
            img(2, 1, 2, 1),
            img(2, 1, 2, 1),
            Shape::Vector(2),
            Shape::Vector(2),
            Shape::Vector(2),
            Shape::Vector(2),
            Shape::Vector(2),
            Shape::Vector(2),
            Shape::Vector(2),
        ]
    );
}

/// `small()` with one change, checked.
fn broken(change: impl FnOnce(&mut PumaNetwork)) -> NetworkError {
    let mut net = small();
    change(&mut net);
    net.check().expect_err("the change breaks a rule")
}

#[test]
fn each_rule_has_its_error() {
    assert_eq!(
        broken(|n| n.model = "9lives".into()),
        NetworkError::BadName {
            what: "model",
            name: "9lives".into()
        }
    );
    assert_eq!(
        broken(|n| n.outputs[0] = Output::Vector {
            name: "m".into(),
            length: 3,
            value: 3
        }),
        NetworkError::DuplicateName("m".into())
    );
    assert_eq!(
        broken(|n| n.inputs[0] = Input::Vector {
            name: "x".into(),
            length: 0
        }),
        NetworkError::Zero {
            culprit: "x".into(),
            field: "length"
        }
    );
    assert_eq!(
        broken(|n| n.matrices[0] = Matrix::Dense {
            name: "m".into(),
            width: 5,
            height: 70_000
        }),
        NetworkError::TooLarge {
            culprit: "m".into(),
            what: "height",
            value: 70_000,
            limit: 1 << 16
        }
    );
    assert_eq!(
        broken(|n| n.values[1] = Op::Mvm { matrix: 0, x: 1 }),
        NetworkError::BadReference {
            value: 1,
            field: "value",
            index: 1,
            defined: "an earlier value"
        }
    );
    assert_eq!(
        broken(|n| n.values[1] = Op::Mvm { matrix: 4, x: 0 }),
        NetworkError::BadReference {
            value: 1,
            field: "matrix",
            index: 4,
            defined: "a matrix"
        }
    );
    assert_eq!(
        broken(|n| n.values[2] = Op::MaxPool {
            hspan: 1,
            wspan: 1,
            x: 1
        }),
        NetworkError::WrongKind {
            culprit: "values[2]".into(),
            expected: "an image stream",
            found: "a vector"
        }
    );
    assert_eq!(
        broken(|n| n.values[2] = Op::Add { a: 0, b: 1 }),
        NetworkError::LengthMismatch {
            value: 2,
            left: 5,
            right: 3
        }
    );
    assert_eq!(
        broken(|n| n.values[2] = Op::Scale {
            factor: 40_000,
            x: 1
        }),
        NetworkError::Factor {
            value: 2,
            factor: 40_000
        }
    );
    assert_eq!(
        broken(|n| n.outputs[0] = Output::Vector {
            name: "y".into(),
            length: 5,
            value: 2
        }),
        NetworkError::OutputShape {
            output: "y".into(),
            declared: Shape::Vector(5),
            found: Shape::Vector(3)
        }
    );
    assert_eq!(
        broken(|n| n.outputs[0] = Output::Vector {
            name: "y".into(),
            length: 3,
            value: 9
        }),
        NetworkError::BadOutputValue {
            output: "y".into(),
            value: 9
        }
    );
    assert_eq!(
        broken(|n| {
            n.matrices.clear();
            n.values.truncate(1);
            n.outputs.clear();
        }),
        NetworkError::NoMatrix
    );
}

#[test]
fn matrix_and_convolution_rules_have_their_errors() {
    assert_eq!(
        broken(|n| n.matrices[0] = Matrix::Dense {
            name: "m".into(),
            width: 4,
            height: 3
        }),
        NetworkError::OperandMismatch {
            value: 1,
            matrix: "m".into(),
            what: "columns",
            expected: 4,
            found: 5
        }
    );
    let conv = |cin: u32, stride: u32, out_width: u32, out_height: u32| {
        let mut n = Net::new("c");
        let x = n.input_image("img", 5, 4, 2, 1);
        n.0.matrices.push(Matrix::Conv {
            name: "k".into(),
            kernel_width: 3,
            kernel_height: 2,
            in_channels: cin,
            out_channels: 1,
            stride,
            out_width,
            out_height,
            padding_width: None,
            padding_height: None,
        });
        n.conv(0, x);
        n.0.check()
    };
    // A 2-high kernel pads 1 row on each side: 4 + 2 − 2 = 4 rows span, 5 outputs at stride 1.
    assert!(conv(2, 1, 5, 5).is_ok());
    assert_eq!(
        conv(3, 1, 5, 5),
        Err(NetworkError::OperandMismatch {
            value: 1,
            matrix: "k".into(),
            what: "input channels",
            expected: 3,
            found: 2
        })
    );
    assert_eq!(
        conv(2, 1, 5, 4),
        Err(NetworkError::ConvOutputSize {
            value: 1,
            matrix: "k".into(),
            axis: "height",
            declared: 4,
            expected: 5,
            extent: 4,
            kernel: 2,
            stride: 1
        })
    );
    // Width span 5 + 2 − 3 = 4 and height span 4 are both even: stride 2 gives 3 × 3.
    assert!(conv(2, 2, 3, 3).is_ok());
    assert_eq!(
        conv(2, 3, 2, 2),
        Err(NetworkError::ConvStride {
            value: 1,
            matrix: "k".into(),
            axis: "width",
            stride: 3,
            span: 4
        })
    );
}

#[test]
fn the_json_form_round_trips_and_refuses_unknown_fields() {
    let net = every_op();
    assert_eq!(PumaNetwork::from_json(&net.to_json()), Ok(net));
    let text =
        r#"{"model": "m", "inputs": [], "matrices": [], "values": [], "outputs": [], "extra": 1}"#;
    match PumaNetwork::from_json(text) {
        Err(NetworkError::Json(message)) => {
            assert!(message.contains("unknown field `extra`"), "{message}")
        }
        other => panic!("expected a JSON error, got {other:?}"),
    }
}

#[test]
fn every_example_of_the_compilers_test_folder_is_a_valid_description() {
    for (name, net) in examples() {
        if let Err(e) = net.check() {
            panic!("{name}: {e}");
        }
        assert_eq!(
            PumaNetwork::from_json(&net.to_json()).as_ref(),
            Ok(&net),
            "{name}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Every generated network is valid, the same seed gives the same network and data, and
    /// the data keeps the reference inside the machine's range.
    #[test]
    fn generated_networks_are_valid_deterministic_and_in_range(seed in any::<u64>()) {
        let cfg = PumaNetConfig::default();
        let net = network_from_seed(&cfg, seed);
        prop_assert!(net.check().is_ok(), "{:?}", net.check());
        prop_assert_eq!(&network_from_seed(&cfg, seed), &net);
        let data = network_data(&net, seed, NumericRange::PUMA_WORD).expect("data");
        prop_assert_eq!(&network_data(&net, seed, NumericRange::PUMA_WORD).expect("data"), &data);
        let r = reference(&net, &data, NumericRange::PUMA_WORD).expect("in range");
        prop_assert!(r.peak <= 32767);
        prop_assert_eq!(r.outputs.len(), net.outputs.len());
    }
}

/// What the generator reaches over a few hundred seeds: every edge it is meant to produce.
#[test]
fn the_generator_reaches_its_edges() {
    let cfg = PumaNetConfig::default();
    let nets: Vec<PumaNetwork> = (0..300).map(|s| network_from_seed(&cfg, s)).collect();
    let any_matrix = |f: &dyn Fn(&Matrix) -> bool| nets.iter().any(|n| n.matrices.iter().any(f));
    let any_op = |f: &dyn Fn(&Op) -> bool| nets.iter().any(|n| n.values.iter().any(f));
    let any_input = |f: &dyn Fn(&Input) -> bool| nets.iter().any(|n| n.inputs.iter().any(f));
    for channels in [1, 127, 128, 129, 255, 256, 257] {
        assert!(
            any_matrix(
                &|m| matches!(m, Matrix::Conv { out_channels, .. } if *out_channels == channels)
            ),
            "a conv with {channels} output channels"
        );
        assert!(
            any_matrix(&|m| matches!(m, Matrix::Dense { height, .. } if *height == channels)),
            "a matrix of {channels} rows"
        );
    }
    assert!(any_matrix(
        &|m| matches!(m, Matrix::Dense { width, .. } if *width > 256)
    ));
    assert!(any_matrix(
        &|m| matches!(m, Matrix::Conv { in_channels, .. } if *in_channels > 256)
    ));
    assert!(any_matrix(&|m| matches!(
        m,
        Matrix::Conv {
            kernel_width: 5,
            kernel_height: 5,
            ..
        }
    )));
    assert!(any_matrix(
        &|m| matches!(m, Matrix::Conv { kernel_width, kernel_height, .. } if kernel_width != kernel_height)
    ));
    assert!(any_matrix(
        &|m| matches!(m, Matrix::Conv { kernel_height, .. } if kernel_height % 2 == 0)
    ));
    assert!(any_matrix(&|m| matches!(
        m,
        Matrix::Conv { stride: 2.., .. }
    )));
    assert!(any_input(&|i| matches!(
        i,
        Input::Image { stride: 2.., .. }
    )));
    assert!(any_input(&|i| matches!(
        i,
        Input::Image {
            width: 1,
            height: 1,
            ..
        }
    )));
    assert!(any_input(
        &|i| matches!(i, Input::Image { width, height, .. } if width != height)
    ));
    for op in [
        "maxpool", "add", "sub", "mul", "scale", "relu", "sig", "tanh",
    ] {
        assert!(any_op(&|o| o.name() == op), "no `{op}`");
    }
    assert!(nets.iter().any(|n| n.inputs.len() >= 3));
    assert!(nets.iter().any(|n| n.outputs.len() >= 4));
    assert!(nets.iter().any(|n| !n.options.coalesce));
    assert!(nets
        .iter()
        .any(|n| n.options.partition == Partition::Random));
    // A matrix used by two operations.
    assert!(nets.iter().any(|n| {
        let mut uses = vec![0; n.matrices.len()];
        for op in &n.values {
            if let Op::Mvm { matrix, .. } | Op::Conv { matrix, .. } = op {
                uses[*matrix] += 1;
            }
        }
        uses.iter().any(|&u| u > 1)
    }));
}

#[test]
fn data_that_cannot_fit_falls_back_to_zero_weights() {
    // x · x · x · x with x up to 3 in magnitude fits; 20 products of a 300-long sum of
    // products do not, so every draw fails and the weights end up zero.
    let mut n = Net::new("deep");
    let x = n.input_vector("x", 300);
    let m = n.dense("m", 300, 300);
    let mut v = n.mvm(m, x);
    for _ in 0..20 {
        v = n.op(Op::Mul { a: v, b: v });
    }
    n.output("y", v);
    let data = network_data(&n.0, 7, NumericRange::PUMA_WORD).expect("data");
    assert!(data.weights[0].iter().all(|&w| w == 0));
    let r = reference(&n.0, &data, NumericRange::PUMA_WORD).expect("fits");
    assert!(r.outputs[0].value.iter().all(|&v| v == 0));
    // The inputs keep their values (at most 3 in magnitude): they are the only nonzeros.
    assert_eq!(r.peak, 3);
}

/// Hand-set data for `every_op()`: images and weights counting up, so the files show order.
fn every_op_data() -> NetworkData {
    let counting = |shape: &[usize]| {
        let n: usize = shape.iter().product();
        ArrayD::from_shape_vec(IxDyn(shape), (0..n as i64).map(|v| v % 7 - 3).collect())
            .expect("shape")
    };
    NetworkData {
        inputs: vec![counting(&[2, 3, 2]), arr1(&[1, -1]).into_dyn()],
        weights: vec![counting(&[3, 3, 2, 2]), counting(&[2, 2])],
    }
}

#[test]
fn the_driver_network_file() {
    insta::assert_snapshot!(network_text(&every_op(), false));
}

#[test]
fn the_driver_weights_file() {
    insta::assert_snapshot!(weights_text(&every_op(), &every_op_data()));
}

#[test]
fn the_standalone_model_cpp() {
    insta::assert_snapshot!(model_cpp(&every_op(), Some(&every_op_data())));
}

/// A placement for `small()` as the patched compiler writes it.
const SMALL_PLACEMENT: &str = r#"{
  "format": "pimdiff-puma-placement",
  "version": 1,
  "model": "small",
  "tiles": 3,
  "cores_per_tile": 8,
  "mvmus_per_core": 2,
  "mvmu_dim": 128,
  "tensors": [
    {"name": "x", "role": "input", "kind": "vector", "length": 5,
      "pieces": [
        {"first": 0, "length": 5, "tile": 0, "address": 7, "counter": 1}]},
    {"name": "y", "role": "output", "kind": "vector", "length": 3,
      "pieces": [
        {"first": 0, "length": 3, "tile": 1, "address": 2, "counter": 1}]}
  ]
}
"#;

#[test]
fn a_placement_places_inputs_and_collects_outputs() {
    let net = small();
    let p = Placement::from_json(SMALL_PLACEMENT).expect("parses");
    p.check(&net).expect("fits the network");
    let data = NetworkData {
        inputs: vec![arr1(&[1, 2, 3, 4, 5]).into_dyn()],
        weights: vec![ArrayD::zeros(IxDyn(&[3, 5]))],
    };
    let writes = p.input_writes(&net, &data).expect("writes");
    assert_eq!(writes.len(), 1);
    assert_eq!(
        (writes[0].tile, writes[0].address, writes[0].counter),
        (0, 7, 1)
    );
    assert_eq!(writes[0].values, vec![1, 2, 3, 4, 5]);
    let mut reads = Vec::new();
    let outputs = p
        .gather_outputs(&net, |tile, address, length| {
            reads.push((tile, address, length));
            vec![9, 8, 7]
        })
        .expect("gathers");
    assert_eq!(reads, vec![(1, 2, 3)]);
    assert_eq!(outputs, vec![arr1(&[9, 8, 7]).into_dyn()]);
}

#[test]
fn a_placement_that_disagrees_with_the_network_is_refused() {
    let net = small();
    let with = |from: &str, to: &str| Placement::from_json(&SMALL_PLACEMENT.replace(from, to));
    match with("\"length\": 5,\n", "\"length\": 6,\n")
        .expect("parses")
        .check(&net)
    {
        Err(PlacementError::Shape {
            name,
            expected,
            found,
            ..
        }) => {
            assert_eq!(
                (name.as_str(), expected.as_str(), found.as_str()),
                ("x", "vector of 5", "vector of 6")
            );
        }
        other => panic!("expected a shape error, got {other:?}"),
    }
    match with("\"tile\": 1,", "\"tile\": 3,")
        .expect("parses")
        .check(&net)
    {
        Err(PlacementError::Piece {
            name,
            piece: 0,
            problem,
        }) => {
            assert_eq!((name.as_str(), problem.as_str()), ("y", "tile 3 of 3"));
        }
        other => panic!("expected a piece error, got {other:?}"),
    }
    match with("\"model\": \"small\"", "\"model\": \"other\"")
        .expect("parses")
        .check(&net)
    {
        Err(PlacementError::Model { expected, found }) => {
            assert_eq!((expected.as_str(), found.as_str()), ("small", "other"))
        }
        other => panic!("expected a model error, got {other:?}"),
    }
    assert!(matches!(
        with("\"version\": 1", "\"version\": 2"),
        Err(PlacementError::Format { version: 2, .. })
    ));
    assert!(matches!(
        with("\"counter\": 1}]},", "\"extra\": 0}]},"),
        Err(PlacementError::Json(_))
    ));
    let unplaced = with(
        "\"tile\": 1, \"address\": 2",
        "\"tile\": null, \"address\": null",
    )
    .expect("parses");
    unplaced.check(&net).expect("an unplaced piece is allowed");
    match unplaced.gather_outputs(&net, |_, _, _| vec![]) {
        Err(PlacementError::Unplaced {
            name,
            first: 0,
            end: 3,
        }) => assert_eq!(name, "y"),
        other => panic!("expected an unplaced output, got {other:?}"),
    }
}
