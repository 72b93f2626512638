//! Running `puma-driver` on one case as a fuzzer runs its target: in a temporary directory of
//! its own, through [`crate::process`] (own process group killed at its CPU-time limit, at ten
//! times it of wall time, or at the memory limit; bounded output), with a fixed environment and
//! address-space randomization off.
//!
//! The compiler orders its operations by their heap addresses (`docs/puma.md`, "Heap order"),
//! so its programs depend on the heap's layout: with ASLR off (`personality(ADDR_NO_RANDOMIZE)`)
//! and the environment fixed, the same files give the same programs every time, and every
//! finding records the [`Pinning`] it ran under.
//!
//! Two trees of `scripts/build-puma.sh` are two compilers ([`Tree`]): the plain tree (`-O1
//! -g`) is hunted; its crashes are symbolized by the LD_PRELOAD shim built beside it
//! (`lib/libpimdiff-shim.so`, which prints `PIMDIFF-FRAME` lines that [`super::frames`]
//! resolves with addr2line). The sanitizer tree (AddressSanitizer and UndefinedBehaviorSanitizer)
//! runs without the shim (ASan must be the first library loaded, and prints its own frames),
//! with leak detection off (the driver's model is destroyed, but the compiler's own caches
//! are not findings) and UBSan halting on the first error, so that a report ends the run.
//!
//! A coverage tree (`scripts/build-puma.sh --coverage`) is hunted as the plain tree: with
//! [`PumaSetup::coverage`] set, each plain compile also gets an edge map and the hunt's
//! `GCOV_PREFIX` (`docs/coverage.md`). These measure the compile without changing it, so the
//! [`Pinning`] a finding records leaves them out.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::driver_input::{NETWORK_FILE, WEIGHTS_FILE};
use pimdiff_engine::coverage::{CoverageRun, EdgeMap};
use pimdiff_engine::hunt::Edges;
use pimdiff_engine::process::{Environment, Invocation, Limits, Pinning, ProcessError, Status};

/// The shim's path inside a plain tree (built by `scripts/build-puma.sh`).
pub const SHIM: &str = "lib/libpimdiff-shim.so";
/// The driver's path inside a tree.
pub const DRIVER: &str = "bin/puma-driver";
/// The sanitizer runtime options of every sanitizer-tree run.
pub const ASAN_OPTIONS: &str =
    "detect_leaks=0:abort_on_error=0:handle_abort=0:allocator_may_return_null=0:symbolize=1";
/// UndefinedBehaviorSanitizer stops at its first report (by default it prints and goes on,
/// and the run would look like a success).
pub const UBSAN_OPTIONS: &str = "halt_on_error=1:print_stacktrace=1";

/// One of the two builds of the compiler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tree {
    Plain,
    Sanitize,
}

impl Tree {
    pub fn name(self) -> &'static str {
        match self {
            Tree::Plain => "plain",
            Tree::Sanitize => "sanitize",
        }
    }
}

/// Where the compiler's trees are and how a compile may run.
#[derive(Clone, Debug)]
pub struct PumaSetup {
    /// The plain tree (`src/libpuma.so`, `include/puma.h`, `bin/puma-driver`).
    pub plain: PathBuf,
    /// The sanitizer tree, when there is one.
    pub sanitize: Option<PathBuf>,
    /// CPU time of one compile (its process group's); ten times it of wall time ends a compile
    /// blocked without using CPU.
    pub timeout: Duration,
    pub max_rss_bytes: u64,
    /// Measuring coverage (the plain tree is a `scripts/build-puma.sh --coverage` tree): each
    /// plain compile records its edges, and its gcov counts go under the hunt's prefix.
    pub coverage: Option<CoverageRun>,
}

/// The compiler's sources that are not its own: none (the tree's only C++ is the compiler's;
/// the driver and the shim live outside it).
pub const VENDORED: [&str; 0] = [];

/// Why a PUMA set-up is unusable (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(
        "no PUMA compiler: give --puma-dir DIR or set PUMA_DIR (a tree of scripts/build-puma.sh)"
    )]
    NoTree,
    #[error("{}: not a tree of scripts/build-puma.sh (no executable {DRIVER})", .0.display())]
    NotATree(PathBuf),
}

