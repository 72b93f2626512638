//! The bounded reader on its own, with small limits: every refusal with its exact kind, and
//! the limit exactly reached still accepted.

use std::fs::{self, File};
use std::io::{Read, Write};

use pimdiff_input::{
    gunzip, gunzip_reader, open_file, read_file, read_file_maybe_empty, Bounded, InputError, Limit,
};

const TEN: Limit = Limit {
    name: "TEN",
    bytes: 10,
};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn files_up_to_the_limit_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    fs::write(&path, b"0123456789").unwrap();
    assert_eq!(read_file(&path, TEN).unwrap(), b"0123456789");
    fs::write(&path, b"01234567890").unwrap();
    assert!(matches!(
        read_file(&path, TEN),
        Err(InputError::TooLarge {
            size: 11,
            limit: TEN
        })
    ));
    // Sparse: refused from the size, nothing read.
    File::create(&path).unwrap().set_len(1 << 40).unwrap();
    assert!(matches!(
        read_file(&path, TEN),
        Err(InputError::TooLarge { size, .. }) if size == 1 << 40
    ));
    assert!(matches!(
        open_file(&path, TEN),
        Err(InputError::TooLarge { .. })
    ));
}

#[test]
fn empty_blank_missing_and_directories_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    for text in ["", " \n\r\t"] {
        fs::write(&path, text).unwrap();
        assert!(matches!(read_file(&path, TEN), Err(InputError::Empty)));
    }
    fs::write(&path, "").unwrap();
    assert_eq!(read_file_maybe_empty(&path, TEN).unwrap(), b"");
    assert!(matches!(open_file(&path, TEN), Err(InputError::Empty)));
    assert!(matches!(
        read_file(&dir.path().join("absent"), TEN),
        Err(InputError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound
    ));
    assert!(matches!(
        read_file(dir.path(), TEN),
        Err(InputError::NotAFile)
    ));
}

#[test]
fn gzip_is_inflated_up_to_the_limit() {
    assert_eq!(gunzip(&gzip(b"0123456789"), TEN).unwrap(), b"0123456789");
    // Two members are one stream.
    let two = [gzip(b"01234"), gzip(b"56789")].concat();
    assert_eq!(gunzip(&two, TEN).unwrap(), b"0123456789");
    // A bomb: 28 bytes that inflate to 1 MiB.
    let bomb = gzip(&vec![b'x'; 1 << 20]);
    assert!(bomb.len() < 2000);
    assert!(matches!(
        gunzip(&bomb, TEN),
        Err(InputError::InflatesTooLarge { limit: TEN })
    ));
    let z = gzip(b"0123456789");
    assert!(matches!(
        gunzip(&z[..z.len() - 4], TEN),
        Err(InputError::TruncatedGzip)
    ));
    let mut corrupt = z.clone();
    corrupt[3] = 0xff; // reserved flag bits
    assert!(matches!(
        gunzip(&corrupt, TEN),
        Err(InputError::CorruptGzip(_))
    ));
    assert!(matches!(gunzip(&gzip(b""), TEN), Err(InputError::Empty)));
}

#[test]
fn streaming_readers_stop_at_the_limit() {
    let mut out = Vec::new();
    let mut r = Bounded::new(&b"0123456789"[..], TEN);
    r.read_to_end(&mut out).unwrap();
    assert_eq!(out, b"0123456789");

    let e = Bounded::new(&b"0123456789A"[..], TEN)
        .read_to_end(&mut Vec::new())
        .unwrap_err();
    assert!(matches!(
        InputError::from_io(e),
        InputError::TooLarge { limit: TEN, .. }
    ));

    let bomb = gzip(&vec![b'x'; 1 << 20]);
    let e = gunzip_reader(&bomb[..], TEN)
        .read_to_end(&mut Vec::new())
        .unwrap_err();
    assert!(matches!(
        InputError::from_io(e),
        InputError::InflatesTooLarge { limit: TEN }
    ));
    let z = gzip(b"0123");
    let e = gunzip_reader(&z[..z.len() - 3], TEN)
        .read_to_end(&mut Vec::new())
        .unwrap_err();
    assert!(matches!(InputError::from_io(e), InputError::TruncatedGzip));
    // Any other I/O error stays one.
    let other = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "no");
    assert!(matches!(
        InputError::from_io(other),
        InputError::Io(e) if e.kind() == std::io::ErrorKind::PermissionDenied
    ));
}

#[test]
fn limits_are_named_in_messages() {
    let e = InputError::TooLarge {
        size: 11,
        limit: TEN,
    };
    assert_eq!(e.to_string(), "11 bytes, above the limit of 10 bytes (TEN)");
    assert_eq!(
        InputError::InflatesTooLarge {
            limit: pimdiff_input::MAX_PROGRAM_BYTES
        }
        .to_string(),
        "inflates to more than the limit of 1073741824 bytes (MAX_PROGRAM_BYTES)"
    );
}
