//! The exact integer reference of a PUMA network: what every output must hold, computed from
//! the API's stated meaning of each operation (see [`super::network`] and `docs/puma.md`), not
//! from what the compiler emits.
//!
//! Every value is a [`Tensor`]: exact `i64` elements, whether each element is *known*, and a
//! bound on its magnitude. An element is unknown when the API gives it no exact integer
//! meaning: the results of `sig` and `tanh` (their values are not integers; in the integer
//! reading of the machine's 16-bit words they round into `[-1, 1]`, which is all the
//! reference keeps), and the pixels an input stream with stride `s` does not carry (it
//! carries image pixel `(i·s, j·s)` as stream pixel `(i, j)`). Unknown elements propagate to
//! everything computed from them, except through a zero weight, a zero factor or a product
//! with a known zero. A check compares known elements exactly and unknown ones not at all.
//!
//! Images are kept at the image's size, `[height, width, channels]`, whatever their stream's
//! stride. Convolutions pad zeros on each side, `⌊k/2⌋` unless the description declares
//! another padding (see [`super::network::Matrix::Conv`]); max pooling takes non-overlapping
//! windows, the last cut at the image's edge; a dense matrix computes `y[r] = Σ_c M[r][c]·x[c]`.
//!
//! # Range
//!
//! The machine computes in 16-bit words, so exact checking needs every intermediate inside a
//! [`NumericRange`]. A matrix operation's intermediates are the compiler's partial sums, in
//! any order and grouping it likes; each is bounded by `Σ |w|·|x|` over all terms, so that is
//! what the reference bounds (its *peak*). Element-wise results are bounded by their own
//! magnitude. A network and data whose peak leaves the range is an error
//! ([`ReferenceError::OutOfRange`]), never a silently wrong reference; [`super::data`] draws
//! data that stays inside.

use ndarray::{ArrayD, IxDyn};

use super::network::{ImageShape, Input, Matrix, NetworkError, Op, PumaNetwork, Shape};
use super::tensors::{DataError, NetworkData};

/// The largest magnitude every input, weight and intermediate may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumericRange {
    max_magnitude: i64,
}

impl NumericRange {
    /// A 16-bit word read as an integer: `±32767` (`docs/puma.md`, numerics).
    pub const PUMA_WORD: NumericRange = NumericRange {
        max_magnitude: i16::MAX as i64,
    };

    /// Values up to `±max_magnitude`, at most 2^40 (so that no exact `i64` sum of products
    /// below it can overflow).
    pub fn new(max_magnitude: i64) -> Option<NumericRange> {
        (0..=1 << 40)
            .contains(&max_magnitude)
            .then_some(NumericRange { max_magnitude })
    }

    pub fn max_magnitude(self) -> i64 {
        self.max_magnitude
    }
}

/// One value: elements, which are known, and a bound on every element's magnitude (`|value|`
/// where known). Shapes: `[length]` or `[height, width, channels]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    pub value: ArrayD<i64>,
    pub known: ArrayD<bool>,
    pub magnitude: ArrayD<i64>,
}

/// What one output must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputTensor {
    pub name: String,
    /// `[length]` or `[height, width, channels]`; meaningful where `known`.
    pub value: ArrayD<i64>,
    pub known: ArrayD<bool>,
}

/// The reference of a whole network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// In the order of [`PumaNetwork::outputs`].
    pub outputs: Vec<OutputTensor>,
    /// The largest intermediate magnitude bound over the whole network.
    pub peak: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    #[error(transparent)]
    Network(#[from] NetworkError),
    #[error(transparent)]
    Data(#[from] DataError),
    #[error("values[{value}] ({op}): intermediates reach {peak}, outside ±{limit}")]
    OutOfRange {
        value: usize,
        op: &'static str,
        peak: i64,
        limit: i64,
    },
}

/// The reference of `net` on `data`: every output's elements, exact where known.
pub fn reference(
    net: &PumaNetwork,
    data: &NetworkData,
    range: NumericRange,
) -> Result<Reference, ReferenceError> {
    let mut eval = Evaluator::new(net, range)?;
    data.check(net, range.max_magnitude)?;
    while eval.evaluated() < net.values.len() {
        eval.step(data)?;
    }
    Ok(eval.finish())
}

/// Evaluates a network value by value, so that a caller can choose the weights of a matrix
/// just before the first value that uses it ([`super::data`] does).
pub struct Evaluator<'n> {
    net: &'n PumaNetwork,
    shapes: Vec<Shape>,
    range: NumericRange,
    values: Vec<Tensor>,
    peak: i64,
}

