//! How much of a compiler under test a hunt reached: the edges each case entered (for
//! coverage-guided generation) and the line and branch coverage of the compiler's own source
//! over a whole hunt (for `summary.json`'s `coverage`). See `docs/coverage.md`.
//!
//! Two instruments because they answer two questions at two prices: a per-case edge set must
//! cost next to nothing per case (a byte map in a shared file, written by the compiler's
//! `-fsanitize-coverage=trace-pc` callback: [`edges`]), while the totals people read are
//! gcov's line and branch counts, merged once at the end of the hunt ([`gcov`]).

pub mod edge_map;
pub mod edges;
pub mod gcov;

use std::path::Path;
use std::sync::{Arc, Mutex};

pub use edge_map::{EdgeMap, EDGE_MAP_BYTES};
pub use edges::Edges;
pub use gcov::{Coverage, CoverageError, FileCoverage, GcovLayout, Totals};

/// The file of a coverage build that names its kept source tree (written by
/// `scripts/build-pimcomp.sh --coverage` beside the binary, by `scripts/build-puma.sh
/// --coverage` at the top of the tree).
pub const SOURCE_POINTER: &str = "coverage-source.txt";

/// The directory of a hunt's output that its compiles' gcov counts go under (`GCOV_PREFIX`).
pub const DATA_DIR: &str = "coverage-data";

/// What a hunt that measures coverage carries: where its gcov counts go, and the union of the
/// edges its sweep's cases entered.
#[derive(Clone, Debug)]
pub struct CoverageRun {
    pub layout: GcovLayout,
    edges_seen: Arc<Mutex<Edges>>,
}

impl CoverageRun {
    /// The measurement of a hunt writing into `out` with the coverage build `bin` (its
    /// pointer file beside it); `excluded` names the vendored paths of its source that are not
    /// the compiler's own.
    pub fn for_build(
        bin: &Path,
        out: &Path,
        excluded: &[&str],
    ) -> Result<CoverageRun, CoverageError> {
        CoverageRun::for_tree(bin.parent().unwrap_or(Path::new(".")), out, excluded)
    }

    /// As [`CoverageRun::for_build`], for a build whose pointer file is in `dir` (a PUMA
    /// coverage tree, where the compiler is a library and the program a driver of ours).
    pub fn for_tree(
        dir: &Path,
        out: &Path,
        excluded: &[&str],
    ) -> Result<CoverageRun, CoverageError> {
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

    /// The variables a compile of the build runs with: its gcov counts go under the hunt's
    /// prefix. Every compile of a hunt shares the one prefix: gcov's runtime locks a `.gcda`
    /// file while it adds a run's counts to it, so parallel compiles add up, never clobber.
    pub fn environment(&self) -> Vec<(String, String)> {
        vec![(
            "GCOV_PREFIX".to_string(),
            self.layout.prefix.to_string_lossy().into_owned(),
        )]
    }

    /// Adds one case's edges to the hunt's union.
    pub fn record(&self, edges: &Edges) {
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

    /// The hunt's coverage for `summary.json`; a failure to read it is said on stderr and
    /// leaves the summary without coverage (the hunt's findings stand).
    pub fn summary(&self) -> Option<Coverage> {
        match self.report() {
            Ok(report) => Some(report),
            Err(e) => {
                eprintln!("warning: no coverage in the summary: {e}");
                None
            }
        }
    }

    /// Writes gcovr's HTML report of the hunt into `dir` (gcovr from `$PATH`, else from
    /// `scripts/setup-python.sh`'s environment); a failure is said on stderr, the hunt's
    /// result stands.
    pub fn write_html(&self, dir: &Path) {
        let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/python/bin/gcovr");
        let gcovr = if venv.is_file() {
            venv
        } else {
            std::path::PathBuf::from("gcovr")
        };
        match gcov::html_report(&self.layout, &gcovr, dir) {
            Ok(()) => eprintln!("coverage report: {}", dir.join("index.html").display()),
            Err(e) => eprintln!(
                "warning: no HTML coverage report ({}): {e}",
                gcovr.display()
            ),
        }
    }
}
