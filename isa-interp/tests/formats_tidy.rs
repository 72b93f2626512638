//! Tidy check: the instruction table (`inst::for_each_inst!`) stays the one place that names an
//! instruction. Outside the interpreter's semantics (`machine/`), whose `match`es the compiler
//! keeps complete, an opcode's mnemonic, its aliases and its variant name may appear in at most
//! 3 lines of code (its table row, a sub-op enum variant, and one more). Comments and
//! `#[cfg(test)]` modules are not counted: they do not need to change when an instruction is
//! added. (The workspace-wide count of files per opcode is in the root crate's `tests/tidy.rs`.)

use std::fs;
use std::path::{Path, PathBuf};

use pimdiff_isa::Opcode;

/// Most lines of code that may name one opcode.
const MAX_LINES: usize = 3;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "machine") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of code of a file: comments and the trailing `#[cfg(test)]` module left out.
fn code_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            break;
        }
        if !t.starts_with("//") {
            out.push((i + 1, line));
        }
    }
    out
}

/// Whether `name` occurs in `line` as a whole word (a module of the standard library, such
/// as `std::sync`, is not an instruction).
fn names(line: &str, name: &str) -> bool {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    line.match_indices(name).any(|(i, _)| {
        !ident(line[..i].chars().next_back())
            && !ident(line[i + name.len()..].chars().next())
            && !line[..i].ends_with("std::")
    })
}

#[test]
fn no_opcode_is_named_in_more_than_three_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() >= 10, "found only {files:?}");
    let texts: Vec<(PathBuf, String)> = files
        .into_iter()
        .map(|p| {
            let text = fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    let mut failures = Vec::new();
    for op in Opcode::ALL {
        let variant = format!("{op:?}");
        let mut spellings = vec![op.mnemonic(), variant.as_str()];
        spellings.extend(op.aliases());
        let mut hits = Vec::new();
        for (path, text) in &texts {
            for (n, line) in code_lines(text) {
                if spellings.iter().any(|s| names(line, s)) {
                    let rel = path.strip_prefix(&src).unwrap_or(path).display();
                    hits.push(format!("  src/{rel}:{n}: {}", line.trim()));
                }
            }
        }
        if hits.len() > MAX_LINES {
            failures.push(format!(
                "{op} is named in {} lines:\n{}",
                hits.len(),
                hits.join("\n")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_word_matcher_finds_whole_words_only() {
    assert!(names("Opcode::Ld => 1", "Ld"));
    assert!(names("\"ld\"", "ld"));
    assert!(!names("fn ld_size()", "ld"));
    assert!(!names("build", "ld"));
    assert!(!names("use std::sync::Mutex;", "sync"));
    assert!(code_lines("a\n// ld\n#[cfg(test)]\nld")
        .iter()
        .all(|(_, l)| *l == "a"));
}
