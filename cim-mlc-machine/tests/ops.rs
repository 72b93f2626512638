//! Every meta-operator on hand-written flows, with values worked out by hand.

mod common;

use common::*;
use pimdiff_cim_mlc::machine::{Access, InputQueue, MachineOptions, Trace};
use pimdiff_cim_mlc::{Level, NodeWeights};
use serde_json::json;

fn input(name: &str, shape: &[i64], addr: i64) -> (String, Vec<i64>, Vec<i64>) {
    (name.into(), shape.to_vec(), vec![addr])
}

fn output(name: &str, producer: usize, addr: i64, shape: &[i64]) -> (String, usize, i64, Vec<i64>) {
    (name.into(), producer, addr, shape.to_vec())
}

#[test]
fn core_conv_pads_in_torch_order() {
    // Padding [1, 0, 0, 0] is F.pad's (left, right, top, bottom): one column on the left, so a
    // 3x3 kernel over a 3x3 input gives one row of two (ONNX's order would give two rows of one).
    let spec = Spec {
        nodes: vec![node(
            0,
            "conv0",
            "Conv",
            "Conv",
            json!({
            "corestart": 0, "core_num": 1, "dup": 1, "ifmsize": [1, 1, 3, 3],
            "ofmsize": [1, 1, 1, 2], "memoryaddr": [0, 100]}),
        )],
        inputs: vec![input("x", &[1, 1, 3, 3], 0)],
        outputs: vec![output("y", 0, 100, &[1, 1, 1, 2])],
        segments: vec![vec![0]],
        ..Spec::default()
    };
    let text = "CIM.read_core-conv - [1, 1, 3, 3] - [1, 1, 3, 3] - [1, 1] - [1, 0, 0, 0] - [0,0] - 0 - 100\n";
    let c = compile(&spec, Some(text), None, None);
    let chip = c
        .chip()
        .input("x", t(&[1, 1, 3, 3], &[1, 2, 3, 4, 5, 6, 7, 8, 9]))
        .weights("conv0", conv_w(&[1, 1, 3, 3], &[1, 0, 0, 0, 0, 0, 0, 0, 2]))
        .build()
        .unwrap();
    let run = chip.run(Level::Core);
    // (0,0): 2·in[2][1] = 16; (0,1): in[0][0] + 2·in[2][2] = 19.
    assert_eq!(outputs(&run), vec![vec![16, 19]]);
    assert_eq!(buffer(&run, 100, 3), vec![Some(16), Some(19), None]);
}

#[test]
fn core_conv_reads_and_writes_channel_fastest_with_stride() {
    // A 1x1 kernel of two input and two output channels at stride 2 over a 3x3 map:
    // out0 = c0 + c1, out1 = 2·c0.
    let spec = Spec {
        nodes: vec![node(
            0,
            "conv0",
            "Conv",
            "Conv",
            json!({
            "corestart": 1, "core_num": 2, "dup": 1, "ifmsize": [1, 2, 3, 3],
            "ofmsize": [1, 2, 2, 2], "memoryaddr": [0, 100]}),
        )],
        inputs: vec![input("x", &[1, 2, 3, 3], 0)],
        outputs: vec![output("y", 0, 100, &[1, 2, 2, 2])],
        segments: vec![vec![0]],
        ..Spec::default()
    };
    let text = "CIM.read_core-conv - [1, 2, 3, 3] - [2, 2, 1, 1] - [2, 2] - [0, 0, 0, 0] - [1,2] - 0 - 100\n";
    let c = compile(&spec, Some(text), None, None);
    let x: Vec<i64> = (1..=9).chain((1..=9).map(|v| 10 * v)).collect();
    let chip = c
        .chip()
        .input("x", t(&[1, 2, 3, 3], &x))
        .weights("conv0", conv_w(&[2, 2, 1, 1], &[1, 1, 2, 0]))
        .build()
        .unwrap();
    let run = chip.run(Level::Core);
    assert_eq!(outputs(&run), vec![vec![11, 33, 77, 99, 2, 6, 14, 18]]);
    let hwc: Vec<Option<i64>> = [11, 2, 33, 6, 77, 14, 99, 18]
        .iter()
        .map(|v| Some(*v))
        .collect();
    assert_eq!(buffer(&run, 100, 8), hwc);
}

