//! Every fault kind, every outcome that is not a finished run: each named with its level, line,
//! node and what went wrong.

mod common;

use common::*;
use pimdiff_cim_mlc::machine::{FaultKind, MachineOptions, NodeRef, RunOutcome};
use pimdiff_cim_mlc::{Level, NodeWeights};
use serde_json::{json, Value};

fn plain(nodes: Vec<Value>, input: &[i64]) -> Spec {
    Spec {
        nodes,
        inputs: vec![("x".into(), vec![input.len() as i64], vec![0])],
        outputs: vec![("y".into(), 0, 0, vec![input.len() as i64])],
        segments: vec![vec![0]],
        ..Spec::default()
    }
}

fn relu_node() -> Value {
    node(0, "n0", "Relu", "ActivFunc", json!({}))
}

/// Run a core-level flow over the input `x` (at address 0) with no weighted node.
fn core(text: &str, x: &[i64]) -> RunOutcome {
    let c = compile(&plain(vec![relu_node()], x), Some(text), None, None);
    let chip = c.chip().input("x", t(&[x.len()], x)).build().unwrap();
    chip.run(Level::Core)
}

fn kind(outcome: &RunOutcome) -> FaultKind {
    outcome
        .fault()
        .unwrap_or_else(|| panic!("no fault: {outcome}"))
        .kind
        .clone()
}

#[test]
fn buffer_faults_name_the_address() {
    let run = core("Mov - 0 - 10 - 2\nMov - 5 - 10 - 2\n", &[1, 2]);
    assert_eq!(
        fault(&run),
        "core line 2 `Mov - 5 - 10 - 2`: reads global buffer address 5, which nothing wrote"
    );
    assert_eq!(
        kind(&core("Mov - 0 - 1023 - 2\n", &[1, 2])),
        FaultKind::OutOfBounds {
            addr: 1024,
            size: 1024
        }
    );
    assert_eq!(kind(&run).name(), "read-never-written");
    assert_eq!(
        kind(&core("Mov - 0 - 1023 - 2\n", &[1, 2])).name(),
        "out-of-bounds"
    );
    assert_eq!(
        fault(&core("Mov - -1 - 0 - 1\n", &[1, 2])),
        "core line 1 `Mov - -1 - 0 - 1`: accesses global buffer address -1, outside the buffer of \
         1024 elements"
    );
    assert_eq!(
        kind(&core("Relu - -2 - 0 -4\n", &[1, 2])),
        FaultKind::Negative {
            what: "length",
            value: -2
        }
    );
}

#[test]
fn arithmetic_faults() {
    assert_eq!(
        kind(&core("Add - 0 - 0 - 1 - 1 - 5\n", &[i64::MAX])),
        FaultKind::Overflow
    );
    assert_eq!(
        fault(&core("Div - 0 - 1 - 1 - 1 - 5\n", &[7, 2])),
        "core line 1 `Div - 0 - 1 - 1 - 1 - 5`: the quotient 7/2 is not an integer"
    );
    assert_eq!(
        kind(&core("Div - 0 - 1 - 1 - 1 - 5\n", &[7, 0])),
        FaultKind::DivideByZero
    );
    assert_eq!(
        kind(&core(
            "AveragePool - [1, 1, 1, 2] - [1, 2] - None - None - 0 - 5\n",
            &[1, 2]
        )),
        FaultKind::Inexact {
            what: "the average 3/2".into()
        }
    );
}

