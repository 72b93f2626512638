//! The PUMA generator's newer reaches, within the API's rules: convolutions declaring the
//! output size of any padding (the rule, its errors, the reference, the generator), strided
//! input streams pooled and output, and the compiler's debug printing (the option in the
//! description, the driver's file and `model.cpp`).

#[path = "support/puma.rs"]
mod puma_support;

use ndarray::{Array4, ArrayD, IxDyn};
use pimdiff::targets::puma::driver_input::network_text;
use pimdiff::targets::puma::model_cpp::model_cpp;
use pimdiff::targets::puma::network::{Input, Matrix, NetworkError, Op, Output, PumaNetwork};
use pimdiff::targets::puma::reference::{reference, NumericRange, Reference};
use pimdiff::targets::puma::tensors::NetworkData;
use pimdiff::targets::puma::{network_from_seed, PumaNetConfig};
use pimdiff_oracle::{conv2d_direct, Conv2d};
use proptest::prelude::*;
use puma_support::Net;

/// A conv matrix declaring padding `(pw, ph)` on an image of `w × h`, with the output size the
/// snapshot's test formula gives (`(n − k + 2p)/stride + 1`).
#[allow(clippy::too_many_arguments)]
fn padded(
    n: &mut Net,
    (kw, kh): (u32, u32),
    (cin, cout): (u32, u32),
    stride: u32,
    (w, h): (u32, u32),
    (pw, ph): (u32, u32),
) -> usize {
    let out = |n: u32, k: u32, p: u32| (n + 2 * p - k) / stride + 1;
    n.0.matrices.push(Matrix::Conv {
        name: "k".into(),
        kernel_width: kw,
        kernel_height: kh,
        in_channels: cin,
        out_channels: cout,
        stride,
        out_width: out(w, kw, pw),
        out_height: out(h, kh, ph),
        padding_width: Some(pw),
        padding_height: Some(ph),
    });
    n.0.matrices.len() - 1
}

fn tensor(shape: &[usize], values: &[i64]) -> ArrayD<i64> {
    ArrayD::from_shape_vec(IxDyn(shape), values.to_vec()).expect("shape")
}

fn run(net: &PumaNetwork, inputs: Vec<ArrayD<i64>>, weights: Vec<ArrayD<i64>>) -> Reference {
    reference(
        net,
        &NetworkData { inputs, weights },
        NumericRange::PUMA_WORD,
    )
    .expect("reference")
}

/// An all-ones 3 × 3 kernel over the 3 × 3 image 1..9 with padding `p` on every side.
fn ones_3x3(p: u32, stride: u32) -> (Vec<usize>, Vec<i64>) {
    let mut n = Net::new("c");
    let x = n.input_image("img", 3, 3, 1, 1);
    let k = padded(&mut n, (3, 3), (1, 1), stride, (3, 3), (p, p));
    let y = n.conv(k, x);
    n.output("y", y);
    let r = run(
        &n.0,
        vec![tensor(&[3, 3, 1], &[1, 2, 3, 4, 5, 6, 7, 8, 9])],
        vec![tensor(&[3, 3, 1, 1], &[1; 9])],
    );
    let o = &r.outputs[0];
    assert!(o.known.iter().all(|&k| k));
    (o.value.shape().to_vec(), o.value.iter().copied().collect())
}

