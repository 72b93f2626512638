//! The exports checked by real tools: ONNX's checker and reference evaluator, IREE (op.mlir
//! compiled for llvm-cpu and run), and each case's own `check.py` under NumPy; and
//! `pimdiff import-onnx` on models written by ONNX's Python helpers.
//!
//! These tests need the Python environment of `scripts/setup-python.sh`, found through
//! `PIMDIFF_PYTHON` (the script sets it: `eval "$(scripts/setup-python.sh)"`). Without it each
//! test prints a `skipped:` line and passes; CI always sets it.

#[path = "support/cli.rs"]
mod cli;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pimdiff::interop::write_case_with_exports;
use pimdiff_oracle::io::write_npy_atomic;
use pimdiff_oracle::{random_tensors, reference, Case, CaseArch, CaseSpec, Conv2d, Mvm, Op};

use cli::text;

fn python(test: &str) -> Option<PathBuf> {
    match std::env::var_os("PIMDIFF_PYTHON") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            // Straight to the stderr handle, not eprintln!: the test harness captures the
            // print macros of passing tests, and this line must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "{test}: skipped: run scripts/setup-python.sh (PIMDIFF_PYTHON is not set)"
            );
            None
        }
    }
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

const ARCH: CaseArch = CaseArch {
    cores: 4,
    arrays_per_core: 8,
    array_rows: 16,
    array_cols: 16,
    local_memory_bytes: 262144,
};

fn conv(name: &'static str, p: Conv2d, n: usize, hw: [usize; 2]) -> (&'static str, Case) {
    let spec = CaseSpec {
        op: Op::Conv2d(p),
        input_shape: vec![n, p.in_channels, hw[0], hw[1]],
        arch: ARCH,
    };
    (
        name,
        random_tensors(&spec, name.len() as u64).expect("valid case"),
    )
}

fn mvm(name: &'static str, p: Mvm, n: usize) -> (&'static str, Case) {
    let spec = CaseSpec {
        op: Op::Mvm(p),
        input_shape: vec![n, p.in_features],
        arch: ARCH,
    };
    (
        name,
        random_tensors(&spec, name.len() as u64).expect("valid case"),
    )
}

const BASE: Conv2d = Conv2d {
    in_channels: 3,
    out_channels: 4,
    kernel: [3, 3],
    stride: [1, 1],
    padding: [0; 4],
    dilation: [1, 1],
    groups: 1,
    bias: false,
    relu: false,
};

/// Padding, stride, dilation, groups, bias, ReLU, batch and MVM, alone and together; a case
/// whose weight is written in hex form; and extreme values (-128 everywhere).
fn cases() -> Vec<(&'static str, Case)> {
    let mut cases = vec![
        conv("plain", BASE, 1, [5, 5]),
        conv(
            "padding",
            Conv2d {
                padding: [2, 0, 1, 3],
                ..BASE
            },
            1,
            [4, 5],
        ),
        conv(
            "stride",
            Conv2d {
                stride: [2, 3],
                ..BASE
            },
            1,
            [7, 8],
        ),
        conv(
            "dilation",
            Conv2d {
                dilation: [2, 3],
                padding: [1; 4],
                ..BASE
            },
            1,
            [7, 8],
        ),
        conv(
            "bias-relu",
            Conv2d {
                bias: true,
                relu: true,
                padding: [1; 4],
                ..BASE
            },
            1,
            [5, 5],
        ),
        conv(
            "groups",
            Conv2d {
                in_channels: 4,
                out_channels: 6,
                groups: 2,
                bias: true,
                ..BASE
            },
            1,
            [5, 4],
        ),
        conv(
            "depthwise",
            Conv2d {
                in_channels: 4,
                out_channels: 4,
                groups: 4,
                stride: [2, 2],
                dilation: [2, 1],
                padding: [1, 2, 1, 0],
                relu: true,
                ..BASE
            },
            1,
            [7, 6],
        ),
        conv(
            "batch",
            Conv2d {
                bias: true,
                relu: true,
                kernel: [2, 3],
                ..BASE
            },
            3,
            [4, 5],
        ),
        conv(
            "everything",
            Conv2d {
                in_channels: 6,
                out_channels: 4,
                kernel: [3, 2],
                stride: [2, 1],
                padding: [0, 1, 2, 1],
                dilation: [1, 2],
                groups: 2,
                bias: true,
                relu: true,
            },
            2,
            [7, 6],
        ),
        conv(
            "hex-weight",
            Conv2d {
                in_channels: 16,
                out_channels: 32,
                ..BASE
            },
            1,
            [4, 4],
        ),
        mvm(
            "mvm",
            Mvm {
                in_features: 20,
                out_features: 7,
                bias: false,
                relu: false,
            },
            1,
        ),
        mvm(
            "mvm-batch-bias-relu",
            Mvm {
                in_features: 9,
                out_features: 5,
                bias: true,
                relu: true,
            },
            4,
        ),
        mvm(
            "mvm-hex",
            Mvm {
                in_features: 100,
                out_features: 50,
                bias: true,
                relu: false,
            },
            2,
        ),
    ];
    let (_, mut extreme) = conv(
        "extreme",
        Conv2d {
            padding: [1; 4],
            ..BASE
        },
        2,
        [3, 3],
    );
    extreme.input.fill(-128);
    extreme.weight.fill(-128);
    cases.push(("extreme", extreme));
    for (_, case) in &mut cases {
        case.expected = Some(reference(case).expect("reference"));
    }
    cases
}

