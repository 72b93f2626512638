//! Hostile files for the tests of every reader (feature `hostile`): a gzip bomb made without
//! compressing what it inflates to, an `.npy` file whose header claims any shape, and a
//! sparse file of any size. Each costs the test milliseconds and little memory or disk.

use std::fs::File;
use std::io;
use std::path::Path;

use flate2::{Compress, Compression, Crc, FlushCompress};

/// A valid gzip stream of `mib` MiB of zeros, about 1 KB per MiB (1 GiB packs into about
/// 1 MB), built in milliseconds: one MiB is compressed once and its deflate blocks are
/// repeated, which is sound because a full flush makes them refer to nothing before them.
pub fn gzip_zeros(mib: u64) -> Vec<u8> {
    let zeros = vec![0u8; 1 << 20];
    let mut deflate = Compress::new(Compression::best(), false);
    let mut piece = Vec::with_capacity(1 << 16);
    deflate
        .compress_vec(&zeros, &mut piece, FlushCompress::Full)
        .expect("deflate of zeros");
    assert_eq!(deflate.total_in(), 1 << 20, "one call compresses the MiB");
    let mut one = Crc::new();
    one.update(&zeros);
    let mut crc = Crc::new();
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff];
    out.reserve(piece.len() * mib as usize + 10);
    for _ in 0..mib {
        out.extend_from_slice(&piece);
        crc.combine(&one);
    }
    // An empty final block with fixed codes, then the trailer: CRC-32 and size modulo 2^32.
    out.extend_from_slice(&[0x03, 0x00]);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&((mib << 20) as u32).to_le_bytes());
    out
}

/// An `.npy` file (format 1.0) whose header says `descr` and `shape`, followed by only
/// `data` bytes: a header claiming 10^12 cells costs a hundred bytes.
pub fn npy_claiming(descr: &str, shape: &[u64], data: &[u8]) -> Vec<u8> {
    npy_file(descr, false, shape, data)
}

/// An `.npy` file (format 1.0) as NumPy writes it: the header with `descr`, the memory order
/// (`fortran_order`) and `shape`, padded so the data starts at a multiple of 64 bytes, then
/// `data` as given (whether or not it is as long as the header claims).
pub fn npy_file(descr: &str, fortran_order: bool, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let trailing_comma = if shape.len() == 1 { "," } else { "" };
    let fortran = if fortran_order { "True" } else { "False" };
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': ({}{trailing_comma}), }}",
        dims.join(", ")
    );
    // Pad so that the data starts at a multiple of 64 bytes, as NumPy does.
    header.push_str(&" ".repeat(63 - (10 + header.len()) % 64));
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    bytes
}

/// A file of `len` bytes that takes no disk (a hole): a reader must refuse it from its size.
pub fn sparse_file(path: &Path, len: u64) -> io::Result<()> {
    File::create(path)?.set_len(len)
}