#[test]
fn a_declared_padding_sets_the_output_size_and_the_taps() {
    // Padding 0: the one 3 × 3 window, the sum of 1..9.
    assert_eq!(ones_3x3(0, 1), (vec![1, 1, 1], vec![45]));
    // Padding 1 is the compiler's own: the 3 × 3 neighbourhood sums.
    assert_eq!(
        ones_3x3(1, 1),
        (vec![3, 3, 1], vec![12, 21, 16, 27, 45, 33, 24, 39, 28])
    );
    // Padding 2: 5 × 5 outputs; output (0, 0) sees only pixel (0, 0), (4, 4) only (2, 2).
    let (shape, v) = ones_3x3(2, 1);
    assert_eq!(shape, vec![5, 5, 1]);
    assert_eq!(
        v,
        vec![
            1, 3, 6, 5, 3, //
            5, 12, 21, 16, 9, //
            12, 27, 45, 33, 18, //
            11, 24, 39, 28, 15, //
            7, 15, 24, 17, 9,
        ]
    );
    // Padding 2 at stride 2: outputs (0, 2, 4) of each axis of the above.
    assert_eq!(
        ones_3x3(2, 2),
        (vec![3, 3, 1], vec![1, 6, 3, 12, 45, 18, 7, 24, 9])
    );
}

#[test]
fn an_even_kernel_without_padding_reads_the_pixels_the_size_says() {
    // A 2 × 1 kernel [1, 10] of stride 2 on a 4-wide row, padding 0: outputs 2, windows
    // [0, 1] and [2, 3]. The compiler's own padding (1) would read [-1, 0] and [1, 2].
    let mut n = Net::new("c");
    let x = n.input_image("img", 4, 1, 1, 1);
    let k = padded(&mut n, (2, 1), (1, 1), 2, (4, 1), (0, 0));
    let y = n.conv(k, x);
    n.output("y", y);
    let r = run(
        &n.0,
        vec![tensor(&[1, 4, 1], &[1, 2, 3, 4])],
        vec![tensor(&[1, 2, 1, 1], &[1, 10])],
    );
    assert_eq!(
        r.outputs[0].value.iter().copied().collect::<Vec<_>>(),
        vec![21, 43]
    );
}

/// A 5 × 4 image, 2 channels, kernel 3 × 2 with padding `(pw, ph)` and declared size.
fn conv_rule(pw: u32, ph: u32, stride: u32, out: (u32, u32)) -> Result<(), NetworkError> {
    let mut n = Net::new("c");
    let x = n.input_image("img", 5, 4, 2, 1);
    n.0.matrices.push(Matrix::Conv {
        name: "k".into(),
        kernel_width: 3,
        kernel_height: 2,
        in_channels: 2,
        out_channels: 1,
        stride,
        out_width: out.0,
        out_height: out.1,
        padding_width: Some(pw),
        padding_height: Some(ph),
    });
    n.conv(0, x);
    n.0.check().map(|_| ())
}

#[test]
fn the_padding_rule_has_its_errors() {
    // Width (5 − 3 + 0)/1 + 1 = 3, height (4 − 2 + 4)/1 + 1 = 7.
    assert_eq!(conv_rule(0, 2, 1, (3, 7)), Ok(()));
    assert_eq!(
        conv_rule(0, 2, 1, (3, 4)),
        Err(NetworkError::ConvOutputSize {
            value: 1,
            matrix: "k".into(),
            axis: "height",
            declared: 4,
            expected: 7,
            extent: 4,
            kernel: 2,
            stride: 1
        })
    );
    // Width span 5 − 3 + 2 = 4 is even, height span 4 − 2 + 0 = 2 too: stride 2 gives 3 × 2.
    assert_eq!(conv_rule(1, 0, 2, (3, 2)), Ok(()));
    // Without padding the width spans 5 − 3 = 2 pixels, which stride 3 does not divide.
    assert_eq!(
        conv_rule(0, 0, 3, (1, 1)),
        Err(NetworkError::ConvStride {
            value: 1,
            matrix: "k".into(),
            axis: "width",
            stride: 3,
            span: 2
        })
    );
    // A 1-wide image under a 3-wide kernel needs a padding of at least 1.
    let mut n = Net::new("c");
    let x = n.input_image("img", 1, 1, 1, 1);
    n.0.matrices.push(Matrix::Conv {
        name: "k".into(),
        kernel_width: 3,
        kernel_height: 1,
        in_channels: 1,
        out_channels: 1,
        stride: 1,
        out_width: 1,
        out_height: 1,
        padding_width: Some(0),
        padding_height: None,
    });
    n.conv(0, x);
    assert_eq!(
        n.0.check(),
        Err(NetworkError::ConvPadding {
            value: 1,
            matrix: "k".into(),
            axis: "width",
            extent: 1,
            padding: 0,
            kernel: 3
        })
    );
    if let Matrix::Conv { padding_width, .. } = &mut n.0.matrices[0] {
        *padding_width = Some(70_000);
    }
    assert_eq!(
        n.0.check(),
        Err(NetworkError::TooLarge {
            culprit: "k".into(),
            what: "padding_width",
            value: 70_000,
            limit: 1 << 16
        })
    );
}

