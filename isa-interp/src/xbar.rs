//! The crossbar export: every core's array cells and array-group table
//! (`core_<i>.npy` + `core_<i>.json`, isa.md "The crossbar export").
//!
//! The compiler writes it before lowering forgets the weights; the machine's only source of
//! weights is this value (or, for programs that carry just an `array_group_map`, full-size
//! groups of zero or seeded-random cells).

use std::collections::BTreeMap;

use ndarray::Array3;

/// All cores' crossbar contents. A core absent from the map has no groups.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrossbarExport {
    pub cores: BTreeMap<u32, CoreCrossbars>,
}

/// One core's arrays and groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreCrossbars {
    /// Informational weight width (`mvmul`'s own `mbiw` is the one checked).
    pub mbiw: u32,
    /// `[arrays_per_core, array_rows, array_cols]`; cell `[a, r, c]` is row `r`, column `c`
    /// of array `a`.
    pub cells: Array3<i32>,
    pub groups: Vec<ArrayGroup>,
}

/// One array group: arrays side by side, fed the same `rows`-element input, producing
/// `cols` outputs. `W[r][j] = cells[arrays[j / array_cols], r, j % array_cols]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayGroup {
    pub group: u32,
    pub arrays: Vec<u32>,
    pub rows: u32,
    pub cols: u32,
}