#[test]
fn operands_that_cannot_be_used() {
    assert_eq!(
        fault(&core(
            "MaxPool - [1, 1, 1, 2] - None - None - None - 0 - 5\n",
            &[1, 2]
        )),
        "core line 1 `MaxPool - [1, 1, 1, 2] - None - None - None - 0 - 5`: no kernel"
    );
    assert_eq!(
        kind(&core(
            "MaxPool - [1, 1, 1, 2] - [3, 3] - None - None - 0 - 5\n",
            &[1, 2]
        )),
        FaultKind::BadOperand {
            what: "a 3x3 window does not fit the padded input [1, 1, 1, 2]".into()
        }
    );
    assert_eq!(
        kind(&core(
            "Flatten - 0 - 1 - [1, 2] - 1 - [1, 2] - 5\n",
            &[1, 2]
        )),
        FaultKind::ShapeMismatch {
            what: "length 1, but ifmsize [1, 2] holds 2".into()
        }
    );
    assert_eq!(
        kind(&core("Add - 0 - 0 - [1, 2] - [3] - 5\n", &[1, 2])),
        FaultKind::ShapeMismatch {
            what: "shapes [1, 2] and [3] do not broadcast".into()
        }
    );
}

fn conv_node(index: usize, name: &str, corestart: i64, core_num: i64, extra: Value) -> Value {
    let mut attrs = json!({
        "corestart": corestart, "core_num": core_num, "dup": 1, "ifmsize": [1, 1, 2, 2],
        "ofmsize": [1, 1, 1, 1], "memoryaddr": [0, 100], "xb_num": [1, 1],
        "strides": [1, 1], "pads": [0, 0, 0, 0]});
    if let (Some(a), Value::Object(e)) = (attrs.as_object_mut(), extra) {
        a.extend(e);
    }
    node(index, name, "Conv", "Conv", attrs)
}

fn conv_spec(nodes: Vec<Value>) -> Spec {
    let n = nodes.len();
    Spec {
        nodes,
        inputs: vec![("x".into(), vec![1, 1, 2, 2], vec![0])],
        outputs: vec![("y".into(), 0, 100, vec![1, 1, 1, 1])],
        segments: vec![(0..n).collect()],
        ..Spec::default()
    }
}

