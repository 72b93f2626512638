//! `pimdiff pimcomp`: a real PIMCOMP-NN bug stays found, a correct program is exact, wrong
//! references and a shifted gather are caught, bad inputs exit 2.
//!
//! The correct program is written here in PIMCOMP-NN's batch-mode style (one core, a 3×3
//! convolution of a 4×4×2 image, bias from global memory 0, ReLU, one `st` per pixel) with the
//! side table a compile of it would have. The real bug is squeezenet-batch's conv1_1 cut down
//! to core 0 (`scripts/reduce-pimcomp-fixture.py`).

#[path = "support/cli.rs"]
mod cli;

use std::path::{Path, PathBuf};

use pimdiff::targets::pimcomp_nn::check::{check, Control, Options, Status};
use pimdiff_isa::machine::Schedule;
use serde_json::{json, Value};

use cli::pimdiff;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pimcomp")
        .join(name)
}

fn off() -> Value {
    json!({"offset_select": 0, "offset_value": 0})
}

/// The program and its table (see the module docs).
fn small_conv() -> (Value, Value) {
    let mut prog = Vec::new();
    let mut table = Vec::new();
    let sldi =
        |p: &mut Vec<Value>, rd: u32, imm: i64| p.push(json!({"op": "sldi", "rd": rd, "imm": imm}));
    prog.push(json!({"op": "setbw", "ibiw": 8, "obiw": 8}));
    sldi(&mut prog, 0, 0);
    sldi(&mut prog, 1, 0);
    prog.push(json!({"op": "ld", "rd": 0, "rs1": 1, "size": 4, "offset": off()}));
    table.push(json!({"operation": "LD", "stage": "BIAS", "node_index": 1, "source_address": -1, "source_offset": 0, "destination_address": 0, "destination_offset": 0, "element_num": 4}));
    for p in 0..4i64 {
        let (oh, ow) = (p / 2, p % 2);
        for i in 0..3i64 {
            for j in 0..3i64 {
                let (dst, src) = (16 + (i * 3 + j) * 2, ((oh + i) * 4 + ow + j) * 2);
                sldi(&mut prog, 0, dst);
                sldi(&mut prog, 1, src);
                prog.push(json!({"op": "ld", "rd": 0, "rs1": 1, "size": 2, "offset": off()}));
                table.push(json!({"operation": "LD", "stage": "INPUT", "node_index": 1, "source_address": 0, "source_offset": src, "destination_address": dst, "destination_offset": 0, "element_num": 2}));
            }
        }
        sldi(&mut prog, 0, 64);
        sldi(&mut prog, 1, 16);
        prog.push(json!({"op": "mvmul", "rd": 0, "rs1": 1, "mbiw": 8, "relu": 0, "group": 1}));
        table.push(json!({"operation": "MVMUL", "stage": "MAIN", "node_index": 1, "source": 0, "source_address": 16, "source_offset": 0, "destination_address": 64, "destination_offset": 0, "input_element_num": 18, "output_element_num": 4, "input_cycle_index": p}));
        sldi(&mut prog, 0, 64);
        sldi(&mut prog, 1, 64);
        sldi(&mut prog, 2, 0);
        prog.push(json!({"op": "vvadd", "rd": 0, "rs1": 1, "rs2": 2, "len": 4, "offset": off()}));
        table.push(json!({"operation": "VVADD", "stage": "MAIN-B", "node_index": 1, "source_1_address": 64, "source_1_offset": 0, "source_2_address": 0, "source_2_offset": 0, "destination_address": 64, "destination_offset": 0, "element_num": 4}));
        sldi(&mut prog, 0, 64);
        sldi(&mut prog, 1, 64);
        prog.push(json!({"op": "vrelu", "rd": 0, "rs1": 1, "len": 4, "offset": off()}));
        table.push(json!({"operation": "VRELU", "stage": "MAIN", "node_index": 1, "source_address": 64, "source_offset": 0, "destination_address": 64, "destination_offset": 0, "element_num": 4}));
        sldi(&mut prog, 0, p * 4);
        sldi(&mut prog, 1, 64);
        prog.push(json!({"op": "st", "rd": 0, "rs1": 1, "size": 4, "offset": off()}));
        table.push(json!({"operation": "ST", "stage": "OUTPUT", "node_index": 1, "source_address": 64, "source_offset": 0, "destination_address": -1, "destination_offset": p * 4, "element_num": 4}));
    }
    let program = json!({
        "config": {"core_cnt": 1, "xbar_size": [128, 128], "xbar_array_count": 64, "cell_precision": 2, "adc_count": 16},
        "core0": prog,
    });
    let pad = json!({"kernel_h": 3, "kernel_w": 3, "stride_h": 1, "stride_w": 1, "pad_h0": 0, "pad_h1": 0, "pad_w0": 0, "pad_w1": 0, "input_channel": 2, "output_channel": 4, "with_bias": 1});
    let table = json!({
        "AG_info": [{"AG_index": 0, "node_name": "conv", "height_start": 0, "height_end": 17, "crossbar_num": 1, "crossbar": [{"width_start": 0, "width_end": 3}]}],
        "comm_pair_total_num": 0,
        "instruction": {"core_list": [table, null]},
        "node_list": [
            {"name": "data", "operation": "OP_INPUT", "output_dim": [1, 2, 4, 4], "provider_index": []},
            {"name": "conv", "operation": "OP_CONV", "output_dim": [1, 4, 2, 2], "provider_index": [0], "param": pad, "with_act": 1, "act_type": 0},
        ],
        "reshape_info": {},
    });
    (program, table)
}

