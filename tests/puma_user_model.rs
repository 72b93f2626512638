//! `pimdiff puma MODEL.cpp`: the compiler's dump read and checked (`graph`), the reference of a
//! dumped graph computed exactly (`user_check`), and, with `PUMA_DIR` naming a tree of
//! `scripts/build-puma.sh`, whole programs: one that agrees, one the compiler miscompiles,
//! one it aborts on, one with nothing to compare, one that does not build, one that crashes in
//! its own code, and the dump against what the program built.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pimdiff::targets::puma::api::{describe, Call};
use pimdiff::targets::puma::check::{CheckOptions, Verdict};
use pimdiff::targets::puma::graph::{ModelGraph, OpKind};
use pimdiff::targets::puma::network::{Matrix, Op, Output};
use pimdiff::targets::puma::reference::NumericRange;
use pimdiff::targets::puma::user_check::{data_and_reference, reference, CheckError, GraphData};
use pimdiff::targets::puma::user_model::{check_model_cpp, UserError, UserOptions, UserVerdict};

/// A dump of `in` (130 elements, two pieces) → `m` (3 × 130, two column tiles) → the two
/// products added → OPS → `out`; `last` names the operation `out` reads (`add` or an ALU
/// operation in OPS, which read `add`).
fn dense_dump(ops: &str, last: u64) -> String {
    format!(
        r#"{{"format": "pimdiff-puma-graph", "version": 1, "operations": [
        {{"id": 1, "length": 128, "op": "input", "piece": 101, "operands": []}},
        {{"id": 2, "length": 2, "op": "input", "piece": 102, "operands": []}},
        {{"id": 3, "length": 3, "op": "mvm", "operands": [1]}},
        {{"id": 4, "length": 3, "op": "mvm", "operands": [2]}},
        {{"id": 5, "length": 3, "op": "alu", "alu": "add", "operands": [4, 3]}},
        {ops}
        {{"id": 9, "length": 3, "op": "output", "piece": 201, "operands": [{last}]}}],
      "matrix_tiles": [{{"id": 301, "users": [3]}}, {{"id": 302, "users": [4]}}],
      "model_id": 77, "model": "dense", "tiles": 3, "cores_per_tile": 8, "mvmus_per_core": 2, "mvmu_dim": 128,
      "inputs": [{{"id": 11, "name": "in", "kind": "vector", "length": 130, "pieces": [
        {{"id": 101, "first": 0, "length": 128, "tile": 0, "address": 0, "counter": 1}},
        {{"id": 102, "first": 128, "length": 2, "tile": 0, "address": 128, "counter": 1}}]}}],
      "outputs": [{{"id": 12, "name": "out", "kind": "vector", "length": 3, "pieces": [
        {{"id": 201, "first": 0, "length": 3, "places": [{{"tile": 1, "address": 0, "counter": 1}}]}}]}}],
      "matrices": [{{"id": 13, "name": "m", "kind": "dense", "width": 130, "height": 3, "tiles": [
        {{"id": 301, "height": 3, "width": 128, "tile": 2, "core": 0, "mvmu": 0, "row": 0, "column": 0}},
        {{"id": 302, "height": 3, "width": 2, "tile": 2, "core": 0, "mvmu": 1, "row": 0, "column": 128}}]}}]}}"#
    )
}

/// `in[c]` = `c % 3 − 1`; `m` zero but for `m[0][0]`, `m[1][1]`, `m[2][2]` and `m[2][128]`
/// (one in each column tile), all 1: `m · in` = [−1, 0, 1 + 1].
fn dense_data() -> GraphData {
    let mut weights = vec![0i8; 3 * 130];
    for (r, c) in [(0, 0), (1, 1), (2, 2), (2, 128)] {
        weights[r * 130 + c] = 1;
    }
    GraphData {
        inputs: vec![(0..130).map(|i| i % 3 - 1).collect()],
        weights: vec![weights],
    }
}

