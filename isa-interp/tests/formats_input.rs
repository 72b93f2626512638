//! Every file the interpreter crate reads goes through the bounded reader: one test per reader
//! for an empty file, a file above its limit (sparse, so nothing is written), and, where the
//! reader takes gzip, a truncated stream and a gzip bomb; each with its exact error kind.

use std::fs;
use std::io::Write;
use std::path::Path;

use pimdiff_input::hostile::{gzip_zeros, npy_claiming, sparse_file};
use pimdiff_input::limits::Limit;
use pimdiff_input::InputError;
use pimdiff_isa::bundle::{Bundle, BundleError, IoManifest};
use pimdiff_isa::formats::{self, json, LoadError, LoadErrorKind};
use pimdiff_isa::xbar::{read_export_dir, XbarError};

/// A sparse file one byte above `limit`: the reader must refuse it from its size alone.
fn oversized(path: &Path, limit: Limit) {
    sparse_file(path, limit.bytes + 1).unwrap();
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A valid program, gzip-compressed, cut short.
fn truncated_gzip() -> Vec<u8> {
    let text = br#"{"config": {"core_cnt": 1}, "core0": [{"op": "nop"}]}"#;
    let z = gzip(text);
    z[..z.len() - 10].to_vec()
}

/// About 1 MB of gzip that inflates to 1 GiB of zeros (within `MAX_PROGRAM_BYTES`: only
/// the ratio limit stops it).
fn gzip_bomb() -> Vec<u8> {
    gzip_zeros(1024)
}

/// A gzip bomb whose text starts as a JSON program, so that the parallel parser starts on it
/// while it inflates (gzip members concatenate).
fn json_gzip_bomb() -> Vec<u8> {
    [
        gzip(br#"{"config": {"core_cnt": 1}, "core0": ["#),
        gzip_zeros(1024),
    ]
    .concat()
}

fn input_kind(e: LoadError) -> InputError {
    match e.kind {
        LoadErrorKind::Input(i) => i,
        other => panic!("not an input error: {other}"),
    }
}

#[test]
fn program_file_empty_blank_and_oversized() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    for text in ["", " \n\t\n"] {
        fs::write(&path, text).unwrap();
        let e = formats::load_program(&path).unwrap_err();
        assert_eq!(e.file.as_deref(), Some(path.as_path()));
        assert!(matches!(input_kind(e), InputError::Empty), "{text:?}");
    }
    oversized(&path, pimdiff_input::limits::MAX_PROGRAM_BYTES);
    let e = formats::load_program(&path).unwrap_err();
    assert!(matches!(input_kind(e), InputError::TooLarge { size, limit }
            if size == (1 << 30) + 1 && limit.name == "MAX_PROGRAM_BYTES"),);
}

#[test]
fn program_file_truncated_gzip_and_gzip_bomb() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json.gz");
    fs::write(&path, truncated_gzip()).unwrap();
    let e = formats::load_program(&path).unwrap_err();
    assert_eq!(e.file.as_deref(), Some(path.as_path()));
    assert!(matches!(input_kind(e), InputError::TruncatedGzip));

    for bomb in [gzip_bomb(), json_gzip_bomb()] {
        fs::write(&path, bomb).unwrap();
        let e = formats::load_program(&path).unwrap_err();
        assert_eq!(e.file.as_deref(), Some(path.as_path()));
        assert!(matches!(input_kind(e), InputError::GzipBomb { .. }));
    }

    // A gzip stream of nothing is an empty program too.
    fs::write(&path, gzip(b"")).unwrap();
    assert!(matches!(
        input_kind(formats::load_program(&path).unwrap_err()),
        InputError::Empty
    ));
}

#[test]
fn program_bytes_empty_truncated_gzip_and_gzip_bomb() {
    assert!(matches!(
        input_kind(formats::load_bytes(b"").unwrap_err()),
        InputError::Empty
    ));
    assert!(matches!(
        input_kind(formats::load_bytes(&truncated_gzip()).unwrap_err()),
        InputError::TruncatedGzip
    ));
    for bomb in [gzip_bomb(), json_gzip_bomb()] {
        assert!(matches!(
            input_kind(formats::load_bytes(&bomb).unwrap_err()),
            InputError::GzipBomb { .. }
        ));
    }
    let mut corrupt = gzip(b"core 0:\n nop\n");
    corrupt[12] ^= 0xff;
    assert!(matches!(
        input_kind(formats::load_bytes(&corrupt).unwrap_err()),
        InputError::CorruptGzip(_)
    ));
}

#[test]
fn assembly_text_file_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.s");
    fs::write(&path, "\n\n").unwrap();
    assert!(matches!(
        input_kind(formats::load_program(&path).unwrap_err()),
        InputError::Empty
    ));
    fs::write(&path, gzip(b"  \n")).unwrap();
    assert!(matches!(
        input_kind(formats::load_program(&path).unwrap_err()),
        InputError::Empty
    ));
}

#[test]
fn json_stream_oversized() {
    // A valid program one byte longer than the limit: the stream reader stops at the limit.
    // (`read_json` is `read_json_with_limit` at `MAX_PROGRAM_BYTES`, whose 1 GiB would take
    // a stream parser half a minute to reach.)
    let text = br#"{"config": {"core_cnt": 1}, "core0": [{"op": "nop"}]}"#;
    let limit = |bytes: usize| Limit {
        name: "TEST_LIMIT",
        bytes: bytes as u64,
    };
    assert!(matches!(
        input_kind(json::read_json_with_limit(&text[..], limit(text.len() - 1)).unwrap_err()),
        InputError::TooLarge { limit, .. } if limit.name == "TEST_LIMIT"
    ));
    assert_eq!(
        json::read_json_with_limit(&text[..], limit(text.len())).unwrap(),
        json::read_json(&text[..]).unwrap()
    );
    let e = json::read_json(&b""[..]).unwrap_err();
    assert!(matches!(e.kind, LoadErrorKind::Json { .. }), "{e}");
}

