//! Writing a finding directory: one writer for every target, for `from-fuzz`, for the corpus
//! and for reports.
//!
//! The writer owns the directory: it is built under a hidden temporary sibling, the caller
//! (a target) adds its own files and its fields of `finding.json`, the writer writes
//! `finding.json` last and renames the whole into place (`pimdiff_atomic`). So a finding on
//! disk is always complete, and a reader that finds `finding.json` finds everything else.

use std::path::{Path, PathBuf};

use pimdiff_atomic::{AtomicDir, Error};

use super::meta::{to_json_text, FindingMeta, FINDING_JSON};
use super::Signature;

/// Writes the finding directory `dest` (which must not exist): `fill` writes the caller's
/// files into the directory under construction and completes `meta`; then `finding.json`
/// is written and the directory committed. Returns `finding.json` as written.
pub fn write_finding(
    dest: &Path,
    mut meta: FindingMeta,
    fill: impl FnOnce(&Path, &mut FindingMeta) -> Result<(), Error>,
) -> Result<FindingMeta, Error> {
    let dir = AtomicDir::create(dest)?;
    fill(dir.path(), &mut meta)?;
    write_new(
        &dir.path().join(FINDING_JSON),
        to_json_text(&meta).as_bytes(),
    )?;
    dir.commit()?;
    Ok(meta)
}

/// Writes one file of a directory under construction (its commit syncs it).
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    pimdiff_atomic::write_new(path, bytes)
}

/// The directory name of a finding saved the moment it was found: `k<index>-<signature>`.
pub fn provisional_name(index: u64, signature: &Signature) -> String {
    format!("k{index}-{}", slug(&signature.to_string()))
}

/// The directory name of a finding at the end of a hunt: `<nnn>-<signature>`.
pub fn final_name(number: usize, signature: &Signature) -> String {
    format!("{number:03}-{}", slug(&signature.to_string()))
}

/// Whether a directory name is one [`provisional_name`] makes.
pub fn is_provisional_name(name: &str) -> bool {
    name.strip_prefix('k')
        .and_then(|rest| rest.split_once('-'))
        .is_some_and(|(digits, _)| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// A file-name-safe form of a signature: lowercase letters and digits, runs of anything else
/// as one `-`, at most 48 characters.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 48 {
            break;
        }
    }
    let trimmed = out.trim_end_matches('-');
    if trimmed.is_empty() {
        "finding".to_string()
    } else {
        trimmed.to_string()
    }
}

/// Where a finding directory's files are, relative to an output directory: `findings/<name>`.
pub fn relative_dir(name: &str) -> PathBuf {
    Path::new(super::FINDINGS_DIR).join(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Kind;

    #[test]
    fn names_are_file_safe_and_recognizable() {
        let sig = Signature::new(Kind::Mismatch, "channels all, pixels -, batch all");
        assert_eq!(
            final_name(3, &sig),
            "003-mismatch-channels-all-pixels-batch-all"
        );
        assert_eq!(
            provisional_name(17, &sig),
            "k17-mismatch-channels-all-pixels-batch-all"
        );
        assert!(is_provisional_name("k17-mismatch"));
        assert!(!is_provisional_name("003-k17"));
        assert!(!is_provisional_name("kx-mismatch"));
        assert_eq!(slug("!!!"), "finding");
    }

    #[test]
    fn the_written_directory_holds_the_callers_files_and_finding_json() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("001-x");
        let sig = Signature::new(Kind::Crash, "batch/SIGSEGV/f");
        let meta = FindingMeta::new(&sig, "a compiler".into());
        write_finding(&dest, meta, |dir, meta| {
            meta.target = Some("toy".into());
            write_new(&dir.join("model.txt"), b"m")
        })
        .unwrap();
        let text = std::fs::read_to_string(dest.join(FINDING_JSON)).unwrap();
        let back: FindingMeta = serde_json::from_str(&text).unwrap();
        assert_eq!(back.target.as_deref(), Some("toy"));
        assert_eq!(back.signature, "crash: batch/SIGSEGV/f");
        assert_eq!(std::fs::read(dest.join("model.txt")).unwrap(), b"m");
        // A failing fill leaves nothing behind.
        let err = write_finding(
            &tmp.path().join("002-y"),
            FindingMeta::new(&sig, String::new()),
            |dir, _| {
                write_new(&dir.join("missing-dir/child/x"), b"")?;
                Err(Error::Exists {
                    path: dir.to_path_buf(),
                })
            },
        );
        assert!(err.is_err());
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("001-x")]);
    }
}
