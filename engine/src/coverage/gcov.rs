//! Line and branch coverage of a compiler's own source over a whole hunt, from gcov.
//!
//! The compiler is built with `--coverage` (`scripts/build-pimcomp.sh --coverage`,
//! `scripts/build-puma.sh --coverage`); each of its runs adds its counts to `.gcda` files
//! under the hunt's `GCOV_PREFIX` directory. At the end, [`Coverage::collect`] puts each object's `.gcno` beside its `.gcda`, runs
//! `gcov --json-format --stdout` once over all of them, and merges the per-translation-unit
//! records by source file and line (a header's lines appear once per unit that includes it):
//! a line is hit when any unit ran it; a line's branches are merged by their index, one taken
//! when any unit took it. Only the compiler's own files count: those under its source root,
//! minus the vendored libraries the caller names (PIMCOMP-NN's zlib and JSON parser; PUMA
//! vendors none).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

/// Lines and branches, in total and reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub lines_total: u64,
    pub lines_hit: u64,
    pub branches_total: u64,
    pub branches_hit: u64,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.lines_total += o.lines_total;
        self.lines_hit += o.lines_hit;
        self.branches_total += o.branches_total;
        self.branches_hit += o.branches_hit;
    }
}

/// One source file's coverage (`file` relative to the source root).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileCoverage {
    pub file: String,
    #[serde(flatten)]
    pub totals: Totals,
}

/// `summary.json`'s `coverage`: the totals over the compiler's own source files, each file,
/// and the files no case entered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// What measured it (`gcov`).
    pub tool: String,
    #[serde(flatten)]
    pub totals: Totals,
    /// Distinct edges the cases entered (the per-case edge maps' union), when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edges_hit: Option<u64>,
    pub files: Vec<FileCoverage>,
    /// Files with lines of which none ran.
    pub never_entered: Vec<String>,
}

/// Why coverage could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CoverageError {
    #[error("{}: {source} (not a --coverage build of scripts/build-pimcomp.sh or scripts/build-puma.sh?)", .path.display())]
    NotABuild {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no .gcda file under {}: the compiler is not a --coverage build, or it never exited normally", .0.display())]
    NoData(PathBuf),
    /// The tool (`gcov`, or `gcovr` for the HTML report) could not be started.
    #[error("cannot run {tool}: {source}")]
    Tool {
        tool: &'static str,
        source: std::io::Error,
    },
    #[error("{tool} failed ({status}): {stderr}")]
    ToolFailed {
        tool: &'static str,
        status: String,
        stderr: String,
    },
    #[error("gcov's JSON: {0}")]
    Json(serde_json::Error),
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where a coverage build's data are: its source root and the `GCOV_PREFIX` its runs wrote
/// under (each `.gcno` is where the build left it: the `.gcda`'s path without the prefix).
#[derive(Clone, Debug)]
pub struct GcovLayout {
    pub source_root: PathBuf,
    pub prefix: PathBuf,
    /// Paths under the source root that are not the compiler's own (vendored libraries).
    pub excluded: Vec<String>,
}

#[derive(Deserialize)]
struct GcovDoc {
    #[serde(default)]
    current_working_directory: String,
    #[serde(default)]
    files: Vec<GcovFile>,
}

#[derive(Deserialize)]
struct GcovFile {
    file: String,
    #[serde(default)]
    lines: Vec<GcovLine>,
}

/// Counts are signed: gcov counts only some arcs and derives the others by flow conservation,
/// and the counts a crashing compile dumps from its signal handler (in the middle of a
/// function) can make a derived count negative. No run is known to have taken such an arc, so
/// a count of zero or less is "not taken".
#[derive(Deserialize)]
struct GcovLine {
    line_number: u64,
    count: i64,
    #[serde(default)]
    branches: Vec<GcovBranch>,
}

#[derive(Deserialize)]
struct GcovBranch {
    count: i64,
    /// An exception edge of a call: not counted (nearly every call has one, and a valid
    /// input rarely takes it), as `gcovr --exclude-throw-branches`.
    #[serde(default)]
    throw: bool,
}

/// Per file, per line: (line hit, each branch taken).
type Merged = BTreeMap<String, BTreeMap<u64, (bool, Vec<bool>)>>;

impl Coverage {
    /// Reads the hunt's counts (see the module docs).
    pub fn collect(layout: &GcovLayout) -> Result<Coverage, CoverageError> {
        let gcda = files_with_extension(&layout.prefix, "gcda")?;
        if gcda.is_empty() {
            return Err(CoverageError::NoData(layout.prefix.clone()));
        }
        for data in &gcda {
            let notes = gcno_of(layout, data);
            if notes.is_file() {
                let dest = data.with_extension("gcno");
                std::fs::copy(&notes, &dest).map_err(|source| CoverageError::Io {
                    path: dest.clone(),
                    source,
                })?;
            }
        }
        let out = Command::new("gcov")
            .args(["--json-format", "--stdout", "--branch-probabilities"])
            .args(&gcda)
            .current_dir(&layout.prefix)
            .stdin(Stdio::null())
            .output()
            .map_err(|source| CoverageError::Tool {
                tool: "gcov",
                source,
            })?;
        if !out.status.success() {
            return Err(CoverageError::ToolFailed {
                tool: "gcov",
                status: out.status.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr)
                    .chars()
                    .take(2000)
                    .collect(),
            });
        }
        let mut merged = Merged::new();
        for doc in serde_json::Deserializer::from_slice(&out.stdout).into_iter::<GcovDoc>() {
            let doc = doc.map_err(CoverageError::Json)?;
            merge_doc(layout, &doc, &mut merged);
        }
        Ok(Coverage::from_merged(&merged))
    }

    fn from_merged(merged: &Merged) -> Coverage {
        let mut totals = Totals::default();
        let mut files = Vec::new();
        for (file, lines) in merged.iter().filter(|(_, l)| !l.is_empty()) {
            let mut t = Totals::default();
            for (hit, branches) in lines.values() {
                t.lines_total += 1;
                t.lines_hit += u64::from(*hit);
                t.branches_total += branches.len() as u64;
                t.branches_hit += branches.iter().filter(|b| **b).count() as u64;
            }
            totals.add(&t);
            files.push(FileCoverage {
                file: file.clone(),
                totals: t,
            });
        }
        let never_entered = files
            .iter()
            .filter(|f| f.totals.lines_total > 0 && f.totals.lines_hit == 0)
            .map(|f| f.file.clone())
            .collect();
        Coverage {
            tool: "gcov".into(),
            totals,
            edges_hit: None,
            files,
            never_entered,
        }
    }
}