#[test]
fn core_fc_multiplies_every_row_by_the_in_out_matrix() {
    // Gemm with transB: B = [[1, 3, 5], [2, 4, 6]] is the [in, out] matrix [[1, 2], [3, 4], [5, 6]].
    let spec = Spec {
        nodes: vec![node(
            0,
            "fc",
            "Gemm",
            "Linear",
            json!({
            "corestart": 0, "core_num": 1, "dup": 1, "ifmsize": [1, 2, 3],
            "ofmsize": [1, 2, 2], "memoryaddr": [0, 10]}),
        )],
        inputs: vec![input("x", &[1, 2, 3], 0)],
        outputs: vec![output("y", 0, 10, &[1, 2, 2])],
        segments: vec![vec![0]],
        ..Spec::default()
    };
    let c = compile(
        &spec,
        Some("CIM.read_core-fc - [1, 2, 3] - [0, 0] - 0 - 10\n"),
        None,
        None,
    );
    let chip = c
        .chip()
        .input("x", t(&[1, 2, 3], &[1, -1, 2, 0, 1, 0]))
        .weights(
            "fc",
            NodeWeights::gemm(t(&[2, 3], &[1, 3, 5, 2, 4, 6]), true, None),
        )
        .build()
        .unwrap();
    assert_eq!(outputs(&chip.run(Level::Core)), vec![vec![8, 10, 3, 4]]);
}

fn buffer_only(nodes: usize, shape: &[i64], outs: Vec<(String, usize, i64, Vec<i64>)>) -> Spec {
    Spec {
        nodes: (0..nodes)
            .map(|i| node(i, &format!("n{i}"), "Relu", "ActivFunc", json!({})))
            .collect(),
        inputs: vec![input("x", shape, 0)],
        outputs: outs,
        ..Spec::default()
    }
}

#[test]
fn mov_copies_as_memmove() {
    let spec = buffer_only(1, &[6], vec![output("y", 0, 0, &[6])]);
    let c = compile(&spec, Some("Mov - 1 - 0 - 5\n"), None, None);
    let chip = c
        .chip()
        .input("x", t(&[6], &[1, 2, 3, 4, 5, 6]))
        .build()
        .unwrap();
    assert_eq!(
        outputs(&chip.run(Level::Core)),
        vec![vec![2, 3, 4, 5, 6, 6]]
    );
}

#[test]
fn pooling_stride_none_is_the_kernel_and_pads_are_onnx_order() {
    let spec = buffer_only(
        1,
        &[1, 1, 4, 4],
        vec![
            output("max", 0, 100, &[1, 1, 2, 2]),
            output("avg", 0, 200, &[1, 1, 3, 3]),
            output("maxpad", 0, 300, &[1, 1, 2, 2]),
        ],
    );
    let text = "MaxPool - [1, 1, 4, 4] - [2, 2] - None - None - 0 - 100\n\
                AveragePool - [1, 1, 4, 4] - [2, 2] - [2, 2] - [1, 1, 1, 1] - 0 - 200\n\
                MaxPool - [1, 1, 3, 3] - [2, 2] - [2, 2] - [0, 0, 1, 1] - 0 - 300\n";
    let c = compile(&spec, Some(text), None, None);
    let x: Vec<i64> = (1..=16).map(|v| 4 * v).collect();
    let chip = c.chip().input("x", t(&[1, 1, 4, 4], &x)).build().unwrap();
    let run = chip.run(Level::Core);
    let out = outputs(&run);
    assert_eq!(out[0], vec![24, 32, 56, 64]);
    // An average counts only the cells inside the map (count_include_pad = 0).
    assert_eq!(out[1], vec![4, 10, 16, 28, 34, 40, 52, 58, 64]);
    // The first nine values as a 3x3 map, one row and column of padding at the end.
    assert_eq!(out[2], vec![4 * 5, 4 * 6, 4 * 8, 4 * 9]);
}

