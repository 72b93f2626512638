//! Inflating gzip under two limits at once: the size of what comes out ([`Limit`]) and its
//! ratio to what went in ([`MAX_GZIP_RATIO`] plus [`GZIP_RATIO_SLACK`]). Both are checked on
//! every read, so a gzip bomb stops early with bounded memory, whether the caller wants the
//! whole text ([`gunzip`]) or a stream ([`gunzip_reader`]).

use std::io::{self, BufRead, BufReader, Read};

use crate::limits::{Limit, GZIP_RATIO_SLACK, MAX_GZIP_RATIO};
use crate::{is_blank, InputError};

/// The two bytes every gzip stream starts with.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Inflate a whole gzip file (all members), at most `limit` bytes of output and at most the
/// ratio limit, refusing truncated, corrupt and empty streams.
pub fn gunzip(bytes: &[u8], limit: Limit) -> Result<Vec<u8>, InputError> {
    // The trailer's size field (the size modulo 2^32) sizes the buffer, which saves the
    // copies of a growing vector; capped by the size and ratio limits, so that a forged
    // trailer cannot reserve gigabytes.
    let hint = match bytes.len() {
        n if n >= 18 => {
            u32::from_le_bytes([bytes[n - 4], bytes[n - 3], bytes[n - 2], bytes[n - 1]]) as u64
        }
        _ => 0,
    };
    let cap = hint.min(limit.bytes).min(ratio_cap(bytes.len() as u64));
    let mut out = Vec::with_capacity(cap as usize + 1);
    Inflater::new(bytes, limit)
        .read_to_end(&mut out)
        .map_err(InputError::from_io)?;
    if is_blank(&out) {
        return Err(InputError::Empty);
    }
    Ok(out)
}

/// A [`gunzip`]-style inflating reader for streaming parsers: reads fail past `limit`
/// inflated bytes, past the ratio limit, and on truncated or corrupt data (the error is an
/// `io::Error` wrapping the [`InputError`]; see [`InputError::from_io`]).
pub fn gunzip_reader<R: Read>(r: R, limit: Limit) -> impl Read {
    Inflater::new(BufReader::with_capacity(1 << 15, r), limit)
}

/// The most one read inflates: how far past the ratio limit a bomb may get.
pub const MAX_INFLATE_READ: usize = 1 << 18;

/// What `compressed` bytes may inflate to under the ratio limit.
fn ratio_cap(compressed: u64) -> u64 {
    compressed
        .saturating_mul(MAX_GZIP_RATIO)
        .saturating_add(GZIP_RATIO_SLACK)
}

/// The inflater: a multi-member gzip decoder over a source that counts the compressed bytes
/// the decoder has consumed, and the count of bytes it has produced.
struct Inflater<R: BufRead> {
    decoder: flate2::bufread::MultiGzDecoder<Counted<R>>,
    produced: u64,
    limit: Limit,
}

impl<R: BufRead> Inflater<R> {
    fn new(r: R, limit: Limit) -> Inflater<R> {
        Inflater {
            decoder: flate2::bufread::MultiGzDecoder::new(Counted { inner: r, used: 0 }),
            produced: 0,
            limit,
        }
    }
}

impl<R: BufRead> Read for Inflater<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // One byte past the limit at most (enough to tell that there is more), and at most
        // `MAX_INFLATE_READ` at a time, so that the ratio is checked every `MAX_INFLATE_READ` bytes however
        // large the caller's buffer.
        let room = (self.limit.bytes - self.produced.min(self.limit.bytes)).saturating_add(1);
        let max = buf.len().min(room.min(MAX_INFLATE_READ as u64) as usize);
        let n = self
            .decoder
            .read(&mut buf[..max])
            .map_err(|e| match InputError::from_io(e) {
                InputError::Io(e) => io::Error::other(gzip_error(e)),
                // The source's own refusal (a compressed file above its limit).
                other => io::Error::other(other),
            })?;
        self.produced += n as u64;
        if self.produced > self.limit.bytes {
            return Err(io::Error::other(InputError::InflatesTooLarge {
                limit: self.limit,
            }));
        }
        let compressed = self.decoder.get_ref().used;
        if self.produced > ratio_cap(compressed) {
            return Err(io::Error::other(InputError::GzipBomb {
                inflated: self.produced,
                compressed,
            }));
        }
        Ok(n)
    }
}

/// A buffered reader that counts the bytes its user consumed.
struct Counted<R> {
    inner: R,
    used: u64,
}

impl<R: BufRead> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.used += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        self.used += amt as u64;
        self.inner.consume(amt);
    }
}

fn gzip_error(e: io::Error) -> InputError {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => InputError::TruncatedGzip,
        _ => InputError::CorruptGzip(e.to_string()),
    }
}
