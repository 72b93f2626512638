//! [`GenConfig`]: how large and how edge-biased the generator's cases are.

use serde::{Deserialize, Serialize};

/// Size bounds and biases of the generator.
///
/// The defaults keep every case tiny, so that generate + compile + interpret + oracle takes
/// well under a millisecond: bugs in channel-wise lowering show at tile boundaries, and tiles
/// are as small as the architecture says, so small arrays with small channel counts hit every
/// tiling edge (−1, =, +1, several tiles) without big tensors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GenConfig {
    /// Largest channel count (conv2d `C` and `K`, MVM features). Default 8: with arrays of up
    /// to 8 rows/columns this covers one tile, a tile ± 1 and several tiles.
    pub max_channels: usize,
    /// Largest input height and width. Default 6: border, corner and interior output pixels
    /// all exist for a 3×3 kernel, and padded/strided windows still fall off the edges.
    pub max_spatial: usize,
    /// Largest kernel height and width. Default 3: every kernel-position skipping path (corner,
    /// edge, interior) exists, and a 3-wide kernel is already larger than 1–2 pixel inputs.
    pub max_kernel: usize,
    /// Largest batch. Default 2: batch > 1 catches per-image offset bugs; more adds only time.
    pub max_batch: usize,
    /// Largest core count. Default 4: enough for cross-core reductions through a middle core
    /// (sends to and from the same core) while keeping the program small.
    pub max_cores: usize,
    /// Largest arrays per core. Default 16: a conv2d's (input tile × output tile × kernel
    /// position) crossbars usually fit a few cores, and sometimes spill across cores.
    pub max_arrays_per_core: usize,
    /// Largest array rows/columns. Default 8: tiles of 1..8 against channel counts of 1..8
    /// give every tiling edge; real arrays (128) would need 1000× larger tensors for the same.
    pub max_array_dim: usize,
    /// Largest local memory per core in bytes. Default 65536: far above what a default case
    /// needs, so memory is only tight when the generator makes it so on purpose.
    pub max_local_memory_bytes: usize,
    /// Share of MVM cases (the rest are conv2d). Default 0.25: MVM is the 1×1, 1-pixel special
    /// case and has fewer edges.
    pub mvm_ratio: f64,
    /// Share of "edge" choices wherever a choice has an edge value (tile ± 1, 1-row arrays,
    /// stride > kernel, ...). Default 0.5: half the choices sit on an edge, half are plain
    /// random, so both edge and ordinary shapes are frequent.
    pub edge_ratio: f64,
    /// Share of cases whose architecture deliberately does not fit the operator (too few
    /// arrays or too little local memory). Default 0.03: the capacity checks are exercised
    /// without wasting many cases on *unsupported*.
    pub overcommit_ratio: f64,
    /// Share of cases whose local memory sits at a bufferization edge of the in-repo compiler
    /// (exactly at a mode's threshold, just above, one byte below), leaning to batches above
    /// one. Default 0.25: without it, the gathering modes were never reached.
    pub memory_edge_ratio: f64,
    /// Share of cases compiled without padding skipping (the in-repo compiler's
    /// `--no-skip-padding`; [`super::options`]), three times that among cases whose local
    /// memory sits at a bufferization edge. Default 0.1 (16% of all cases): the zero-padded
    /// windows, chunked and gathered, get tested in every hunt (a padded case multiplies its
    /// padding too: with the next share, 0–2% more CPU per case, 6–9% with both lowerings;
    /// `docs/tensor-coverage.md`).
    pub no_skip_padding_ratio: f64,
    /// Share of cases compiled without weight skipping (`--no-weight-skipping`). Default 0.1:
    /// all-zero crossbars kept and multiplied (the generator sizes every architecture for
    /// that already, so it declines nothing more).
    pub no_weight_skipping_ratio: f64,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_channels: 8,
            max_spatial: 6,
            max_kernel: 3,
            max_batch: 2,
            max_cores: 4,
            max_arrays_per_core: 16,
            max_array_dim: 8,
            max_local_memory_bytes: 1 << 16,
            mvm_ratio: 0.25,
            edge_ratio: 0.5,
            overcommit_ratio: 0.03,
            memory_edge_ratio: 0.25,
            no_skip_padding_ratio: 0.1,
            no_weight_skipping_ratio: 0.1,
        }
    }
}

impl GenConfig {
    /// Every bound at least 1 (and the ratios clamped to `0..=1`), so that any configuration,
    /// even one from a command line of zeros, generates valid cases.
    pub fn sanitized(&self) -> GenConfig {
        let clamp = |r: f64| {
            if r.is_finite() {
                r.clamp(0.0, 1.0)
            } else {
                0.0
            }
        };
        GenConfig {
            max_channels: self.max_channels.clamp(1, 1 << 10),
            max_spatial: self.max_spatial.clamp(1, 1 << 8),
            max_kernel: self.max_kernel.clamp(1, 16),
            max_batch: self.max_batch.clamp(1, 64),
            max_cores: self.max_cores.clamp(1, 256),
            max_arrays_per_core: self.max_arrays_per_core.clamp(1, 1 << 10),
            max_array_dim: self.max_array_dim.clamp(1, 512),
            max_local_memory_bytes: self.max_local_memory_bytes.clamp(64, 1 << 24),
            mvm_ratio: clamp(self.mvm_ratio),
            edge_ratio: clamp(self.edge_ratio),
            overcommit_ratio: clamp(self.overcommit_ratio),
            memory_edge_ratio: clamp(self.memory_edge_ratio),
            no_skip_padding_ratio: clamp(self.no_skip_padding_ratio),
            no_weight_skipping_ratio: clamp(self.no_weight_skipping_ratio),
        }
    }
}