#[test]
fn relu_alu_and_broadcasting() {
    let mut spec = buffer_only(
        4,
        &[1, 2, 1, 2],
        vec![
            output("sum", 0, 40, &[1, 2, 1, 2]),
            output("prod", 1, 50, &[1, 2, 1, 2]),
            output("diff", 2, 60, &[1, 2, 1, 2]),
            output("relu", 3, 70, &[1, 2, 1, 2]),
        ],
    );
    spec.initializers = vec![
        ("c".into(), vec![1, 2, 1, 2], Some(20)),
        ("s".into(), vec![1, 2, 1, 1], Some(30)),
    ];
    let text = "Add - 0 - 20 - [1, 2, 1, 2] - [1, 2, 1, 2] - 40\n\
                Mul - 0 - 30 - [1, 2, 1, 2] - [1, 2, 1, 1] - 50\n\
                Sub - 0 - 20 - 4 - 4 - 60\n\
                Relu - 4 - 60 -70\n";
    let c = compile(&spec, Some(text), None, None);
    let chip = c
        .chip()
        .input("x", t(&[1, 2, 1, 2], &[1, 2, 3, 4]))
        .initializer("c", t(&[1, 2, 1, 2], &[10, 20, 30, 40]))
        .initializer("s", t(&[1, 2, 1, 1], &[2, -1]))
        .build()
        .unwrap();
    let out = outputs(&chip.run(Level::Core));
    assert_eq!(out[0], vec![11, 22, 33, 44]);
    assert_eq!(out[1], vec![2, 4, -3, -4]);
    assert_eq!(out[2], vec![-9, -18, -27, -36]);
    assert_eq!(out[3], vec![0, 0, 0, 0]);
}

#[test]
fn lower_level_alu_broadcasts_with_the_nodes_shapes() {
    // The crossbar level prints element counts; the node's ifmsize and its constant's shape
    // say how they broadcast.
    let spec = Spec {
        nodes: vec![node(
            0,
            "mul",
            "Mul",
            "ALUop",
            json!({
            "ifmsize": [1, 2, 1, 2], "srcinit": "s", "memoryaddr": [0, 30, 50]}),
        )],
        inputs: vec![input("x", &[1, 2, 1, 2], 0)],
        outputs: vec![output("y", 0, 50, &[1, 2, 1, 2])],
        initializers: vec![("s".into(), vec![1, 2, 1, 1], Some(30))],
        ..Spec::default()
    };
    let cells: Vec<Cell<'_>> = vec![("alu", 1.0, 0, &["Mul - 0 - 30 - 4 - 2 - 50"])];
    let c = compile(&spec, None, Some(&cells), None);
    let chip = c
        .chip()
        .input("x", t(&[1, 2, 1, 2], &[1, 2, 3, 4]))
        .initializer("s", t(&[1, 2, 1, 1], &[2, -1]))
        .build()
        .unwrap();
    assert_eq!(
        outputs(&chip.run(Level::Crossbar)),
        vec![vec![2, 4, -3, -4]]
    );
}

#[test]
fn layout_operators_follow_onnx_on_the_channel_fastest_buffer() {
    let spec = buffer_only(
        3,
        &[1, 2, 2, 2],
        vec![
            output("flat", 0, 20, &[1, 8]),
            output("tr", 1, 40, &[1, 2, 2, 2]),
            output("re", 2, 60, &[1, 8]),
        ],
    );
    let text = "Flatten - 0 - 8 - [1, 2, 2, 2] - 1 - [1, 8] - 20\n\
                Transpose - 0 - 8 - [1, 2, 2, 2] - [0, 2, 3, 1] - [1, 2, 2, 2] - 40\n\
                Reshape - 0 - 8 - [1, 2, 2, 2] - [1, 8] - 60\n";
    let c = compile(&spec, Some(text), None, None);
    let chip = c
        .chip()
        .input("x", t(&[1, 2, 2, 2], &[0, 1, 2, 3, 4, 5, 6, 7]))
        .build()
        .unwrap();
    let out = outputs(&chip.run(Level::Core));
    assert_eq!(out[0], (0..8).collect::<Vec<i64>>());
    assert_eq!(out[1], vec![0, 4, 1, 5, 2, 6, 3, 7]);
    assert_eq!(out[2], (0..8).collect::<Vec<i64>>());
}

