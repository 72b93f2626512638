//! The harness's own readers of untrusted files, each fed the hostile files of
//! `pimdiff_input::hostile` (missing, empty, oversized, truncated gzip, a 1 GiB gzip bomb, the
//! wrong kind of file): every refusal with its exact kind and the file it names. The readers
//! of the interpreter and oracle crates have theirs in their own crates; the CLI's are in
//! `tests/cli_hostile.rs`.

use std::fs;
use std::io::{ErrorKind, Write};
use std::path::Path;

use pimdiff::corpus::{read_entry_meta, CorpusError};
use pimdiff::targets::pimcomp_nn::check::table::read_table;
use pimdiff::targets::pimcomp_nn::check::PimcompError;
use pimdiff::targets::pimcomp_nn::cores::{census, CoresError};
use pimdiff_input::hostile::{gzip_zeros, sparse_file};
use pimdiff_input::limits::{MAX_META_BYTES, MAX_PROGRAM_TREE_BYTES, MAX_TABLE_BYTES};
use pimdiff_input::InputError;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A gzip stream of a JSON object cut short.
fn truncated_gzip() -> Vec<u8> {
    let z = gzip(br#"{"AG_info": [], "node_list": [], "instruction": {"core_list": []}}"#);
    z[..z.len() - 10].to_vec()
}

/// The input error a side table was refused with, after checking the path it names.
fn table_refusal(path: &Path) -> InputError {
    match read_table(path) {
        Err(PimcompError::Input {
            path: named,
            what: "the side table",
            source,
        }) => {
            assert_eq!(named, path);
            source
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn side_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("VerificationInfo.json.gz");
    fs::write(&path, gzip_zeros(1024)).unwrap();
    assert!(matches!(table_refusal(&path), InputError::GzipBomb { .. }));
    fs::write(&path, truncated_gzip()).unwrap();
    assert!(matches!(table_refusal(&path), InputError::TruncatedGzip));
    fs::write(&path, b"").unwrap();
    assert!(matches!(table_refusal(&path), InputError::Empty));
    fs::write(&path, gzip(b"\n")).unwrap();
    assert!(matches!(table_refusal(&path), InputError::Empty));
    sparse_file(&path, MAX_TABLE_BYTES.bytes + 1).unwrap();
    assert!(matches!(
        table_refusal(&path),
        InputError::TooLarge { size, limit } if size == MAX_TABLE_BYTES.bytes + 1 && limit == MAX_TABLE_BYTES
    ));
    assert!(matches!(table_refusal(dir.path()), InputError::NotAFile));
    // The wrong kind of file: a program, not a table.
    fs::write(&path, gzip(br#"{"config": {"core_cnt": 1}, "core0": []}"#)).unwrap();
    match read_table(&path) {
        Err(PimcompError::Table {
            path: named,
            message,
        }) => {
            assert_eq!(named, path);
            assert!(message.starts_with("missing field `AG_info`"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let absent = dir.path().join("absent");
    assert!(matches!(
        read_table(&absent),
        Err(PimcompError::Io { path, source }) if path == absent && source.kind() == ErrorKind::NotFound
    ));
}

/// The input error a program's core census was refused with, after checking the path.
fn census_refusal(path: &Path) -> InputError {
    match census(path) {
        Err(CoresError::Input {
            path: named,
            source,
        }) => {
            assert_eq!(named, path.display().to_string());
            source
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn pimcomp_program_core_census() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("net.json.gz");
    fs::write(&path, gzip_zeros(1024)).unwrap();
    assert!(matches!(census_refusal(&path), InputError::GzipBomb { .. }));
    fs::write(&path, truncated_gzip()).unwrap();
    assert!(matches!(census_refusal(&path), InputError::TruncatedGzip));
    fs::write(&path, b"  ").unwrap();
    assert!(matches!(census_refusal(&path), InputError::Empty));
    sparse_file(&path, MAX_PROGRAM_TREE_BYTES.bytes + 1).unwrap();
    assert!(matches!(
        census_refusal(&path),
        InputError::TooLarge { limit, .. } if limit == MAX_PROGRAM_TREE_BYTES
    ));
    assert!(matches!(census_refusal(dir.path()), InputError::NotAFile));
    assert!(matches!(
        census_refusal(&dir.path().join("absent")),
        InputError::Io(e) if e.kind() == ErrorKind::NotFound
    ));
    fs::write(&path, b"[1, 2]").unwrap();
    assert!(matches!(
        census(&path),
        Err(CoresError::Shape {
            what: "not a JSON object",
            ..
        })
    ));
    fs::write(&path, gzip(br#"{"config": {"core_cnt": 1}, "core3": []}"#)).unwrap();
    assert_eq!(census(&path).unwrap().max_index, Some(3));
}

/// The input error `finding.json` or `expect.json` was refused with, after checking the path.
fn meta_refusal(dir: &Path, file: &str) -> InputError {
    match read_entry_meta(dir) {
        Err(CorpusError::Input { path, source }) => {
            assert_eq!(path, dir.join(file));
            source
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn saved_finding_metadata() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // Both absent: a case directory without metadata.
    let meta = read_entry_meta(dir).unwrap();
    assert!(meta.finding.is_none() && meta.expect_file.is_none());
    for file in ["finding.json", "expect.json"] {
        let path = dir.join(file);
        sparse_file(&path, MAX_META_BYTES.bytes + 1).unwrap();
        assert!(matches!(
            meta_refusal(dir, file),
            InputError::TooLarge { size, limit } if size == MAX_META_BYTES.bytes + 1 && limit == MAX_META_BYTES
        ));
        fs::write(&path, b"\n").unwrap();
        assert!(matches!(meta_refusal(dir, file), InputError::Empty));
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        assert!(matches!(meta_refusal(dir, file), InputError::NotAFile));
        fs::remove_dir(&path).unwrap();
        // A gzip bomb (of 512 MiB: 1 GiB packs into more than the limit) is not inflated:
        // it is not JSON.
        fs::write(&path, gzip_zeros(512)).unwrap();
        assert!(matches!(
            read_entry_meta(dir),
            Err(CorpusError::Json { path: p, .. }) if p == path
        ));
        fs::remove_file(&path).unwrap();
    }
}
