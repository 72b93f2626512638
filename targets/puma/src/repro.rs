//! `pimdiff repro DIR` for a PUMA finding: the driver run again on the finding's own two
//! files, in the finding's tree (or the trees given), the compile checked as the hunt checked
//! it, and the outcome compared with the saved signature.
//!
//! The finding's `network.json` and data seed (`finding.json` `details`) give the reference;
//! they must describe the saved `network.txt` and `weights.txt` exactly (else the directory
//! was edited inconsistently: an error, exit 2). The same injected miscompilation, quirks and
//! pinning apply.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pimdiff_input::Limit;

use super::case::{CaseContext, PumaCase};
use super::check::CheckOptions;
use super::compile::{PumaSetup, SetupError, Tree};
use super::driver_input::{NETWORK_FILE, WEIGHTS_FILE};
use super::files::PumaDetails;
use super::network::{NetworkError, PumaNetwork};
use super::outcome::PumaOutcome;
use super::PumaNetConfig;
use pimdiff_engine::finding::{FindingMeta, Signature, FINDING_JSON};

/// The largest `network.json` read: names of 64 characters for the network's 4096 items
/// of each kind fit many times over.
pub const MAX_NETWORK_JSON_BYTES: Limit = Limit {
    name: "MAX_NETWORK_JSON_BYTES",
    bytes: 16 << 20,
};
/// The largest driver file read (`network.txt`, `weights.txt`): a matrix holds at most
/// 2^22 elements, each a few characters.
pub const MAX_DRIVER_FILE_BYTES: Limit = Limit {
    name: "MAX_DRIVER_FILE_BYTES",
    bytes: 256 << 20,
};

/// Why a PUMA finding cannot be replayed (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ReproError {
    #[error("{}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: pimdiff_input::InputError,
    },
    #[error("{}: {message}", .path.display())]
    Json { path: PathBuf, message: String },
    #[error("{}: not a PUMA finding (target {target:?})", .path.display())]
    NotPuma {
        path: PathBuf,
        target: Option<String>,
    },
    #[error("finding.json: {0}")]
    Details(String),
    #[error("network.json: {0}")]
    Network(#[from] NetworkError),
    #[error("{file} is not what network.json and the data seed give: the directory was edited")]
    Inconsistent { file: &'static str },
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("the case cannot be prepared: {0}")]
    Prepare(String),
}

/// A replay's result.
#[derive(Debug)]
pub struct Replayed {
    /// The saved signature.
    pub saved: String,
    pub tree: Tree,
    pub outcome: PumaOutcome,
    /// Whether the outcome's signature is the saved one.
    pub reproduces: bool,
}

fn read_text(path: &Path, limit: Limit) -> Result<String, ReproError> {
    let bytes = pimdiff_input::read(path, limit).map_err(|source| ReproError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|_| ReproError::Json {
        path: path.to_path_buf(),
        message: "not UTF-8 text".into(),
    })
}

/// Whether `dir` holds a finding of the PUMA target (its `finding.json` says so).
pub fn is_puma_finding(dir: &Path) -> bool {
    let path = dir.join(FINDING_JSON);
    read_text(&path, pimdiff_input::limits::MAX_META_BYTES)
        .ok()
        .and_then(|t| serde_json::from_str::<FindingMeta>(&t).ok())
        .is_some_and(|m| m.target.as_deref() == Some("puma"))
}

/// Replays the finding in `dir` with the trees `plain` and `sanitize` (each defaulting to
/// the finding's, then `PUMA_DIR` / `PUMA_SANITIZE_DIR`).
pub fn repro(
    dir: &Path,
    plain: Option<&Path>,
    sanitize: Option<&Path>,
    timeout: Duration,
) -> Result<Replayed, ReproError> {
    let meta_path = dir.join(FINDING_JSON);
    let meta: FindingMeta = serde_json::from_str(&read_text(
        &meta_path,
        pimdiff_input::limits::MAX_META_BYTES,
    )?)
    .map_err(|e| ReproError::Json {
        path: meta_path.clone(),
        message: e.to_string(),
    })?;
    if meta.target.as_deref() != Some("puma") {
        return Err(ReproError::NotPuma {
            path: meta_path,
            target: meta.target,
        });
    }
    let details: PumaDetails = serde_json::from_value(meta.details.clone())
        .map_err(|e| ReproError::Details(format!("details: {e}")))?;
    let network = PumaNetwork::from_json(&read_text(
        &dir.join("network.json"),
        MAX_NETWORK_JSON_BYTES,
    )?)?;
    network.check()?;
    let plain = plain
        .map(Path::to_path_buf)
        .or_else(|| Some(details.plain_dir.clone()).filter(|d| d.is_dir()));
    let sanitize = sanitize
        .map(Path::to_path_buf)
        .or_else(|| details.sanitize_dir.clone().filter(|d| d.is_dir()));
    let setup = PumaSetup::locate(plain.as_deref(), sanitize.as_deref(), timeout, 8 << 30)?;
    if setup.tree(details.tree).is_none() {
        return Err(ReproError::Details(format!(
            "the finding shows in the {} tree, and there is none: give --puma-sanitize-dir DIR",
            details.tree.name()
        )));
    }
    let quirks = match details.quirks.as_str() {
        "simulator" => pimdiff_puma::Quirks::SIMULATOR,
        "compiler" => pimdiff_puma::Quirks::COMPILER,
        other => return Err(ReproError::Details(format!("unknown quirks {other:?}"))),
    };
    let ctx = CaseContext {
        setup,
        net: PumaNetConfig::default(),
        check: CheckOptions {
            quirks,
            ..CheckOptions::default()
        },
        sanitize_rate: 0.0,
        inject: details.inject,
    };
    let case = PumaCase {
        network,
        seed: details.data_seed,
    };
    let prepared = ctx.prepare(&case).map_err(ReproError::Prepare)?;
    for (file, made) in [
        (NETWORK_FILE, &prepared.network_text),
        (WEIGHTS_FILE, &prepared.weights_text),
    ] {
        if &read_text(&dir.join(file), MAX_DRIVER_FILE_BYTES)? != made {
            return Err(ReproError::Inconsistent { file });
        }
    }
    // A mismatch signed by its cause reproduces when the cause's repair still makes the compile
    // right (`CaseContext::showing`); any other signature when the run shows it again.
    let (run, reproduces) = match meta.signature.parse::<Signature>() {
        Ok(saved) => ctx.showing(&case, details.tree, &saved),
        Err(_) => (ctx.run_tree(&case, &prepared, details.tree), false),
    };
    Ok(Replayed {
        saved: meta.signature,
        tree: details.tree,
        outcome: run.outcome,
        reproduces,
    })
}
