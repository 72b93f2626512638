//! `check.py`: the standalone checker written into every case directory.
//!
//! One script for every case (it reads `case.json`), NumPy only, no arguments: it recomputes
//! the output from the `.npy` files in exact int64 arithmetic and compares it with
//! `expected.npy`. Exit 0 on agreement, 1 with the first differing elements, 2 when the case
//! cannot be checked. The source is `targets/pimsim/src/interop/check.py`; its docstring is the user's manual.

/// The content of `check.py`.
pub const SCRIPT: &str = include_str!("check.py");
