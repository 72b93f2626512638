//! Findings and regression cases on disk: atomic directory writes, `finding.json` /
//! `expect.json`, discovery of case directories, and replay against recorded expectations.
//!
//! A *finding directory* is a case directory (`case-format.md`: `case.json`, `input.npy`,
//! `weight.npy`, `bias.npy`, `expected.npy` = the oracle's output, so the case checks itself)
//! plus `bundle/` (the failing program, crossbars and io manifest), `report.md` and
//! `finding.json` ([`FindingMeta`]). A *regression entry* of `corpus/` is a case directory with
//! either a `finding.json` or a smaller `expect.json` ([`ExpectFile`]) saying what the case
//! must do today.
//!
//! Nothing is ever half-written: every directory is built under a temporary sibling whose name
//! starts with [`TEMP_PREFIX`] (a dot, so [`discover`] and every other reader skips it), synced,
//! then renamed into place (`pimdiff_atomic::AtomicDir`). A process killed in the middle leaves
//! only such a temporary directory, which `pimdiff_atomic::clean_temp` removes on the next run.

mod entry;
mod meta;

use std::io;
use std::path::{Path, PathBuf};

use pimdiff_engine::finding::{ExpectationParseError, META_FORMAT};

pub use self::entry::*;
pub use self::meta::*;

pub use pimdiff_atomic::TEMP_PREFIX;
/// The expectation file of a hand-made regression entry.
pub const EXPECT_JSON: &str = "expect.json";
/// The readable report of a finding.
pub const REPORT_MD: &str = "report.md";
/// The compiled program of a finding.
pub const BUNDLE_DIR: &str = "bundle";

/// What can go wrong reading or writing corpus files. Every variant names the path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CorpusError {
    /// An operating-system error on `path`.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    /// `finding.json` / `expect.json` is not valid JSON or has a field of the wrong type.
    #[error("{}: {message}", path.display())]
    Json { path: PathBuf, message: String },
    /// A metadata file of a format this version does not know.
    #[error("{}: field `format`: format {found} is not supported (this reader knows format {META_FORMAT})", path.display())]
    UnsupportedFormat { path: PathBuf, found: u32 },
    /// An `expect` string that does not parse (see [`Expectation`]).
    #[error("{}: field `expect`: {problem}", path.display())]
    BadExpectation {
        path: PathBuf,
        problem: ExpectationParseError,
    },
    /// A path given to [`discover`] is neither a case directory nor a directory holding any.
    #[error("{}: not a case directory (no case.json) and holds no case directories", path.display())]
    NoCases { path: PathBuf },
    /// The destination of an atomic write already exists.
    #[error("{}: already exists; refusing to overwrite it", path.display())]
    Exists { path: PathBuf },
    /// The bounded reader refused a metadata file (empty, above `MAX_META_BYTES`, not a
    /// regular file).
    #[error("{}: {source}", path.display())]
    Input {
        path: PathBuf,
        source: pimdiff_input::InputError,
    },
}

impl From<pimdiff_atomic::Error> for CorpusError {
    fn from(e: pimdiff_atomic::Error) -> CorpusError {
        match e {
            pimdiff_atomic::Error::Io { path, source } => CorpusError::Io { path, source },
            pimdiff_atomic::Error::Exists { path } => CorpusError::Exists { path },
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> CorpusError + '_ {
    move |source| CorpusError::Io {
        path: path.to_path_buf(),
        source,
    }
}