/// Adds one gcov document's lines of the compiler's own files to `merged`.
fn merge_doc(layout: &GcovLayout, doc: &GcovDoc, merged: &mut Merged) {
    for f in &doc.files {
        let path = Path::new(&doc.current_working_directory).join(&f.file);
        let Some(rel) = own_file(layout, &path) else {
            continue;
        };
        let lines = merged.entry(rel).or_default();
        for l in &f.lines {
            let (hit, branches) = lines.entry(l.line_number).or_default();
            *hit |= l.count > 0;
            let own: Vec<&GcovBranch> = l.branches.iter().filter(|b| !b.throw).collect();
            if branches.len() < own.len() {
                branches.resize(own.len(), false);
            }
            for (b, taken) in own.iter().zip(branches.iter_mut()) {
                *taken |= b.count > 0;
            }
        }
    }
}

/// `path` relative to the source root when it is one of the compiler's own files.
fn own_file(layout: &GcovLayout, path: &Path) -> Option<String> {
    let path = normalize(path);
    let rel = path.strip_prefix(normalize(&layout.source_root)).ok()?;
    let rel = rel.to_string_lossy().into_owned();
    let vendored = layout
        .excluded
        .iter()
        .any(|e| rel == *e || rel.starts_with(&format!("{}/", e.trim_end_matches('/'))));
    (!vendored && !rel.starts_with("build/")).then_some(rel)
}

/// `..` and `.` removed lexically (gcov names headers as the compiler saw them).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The `.gcno` of a `.gcda` under the prefix: the same path without the prefix.
fn gcno_of(layout: &GcovLayout, gcda: &Path) -> PathBuf {
    let rel = gcda.strip_prefix(&layout.prefix).unwrap_or(gcda);
    Path::new("/").join(rel).with_extension("gcno")
}

