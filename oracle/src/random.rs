//! Random tensors for a spec: the starting point of `pimdiff new-case`.
//!
//! (The harness has its own generator with its own policies; this one is deliberately
//! simple: the same spec and seed give the same case, as long as this crate and `rand` keep
//! their versions.)

use ndarray::{Array1, ArrayD, IxDyn};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::case::{Case, CaseSpec};
use crate::error::CaseError;

/// Bias values are drawn from `-BIAS_RANGE..=BIAS_RANGE`: large enough to matter next to a
/// few products (each up to 2^14), small enough never to push a result out of int32 on
/// its own.
pub const BIAS_RANGE: i32 = 1 << 12;

/// A case for `spec` with input and weight values uniform in `-128..=127` and, when the
/// operator has a bias, bias values uniform in `-BIAS_RANGE..=BIAS_RANGE`, from a ChaCha8
/// stream seeded with `seed` (filled input, then weight, then bias, each in row-major
/// order). No `expected` tensor.
///
/// Errors: the spec's own ([`CaseSpec::validate`]), and [`CaseError::ResultOverflow`] when
/// the reduction is so long that random values can overflow int32 (more than about 2^17
/// terms per output).
pub fn random_tensors(spec: &CaseSpec, seed: u64) -> Result<Case, CaseError> {
    spec.validate()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut fill = |shape: &[usize]| -> ArrayD<i8> {
        let len = shape.iter().product();
        let data: Vec<i8> = (0..len).map(|_| rng.random::<i8>()).collect();
        ArrayD::from_shape_vec(IxDyn(shape), data).unwrap_or_else(|_| ArrayD::zeros(IxDyn(shape)))
    };
    let input = fill(&spec.input_shape);
    let weight = fill(&spec.weight_shape());
    let bias = spec
        .bias_len()
        .map(|len| Array1::from_iter((0..len).map(|_| rng.random_range(-BIAS_RANGE..=BIAS_RANGE))));
    Case::new(spec.clone(), input, weight, bias, None)
}
