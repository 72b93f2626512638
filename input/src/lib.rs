//! Untrusted input: documented size limits, bounded file and gzip reading.
//!
//! Every file pimdiff reads comes from outside (a user, a compiler under test, a fuzzer), so
//! each is read through this crate: its size is checked against a documented
//! [`Limit`] before anything is allocated for it, reading stops at the limit
//! even when the file grows meanwhile, a gzip stream is inflated only up to its limit and only
//! up to a compression ratio (a gzip bomb is an error within milliseconds, not an
//! out-of-memory kill), an empty file is an error rather than an empty program or case, and a
//! FIFO, directory or device is refused at once (a FIFO is never waited on for a writer).
//!
//! The API, smallest first:
//!
//! - [`read`] (and [`read_maybe_empty`]): a whole regular file of at most a limit;
//! - [`read_gzip_or_plain`]: the same, inflated when it starts with the gzip magic;
//! - [`open`]: a regular file for streaming parsers, failing past its limit;
//! - [`gunzip`] and [`gunzip_reader`]: gzip bytes in memory or a gzip stream;
//! - [`limits`]: the table of limits; [`npy`]: the `.npy` header, parsed before any data.
//!
//! The interpreter, oracle and harness crates all use it; it depends on none of them. With
//! the feature `hostile`, the module `hostile` makes the hostile files their tests feed it.

mod gzip;
#[cfg(feature = "hostile")]
pub mod hostile;
pub mod limits;
pub mod npy;

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

pub use gzip::{gunzip, gunzip_reader, GZIP_MAGIC, MAX_INFLATE_READ};
pub use limits::Limit;

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
    /// A gzip stream that inflates beyond its size limit.
    #[error("inflates to more than the limit of {limit}")]
    InflatesTooLarge { limit: Limit },
    /// A gzip stream that inflates beyond the ratio limit: `inflated` bytes had come out of
    /// the first `compressed` when it was stopped.
    #[error(
        "a gzip bomb: {inflated} bytes inflated from {compressed}, more than {} times as many \
         (MAX_GZIP_RATIO)",
        limits::MAX_GZIP_RATIO
    )]
    GzipBomb { inflated: u64, compressed: u64 },
    /// A gzip stream that ends early.
    #[error("truncated gzip data")]
    TruncatedGzip,
    /// Data that is not a valid gzip stream.
    #[error("invalid gzip data: {0}")]
    CorruptGzip(String),
}

/// Read a whole regular file of at most `limit` bytes, refusing an empty or blank one.
pub fn read(path: &Path, limit: Limit) -> Result<Vec<u8>, InputError> {
    let bytes = read_maybe_empty(path, limit)?;
    if is_blank(&bytes) {
        return Err(InputError::Empty);
    }
    Ok(bytes)
}

/// [`read`] for files where no bytes is a valid content (a zero-length data segment).
pub fn read_maybe_empty(path: &Path, limit: Limit) -> Result<Vec<u8>, InputError> {
    let (mut file, size) = open_regular(path, limit)?;
    let bytes = read_sized(&mut file, size, limit).map_err(InputError::Io)?;
    check_size(bytes.len() as u64, limit)?;
    Ok(bytes)
}

/// Reads `file` to its end, expecting `size` bytes (its length when opened) and never more
/// than one byte past `limit`. Why not `read_to_end`: it reads once more to find the end after
/// the expected bytes, and a hunt reads a dozen small files per case; a read that returns less
/// than asked past `size` is the end of a regular file. A file that grew since keeps being
/// read (up to the limit), and one whose length says 0 (procfs) is read until a read returns 0.
fn read_sized(file: &mut File, size: u64, limit: Limit) -> io::Result<Vec<u8>> {
    let cap = limit.bytes.saturating_add(1);
    let mut bytes = vec![0u8; size.saturating_add(1).min(cap) as usize];
    let mut filled = 0;
    loop {
        if filled == bytes.len() {
            if bytes.len() as u64 >= cap {
                break;
            }
            let grown = (bytes.len() as u64).saturating_mul(2).max(4096).min(cap);
            bytes.resize(grown as usize, 0);
        }
        let n = match file.read(&mut bytes[filled..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            break;
        }
        filled += n;
        if filled < bytes.len() && filled as u64 >= size {
            break;
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
}

/// [`read`], then [`gunzip`] when the file starts with [`GZIP_MAGIC`]: `limit` bounds both the
/// file and what it inflates to, and the ratio limit applies. The text, never empty.
pub fn read_gzip_or_plain(path: &Path, limit: Limit) -> Result<Vec<u8>, InputError> {
    let bytes = read(path, limit)?;
    if bytes.starts_with(&GZIP_MAGIC) {
        return gunzip(&bytes, limit);
    }
    Ok(bytes)
}

/// Open a regular, non-empty file of at most `limit` bytes for streaming: reads past the
/// limit fail (with an `io::Error` wrapping [`InputError::TooLarge`], see
/// [`InputError::from_io`]).
pub fn open(path: &Path, limit: Limit) -> Result<Bounded<File>, InputError> {
    let (file, size) = open_regular(path, limit)?;
    if size == 0 {
        return Err(InputError::Empty);
    }
    Ok(Bounded::new(file, limit))
}

/// Opens `path` and checks, on the open file, that it is regular and within `limit`. Opened
/// non-blocking: opening a FIFO for reading otherwise waits for a writer, forever if none
/// comes (a hang on hostile input); this way the open returns and the FIFO is refused as
/// [`InputError::NotAFile`]. For a regular file the flag changes nothing. One `open` and one
/// `fstat`, no separate look-up by path first (a hunt reads a dozen small files per case).
fn open_regular(path: &Path, limit: Limit) -> Result<(File, u64), InputError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(InputError::Io)?;
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

/// A reader that fails, with an `io::Error` wrapping [`InputError::TooLarge`], when more
/// than its limit is read.
pub struct Bounded<R> {
    inner: R,
    left: u64,
    limit: Limit,
}

impl<R: Read> Bounded<R> {
    /// `inner`, failing past `limit` bytes.
    pub fn new(inner: R, limit: Limit) -> Bounded<R> {
        Bounded {
            inner,
            left: limit.bytes,
            limit,
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
                _ => Err(io::Error::other(InputError::TooLarge {
                    size: self.limit.bytes + 1,
                    limit: self.limit,
                })),
            };
        }
        let max = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..max])?;
        self.left -= n as u64;
        Ok(n)
    }
}
