//! The bounded reader on its own, with small limits: every refusal with its exact kind, and
//! the limit exactly reached still accepted.

use std::fs;
use std::io::{Read, Write};

use pimdiff_input::hostile::{gzip_zeros, npy_claiming, sparse_file};
use pimdiff_input::limits::{GZIP_RATIO_SLACK, MAX_GZIP_RATIO, MAX_PROGRAM_BYTES};
use pimdiff_input::{
    gunzip, gunzip_reader, open, read, read_gzip_or_plain, read_maybe_empty, Bounded, InputError,
    Limit, MAX_INFLATE_READ,
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
    assert_eq!(read(&path, TEN).unwrap(), b"0123456789");
    fs::write(&path, b"01234567890").unwrap();
    assert!(matches!(
        read(&path, TEN),
        Err(InputError::TooLarge {
            size: 11,
            limit: TEN
        })
    ));
    // Sparse: refused from the size, nothing read.
    sparse_file(&path, 1 << 40).unwrap();
    assert!(matches!(
        read(&path, TEN),
        Err(InputError::TooLarge { size, .. }) if size == 1 << 40
    ));
    assert!(matches!(open(&path, TEN), Err(InputError::TooLarge { .. })));
}

#[test]
fn empty_blank_missing_and_directories_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    for text in ["", " \n\r\t"] {
        fs::write(&path, text).unwrap();
        assert!(matches!(read(&path, TEN), Err(InputError::Empty)));
    }
    fs::write(&path, "").unwrap();
    assert_eq!(read_maybe_empty(&path, TEN).unwrap(), b"");
    assert!(matches!(open(&path, TEN), Err(InputError::Empty)));
    assert!(matches!(
        read(&dir.path().join("absent"), TEN),
        Err(InputError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound
    ));
    assert!(matches!(read(dir.path(), TEN), Err(InputError::NotAFile)));
}

/// A FIFO is refused at once, not waited on: opening one for reading blocks until a writer
/// comes, so a reader that opened it plainly would hang on a hostile input. (Run on a thread
/// with a deadline, so that a regression fails the test instead of hanging it.)
#[test]
fn a_fifo_is_refused_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let refused = [
            matches!(read(&fifo, TEN), Err(InputError::NotAFile)),
            matches!(read_maybe_empty(&fifo, TEN), Err(InputError::NotAFile)),
            matches!(open(&fifo, TEN), Err(InputError::NotAFile)),
            matches!(read_gzip_or_plain(&fifo, TEN), Err(InputError::NotAFile)),
        ];
        tx.send(refused).unwrap();
    });
    let refused = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("reading a FIFO waited for a writer");
    assert_eq!(refused, [true; 4]);
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
            limit: MAX_PROGRAM_BYTES
        }
        .to_string(),
        "inflates to more than the limit of 1073741824 bytes (MAX_PROGRAM_BYTES)"
    );
}

/// What a reader hands out before it fails: the bytes of every successful read.
fn delivered_before_error(mut r: impl Read) -> (u64, InputError) {
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        match r.read(&mut buf) {
            Ok(0) => panic!("no error after {total} bytes"),
            Ok(n) => total += n as u64,
            Err(e) => return (total, InputError::from_io(e)),
        }
    }
}

#[test]
fn the_hostile_bomb_is_valid_gzip_of_zeros() {
    let four = gzip_zeros(4);
    // A 10-byte header, a 1 KiB piece per MiB, a 2-byte final block and an 8-byte trailer.
    assert_eq!(four.len(), 20 + 4 * (gzip_zeros(1).len() - 20));
    // Inflated by an independent decoder.
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&four[..])
        .read_to_end(&mut out)
        .unwrap();
    assert_eq!(out.len(), 4 << 20);
    assert!(out.iter().all(|&b| b == 0));
    // Within the slack, any ratio passes.
    assert_eq!(gunzip(&four, MAX_PROGRAM_BYTES).unwrap(), out);
    // 1 GiB in about 1 MB.
    let bomb = gzip_zeros(1024);
    assert!(bomb.len() < 1_100_000, "{}", bomb.len());
}

