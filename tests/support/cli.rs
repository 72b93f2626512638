//! Shared by the tests that drive the `pimdiff` binary: one spelling of how a test runs it and
//! reads what it said, instead of a copy of these helpers in every test file.
//!
//! Include it with `#[path = "support/cli.rs"] mod cli;` and import the helpers the file uses.
//! Tests that run the binary differently (a working directory, removed environment variables,
//! a required success, `OsStr` arguments) keep their own helper.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use pimdiff::engine::HuntSummary;

/// Runs the `pimdiff` binary Cargo built for these tests with `args`, and waits for it; its
/// exit status and captured standard output and error. Panics only if it cannot be started.
pub fn pimdiff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .args(args)
        .output()
        .expect("spawn pimdiff")
}

/// Captured output as text (invalid UTF-8 replaced), for assertions and failure messages.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A run's standard output as text.
pub fn stdout(o: &Output) -> String {
    text(&o.stdout)
}

/// A run's standard error as text.
pub fn stderr(o: &Output) -> String {
    text(&o.stderr)
}

/// A path as a command-line argument; panics if it is not UTF-8 (temporary paths are).
pub fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}

/// The `summary.json` a hunt wrote into its output directory `out`.
pub fn summary(out: &Path) -> HuntSummary {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}
