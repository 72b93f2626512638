//! The wrap-8 graph reference against the oracle's direct operators on small random networks,
//! and exact values for the conventions the reference fixes (HWC im2col rows, dense grouped
//! matrices, pooling over in-bounds positions only, truncated average scale).

use ndarray::{Array1, Array2, Array3, Array4, Axis};
use pimdiff_oracle::graph::{
    evaluate, ConvNode, FcNode, Graph, GraphError, Node, NodeOp, NodeParams, PoolKind, PoolNode,
    Shape, Value,
};
use pimdiff_oracle::{conv2d_direct, mvm_direct, Conv2d, Mvm};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn node(op: NodeOp, inputs: &[usize]) -> Node {
    Node {
        op,
        inputs: inputs.to_vec(),
    }
}

fn tensor(v: &Value) -> &Array3<i8> {
    v.tensor().expect("a value")
}

/// The dense `(kh, kw, cin) × K` matrix of an oracle weight `[K, C/groups, kh, kw]`.
fn dense_matrix(weight: &Array4<i8>, in_channels: usize, groups: usize) -> Array2<i8> {
    let (k, cg, kh, kw) = weight.dim();
    let kg = k / groups;
    let mut m = Array2::zeros((kh * kw * in_channels, k));
    for ((o, c, i, j), &v) in weight.indexed_iter() {
        m[[(i * kw + j) * in_channels + (o / kg) * cg + c, o]] = v;
    }
    m
}

fn wrap_relu(x: i32, relu: bool) -> i8 {
    let v = x as i8;
    if relu {
        v.max(0)
    } else {
        v
    }
}

/// Expected convolution output `[OH, OW, K]` from `conv2d_direct` (exact int32), wrapped.
fn expected_conv(
    x: &Array3<i8>,
    w: &Array4<i8>,
    b: Option<&Array1<i8>>,
    c: &ConvNode,
) -> Array3<i8> {
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
    let nchw = x
        .view()
        .permuted_axes([2, 0, 1])
        .insert_axis(Axis(0))
        .to_owned();
    let bias = b.map(|b| b.mapv(i32::from));
    let out = conv2d_direct(nchw.view(), w.view(), bias.as_ref().map(|b| b.view()), &p).unwrap();
    out.index_axis(Axis(0), 0)
        .permuted_axes([1, 2, 0])
        .mapv(|v| wrap_relu(v, c.relu))
        .as_standard_layout()
        .into_owned()
}

/// Pooling by its definition: every kernel position, skipping those in the padding.
fn expected_pool(x: &Array3<i8>, p: &PoolNode) -> Array3<i8> {
    let (h, w, c) = x.dim();
    let [pt, pl, pb, pr] = p.padding;
    let oh = (h + pt + pb - p.kernel[0]) / p.stride[0] + 1;
    let ow = (w + pl + pr - p.kernel[1]) / p.stride[1] + 1;
    Array3::from_shape_fn((oh, ow, c), |(oy, ox, ch)| {
        let mut vals = Vec::new();
        for i in 0..p.kernel[0] {
            for j in 0..p.kernel[1] {
                let y = (oy * p.stride[0] + i) as isize - pt as isize;
                let xx = (ox * p.stride[1] + j) as isize - pl as isize;
                if y >= 0 && (y as usize) < h && xx >= 0 && (xx as usize) < w {
                    vals.push(x[[y as usize, xx as usize, ch]]);
                }
            }
        }
        match p.kind {
            PoolKind::Max => *vals.iter().max().unwrap(),
            PoolKind::Average => {
                let sum: i64 = vals.iter().map(|&v| v as i64).sum();
                if vals.len() == 1 {
                    sum as i8
                } else {
                    0
                }
            }
        }
    })
}

#[derive(Clone, Debug)]
struct NetSpec {
    h: usize,
    w: usize,
    cin: usize,
    groups: usize,
    kg: usize,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 4],
    relu: bool,
    bias: bool,
    pool: PoolNode,
    fc_out: usize,
    seed: u64,
}