fn run_conv(
    spec: &Spec,
    core: Option<&str>,
    xb: Option<&[Cell<'_>]>,
    wl: Option<&[Cell<'_>]>,
    level: Level,
) -> RunOutcome {
    let c = compile(spec, core, xb, wl);
    let mut b = c.chip().input("x", t(&[1, 1, 2, 2], &[1, 2, 3, 4]));
    for n in &c.layout.nodes {
        b = b.weights(&n.name, conv_w(&[1, 1, 2, 2], &[1, 1, 1, 1]));
    }
    b.build().unwrap().run(level)
}

const CONV: &str = "CIM.read_core-conv - [1, 1, 2, 2] - [1, 1, 2, 2] - [1, 1] - [0, 0, 0, 0]";

#[test]
fn core_level_weights_must_be_on_the_named_cores() {
    let one = conv_spec(vec![conv_node(0, "conv0", 0, 1, json!({}))]);
    let ok = run_conv(
        &one,
        Some(&format!("{CONV} - [0,0] - 0 - 100\n")),
        None,
        None,
        Level::Core,
    );
    assert_eq!(outputs(&ok), vec![vec![10]]);
    let run = run_conv(
        &one,
        Some(&format!("{CONV} - [3,4] - 0 - 100\n")),
        None,
        None,
        Level::Core,
    );
    assert_eq!(kind(&run), FaultKind::CoreOutOfChip { core: 4, cores: 4 });
    let run = run_conv(
        &one,
        Some(&format!("{CONV} - [1,1] - 0 - 100\n")),
        None,
        None,
        Level::Core,
    );
    assert_eq!(
        fault(&run),
        format!(
            "core line 1 `{CONV} - [1,1] - 0 - 100` (node 0 `conv0`): cores [1, 1] hold no copy \
             of the node's weights (its copies: [(0, 0)])"
        )
    );
    let two = conv_spec(vec![
        conv_node(0, "conv0", 0, 2, json!({})),
        conv_node(1, "conv1", 1, 1, json!({})),
    ]);
    let run = run_conv(
        &two,
        Some(&format!("{CONV} - [0,1] - 0 - 100\n")),
        None,
        None,
        Level::Core,
    );
    assert_eq!(
        kind(&run),
        FaultKind::Conflict {
            resource: "core 1".into(),
            other: NodeRef {
                index: 1,
                name: "conv1".into()
            }
        }
    );
    let text = "CIM.read_core-conv - [1, 1, 2, 2] - [1, 1, 3, 3] - [1, 1] - [0, 0, 0, 0] - [0,0] - 0 - 100\n";
    assert_eq!(
        kind(&run_conv(&one, Some(text), None, None, Level::Core)),
        FaultKind::KernelShape {
            printed: vec![1, 1, 3, 3],
            placed: vec![1, 1, 2, 2]
        }
    );
    // A convolution no Conv node's handler printed: no weights to read.
    assert_eq!(
        kind(&core(&format!("{CONV} - [0,0] - 0 - 100\n"), &[1, 2])),
        FaultKind::NoWeights
    );
}

#[test]
fn crossbar_faults() {
    let one = conv_spec(vec![conv_node(0, "conv0", 0, 1, json!({}))]);
    let xb = |cells: &[Cell<'_>]| run_conv(&one, None, Some(cells), None, Level::Crossbar);
    let load = "load - [[0, 2], [2, 4]] - [0, 0] - 0";
    assert_eq!(
        outputs(&xb(&[
            ("mov", 1.0, 0, &[load]),
            ("compute", 2.0, 0, &["CIM.read_xb - [0, 0]"])
        ])),
        vec![vec![10]]
    );
    assert_eq!(
        fault(&xb(&[("compute", 2.0, 0, &["CIM.read_xb - [0, 0]"])])),
        "crossbar line 1 `CIM.read_xb - [0, 0]` (node 0 `conv0`): reads crossbar 0, into which \
         nothing was loaded"
    );
    assert_eq!(
        kind(&xb(&[("mov", 1.0, 0, &[load, load])])),
        FaultKind::InputOverrun {
            xb: 0,
            pending: 1,
            first: 2
        }
    );
    assert_eq!(
        kind(&xb(&[
            ("mov", 1.0, 0, &["load - [[0, 2], [2, 3]] - [0, 0] - 0"]),
            ("compute", 2.0, 0, &["CIM.read_xb - [0, 0]"])
        ])),
        FaultKind::LoadLength {
            loaded: 3,
            expected: 4
        }
    );
    assert_eq!(
        kind(&xb(&[
            ("mov", 1.0, 0, &["load - [[0, 2], [2, 4]] - [0, 1] - 0"]),
            ("compute", 2.0, 0, &["CIM.read_xb - [0, 1]"])
        ])),
        FaultKind::CrossbarCount {
            named: 2,
            expected: 1
        }
    );
    assert_eq!(
        kind(&xb(&[(
            "mov",
            1.0,
            0,
            &["load - [[0, 2], [2, 4]] - [8, 8] - 0"]
        )])),
        FaultKind::CrossbarOutOfChip {
            xb: 8,
            crossbars: 8
        }
    );
    assert_eq!(
        kind(&xb(&[
            ("mov", 1.0, 0, &[load]),
            ("compute", 2.0, 0, &["CIM.read_xb - [0, 0]"]),
            ("mov", 3.0, 0, &[load]),
            ("compute", 4.0, 0, &["CIM.read_xb - [0, 0]"]),
        ])),
        FaultKind::ExtraCompute { unit: 1, units: 1 }
    );
    assert_eq!(
        kind(&xb(&[
            (
                "mov",
                1.0,
                0,
                &[load, "load - [[0, 2], [2, 4]] - [2, 2] - 0"]
            ),
            ("compute", 2.0, 0, &["CIM.read_xb - [2, 2]"]),
        ])),
        FaultKind::NoCopy {
            offset: 2,
            copies: 1,
            per_copy: 1
        }
    );
    let wide = conv_spec(vec![conv_node(0, "conv0", 0, 1, json!({"xb_num": [1, 2]}))]);
    let run = run_conv(
        &wide,
        None,
        Some(&[
            (
                "mov",
                1.0,
                0,
                &[load, "load - [[0, 2], [2, 4]] - [1, 1] - 0"],
            ),
            ("compute", 2.0, 0, &["CIM.read_xb - [0, 1]"]),
        ]),
        None,
        Level::Crossbar,
    );
    assert_eq!(
        fault(&run),
        "crossbar line 5 `CIM.read_xb - [0, 1]` (node 0 `conv0`): crossbar 1 holds the input of \
         line 3, its neighbours that of line 2"
    );
    let bare = conv_spec(vec![node(
        0,
        "conv0",
        "Conv",
        "Conv",
        json!({
        "ifmsize": [1, 1, 2, 2], "ofmsize": [1, 1, 1, 1], "memoryaddr": [0, 100]}),
    )]);
    let run = run_conv(
        &bare,
        None,
        Some(&[
            ("mov", 1.0, 0, &[load]),
            ("compute", 2.0, 0, &["CIM.read_xb - [0, 0]"]),
        ]),
        None,
        Level::Crossbar,
    );
    assert_eq!(kind(&run), FaultKind::MissingAttribute { attr: "xb_num" });
    let two = conv_spec(vec![
        conv_node(0, "conv0", 0, 1, json!({})),
        conv_node(1, "conv1", 1, 1, json!({})),
    ]);
    let run = run_conv(
        &two,
        None,
        Some(&[("mov", 1.0, 0, &[load]), ("mov", 1.0, 1, &[load])]),
        None,
        Level::Crossbar,
    );
    assert_eq!(
        fault(&run),
        "crossbar line 2 `load - [[0, 2], [2, 4]] - [0, 0] - 0` (node 1 `conv1`): crossbar 0 also \
         holds node 0 `conv0` in the same flow segment"
    );
}

#[test]
fn a_crossbar_window_must_be_its_units() {
    // Two pixels of a 2x2 kernel over a 2x3 map, copies on crossbars 0 and 1: copy 0 computes
    // pixel 0, but is loaded with pixel 1's window.
    let spec = Spec {
        nodes: vec![conv_node(
            0,
            "conv0",
            0,
            1,
            json!({
            "ifmsize": [1, 1, 2, 3], "ofmsize": [1, 1, 1, 2], "dup": 2}),
        )],
        inputs: vec![("x".into(), vec![1, 1, 2, 3], vec![0])],
        outputs: vec![("y".into(), 0, 100, vec![1, 1, 1, 2])],
        segments: vec![vec![0]],
        ..Spec::default()
    };
    let cells: Vec<Cell<'_>> = vec![
        (
            "mov",
            1.0,
            0,
            &[
                "load - [[1, 3], [4, 6]] - [0, 0] - 0",
                "load - [[0, 2], [3, 5]] - [1, 1] - 0",
            ],
        ),
        (
            "compute",
            2.0,
            0,
            &["CIM.read_xb - [0, 0]", "CIM.read_xb - [1, 1]"],
        ),
    ];
    let c = compile(&spec, None, Some(&cells), None);
    let run = c
        .chip()
        .input("x", t(&[1, 1, 2, 3], &[1, 2, 3, 4, 5, 6]))
        .weights("conv0", conv_w(&[1, 1, 2, 2], &[1, 1, 1, 1]))
        .build()
        .unwrap()
        .run(Level::Crossbar);
    assert_eq!(
        fault(&run),
        "crossbar line 6 `CIM.read_xb - [0, 0]` (node 0 `conv0`): the input is the window of \
         output pixel 1, but this activation computes pixel 0"
    );
}

/// One 2x2 convolution of one channel on one crossbar of 8 rows in two slices of 4 (MaxRC).
fn wordline_one(reorder: Value, block: Value) -> Spec {
    conv_spec(vec![conv_node(
        0,
        "conv0",
        0,
        1,
        json!({
        "weight_block": block,
        "weight_reorder": {"name": "r", "dims": [1, 1, 2, 1], "data_type": "INT64", "values": reorder}}),
    )])
}

#[test]
fn wordline_faults() {
    let spec = wordline_one(json!([[[[0], [-1]]]]), json!([1, 1]));
    let wl =
        |spec: &Spec, cells: &[Cell<'_>]| run_conv(spec, None, None, Some(cells), Level::Wordline);
    let load = "load - [[0, 4]] - [0, 0] - None";
    let read = "CIM.read_wl- [0, 4] - [0, 0]";
    assert_eq!(
        outputs(&wl(
            &spec,
            &[("mov", 1.0, 0, &[load]), ("compute", 2.0, 0, &[read])]
        )),
        vec![vec![10]]
    );
    assert_eq!(
        fault(&wl(
            &spec,
            &[
                ("mov", 1.0, 0, &[load]),
                ("compute", 2.0, 0, &["CIM.read_wl- [0, 8] - [0, 0]"])
            ]
        )),
        "wordline line 2 `CIM.read_wl- [0, 8] - [0, 0]` (node 0 `conv0`): opens 8 wordlines at \
         once; MaxRC is 4"
    );
    assert_eq!(
        kind(&wl(
            &spec,
            &[
                ("mov", 1.0, 0, &[load]),
                ("compute", 2.0, 0, &["CIM.read_wl- [6, 10] - [0, 0]"])
            ]
        )),
        FaultKind::Wordlines {
            what: "wordlines [6, 10) are no range inside a crossbar of 8 rows".into()
        }
    );
    assert_eq!(
        kind(&wl(
            &spec,
            &[
                ("mov", 1.0, 0, &[load]),
                ("compute", 2.0, 0, &["CIM.read_wl- [1, 5] - [0, 0]"])
            ]
        )),
        FaultKind::Wordlines {
            what: "wordlines [1, 5) are not one of the 2 slices of 4 rows weight_reorder gives \
                   the crossbar"
                .into()
        }
    );
    assert_eq!(
        kind(&wl(
            &spec,
            &[
                ("mov", 1.0, 0, &[load, load]),
                ("compute", 2.0, 0, &[read, read])
            ]
        )),
        FaultKind::Block {
            what: "row block 0 of column block 0 arrives twice for output pixel 0".into()
        }
    );
    let swapped = "load - [[1, 2], [0, 1], [2, 4]] - [0, 0] - None";
    assert_eq!(
        kind(&wl(
            &spec,
            &[("mov", 1.0, 0, &[swapped]), ("compute", 2.0, 0, &[read])]
        )),
        FaultKind::Window {
            what: "wordline 0 holds input (0, 1), which kernel position (0, 0) of no output pixel \
                   reads"
                .into()
        }
    );
    let bad_block = wordline_one(json!([[[[3], [-1]]]]), json!([1, 1]));
    assert_eq!(
        kind(&wl(
            &bad_block,
            &[("mov", 1.0, 0, &[load]), ("compute", 2.0, 0, &[read])]
        )),
        FaultKind::Block {
            what: "weight_reorder names block 3, which the 4x1 matrix in 1x1 blocks of 4 does not \
                   have"
                .into()
        }
    );
}

#[test]
fn wordline_read_outs() {
    let spec = Spec {
        nodes: vec![node(
            0,
            "fc",
            "Gemm",
            "Linear",
            json!({
            "ifmsize": [1, 2], "ofmsize": [1, 2], "xb_num": [1, 1], "dup": 1, "memoryaddr": [0, 10]}),
        )],
        inputs: vec![("x".into(), vec![1, 2], vec![0])],
        outputs: vec![("y".into(), 0, 10, vec![1, 2])],
        segments: vec![vec![0]],
        ..Spec::default()
    };
    let run = |cells: &[Cell<'_>]| {
        let c = compile(&spec, None, None, Some(cells));
        c.chip()
            .input("x", t(&[1, 2], &[1, 2]))
            .weights("fc", NodeWeights::matmul(t(&[2, 2], &[1, 0, 0, 1])))
            .build()
            .unwrap()
            .run(Level::Wordline)
    };
    let good = run(&[
        ("mov", 1.0, 0, &["load - 0 - [0, 0] - 2"]),
        ("compute", 2.0, 0, &["CIM.read_wl- [0, 4] - [0, 0]"]),
        ("mov", 3.0, 0, &["load - [0] - 10 - 2"]),
    ]);
    assert_eq!(outputs(&good), vec![vec![1, 2]]);
    assert_eq!(
        fault(&run(&[("mov", 3.0, 0, &["load - [0] - 10 - 2"])])),
        "wordline line 1 `load - [0] - 10 - 2` (node 0 `fc`): reads the results of crossbar 0, \
         which computed none"
    );
    assert_eq!(
        kind(&run(&[("mov", 3.0, 0, &["load - [0] - 10 - -2"])])),
        FaultKind::Negative {
            what: "length",
            value: -2
        }
    );
    assert_eq!(
        kind(&run(&[
            ("mov", 1.0, 0, &["load - 0 - [0, 0] - 2"]),
            ("compute", 2.0, 0, &["CIM.read_wl- [0, 4] - [0, 0]"]),
            ("mov", 3.0, 0, &["Add-[0, 1]-10-2"]),
        ])),
        FaultKind::OutputNotComputed { xb: 1 }
    );
    assert_eq!(
        kind(&run(&[
            ("mov", 1.0, 0, &["load - 0 - [0, 0] - 2"]),
            ("compute", 2.0, 0, &["CIM.read_wl- [0, 1] - [0, 0]"])
        ])),
        FaultKind::LoadLength {
            loaded: 2,
            expected: 1
        }
    );
}

#[test]
fn what_the_machine_does_not_model_is_no_fault() {
    let run = core("Softmax - [1, 2] - 0 - 4\n", &[1, 2]);
    let RunOutcome::Unsupported { line, op, reason } = &run else {
        panic!("{run}")
    };
    assert_eq!((*line, op.as_str()), (1, "Softmax"));
    assert_eq!(
        reason,
        "`Softmax` is not a meta-operator this machine models"
    );
    assert_eq!(
        core("Sigmoid - 2 - 0 -4\n", &[1, 2]).to_string(),
        "line 1: `Sigmoid` is not modelled: `Sigmoid` does not map integers to integers"
    );
    assert_eq!(
        core("Add - 0 - 0 - 2 - 1 - 4\n", &[1, 2]).to_string(),
        "line 1: `Add` is not modelled: operands of 2 and 1 elements, and no shapes of the \
         node's that say how one broadcasts to the other"
    );
    assert_eq!(run.kind(), "unsupported");
}

#[test]
fn the_work_budget_bounds_a_run() {
    let c = compile(
        &plain(vec![relu_node()], &[1, 2]),
        Some("Mov - 0 - 2 - 2\nMov - 0 - 4 - 2\n"),
        None,
        None,
    );
    let chip = c
        .chip()
        .input("x", t(&[2], &[1, 2]))
        .options(MachineOptions {
            work_budget: 3,
            ..MachineOptions::default()
        })
        .build()
        .unwrap();
    let run = chip.run(Level::Core);
    assert_eq!(run.to_string(), "line 2: the work budget (3) runs out");
    assert_eq!(run.kind(), "out-of-budget");
}

#[test]
fn lenient_ranges_let_an_extra_empty_crossbar_through() {
    let one = conv_spec(vec![conv_node(0, "conv0", 0, 1, json!({}))]);
    let cells: Vec<Cell<'_>> = vec![
        ("mov", 1.0, 0, &["load - [[0, 2], [2, 4]] - [0, 1] - 0"]),
        ("compute", 2.0, 0, &["CIM.read_xb - [0, 1]"]),
    ];
    let c = compile(&one, None, Some(&cells), None);
    let chip = c
        .chip()
        .input("x", t(&[1, 1, 2, 2], &[1, 2, 3, 4]))
        .weights("conv0", conv_w(&[1, 1, 2, 2], &[1, 1, 1, 1]))
        .options(MachineOptions {
            exact_crossbar_ranges: false,
            ..MachineOptions::default()
        })
        .build()
        .unwrap();
    assert_eq!(outputs(&chip.run(Level::Crossbar)), vec![vec![10]]);
}
