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
pub use pimdiff_onnx as onnx_proto;

use std::path::{Path, PathBuf};

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
        pimdiff_atomic::write_file(&dir.join(name), &bytes).map_err(atomic_err)?;
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
    let staging = pimdiff_atomic::AtomicDir::create(dir).map_err(atomic_err)?;
    // The case writer fills the (empty) staging directory like any empty destination.
    pimdiff_oracle::io::write_case(case, staging.path()).map_err(ExportError::Case)?;
    write_exports(case, staging.path())?;
    staging.commit().map_err(atomic_err)?;
    Ok(())
}

/// An atomic write's error as an export error (an existing case is the case writer's error).
fn atomic_err(e: pimdiff_atomic::Error) -> ExportError {
    match e {
        pimdiff_atomic::Error::Exists { path } => {
            ExportError::Case(pimdiff_oracle::CaseError::AlreadyExists { path })
        }
        pimdiff_atomic::Error::Io { path, source } => ExportError::Io {
            path,
            error: source,
        },
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
