//! The global buffer: `GBBuf[0]` elements, each either never written or holding an exact
//! integer and the line that wrote it. Pages are allocated on first write, so a chip with the
//! example configuration's 786 432 elements costs what its network touches.

use std::fmt;

/// Elements per page.
const PAGE: usize = 4096;

/// Who last wrote an element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Writer {
    /// The host, before the run: the network's input, an initializer or a constant.
    Host,
    /// The meta-operator on this 1-based line of the flow.
    Line(u32),
}

impl fmt::Display for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Writer::Host => f.write_str("the host"),
            Writer::Line(l) => write!(f, "line {l}"),
        }
    }
}

/// Encoded writers: 0 never written, `u32::MAX` the host, else the line.
const NEVER: u32 = 0;
const HOST: u32 = u32::MAX;

#[derive(Clone)]
struct Page {
    values: Box<[i64; PAGE]>,
    writers: Box<[u32; PAGE]>,
}

/// Why an access to the buffer fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferError {
    /// `addr` is negative or at least the buffer's size.
    OutOfBounds { addr: i64 },
    /// `addr` is inside the buffer but nothing wrote it.
    NeverWritten { addr: u64 },
}

/// The chip's global buffer.
#[derive(Clone)]
pub struct GlobalBuffer {
    size: u64,
    pages: Vec<Option<Page>>,
}

impl fmt::Debug for GlobalBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pages = self.pages.iter().filter(|p| p.is_some()).count();
        write!(f, "GlobalBuffer {{ size: {}, pages: {pages} }}", self.size)
    }
}

impl GlobalBuffer {
    /// An empty buffer of `size` elements (at most `layout::MAX_BUFFER_ELEMENTS`).
    pub fn new(size: u64) -> GlobalBuffer {
        let pages = size.div_ceil(PAGE as u64) as usize;
        GlobalBuffer {
            size,
            pages: vec![None; pages],
        }
    }

    /// Its size in elements.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The element range `[addr, addr + len)` as indices, if it lies inside the buffer;
    /// otherwise the first address outside.
    pub fn span(&self, addr: i64, len: u64) -> Result<(u64, u64), BufferError> {
        if addr < 0 {
            return Err(BufferError::OutOfBounds { addr });
        }
        let start = addr as u64;
        if start >= self.size && len > 0 {
            return Err(BufferError::OutOfBounds { addr });
        }
        match start.checked_add(len) {
            Some(end) if end <= self.size => Ok((start, end)),
            _ => Err(BufferError::OutOfBounds {
                addr: i64::try_from(self.size.max(start)).unwrap_or(i64::MAX),
            }),
        }
    }

    /// The element at `addr`, `None` if never written or outside.
    pub fn get(&self, addr: u64) -> Option<i64> {
        let page = self.pages.get((addr / PAGE as u64) as usize)?.as_ref()?;
        let i = (addr % PAGE as u64) as usize;
        (page.writers[i] != NEVER).then(|| page.values[i])
    }

    /// Who last wrote the element at `addr`.
    pub fn writer(&self, addr: u64) -> Option<Writer> {
        let page = self.pages.get((addr / PAGE as u64) as usize)?.as_ref()?;
        match page.writers[(addr % PAGE as u64) as usize] {
            NEVER => None,
            HOST => Some(Writer::Host),
            line => Some(Writer::Line(line)),
        }
    }

    /// The elements `[addr, addr + len)`: all inside and written, or the first that is not.
    pub fn read(&self, addr: i64, len: u64) -> Result<Vec<i64>, BufferError> {
        let (start, end) = self.span(addr, len)?;
        // Grown as elements prove written: a read of unwritten memory costs nothing.
        let mut out = Vec::new();
        for a in start..end {
            match self.get(a) {
                Some(v) => out.push(v),
                None => return Err(BufferError::NeverWritten { addr: a }),
            }
        }
        Ok(out)
    }

    /// Write `values` at `addr` on behalf of `writer`.
    pub fn write(&mut self, addr: i64, values: &[i64], writer: Writer) -> Result<(), BufferError> {
        let (start, _) = self.span(addr, values.len() as u64)?;
        let code = match writer {
            Writer::Host => HOST,
            Writer::Line(l) => l.max(1),
        };
        for (k, &v) in values.iter().enumerate() {
            let a = start + k as u64;
            let page = self.pages[(a / PAGE as u64) as usize].get_or_insert_with(|| Page {
                values: Box::new([0; PAGE]),
                writers: Box::new([NEVER; PAGE]),
            });
            let i = (a % PAGE as u64) as usize;
            page.values[i] = v;
            page.writers[i] = code;
        }
        Ok(())
    }

    /// The elements `[start, start + len)` as options (`None`: never written or outside).
    pub fn snapshot(&self, start: u64, len: u64) -> Vec<Option<i64>> {
        (0..len)
            .map(|k| start.checked_add(k).and_then(|a| self.get(a)))
            .collect()
    }

    /// How many elements were ever written.
    pub fn written(&self) -> u64 {
        self.pages
            .iter()
            .flatten()
            .map(|p| p.writers.iter().filter(|w| **w != NEVER).count() as u64)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_written_and_out_of_bounds_differ() {
        let mut b = GlobalBuffer::new(10_000);
        b.write(4094, &[7, 8, 9], Writer::Line(3)).unwrap();
        assert_eq!(b.read(4094, 3).unwrap(), vec![7, 8, 9]);
        assert_eq!(b.writer(4096), Some(Writer::Line(3)));
        assert_eq!(
            b.read(4093, 2),
            Err(BufferError::NeverWritten { addr: 4093 })
        );
        assert_eq!(
            b.read(9_999, 2),
            Err(BufferError::OutOfBounds { addr: 10_000 })
        );
        assert_eq!(b.read(-1, 1), Err(BufferError::OutOfBounds { addr: -1 }));
        assert_eq!(b.read(10_000, 0), Ok(vec![]));
        assert_eq!(b.written(), 3);
        assert_eq!(b.snapshot(4095, 3), vec![Some(8), Some(9), None]);
    }
}
