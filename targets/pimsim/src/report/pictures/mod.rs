//! Pictures of a finding, saved beside its `report.md`, drawn with plotters' SVG backend.
//!
//! - [`DIFF_SVG`] for every mismatch of values: machine − oracle as a heatmap ([`heatmap`]).
//! - [`MAPPING_SVG`] for every multi-core program: cores, array groups and their weight tiles,
//!   NoC transfers ([`mapping`], facts from [`crate::report::chipmap`]).
//!
//! [`planned`] says which pictures a result gets without drawing them (the report links
//! them); [`render_pictures`] draws them; [`write_pictures`] writes them into a directory,
//! each file atomically (a temporary sibling renamed into place). Pictures are deterministic:
//! the same case and result give byte-identical files.

pub mod heatmap;
pub mod mapping;

use std::path::{Path, PathBuf};

use ndarray::ArrayD;
use pimdiff_oracle::{Case, Op};

use crate::check::outcome::Outcome;
use crate::check::CaseResult;
use crate::report::chipmap::chip_map;

/// The heatmap of a mismatch.
pub const DIFF_SVG: &str = "diff.svg";
/// The chip map of a multi-core program.
pub const MAPPING_SVG: &str = "mapping.svg";

/// A picture's file name and a one-line description (the report's alt text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PictureName {
    pub file: &'static str,
    pub what: &'static str,
}

/// A drawn picture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Picture {
    pub name: PictureName,
    pub svg: String,
}

/// Why a picture could not be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum PictureError {
    #[error("cannot draw {file}: {message}")]
    Draw { file: &'static str, message: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The pictures [`render_pictures`] draws for this result, in order.
pub fn planned(case: &Case, result: &CaseResult) -> Vec<PictureName> {
    let mut names = Vec::new();
    if let Some((oracle, _)) = diff_outputs(case, result) {
        names.push(PictureName {
            file: DIFF_SVG,
            what: if oracle.ndim() == 4 {
                "machine − oracle per output channel and pixel"
            } else {
                "machine − oracle per output feature and batch entry"
            },
        });
    }
    if result
        .bundle
        .as_ref()
        .is_some_and(|b| b.program.cores.len() > 1)
    {
        names.push(PictureName {
            file: MAPPING_SVG,
            what: "weight tiles on cores and arrays, NoC transfers",
        });
    }
    names
}

/// Draws the pictures of [`planned`].
pub fn render_pictures(case: &Case, result: &CaseResult) -> Result<Vec<Picture>, PictureError> {
    let mut pictures = Vec::new();
    for name in planned(case, result) {
        let drawn = match name.file {
            DIFF_SVG => diff_svg(case, result),
            _ => mapping_svg(case, result),
        };
        let svg = drawn.map_err(|message| PictureError::Draw {
            file: name.file,
            message,
        })?;
        pictures.push(Picture { name, svg });
    }
    Ok(pictures)
}

/// Draws the pictures of [`planned`] into `dir` (which must exist), each file atomically;
/// returns their paths.
pub fn write_pictures(
    dir: &Path,
    case: &Case,
    result: &CaseResult,
) -> Result<Vec<PathBuf>, PictureError> {
    let mut paths = Vec::new();
    for picture in render_pictures(case, result)? {
        let path = dir.join(picture.name.file);
        write_atomic(&path, picture.svg.as_bytes())?;
        paths.push(path);
    }
    Ok(paths)
}

/// The oracle's and the machine's output of a mismatch of values.
fn diff_outputs<'a>(
    case: &'a Case,
    result: &'a CaseResult,
) -> Option<(&'a ArrayD<i32>, &'a ArrayD<i32>)> {
    match (
        &result.outcome,
        oracle_output(case, result),
        &result.machine_output,
    ) {
        (Outcome::Mismatch(_), Some(o), Some(m)) if o.shape() == m.shape() && o != m => {
            Some((o, m))
        }
        _ => None,
    }
}

/// The oracle's output: the result's, or else the case's `expected` (a hunt moves the
/// oracle's output there before saving a finding).
pub fn oracle_output<'a>(case: &'a Case, result: &'a CaseResult) -> Option<&'a ArrayD<i32>> {
    result.oracle.as_ref().or(case.expected.as_ref())
}

fn diff_svg(case: &Case, result: &CaseResult) -> Result<String, String> {
    let (oracle, machine) = diff_outputs(case, result).ok_or("not a mismatch of values")?;
    let panels = heatmap::panels(oracle, machine);
    if panels.is_empty() {
        return Err("the output has no difference to draw".into());
    }
    heatmap::draw(&panels)
}

fn mapping_svg(case: &Case, result: &CaseResult) -> Result<String, String> {
    let bundle = result.bundle.as_ref().ok_or("no bundle")?;
    let map = chip_map(case, bundle);
    let (mvm, grouped) = match &case.spec.op {
        Op::Mvm(_) => (true, false),
        Op::Conv2d(c) => (false, c.groups > 1),
    };
    mapping::draw(&map, mvm, grouped)
}

/// Writes `bytes` to `path` atomically.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), PictureError> {
    pimdiff_atomic::write_file(path, bytes).map_err(|e| PictureError::Io {
        path: path.to_path_buf(),
        source: e.into(),
    })
}