impl<'n> Evaluator<'n> {
    /// Checks the network; evaluates nothing yet.
    pub fn new(net: &'n PumaNetwork, range: NumericRange) -> Result<Evaluator<'n>, ReferenceError> {
        let shapes = net.check()?;
        Ok(Evaluator {
            net,
            shapes,
            range,
            values: Vec::with_capacity(net.values.len()),
            peak: 0,
        })
    }

    /// How many values are evaluated (the next one to evaluate).
    pub fn evaluated(&self) -> usize {
        self.values.len()
    }

    /// An evaluated value (`None` when `i` is not evaluated yet).
    pub fn value(&self, i: usize) -> Option<&Tensor> {
        self.values.get(i)
    }

    /// Evaluates the next value with `data`. Only the tensors this value reads are checked
    /// against the network (shapes), so a caller may fill in weights as it goes; the ranges of
    /// inputs and weights are [`reference`]'s to check. Evaluating past the last value is an
    /// error naming it.
    pub fn step(&mut self, data: &NetworkData) -> Result<(), ReferenceError> {
        let i = self.values.len();
        let op = self.net.values.get(i).ok_or(DataError::Count {
            what: "values to evaluate",
            expected: self.net.values.len(),
            found: i + 1,
        })?;
        self.check_operands(op, data)?;
        let v = |k: usize| &self.values[k];
        let (tensor, peak) = match *op {
            Op::Input { input } => input_tensor(&self.net.inputs[input], &data.inputs[input]),
            Op::Mvm { matrix, x } => mvm(&data.weights[matrix], v(x)),
            Op::Conv { matrix, x } => {
                let Shape::Image(s) = self.shapes[x] else {
                    unreachable!("checked: a conv reads a stream")
                };
                conv(&self.net.matrices[matrix], &data.weights[matrix], v(x), s)
            }
            // Values are computed wrapping and bounds saturating: a wrapped value is never
            // kept, because its bound is then above the range (checked below).
            Op::Add { a, b } => elementwise(
                v(a),
                v(b),
                i64::wrapping_add,
                i64::saturating_add,
                |_, _| false,
            ),
            Op::Sub { a, b } => elementwise(
                v(a),
                v(b),
                i64::wrapping_sub,
                i64::saturating_add,
                |_, _| false,
            ),
            Op::Mul { a, b } => elementwise(
                v(a),
                v(b),
                i64::wrapping_mul,
                i64::saturating_mul,
                // A product with a known zero is zero whatever the other factor is.
                |p, q| p == Some(0) || q == Some(0),
            ),
            Op::Scale { factor, x } => unary(
                v(x),
                |p| p.wrapping_mul(factor as i64),
                |m| m.saturating_mul(factor.unsigned_abs() as i64),
                factor == 0,
            ),
            Op::Relu { x } => unary(v(x), |p| p.max(0), |m| m, false),
            Op::Tanh { x } | Op::Sig { x } => nonlinear(v(x)),
            Op::MaxPool { hspan, wspan, x } => maxpool(v(x), hspan as usize, wspan as usize),
        };
        if peak > self.range.max_magnitude {
            return Err(ReferenceError::OutOfRange {
                value: i,
                op: op.name(),
                peak,
                limit: self.range.max_magnitude,
            });
        }
        self.peak = self.peak.max(peak);
        self.values.push(tensor);
        Ok(())
    }

    /// The input or weights `op` reads exist and have the network's shape.
    fn check_operands(&self, op: &Op, data: &NetworkData) -> Result<(), DataError> {
        let (what, plural, index, tensors, name, shape) = match *op {
            Op::Input { input } => {
                let i = &self.net.inputs[input];
                (
                    "input",
                    "inputs",
                    input,
                    &data.inputs,
                    i.name(),
                    i.data_shape(),
                )
            }
            Op::Mvm { matrix, .. } | Op::Conv { matrix, .. } => {
                let m = &self.net.matrices[matrix];
                (
                    "matrix",
                    "matrices",
                    matrix,
                    &data.weights,
                    m.name(),
                    m.data_shape(),
                )
            }
            _ => return Ok(()),
        };
        let Some(t) = tensors.get(index) else {
            return Err(DataError::Count {
                what: plural,
                expected: index + 1,
                found: tensors.len(),
            });
        };
        if t.shape() != shape.as_slice() {
            return Err(DataError::Shape {
                what,
                name: name.to_string(),
                expected: shape,
                found: t.shape().to_vec(),
            });
        }
        Ok(())
    }

    /// The outputs, once every value is evaluated.
    pub fn finish(self) -> Reference {
        let outputs = self
            .net
            .outputs
            .iter()
            .map(|o| {
                let t = &self.values[o.value()];
                OutputTensor {
                    name: o.name().to_string(),
                    value: t.value.clone(),
                    known: t.known.clone(),
                }
            })
            .collect();
        Reference {
            outputs,
            peak: self.peak,
        }
    }
}

/// A tensor from flat parts (all of one shape).
fn tensor(shape: &[usize], value: Vec<i64>, known: Vec<bool>, magnitude: Vec<i64>) -> Tensor {
    let dim = IxDyn(shape);
    Tensor {
        value: ArrayD::from_shape_vec(dim.clone(), value).expect("value has the shape"),
        known: ArrayD::from_shape_vec(dim.clone(), known).expect("known has the shape"),
        magnitude: ArrayD::from_shape_vec(dim, magnitude).expect("magnitude has the shape"),
    }
}

/// Flat row-major views of a tensor.
fn parts(t: &Tensor) -> (&[i64], &[bool], &[i64]) {
    (
        t.value.as_slice().expect("tensors are built row-major"),
        t.known.as_slice().expect("tensors are built row-major"),
        t.magnitude.as_slice().expect("tensors are built row-major"),
    )
}

/// An input's tensor: a vector as given; a stream's pixel `(i, j)` at image pixel
/// `(i·s, j·s)`, the pixels it does not carry unknown, bounded by its largest element.
fn input_tensor(input: &Input, data: &ArrayD<i64>) -> (Tensor, i64) {
    let flat: Vec<i64> = data.iter().copied().collect();
    let peak = flat.iter().map(|v| v.abs()).max().unwrap_or(0);
    let Input::Image {
        width,
        height,
        channels,
        stride,
        ..
    } = *input
    else {
        let n = flat.len();
        let magnitude = flat.iter().map(|v| v.abs()).collect();
        return (tensor(&[n], flat, vec![true; n], magnitude), peak);
    };
    let (w, h, c, s) = (
        width as usize,
        height as usize,
        channels as usize,
        stride as usize,
    );
    let cols = w.div_ceil(s);
    let mut value = vec![0; h * w * c];
    let mut known = vec![false; h * w * c];
    let mut magnitude = vec![peak; h * w * c];
    for (pixel, chunk) in flat.chunks(c.max(1)).enumerate() {
        let (i, j) = (pixel / cols, pixel % cols);
        let at = ((i * s) * w + j * s) * c;
        for (k, &x) in chunk.iter().enumerate() {
            value[at + k] = x;
            known[at + k] = true;
            magnitude[at + k] = x.abs();
        }
    }
    (tensor(&[h, w, c], value, known, magnitude), peak)
}

/// `y[r] = Σ_c M[r][c]·x[c]`; known where every term with a nonzero weight is known.
fn mvm(weights: &ArrayD<i64>, x: &Tensor) -> (Tensor, i64) {
    let (rows, cols) = (weights.shape()[0], weights.shape()[1]);
    let m = weights.as_slice().expect("weights are row-major");
    let (xv, xk, xm) = parts(x);
    let mut value = vec![0; rows];
    let mut known = vec![true; rows];
    let mut magnitude = vec![0; rows];
    let mut peak = 0;
    for r in 0..rows {
        let row = &m[r * cols..(r + 1) * cols];
        let (mut sum, mut bound) = (0i64, 0i64);
        for c in 0..cols {
            let w = row[c];
            if w == 0 {
                continue;
            }
            sum = sum.wrapping_add(w.wrapping_mul(xv[c]));
            bound = bound.saturating_add(w.abs().saturating_mul(xm[c]));
            known[r] &= xk[c];
        }
        peak = peak.max(bound);
        value[r] = sum;
        magnitude[r] = if known[r] { sum.abs() } else { bound };
    }
    (tensor(&[rows], value, known, magnitude), peak)
}

/// The convolution of an `[h, w, cin]` image with `[kh, kw, cout, cin]` weights, the matrix's
/// zero padding on each side (`⌊k/2⌋` unless it declares another) and stride: output pixel
/// `o` sums the taps `k` of input pixel `o·stride − padding + k`, the `(n − k + 2p)/stride + 1`
/// outputs of the snapshot's test formula (`test/conv-layer.cpp:48`).
fn conv(matrix: &Matrix, weights: &ArrayD<i64>, x: &Tensor, s: ImageShape) -> (Tensor, i64) {
    let Matrix::Conv {
        kernel_width,
        kernel_height,
        in_channels,
        out_channels,
        stride,
        out_width,
        out_height,
        ..
    } = *matrix
    else {
        unreachable!("checked: a conv uses a conv matrix")
    };
    let (kw, kh, cin, cout) = (
        kernel_width as usize,
        kernel_height as usize,
        in_channels as usize,
        out_channels as usize,
    );
    let (w, h, st) = (s.width as usize, s.height as usize, stride as usize);
    let (ow, oh) = (out_width as usize, out_height as usize);
    let (pad_w, pad_h) = matrix
        .padding()
        .map(|(w, h)| (w as usize, h as usize))
        .expect("a conv matrix has a padding");
    let wt = weights.as_slice().expect("weights are row-major");
    let (xv, xk, xm) = parts(x);
    let n = oh * ow * cout;
    let (mut value, mut known, mut magnitude) = (vec![0; n], vec![true; n], vec![0; n]);
    let mut peak = 0;
    for oy in 0..oh {
        for ox in 0..ow {
            for co in 0..cout {
                let (mut sum, mut bound, mut all_known) = (0i64, 0i64, true);
                for ky in 0..kh {
                    let Some(iy) = (oy * st + ky).checked_sub(pad_h).filter(|&y| y < h) else {
                        continue;
                    };
                    for kx in 0..kw {
                        let Some(ix) = (ox * st + kx).checked_sub(pad_w).filter(|&v| v < w) else {
                            continue;
                        };
                        let taps = &wt[((ky * kw + kx) * cout + co) * cin..][..cin];
                        let at = (iy * w + ix) * cin;
                        for (ci, &wv) in taps.iter().enumerate() {
                            if wv == 0 {
                                continue;
                            }
                            sum = sum.wrapping_add(wv.wrapping_mul(xv[at + ci]));
                            bound = bound.saturating_add(wv.abs().saturating_mul(xm[at + ci]));
                            all_known &= xk[at + ci];
                        }
                    }
                }
                let o = (oy * ow + ox) * cout + co;
                peak = peak.max(bound);
                value[o] = sum;
                known[o] = all_known;
                magnitude[o] = if all_known { sum.abs() } else { bound };
            }
        }
    }
    (tensor(&[oh, ow, cout], value, known, magnitude), peak)
}

/// An element-wise binary operation: `f` on values, `bound` on magnitudes, and `zero_known`
/// saying when the result is known from known operand values alone (`None` = unknown).
fn elementwise(
    a: &Tensor,
    b: &Tensor,
    f: impl Fn(i64, i64) -> i64,
    bound: impl Fn(i64, i64) -> i64,
    zero_known: impl Fn(Option<i64>, Option<i64>) -> bool,
) -> (Tensor, i64) {
    let ((av, ak, am), (bv, bk, bm)) = (parts(a), parts(b));
    let n = av.len();
    let (mut value, mut known, mut magnitude) = (vec![0; n], vec![false; n], vec![0; n]);
    let mut peak = 0;
    for e in 0..n {
        let (p, q) = (ak[e].then_some(av[e]), bk[e].then_some(bv[e]));
        let bnd = bound(am[e], bm[e]);
        peak = peak.max(bnd);
        if (ak[e] && bk[e]) || zero_known(p, q) {
            value[e] = f(av[e], bv[e]) * i64::from(ak[e] && bk[e]);
            known[e] = true;
            magnitude[e] = value[e].abs();
        } else {
            magnitude[e] = bnd;
        }
    }
    (tensor(a.value.shape(), value, known, magnitude), peak)
}

/// An element-wise unary operation: `f` on values, `bound` on magnitudes; `always_known` when
/// the result does not depend on the operand (a zero factor).
fn unary(
    x: &Tensor,
    f: impl Fn(i64) -> i64,
    bound: impl Fn(i64) -> i64,
    always_known: bool,
) -> (Tensor, i64) {
    let (xv, xk, xm) = parts(x);
    let n = xv.len();
    let (mut value, mut known, mut magnitude) = (vec![0; n], vec![false; n], vec![0; n]);
    let mut peak = 0;
    for e in 0..n {
        let bnd = bound(xm[e]);
        peak = peak.max(bnd);
        known[e] = xk[e] || always_known;
        value[e] = if known[e] {
            f(xv[e] * i64::from(xk[e]))
        } else {
            0
        };
        magnitude[e] = if known[e] { value[e].abs() } else { bnd };
    }
    (tensor(x.value.shape(), value, known, magnitude), peak)
}

/// `sig` and `tanh`: unknown, of magnitude at most 1.
fn nonlinear(x: &Tensor) -> (Tensor, i64) {
    let n = x.value.len();
    (
        tensor(x.value.shape(), vec![0; n], vec![false; n], vec![1; n]),
        1,
    )
}

/// Max pooling in non-overlapping `hspan × wspan` windows, the last cut at the edge.
fn maxpool(x: &Tensor, hspan: usize, wspan: usize) -> (Tensor, i64) {
    let shape = x.value.shape();
    let (h, w, c) = (shape[0], shape[1], shape[2]);
    let (oh, ow) = (h.div_ceil(hspan), w.div_ceil(wspan));
    let (xv, xk, xm) = parts(x);
    let n = oh * ow * c;
    let (mut value, mut known, mut magnitude) = (vec![i64::MIN; n], vec![true; n], vec![0; n]);
    for y in 0..h {
        for xx in 0..w {
            for ch in 0..c {
                let (i, o) = (
                    (y * w + xx) * c + ch,
                    ((y / hspan) * ow + xx / wspan) * c + ch,
                );
                value[o] = value[o].max(xv[i]);
                known[o] &= xk[i];
                magnitude[o] = magnitude[o].max(xm[i]);
            }
        }
    }
    let mut peak = 0;
    for o in 0..n {
        if known[o] {
            magnitude[o] = value[o].abs();
        } else {
            value[o] = 0;
        }
        peak = peak.max(magnitude[o]);
    }
    (tensor(&[oh, ow, c], value, known, magnitude), peak)
}
