//! How much of a compiler under test a hunt reached: the edges each case entered (for
//! coverage-guided generation) and the line and branch coverage of the compiler's own source
//! over a whole hunt (for `summary.json`'s `coverage`). See `docs/coverage.md`.
//!
//! Two instruments because they answer two questions at two prices: a per-case edge set must
//! cost next to nothing per case (a byte map in a shared file, written by the compiler's
//! `-fsanitize-coverage=trace-pc` callback: [`edges`]), while the totals people read are
//! gcov's line and branch counts, merged once at the end of the hunt ([`gcov`]).

pub mod edges;
pub mod gcov;

use std::path::Path;
use std::sync::{Arc, Mutex};

pub use edges::{EdgeMap, EdgeSet, EDGE_MAP_BYTES};
pub use gcov::{Coverage, CoverageError, FileCoverage, GcovLayout, Totals};

/// The file beside a coverage build's binary that names its kept source tree (written by
/// `scripts/build-pimcomp.sh --coverage`).
pub const SOURCE_POINTER: &str = "coverage-source.txt";

/// The directory of a hunt's output that its compiles' gcov counts go under (`GCOV_PREFIX`).
pub const DATA_DIR: &str = "coverage-data";

/// What a hunt that measures coverage carries: where its gcov counts go, and the union of the
/// edges its sweep's cases entered.
#[derive(Clone, Debug)]
pub struct CoverageRun {
    pub layout: GcovLayout,
    edges_seen: Arc<Mutex<EdgeSet>>,
}

impl CoverageRun {
    /// The measurement of a hunt writing into `out` with the coverage build `bin`; `excluded`
    /// names the vendored paths of its source that are not the compiler's own.
    pub fn for_build(
        bin: &Path,
        out: &Path,
        excluded: &[&str],
    ) -> Result<CoverageRun, CoverageError> {
        let dir = bin.parent().unwrap_or(Path::new("."));
        let pointer = dir.join(SOURCE_POINTER);
        let text =
            std::fs::read_to_string(&pointer).map_err(|source| CoverageError::NotABuild {
                path: pointer.clone(),
                source,
            })?;
        let source_root = std::path::PathBuf::from(text.trim());
        let prefix =
            std::path::absolute(out.join(DATA_DIR)).map_err(|source| CoverageError::Io {
                path: out.to_path_buf(),
                source,
            })?;
        Ok(CoverageRun {
            layout: GcovLayout {
                source_root,
                prefix,
                excluded: excluded.iter().map(|e| e.to_string()).collect(),
            },
            edges_seen: Arc::default(),
        })
    }

    /// Adds one case's edges to the hunt's union.
    pub fn record(&self, edges: &EdgeSet) {
        if let Ok(mut seen) = self.edges_seen.lock() {
            seen.union_with(edges);
        }
    }

    /// The hunt's coverage: gcov's totals and the number of distinct edges entered.
    pub fn report(&self) -> Result<Coverage, CoverageError> {
        let mut c = Coverage::collect(&self.layout)?;
        c.edges_hit = self.edges_seen.lock().ok().map(|s| s.len() as u64);
        Ok(c)
    }
}