/// A 2x2 kernel of one input and two output channels over a 2x3 map, two copies on
/// crossbars 0 and 1: output pixel k is computed by copy k mod 2.
fn crossbar_conv() -> (Spec, Vec<Cell<'static>>) {
    let spec = Spec {
        nodes: vec![node(
            0,
            "conv0",
            "Conv",
            "Conv",
            json!({
            "ifmsize": [1, 1, 2, 3], "ofmsize": [1, 2, 1, 2], "xb_num": [1, 1], "dup": 2,
            "memoryaddr": [0, 50], "strides": [1, 1], "pads": [0, 0, 0, 0]}),
        )],
        inputs: vec![input("x", &[1, 1, 2, 3], 0)],
        outputs: vec![output("y", 0, 50, &[1, 2, 1, 2])],
        segments: vec![vec![0]],
        ..Spec::default()
    };
    let cells: Vec<Cell<'static>> = vec![
        (
            "mov",
            1.0,
            0,
            &[
                "load - [[0, 2], [3, 5]] - [0, 0] - 0",
                "load - [[1, 3], [4, 6]] - [1, 1] - 0",
            ],
        ),
        (
            "compute",
            2.0,
            0,
            &["CIM.read_xb - [0, 0]", "CIM.read_xb - [1, 1]"],
        ),
    ];
    (spec, cells)
}

#[test]
fn crossbar_conv_writes_pixel_k_at_its_place_and_is_traced() {
    let (spec, cells) = crossbar_conv();
    let c = compile(&spec, None, Some(&cells), None);
    let chip = c
        .chip()
        .input("x", t(&[1, 1, 2, 3], &[1, 2, 3, 4, 5, 6]))
        .weights("conv0", conv_w(&[2, 1, 2, 2], &[1, 0, 0, 1, 2, 0, 0, -1]))
        .build()
        .unwrap();
    let mut trace = Trace::default();
    let run = chip.run_observed(Level::Crossbar, &mut trace);
    assert_eq!(outputs(&run), vec![vec![6, 8, -3, -2]]);
    assert_eq!(
        buffer(&run, 50, 4),
        vec![Some(6), Some(-3), Some(8), Some(-2)]
    );
    let lines: Vec<(u32, Option<usize>, Option<f64>)> = trace
        .entries
        .iter()
        .map(|e| (e.line, e.node, e.cycle))
        .collect();
    // Cycle 1's loads (lines 1-4: `\tparallel{`, two loads, `\t}`), then cycle 2's reads.
    assert_eq!(
        lines,
        vec![
            (2, Some(0), Some(1.0)),
            (3, Some(0), Some(1.0)),
            (6, Some(0), Some(2.0)),
            (7, Some(0), Some(2.0))
        ]
    );
    let read = &trace.entries[2];
    assert_eq!(
        read.reads,
        vec![
            Access::CrossbarInput { xb: 0 },
            Access::Crossbars { first: 0, last: 0 }
        ]
    );
    assert_eq!(read.writes, vec![Access::Global { start: 50, len: 2 }]);
    assert_eq!(read.written, vec![vec![6, -3]]);
}

