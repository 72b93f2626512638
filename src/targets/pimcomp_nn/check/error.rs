//! Why a PIMCOMP-NN program and its side table cannot be checked (bad input, exit 2).

use std::path::PathBuf;

/// Every way the two input files can be unusable. Findings (mismatches, operand
/// disagreements) are not errors: they are in the verdict.
#[derive(Debug, thiserror::Error)]
pub enum PimcompError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {what} is larger than the limit of {limit} bytes", path.display())]
    TooLarge {
        path: PathBuf,
        what: &'static str,
        limit: u64,
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
