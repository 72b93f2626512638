//! The exact integer reference for conv2d and MVM, and the on-disk case format
//! (`shared/docs/case-format.md`).

pub mod case;

pub use case::{Case, CaseArch, CaseSpec, Conv2d, Mvm, Op};