#[test]
fn crossbar_linear_loads_rows_and_writes_row_k() {
    let spec = Spec {
        nodes: vec![node(
            0,
            "mm",
            "MatMul",
            "Linear",
            json!({
            "ifmsize": [1, 2, 3], "ofmsize": [1, 2, 2], "xb_num": [1, 1], "dup": 1,
            "memoryaddr": [0, 20]}),
        )],
        inputs: vec![input("x", &[1, 2, 3], 0)],
        outputs: vec![output("y", 0, 20, &[1, 2, 2])],
        segments: vec![vec![0]],
        ..Spec::default()
    };
    let cells: Vec<Cell<'_>> = vec![
        ("mov", 1.0, 0, &["load - 0 - [0, 0] - 3"]),
        ("compute", 2.0, 0, &["CIM.read_xb - [0, 0]"]),
        ("mov", 3.0, 0, &["load - 3 - [0, 0] - 3"]),
        ("compute", 4.0, 0, &["CIM.read_xb - [0, 0]"]),
        ("mov", 5.0, 0, &["load - 20 - 30 - 4"]),
    ];
    let c = compile(&spec, None, Some(&cells), None);
    let chip = c
        .chip()
        .input("x", t(&[1, 2, 3], &[1, 0, 2, 0, 1, -1]))
        .weights("mm", NodeWeights::matmul(t(&[3, 2], &[1, 2, 3, 4, 5, 6])))
        .build()
        .unwrap();
    let run = chip.run(Level::Crossbar);
    assert_eq!(outputs(&run), vec![vec![11, 14, -2, -2]]);
    // `load - 20 - 30 - 4`: a buffer-to-buffer copy.
    assert_eq!(
        buffer(&run, 30, 4),
        vec![Some(11), Some(14), Some(-2), Some(-2)]
    );
}

/// A 3x3 convolution (one channel, padding 1) over a 1x2 map at the wordline level: crossbars
/// of 8 rows in two slices of 4 (MaxRC), the 9 weight rows in three row blocks: crossbar 0
/// holds blocks 0 and 1, crossbar 1 block 2.
fn wordline_conv(cells: &[Cell<'_>]) -> Compiled {
    let spec = Spec {
        nodes: vec![node(
            0,
            "conv0",
            "Conv",
            "Conv",
            json!({
            "ifmsize": [1, 1, 1, 2], "ofmsize": [1, 1, 1, 2], "xb_num": [2, 1], "dup": 1,
            "memoryaddr": [0, 50], "strides": [1, 1], "pads": [1, 1, 1, 1],
            "weight_block": [3, 1],
            "weight_reorder": {"name": "reorder_tensor", "dims": [2, 1, 2, 2], "data_type": "INT64",
                               "values": [[[[0, -1], [1, -1]]], [[[2, -1], [-1, -1]]]]}}),
        )],
        inputs: vec![input("x", &[1, 1, 1, 2], 0)],
        outputs: vec![output("y", 0, 50, &[1, 1, 1, 2])],
        segments: vec![vec![0]],
        ..Spec::default()
    };
    compile(&spec, None, None, Some(cells))
}

#[test]
fn wordline_conv_finds_each_chunks_pixel_by_its_addresses() {
    // Pixel 1's chunks come first; pixel 0's third chunk and pixel 1's are padding only.
    let cells: Vec<Cell<'_>> = vec![
        (
            "mov",
            1.0,
            0,
            &[
                "load - ['pad-3', [0, 1]] - [0, 0] - None",
                "load - [[1, 2], 'pad-3'] - [0, 0] - None",
                "load - ['pad-1'] - [1, 1] - None",
            ],
        ),
        (
            "compute",
            2.0,
            0,
            &[
                "CIM.read_wl- [0, 4] - [0, 0]",
                "CIM.read_wl- [4, 8] - [0, 0]",
                "CIM.read_wl- [0, 4] - [1, 1]",
            ],
        ),
        (
            "mov",
            3.0,
            0,
            &[
                "load - ['pad-4'] - [0, 0] - None",
                "load - [[0, 2], 'pad-2'] - [0, 0] - None",
                "load - ['pad-1'] - [1, 1] - None",
            ],
        ),
        (
            "compute",
            4.0,
            0,
            &[
                "CIM.read_wl- [0, 4] - [0, 0]",
                "CIM.read_wl- [4, 8] - [0, 0]",
                "CIM.read_wl- [0, 4] - [1, 1]",
            ],
        ),
    ];
    let c = wordline_conv(&cells);
    let kernel: Vec<i64> = (1..=9).collect();
    let chip = c
        .chip()
        .input("x", t(&[1, 1, 1, 2], &[10, 20]))
        .weights("conv0", conv_w(&[1, 1, 3, 3], &kernel))
        .build()
        .unwrap();
    let mut trace = Trace::default();
    let run = chip.run_observed(Level::Wordline, &mut trace);
    // pixel 0: w(1,1)·10 + w(1,2)·20 = 5·10 + 6·20; pixel 1: w(1,0)·10 + w(1,1)·20.
    assert_eq!(outputs(&run), vec![vec![170, 140]]);
    // Pixel 1 is written by the read of its last row block holding input (line 8), pixel 0 by
    // line 18's.
    let writes: Vec<(u32, Vec<Access>)> = trace
        .entries
        .iter()
        .filter(|e| !e.written.is_empty())
        .map(|e| (e.line, e.writes.clone()))
        .collect();
    assert_eq!(
        writes,
        vec![
            (8, vec![Access::Global { start: 51, len: 1 }]),
            (18, vec![Access::Global { start: 50, len: 1 }])
        ]
    );
}