fn write_all(root: &Path) -> Vec<(String, PathBuf)> {
    cases()
        .into_iter()
        .map(|(name, case)| {
            let dir = root.join(name);
            write_case_with_exports(&case, &dir).expect("write case");
            (name.to_string(), dir)
        })
        .collect()
}

fn run_check_py(python: &Path, dir: &Path) -> Output {
    Command::new(python)
        .arg("check.py")
        .current_dir(dir)
        .output()
        .expect("spawn python")
}

#[test]
fn onnx_and_iree_reproduce_expected_exactly() {
    let Some(python) = python("onnx_and_iree_reproduce_expected_exactly") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dirs = write_all(tmp.path());
    let out = Command::new(&python)
        .arg(script("validate_exports.py"))
        .args(dirs.iter().map(|(_, d)| d))
        .output()
        .expect("spawn python");
    let stdout = text(&out.stdout);
    let mut passed = Vec::new();
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let case = Path::new(v["case"].as_str().unwrap())
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let tool = v["tool"].as_str().unwrap().to_string();
        assert!(
            v["ok"].as_bool().unwrap(),
            "{tool} on {case}: {}",
            v["detail"]
        );
        passed.push(format!("{tool}:{case}"));
    }
    let mut wanted: Vec<String> = ["onnx", "iree"]
        .iter()
        .flat_map(|t| dirs.iter().map(move |(n, _)| format!("{t}:{n}")))
        .collect();
    passed.sort();
    wanted.sort();
    assert_eq!(passed, wanted, "stderr:\n{}", text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", text(&out.stderr));
}

#[test]
fn check_py_agrees_and_names_the_differing_elements() {
    let Some(python) = python("check_py_agrees_and_names_the_differing_elements") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    for (name, dir) in write_all(tmp.path()) {
        let out = run_check_py(&python, &dir);
        let n = pimdiff_oracle::io::read_case(&dir)
            .unwrap()
            .expected
            .unwrap()
            .len();
        assert_eq!(
            (out.status.code(), text(&out.stdout)),
            (
                Some(0),
                format!("check.py: agree: expected.npy equals the exact output ({n} elements)\n")
            ),
            "{name}: {}",
            text(&out.stderr)
        );
    }

    // Two corrupted elements of a batched conv: exit 1, both named with both values.
    let dir = tmp.path().join("batch");
    let mut expected = pimdiff_oracle::io::read_case(&dir)
        .unwrap()
        .expected
        .unwrap();
    let (a, b) = (expected[[0, 1, 2, 2]], expected[[2, 3, 0, 0]]);
    expected[[0, 1, 2, 2]] = a.wrapping_add(1);
    expected[[2, 3, 0, 0]] = -7 - b.abs();
    write_npy_atomic(&dir.join("expected.npy"), &expected).unwrap();
    let out = run_check_py(&python, &dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!(
            "check.py: 2 of {} elements differ; the first:\n  output[0, 1, 2, 2]: expected.npy {}, exact {a}\n  output[2, 3, 0, 0]: expected.npy {}, exact {b}\n",
            expected.len(),
            a.wrapping_add(1),
            -7 - b.abs()
        )
    );

    // No expected.npy: nothing to compare, exit 2.
    let dir = tmp.path().join("mvm");
    std::fs::remove_file(dir.join("expected.npy")).unwrap();
    let out = run_check_py(&python, &dir);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "check.py: cannot check this case: expected.npy: missing, nothing to compare (pimdiff \
         oracle DIR --out DIR/expected.npy writes it)\n"
    );
}

/// Models written by ONNX's own helpers (float Conv with bias, quantized ConvInteger with
/// SAME padding, Gemm with transB and Relu, MatMulInteger) import, and the original model run
/// by ONNX's reference evaluator on the case's input gives the case's expected.npy.
#[test]
fn models_from_onnx_helpers_import_and_agree_with_the_reference_evaluator() {
    let Some(python) =
        python("models_from_onnx_helpers_import_and_agree_with_the_reference_evaluator")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models");
    let run = |args: &[&std::ffi::OsStr]| -> Output {
        Command::new(&python)
            .arg(script("onnx_models.py"))
            .args(args)
            .output()
            .expect("spawn python")
    };
    let out = run(&["write".as_ref(), models.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut pairs = Vec::new();
    for name in text(&out.stdout).lines() {
        let model = models.join(format!("{name}.onnx"));
        let case = tmp.path().join(name);
        let imported = Command::new(env!("CARGO_BIN_EXE_pimdiff"))
            .args([
                "import-onnx".as_ref(),
                model.as_os_str(),
                "--out".as_ref(),
                case.as_os_str(),
            ])
            .output()
            .unwrap();
        assert_eq!(
            imported.status.code(),
            Some(0),
            "{name}: {}",
            text(&imported.stderr)
        );
        pairs.push(model);
        pairs.push(case);
    }
    assert!(
        pairs.len() >= 8,
        "the script wrote {} models",
        pairs.len() / 2
    );
    let mut args: Vec<&std::ffi::OsStr> = vec!["compare".as_ref()];
    args.extend(pairs.iter().map(|p| p.as_os_str()));
    let out = run(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}
