//! `pimdiff repro DIR` of a CIM-MLC finding: the saved case compiled again by CIM-MLC (the
//! tree given, else the finding's, else `$CIM_MLC_DIR`), checked as the hunt checked it, and
//! the outcome compared with the saved signature.
//!
//! The case comes from `case-description.json`; the saved `model.onnx`, `arch.py` and
//! `case.json` must be exactly what it gives (else the directory was edited inconsistently:
//! an error, exit 2, rather than a verdict on a case nobody saved).

use std::path::{Path, PathBuf};
use std::time::Duration;

use pimdiff_engine::finding::{FindingMeta, FINDING_JSON};

use crate::case::{CaseContext, CaseRun, CimCase};
use crate::driver::Protocol;
use crate::files::{CimDetails, DESCRIPTION};
use crate::generate::NetConfig;
use crate::tree::{Tree, TreeError};

/// Why a CIM-MLC finding cannot be replayed (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ReproError {
    #[error("{}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: pimdiff_input::InputError,
    },
    #[error("{}: {message}", .path.display())]
    Json { path: PathBuf, message: String },
    #[error("{}: not a CIM-MLC finding (target {target:?})", .path.display())]
    NotCimMlc {
        path: PathBuf,
        target: Option<String>,
    },
    #[error("{file} is not what {DESCRIPTION} gives: the directory was edited")]
    Inconsistent { file: &'static str },
    #[error(transparent)]
    Tree(#[from] TreeError),
}

/// What a replay came to.
#[derive(Debug)]
pub struct Replay {
    /// The signature the finding was saved under.
    pub saved: String,
    pub run: CaseRun,
    /// Whether the run shows the saved signature.
    pub reproduces: bool,
    /// The tree it ran in.
    pub tree: PathBuf,
}

/// Whether `dir` holds a CIM-MLC finding.
pub fn is_cim_mlc_finding(dir: &Path) -> bool {
    read_meta(dir).is_ok_and(|m| m.target.as_deref() == Some("cim-mlc"))
}

fn read_meta(dir: &Path) -> Result<FindingMeta, ReproError> {
    let path = dir.join(FINDING_JSON);
    let bytes =
        pimdiff_input::read(&path, pimdiff_input::limits::MAX_META_BYTES).map_err(|source| {
            ReproError::Read {
                path: path.clone(),
                source,
            }
        })?;
    serde_json::from_slice(&bytes).map_err(|e| ReproError::Json {
        path,
        message: e.to_string(),
    })
}

/// Replays the finding in `dir` (see the module docs) with each compile under `timeout`.
pub fn repro(dir: &Path, tree: Option<&Path>, timeout: Duration) -> Result<Replay, ReproError> {
    let meta = read_meta(dir)?;
    if meta.target.as_deref() != Some("cim-mlc") {
        return Err(ReproError::NotCimMlc {
            path: dir.join(FINDING_JSON),
            target: meta.target,
        });
    }
    let path = dir.join(DESCRIPTION);
    let bytes =
        pimdiff_input::read(&path, pimdiff_input::limits::MAX_META_BYTES).map_err(|source| {
            ReproError::Read {
                path: path.clone(),
                source,
            }
        })?;
    let case: CimCase = serde_json::from_slice(&bytes).map_err(|e| ReproError::Json {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let files = case.files().map_err(|e| ReproError::Json {
        path,
        message: format!("not a valid network: {e}"),
    })?;
    for (file, want) in [
        ("model.onnx", files.model.as_slice()),
        ("arch.py", files.arch_py.as_bytes()),
        ("case.json", files.case_json.as_bytes()),
    ] {
        let got = std::fs::read(dir.join(file)).ok();
        if got.as_deref() != Some(want) {
            return Err(ReproError::Inconsistent { file });
        }
    }
    let saved_tree = serde_json::from_value::<CimDetails>(meta.details.clone())
        .ok()
        .map(|d| d.tree);
    let tree = match (tree, saved_tree) {
        (Some(t), _) => Tree::locate(Some(t))?,
        (None, Some(t)) if t.join("manifest.json").is_file() => Tree::locate(Some(&t))?,
        (None, _) => Tree::locate(None)?,
    };
    let ctx = CaseContext::new(NetConfig::default(), tree, timeout, Protocol::Serve);
    let mut run = ctx.run_case(&case);
    // A crash the hunt signed by the input probe is judged by it again.
    ctx.probe_input(&case, &mut run);
    ctx.driver.shutdown();
    let reproduces = run
        .signatures()
        .iter()
        .any(|s| s.to_string() == meta.signature);
    Ok(Replay {
        saved: meta.signature,
        run,
        reproduces,
        tree: ctx.tree.dir.clone(),
    })
}
