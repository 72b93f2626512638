//! pimdiff: the differential-testing harness for crossbar compilers.
//!
//! The CLI (`src/main.rs`) is a thin caller of this library.

pub mod cli;
pub mod fuzz_targets;
pub mod corpus;
pub mod hunt;
pub mod compare;
pub mod driver;
pub mod external;
pub mod generate;
pub mod minimize;
pub mod mutate;
pub mod outcome;
pub mod report;