#[test]
fn descriptions_without_the_new_fields_read_and_write_as_before() {
    let text = r#"{"model": "m", "options": {"coalesce": true, "partition": "row-major"},
        "inputs": [{"kind": "image", "name": "img", "width": 3, "height": 3, "channels": 1, "stride": 1}],
        "matrices": [{"kind": "conv", "name": "k", "kernel_width": 3, "kernel_height": 3,
            "in_channels": 1, "out_channels": 1, "stride": 1, "out_width": 3, "out_height": 3}],
        "values": [{"op": "input", "input": 0}, {"op": "conv", "matrix": 0, "x": 0}],
        "outputs": []}"#;
    let net = PumaNetwork::from_json(text).expect("a description of before");
    assert!(!net.options.debug);
    assert_eq!(net.matrices[0].padding(), Some((1, 1)));
    let json = net.to_json();
    assert!(
        !json.contains("debug") && !json.contains("padding"),
        "{json}"
    );
    assert_eq!(PumaNetwork::from_json(&json), Ok(net));
}

#[test]
fn the_driver_file_and_model_cpp_carry_debug_and_padding() {
    let mut n = Net::new("c");
    let x = n.input_image("img", 4, 1, 1, 1);
    let k = padded(&mut n, (2, 1), (1, 1), 2, (4, 1), (0, 0));
    let y = n.conv(k, x);
    n.output("y", y);
    n.0.options.debug = true;
    let text = network_text(&n.0, false);
    assert!(text.contains("option debug on\n"), "{text}");
    assert!(
        text.contains(
            "conv-matrix k 2 1 1 1 2 2 1\n# padding 0 0 (the output size's; not an argument)\n"
        ),
        "{text}"
    );
    let cpp = model_cpp(&n.0, None);
    assert!(
        cpp.contains("    options.printDebugInfo_ = true;\n    model.compile(options);\n"),
        "{cpp}"
    );
    assert!(
        cpp.contains("    // `k`: the output size of padding 0 × 0 (width × height)\n"),
        "{cpp}"
    );
    n.0.options.debug = false;
    assert!(network_text(&n.0, false).contains("option debug off\n"));
    assert!(!model_cpp(&n.0, None).contains("printDebugInfo_"));
}

/// Every network of seeds `0..n` under `cfg`.
fn nets(cfg: &PumaNetConfig, n: u64) -> Vec<PumaNetwork> {
    (0..n).map(|s| network_from_seed(cfg, s)).collect()
}

/// Whether value `v` is computed from a strided input stream by pooling (or is one).
fn strided_stream(net: &PumaNetwork, v: usize) -> bool {
    match net.values[v] {
        Op::Input { input } => matches!(net.inputs[input], Input::Image { stride: 2.., .. }),
        Op::MaxPool { x, .. } => strided_stream(net, x),
        _ => false,
    }
}