fn write(dir: &Path, program: &Value, table: &Value) -> (PathBuf, PathBuf) {
    let (p, t) = (dir.join("prog.json"), dir.join("table.json"));
    std::fs::write(&p, program.to_string()).unwrap();
    std::fs::write(&t, table.to_string()).unwrap();
    (p, t)
}

fn options(program: PathBuf, table: PathBuf, control: Control) -> Options {
    Options {
        program,
        table,
        seed: 3,
        schedule: Schedule::Fixed,
        probes: true,
        control,
    }
}

#[test]
fn a_correct_program_is_exact_and_wrong_references_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let (program, table) = small_conv();
    let (p, t) = write(dir.path(), &program, &table);
    let c = check(&options(p.clone(), t.clone(), Control::None)).unwrap();
    assert!(!c.is_finding());
    let v = &c.verdicts[1];
    assert_eq!((v.status, v.compared, v.mismatches), (Status::Exact, 16, 0));
    assert_eq!(v.nonzero_reference, 5, "{v:?}");
    assert_eq!(c.verdicts[0].status, Status::Unchecked);
    // A reference that reads the GEMM rows as (cin, kh, kw), or drops the bias the program
    // loads from the image, must not agree (seed 3: exact counts).
    for (control, mismatches) in [(Control::ChwRows, 13), (Control::NoBiasAlias, 11)] {
        let c = check(&options(p.clone(), t.clone(), control)).unwrap();
        let v = &c.verdicts[1];
        assert_eq!(
            (v.status, v.compared, v.mismatches),
            (Status::Mismatch, 16, mismatches),
            "{control:?}"
        );
    }
}

#[test]
fn a_shifted_gather_is_a_mismatch_and_an_operand_slip_a_disagreement() {
    let dir = tempfile::tempdir().unwrap();
    let (mut program, mut table) = small_conv();
    // The first pixel's first tap reads one element further, in program and table alike.
    let core = program["core0"].as_array_mut().unwrap();
    let ld = core
        .iter()
        .position(|i| i["op"] == "ld" && i["size"] == 2)
        .unwrap();
    let src = core[ld - 1]["imm"].as_i64().unwrap();
    core[ld - 1]["imm"] = json!(src + 1);
    let insts = table["instruction"]["core_list"][0].as_array_mut().unwrap();
    let tl = insts.iter().position(|i| i["stage"] == "INPUT").unwrap();
    insts[tl]["source_offset"] = json!(src + 1);
    let (p, t) = write(dir.path(), &program, &table);
    let c = check(&options(p, t, Control::None)).unwrap();
    let v = &c.verdicts[1];
    assert_eq!(v.status, Status::Mismatch);
    assert!(v.disagreements.is_empty());
    assert!(
        (1..=4).contains(&v.mismatches),
        "only pixel 0 may differ: {v:?}"
    );
    // Localized: the first mvmul (pixel 0) gathered image element 1 where the geometry says 0.
    assert_eq!((v.windows_checked, v.windows_wrong), (4, 1));
    let m = v.first_wrong_mvmul.as_ref().unwrap();
    let first_mvmul = program["core0"]
        .as_array()
        .unwrap()
        .iter()
        .position(|i| i["op"] == "mvmul")
        .unwrap() as u32;
    assert_eq!((m.core, m.index), (0, first_mvmul));
    assert_eq!(
        v.first_wrong_sources[0].expected,
        "gmem 0 (image element 0)"
    );
    assert_eq!(v.first_wrong_sources[0].actual, "gmem 1 (image element 1)");
    assert_eq!(v.writers.len(), 1);
    assert_eq!(v.writers[0].index as usize, ld);

    // Only the table says otherwise: an operand disagreement naming the instruction.
    let (program, mut table) = small_conv();
    table["instruction"]["core_list"][0][1]["element_num"] = json!(3);
    let (p, t) = write(dir.path(), &program, &table);
    let c = check(&options(p, t, Control::None)).unwrap();
    assert!(c.is_finding());
    let d = &c.verdicts[1].disagreements;
    assert_eq!(d.len(), 1);
    assert_eq!(
        (
            d[0].core,
            d[0].index,
            d[0].field.as_str(),
            d[0].program,
            d[0].table
        ),
        (0, 6, "size", 2, 3)
    );
}

