//! Per-case edge coverage: which edges between basic blocks of the compiler one case entered.
//!
//! The compiler is built with GCC's `-fsanitize-coverage=trace-pc` and linked against the
//! LD_PRELOAD shim (`scripts/pimcomp-shim.c`; PIMCOMP-NN's binary, PUMA's `libpuma.so`),
//! whose callback marks AFL's edge hash (block id xor the previous block's id shifted right
//! by one) in a byte map of [`EDGE_MAP_BYTES`] bytes. The map is a file the harness creates per run ([`EdgeMap::create`]) and names in
//! `$PIMDIFF_EDGE_MAP`; the compiler maps it shared, so the edges survive a crash and cost no
//! write at exit. After the run the harness reads it into an [`EdgeSet`].
//!
//! For coverage-guided generation: an edge id is stable across runs of one binary (blocks are
//! named by their offset in it, not their address), so sets of different cases of one hunt
//! compare; two ids may collide (a 64 KiB map, as AFL's), which only makes guidance coarser.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Bytes of the edge map; must match `PIMDIFF_EDGE_MAP_BYTES` in `scripts/pimcomp-shim.c`.
pub const EDGE_MAP_BYTES: usize = 1 << 16;

/// The file name of a run's edge map inside its working directory.
pub const EDGE_MAP_FILE: &str = "edges.map";

/// The environment variable naming the edge map to the shim.
pub const EDGE_MAP_ENV: &str = "PIMDIFF_EDGE_MAP";

/// The edges one or more runs entered: sorted, distinct ids below [`EDGE_MAP_BYTES`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct EdgeSet {
    ids: Vec<u32>,
}

impl EdgeSet {
    /// The set of the nonzero bytes of `map`.
    pub fn from_map(map: &[u8]) -> EdgeSet {
        let ids = map
            .iter()
            .enumerate()
            .filter(|(_, &b)| b != 0)
            .map(|(i, _)| i as u32)
            .collect();
        EdgeSet { ids }
    }

    /// The set of `ids` (any order, repeats allowed).
    pub fn from_ids(ids: impl IntoIterator<Item = u32>) -> EdgeSet {
        let mut ids: Vec<u32> = ids.into_iter().collect();
        ids.sort_unstable();
        ids.dedup();
        EdgeSet { ids }
    }

    /// The ids, ascending.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Adds every edge of `other`; returns how many were new.
    pub fn union_with(&mut self, other: &EdgeSet) -> usize {
        let before = self.ids.len();
        let mut merged = Vec::with_capacity(before + other.ids.len());
        let (mut a, mut b) = (self.ids.iter().peekable(), other.ids.iter().peekable());
        while let (Some(&&x), Some(&&y)) = (a.peek(), b.peek()) {
            if x <= y {
                merged.push(x);
                a.next();
                if x == y {
                    b.next();
                }
            } else {
                merged.push(y);
                b.next();
            }
        }
        merged.extend(a);
        merged.extend(b);
        self.ids = merged;
        self.ids.len() - before
    }

    /// How many edges of `self` are not in `seen` (what a guided hunt rewards).
    pub fn new_against(&self, seen: &EdgeSet) -> usize {
        self.ids
            .iter()
            .filter(|id| seen.ids.binary_search(id).is_err())
            .count()
    }
}

/// One run's edge map: a zeroed file of [`EDGE_MAP_BYTES`] bytes.
#[derive(Clone, Debug)]
pub struct EdgeMap {
    path: PathBuf,
}

impl EdgeMap {
    /// Creates `dir/edges.map`, zeroed.
    pub fn create(dir: &Path) -> std::io::Result<EdgeMap> {
        let path = dir.join(EDGE_MAP_FILE);
        File::create(&path)?.write_all(&[0u8; EDGE_MAP_BYTES])?;
        Ok(EdgeMap { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The edges marked in the map (a short or missing map: what it holds, bounded by
    /// [`EDGE_MAP_BYTES`]).
    pub fn read(&self) -> std::io::Result<EdgeSet> {
        let mut bytes = Vec::with_capacity(EDGE_MAP_BYTES);
        File::open(&self.path)?
            .take(EDGE_MAP_BYTES as u64)
            .read_to_end(&mut bytes)?;
        Ok(EdgeSet::from_map(&bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_reads_as_its_nonzero_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let map = EdgeMap::create(dir.path()).unwrap();
        assert_eq!(map.read().unwrap(), EdgeSet::default());
        let mut bytes = std::fs::read(map.path()).unwrap();
        assert_eq!(bytes.len(), EDGE_MAP_BYTES);
        bytes[3] = 1;
        bytes[EDGE_MAP_BYTES - 1] = 7;
        std::fs::write(map.path(), &bytes).unwrap();
        assert_eq!(map.read().unwrap().ids(), &[3, EDGE_MAP_BYTES as u32 - 1]);
    }

    #[test]
    fn union_counts_only_new_edges() {
        let mut a = EdgeSet::from_ids([5, 1, 3, 3]);
        assert_eq!(a.ids(), &[1, 3, 5]);
        let b = EdgeSet::from_ids([3, 4, 9]);
        assert_eq!(b.new_against(&a), 2);
        assert_eq!(a.union_with(&b), 2);
        assert_eq!(a.ids(), &[1, 3, 4, 5, 9]);
        assert_eq!(a.union_with(&b), 0);
    }
}