#[test]
fn the_generator_reaches_the_new_edges_in_their_shares() {
    let cfg = PumaNetConfig::default();
    let all = nets(&cfg, 600);
    let count = |f: &dyn Fn(&PumaNetwork) -> bool| all.iter().filter(|n| f(n)).count();
    let declared = |n: &PumaNetwork| {
        n.matrices.iter().any(|m| {
            matches!(m, Matrix::Conv { padding_width, padding_height, .. }
                if padding_width.is_some() || padding_height.is_some())
        })
    };
    let debug = count(&|n| n.options.debug);
    assert!((30..=90).contains(&debug), "{debug} of 600 with debug");
    assert!(
        count(&declared) >= 20,
        "{} declare a padding",
        count(&declared)
    );
    // Every declared padding differs from the compiler's own, and the size is the formula's.
    for n in &all {
        let shapes = n.check().unwrap_or_else(|e| panic!("{e}: {}", n.to_json()));
        for op in &n.values {
            let Op::Conv { matrix, x } = *op else {
                continue;
            };
            let m = &n.matrices[matrix];
            let Matrix::Conv {
                kernel_width: kw,
                kernel_height: kh,
                padding_width: Some(pw),
                padding_height: Some(ph),
                ..
            } = *m
            else {
                continue;
            };
            assert_ne!((pw, ph), (kw / 2, kh / 2), "{}", n.to_json());
            assert!(pw < kw.max(1) && ph < kh.max(1));
            assert!(matches!(
                shapes[x],
                pimdiff::targets::puma::network::Shape::Image(_)
            ));
        }
    }
    // Even kernels without padding, and padding other than ⌊k/2⌋ of odd kernels.
    assert!(all.iter().any(|n| n.matrices.iter().any(|m| matches!(
        m,
        Matrix::Conv {
            kernel_width: 2 | 4,
            padding_width: Some(0),
            ..
        }
    ))));
    assert!(all.iter().any(|n| n.matrices.iter().any(|m| matches!(
        m,
        Matrix::Conv {
            kernel_width: 3 | 5,
            padding_width: Some(0),
            ..
        }
    ))));
    let pooled = count(&|n| {
        n.values
            .iter()
            .any(|op| matches!(*op, Op::MaxPool { x, .. } if strided_stream(n, x)))
    });
    let output = count(&|n| n.outputs.iter().any(|o| strided_stream(n, o.value())));
    assert!(pooled >= 3, "{pooled} pool a strided stream");
    assert!(output >= 2, "{output} output a strided stream");
    assert!(all.iter().any(
        |n| n.outputs.iter().any(|o| matches!(o, Output::Image { .. })
            && matches!(n.values[o.value()], Op::MaxPool { .. })
            && strided_stream(n, o.value()))
    ));
}

