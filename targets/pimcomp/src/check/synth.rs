//! Data synthesised from the seed: the int8 image of the OP_INPUT shape and, per CONV/FC node,
//! an int8 GEMM matrix (rows `(kh, kw, cin)`, dense over groups with zeros outside each group),
//! full range. Each tensor has its own ChaCha8 stream (0 for the image, node index + 1 for a
//! matrix), so a node's matrix does not depend on the others.

use ndarray::{Array1, Array2, Array3};
use pimdiff_oracle::graph::{NodeOp, NodeParams};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::model::Model;

/// The seed used when none is given.
pub const DEFAULT_SEED: u64 = 1;

/// The image and every node's parameters for `model`.
pub struct Synthesis {
    /// `[H, W, C]`: the first OP_INPUT node's shape.
    pub image: Array3<i8>,
    pub params: Vec<NodeParams>,
}

/// How the bias is chosen: PIMCOMP-NN's programs `ld` every bias from global memory
/// `0..Cout`, where the image lies (`docs/pimcomp-numerics.md` §3), so `b = image[0..Cout]`
/// (HWC order) is what they compute. `Zero` exists only to show that a check that ignores
/// this alias fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BiasRule {
    ImagePrefix,
    Zero,
}

fn rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(stream);
    r
}

pub fn synthesise(model: &Model, seed: u64, bias: BiasRule) -> Synthesis {
    let shape = model
        .graph
        .nodes
        .iter()
        .find_map(|n| match n.op {
            NodeOp::Input(s) => Some(s),
            _ => None,
        })
        .unwrap_or(pimdiff_oracle::graph::Shape { h: 1, w: 1, c: 1 });
    let mut r = rng(seed, 0);
    let image = Array3::from_shape_simple_fn((shape.h, shape.w, shape.c), || r.random::<i8>());
    let flat: Vec<i8> = image.iter().copied().collect();
    // Each node has its own random stream, so nodes are synthesised in parallel with the
    // same values as in order (AlexNet's 61 M weights take a second on one thread).
    let params = model
        .graph
        .nodes
        .par_iter()
        .enumerate()
        .map(|(i, n)| {
            let (rows, cols, groups, with_bias) = match &n.op {
                NodeOp::Conv(c) => (
                    c.kernel[0] * c.kernel[1] * c.in_channels,
                    c.out_channels,
                    (c.in_channels, c.groups),
                    c.bias,
                ),
                NodeOp::FullyConnected(f) => {
                    (f.in_features, f.out_features, (f.in_features, 1), f.bias)
                }
                _ => return NodeParams::default(),
            };
            let matrix = matrix((rows, cols), groups, rng(seed, i as u64 + 1), CHUNK);
            let bias = with_bias.then(|| match bias {
                BiasRule::ImagePrefix => {
                    Array1::from_shape_fn(cols, |k| flat.get(k).copied().unwrap_or(0))
                }
                BiasRule::Zero => Array1::zeros(cols),
            });
            NodeParams {
                matrix: Some(matrix),
                bias,
            }
        })
        .collect();
    Synthesis { image, params }
}

/// Weights drawn per parallel task: a large layer (AlexNet's fc6 has 38 M) is cut into chunks.
const CHUNK: usize = 1 << 20;

/// A `rows × cols` matrix of `stream`'s values in row-major order, zero outside each output
/// column's group (`groups` = (input channels, groups)). Each value takes one 32-bit word of
/// the stream, so a chunk of `chunk` values starting at element `e` starts at word `e`: chunks
/// are drawn in parallel with the same values as in one pass.
fn matrix(
    (rows, cols): (usize, usize),
    (cin, g): (usize, usize),
    stream: ChaCha8Rng,
    chunk: usize,
) -> Array2<i8> {
    let (cg, kg) = (cin / g.max(1), cols / g.max(1));
    let mut values = vec![0i8; rows * cols];
    values
        .par_chunks_mut(chunk.max(1))
        .enumerate()
        .for_each(|(n, part)| {
            let start = n * chunk.max(1);
            let mut r = stream.clone();
            r.set_word_pos(start as u128);
            for (e, slot) in (start..).zip(part.iter_mut()) {
                let v = r.random::<i8>();
                let (row, k) = (e / cols.max(1), e % cols.max(1));
                *slot = if g <= 1 || (row % cin) / cg == k / kg {
                    v
                } else {
                    0
                };
            }
        });
    Array2::from_shape_vec((rows, cols), values).expect("rows × cols values")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks drawn apart (seeking the stream) hold the values of one sequential pass.
    #[test]
    fn chunked_draws_equal_one_pass() {
        for (shape, groups) in [((7, 12), (4, 1)), ((12, 6), (6, 3)), ((1, 1), (1, 1))] {
            let mut r = rng(5, 3);
            let (cg, kg) = (groups.0 / groups.1, shape.1 / groups.1);
            let one_pass = Array2::from_shape_fn(shape, |(row, k)| {
                let v = r.random::<i8>();
                if groups.1 <= 1 || (row % groups.0) / cg == k / kg {
                    v
                } else {
                    0
                }
            });
            for chunk in [1, 5, 64, 1 << 20] {
                assert_eq!(
                    matrix(shape, groups, rng(5, 3), chunk),
                    one_pass,
                    "{shape:?} {chunk}"
                );
            }
        }
    }
}