/// The tree a flag or variable names, checked to hold the driver.
fn tree_at(path: PathBuf) -> Result<PathBuf, SetupError> {
    let path = path.canonicalize().unwrap_or(path);
    if !path.join(DRIVER).is_file() {
        return Err(SetupError::NotATree(path));
    }
    Ok(path)
}

fn env_path(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

impl PumaSetup {
    /// The trees: `plain` (else `$PUMA_DIR`), `sanitize` (else `$PUMA_SANITIZE_DIR`, else the
    /// plain tree's sibling `../sanitize` when it holds a driver, as `scripts/build-puma.sh`
    /// lays them out).
    pub fn locate(
        plain: Option<&Path>,
        sanitize: Option<&Path>,
        timeout: Duration,
        max_rss_bytes: u64,
    ) -> Result<PumaSetup, SetupError> {
        let plain = plain
            .map(Path::to_path_buf)
            .or_else(|| env_path("PUMA_DIR"))
            .ok_or(SetupError::NoTree)?;
        let plain = tree_at(plain)?;
        let sanitize = match sanitize
            .map(Path::to_path_buf)
            .or_else(|| env_path("PUMA_SANITIZE_DIR"))
        {
            Some(s) => Some(tree_at(s)?),
            None => plain
                .parent()
                .map(|p| p.join("sanitize"))
                .filter(|s| s != &plain && s.join(DRIVER).is_file()),
        };
        Ok(PumaSetup {
            plain,
            sanitize,
            timeout,
            max_rss_bytes,
            coverage: None,
        })
    }

    /// The directory of `tree`, if there is one.
    pub fn tree(&self, tree: Tree) -> Option<&Path> {
        match tree {
            Tree::Plain => Some(&self.plain),
            Tree::Sanitize => self.sanitize.as_deref(),
        }
    }

    /// The pinning of a run in `tree` (`dir` its directory): the fixed environment, ASLR
    /// off, the shim preloaded in the plain tree, the sanitizers' options in the other.
    pub fn pinning(tree: Tree, dir: &Path) -> Pinning {
        let Environment::Exactly { mut vars } = Environment::fixed() else {
            unreachable!("Environment::fixed is exact")
        };
        let mut preload = Vec::new();
        match tree {
            Tree::Plain => {
                let shim = dir.join(SHIM);
                if shim.is_file() {
                    preload.push(shim);
                }
            }
            Tree::Sanitize => {
                vars.insert("ASAN_OPTIONS".into(), ASAN_OPTIONS.into());
                vars.insert("UBSAN_OPTIONS".into(), UBSAN_OPTIONS.into());
            }
        }
        Pinning {
            environment: Environment::Exactly { vars },
            aslr_disabled: true,
            preload,
        }
    }
}

/// One compile: how it ended, its output (the last 64 KiB of each stream) and its directory
/// (the driver's two files and everything the compiler wrote), kept while this value lives.
#[derive(Clone, Debug)]
pub struct CompileRun {
    pub tree: Tree,
    pub status: Status,
    pub stdout: String,
    pub stderr: String,
    pub seconds: f64,
    pub pinning: Pinning,
    pub dir: Arc<tempfile::TempDir>,
    /// The edges the compile entered, when coverage is measured (plain tree only).
    pub edges: Option<Edges>,
}

impl CompileRun {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Runs the driver of `tree` on the two files (`network_text`, `weights_text`) in a fresh
/// directory. `Err` only when the harness cannot run it at all (no tree, no directory, no
/// spawn): that is a poisoned case, not a finding.
pub fn compile(
    setup: &PumaSetup,
    tree: Tree,
    network_text: &str,
    weights_text: &str,
) -> Result<CompileRun, CompileSetupError> {
    let dir = setup.tree(tree).ok_or(CompileSetupError::NoTree(tree))?;
    let invocation = Invocation::new(dir.join(DRIVER), "puma-case-")?;
    let write = |name: &str, text: &str| {
        let path = invocation.dir().join(name);
        std::fs::write(&path, text).map_err(|source| CompileSetupError::Write { path, source })
    };
    write(NETWORK_FILE, network_text)?;
    write(WEIGHTS_FILE, weights_text)?;
    let pinning = PumaSetup::pinning(tree, dir);
    let measure = setup.coverage.as_ref().filter(|_| tree == Tree::Plain);
    let edge_map = match measure {
        Some(_) => Some(EdgeMap::create(invocation.dir()).map_err(|source| {
            CompileSetupError::Write {
                path: invocation
                    .dir()
                    .join(pimdiff_engine::coverage::edge_map::EDGE_MAP_FILE),
                source,
            }
        })?),
        None => None,
    };
    let run = invocation
        .args([NETWORK_FILE, WEIGHTS_FILE])
        .limits(Limits {
            rss_bytes: Some(setup.max_rss_bytes),
            ..Limits::cpu_time(setup.timeout)
        })
        .pinning(measured(&pinning, measure, edge_map.as_ref()))
        .run()?;
    Ok(CompileRun {
        tree,
        status: run.status,
        stdout: run.stdout.text(),
        stderr: run.stderr.text(),
        seconds: run.wall.as_secs_f64(),
        pinning,
        dir: Arc::new(run.dir),
        edges: edge_map.and_then(|m| m.read().ok()),
    })
}

/// `pinning` plus, when coverage is measured, the edge map and the gcov prefix.
fn measured(pinning: &Pinning, coverage: Option<&CoverageRun>, map: Option<&EdgeMap>) -> Pinning {
    let mut p = pinning.clone();
    if let Environment::Exactly { vars } = &mut p.environment {
        vars.extend(map.map(EdgeMap::environment));
        vars.extend(coverage.map(CoverageRun::environment).unwrap_or_default());
    }
    p
}

/// Why a compile could not be run.
#[derive(Debug, thiserror::Error)]
pub enum CompileSetupError {
    #[error("no {} tree of the PUMA compiler", .0.name())]
    NoTree(Tree),
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The command line that repeats a compile in a directory holding the two files: what a
/// person types (the environment, ASLR off with `setarch -R`, the shim).
pub fn command_line(setup: &PumaSetup, tree: Tree) -> String {
    let Some(dir) = setup.tree(tree) else {
        return String::new();
    };
    let pinning = PumaSetup::pinning(tree, dir);
    let mut env = String::from("env -i LC_ALL=C LANG=C TZ=UTC SOURCE_DATE_EPOCH=0 PATH=\"$PATH\"");
    if let Some(shim) = pinning.preload.first() {
        env.push_str(&format!(" LD_PRELOAD={}", shim.display()));
    }
    if tree == Tree::Sanitize {
        env.push_str(&format!(
            " ASAN_OPTIONS={ASAN_OPTIONS} UBSAN_OPTIONS={UBSAN_OPTIONS}"
        ));
    }
    format!(
        "{env} setarch \"$(uname -m)\" -R {} {NETWORK_FILE} {WEIGHTS_FILE}",
        dir.join(DRIVER).display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pimdiff_engine::coverage::edge_map::EDGE_MAP_ENV;

    /// The measurement's variables reach the compile and nothing else: the pinning a finding
    /// records stays the plain tree's.
    #[test]
    fn coverage_adds_the_edge_map_and_the_gcov_prefix_to_the_run_only() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("coverage-source.txt"), "/trees/coverage\n").unwrap();
        let run = CoverageRun::for_tree(tmp.path(), Path::new("/hunt"), &VENDORED).unwrap();
        let map = EdgeMap::create(tmp.path()).unwrap();
        let pinning = PumaSetup::pinning(Tree::Plain, Path::new("/trees/coverage"));
        let m = measured(&pinning, Some(&run), Some(&map));
        let vars = |p: &Pinning| match &p.environment {
            Environment::Exactly { vars } => vars.clone(),
            other => panic!("{other:?}"),
        };
        let (plain, with) = (vars(&pinning), vars(&m));
        assert_eq!(with["GCOV_PREFIX"], "/hunt/coverage-data");
        assert_eq!(
            with[EDGE_MAP_ENV],
            tmp.path().join("edges.map").to_string_lossy()
        );
        assert_eq!(with.len(), plain.len() + 2);
        assert!(!plain.contains_key("GCOV_PREFIX") && !plain.contains_key(EDGE_MAP_ENV));
        assert_eq!(m.preload, pinning.preload);
        assert_eq!(m.aslr_disabled, pinning.aslr_disabled);
        assert_eq!(measured(&pinning, None, None), pinning);
    }
}
