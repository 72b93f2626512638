//! Conv2d and MVM cases through a compiler that speaks the bundle protocol: the in-repo
//! compiler (either lowering, or both as N versions), an external command, or an injected bug.

pub mod detection;
pub mod generate;
pub mod reductions;
