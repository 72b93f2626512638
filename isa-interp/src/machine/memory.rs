//! Memories and element encoding: range checks that never wrap, byte-aligned little-endian
//! elements with sign extension and counted wrapping, and the sparse global memory.

use std::collections::HashMap;
use std::ops::Range;

use super::fault::{FaultKind, Operand};
use crate::inst::Width;

/// The global memory is 4 GiB; an address range may end at exactly 2^32.
pub const GMEM_BYTES: u64 = 1 << 32;

/// Checked LMem range: `base` (a register read as unsigned) plus `offset` bytes, `len` bytes
/// long, inside a memory of `size` bytes. A range of length 0 touches nothing and is always
/// valid (it returns an empty range).
#[inline]
pub(crate) fn lmem_range(
    operand: Operand,
    base: i32,
    offset: i64,
    len: u64,
    size: u32,
) -> Result<Range<usize>, FaultKind> {
    let start = (base as u32 as i64).saturating_add(offset);
    if len == 0 {
        return Ok(0..0);
    }
    if start < 0 || (start as u64).saturating_add(len) > size as u64 {
        return Err(FaultKind::LmemRange {
            operand,
            start,
            len,
            size,
        });
    }
    Ok(start as usize..(start as u64 + len) as usize)
}

/// Checked GMem range, as [`lmem_range`] but inside the 4 GiB space; returns `(start, len)`.
#[inline]
pub(crate) fn gmem_range(
    operand: Operand,
    base: i32,
    offset: i64,
    len: u64,
) -> Result<(u32, u32), FaultKind> {
    let start = (base as u32 as i64).saturating_add(offset);
    if len == 0 {
        return Ok((0, 0));
    }
    if start < 0 || (start as u64).saturating_add(len) > GMEM_BYTES {
        return Err(FaultKind::GmemRange {
            operand,
            start,
            len,
        });
    }
    Ok((start as u32, len as u32))
}

/// Whether two non-empty byte ranges intersect.
#[inline]
pub(crate) fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    !a.is_empty() && !b.is_empty() && a.start < b.end && b.start < a.end
}

/// Reads the element of width `w` at `at`: `w.bytes()` bytes little-endian, the value being
/// the two's-complement number in the low `w.bits()` bits (bits above are ignored).
#[inline(always)]
pub(crate) fn load(mem: &[u8], at: usize, w: Width) -> i64 {
    // Fixed-size reads per byte width: a variable-length copy would call memmove per element.
    let raw: u64 = match w.bytes() {
        1 => mem[at] as u64,
        2 => u16::from_le_bytes([mem[at], mem[at + 1]]) as u64,
        3 => u32::from_le_bytes([mem[at], mem[at + 1], mem[at + 2], 0]) as u64,
        _ => u32::from_le_bytes([mem[at], mem[at + 1], mem[at + 2], mem[at + 3]]) as u64,
    };
    let shift = 64 - w.bits();
    ((raw << shift) as i64) >> shift
}

/// Wraps `v` to `bits` bits: the low `bits` bits, sign-extended. The flag says whether that
/// changed the value (an overflow event).
#[inline(always)]
pub(crate) fn fit(v: i128, bits: u32) -> (i64, bool) {
    let shift = 64 - bits;
    let low = ((v as i64) << shift) >> shift;
    (low, low as i128 != v)
}

/// Writes an already-wrapped value (see [`fit`]) as `w.bytes()` little-endian bytes: the
/// sign extension of the `w.bits()`-bit value into the byte width.
#[inline(always)]
pub(crate) fn store(mem: &mut [u8], at: usize, w: Width, v: i64) {
    let b = (v as u32).to_le_bytes();
    match w.bytes() {
        1 => mem[at] = b[0],
        2 => mem[at..at + 2].copy_from_slice(&b[..2]),
        3 => mem[at..at + 3].copy_from_slice(&b[..3]),
        _ => mem[at..at + 4].copy_from_slice(&b),
    }
}

/// Page size of the sparse global memory.
const PAGE_BITS: u32 = 12;
const PAGE: usize = 1 << PAGE_BITS;

