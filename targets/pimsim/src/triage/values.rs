//! Values that keep localization honest.
//!
//! A repair found on one input can be a coincidence: minimized cases are small, and an edit
//! that drops a load or zeroes a size gives the right answer whenever the right answer
//! happens not to depend on what was dropped. Two defences:
//!
//! * **Probes** ([`probes`]): the same case with other inputs (every element at the int8
//!   maximum, at the minimum, and uniformly random). A compiled program does not depend on
//!   its input's values, so a true repair is right on every probe.
//! * **Generic values** ([`generic`]): before minimizing, triage tries the case with every
//!   input, weight and bias value replaced by a random nonzero one; when the failure survives,
//!   minimization starts from it, so no weight is zero by accident (a zero weight hides which
//!   input an instruction reads). A case whose oracle output does not depend on its input at
//!   all ([`input_matters`]) is not kept as a representative.

use ndarray::{ArrayD, IxDyn};
use pimdiff_isa::bundle::Bundle;
use pimdiff_oracle::{reference, Case, BIAS_RANGE};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::check::outcome::Outcome;
use crate::check::{run_bundle, RunConfig};

/// The case with another input, the oracle's output for it, and the failing program's run
/// on it (its outcome and output), when the program has been run on it.
pub(crate) struct Probe {
    pub case: Case,
    pub oracle: ArrayD<i32>,
    pub buggy: Option<(Outcome, ArrayD<i32>)>,
}

/// Seed of the random values ("probe" in ASCII).
const SEED: u64 = 0x70_726f_6265;

/// The probes of `case` (see the module docs), each with the unedited `bundle`'s run on it.
pub(crate) fn probes(case: &Case, bundle: &Bundle, cfg: &RunConfig) -> Vec<Probe> {
    let shape = case.input.shape().to_vec();
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let len = case.input.len();
    let inputs = [
        vec![i8::MAX; len],
        vec![i8::MIN; len],
        (0..len).map(|_| rng.random::<i8>()).collect(),
    ];
    inputs
        .into_iter()
        .filter_map(|data| {
            let input = ArrayD::from_shape_vec(IxDyn(&shape), data).ok()?;
            let probe = with_values(case, input, case.weight.clone(), case.bias.clone())?;
            let oracle = reference(&probe).ok()?;
            let (outcome, output) = run_bundle(&probe, bundle, &oracle, cfg);
            Some(Probe {
                buggy: output.map(|o| (outcome, o)),
                case: probe,
                oracle,
            })
        })
        .collect()
}

/// Whether the oracle's output of `case` changes with its input: on some probe it differs
/// from `oracle` (the case's own output).
pub(crate) fn input_matters(oracle: &ArrayD<i32>, probes: &[Probe]) -> bool {
    probes.iter().any(|p| p.oracle != *oracle)
}

/// How many generic variants triage tries before it keeps the case's own values.
pub(crate) const GENERIC_ATTEMPTS: u64 = 4;

/// `case` with every input, weight and bias value replaced by a random nonzero one (the
/// `attempt`-th fixed seed), when such a case is valid.
pub(crate) fn generic(case: &Case, attempt: u64) -> Option<Case> {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED.wrapping_add(1 + attempt));
    let mut nonzero = |_: &i8| loop {
        let v: i8 = rng.random();
        if v != 0 {
            return v;
        }
    };
    let input = case.input.map(&mut nonzero);
    let weight = case.weight.map(&mut nonzero);
    let bias = case.bias.as_ref().map(|b| {
        b.map(|_| loop {
            let v = rng.random_range(-BIAS_RANGE..=BIAS_RANGE);
            if v != 0 {
                return v;
            }
        })
    });
    with_values(case, input, weight, bias)
}

/// `case` with other tensors (same spec), when valid.
fn with_values(
    case: &Case,
    input: ArrayD<i8>,
    weight: ArrayD<i8>,
    bias: Option<ndarray::Array1<i32>>,
) -> Option<Case> {
    Case::new(case.spec.clone(), input, weight, bias, None).ok()
}
