//! Byte ranges of the machine's memories, as events, shadow memories and findings name them.

/// A memory space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Space {
    /// The local memory of core `.0`.
    Lmem(u32),
    /// The global memory shared by all cores.
    Gmem,
}

/// A non-empty byte range `[start, start + len)` of one memory space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bytes {
    pub space: Space,
    pub start: u32,
    pub len: u32,
}

impl Bytes {
    /// One past the last byte (a global range may end at exactly 2^32).
    pub fn end(&self) -> u64 {
        self.start as u64 + self.len as u64
    }

    /// Whether the two ranges share a byte (same space, intersecting).
    pub fn overlaps(&self, other: &Bytes) -> bool {
        self.space == other.space
            && (self.start as u64) < other.end()
            && (other.start as u64) < self.end()
    }
}

impl std::fmt::Display for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.space {
            Space::Lmem(c) => write!(f, "lmem{c}")?,
            Space::Gmem => write!(f, "gmem")?,
        }
        write!(f, "[{}, {})", self.start, self.end())
    }
}
