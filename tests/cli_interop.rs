//! `pimdiff export`, `pimdiff import-onnx` and `new-case`'s exports through the binary: the
//! files, the messages, and exit 2 for every kind of bad input.

#[path = "support/cli.rs"]
mod cli;

use std::fs;
use std::path::Path;

use pimdiff::interop::onnx_proto::ModelProto;
use prost::Message;

use cli::{path, pimdiff, text};

const EXPORTS: [&str; 3] = ["model.onnx", "op.mlir", "check.py"];

fn new_case(dir: &Path, extra: &[&str]) {
    let mut args = vec![
        "new-case", "--op", "conv2d", "--groups", "1", "--bias", "--relu",
    ];
    args.extend(extra);
    args.push(path(dir));
    let o = pimdiff(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

#[test]
fn new_case_writes_the_exports_and_export_rewrites_them_identically() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    new_case(&dir, &["--expected"]);
    let first: Vec<Vec<u8>> = EXPORTS
        .iter()
        .map(|f| fs::read(dir.join(f)).unwrap())
        .collect();
    for f in EXPORTS {
        fs::remove_file(dir.join(f)).unwrap();
    }
    let o = pimdiff(&["export", path(&dir)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        format!("wrote model.onnx, op.mlir, check.py in {}\n", dir.display())
    );
    let again: Vec<Vec<u8>> = EXPORTS
        .iter()
        .map(|f| fs::read(dir.join(f)).unwrap())
        .collect();
    assert_eq!(first, again);
    assert_eq!(again[2], pimdiff::interop::check_py::SCRIPT.as_bytes());
}

#[test]
fn export_says_when_there_is_no_expected_npy_and_refuses_a_bad_case() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    new_case(&dir, &[]);
    let o = pimdiff(&["export", path(&dir)]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout)
        .ends_with(" (no expected.npy: check.py has nothing to compare until one is written)\n"));
    fs::write(dir.join("case.json"), "{ not json").unwrap();
    let o = pimdiff(&["export", path(&dir)]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "error: invalid case {}: case.json: JSON syntax error at line 1, column 3: key must \
             be a string\n",
            dir.display()
        )
    );
}

#[test]
fn import_onnx_of_an_export_gives_back_the_case() {
    let tmp = tempfile::tempdir().unwrap();
    let arch = [
        "--cores",
        "2",
        "--arrays-per-core",
        "16",
        "--array-rows",
        "8",
        "--array-cols",
        "4",
        "--local-memory-bytes",
        "4096",
    ];
    let original = tmp.path().join("orig");
    let mut flags = vec!["--stride", "2", "--dilation", "1,2", "--padding", "0,1,2,0"];
    flags.extend(arch);
    new_case(&original, &flags);
    let back = tmp.path().join("back");
    let mut args = vec!["import-onnx", "--seed", "3"];
    let model = original.join("model.onnx");
    args.extend([path(&model), "--out", path(&back)]);
    args.extend(arch);
    let o = pimdiff(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        format!(
            "wrote {}: conv2d: input [1, 3, 8, 8] (NCHW), weight [8, 3, 3, 3], stride [2, 2], \
             padding [0, 1, 2, 0] (top, left, bottom, right), dilation [1, 2], groups 1, bias, \
             relu, output [1, 8, 4, 3]; input seed 3\n",
            back.display()
        )
    );
    for f in [
        "case.json",
        "weight.npy",
        "bias.npy",
        "model.onnx",
        "op.mlir",
        "check.py",
    ] {
        assert_eq!(
            fs::read(original.join(f)).unwrap(),
            fs::read(back.join(f)).unwrap(),
            "{f}"
        );
    }
    // The input is random (a model has none); expected.npy is the oracle's for it.
    let o = pimdiff(&["oracle", path(&back)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
}

#[test]
fn import_onnx_refuses_bad_input_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let garbage = tmp.path().join("garbage.onnx");
    fs::write(&garbage, b"\x0a\xff\xff\xff\xff\xff").unwrap();
    let o = pimdiff(&["import-onnx", path(&garbage), "--out", path(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).starts_with(&format!(
            "error: cannot import {}: not an ONNX model: ",
            garbage.display()
        )),
        "{}",
        text(&o.stderr)
    );

    // A model with an operator a case cannot be.
    let case_dir = tmp.path().join("c");
    new_case(&case_dir, &[]);
    let mut model =
        ModelProto::decode(&fs::read(case_dir.join("model.onnx")).unwrap()[..]).unwrap();
    model.graph.as_mut().unwrap().node[0].op_type = Some("QLinearConv".into());
    let odd = tmp.path().join("qlinear.onnx");
    fs::write(&odd, model.encode_to_vec()).unwrap();
    let o = pimdiff(&["import-onnx", path(&odd), "--out", path(&out)]);
    assert_eq!(
        (o.status.code(), text(&o.stderr)),
        (
            Some(2),
            format!(
                "error: cannot import {}: unsupported: operator `QLinearConv` (node 0, \
                 `convinteger_0`); a case is one of Conv, ConvInteger, MatMul, MatMulInteger, \
                 Gemm, optionally followed by Add (a constant bias) and Relu\n",
                odd.display()
            )
        )
    );
    assert!(!out.exists());

    // A directory is not a model; an existing case is never overwritten.
    let o = pimdiff(&["import-onnx", path(tmp.path()), "--out", path(&out)]);
    assert_eq!(
        (o.status.code(), text(&o.stderr)),
        (
            Some(2),
            format!(
                "error: cannot read {}: not a regular file\n",
                tmp.path().display()
            )
        )
    );
    let model = case_dir.join("model.onnx");
    let o = pimdiff(&["import-onnx", path(&model), "--out", path(&case_dir)]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "error: cannot write {0}: already exists and is not empty (refusing to overwrite \
             a case)\n",
            case_dir.display()
        )
    );
}