#[test]
fn a_gzip_bomb_stops_at_the_ratio_limit() {
    // 1 GiB of zeros is within MAX_PROGRAM_BYTES: only the ratio stops it.
    let bomb = gzip_zeros(1024);
    let (delivered, e) = delivered_before_error(gunzip_reader(&bomb[..], MAX_PROGRAM_BYTES));
    let InputError::GzipBomb {
        inflated,
        compressed,
    } = e
    else {
        panic!("{e:?}")
    };
    // Stopped on the first read past the ratio: at most one read (64 KiB) beyond it.
    let cap = compressed * MAX_GZIP_RATIO + GZIP_RATIO_SLACK;
    assert!(
        inflated > cap && inflated <= cap + (1 << 16),
        "{inflated} {cap}"
    );
    assert!(delivered <= cap && delivered + (1 << 16) >= inflated);
    assert!(inflated < 32 << 20, "{inflated}");
    // The whole-buffer reader stops within one read (`MAX_INFLATE_READ`) of the ratio too,
    // however much room its vector has.
    assert!(matches!(
        gunzip(&bomb, MAX_PROGRAM_BYTES),
        Err(InputError::GzipBomb { inflated: i, compressed: c })
            if i > c * MAX_GZIP_RATIO + GZIP_RATIO_SLACK
                && i <= c * MAX_GZIP_RATIO + GZIP_RATIO_SLACK + MAX_INFLATE_READ as u64
    ));
}

#[test]
fn a_gzip_bomb_stops_at_the_size_limit_below_the_slack() {
    const MIB: Limit = Limit {
        name: "MIB",
        bytes: 1 << 20,
    };
    let bomb = gzip_zeros(1024);
    let (delivered, e) = delivered_before_error(gunzip_reader(&bomb[..], MIB));
    assert!(
        matches!(e, InputError::InflatesTooLarge { limit: MIB }),
        "{e:?}"
    );
    // Memory: never more than the limit handed out.
    assert_eq!(delivered, MIB.bytes);
}

#[test]
fn gzip_or_plain_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    fs::write(&path, b"plain").unwrap();
    assert_eq!(read_gzip_or_plain(&path, TEN).unwrap(), b"plain");
    fs::write(&path, gzip(b"0123456789")).unwrap();
    assert_eq!(
        read_gzip_or_plain(
            &path,
            Limit {
                name: "K",
                bytes: 1024
            }
        )
        .unwrap(),
        b"0123456789"
    );
    fs::write(&path, gzip(b"0123456789A")).unwrap();
    assert!(matches!(
        read_gzip_or_plain(&path, Limit { name: "X", bytes: 11 + 20 }),
        Ok(t) if t == b"0123456789A"
    ));
    let z = gzip(b"0123456789");
    fs::write(&path, &z[..z.len() - 5]).unwrap();
    assert!(matches!(
        read_gzip_or_plain(&path, MAX_PROGRAM_BYTES),
        Err(InputError::TruncatedGzip)
    ));
    fs::write(&path, gzip(b"  ")).unwrap();
    assert!(matches!(
        read_gzip_or_plain(&path, MAX_PROGRAM_BYTES),
        Err(InputError::Empty)
    ));
    fs::write(&path, gzip_zeros(1024)).unwrap();
    assert!(matches!(
        read_gzip_or_plain(&path, MAX_PROGRAM_BYTES),
        Err(InputError::GzipBomb { .. })
    ));
    assert!(matches!(
        read_gzip_or_plain(&dir.path().join("absent"), MAX_PROGRAM_BYTES),
        Err(InputError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound
    ));
    assert!(matches!(
        read_gzip_or_plain(dir.path(), MAX_PROGRAM_BYTES),
        Err(InputError::NotAFile)
    ));
}

#[test]
fn the_hostile_npy_header_claims_what_it_is_told() {
    let bytes = npy_claiming("<i4", &[1_000_000, 1_000_000], &[0; 16]);
    assert_eq!(bytes.len(), 128 + 16);
    let header = pimdiff_input::npy::read_header(&mut &bytes[..]).unwrap();
    assert_eq!(header.shape, vec![1_000_000, 1_000_000]);
    assert_eq!(header.elements(), Some(1_000_000_000_000));
    assert_eq!(header.descr, "<i4");
}

/// A file whose length says 0 but which has content (procfs) is read to its real end, within
/// the limit; a regular file of every size around the read's first buffer reads back exactly.
#[test]
fn files_read_back_exactly_whatever_their_stated_length() {
    let big = Limit {
        name: "BIG",
        bytes: 1 << 20,
    };
    let status = read(std::path::Path::new("/proc/self/status"), big).unwrap();
    assert!(status.starts_with(b"Name:"), "{:?}", &status[..16]);
    // A procfs file longer than a small limit is refused by what was read, not its length 0.
    assert!(matches!(
        read(std::path::Path::new("/proc/self/status"), TEN),
        Err(InputError::TooLarge {
            size: 11,
            limit: TEN
        })
    ));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    for len in [1usize, 2, 4095, 4096, 4097, 70_000] {
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8 + 1).collect();
        fs::write(&path, &data).unwrap();
        assert_eq!(read(&path, big).unwrap(), data, "{len} bytes");
    }
}
