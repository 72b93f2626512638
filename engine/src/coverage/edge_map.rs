//! Per-case edge coverage: which edges between basic blocks of the compiler one case entered.
//!
//! The compiler is built with GCC's `-fsanitize-coverage=trace-pc` and linked against the
//! LD_PRELOAD shim (`scripts/pimcomp-shim.c`; PIMCOMP-NN's binary, PUMA's `libpuma.so`),
//! whose callback marks AFL's edge hash (block id xor the previous block's id shifted right
//! by one) in a byte map of [`EDGE_MAP_BYTES`] bytes. The map is a file the harness creates per run ([`EdgeMap::create`]) and names in
//! `$PIMDIFF_EDGE_MAP`; the compiler maps it shared, so the edges survive a crash and cost no
//! write at exit. After the run the harness reads it into [`Edges`], the engine's one edge-set type.
//!
//! For coverage-guided generation: an edge id is stable across runs of one binary (blocks are
//! named by their offset in it, not their address), so sets of different cases of one hunt
//! compare; two ids may collide (a 64 KiB map, as AFL's), which only makes guidance coarser.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::edges::Edges;

/// Bytes of the edge map; must match `PIMDIFF_EDGE_MAP_BYTES` in `scripts/pimcomp-shim.c`.
pub const EDGE_MAP_BYTES: usize = 1 << 16;

/// The file name of a run's edge map inside its working directory.
pub const EDGE_MAP_FILE: &str = "edges.map";

/// The environment variable naming the edge map to the shim.
pub const EDGE_MAP_ENV: &str = "PIMDIFF_EDGE_MAP";

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

    /// The variable that tells a compile's shim where this map is ([`EDGE_MAP_ENV`]).
    pub fn environment(&self) -> (String, String) {
        (
            EDGE_MAP_ENV.to_string(),
            self.path.to_string_lossy().into_owned(),
        )
    }

    /// The edges marked in the map (a short or missing map: what it holds, bounded by
    /// [`EDGE_MAP_BYTES`]).
    pub fn read(&self) -> std::io::Result<Edges> {
        let mut bytes = Vec::with_capacity(EDGE_MAP_BYTES);
        File::open(&self.path)?
            .take(EDGE_MAP_BYTES as u64)
            .read_to_end(&mut bytes)?;
        let marked = bytes.iter().enumerate().filter(|(_, &b)| b != 0);
        Ok(Edges::new(marked.map(|(i, _)| i as u32).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_reads_as_its_nonzero_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let map = EdgeMap::create(dir.path()).unwrap();
        assert_eq!(map.read().unwrap(), Edges::default());
        let mut bytes = std::fs::read(map.path()).unwrap();
        assert_eq!(bytes.len(), EDGE_MAP_BYTES);
        bytes[3] = 1;
        bytes[EDGE_MAP_BYTES - 1] = 7;
        std::fs::write(map.path(), &bytes).unwrap();
        assert_eq!(map.read().unwrap().ids(), &[3, EDGE_MAP_BYTES as u32 - 1]);
    }
}
