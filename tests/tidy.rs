//! Tidy checks: the rules of ARCHITECTURE.md that a reviewer would otherwise have to remember.
//!
//! * The code map cannot go stale: every source file of the workspace's crates is named in
//!   ARCHITECTURE.md by its path, and every path it names exists.
//! * No function in non-test code is longer than [`MAX_FN_LINES`] lines (read with `syn`, so
//!   strings and comments cannot confuse the count).
//! * Committed sources and documents stand alone: they cite no issue numbers and no documents
//!   outside the repository (a user's clone has neither).
//! * The fuzz crate's committed `fuzz/Cargo.lock` builds the fuzz targets on the dependency
//!   versions the tests run on: every package it shares with the root `Cargo.lock` has a
//!   version the root lock has.

use std::fs;
use std::path::PathBuf;

use syn::spanned::Spanned;
use syn::visit::Visit;

/// The longest function (signature to closing brace) allowed outside tests.
const MAX_FN_LINES: usize = 120;

/// The folders whose `.rs` files are library or binary code (not tests, benches or examples).
const SOURCE_ROOTS: [&str; 8] = [
    "src",
    "compiler/src",
    "isa-interp/src",
    "puma-machine/src",
    "oracle/src",
    "input/src",
    "atomic/src",
    "fuzz/fuzz_targets",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` (relative to the repository root) whose name ends with one of `exts`.
fn files_under(dir: &str, exts: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root().join(dir)];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !["target", "node_modules", ".git", "snapshots"].contains(&name.as_str()) {
                    stack.push(path);
                }
            } else if exts.iter().any(|x| name.ends_with(x)) {
                let rel = path.strip_prefix(root()).unwrap_or(&path);
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

fn source_files() -> Vec<String> {
    SOURCE_ROOTS
        .iter()
        .flat_map(|r| files_under(r, &[".rs"]))
        .collect()
}

fn architecture() -> String {
    fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md is readable")
}

/// The backticked spans of a markdown text.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

#[test]
fn every_source_file_is_on_the_code_map() {
    let map = architecture();
    let named: Vec<&str> = code_spans(&map);
    let missing: Vec<String> = source_files()
        .into_iter()
        .filter(|f| !named.contains(&f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name these files (add a line to the code map, as `path`):\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn every_path_on_the_code_map_exists() {
    let map = architecture();
    let exts = [
        ".rs", ".md", ".sh", ".py", ".proto", ".toml", ".yml", ".json",
    ];
    let stale: Vec<&str> = code_spans(&map)
        .into_iter()
        .filter(|s| s.contains('/') && !s.contains(' ') && exts.iter().any(|x| s.ends_with(x)))
        .filter(|s| !root().join(s).exists())
        .collect();
    assert!(
        stale.is_empty(),
        "ARCHITECTURE.md names paths that do not exist:\n  {}",
        stale.join("\n  ")
    );
}

/// Collects the functions of one file longer than [`MAX_FN_LINES`], skipping `#[cfg(test)]`
/// modules and `#[test]` functions.
struct LongFunctions {
    file: String,
    found: Vec<String>,
}

/// `#[test]`, or `#[cfg(test)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test"))
    })
}

impl LongFunctions {
    fn check(&mut self, name: &str, span: proc_macro2::Span) {
        let lines = span.end().line.saturating_sub(span.start().line) + 1;
        if lines > MAX_FN_LINES {
            self.found.push(format!(
                "{}:{} `{name}` is {lines} lines",
                self.file,
                span.start().line
            ));
        }
    }
}

impl<'ast> Visit<'ast> for LongFunctions {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test(&f.attrs) {
            self.check(&f.sig.ident.to_string(), f.span());
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test(&f.attrs) {
            self.check(&f.sig.ident.to_string(), f.span());
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
}

#[test]
fn no_function_in_non_test_code_is_longer_than_120_lines() {
    let mut long = Vec::new();
    for file in source_files() {
        let text = fs::read_to_string(root().join(&file)).expect("source is readable");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut v = LongFunctions {
            file: file.clone(),
            found: Vec::new(),
        };
        v.visit_file(&ast);
        long.extend(v.found);
    }
    assert!(
        long.is_empty(),
        "split these into named steps:\n  {}",
        long.join("\n  ")
    );
}

/// Files a user reads or builds: sources, benches, tests, scripts and documents.
fn committed_text_files() -> Vec<String> {
    let exts = [".rs", ".md", ".sh", ".py", ".toml", ".yml"];
    let mut files: Vec<String> = [
        "src",
        "compiler",
        "isa-interp",
        "puma-machine",
        "oracle",
        "input",
        "atomic",
        "fuzz",
        "tests",
        "benches",
        "scripts",
        "docs",
        "corpus",
        ".ci",
        ".github",
    ]
    .iter()
    .flat_map(|d| files_under(d, &exts))
    .collect();
    files.extend(
        ["README.md", "ARCHITECTURE.md", "Cargo.toml"]
            .iter()
            .map(|s| s.to_string()),
    );
    files
}

#[test]
fn sources_and_documents_cite_nothing_outside_the_repository() {
    // Spelled in pieces so that this file does not match itself.
    let docs = ["shared", "/docs"].concat();
    let seeds = ["shared", "/seeds"].concat();
    let mut found = Vec::new();
    for file in committed_text_files() {
        let Ok(text) = fs::read_to_string(root().join(&file)) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let cites_issue = lower
                .match_indices("issue ")
                .any(|(i, _)| lower[i + 6..].starts_with(|c: char| c.is_ascii_digit() || c == '#'));
            if cites_issue || line.contains(&docs) || line.contains(&seeds) {
                found.push(format!("{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "cite the repository's own docs/ instead:\n  {}",
        found.join("\n  ")
    );
}

/// `(name, version)` of every package of a `Cargo.lock`.
fn locked_packages(path: &str) -> std::collections::BTreeSet<(String, String)> {
    let text = fs::read_to_string(root().join(path)).unwrap();
    let field = |line: &str, key: &str| {
        line.strip_prefix(key)
            .map(|v| v.trim_matches('"').to_string())
    };
    let mut out = std::collections::BTreeSet::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(name) = field(line, "name = ") {
            let version = lines.next().and_then(|l| field(l, "version = "));
            out.insert((name, version.expect("a version after each name")));
        }
    }
    out
}

#[test]
fn the_fuzz_lock_file_has_the_roots_versions() {
    let root_lock = locked_packages("Cargo.lock");
    let fuzz_lock = locked_packages("fuzz/Cargo.lock");
    let root_names: std::collections::BTreeSet<&String> =
        root_lock.iter().map(|(n, _)| n).collect();
    let drifted: Vec<_> = fuzz_lock
        .iter()
        .filter(|p| root_names.contains(&p.0) && !root_lock.contains(*p))
        .collect();
    assert!(
        drifted.is_empty(),
        "fuzz/Cargo.lock has versions the root Cargo.lock does not: {drifted:?}; regenerate it \
         from the root's: cp Cargo.lock fuzz/ && (cd fuzz && cargo +nightly fuzz build)"
    );
    assert!(fuzz_lock.iter().any(|(n, _)| n == "libfuzzer-sys"));
}