/// With the new shares at 0, a seed gives the network it gives under the defaults whenever
/// the defaults take none of the new reaches: they draw from a stream of their own.
#[test]
fn networks_without_the_new_reaches_are_unchanged() {
    let off = PumaNetConfig {
        free_padding_share: 0.0,
        strided_pool_share: 0.0,
        strided_output_share: 0.0,
        debug_share: 0.0,
        ..PumaNetConfig::default()
    };
    let (with, without) = (nets(&PumaNetConfig::default(), 300), nets(&off, 300));
    let mut same = 0;
    for (a, b) in with.iter().zip(&without) {
        let new_reach = a.options.debug
            || a.matrices.iter().any(|m| {
                m.padding()
                    != b.matrices
                        .iter()
                        .find(|x| x.name() == m.name())
                        .and_then(|x| x.padding())
            })
            || a.values.len() != b.values.len()
            || a.outputs.len() != b.outputs.len();
        if !new_reach {
            assert_eq!(a, b);
            same += 1;
        }
    }
    assert!(
        same >= 200,
        "only {same} of 300 take none of the new reaches"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The reference's convolution with a declared padding is the oracle's conv2d with that
    /// padding on every side.
    #[test]
    fn padded_convolution_agrees_with_the_oracle(
        (w, h, kw, kh, c) in (1u32..=4, 1u32..=4, 1u32..=3, 1u32..=3, 1u32..=2),
        (pw, ph, stride, seed) in (0u32..=3, 0u32..=3, 1u32..=2, any::<u64>()),
    ) {
        use rand::{Rng, SeedableRng};
        let span = |n: u32, k: u32, p: u32| (n + 2 * p).checked_sub(k);
        prop_assume!(span(w, kw, pw).is_some_and(|s| s % stride == 0));
        prop_assume!(span(h, kh, ph).is_some_and(|s| s % stride == 0));
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut n = Net::new("c");
        let x = n.input_image("img", w, h, c, 1);
        let k = padded(&mut n, (kw, kh), (c, c), stride, (w, h), (pw, ph));
        let y = n.conv(k, x);
        n.output("y", y);
        let (w, h, kw, kh, c) = (w as usize, h as usize, kw as usize, kh as usize, c as usize);
        let img: Vec<i8> = (0..h * w * c).map(|_| rng.random_range(-5..=5)).collect();
        let wt: Vec<i8> = (0..kh * kw * c * c).map(|_| rng.random_range(-5..=5)).collect();
        let r = run(
            &n.0,
            vec![tensor(&[h, w, c], &img.iter().map(|&v| v as i64).collect::<Vec<_>>())],
            vec![tensor(&[kh, kw, c, c], &wt.iter().map(|&v| v as i64).collect::<Vec<_>>())],
        );
        let input = Array4::from_shape_fn((1, c, h, w), |(_, ch, y, x)| img[(y * w + x) * c + ch]);
        let weight = Array4::from_shape_fn((c, c, kh, kw), |(o, ch, i, j)| wt[((i * kw + j) * c + o) * c + ch]);
        let p = Conv2d {
            in_channels: c,
            out_channels: c,
            kernel: [kh, kw],
            stride: [stride as usize; 2],
            padding: [ph as usize, pw as usize, ph as usize, pw as usize],
            dilation: [1, 1],
            groups: 1,
            bias: false,
            relu: false,
        };
        let want = conv2d_direct(input.view(), weight.view(), None, &p).expect("oracle");
        let got = &r.outputs[0].value;
        prop_assert_eq!(got.shape(), &[want.shape()[2], want.shape()[3], c][..]);
        for ((_, o, y, x), &v) in want.indexed_iter() {
            prop_assert_eq!(got[[y, x, o]], v as i64);
        }
    }
}

/// Minimization keeps a declared padding: a smaller image re-derives the size from it, and
/// one candidate drops it for the compiler's own.
#[test]
fn minimization_keeps_a_declared_padding() {
    use pimdiff::targets::puma::reductions::{candidates, normalize};
    let mut n = Net::new("c");
    let x = n.input_image("img", 5, 5, 1, 1);
    let k = padded(&mut n, (3, 3), (1, 1), 1, (5, 5), (0, 2));
    let y = n.conv(k, x);
    n.output("y", y);
    let mut smaller = n.0.clone();
    if let Input::Image { width, .. } = &mut smaller.inputs[0] {
        *width = 4;
    }
    let smaller = normalize(smaller).expect("valid");
    assert!(matches!(
        smaller.matrices[0],
        Matrix::Conv {
            out_width: 2,
            out_height: 7,
            padding_width: Some(0),
            padding_height: Some(2),
            ..
        }
    ));
    assert_eq!(smaller.outputs[0].shape(), smaller.check().unwrap()[1]);
    let dropped: Vec<PumaNetwork> = (0..3)
        .flat_map(|pass| candidates(pass, &n.0))
        .filter(|(line, _)| line == "`k`: declared padding → ⌊k/2⌋")
        .map(|(_, c)| c)
        .collect();
    assert_eq!(dropped.len(), 1);
    assert!(matches!(
        dropped[0].matrices[0],
        Matrix::Conv {
            out_width: 5,
            out_height: 5,
            padding_width: None,
            padding_height: None,
            ..
        }
    ));
}
