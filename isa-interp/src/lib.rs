//! The PIMSim ISA as this project executes it (`docs/isa.md`): typed instructions,
//! the program formats (pimsim-nn / PIMCOMP-NN JSON, plain, gzip or directory; our
//! assembly text), the crossbar export, and the functional multi-core interpreter with
//! its network-on-chip.

pub mod bundle;
pub mod formats;
#[cfg(feature = "gen")]
pub mod gen;
pub mod inst;
pub mod machine;
pub mod program;
pub mod schema;
mod typed;
pub mod xbar;

pub use bundle::{Bundle, BundleError, ConstSegment, Dtype, IoManifest, Layout, TensorSlot};
pub use inst::{Inst, Opcode, Reg, Width};
pub use program::{Arch, ArchHints, GroupSpec, Program};
pub use xbar::{ArrayGroup, CoreCrossbars, CrossbarExport};