#[test]
fn wordline_linear_sums_slices_and_crossbars() {
    // 6 inputs, 3 outputs; crossbars of 4 rows and 2 columns, 2-row slices: crossbar
    // xbc·2 + xbr holds rows 4·xbr…, columns 2·xbc….
    let spec = Spec {
        xb: (4, 2),
        max_rows: 2,
        nodes: vec![node(
            0,
            "fc",
            "Gemm",
            "Linear",
            json!({
            "ifmsize": [1, 6], "ofmsize": [1, 3], "xb_num": [2, 2], "dup": 1,
            "memoryaddr": [0, 10]}),
        )],
        inputs: vec![input("x", &[1, 6], 0)],
        outputs: vec![output("y", 0, 10, &[1, 3])],
        segments: vec![vec![0]],
        ..Spec::default()
    };
    let mut cells: Vec<Cell<'_>> = Vec::new();
    let loads = [
        [
            "load - 0 - [0, 0] - 2",
            "load - 4 - [1, 1] - 2",
            "load - 0 - [2, 2] - 2",
            "load - 4 - [3, 3] - 2",
        ],
        [
            "load - 2 - [0, 0] - 2",
            "load - 6 - [1, 1] - 0",
            "load - 2 - [2, 2] - 2",
            "load - 6 - [3, 3] - 0",
        ],
    ];
    let reads = [
        [
            "CIM.read_wl- [0, 2] - [0, 0]",
            "CIM.read_wl- [0, 2] - [1, 1]",
            "CIM.read_wl- [0, 2] - [2, 2]",
            "CIM.read_wl- [0, 2] - [3, 3]",
        ],
        [
            "CIM.read_wl- [2, 4] - [0, 0]",
            "CIM.read_wl- [2, 4] - [1, 1]",
            "CIM.read_wl- [2, 4] - [2, 2]",
            "CIM.read_wl- [2, 4] - [3, 3]",
        ],
    ];
    cells.push(("mov", 1.0, 0, &loads[0]));
    cells.push(("compute", 2.0, 0, &reads[0]));
    cells.push(("mov", 3.0, 0, &loads[1]));
    cells.push(("compute", 4.0, 0, &reads[1]));
    cells.push((
        "mov",
        5.0,
        0,
        &["Add-[0, 1]-10-2", "Add-[2, 3]-12-1", "load - [0] - 20 - 2"],
    ));
    cells.push(("mov", 6.0, 0, &["load - 0 - [0, 0] - 2"]));
    cells.push(("compute", 7.0, 0, &["CIM.read_wl- [0, 2] - [0, 0]"]));
    cells.push(("mov", 8.0, 0, &["load - [0] - 30 - 2"]));
    let c = compile(&spec, None, None, Some(&cells));
    let m: Vec<i64> = (1..=18).collect(); // M[r][c] = 3r + c + 1
    let chip = c
        .chip()
        .input("x", t(&[1, 6], &[1, 2, 0, 1, 0, -1]))
        .weights("fc", NodeWeights::matmul(t(&[6, 3], &m)))
        .build()
        .unwrap();
    let run = chip.run(Level::Wordline);
    assert_eq!(outputs(&run), vec![vec![3, 6, 9]]);
    // Crossbar 0 alone: rows 0-3, columns 0-1.
    assert_eq!(buffer(&run, 20, 2), vec![Some(19), Some(23)]);
    // After a read-out the next activation starts afresh: rows 0-1 only.
    assert_eq!(buffer(&run, 30, 2), vec![Some(9), Some(12)]);
}