/// One `mvmul`'s input address moved by one element, in program and table alike (so the two
/// agree): the check must catch it and name that `mvmul`, not the loads before it.
#[test]
fn a_shifted_mvmul_input_is_caught_at_that_mvmul() {
    let dir = tempfile::tempdir().unwrap();
    let (mut program, mut table) = small_conv();
    // Pixel 2's mvmul (the third) reads LMem 17.. instead of 16..
    let core = program["core0"].as_array_mut().unwrap();
    let mvmuls: Vec<usize> = (0..core.len())
        .filter(|&i| core[i]["op"] == "mvmul")
        .collect();
    let third = mvmuls[2];
    assert_eq!(
        (
            core[third - 1]["rd"].as_i64(),
            core[third - 1]["imm"].as_i64()
        ),
        (Some(1), Some(16))
    );
    core[third - 1]["imm"] = json!(17);
    let insts = table["instruction"]["core_list"][0].as_array_mut().unwrap();
    let tm = insts
        .iter()
        .enumerate()
        .filter(|(_, i)| i["operation"] == "MVMUL")
        .nth(2)
        .unwrap()
        .0;
    insts[tm]["source_address"] = json!(17);
    let (p, t) = write(dir.path(), &program, &table);
    let c = check(&options(p, t, Control::None)).unwrap();
    assert!(c.is_finding());
    let v = &c.verdicts[1];
    assert!(v.disagreements.is_empty(), "{:?}", v.disagreements);
    assert_eq!(
        (v.status, v.compared, v.mismatches),
        (Status::Mismatch, 16, 3)
    );
    assert_eq!((v.windows_checked, v.windows_wrong), (4, 1));
    let m = v.first_wrong_mvmul.as_ref().unwrap();
    assert_eq!((m.core, m.index), (0, third as u32));
    // Pixel 2's first tap is image element 8 (row 1, column 0, channel 0); one further on
    // lies element 9.
    assert_eq!(
        v.first_wrong_sources[0].expected,
        "gmem 8 (image element 8)"
    );
    assert_eq!(v.first_wrong_sources[0].actual, "gmem 9 (image element 9)");
}

