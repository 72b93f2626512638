//! Size limits of a case.
//!
//! A case comes from outside (a user, a NumPy script, another tool, a fuzzer), so every size
//! in it is bounded before anything is allocated or computed. The limits let every ResNet-18
//! layer through at batch 1 with wide margins, and stop a hostile case from exhausting memory
//! or time:
//!
//! | ResNet-18 layer | input | weight | output | MACs |
//! |---|---|---|---|---|
//! | conv1, 3→64, 7×7 /2, 224² | 150 528 | 9 408 | 802 816 | 118 M |
//! | 64→64, 3×3, 56² | 200 704 | 36 864 | 200 704 | 116 M |
//! | 512→512, 3×3, 7² | 25 088 | 2 359 296 | 25 088 | 116 M |
//! | fc, 512→1000 | 512 | 512 000 | 1 000 | 0.5 M |
//!
//! Largest allowed: 16 Mi elements per tensor (16 MiB of int8 input or weight, 64 MiB of int32
//! output) and 2^32 multiply-accumulates (about half a second for the fast oracle, 37 times
//! the ResNet-18 layers above; measured: 116 M MACs in 12 ms fast, 430 ms direct).
//!
//! The architecture is bounded too, because the interpreter allocates every core's local
//! memory and every crossbar cell: PIMCOMP-NN's own configuration (136 cores of 64 arrays of
//! 128×128) passes.

/// Every tensor dimension: batch `N`, channels `C` and `K`, `H`, `W`, `kh`, `kw`,
/// `in_features`, `out_features`.
pub const MAX_DIM: usize = 1 << 16;

/// Every stride, dilation and padding value.
pub const MAX_WINDOW_PARAM: usize = 1 << 10;

/// Elements of `input.npy`.
pub const MAX_INPUT_ELEMENTS: usize = 1 << 24;

/// Elements of `weight.npy`.
pub const MAX_WEIGHT_ELEMENTS: usize = 1 << 24;

/// Elements of the output (and of `expected.npy`).
pub const MAX_OUTPUT_ELEMENTS: usize = 1 << 24;

/// Multiply-accumulates of the whole operator: `N·K·OH·OW·(C/groups)·kh·kw` for conv2d,
/// `N·out_features·in_features` for MVM.
pub const MAX_MACS: u64 = 1 << 32;

/// `arch.cores`.
pub const MAX_CORES: usize = 1 << 12;

/// `arch.arrays_per_core`.
pub const MAX_ARRAYS_PER_CORE: usize = 1 << 12;

/// `arch.array_rows` and `arch.array_cols`.
pub const MAX_ARRAY_DIM: usize = 1 << 12;

/// `arch.local_memory_bytes` (one core).
pub const MAX_LOCAL_MEMORY_BYTES: usize = 1 << 28;

/// `arch.cores · arch.local_memory_bytes`: the local memory of the whole chip.
pub const MAX_TOTAL_LOCAL_MEMORY_BYTES: u64 = 1 << 30;

/// `arch.cores · arch.arrays_per_core · arch.array_rows · arch.array_cols`: every crossbar
/// cell of the chip.
pub const MAX_TOTAL_CROSSBAR_CELLS: u64 = 1 << 28;

/// Size of `case.json` in bytes. The file sizes of a case are bounded by the shared reader;
/// its crate documents every file limit (`pimdiff_input`, e.g. `MAX_CASE_NPY_BYTES`).
pub const MAX_CASE_JSON_BYTES: u64 = pimdiff_input::limits::MAX_CASE_JSON_BYTES.bytes;

/// Size of one `.npy` tensor file of a case: 16 Mi int32 elements and a header.
pub const MAX_CASE_NPY_BYTES: u64 = pimdiff_input::limits::MAX_CASE_NPY_BYTES.bytes;

/// Size of a `.npy` header (the dictionary) in bytes. NumPy writes about 128.
pub const MAX_NPY_HEADER_BYTES: usize = pimdiff_input::npy::MAX_HEADER_BYTES;
