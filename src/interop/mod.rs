//! Cases in the formats other toolchains read, and back.
//!
//! Every case directory pimdiff writes also holds three files, so that a compiler team can use
//! a case (a finding, say) with its own tools and confirm it without pimdiff:
//!
//! - `model.onnx` ([`onnx`]): the operation as one ONNX graph, integer semantics exactly;
//! - `op.mlir` ([`mlir`]): the same operation in MLIR (`linalg` on tensors);
//! - `check.py` ([`check_py`]): a NumPy-only script that recomputes the output from the `.npy`
//!   files and compares it with `expected.npy`.
//!
//! [`write_exports`] adds them to a case directory; [`write_case_with_exports`] writes a new
//! case directory with them, atomically. [`import_onnx`] goes the other way: a one-operator
//! ONNX model becomes a case. The formats are described in `docs/case-format.md`.

pub mod check_py;
pub mod import_onnx;
pub mod mlir;
pub mod onnx;
pub mod onnx_proto;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use pimdiff_oracle::{Case, Op};

/// File name of the ONNX export.
pub const MODEL_ONNX: &str = "model.onnx";
/// File name of the MLIR export.
pub const OP_MLIR: &str = "op.mlir";
/// File name of the standalone checker.
pub const CHECK_PY: &str = "check.py";

/// A file of the exports could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// An operating-system error on `path` (the message includes it; it is not a `source()`,
    /// so an error chain prints it once).
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The case itself could not be written (see [`write_case_with_exports`]).
    #[error("{0}")]
    Case(pimdiff_oracle::CaseError),
}

/// Writes `model.onnx`, `op.mlir` and `check.py` for `case` into the existing directory `dir`,
/// each atomically (a temporary sibling, fsync, rename), replacing earlier exports.
///
/// `case` should be the case the directory holds (the exports are computed from it alone).
pub fn write_exports(case: &Case, dir: &Path) -> Result<(), ExportError> {
    for (name, bytes) in export_files(case) {
        write_atomic(&dir.join(name), &bytes)?;
    }
    Ok(())
}

/// The exports of `case` as `(file name, bytes)`: `model.onnx`, `op.mlir`, `check.py`.
pub fn export_files(case: &Case) -> [(&'static str, Vec<u8>); 3] {
    [
        (MODEL_ONNX, onnx::model_bytes(case)),
        (OP_MLIR, mlir::module_text(case).into_bytes()),
        (CHECK_PY, check_py::SCRIPT.as_bytes().to_vec()),
    ]
}

/// Writes `case` as a new case directory `dir` together with its exports, atomically: all of
/// it is written into a hidden sibling directory that is renamed into place at the end.
///
/// Like [`pimdiff_oracle::io::write_case`], refuses a `dir` that exists and is not empty.
pub fn write_case_with_exports(case: &Case, dir: &Path) -> Result<(), ExportError> {
    let already = || {
        ExportError::Case(pimdiff_oracle::CaseError::AlreadyExists {
            path: dir.to_path_buf(),
        })
    };
    if !absent_or_empty(dir) {
        return Err(already());
    }
    let staging = staging_name(dir);
    let result = pimdiff_oracle::io::write_case(case, &staging)
        .map_err(ExportError::Case)
        .and_then(|()| write_exports(case, &staging))
        .and_then(|()| {
            // rename(2) replaces an empty directory and refuses a non-empty one, so a case
            // written meanwhile by someone else is never overwritten.
            fs::rename(&staging, dir).map_err(|error| {
                if absent_or_empty(dir) {
                    ExportError::Io {
                        path: dir.to_path_buf(),
                        error,
                    }
                } else {
                    already()
                }
            })
        });
    if result.is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    result
}

/// Whether nothing is at `path`, or an empty directory.
fn absent_or_empty(path: &Path) -> bool {
    match fs::read_dir(path) {
        Ok(mut entries) => entries.next().is_none(),
        Err(_) => !path.exists(),
    }
}

/// One line naming the operator and its parameters (for headers and doc strings).
pub fn summary(case: &Case) -> String {
    let spec = &case.spec;
    let mut s = match &spec.op {
        Op::Conv2d(p) => format!(
            "conv2d: input {:?} (NCHW), weight {:?}, stride {:?}, padding {:?} (top, left, bottom, \
             right), dilation {:?}, groups {}",
            spec.input_shape,
            p.weight_shape(),
            p.stride,
            p.padding,
            p.dilation,
            p.groups
        ),
        Op::Mvm(p) => format!(
            "mvm: input {:?}, weight [{}, {}] (out, in)",
            spec.input_shape, p.out_features, p.in_features
        ),
    };
    if spec.op.has_bias() {
        s.push_str(", bias");
    }
    if spec.op.has_relu() {
        s.push_str(", relu");
    }
    s.push_str(&format!(", output {:?}", spec.output_shape()));
    s
}

/// Writes `bytes` to `path` through a temporary sibling file (fsynced, then renamed).
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ExportError> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |error| ExportError::Io { path: p, error }
    };
    let tmp = staging_name(path);
    let written = fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| fs::rename(&tmp, path)) {
        let _ = fs::remove_file(&tmp);
        return Err(io(path)(e));
    }
    Ok(())
}

/// A fresh hidden sibling of `path`: `.NAME.tmp-PID-N`.
fn staging_name(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "case".to_string());
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    parent.join(format!(".{name}.tmp-{}-{n}", std::process::id()))
}
