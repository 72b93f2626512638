//! Shadow memory: one value of any type per byte of every memory, for observers that track
//! something per byte (who wrote it, where it came from, whether it was initialized, which
//! accesses to it are still unordered).
//!
//! Both spaces are paged (4 KiB pages of `T`, allocated on first write, so a shadow costs
//! nothing for memory a run never touches): each core's local memory has a directly indexed
//! page table (dense: a local address finds its page without hashing), the 4 GiB global
//! memory a hash map of pages (sparse). A byte that was never written reads as
//! `T::default()`.

use std::collections::HashMap;

use super::bytes::{Bytes, Space};

const PAGE_BITS: u32 = 12;
const PAGE: usize = 1 << PAGE_BITS;

/// Per-byte state of type `T` over every local memory and the global memory.
pub struct ShadowMemory<T> {
    local_memory_bytes: u32,
    /// Per core, a page table covering its local memory (empty until first written).
    lmem: Vec<Vec<Option<Box<[T]>>>>,
    gmem: HashMap<u32, Box<[T]>>,
    /// A page of defaults: what untouched pages read as.
    blank: Box<[T]>,
    scratch: Vec<T>,
}

impl<T: Clone + Default> ShadowMemory<T> {
    /// A shadow for `cores` local memories of `local_memory_bytes` each, and the global memory.
    pub fn new(cores: u32, local_memory_bytes: u32) -> Self {
        ShadowMemory {
            local_memory_bytes,
            lmem: (0..cores).map(|_| Vec::new()).collect(),
            gmem: HashMap::new(),
            blank: vec![T::default(); PAGE].into_boxed_slice(),
            scratch: Vec::new(),
        }
    }

    /// The state of one byte.
    ///
    /// # Panics
    /// When the byte lies outside its memory (events from the machine never do).
    pub fn get(&self, space: Space, addr: u32) -> &T {
        self.check(Bytes {
            space,
            start: addr,
            len: 1,
        });
        let page = self.page(space, addr >> PAGE_BITS);
        &page[addr as usize & (PAGE - 1)]
    }

    /// Calls `f(address, states)` for consecutive pieces of `bytes`, in address order.
    ///
    /// # Panics
    /// When `bytes` lies outside its memory.
    pub fn chunks(&self, bytes: Bytes, mut f: impl FnMut(u32, &[T])) {
        self.check(bytes);
        for (page, off, addr, n) in pieces(bytes) {
            f(addr, &self.page(bytes.space, page)[off..off + n]);
        }
    }

    /// Calls `f(address, states)` with mutable access, allocating pages as needed.
    ///
    /// # Panics
    /// When `bytes` lies outside its memory.
    pub fn chunks_mut(&mut self, bytes: Bytes, mut f: impl FnMut(u32, &mut [T])) {
        self.check(bytes);
        for (page, off, addr, n) in pieces(bytes) {
            f(addr, &mut self.page_mut(bytes.space, page)[off..off + n]);
        }
    }

    /// Sets every byte of `bytes` to `value`.
    pub fn fill(&mut self, bytes: Bytes, value: T) {
        self.chunks_mut(bytes, |_, s| s.fill(value.clone()));
    }

    /// Gives `dst` the states of `srcs`, concatenated in order (what a copy of the bytes does
    /// to them). Copies as many states as both sides have.
    pub fn copy(&mut self, srcs: &[Bytes], dst: Bytes) {
        let mut states = std::mem::take(&mut self.scratch);
        states.clear();
        for &src in srcs {
            self.chunks(src, |_, s| states.extend_from_slice(s));
        }
        let mut from = states.iter();
        self.chunks_mut(dst, |_, s| {
            for (d, v) in s.iter_mut().zip(&mut from) {
                d.clone_from(v);
            }
        });
        self.scratch = states;
    }

    fn check(&self, bytes: Bytes) {
        match bytes.space {
            Space::Lmem(core) => assert!(
                (core as usize) < self.lmem.len() && bytes.end() <= self.local_memory_bytes as u64,
                "{bytes} lies outside the shadowed local memories ({} cores of {} bytes)",
                self.lmem.len(),
                self.local_memory_bytes
            ),
            Space::Gmem => assert!(bytes.end() <= 1 << 32, "{bytes} lies past 4 GiB"),
        }
    }

    fn page(&self, space: Space, page: u32) -> &[T] {
        let p = match space {
            Space::Lmem(core) => self.lmem[core as usize]
                .get(page as usize)
                .and_then(Option::as_ref),
            Space::Gmem => self.gmem.get(&page),
        };
        p.unwrap_or(&self.blank)
    }

    fn page_mut(&mut self, space: Space, page: u32) -> &mut [T] {
        let new = || vec![T::default(); PAGE].into_boxed_slice();
        match space {
            Space::Lmem(core) => {
                let table = &mut self.lmem[core as usize];
                if table.is_empty() {
                    let pages = (self.local_memory_bytes as usize).div_ceil(PAGE);
                    table.resize_with(pages, || None);
                }
                table[page as usize].get_or_insert_with(new)
            }
            Space::Gmem => self.gmem.entry(page).or_insert_with(new),
        }
    }
}

/// `bytes` split at page boundaries: `(page, offset in page, address, length)`.
fn pieces(bytes: Bytes) -> impl Iterator<Item = (u32, usize, u32, usize)> {
    let end = bytes.end();
    let mut a = bytes.start as u64;
    std::iter::from_fn(move || {
        if a >= end {
            return None;
        }
        let off = (a as usize) & (PAGE - 1);
        let n = ((PAGE - off) as u64).min(end - a) as usize;
        let piece = ((a >> PAGE_BITS) as u32, off, a as u32, n);
        a += n as u64;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(space: Space, start: u32, len: u32) -> Bytes {
        Bytes { space, start, len }
    }

    #[test]
    fn untouched_bytes_read_as_default() {
        let s: ShadowMemory<u32> = ShadowMemory::new(2, 10_000);
        assert_eq!(*s.get(Space::Lmem(1), 9_999), 0);
        assert_eq!(*s.get(Space::Gmem, u32::MAX), 0);
    }

    #[test]
    fn fill_and_copy_cross_pages_and_spaces() {
        let mut s: ShadowMemory<u16> = ShadowMemory::new(2, 3 * PAGE as u32);
        s.fill(b(Space::Gmem, PAGE as u32 - 2, 4), 7);
        s.fill(b(Space::Gmem, u32::MAX, 1), 9);
        let mut seen = Vec::new();
        s.chunks(b(Space::Gmem, PAGE as u32 - 3, 6), |a, st| {
            seen.push((a, st.to_vec()))
        });
        assert_eq!(
            seen,
            vec![
                (PAGE as u32 - 3, vec![0, 7, 7]),
                (PAGE as u32, vec![7, 7, 0])
            ]
        );
        // Two sources, concatenated, into a range that spans two pages of core 1.
        s.copy(
            &[
                b(Space::Gmem, PAGE as u32 - 1, 2),
                b(Space::Gmem, u32::MAX, 1),
            ],
            b(Space::Lmem(1), 2 * PAGE as u32 - 1, 3),
        );
        let got: Vec<u16> = (0..4)
            .map(|i| *s.get(Space::Lmem(1), 2 * PAGE as u32 - 1 + i))
            .collect();
        assert_eq!(got, vec![7, 7, 9, 0]);
        assert_eq!(*s.get(Space::Lmem(0), 2 * PAGE as u32 - 1), 0);
    }
}