/// squeezenet-batch conv1_1 on core 0: PIMCOMP-NN's batch-mode input reuse gathers the wrong
/// window for every output pixel but the first (`docs/pimcomp-findings.md`).
#[test]
fn the_squeezenet_batch_conv1_bug_stays_found() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = pimdiff(&[
        "pimcomp",
        fixture("squeezenet-batch-conv1.json.gz").to_str().unwrap(),
        "--verification",
        fixture("squeezenet-batch-conv1-verification.json.gz")
            .to_str()
            .unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["mode"], "batch");
    assert_eq!(summary["seed"], 1);
    assert_eq!(summary["schedule"], "fixed");
    let node = &summary["nodes"][1];
    assert_eq!(node["name"], "conv1_1");
    assert_eq!(node["check"], "isolated");
    assert_eq!(node["status"], "mismatch");
    assert_eq!(node["compared"], 52992);
    assert_eq!(node["mismatches"], 39609);
    for key in [
        "windows_checked",
        "windows_wrong",
        "first_wrong_mvmul",
        "writers",
        "disagreements",
        "nonzero_reference",
        "index",
        "op",
    ] {
        assert!(node.get(key).is_some(), "summary.json lacks {key}");
    }
    // The first pixel (64 channels) is right: the first window is gathered correctly.
    let actual: ndarray::Array3<i8> =
        ndarray_npy::read_npy(out.join("nodes/001-conv1_1/actual.npy")).unwrap();
    let reference: ndarray::Array3<i8> =
        ndarray_npy::read_npy(out.join("nodes/001-conv1_1/reference.npy")).unwrap();
    assert_eq!(actual.dim(), (111, 111, 64));
    assert_eq!(
        actual.slice(ndarray::s![0, 0, ..]),
        reference.slice(ndarray::s![0, 0, ..])
    );
    assert_ne!(
        actual.slice(ndarray::s![0, 1, ..]),
        reference.slice(ndarray::s![0, 1, ..])
    );
    assert!(out.join("report.md").is_file() && out.join("run/program.json.gz").is_file());

    // Localized by provenance: every window but the first gathers stale image rows.
    assert_eq!(node["windows_checked"], 828);
    assert_eq!(node["windows_wrong"], 827);
    assert_eq!(
        node["first_wrong_mvmul"],
        json!({"core": 0, "index": 58, "text": "mvmul r0, r1, mbiw=8, relu=0, group=1"})
    );
    let writers: Vec<_> = node["writers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["index"].as_u64().unwrap(), w["text"].as_str().unwrap()))
        .collect();
    assert_eq!(
        writers,
        [(46, "lmv r0, r1, size=3"), (52, "lmv r0, r1, size=3")]
    );
    let sources: Vec<_> = node["first_wrong_sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["element"].as_u64().unwrap(),
                s["expected"].as_str().unwrap().to_owned(),
                s["actual"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(sources.len(), 6);
    assert_eq!(
        sources[0],
        (
            15,
            "gmem 684 (image element 684)".into(),
            "gmem 681 (image element 681)".into()
        )
    );
    assert_eq!(
        sources[3],
        (
            21,
            "gmem 1353 (image element 1353)".into(),
            "gmem 1350 (image element 1350)".into()
        )
    );

    // The reduced program reproduces the mismatch under `pimdiff run`.
    let dir = out.join("nodes/001-conv1_1");
    let o = pimdiff(&[
        "run",
        dir.join("reduced.json.gz").to_str().unwrap(),
        "--xbars",
        out.join("run/xbars").to_str().unwrap(),
        "--arrays-per-core",
        "64",
        "--gmem",
        &format!("0={}", dir.join("gmem_0.npy").display()),
        "--dump",
        dir.join("state").to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let gmem = std::fs::read(dir.join("state/gmem.bin")).unwrap();
    let expected = std::fs::read(dir.join("expected.bin")).unwrap();
    let base = gmem.len() - 52992;
    let differ = gmem[base..]
        .iter()
        .zip(&expected)
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(differ, 39609);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains(&format!("cmp -l -i {base}:0 -n 52992")),
        "{report}"
    );
}

#[test]
fn bad_inputs_exit_2_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (program, table) = small_conv();
    let (p, t) = write(d, &program, &table);
    let other = fixture("squeezenet-batch-conv1-verification.json.gz");
    let truncated = d.join("truncated.json.gz");
    let bytes = std::fs::read(&other).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let mut unknown = table.clone();
    unknown["instruction"]["core_list"][0][3]["operation"] = json!("VFOO");
    let unknown_path = d.join("unknown.json");
    std::fs::write(&unknown_path, unknown.to_string()).unwrap();
    let missing = d.join("missing.json");
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let cases = [
        (
            s(&p),
            s(&other),
            "does not belong to this program: core 0, instruction",
        ),
        (s(&p), s(&truncated), "gzip"),
        (s(&p), s(&missing), "missing.json"),
        (s(&missing), s(&t), "missing.json"),
        (s(&p), s(&unknown_path), "VFOO"),
    ];
    for (prog, tab, message) in cases {
        let o = pimdiff(&["pimcomp", &prog, "--verification", &tab]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{prog} {tab}: {err}");
        assert!(err.contains(message), "{prog} {tab}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// The recorded batch and element compiles of X1's minimized network (input `[1, 6, 2, 3]`
/// → CONV with a fused ReLU), from the replay fixtures of tests/pimcomp_hunt.rs, and the
/// case seed its check used.
fn x1_compiles() -> [PathBuf; 4] {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pimcomp-replay/recorded");
    let (b, e) = (
        dir.join("batch-aff35e0073781042"),
        dir.join("element-aff35e0073781042"),
    );
    [
        b.join("SimulationInfo.gz"),
        b.join("VerificationInfo.json.gz"),
        e.join("SimulationInfo.gz"),
        e.join("VerificationInfo.json.gz"),
    ]
}
const X1_SEED: &str = "7503060426966103481";
const X1_SIGNATURE: &str = "cross-mode: both/OP_CONV/batch-exact/element-exact/references-differ";

#[test]
fn cross_finds_x1_in_either_order_and_writes_both_reports() {
    let [bp, bt, ep, et] = x1_compiles().map(|p| p.to_str().unwrap().to_owned());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x1");
    let o = pimdiff(&[
        "pimcomp",
        &ep,
        "--verification",
        &et,
        "--cross",
        &bp,
        "--cross-verification",
        &bt,
        "--seed",
        X1_SEED,
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    // Both tables, the batch one first whatever the order given.
    let programs: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("program: "))
        .collect();
    assert_eq!(programs.len(), 2, "{stdout}");
    assert!(programs[0].contains("(Batch mode)"), "{stdout}");
    assert!(programs[1].contains("(Element mode)"), "{stdout}");
    let detail = "node 1 (conv2, OP_CONV): 2 of 6 elements both pipelines observed differ (batch \
                  exact, element exact; their references differ)";
    assert_eq!(
        lines[lines.len() - 2],
        format!("{X1_SIGNATURE}: {detail}"),
        "{stdout}"
    );
    assert_eq!(
        lines[lines.len() - 1],
        format!("reports: {}", out.display())
    );
    for p in ["batch", "element"] {
        let summary: Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(p).join("summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(summary["mode"], p);
        assert!(out.join(p).join("report.md").is_file());
    }
    let cross: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("cross.json")).unwrap()).unwrap();
    assert_eq!(cross["batch"], bp.as_str());
    assert_eq!(cross["element"], ep.as_str());
    assert_eq!(cross["finding"], true);
    assert_eq!(cross["nodes_compared"], 1);
    assert_eq!(cross["explained"], 0);
    assert_eq!(cross["signature"], X1_SIGNATURE);
    assert_eq!(cross["detail"], detail);
    assert_eq!(
        cross["disagreement"],
        json!({"index": 1, "name": "conv2", "op": "OP_CONV", "batch": "exact",
               "element": "exact", "references_differ": true, "compared": 6, "differ": 2})
    );
    // An existing, non-empty --out is refused before anything is overwritten.
    let again = pimdiff(&[
        "pimcomp",
        &bp,
        "--verification",
        &bt,
        "--cross",
        &ep,
        "--cross-verification",
        &et,
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(err.contains("exists and is not empty"), "{err}");
}

#[test]
fn cross_needs_one_batch_and_one_element_program() {
    let p = fixture("squeezenet-batch-conv1.json.gz");
    let t = fixture("squeezenet-batch-conv1-verification.json.gz");
    let (p, t) = (p.to_str().unwrap(), t.to_str().unwrap());
    let o = pimdiff(&[
        "pimcomp",
        p,
        "--verification",
        t,
        "--cross",
        p,
        "--cross-verification",
        t,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "error: {p} and {p} are both batch programs: --cross compares a batch and an \
             element compile of the same model\n"
        )
    );
    // --cross and --cross-verification go together.
    for args in [["--cross", p], ["--cross-verification", t]] {
        let o = pimdiff(&[&["pimcomp", p, "--verification", t], &args[..]].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("required arguments were not provided"),
            "{err}"
        );
    }
}

/// alexnet's batch and element programs as PIMCOMP-NN wrote them, when the folder
/// `PIMDIFF_PIMCOMP_DIR` (else `$PIMDIFF_SHARED/external/pimcomp`) holds them: they agree
/// wherever both observe a node except conv1_1, which the batch program gets wrong (B1, its
/// own mismatch), so the exit is 1 for that mismatch alone.
#[test]
fn cross_on_alexnet_agrees_apart_from_the_batch_mismatch() {
    let dir = std::env::var_os("PIMDIFF_PIMCOMP_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PIMDIFF_SHARED")
                .map(|s| PathBuf::from(s).join("external").join("pimcomp"))
        });
    let files = dir.map(|d| {
        [
            "alexnet-batch.json.gz",
            "alexnet-batch-verification.json.gz",
            "alexnet-element.json.gz",
            "alexnet-element-verification.json.gz",
        ]
        .map(|n| d.join(n))
    });
    let Some([bp, bt, ep, et]) = files.filter(|f| f.iter().all(|p| p.is_file())) else {
        eprintln!(
            "skipped: alexnet-{{batch,element}} are not in PIMDIFF_PIMCOMP_DIR or \
             $PIMDIFF_SHARED/external/pimcomp"
        );
        return;
    };
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let o = pimdiff(&[
        "pimcomp",
        &s(&bp),
        "--verification",
        &s(&bt),
        "--cross",
        &s(&ep),
        "--cross-verification",
        &s(&et),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}");
    assert_eq!(
        stdout.lines().last().unwrap(),
        "cross-mode: the pipelines agree on 8 compared nodes (1 differences explained by a \
         mismatch)"
    );
    assert!(
        stdout.contains("   1  conv1_1                          CONV        isolated   mismatch")
    );
}
