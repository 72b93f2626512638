//! Untrusted input: documented size limits, bounded file and gzip reading.
//!
//! Every file pimdiff reads comes from outside (a user, a compiler under test, a fuzzer), so
//! each is read through this crate: its size is checked against a documented [`Limit`] before
//! anything is allocated for it, reading stops at the limit even when the file grows meanwhile,
//! a gzip stream is inflated only up to the limit (a gzip bomb is an error, not an
//! out-of-memory kill), and an empty file is an error rather than an empty program or case.
//! Both the interpreter crate and the oracle crate use it; it depends on neither.
//!
//! # Limits
//!
//! | limit | bytes | applies to |
//! |---|---|---|
//! | [`MAX_PROGRAM_BYTES`] | 1 GiB | a program file (JSON or assembly text, plain, or gzip both compressed and inflated), a directory's `core_<id>.json` |
//! | [`MAX_CONFIG_BYTES`] | 16 MiB | a program directory's `config.json` |
//! | [`MAX_MANIFEST_BYTES`] | 1 MiB | a bundle's `io.json` |
//! | [`MAX_CONSTANT_BYTES`] | 256 MiB | one constant segment file of a bundle |
//! | [`MAX_XBAR_JSON_BYTES`] | 16 MiB | a crossbar export's `core_<i>.json` |
//! | [`MAX_XBAR_NPY_BYTES`] | 256 MiB | a crossbar export's `core_<i>.npy` (64 Mi int32 cells) |
//! | [`MAX_CASE_JSON_BYTES`] | 1 MiB | a case's `case.json` |
//! | [`MAX_CASE_NPY_BYTES`] | 64 MiB + 128 KiB | a case's `.npy` tensors (16 Mi int32 elements and a header) |
//! | [`npy::MAX_HEADER_BYTES`] | 64 KiB | the header of any `.npy` file |
//!
//! The largest real programs (PIMCOMP-NN's, about 300 MB of JSON and 6 million
//! instructions) are well inside [`MAX_PROGRAM_BYTES`]; the case limits follow the oracle's
//! element limits (`pimdiff_oracle::limits`).

pub mod npy;

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// A documented size limit: its name (as in this crate's table) and the bytes it allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub name: &'static str,
    pub bytes: u64,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes ({})", self.bytes, self.name)
    }
}

/// A program file, compressed or not, and the text a gzip file inflates to.
pub const MAX_PROGRAM_BYTES: Limit = Limit {
    name: "MAX_PROGRAM_BYTES",
    bytes: 1 << 30,
};
/// A program directory's `config.json`.
pub const MAX_CONFIG_BYTES: Limit = Limit {
    name: "MAX_CONFIG_BYTES",
    bytes: 16 << 20,
};
/// A bundle's `io.json`.
pub const MAX_MANIFEST_BYTES: Limit = Limit {
    name: "MAX_MANIFEST_BYTES",
    bytes: 1 << 20,
};
/// One constant segment file of a bundle.
pub const MAX_CONSTANT_BYTES: Limit = Limit {
    name: "MAX_CONSTANT_BYTES",
    bytes: 1 << 28,
};
/// A crossbar export's `core_<i>.json`.
pub const MAX_XBAR_JSON_BYTES: Limit = Limit {
    name: "MAX_XBAR_JSON_BYTES",
    bytes: 16 << 20,
};
/// A crossbar export's `core_<i>.npy`.
pub const MAX_XBAR_NPY_BYTES: Limit = Limit {
    name: "MAX_XBAR_NPY_BYTES",
    bytes: 1 << 28,
};
/// A case's `case.json`.
pub const MAX_CASE_JSON_BYTES: Limit = Limit {
    name: "MAX_CASE_JSON_BYTES",
    bytes: 1 << 20,
};
/// A case's `.npy` tensor: 16 Mi int32 elements plus a header.
pub const MAX_CASE_NPY_BYTES: Limit = Limit {
    name: "MAX_CASE_NPY_BYTES",
    bytes: (64 << 20) + (128 << 10),
};

/// Why an input file was refused. The caller names the file.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The operating system could not open or read it (absent, no permission, ...).
    #[error("{0}")]
    Io(io::Error),
    /// A directory, FIFO or device rather than a regular file.
    #[error("not a regular file")]
    NotAFile,
    /// No bytes, or only blanks (for a gzip file: it inflates to nothing).
    #[error("the file is empty")]
    Empty,
    /// Larger than its limit (`size` is what the file system reported, or what was read).
    #[error("{size} bytes, above the limit of {limit}")]
    TooLarge { size: u64, limit: Limit },
    /// A gzip stream that inflates beyond its limit (a gzip bomb).
    #[error("inflates to more than the limit of {limit}")]
    InflatesTooLarge { limit: Limit },
    /// A gzip stream that ends early.
    #[error("truncated gzip data")]
    TruncatedGzip,
    /// Data that is not a valid gzip stream.
    #[error("invalid gzip data: {0}")]
    CorruptGzip(String),
}

/// The two bytes every gzip stream starts with.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Read a whole regular file of at most `limit` bytes, refusing an empty or blank one.
pub fn read_file(path: &Path, limit: Limit) -> Result<Vec<u8>, InputError> {
    let bytes = read_file_maybe_empty(path, limit)?;
    if is_blank(&bytes) {
        return Err(InputError::Empty);
    }
    Ok(bytes)
}

