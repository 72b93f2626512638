//! Malformed flows, layouts and set-ups: each a typed error naming the file, line or field,
//! never a panic.

mod common;

use std::path::Path;

use common::*;
use pimdiff_cim_mlc::machine::SetupError;
use pimdiff_cim_mlc::{Flows, Layout, LoadErrorKind, NodeWeights};
use serde_json::json;

fn flow_error(file: &str, bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(file), bytes).unwrap();
    let e = Flows::load(dir.path()).unwrap_err();
    let shown = e.to_string();
    let prefix = format!("{}/", dir.path().display());
    shown.strip_prefix(&prefix).unwrap_or(&shown).to_string()
}

#[test]
fn flow_files_are_read_bounded_and_strictly() {
    let core = "corewise_codegen_output.txt";
    let xb = "crossbarwise_codegen_output.txt";
    assert_eq!(
        flow_error(core, b"Mov - 1 - [2, 3\n"),
        "corewise_codegen_output.txt:1: column 15: expected `,` or `]` in a list"
    );
    assert_eq!(
        flow_error(core, b"Relu - 1 - 2 -3\nMov - 1 - 2\n"),
        "corewise_codegen_output.txt:2: `Mov` takes 3 operands, found 2"
    );
    assert_eq!(
        flow_error(core, b"CIM.read_core-fc - [1, 2] - 0 - 0 - 4\n"),
        "corewise_codegen_output.txt:1: `CIM.read_core-fc` operand 2 (cores): expected a pair \
         [a, b], found 0"
    );
    assert_eq!(
        flow_error(core, b"Mov - 1 - 2 - 3\n\xff\n"),
        "corewise_codegen_output.txt: not UTF-8 text (invalid byte at offset 16)"
    );
    assert_eq!(
        flow_error(xb, b"flow{\n\t\t Mov - 1 - 2 - 3\n"),
        "crossbarwise_codegen_output.txt:1: `flow{` is never closed"
    );
    assert_eq!(
        flow_error(xb, b"}\n"),
        "crossbarwise_codegen_output.txt:1: `}` closes no block"
    );
    assert_eq!(
        flow_error(xb, b"\tparallel{\n\tparallel{\n"),
        "crossbarwise_codegen_output.txt:2: `parallel{` inside another `parallel{`"
    );
    let dir = tempfile::tempdir().unwrap();
    let e = Flows::load(dir.path()).unwrap_err();
    assert!(matches!(e.kind, LoadErrorKind::NoFlow), "{e}");
    std::fs::create_dir(dir.path().join(core)).unwrap();
    let e = Flows::load(dir.path()).unwrap_err();
    assert_eq!(e.kind.to_string(), "not a regular file");
}

#[test]
fn an_oversized_flow_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let f = std::fs::File::create(dir.path().join("rcwise_codegen_output.txt")).unwrap();
    f.set_len(pimdiff_cim_mlc::flow::MAX_FLOW_BYTES.bytes + 1)
        .unwrap(); // sparse
    let e = Flows::load(dir.path()).unwrap_err();
    assert_eq!(
        e.kind.to_string(),
        "268435457 bytes, above the limit of 268435456 bytes (MAX_CIM_MLC_FLOW_BYTES)"
    );
}