/// The 4 GiB global memory, stored as 4 KiB pages (small, so that building a machine for a
/// tiny program costs little) allocated on first write; unwritten
/// bytes read as zero. It also remembers how far instructions touched it (the dump writes
/// `[0, touched_end)`), separately from what the host wrote.
#[derive(Default)]
pub(crate) struct GMem {
    pages: HashMap<u32, Box<[u8]>>,
    /// One past the highest byte any instruction read or wrote.
    pub touched_end: u64,
}

impl GMem {
    /// Copies `out.len()` bytes starting at `addr` into `out`. The caller checked the range.
    pub fn read(&self, addr: u32, out: &mut [u8]) {
        let mut a = addr as u64;
        let mut done = 0;
        while done < out.len() {
            let page = (a >> PAGE_BITS) as u32;
            let off = (a as usize) & (PAGE - 1);
            let n = (PAGE - off).min(out.len() - done);
            match self.pages.get(&page) {
                Some(p) => out[done..done + n].copy_from_slice(&p[off..off + n]),
                None => out[done..done + n].fill(0),
            }
            done += n;
            a += n as u64;
        }
    }

    /// Writes `data` at `addr`. The caller checked the range.
    pub fn write(&mut self, addr: u32, data: &[u8]) {
        let mut a = addr as u64;
        let mut done = 0;
        while done < data.len() {
            let page = (a >> PAGE_BITS) as u32;
            let off = (a as usize) & (PAGE - 1);
            let n = (PAGE - off).min(data.len() - done);
            let p = self
                .pages
                .entry(page)
                .or_insert_with(|| vec![0u8; PAGE].into_boxed_slice());
            p[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
            a += n as u64;
        }
    }

    /// Records that an instruction touched `[addr, addr + len)`.
    #[inline]
    pub fn touch(&mut self, addr: u32, len: u32) {
        if len > 0 {
            self.touched_end = self.touched_end.max(addr as u64 + len as u64);
        }
    }

    /// Streams `[0, end)` to `w`, zeros included, without materialising it.
    pub fn write_prefix(&self, end: u64, w: &mut impl std::io::Write) -> std::io::Result<()> {
        let zeros = vec![0u8; PAGE];
        let mut a = 0u64;
        while a < end {
            let page = (a >> PAGE_BITS) as u32;
            let n = ((PAGE as u64).min(end - a)) as usize;
            match self.pages.get(&page) {
                Some(p) => w.write_all(&p[..n])?,
                None => w.write_all(&zeros[..n])?,
            }
            a += n as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_sign_extends_from_the_low_bits() {
        let w7 = Width::new(7).unwrap();
        assert_eq!(load(&[0x40], 0, w7), -64);
        assert_eq!(load(&[0xbf], 0, w7), 63); // bit 7 is ignored
        let w9 = Width::new(9).unwrap();
        assert_eq!(load(&[0xff, 0x01], 0, w9), -1);
        assert_eq!(load(&[0xff, 0x00], 0, w9), 255);
        assert_eq!(
            load(&[0x00, 0x00, 0x00, 0x80], 0, Width::W32),
            i32::MIN as i64
        );
    }

    #[test]
    fn fit_wraps_and_flags() {
        assert_eq!(fit(127, 8), (127, false));
        assert_eq!(fit(128, 8), (-128, true));
        assert_eq!(fit(-129, 8), (127, true));
        assert_eq!(fit(1, 1), (-1, true));
        assert_eq!(fit(-1, 1), (-1, false));
        assert_eq!(fit(1 << 40, 32), (0, true));
    }

    #[test]
    fn gmem_spans_pages_and_reads_zero() {
        let mut g = GMem::default();
        let addr = (PAGE as u32) - 2;
        g.write(addr, &[1, 2, 3, 4]);
        let mut out = [9u8; 6];
        g.read(addr - 1, &mut out);
        assert_eq!(out, [0, 1, 2, 3, 4, 0]);
        g.write(u32::MAX, &[7]);
        let mut last = [0u8; 1];
        g.read(u32::MAX, &mut last);
        assert_eq!(last, [7]);
    }
}
