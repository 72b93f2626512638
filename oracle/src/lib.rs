//! The exact integer reference for conv2d and MVM, and the on-disk case format
//! (`docs/case-format.md`).
//!
//! - [`conv2d`], [`mvm()`]: the fast reference the harness compares against;
//!   [`conv2d_direct`], [`mvm_direct`]: the same operators as plain loops, kept only to check
//!   the fast ones (proptest, `tests/agree.rs`). All four compute the mathematically exact
//!   value (int8 × int8 products, sums without loss, int32 bias) and refuse with
//!   [`OracleError::Overflow`] a value before ReLU that does not fit int32.
//! - [`reference()`]: the fast reference of a whole [`Case`].
//! - [`Case`], [`CaseSpec`], ...: the case in memory; [`io::read_case`] and
//!   [`io::write_case`]: the case directory on disk; [`limits`]: the documented size bounds.
//! - [`random_tensors`]: a random valid case for a spec (for `pimdiff new-case`).
//! - [`graph`]: the wrap-8 reference of a whole network (every value int8, wrapping), built
//!   on the operators above.
//!
//! A `Case` built by [`Case::new`] or [`io::read_case`] is valid: its shapes agree with its
//! spec, its sizes are within the limits, and its exact result fits int32.
//!
//! # Decisions where `case-format.md` leaves room
//!
//! - Every `case.json` field is required (no defaults), and unknown fields are refused with
//!   their name: a misspelt field must not silently become a default.
//! - The int32 range is checked on the value *before* ReLU (sum plus bias), not only on the
//!   final output: every lowering computes that value in int32, so a case whose pre-ReLU value
//!   overflows could only produce false findings.
//! - int8 tensors may be `<i1` or `|i1` (also `i1`, `>i1`: the same bytes); int32 tensors must
//!   be `<i4`. Column-major (`fortran_order: True`) files are read correctly. Data shorter or
//!   longer than the header's shape is refused.
//! - `bias.npy` present while `op.bias` is false is refused, as the format says "absent
//!   otherwise". Files other than the five known names are ignored.
//! - [`io::write_case`] refuses to overwrite a non-empty directory; [`io::replace_case`]
//!   replaces one (rename aside, rename in, delete).

pub mod case;
pub mod conv;
pub mod error;
pub mod graph;
pub mod io;
mod json;
pub mod limits;
pub mod mvm;
mod npy;
mod random;

use ndarray::{ArrayD, Ix1, Ix2, Ix4};

pub use case::{Case, CaseArch, CaseSpec, Conv2d, Mvm, Op};
pub use conv::{conv2d, conv2d_direct};
pub use error::{CaseError, OracleError};
pub use json::{case_schema, FORMAT_VERSION};
pub use mvm::{mvm, mvm_direct};
pub use random::{random_tensors, BIAS_RANGE};

/// The reference output of `case`, from the fast implementations: conv2d `[N, K, OH, OW]`
/// (NCHW), mvm `[N, out_features]`.
///
/// Errors: [`OracleError::Overflow`] (impossible for a case built by [`Case::new`] or read
/// by [`io::read_case`], which refuse such cases), and [`OracleError::Invalid`] when a
/// tensor's rank or shape does not match the operator (possible only if the case's public
/// fields were changed after it was built).
pub fn reference(case: &Case) -> Result<ArrayD<i32>, OracleError> {
    let rank = |file: &'static str, a: &[usize], want: usize| CaseError::ShapeMismatch {
        file,
        expected: vec![0; want],
        found: a.to_vec(),
    };
    let bias = match &case.bias {
        Some(b) => Some(
            b.view()
                .into_dimensionality::<Ix1>()
                .map_err(|_| rank(error::BIAS_NPY, b.shape(), 1))?,
        ),
        None => None,
    };
    match &case.spec.op {
        Op::Conv2d(p) => {
            let input = case
                .input
                .view()
                .into_dimensionality::<Ix4>()
                .map_err(|_| rank(error::INPUT_NPY, case.input.shape(), 4))?;
            let weight = case
                .weight
                .view()
                .into_dimensionality::<Ix4>()
                .map_err(|_| rank(error::WEIGHT_NPY, case.weight.shape(), 4))?;
            conv2d(input, weight, bias, p).map(|a| a.into_dyn())
        }
        Op::Mvm(p) => {
            let input = case
                .input
                .view()
                .into_dimensionality::<Ix2>()
                .map_err(|_| rank(error::INPUT_NPY, case.input.shape(), 2))?;
            let weight = case
                .weight
                .view()
                .into_dimensionality::<Ix2>()
                .map_err(|_| rank(error::WEIGHT_NPY, case.weight.shape(), 2))?;
            mvm(input, weight, bias, p).map(|a| a.into_dyn())
        }
    }
}