fn net_spec() -> impl Strategy<Value = NetSpec> {
    (
        (1usize..=3, 1usize..=3, 1usize..=3),
        (2usize..=7, 2usize..=7),
        (1usize..=3, 1usize..=3, 1usize..=2, 1usize..=2),
        prop::array::uniform4(0usize..=2),
        (any::<bool>(), any::<bool>()),
        (
            prop_oneof![Just(PoolKind::Max), Just(PoolKind::Average)],
            1usize..=3,
            1usize..=2,
            0usize..=1,
        ),
        (1usize..=5, any::<u64>()),
    )
        .prop_map(
            |(
                (groups, cg, kg),
                (h, w),
                (kh, kw, sh, sw),
                pad,
                (relu, bias),
                pool,
                (fc_out, seed),
            )| {
                let (kind, pk, ps, pp) = pool;
                NetSpec {
                    h,
                    w,
                    cin: groups * cg,
                    groups,
                    kg,
                    kernel: [kh, kw],
                    stride: [sh, sw],
                    padding: pad.map(|p| p.min(kh.min(kw) - 1)),
                    relu,
                    bias,
                    pool: PoolNode {
                        kind,
                        kernel: [pk, pk],
                        stride: [ps, ps],
                        padding: [pp.min(pk - 1); 4],
                    },
                    fc_out,
                    seed,
                }
            },
        )
        .prop_filter("the window fits", |s| {
            s.h + s.padding[0] + s.padding[2] >= s.kernel[0]
                && s.w + s.padding[1] + s.padding[3] >= s.kernel[1]
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// input → conv → pool, conv → (concat with itself, add with relu of itself) → flatten → fc:
    /// every node equals the oracle's direct operators (or the definition, for pooling),
    /// wrapped to 8 bits.
    #[test]
    fn the_graph_reference_agrees_with_the_oracle(s in net_spec()) {
        let mut rng = ChaCha8Rng::seed_from_u64(s.seed);
        let cout = s.groups * s.kg;
        let conv = ConvNode {
            in_channels: s.cin, out_channels: cout, kernel: s.kernel, stride: s.stride,
            padding: s.padding, groups: s.groups, bias: s.bias, relu: s.relu,
        };
        let image = Array3::from_shape_simple_fn((s.h, s.w, s.cin), || rng.random::<i8>());
        let weight = Array4::from_shape_simple_fn((cout, s.cin / s.groups, s.kernel[0], s.kernel[1]), || rng.random::<i8>());
        let bias = Array1::from_shape_simple_fn(cout, || rng.random::<i8>());
        let conv_out = expected_conv(&image, &weight, s.bias.then_some(&bias), &conv);
        let (oh, ow, _) = conv_out.dim();
        let pool_fits = oh + s.pool.padding[0] * 2 >= s.pool.kernel[0] && ow + s.pool.padding[1] * 2 >= s.pool.kernel[1];
        let fc_in = oh * ow * cout;
        let fc_w = Array2::from_shape_simple_fn((s.fc_out, fc_in), || rng.random::<i8>());
        let fc_b = Array1::from_shape_simple_fn(s.fc_out, || rng.random::<i8>());
        let fc = FcNode { in_features: fc_in, out_features: s.fc_out, bias: true, relu: false };

        let mut nodes = vec![
            node(NodeOp::Input(Shape { h: s.h, w: s.w, c: s.cin }), &[]),
            node(NodeOp::Conv(conv), &[0]),
            node(NodeOp::Concat, &[1, 1]),
            node(NodeOp::Relu, &[1]),
            node(NodeOp::Add, &[1, 3]),
            node(NodeOp::Flatten, &[4]),
            node(NodeOp::FullyConnected(fc), &[5]),
        ];
        let mut params = vec![NodeParams::default(); nodes.len()];
        params[1] = NodeParams { matrix: Some(dense_matrix(&weight, s.cin, s.groups)), bias: s.bias.then(|| bias.clone()) };
        params[6] = NodeParams { matrix: Some(fc_w.t().to_owned()), bias: Some(fc_b.clone()) };
        if pool_fits {
            nodes.push(node(NodeOp::Pool(s.pool), &[1]));
            params.push(NodeParams::default());
        }
        let graph = Graph { nodes };
        let values = evaluate(&graph, image.view(), &params).unwrap();

        prop_assert_eq!(tensor(&values[0]), &image);
        prop_assert_eq!(tensor(&values[1]), &conv_out);
        let doubled = ndarray::concatenate(Axis(2), &[conv_out.view(), conv_out.view()]).unwrap();
        prop_assert_eq!(tensor(&values[2]), &doubled);
        let relu = conv_out.mapv(|v| v.max(0));
        prop_assert_eq!(tensor(&values[3]), &relu);
        let mut sum = conv_out.clone();
        sum.zip_mut_with(&relu, |a, &b| *a = a.wrapping_add(b));
        prop_assert_eq!(tensor(&values[4]), &sum);
        let flat: Vec<i8> = sum.iter().copied().collect();
        prop_assert_eq!(tensor(&values[5]).iter().copied().collect::<Vec<_>>(), flat.clone());
        let x = Array2::from_shape_vec((1, fc_in), flat).unwrap();
        let p = Mvm { in_features: fc_in, out_features: s.fc_out, bias: true, relu: false };
        let want = mvm_direct(x.view(), fc_w.view(), Some(fc_b.mapv(i32::from).view()), &p).unwrap();
        prop_assert_eq!(tensor(&values[6]).iter().copied().collect::<Vec<_>>(), want.iter().map(|&v| v as i8).collect::<Vec<_>>());
        if pool_fits {
            prop_assert_eq!(tensor(&values[7]), &expected_pool(&conv_out, &s.pool));
        }
    }
}

/// Rows are (kh, kw, cin): with input channel 1 of tap (0, 1) as the only nonzero row, a
/// 2×2 convolution copies the element to the right, channel 1.
#[test]
fn matrix_rows_are_hwc_im2col_order() {
    let image = Array3::from_shape_fn((2, 3, 2), |(y, x, c)| (y * 30 + x * 10 + c) as i8);
    let conv = ConvNode {
        in_channels: 2,
        out_channels: 1,
        kernel: [2, 2],
        stride: [1, 1],
        padding: [0; 4],
        groups: 1,
        bias: false,
        relu: false,
    };
    let mut m = Array2::zeros((8, 1));
    // Row (i = 0, j = 1, c = 1) = (i·kw + j)·cin + c = 3.
    m[[3, 0]] = 1;
    let graph = Graph {
        nodes: vec![
            node(NodeOp::Input(Shape { h: 2, w: 3, c: 2 }), &[]),
            node(NodeOp::Conv(conv), &[0]),
        ],
    };
    let params = vec![
        NodeParams::default(),
        NodeParams {
            matrix: Some(m),
            bias: None,
        },
    ];
    let values = evaluate(&graph, image.view(), &params).unwrap();
    assert_eq!(
        tensor(&values[1]).iter().copied().collect::<Vec<_>>(),
        vec![11, 21]
    );
}

/// Wrapping: 127 + 1 is −128, and ReLU applies to the wrapped value.
#[test]
fn the_sum_wraps_before_relu() {
    let image = Array3::from_shape_vec((1, 1, 2), vec![127i8, 1]).unwrap();
    let fc = |relu| FcNode {
        in_features: 2,
        out_features: 1,
        bias: false,
        relu,
    };
    for (relu, want) in [(false, -128i8), (true, 0)] {
        let graph = Graph {
            nodes: vec![
                node(NodeOp::Input(Shape { h: 1, w: 1, c: 2 }), &[]),
                node(NodeOp::FullyConnected(fc(relu)), &[0]),
            ],
        };
        let m = Array2::from_shape_vec((2, 1), vec![1i8, 1]).unwrap();
        let params = vec![
            NodeParams::default(),
            NodeParams {
                matrix: Some(m),
                bias: None,
            },
        ];
        let values = evaluate(&graph, image.view(), &params).unwrap();
        assert_eq!(tensor(&values[1])[[0, 0, 0]], want);
    }
}

/// Max pooling leaves padding out: an all-negative input stays negative at the border.
#[test]
fn pooling_skips_the_padding() {
    let image = Array3::from_elem((2, 2, 1), -5i8);
    let pool = PoolNode {
        kind: PoolKind::Max,
        kernel: [3, 3],
        stride: [2, 2],
        padding: [1, 1, 1, 1],
    };
    let graph = Graph {
        nodes: vec![
            node(NodeOp::Input(Shape { h: 2, w: 2, c: 1 }), &[]),
            node(NodeOp::Pool(pool), &[0]),
        ],
    };
    let values = evaluate(
        &graph,
        image.view(),
        &[NodeParams::default(), NodeParams::default()],
    )
    .unwrap();
    assert_eq!(tensor(&values[1]), &Array3::from_elem((1, 1, 1), -5i8));
}

#[test]
fn unsupported_nodes_make_their_consumers_unavailable() {
    let image = Array3::zeros((1, 1, 1));
    let graph = Graph {
        nodes: vec![
            node(NodeOp::Input(Shape { h: 1, w: 1, c: 1 }), &[]),
            node(NodeOp::Unsupported("OP_FOO is not modelled".into()), &[0]),
            node(NodeOp::Relu, &[1]),
            node(NodeOp::Relu, &[0]),
        ],
    };
    let values = evaluate(&graph, image.view(), &vec![NodeParams::default(); 4]).unwrap();
    assert_eq!(
        values[1],
        Value::Unavailable("OP_FOO is not modelled".into())
    );
    assert_eq!(
        values[2],
        Value::Unavailable("input node 1 has no reference value".into())
    );
    assert_eq!(values[3], Value::Tensor(image));
}

#[test]
fn malformed_graphs_and_parameters_are_errors() {
    let image = Array3::zeros((1, 1, 2));
    let input = node(NodeOp::Input(Shape { h: 1, w: 1, c: 2 }), &[]);
    let fc = FcNode {
        in_features: 2,
        out_features: 1,
        bias: false,
        relu: false,
    };
    let forward = Graph {
        nodes: vec![node(NodeOp::Relu, &[1]), input.clone()],
    };
    assert!(matches!(
        evaluate(&forward, image.view(), &vec![NodeParams::default(); 2]),
        Err(GraphError::NotTopological { node: 0, input: 1 })
    ));
    let graph = Graph {
        nodes: vec![input, node(NodeOp::FullyConnected(fc), &[0])],
    };
    assert!(matches!(
        evaluate(&graph, image.view(), &[]),
        Err(GraphError::ParamsLength { .. })
    ));
    let wrong = NodeParams {
        matrix: Some(Array2::zeros((3, 1))),
        bias: None,
    };
    assert!(matches!(
        evaluate(&graph, image.view(), &[NodeParams::default(), wrong]),
        Err(GraphError::BadParams { node: 1, .. })
    ));
    let off_group = ConvNode {
        in_channels: 2,
        out_channels: 2,
        kernel: [1, 1],
        stride: [1, 1],
        padding: [0; 4],
        groups: 2,
        bias: false,
        relu: false,
    };
    let grouped = Graph {
        nodes: vec![
            node(NodeOp::Input(Shape { h: 1, w: 1, c: 2 }), &[]),
            node(NodeOp::Conv(off_group), &[0]),
        ],
    };
    let m = Array2::from_shape_vec((2, 2), vec![1i8, 1, 0, 1]).unwrap();
    let err = evaluate(
        &grouped,
        image.view(),
        &[
            NodeParams::default(),
            NodeParams {
                matrix: Some(m),
                bias: None,
            },
        ],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "node 1: weight matrix entry (0, 1) = 1 lies outside output channel 1's group"
    );
}