/// Every file under `dir` whose name ends in `.ext`, sorted.
fn files_with_extension(dir: &Path, ext: &str) -> Result<Vec<PathBuf>, CoverageError> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(CoverageError::Io { path: d, source }),
        };
        for entry in entries.flatten() {
            let p = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() && p.extension().is_some_and(|e| e == ext) => found.push(p),
                _ => {}
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Writes an HTML report of the counts under `layout` into `dir` with gcovr (a maintained
/// tool, `scripts/setup-python.sh` installs it), branches included.
pub fn html_report(layout: &GcovLayout, gcovr: &Path, dir: &Path) -> Result<(), CoverageError> {
    std::fs::create_dir_all(dir).map_err(|source| CoverageError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut cmd = Command::new(gcovr);
    cmd.arg("--root")
        .arg(&layout.source_root)
        .arg("--html-details")
        .arg(dir.join("index.html"))
        .arg("--exclude-throw-branches")
        .arg("--gcov-ignore-parse-errors=all");
    for e in &layout.excluded {
        cmd.arg("--exclude").arg(format!(
            "{}/{}",
            layout.source_root.display(),
            e.trim_end_matches('/')
        ));
    }
    let out = cmd
        .arg(&layout.prefix)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| CoverageError::Tool {
            tool: "gcovr",
            source,
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(CoverageError::ToolFailed {
            tool: "gcovr",
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr)
                .chars()
                .take(2000)
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> GcovLayout {
        GcovLayout {
            source_root: "/b/src".into(),
            prefix: "/h/gcda".into(),
            excluded: vec!["backend/zlib".into()],
        }
    }

    /// Without gcovr, the HTML report's error names gcovr (it said "cannot run gcov").
    #[test]
    fn a_missing_report_tool_is_named() {
        let out = tempfile::tempdir().unwrap();
        let absent = out.path().join("no-such-gcovr");
        let e = html_report(&layout(), &absent, &out.path().join("html")).unwrap_err();
        let not_found = |s: &std::io::Error| s.kind() == std::io::ErrorKind::NotFound;
        assert!(
            matches!(&e, CoverageError::Tool { tool: "gcovr", source } if not_found(source)),
            "{e:?}"
        );
        assert!(e.to_string().starts_with("cannot run gcovr: "), "{e}");
    }

    #[test]
    fn headers_merge_across_units_and_vendored_files_do_not_count() {
        let docs = [
            r#"{"current_working_directory":"/b/src/build","files":[
                {"file":"../common.h","lines":[{"line_number":3,"count":0,"branches":[{"count":0},{"count":2},{"count":5,"throw":true}]}]},
                {"file":"/b/src/empty.h","lines":[]},
                {"file":"/b/src/main.cpp","lines":[{"line_number":1,"count":1,"branches":[]},{"line_number":2,"count":0,"branches":[]}]},
                {"file":"/usr/include/c++/12/vector","lines":[{"line_number":1,"count":9,"branches":[]}]}]}"#,
            r#"{"current_working_directory":"/b/src/build","files":[
                {"file":"/b/src/common.h","lines":[{"line_number":3,"count":4,"branches":[{"count":1},{"count":0}]}]},
                {"file":"/b/src/backend/zlib/inflate.c","lines":[{"line_number":1,"count":1,"branches":[]}]},
                {"file":"/b/src/backend/Unused.cpp","lines":[{"line_number":7,"count":0,"branches":[{"count":0}]}]}]}"#,
            // A crash's dump: a derived arc count below zero is an arc not taken.
            r#"{"current_working_directory":"/b/src/build","files":[
                {"file":"/b/src/main.cpp","lines":[{"line_number":2,"count":-1,"branches":[{"count":-6},{"count":3}]}]}]}"#,
        ];
        let mut merged = Merged::new();
        for d in docs {
            merge_doc(&layout(), &serde_json::from_str(d).unwrap(), &mut merged);
        }
        let c = Coverage::from_merged(&merged);
        assert_eq!(
            c.totals,
            Totals {
                lines_total: 4,
                lines_hit: 2,
                branches_total: 5,
                branches_hit: 3
            }
        );
        let names: Vec<&str> = c.files.iter().map(|f| f.file.as_str()).collect();
        assert_eq!(names, ["backend/Unused.cpp", "common.h", "main.cpp"]);
        assert_eq!(c.never_entered, ["backend/Unused.cpp"]);
    }

    #[test]
    fn a_gcda_finds_its_notes_outside_the_prefix() {
        let p = gcno_of(&layout(), Path::new("/h/gcda/b/src/build/x.cpp.gcda"));
        assert_eq!(p, Path::new("/b/src/build/x.cpp.gcno"));
    }
}
