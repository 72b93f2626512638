//! The compilers under test, one folder each: what a case is, how it is generated, run,
//! judged, shrunk and saved. The engine (`crate::engine`) runs any of them.

pub mod pimcomp_nn;
pub mod puma;
pub mod tensor;