fn layout_error(value: &serde_json::Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("layout.json");
    std::fs::write(&path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    Layout::load(&path).unwrap_err().kind.to_string()
}

#[test]
fn layout_fields_are_checked() {
    let good = Spec::default().layout(None, None);
    let with = |pointer: &str, v: serde_json::Value| {
        let mut l = good.clone();
        *l.pointer_mut(pointer).unwrap() = v;
        layout_error(&l)
    };
    assert_eq!(
        with("/format", json!("something-else")),
        "format: `something-else` version 1, expected `pimdiff-cim-mlc-layout` version 1"
    );
    assert_eq!(
        with("/arch/chip/GBBuf", json!([0, 16])),
        "arch.chip.GBBuf[0]: expected a positive integer"
    );
    assert_eq!(
        with("/arch/chip/GBBuf", json!([1u64 << 31, 16])),
        "arch.chip.GBBuf[0]: 2147483648 elements, more than the machine models (16777216)"
    );
    assert_eq!(
        with("/arch/chip/cores", json!([])),
        "arch.chip.cores: no cores"
    );
    assert_eq!(
        with("/segments", json!({"FlowSeg": [[3]]})),
        "segments.FlowSeg[0]: node 3 does not exist (0 nodes)"
    );
    assert!(with("/nodes", json!("no"))
        .starts_with("invalid type: string \"no\", expected a sequence at line"));
    let dir = tempfile::tempdir().unwrap();
    let e = Layout::load(&dir.path().join("layout.json")).unwrap_err();
    assert!(matches!(e.kind, LoadErrorKind::Input(_)), "{e}");
    let path = dir.path().join("layout.json");
    std::fs::write(&path, "{\n  \"format\": \n").unwrap();
    let e = Layout::load(&path).unwrap_err();
    assert_eq!(
        (e.line, e.kind.to_string()),
        (
            Some(3),
            "EOF while parsing a value at line 3 column 0".into()
        )
    );
}

fn conv_spec() -> Spec {
    Spec {
        nodes: vec![node(
            0,
            "conv0",
            "Conv",
            "Conv",
            json!({
            "corestart": 0, "core_num": 1, "dup": 1, "ifmsize": [1, 1, 2, 2], "ofmsize": [1, 1, 1, 1],
            "memoryaddr": [0, 100], "xb_num": [1, 1]}),
        )],
        inputs: vec![("x".into(), vec![1, 1, 2, 2], vec![0])],
        outputs: vec![("y".into(), 0, 100, vec![1, 1, 1, 1])],
        initializers: vec![("k".into(), vec![2], Some(50))],
        segments: vec![vec![0]],
        ..Spec::default()
    }
}

#[test]
fn set_up_errors_name_what_is_missing_or_wrong() {
    let c = compile(&conv_spec(), Some("Relu - 1 - 0 -9\n"), None, None);
    let x = t(&[1, 1, 2, 2], &[1, 2, 3, 4]);
    let w = || conv_w(&[1, 1, 2, 2], &[1, 1, 1, 1]);
    let k = t(&[2], &[5, 6]);
    let err = |b: pimdiff_cim_mlc::ChipBuilder<'_>| b.build().err().expect("refused").to_string();
    assert_eq!(
        err(c.chip().weights("conv0", w()).initializer("k", k.clone())),
        "no input `x` was given (layout.json's graph inputs: [\"x\"])"
    );
    assert_eq!(
        err(c.chip().input("x", t(&[1, 4], &[1, 2, 3, 4]))),
        "input `x`: shape [1, 4], but the graph declares [Some(1), Some(1), Some(2), Some(2)]"
    );
    assert_eq!(
        err(c.chip().input("z", x.clone())),
        "`z` is not a graph input of layout.json"
    );
    assert_eq!(
        err(c.chip().input("x", x.clone()).initializer("k", k.clone())),
        "no weights were given for node `conv0`"
    );
    assert_eq!(
        err(c
            .chip()
            .input("x", x.clone())
            .initializer("k", k.clone())
            .weights("nope", w())),
        "`nope` is not a node of layout.json"
    );
    assert_eq!(
        err(c
            .chip()
            .input("x", x.clone())
            .initializer("k", k.clone())
            .weights("conv0", NodeWeights::matmul(t(&[4, 1], &[1, 1, 1, 1])))),
        "weights of node `conv0`: weights of the wrong kind for a `Conv` node"
    );
    assert_eq!(
        err(c
            .chip()
            .input("x", x.clone())
            .initializer("k", k.clone())
            .weights("conv0", conv_w(&[2, 1, 2, 2], &[1; 8]))),
        "weights of node `conv0`: 2 output channels, the node's ofmsize has 1"
    );
    assert_eq!(
        err(c.chip().input("x", x.clone()).weights("conv0", w())),
        "initializer `k` has a buffer address but no value was given"
    );
    assert_eq!(
        err(c
            .chip()
            .input("x", x.clone())
            .weights("conv0", w())
            .initializer("k", t(&[3], &[1, 2, 3]))),
        "initializer `k` at 50: shape [3], the graph declares [2]"
    );
    assert!(c
        .chip()
        .input("x", x)
        .weights("conv0", w())
        .initializer("k", k)
        .build()
        .is_ok());
}

#[test]
fn an_input_outside_the_buffer_is_refused() {
    let mut spec = conv_spec();
    spec.inputs[0].2 = vec![1022];
    spec.initializers.clear();
    let c = compile(&spec, Some("Relu - 1 - 0 -9\n"), None, None);
    let e = c
        .chip()
        .input("x", t(&[1, 1, 2, 2], &[1, 2, 3, 4]))
        .weights("conv0", conv_w(&[1, 1, 2, 2], &[1, 1, 1, 1]))
        .build()
        .err()
        .unwrap();
    assert_eq!(
        e,
        SetupError::Placement {
            what: "a host value",
            name: String::new(),
            addr: 1022,
            problem: "4 elements do not fit the buffer of 1024".into()
        }
    );
}

fn lower_setup(dir: &Path, spec: &Spec, text: &str, cells: Option<&[Cell<'_>]>) -> SetupError {
    write(dir, spec, None, cells, None);
    std::fs::write(dir.join("crossbarwise_codegen_output.txt"), text).unwrap();
    let flows = Flows::load(dir).unwrap();
    let layout = Layout::load(&dir.join("layout.json")).unwrap();
    pimdiff_cim_mlc::Chip::builder(&layout, &flows)
        .input("x", t(&[1, 1, 2, 2], &[1, 2, 3, 4]))
        .weights("conv0", conv_w(&[1, 1, 2, 2], &[1, 1, 1, 1]))
        .initializer("k", t(&[2], &[5, 6]))
        .build()
        .err()
        .expect("refused")
}

#[test]
fn a_lower_flow_must_print_back_from_its_schedule() {
    let spec = conv_spec();
    let dir = tempfile::tempdir().unwrap();
    let cells: Vec<Cell<'_>> = vec![("compute", 2.0, 0, &["CIM.read_xb - [0, 0]"])];
    assert_eq!(
        lower_setup(
            dir.path(),
            &spec,
            "\t\t CIM.read_xb - [0, 1]\n",
            Some(&cells)
        )
        .to_string(),
        "the crossbar-level flow is not what layout.json's schedule prints: line 1 is \
         `\t\t CIM.read_xb - [0, 1]`, the schedule prints `\t\t CIM.read_xb - [0, 0]`"
    );
    assert_eq!(
        lower_setup(dir.path(), &spec, "", Some(&cells)).to_string(),
        "the crossbar-level flow is not what layout.json's schedule prints: line 1 is `(the end \
         of the file)`, the schedule prints `\t\t CIM.read_xb - [0, 0]`"
    );
    assert_eq!(
        lower_setup(dir.path(), &spec, "\t\t CIM.read_xb - [0, 0]\n", None),
        SetupError::NoSchedule(pimdiff_cim_mlc::Level::Crossbar)
    );
    let odd: Vec<Cell<'_>> = vec![("compute", 2.5, 0, &["CIM.read_xb - [0, 0]"])];
    let e = {
        write(dir.path(), &spec, None, None, None);
        let mut l: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("layout.json")).unwrap())
                .unwrap();
        l["crossbarwise"] = json!({"categories": {"compute": [{"cycle": odd[0].1, "node": 0, "insts": ["CIM.read_xb - [0, 0]"]}]}});
        std::fs::write(
            dir.path().join("layout.json"),
            serde_json::to_vec(&l).unwrap(),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("crossbarwise_codegen_output.txt"),
            "\t\t CIM.read_xb - [0, 0]\n",
        )
        .unwrap();
        let flows = Flows::load(dir.path()).unwrap();
        let layout = Layout::load(&dir.path().join("layout.json")).unwrap();
        pimdiff_cim_mlc::Chip::builder(&layout, &flows)
            .input("x", t(&[1, 1, 2, 2], &[1, 2, 3, 4]))
            .weights("conv0", conv_w(&[1, 1, 2, 2], &[1, 1, 1, 1]))
            .initializer("k", t(&[2], &[5, 6]))
            .build()
            .err()
            .unwrap()
    };
    assert_eq!(
        e.to_string(),
        "the crossbar-level schedule cannot be ordered as CIM-MLC prints it: cycle 2.5 is not an \
         integer"
    );
}
