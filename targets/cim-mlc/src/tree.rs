//! A CIM-MLC tree of `scripts/build-cim-mlc.sh`: CIM-MLC's sources, the pinned Python
//! environment and pimdiff's driver, described by its `manifest.json` (written last, so a tree
//! with one is complete).
//!
//! A hunt refuses, before any case runs, a directory that is not such a tree, a tree whose
//! Python environment is gone or broken, and an absent one — each with the command that fixes
//! it — because a broken set-up would otherwise show as a crash of every case.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The environment variable naming the tree when `--cim-mlc-dir` is not given.
pub const TREE_VAR: &str = "CIM_MLC_DIR";

/// The command that builds a tree (and prints its path last).
pub const BUILD: &str = "scripts/build-cim-mlc.sh";

/// A checked tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    /// The tree's directory (absolute).
    pub dir: PathBuf,
    /// The manifest's key (a hash of everything the tree was built from).
    pub key: String,
    /// The source patches applied (the build's own, fixes, a mutation), in order.
    pub patches: Vec<String>,
    /// The interpreter of the pinned environment.
    pub python: PathBuf,
    /// `stubs` or `full`: how torch's CUDA libraries are provided.
    pub torch_cuda: String,
}

/// Why a directory is not a usable tree; each says how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("no CIM-MLC tree given: pass --cim-mlc-dir DIR or set {TREE_VAR} (build one with `{BUILD}`, which prints its path last)")]
    NotGiven,
    #[error("{dir} is not a CIM-MLC tree of {BUILD} (no manifest.json of kind pimdiff-cim-mlc-tree, format 1: {why}); build one with `{BUILD}` and pass the path it prints")]
    NotATree { dir: PathBuf, why: String },
    #[error("the CIM-MLC tree {dir} has no {file}: it is incomplete; rebuild it with `{BUILD}`")]
    Incomplete { dir: PathBuf, file: &'static str },
    #[error("the Python environment of the CIM-MLC tree {dir} is missing or broken ({python}: {why}); rebuild it with `{BUILD}` (it recreates the environment under ~/.cache/pimdiff)")]
    Python {
        dir: PathBuf,
        python: PathBuf,
        why: String,
    },
}

#[derive(Deserialize)]
struct Manifest {
    kind: String,
    format: u32,
    key: String,
    #[serde(default)]
    patches: Vec<ManifestPatch>,
    python: ManifestPython,
}

#[derive(Deserialize)]
struct ManifestPatch {
    name: String,
}

#[derive(Deserialize)]
struct ManifestPython {
    interpreter: PathBuf,
    #[serde(default)]
    torch_cuda: String,
}

impl Tree {
    /// The tree `given` names, else `$CIM_MLC_DIR`; checked (see the module docs), its
    /// interpreter run once (`-c 'import torch, onnx, onnxruntime'`, a few seconds).
    pub fn locate(given: Option<&Path>) -> Result<Tree, TreeError> {
        let dir = match given {
            Some(d) => d.to_path_buf(),
            None => std::env::var_os(TREE_VAR)
                .map(PathBuf::from)
                .filter(|d| !d.as_os_str().is_empty())
                .ok_or(TreeError::NotGiven)?,
        };
        let tree = Tree::open(&dir)?;
        tree.check_python()?;
        Ok(tree)
    }

    /// The tree at `dir`, from its manifest and files (the interpreter is not run).
    pub fn open(dir: &Path) -> Result<Tree, TreeError> {
        let dir = std::fs::canonicalize(dir).map_err(|e| TreeError::NotATree {
            dir: dir.to_path_buf(),
            why: e.to_string(),
        })?;
        let not_a_tree = |why: String| TreeError::NotATree {
            dir: dir.clone(),
            why,
        };
        let bytes = pimdiff_input::read(
            &dir.join("manifest.json"),
            pimdiff_input::limits::MAX_TREE_MANIFEST_BYTES,
        )
        .map_err(|e| not_a_tree(e.to_string()))?;
        let m: Manifest = serde_json::from_slice(&bytes)
            .map_err(|e| not_a_tree(format!("manifest.json: {e}")))?;
        if m.kind != "pimdiff-cim-mlc-tree" || m.format != 1 {
            return Err(not_a_tree(format!(
                "manifest.json is of kind {:?}, format {}",
                m.kind, m.format
            )));
        }
        for file in ["src/main.py", "driver/driver.py", "python"] {
            if !dir.join(file).exists() {
                return Err(TreeError::Incomplete {
                    dir: dir.clone(),
                    file,
                });
            }
        }
        Ok(Tree {
            key: m.key,
            patches: m.patches.into_iter().map(|p| p.name).collect(),
            python: m.python.interpreter,
            torch_cuda: m.python.torch_cuda,
            dir,
        })
    }

    /// Runs the environment's interpreter on the imports the driver needs.
    fn check_python(&self) -> Result<(), TreeError> {
        let broken = |why: String| TreeError::Python {
            dir: self.dir.clone(),
            python: self.python.clone(),
            why,
        };
        if !self.python.is_file() {
            return Err(broken("no such file".into()));
        }
        let out = std::process::Command::new(&self.python)
            .args(["-c", "import torch, onnx, onnxruntime, numpy"])
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| broken(e.to_string()))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            return Err(broken(format!("{}: {last}", out.status)));
        }
        Ok(())
    }

    /// The driver as a server (`--serve`), run by the environment's interpreter.
    pub fn serve_command(&self) -> (PathBuf, Vec<String>) {
        (
            self.python.clone(),
            vec![
                self.dir.join("driver/driver.py").display().to_string(),
                "--tree".to_string(),
                self.dir.display().to_string(),
                "--serve".to_string(),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_that_are_not_trees_are_refused_with_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let e = Tree::open(tmp.path()).unwrap_err();
        assert!(matches!(e, TreeError::NotATree { .. }), "{e}");
        assert!(e.to_string().contains(BUILD), "{e}");
        std::fs::write(
            tmp.path().join("manifest.json"),
            r#"{"kind":"something-else","format":1,"key":"k","python":{"interpreter":"/x"}}"#,
        )
        .unwrap();
        assert!(Tree::open(tmp.path())
            .unwrap_err()
            .to_string()
            .contains("something-else"));
        std::fs::write(
            tmp.path().join("manifest.json"),
            r#"{"kind":"pimdiff-cim-mlc-tree","format":1,"key":"k","python":{"interpreter":"/nonexistent/python"}}"#,
        )
        .unwrap();
        assert!(matches!(
            Tree::open(tmp.path()),
            Err(TreeError::Incomplete {
                file: "src/main.py",
                ..
            })
        ));
        for f in ["src/main.py", "driver/driver.py", "python"] {
            let p = tmp.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let tree = Tree::open(tmp.path()).unwrap();
        assert_eq!(tree.key, "k");
        let e = tree.check_python().unwrap_err();
        assert!(
            matches!(e, TreeError::Python { .. }) && e.to_string().contains(BUILD),
            "{e}"
        );
    }
}