#[test]
fn directory_config_and_core_files() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    let core = dir.path().join("core_0.json");
    fs::write(&config, "").unwrap();
    let e = formats::read_program_dir(dir.path()).unwrap_err();
    assert_eq!(e.file.as_deref(), Some(config.as_path()));
    assert!(matches!(input_kind(e), InputError::Empty));
    oversized(&config, pimdiff_input::limits::MAX_CONFIG_BYTES);
    let e = formats::read_program_dir(dir.path()).unwrap_err();
    assert!(matches!(
        input_kind(e),
        InputError::TooLarge { limit, .. } if limit.name == "MAX_CONFIG_BYTES"
    ));

    fs::write(&config, r#"{"core_cnt": 1}"#).unwrap();
    fs::write(&core, " ").unwrap();
    let e = formats::read_program_dir(dir.path()).unwrap_err();
    assert_eq!(e.file.as_deref(), Some(core.as_path()));
    assert!(matches!(input_kind(e), InputError::Empty));
    oversized(&core, pimdiff_input::limits::MAX_PROGRAM_BYTES);
    let e = formats::read_program_dir(dir.path()).unwrap_err();
    assert!(matches!(
        input_kind(e),
        InputError::TooLarge { limit, .. } if limit.name == "MAX_PROGRAM_BYTES"
    ));
    // Core files are plain JSON: gzip is not inflated, it is invalid JSON.
    fs::write(&core, gzip(b"[]")).unwrap();
    let e = formats::read_program_dir(dir.path()).unwrap_err();
    assert!(matches!(e.kind, LoadErrorKind::Json { .. }), "{e}");
}

/// A bundle directory whose program and manifest are valid.
fn bundle_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("config.json"), r#"{"core_cnt": 1}"#).unwrap();
    fs::write(
        dir.path().join("io.json"),
        r#"{"input": {"addr": 0, "shape": [1, 4], "layout": "nc", "dtype": "int8"},
            "output": {"addr": 64, "shape": [1, 2], "layout": "nc", "dtype": "int32"},
            "constants": [{"name": "b", "addr": 128, "file": "b.bin"}]}"#,
    )
    .unwrap();
    fs::write(dir.path().join("b.bin"), []).unwrap();
    dir
}

#[test]
fn bundle_manifest_and_constants() {
    let dir = bundle_dir();
    // A zero-length constant segment is data, not an empty file.
    assert_eq!(
        Bundle::read_dir(dir.path()).unwrap().manifest.constants[0].data,
        b""
    );
    let io_json = dir.path().join("io.json");
    fs::write(&io_json, "").unwrap();
    match IoManifest::read_dir(dir.path()) {
        Err(BundleError::Input {
            path,
            source: InputError::Empty,
        }) => assert_eq!(path, io_json),
        other => panic!("{other:?}"),
    }
    oversized(&io_json, pimdiff_input::limits::MAX_MANIFEST_BYTES);
    assert!(matches!(
        IoManifest::read_dir(dir.path()),
        Err(BundleError::Input { source: InputError::TooLarge { limit, .. }, .. })
            if limit.name == "MAX_MANIFEST_BYTES"
    ));
}

#[test]
fn crossbar_export_json_and_npy() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("core_0.json");
    let npy = dir.path().join("core_0.npy");
    fs::write(&json, "").unwrap();
    fs::write(&npy, "").unwrap();
    match read_export_dir(dir.path()) {
        Err(XbarError::Input {
            path,
            source: InputError::Empty,
        }) => assert_eq!(path, json),
        other => panic!("{other:?}"),
    }
    oversized(&json, pimdiff_input::limits::MAX_XBAR_JSON_BYTES);
    assert!(matches!(
        read_export_dir(dir.path()),
        Err(XbarError::Input { source: InputError::TooLarge { limit, .. }, .. })
            if limit.name == "MAX_XBAR_JSON_BYTES"
    ));
    fs::write(&json, r#"{"core": 0, "mbiw": 8, "groups": []}"#).unwrap();
    match read_export_dir(dir.path()) {
        Err(XbarError::Input {
            path,
            source: InputError::Empty,
        }) => assert_eq!(path, npy),
        other => panic!("{other:?}"),
    }
    oversized(&npy, pimdiff_input::limits::MAX_XBAR_NPY_BYTES);
    assert!(matches!(
        read_export_dir(dir.path()),
        Err(XbarError::Input { source: InputError::TooLarge { limit, .. }, .. })
            if limit.name == "MAX_XBAR_NPY_BYTES"
    ));
    // A 128-byte file whose header asks for 2^40 cells is refused before any allocation.
    fs::write(&npy, npy_claiming("<i4", &[1024, 1024, 1 << 20], &[0; 16])).unwrap();
    match read_export_dir(dir.path()) {
        Err(XbarError::Npy { path, message }) => {
            assert_eq!(path, npy);
            assert!(
                message.contains("needs 4398046511104 bytes of data, the file has 16"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}
