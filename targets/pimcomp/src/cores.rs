//! The cores a PIMCOMP-NN program names against the `core_cnt` its own config declares.
//!
//! PIMCOMP-NN writes `config.core_cnt` as the number of cores it wrote instructions for, but
//! names each core `core<j>` by its index `j` on the whole mesh (backend/ElementPlacement.cpp
//! writes the count after the cores). A program naming `core5` with `core_cnt = 2` is a wrong
//! program for the chip its own config describes, so the hunt reports it as a finding of its
//! own kind (`core-count`), and still checks its numerics: [`raise_core_cnt`] writes a copy of
//! the program whose `core_cnt` is the highest core index + 1, which our loader accepts (the
//! cores in between are idle), so that other defects of the same network are not masked.

use pimdiff_engine::finding::{Kind, Signature};
use std::io::Write;
use std::path::Path;

use pimdiff_input::limits::MAX_PROGRAM_TREE_BYTES;
use serde_json::Value;

/// What a program's cores are, against its config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreCensus {
    /// `config.core_cnt` as written.
    pub core_cnt: u64,
    /// How many `core<j>` entries the program has.
    pub used: u64,
    /// The highest `j` of a `core<j>` entry.
    pub max_index: Option<u64>,
}

impl CoreCensus {
    /// Whether a core index is at or beyond `core_cnt`.
    pub fn beyond(&self) -> bool {
        self.max_index.is_some_and(|m| m >= self.core_cnt)
    }

    /// The deduplication key of the finding: how the highest index and the number of cores
    /// used compare with `core_cnt` (not the numbers themselves, which vary per network).
    pub fn signature(&self, pipeline: &str) -> Signature {
        let used = match self.used.cmp(&self.core_cnt) {
            std::cmp::Ordering::Less => "<",
            std::cmp::Ordering::Equal => "=",
            std::cmp::Ordering::Greater => ">",
        };
        Signature::new(
            Kind::CoreCount,
            format!("{pipeline}/max-index>=core_cnt/used{used}core_cnt"),
        )
    }

    /// One line for people.
    pub fn detail(&self) -> String {
        format!(
            "the program names core {} but its config declares core_cnt = {} ({} cores used)",
            self.max_index.unwrap_or(0),
            self.core_cnt,
            self.used
        )
    }
}

/// Why a program's cores cannot be counted (the check then reports its own error).
#[derive(Debug, thiserror::Error)]
pub enum CoresError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// The bounded reader refused the file (missing, empty, too large, a gzip bomb, ...).
    #[error("{path}: {source}")]
    Input {
        path: String,
        source: pimdiff_input::InputError,
    },
    #[error("{path}: not a JSON program: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("{path}: {what}")]
    Shape { path: String, what: &'static str },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CoresError + '_ {
    move |source| CoresError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Reads a program file (gzip or plain JSON) through the bounded reader
/// ([`MAX_PROGRAM_TREE_BYTES`] compressed and inflated, and the gzip ratio limit).
fn read_program(path: &Path) -> Result<serde_json::Map<String, Value>, CoresError> {
    let bytes = pimdiff_input::read_gzip_or_plain(path, MAX_PROGRAM_TREE_BYTES).map_err(|e| {
        CoresError::Input {
            path: path.display().to_string(),
            source: e,
        }
    })?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(CoresError::Shape {
            path: path.display().to_string(),
            what: "not a JSON object",
        }),
        Err(source) => Err(CoresError::Json {
            path: path.display().to_string(),
            source,
        }),
    }
}

fn census_of(path: &Path, doc: &serde_json::Map<String, Value>) -> Result<CoreCensus, CoresError> {
    let core_cnt = doc
        .get("config")
        .and_then(|c| c.get("core_cnt"))
        .and_then(Value::as_u64)
        .ok_or_else(|| CoresError::Shape {
            path: path.display().to_string(),
            what: "no config.core_cnt",
        })?;
    let indices: Vec<u64> = doc
        .keys()
        .filter_map(|k| k.strip_prefix("core"))
        .filter_map(|n| n.parse::<u64>().ok())
        .collect();
    Ok(CoreCensus {
        core_cnt,
        used: indices.len() as u64,
        max_index: indices.iter().copied().max(),
    })
}

/// The census of the program at `path`.
pub fn census(path: &Path) -> Result<CoreCensus, CoresError> {
    let doc = read_program(path)?;
    census_of(path, &doc)
}

/// Writes `program` to `dest` (gzip) with `config.core_cnt` raised to the highest core
/// index + 1; returns the census of the original.
pub fn raise_core_cnt(program: &Path, dest: &Path) -> Result<CoreCensus, CoresError> {
    let mut doc = read_program(program)?;
    let census = census_of(program, &doc)?;
    let raised = census.max_index.map_or(census.core_cnt, |m| m + 1);
    if let Some(Value::Object(config)) = doc.get_mut("config") {
        config.insert("core_cnt".into(), raised.into());
    }
    let file = std::fs::File::create(dest).map_err(io(dest))?;
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    serde_json::to_writer(&mut gz, &doc).map_err(|source| CoresError::Json {
        path: dest.display().to_string(),
        source,
    })?;
    gz.finish().and_then(|mut f| f.flush()).map_err(io(dest))?;
    Ok(census)
}
