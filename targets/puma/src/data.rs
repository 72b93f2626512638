//! Seeded inputs and weights for a PUMA network: small integers, deterministic per case seed,
//! drawn so that every intermediate of the reference stays inside the numeric range.
//!
//! Inputs are drawn from `[-3, 3]`, weights from `[-2, 2]` (about a third of them zero). Range
//! is kept layer by layer: just before the first value that uses a matrix, the magnitude bound
//! `m` of its operand is known, and every output row (a dense matrix's row; all taps of a conv
//! matrix's output channel) is thinned, by zeroing randomly chosen weights, until `Σ|w| · m` is
//! at most a target. Element-wise products and sums can still leave the range; then the whole
//! draw is repeated with a target four times smaller, up to [`ATTEMPTS`] times, and the last
//! resort is zero weights (and, should even that leave the range, zero inputs), which always
//! fits. So every valid network gets data, and the same seed always gives the same data.

use ndarray::{ArrayD, IxDyn};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::network::{NetworkError, Op, PumaNetwork};
use super::reference::{Evaluator, NumericRange, ReferenceError};
use super::tensors::NetworkData;

/// Draws before falling back to zero weights.
pub const ATTEMPTS: u32 = 6;

/// Mixed into the case seed so that the data's random stream differs from the network
/// generator's, which starts from the same case seed.
const DATA_SALT: u64 = 0x5055_4d41_4441_5441;

/// The data of `net` for `seed`, inside `range` (module docs). Errors only when the network
/// itself is invalid.
pub fn network_data(
    net: &PumaNetwork,
    seed: u64,
    range: NumericRange,
) -> Result<NetworkData, NetworkError> {
    net.check()?;
    for attempt in 0..ATTEMPTS {
        let target = (range.max_magnitude() >> (2 * attempt + 2)).max(1);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ DATA_SALT ^ u64::from(attempt));
        match draw(net, &mut rng, range, target) {
            Ok(data) => return Ok(data),
            Err(ReferenceError::OutOfRange { .. }) => continue,
            Err(ReferenceError::Network(e)) => return Err(e),
            Err(e) => unreachable!("drawn data fits its network: {e}"),
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ DATA_SALT ^ u64::from(ATTEMPTS));
    let mut data = NetworkData {
        inputs: draw_inputs(net, &mut rng),
        weights: zero_weights(net),
    };
    if evaluate(net, &data, range).is_err() {
        for input in &mut data.inputs {
            input.fill(0);
        }
    }
    Ok(data)
}

fn evaluate(
    net: &PumaNetwork,
    data: &NetworkData,
    range: NumericRange,
) -> Result<(), ReferenceError> {
    let mut eval = Evaluator::new(net, range)?;
    while eval.evaluated() < net.values.len() {
        eval.step(data)?;
    }
    Ok(())
}

/// One draw with per-row budget `target` (module docs).
fn draw(
    net: &PumaNetwork,
    rng: &mut ChaCha8Rng,
    range: NumericRange,
    target: i64,
) -> Result<NetworkData, ReferenceError> {
    let mut data = NetworkData {
        inputs: draw_inputs(net, rng),
        weights: zero_weights(net),
    };
    let mut drawn = vec![false; net.matrices.len()];
    let mut eval = Evaluator::new(net, range)?;
    while eval.evaluated() < net.values.len() {
        let i = eval.evaluated();
        if let Op::Mvm { matrix, x } | Op::Conv { matrix, x } = net.values[i] {
            if !drawn[matrix] {
                let operand = eval
                    .value(x)
                    .map_or(0, |t| t.magnitude.iter().copied().max().unwrap_or(0));
                data.weights[matrix] =
                    draw_weights(rng, net.matrices[matrix].data_shape(), operand, target);
                drawn[matrix] = true;
            }
        }
        eval.step(&data)?;
    }
    // Matrices no value uses still get weights (the compiler programs them all).
    for (m, done) in drawn.iter().enumerate() {
        if !done {
            data.weights[m] = draw_weights(rng, net.matrices[m].data_shape(), 1, target);
        }
    }
    Ok(data)
}

fn draw_inputs(net: &PumaNetwork, rng: &mut ChaCha8Rng) -> Vec<ArrayD<i64>> {
    net.inputs
        .iter()
        .map(|input| {
            let shape = input.data_shape();
            let n = shape.iter().product();
            let values = (0..n).map(|_| rng.random_range(-3..=3)).collect();
            ArrayD::from_shape_vec(IxDyn(&shape), values).expect("the input has its shape")
        })
        .collect()
}

fn zero_weights(net: &PumaNetwork) -> Vec<ArrayD<i64>> {
    net.matrices
        .iter()
        .map(|m| ArrayD::zeros(IxDyn(&m.data_shape())))
        .collect()
}

/// Weights of `shape` (`[rows, cols]` or `[kh, kw, cout, cin]`) in `[-2, 2]`, each output's
/// terms thinned until `Σ|w| · operand ≤ target`.
fn draw_weights(rng: &mut ChaCha8Rng, shape: Vec<usize>, operand: i64, target: i64) -> ArrayD<i64> {
    let w = draw_weight_cells(rng, &shape, operand, target)
        .into_iter()
        .map(i64::from)
        .collect();
    ArrayD::from_shape_vec(IxDyn(&shape), w).expect("the weights have their shape")
}

/// [`draw_weights`]' values, row-major, one byte each: also what `pimdiff puma` draws for a
/// dumped model's matrices ([`super::user_check`]), whose weights can number in the hundreds
/// of millions.
pub(crate) fn draw_weight_cells(
    rng: &mut ChaCha8Rng,
    shape: &[usize],
    operand: i64,
    target: i64,
) -> Vec<i8> {
    let n: usize = shape.iter().product();
    let mut w: Vec<i8> = (0..n)
        .map(|_| match rng.random_range(0..3) {
            0 => 0,
            _ => rng.random_range(-2..=2),
        })
        .collect();
    // The flat indices of each output's terms: a row of a dense matrix, or every
    // (kh, kw, cin) of one output channel of a conv matrix; made one output at a time.
    let (outputs, terms_of): (usize, Box<dyn Fn(usize) -> Vec<usize>>) = if shape.len() == 2 {
        let cols = shape[1];
        (
            shape[0],
            Box::new(move |r| (r * cols..(r + 1) * cols).collect()),
        )
    } else {
        let (taps, cout, cin) = (shape[0] * shape[1], shape[2], shape[3]);
        (
            cout,
            Box::new(move |co| {
                (0..taps)
                    .flat_map(|t| (0..cin).map(move |ci| (t * cout + co) * cin + ci))
                    .collect()
            }),
        )
    };
    let budget = target / operand.max(1);
    for o in 0..outputs {
        let mut terms = terms_of(o);
        let mut sum: i64 = terms.iter().map(|&t| i64::from(w[t].abs())).sum();
        terms.shuffle(rng);
        for t in terms {
            if sum <= budget {
                break;
            }
            sum -= i64::from(w[t].abs());
            w[t] = 0;
        }
    }
    w
}