/// [`read_file`] for files where no bytes is a valid content (a zero-length data segment).
pub fn read_file_maybe_empty(path: &Path, limit: Limit) -> Result<Vec<u8>, InputError> {
    let (file, size) = open(path, limit)?;
    // The size sizes the buffer; `take` stops a file that grew since at the limit.
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit.bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(InputError::Io)?;
    check_size(bytes.len() as u64, limit)?;
    Ok(bytes)
}

/// Open a regular file of at most `limit` bytes for streaming: reads past the limit fail
/// (with an `io::Error` wrapping [`InputError::TooLarge`], see [`InputError::from_io`]).
pub fn open_file(path: &Path, limit: Limit) -> Result<Bounded<File>, InputError> {
    let (file, size) = open(path, limit)?;
    if size == 0 {
        return Err(InputError::Empty);
    }
    Ok(Bounded::new(file, limit))
}

fn open(path: &Path, limit: Limit) -> Result<(File, u64), InputError> {
    let file = File::open(path).map_err(InputError::Io)?;
    let meta = file.metadata().map_err(InputError::Io)?;
    if !meta.is_file() {
        return Err(InputError::NotAFile);
    }
    check_size(meta.len(), limit)?;
    Ok((file, meta.len()))
}

fn check_size(size: u64, limit: Limit) -> Result<(), InputError> {
    if size > limit.bytes {
        return Err(InputError::TooLarge { size, limit });
    }
    Ok(())
}

/// Whether `bytes` holds nothing but ASCII blanks (only the first non-blank byte is looked at).
pub fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

/// Inflate a whole gzip file (all members), at most `limit` bytes of output, refusing
/// truncated, corrupt and empty streams.
pub fn gunzip(bytes: &[u8], limit: Limit) -> Result<Vec<u8>, InputError> {
    // The trailer's size field (the size modulo 2^32) sizes the buffer, which saves the
    // copies of a growing vector; capped by the limit and by deflate's best ratio (about
    // 1032:1), so that a forged trailer cannot reserve gigabytes.
    let hint = match bytes.len() {
        n if n >= 18 => {
            u32::from_le_bytes([bytes[n - 4], bytes[n - 3], bytes[n - 2], bytes[n - 1]]) as u64
        }
        _ => 0,
    };
    let cap = hint
        .min(limit.bytes)
        .min((bytes.len() as u64).saturating_mul(1032));
    let mut out = Vec::with_capacity(cap as usize + 1);
    flate2::read::MultiGzDecoder::new(bytes)
        .take(limit.bytes + 1)
        .read_to_end(&mut out)
        .map_err(gzip_error)?;
    if out.len() as u64 > limit.bytes {
        return Err(InputError::InflatesTooLarge { limit });
    }
    if is_blank(&out) {
        return Err(InputError::Empty);
    }
    Ok(out)
}

/// A [`gunzip`]-style inflating reader for streaming parsers: reads fail past `limit`
/// inflated bytes, and on truncated or corrupt data (see [`InputError::from_io`]).
pub fn gunzip_reader<R: Read>(r: R, limit: Limit) -> impl Read {
    GzReader(Bounded {
        inner: flate2::read::MultiGzDecoder::new(r),
        left: limit.bytes,
        limit,
        inflating: true,
    })
}

struct GzReader<R>(Bounded<R>);

impl<R: Read> Read for GzReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf).map_err(|e| match InputError::from_io(e) {
            InputError::Io(e) => io::Error::other(gzip_error(e)),
            other => io::Error::other(other),
        })
    }
}

fn gzip_error(e: io::Error) -> InputError {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => InputError::TruncatedGzip,
        _ => InputError::CorruptGzip(e.to_string()),
    }
}

impl InputError {
    /// The input error inside an `io::Error` from a [`Bounded`] or [`gunzip_reader`] reader;
    /// any other `io::Error` as [`InputError::Io`].
    pub fn from_io(e: io::Error) -> InputError {
        if !e.get_ref().is_some_and(|inner| inner.is::<InputError>()) {
            return InputError::Io(e);
        }
        match e.into_inner().map(|inner| inner.downcast::<InputError>()) {
            Some(Ok(inner)) => *inner,
            // Not reached: the inner error was checked to be an `InputError` above.
            _ => InputError::Io(io::Error::other("an input error was lost")),
        }
    }
}

/// A reader that fails, with an `io::Error` wrapping [`InputError::TooLarge`] (or
/// [`InputError::InflatesTooLarge`] for inflated data), when more than its limit is read.
pub struct Bounded<R> {
    inner: R,
    left: u64,
    limit: Limit,
    inflating: bool,
}

impl<R: Read> Bounded<R> {
    /// `inner`, failing past `limit` bytes.
    pub fn new(inner: R, limit: Limit) -> Bounded<R> {
        Bounded {
            inner,
            left: limit.bytes,
            limit,
            inflating: false,
        }
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            // Anything more is over the limit; one byte tells whether there is more.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::other(if self.inflating {
                    InputError::InflatesTooLarge { limit: self.limit }
                } else {
                    InputError::TooLarge {
                        size: self.limit.bytes + 1,
                        limit: self.limit,
                    }
                })),
            };
        }
        let max = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..max])?;
        self.left -= n as u64;
        Ok(n)
    }
}
