//! Why a PIMCOMP-NN program and its side table cannot be checked (bad input, exit 2).

use std::path::{Path, PathBuf};

use pimdiff_input::InputError;

/// Every way the two input files can be unusable. Findings (mismatches, operand
/// disagreements) are not errors: they are in the verdict.
#[derive(Debug, thiserror::Error)]
pub enum PimcompError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The bounded reader refused `what` (empty, above its limit, a gzip bomb, truncated
    /// gzip, ...).
    #[error("{}: {what}: {source}", path.display())]
    Input {
        path: PathBuf,
        what: &'static str,
        source: pimdiff_input::InputError,
    },
    #[error("{}: not a valid side table: {message}", path.display())]
    Table { path: PathBuf, message: String },
    #[error("cannot load program {}: {message}", path.display())]
    Program { path: PathBuf, message: String },
    /// The table belongs to another compile: opcodes stop lining up.
    #[error(
        "the side table does not belong to this program: core {core}, instruction {index}: program has `{program}`, table has {table} (table instruction {table_index})"
    )]
    Misaligned {
        core: u32,
        index: u32,
        program: String,
        table: String,
        table_index: u32,
    },
    #[error("side table: {0}")]
    Model(String),
    #[error("cannot build the run: {0}")]
    Setup(String),
}

impl PimcompError {
    /// A refusal of the bounded reader for `path` (holding `what`): an operating-system error
    /// as [`PimcompError::Io`], anything else as [`PimcompError::Input`].
    pub fn input(path: &Path, what: &'static str, e: InputError) -> PimcompError {
        match e {
            InputError::Io(source) => PimcompError::Io {
                path: path.to_path_buf(),
                source,
            },
            source => PimcompError::Input {
                path: path.to_path_buf(),
                what,
                source,
            },
        }
    }
}
