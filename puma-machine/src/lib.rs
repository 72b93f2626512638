//! The PUMA ISA as this project executes it (`docs/puma-isa.md`): the program and weight files
//! the PUMA compiler writes for one model, and a register-accurate interpreter of its tiles and
//! cores that follows the PUMA simulator's rules, with exact integer arithmetic.
//!
//! - [`isa`]: the instruction sets of tiles and cores, from one table each.
//! - [`formats`]: reading a compiled model directory (`<model>-tile<T>.puma`,
//!   `<model>-tile<T>-core<C>.puma`, `<model>-tile<T>-core<C>-mvmu<M>.weights`), every
//!   malformed line a typed error naming its file and line.
//! - [`model`]: the loaded model: tiles, their cores and crossbar contents.
//! - [`machine`]: the interpreter: [`Machine`] loads a model, takes inputs at places the caller
//!   names, runs to a [`RunOutcome`] and hands back the values at other places, with the
//!   instruction that wrote each.
//! - [`fixed`]: the simulator's fixed-point ALU functions, in integers.
//! - [`arch`]: the architecture constants (register map, memory sizes) the two tools share.
//!
//! Nothing here depends on the harness.

pub mod arch;
pub mod fixed;
pub mod formats;
pub mod isa;
pub mod machine;
pub mod model;
mod operand;
pub mod values;

pub use isa::{CoreInst, CoreOpcode, TileInst, TileOpcode};
pub use machine::{Machine, MachineOptions, Quirks, RunOutcome};
pub use model::{Core, Model, Tile, Weights};
pub use values::{AluOp, IntOp, Mask, Real};