#[test]
fn unbounded_queues_pair_each_activation_with_the_oldest_load() {
    // Both pixels' loads first, then every activation: the hardware cannot hold it (see the
    // faults), the unbounded queue pairs them in order.
    let cells: Vec<Cell<'_>> = vec![
        (
            "mov",
            1.0,
            0,
            &[
                "load - ['pad-4'] - [0, 0] - None",
                "load - [[0, 2], 'pad-2'] - [0, 0] - None",
                "load - ['pad-1'] - [1, 1] - None",
                "load - ['pad-3', [0, 1]] - [0, 0] - None",
                "load - [[1, 2], 'pad-3'] - [0, 0] - None",
                "load - ['pad-1'] - [1, 1] - None",
            ],
        ),
        (
            "compute",
            2.0,
            0,
            &[
                "CIM.read_wl- [0, 4] - [0, 0]",
                "CIM.read_wl- [4, 8] - [0, 0]",
                "CIM.read_wl- [0, 4] - [1, 1]",
                "CIM.read_wl- [0, 4] - [0, 0]",
                "CIM.read_wl- [4, 8] - [0, 0]",
                "CIM.read_wl- [0, 4] - [1, 1]",
            ],
        ),
    ];
    let c = wordline_conv(&cells);
    let kernel: Vec<i64> = (1..=9).collect();
    let build = |queue| {
        c.chip()
            .input("x", t(&[1, 1, 1, 2], &[10, 20]))
            .weights("conv0", conv_w(&[1, 1, 3, 3], &kernel))
            .options(MachineOptions {
                input_queue: queue,
                ..MachineOptions::default()
            })
            .build()
            .unwrap()
    };
    assert_eq!(
        outputs(&build(InputQueue::Unbounded).run(Level::Wordline)),
        vec![vec![170, 140]]
    );
    assert_eq!(
        fault(&build(InputQueue::Hardware).run(Level::Wordline)),
        "wordline line 5 `load - ['pad-3', [0, 1]] - [0, 0] - None` (node 0 `conv0`): loads \
         crossbar 0 while 2 earlier load(s) (the first at line 2) wait unread: the crossbar \
         cannot hold them"
    );
}

#[test]
fn none_and_text_lines_do_nothing() {
    let spec = buffer_only(1, &[2], vec![output("y", 0, 0, &[2])]);
    let dir = tempfile::tempdir().unwrap();
    let cells: Vec<Cell<'_>> = vec![("mov", 1.0, 0, &["None"])];
    write(dir.path(), &spec, None, Some(&cells), None);
    // A message CIM-MLC printed into the file while it was open, before the tables.
    let text = format!(
        "Exception: 'memoryaddr' attribute is missing or incomplete in node n0. Skipping this node.\n{}",
        printed(Level::Crossbar, &cells)
    );
    std::fs::write(dir.path().join(Level::Crossbar.file_name()), text).unwrap();
    let flows = pimdiff_cim_mlc::Flows::load(dir.path()).unwrap();
    let layout = pimdiff_cim_mlc::Layout::load(&dir.path().join("layout.json")).unwrap();
    let items: Vec<&pimdiff_cim_mlc::flow::Item> = flows
        .crossbar
        .as_ref()
        .unwrap()
        .lines
        .iter()
        .map(|l| &l.item)
        .collect();
    assert_eq!(
        items,
        vec![
            &pimdiff_cim_mlc::flow::Item::Text,
            &pimdiff_cim_mlc::flow::Item::Op(pimdiff_cim_mlc::Op::Missing)
        ]
    );
    let chip = pimdiff_cim_mlc::Chip::builder(&layout, &flows)
        .input("x", t(&[2], &[4, 5]))
        .build()
        .unwrap();
    let run = chip.run(Level::Crossbar);
    assert_eq!(outputs(&run), vec![vec![4, 5]]);
    assert_eq!(run.finished().unwrap().ops, 1);
}