/// `m · in`, computed here directly.
fn dense_product() -> Vec<i64> {
    let d = dense_data();
    (0..3)
        .map(|r| {
            (0..130)
                .map(|c| i64::from(d.weights[0][r * 130 + c]) * d.inputs[0][c])
                .sum()
        })
        .collect()
}

fn output_of(dump: &str, data: &GraphData) -> Vec<Option<i64>> {
    let g = ModelGraph::from_json(dump).expect("a valid dump");
    let e = reference(&g, data, NumericRange::PUMA_WORD).expect("modelled");
    let out = g
        .ops
        .iter()
        .position(|o| matches!(o.kind, OpKind::Output { .. }))
        .unwrap();
    let v = &e.values[out];
    v.value
        .iter()
        .zip(&v.known)
        .map(|(&x, &k)| k.then_some(x))
        .collect()
}

#[test]
fn a_dumped_dense_layer_is_the_matrix_times_the_vector_across_tiles() {
    let want = dense_product();
    assert_eq!(want, vec![-1, 0, 2]);
    let got = output_of(&dense_dump("", 5), &dense_data());
    assert_eq!(got, want.iter().map(|&v| Some(v)).collect::<Vec<_>>());
}

#[test]
fn alu_operations_follow_the_simulators_alu_in_integers() {
    let with = |op: &str, operands: &str, imm: &str| {
        let ops = format!(
            r#"{{"id": 6, "length": 3, "op": "alu", "alu": "{op}"{imm}, "operands": [{operands}]}},"#
        );
        output_of(&dense_dump(&ops, 6), &dense_data())
    };
    // m · in = [-1, 0, 2]; the first tile's product alone (operation 3) is [-1, 0, 1].
    assert_eq!(with("relu", "5", ""), vec![Some(0), Some(0), Some(2)]);
    assert_eq!(with("sub", "5, 3", ""), vec![Some(0), Some(0), Some(1)]);
    assert_eq!(with("mul", "5, 5", ""), vec![Some(1), Some(0), Some(4)]);
    assert_eq!(with("max", "3, 5", ""), vec![Some(-1), Some(0), Some(2)]);
    assert_eq!(
        with("muli", "5", r#", "imm": -3"#),
        vec![Some(3), Some(0), Some(-6)]
    );
    // sig and tanh round to integers; sig(0) = 1/2 is a tie, rounded away from zero.
    assert_eq!(with("sig", "5", ""), vec![Some(0), Some(1), Some(1)]);
    assert_eq!(with("tanh", "5", ""), vec![Some(-1), Some(0), Some(1)]);
    // A fractional immediate has no exact integer product: unknown.
    assert_eq!(with("muli", "5", r#", "imm": 0.5"#), vec![None; 3]);
}

#[test]
fn operations_the_reference_does_not_model_leave_no_verdict() {
    let data = dense_data();
    let refused = |ops: &str| {
        let g = ModelGraph::from_json(&dense_dump(ops, 6)).expect("a valid dump");
        reference(&g, &data, NumericRange::PUMA_WORD).expect_err("not modelled")
    };
    assert_eq!(
        refused(r#"{"id": 6, "length": 3, "op": "alu", "alu": "min", "operands": [5, 3]},"#),
        CheckError::Unmodelled(
            "ALU operation `min` (operation 6): the PUMA simulator's ALU has no such operation \
             (simulator src/ima_modules.py:388-389), so its result has no meaning to check"
                .into()
        )
    );
    assert_eq!(
        refused(
            r#"{"id": 6, "length": 3, "op": "other", "type": "23TrainingMatrixOperation", "operands": [5]},"#
        ),
        CheckError::Unmodelled(
            "operation 6 of type `23TrainingMatrixOperation` is not modelled".into()
        )
    );
}

#[test]
fn seeded_data_is_deterministic_in_range_and_fills_every_matrix() {
    let g = ModelGraph::from_json(&dense_dump("", 5)).unwrap();
    let (a, ea) = data_and_reference(&g, 7, NumericRange::PUMA_WORD).unwrap();
    let (b, eb) = data_and_reference(&g, 7, NumericRange::PUMA_WORD).unwrap();
    let (c, _) = data_and_reference(&g, 8, NumericRange::PUMA_WORD).unwrap();
    assert_eq!((&a, &ea), (&b, &eb));
    assert_ne!(a, c);
    assert!(a.inputs[0].iter().all(|v| (-3..=3).contains(v)));
    assert!(a.weights[0].iter().all(|v| (-2..=2).contains(v)));
    assert!(a.weights[0].iter().any(|&v| v != 0));
    assert!(ea.peak <= 32767);
    assert_eq!(ea, reference(&g, &a, NumericRange::PUMA_WORD).unwrap());
}

/// A conv dump: a 1 × 2 image of 1 channel, a 2-wide kernel of 1 → 1 channels as two tiles
/// (kernel columns 0 and 1), one output pixel = w[0][0]·x[0] + w[0][1]·x[1]: the size of no
/// padding.
const CONV_DUMP: &str = r#"{"format": "pimdiff-puma-graph", "version": 1, "operations": [
        {"id": 1, "length": 1, "op": "input", "piece": 101, "operands": []},
        {"id": 2, "length": 1, "op": "input", "piece": 102, "operands": []},
        {"id": 3, "length": 1, "op": "mvm", "operands": [1]},
        {"id": 4, "length": 1, "op": "mvm", "operands": [2]},
        {"id": 5, "length": 1, "op": "alu", "alu": "add", "operands": [4, 3]},
        {"id": 9, "length": 1, "op": "output", "piece": 201, "operands": [5]}],
      "matrix_tiles": [{"id": 301, "users": [3]}, {"id": 302, "users": [4]}],
      "model_id": 77, "model": "conv", "tiles": 3, "cores_per_tile": 8, "mvmus_per_core": 2, "mvmu_dim": 128,
      "inputs": [{"id": 11, "name": "img", "kind": "image", "width": 2, "height": 1, "channels": 1,
        "stride": 1, "rows": 1, "columns": 2, "pieces": [
        {"id": 101, "first": 0, "length": 1, "tile": 0, "address": 0, "counter": 1},
        {"id": 102, "first": 1, "length": 1, "tile": 0, "address": 1, "counter": 1}]}],
      "outputs": [{"id": 12, "name": "out", "kind": "image", "width": 1, "height": 1, "channels": 1,
        "stride": 1, "rows": 1, "columns": 1, "pieces": [
        {"id": 201, "first": 0, "length": 1, "places": [{"tile": 1, "address": 0, "counter": 1}]}]}],
      "matrices": [{"id": 13, "name": "k", "kind": "conv", "kernel_width": 2, "kernel_height": 1,
        "in_channels": 1, "out_channels": 1, "stride": 1, "out_width": 1, "out_height": 1, "tiles": [
        {"id": 301, "height": 1, "width": 1, "tile": 2, "core": 0, "mvmu": 0, "row": 0, "column": 0, "kernel_row": 0, "kernel_column": 0},
        {"id": 302, "height": 1, "width": 1, "tile": 2, "core": 0, "mvmu": 1, "row": 0, "column": 0, "kernel_row": 0, "kernel_column": 1}]}]}"#;

#[test]
fn a_conv_tile_takes_the_weights_of_its_kernel_position() {
    let dump = CONV_DUMP;
    let data = GraphData {
        inputs: vec![vec![3, 5]],
        weights: vec![vec![2, -1]],
    };
    assert_eq!(output_of(dump, &data), vec![Some(2 * 3 - 5)]);
}

/// A logged call of model 77.
fn call(op: &str, out: u64, a: u64, b: u64, tensor: u64, h: u32) -> Call {
    Call {
        op: op.into(),
        model: 77,
        out,
        a,
        b,
        tensor,
        imm: 0.0,
        h,
        w: 0,
    }
}

#[test]
fn the_api_calls_of_a_model_are_rebuilt_as_a_description() {
    let g = ModelGraph::from_json(&dense_dump("", 5)).unwrap();
    let mut calls = vec![
        call("input", 21, 0, 0, 11, 0),
        call("mvm", 22, 21, 0, 13, 0),
        // ALUVectorOperation::RELU is opcode 21.
        call("alu", 23, 22, 0, 0, 21),
        call("assign", 0, 23, 0, 12, 0),
    ];
    // A call of another model is not this one's.
    calls.insert(
        1,
        Call {
            model: 78,
            ..call("input", 99, 0, 0, 11, 0)
        },
    );
    let d = describe(&calls, &g).expect("described");
    assert_eq!(
        d.network.values,
        vec![
            Op::Input { input: 0 },
            Op::Mvm { matrix: 0, x: 0 },
            Op::Relu { x: 1 }
        ]
    );
    assert_eq!(
        d.network.outputs,
        vec![Output::Vector {
            name: "o0".into(),
            length: 3,
            value: 2
        }]
    );
    assert_eq!(d.outputs, vec![0]);
    let refused = |c: Vec<Call>| describe(&c, &g).expect_err("refused");
    // MIN is opcode 14.
    assert_eq!(
        refused(vec![
            call("input", 21, 0, 0, 11, 0),
            call("alu", 23, 21, 21, 0, 14)
        ]),
        "ALU operation `min` (the description has none)"
    );
    assert_eq!(
        refused(vec![call("mvm", 22, 21, 0, 13, 0)]),
        "a `mvm` call reads a value no logged call made"
    );
    let twice = vec![
        call("input", 21, 0, 0, 11, 0),
        call("mvm", 22, 21, 0, 13, 0),
        call("assign", 0, 22, 0, 12, 0),
        call("assign", 0, 22, 0, 12, 0),
    ];
    assert_eq!(refused(twice), "output `out` is assigned twice");
}

/// A convolution's declared size gives the description the padding it implies.
#[test]
fn the_padding_a_declared_size_implies_is_the_descriptions() {
    let g = ModelGraph::from_json(CONV_DUMP).unwrap();
    let calls = vec![
        call("input", 21, 0, 0, 11, 0),
        call("conv", 22, 21, 0, 13, 0),
        call("assign", 0, 22, 0, 12, 0),
    ];
    let d = describe(&calls, &g).expect("described");
    assert!(matches!(
        d.network.matrices[0],
        Matrix::Conv {
            kernel_width: 2,
            out_width: 1,
            padding_width: Some(0),
            padding_height: None,
            ..
        }
    ));
}

// ---- whole programs: these need a tree (PUMA_DIR) ----

fn tree() -> Option<PathBuf> {
    let dir = std::env::var_os("PUMA_DIR").map(PathBuf::from);
    match dir.filter(|d| d.join("bin/puma-driver").is_file()) {
        Some(d) if patched(&d) => Some(d),
        _ => {
            eprintln!(
                "skipped: PUMA_DIR does not name a tree of scripts/build-puma.sh with the \
                 model-graph patch"
            );
            None
        }
    }
}

fn patched(tree: &Path) -> bool {
    std::fs::read_to_string(tree.join("patches.txt"))
        .is_ok_and(|p| p.lines().any(|l| l == "0002-model-graph.patch"))
}

macro_rules! tree_or_skip {
    () => {
        match tree() {
            Some(t) => t,
            None => return,
        }
    };
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/puma-models/{name}"))
}

fn options(tree: &Path, model: &str) -> UserOptions {
    UserOptions {
        model_cpp: fixture(model),
        args: Vec::new(),
        tree: tree.to_path_buf(),
        seed: 1,
        timeout: Duration::from_secs(120),
        max_rss_bytes: 4 << 30,
        check: CheckOptions::default(),
        write_weights: false,
    }
}

#[test]
fn a_network_the_compiler_gets_right_agrees_element_for_element() {
    let tree = tree_or_skip!();
    let r = check_model_cpp(&options(&tree, "mlp.cpp")).expect("checked");
    assert_eq!(r.verdict, UserVerdict::Agree, "{}", r.reason);
    assert_eq!(r.models.len(), 1);
    let m = &r.models[0];
    assert_eq!(m.model, "mlp");
    // in (130) → relu (200, an output) → tanh (5): the dump's operations are 2 input pieces,
    // 2·2 + 1·2 MVMs (128-element tiles), one accumulating add per row tile (2 + 1), 2 relu,
    // 1 tanh, and 3 output pieces (200 = 128 + 72, and 5).
    let count = |k: &str| {
        m.operations
            .iter()
            .find(|(n, _)| n == k)
            .map_or(0, |(_, c)| *c)
    };
    assert_eq!(count("input"), 2);
    assert_eq!(count("mvm"), 6);
    assert_eq!(count("alu add"), 3);
    assert_eq!(count("alu relu"), 2);
    assert_eq!(count("alu tanh"), 1);
    assert_eq!(count("output"), 3);
    assert_eq!((m.input_elements, m.output_elements), (130, 205));
    let checked = m.outcome.as_ref().and_then(|o| o.checked.as_ref()).unwrap();
    assert!(
        matches!(
            checked.verdict,
            Verdict::Pass {
                compared: 205,
                unknown: 0
            }
        ),
        "{:?}",
        checked.verdict
    );
    // Against what the calls ask, tanh's results are unknown (a hunt's semantics).
    let api = m.api.as_ref().expect("the API check was made");
    assert_eq!((api.compared, api.unknown), (200, 5));
}

/// The compiler builds a convolution's graph with its own padding, whatever size the calls
/// declare: the programs compute the graph, and differ from what the calls ask.
#[test]
fn a_graph_built_against_the_calls_is_a_mismatch_of_the_api_check() {
    let tree = tree_or_skip!();
    let r = check_model_cpp(&options(&tree, "padding.cpp")).expect("checked");
    assert_eq!(r.verdict, UserVerdict::Finding, "{}", r.reason);
    let m = &r.models[0];
    let api = m.api.as_ref().expect("the API check was made");
    assert_eq!((api.compared, api.unknown), (4, 0));
    let o = m.outcome.as_ref().unwrap();
    assert_eq!(
        o.signature.as_ref().map(|s| s.to_string()).as_deref(),
        Some("mismatch: conv")
    );
    let Some(Verdict::Mismatch(x)) = o.checked.as_ref().map(|c| &c.verdict) else {
        panic!("{:?}", o.checked);
    };
    assert_eq!((x.output.as_str(), x.wrong, x.known), ("out", 4, 4));
    assert!(
        m.detail.ends_with(
            "(against what the API calls ask; the programs compute the compiler's own graph)"
        ),
        "{}",
        m.detail
    );
}

#[test]
fn programs_that_run_past_the_tile_memory_are_a_fault_finding() {
    let tree = tree_or_skip!();
    let r = check_model_cpp(&options(&tree, "overflow.cpp")).expect("checked");
    assert_eq!(r.verdict, UserVerdict::Finding, "{}", r.reason);
    let o = r.models[0].outcome.as_ref().unwrap();
    assert_eq!(
        o.signature.as_ref().map(|s| s.to_string()).as_deref(),
        Some("fault: TileMemoryRange")
    );
    assert!(
        o.detail
            .starts_with("tile 1 pc 256: receive(mem_addr=32768, vtile_id=18, receive_width=16"),
        "{}",
        o.detail
    );
}

/// A convolution's programs with two loads' addresses exchanged (the hunt's own injection):
/// the check of the same dump and data is a mismatch, traced to the changed load.
#[test]
fn a_miscompilation_of_a_program_is_a_mismatch_traced_to_its_load() {
    use pimdiff::targets::puma::inject::{Injected, Injection};
    use pimdiff::targets::puma::user_check::check_graph;
    let tree = tree_or_skip!();
    let opts = options(&tree, "conv.cpp");
    let r = check_model_cpp(&opts).expect("checked");
    assert_eq!(r.verdict, UserVerdict::Agree, "{}", r.reason);
    let checked = r.models[0]
        .outcome
        .as_ref()
        .and_then(|o| o.checked.as_ref());
    assert!(matches!(
        checked.map(|c| &c.verdict),
        Some(Verdict::Pass {
            compared: 27,
            unknown: 0
        })
    ));
    let dir = r.dir.as_ref().expect("the run's directory").path();
    let graph = ModelGraph::read(&dir.join("conv-graph.json")).expect("the dump");
    let (data, eval) = data_and_reference(&graph, opts.seed, NumericRange::PUMA_WORD).unwrap();
    let Some(Injected::LoadAddress { file, loads }) =
        Injection::LoadAddress.apply(dir, "conv").expect("injected")
    else {
        panic!("no pair of loads to exchange");
    };
    let (checked, _) = check_graph(dir, &graph, &data, &eval, None, opts.check);
    let Verdict::Mismatch(m) = &checked.verdict else {
        panic!("{:?}", checked.verdict);
    };
    let slice = m.slice.as_ref().expect("localized");
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    assert!(
        slice.steps.iter().any(|s| s.text.starts_with("load")
            && loads.contains(&s.pc)
            && name == format!("conv-tile{}-core{}.puma", s.tile, s.core)),
        "{slice:?} / {name} {loads:?}"
    );
}

#[test]
fn an_assertion_of_the_compiler_is_a_finding() {
    let tree = tree_or_skip!();
    let r = check_model_cpp(&options(&tree, "unplaceable.cpp")).expect("ran");
    assert_eq!(r.verdict, UserVerdict::Finding);
    let c = r.compile.as_ref().expect("the compile failed");
    assert_eq!(
        c.signature.as_ref().map(|s| s.to_string()).as_deref(),
        Some("abort: partitioner.cpp Partitioner::getVMVMU: isVMVMUAssigned(op) && \"Virtual MVMU not assigned!\"")
    );
}

#[test]
fn a_network_without_outputs_has_no_verdict() {
    let tree = tree_or_skip!();
    let r = check_model_cpp(&options(&tree, "no-output.cpp")).expect("ran");
    assert_eq!(r.verdict, UserVerdict::NoVerdict);
    assert!(r.reason.contains("no outputs to compare"), "{}", r.reason);
}

#[test]
fn a_program_that_does_not_build_or_fails_on_its_own_is_bad_input() {
    let tree = tree_or_skip!();
    match check_model_cpp(&options(&tree, "does-not-build.cpp")) {
        Err(UserError::Build { message, .. }) => {
            assert!(message.contains("does-not-build.cpp:12"), "{message}");
            assert!(message.contains("error:"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    match check_model_cpp(&options(&tree, "crashes.cpp")) {
        Err(UserError::Program { what, .. }) => {
            assert!(
                what.starts_with("failed outside the compiler: killed by SIGSEGV"),
                "{what}"
            );
            assert!(what.contains("main (crashes.cpp:"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    let mut exits = options(&tree, "crashes.cpp");
    exits.args = vec!["exit".into()];
    match check_model_cpp(&exits) {
        Err(UserError::Program { what, .. }) => {
            assert_eq!(
                what,
                "exited with status 3 (the compiler has no exit path of its own): usage: crashes"
            );
        }
        other => panic!("{other:?}"),
    }
}
