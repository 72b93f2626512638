//! A network's data: its input and every initializer (weights, biases, constant operands),
//! small integers drawn from the case seed, named as `model.onnx` names them.
//!
//! Values are integers so that the reference is exact and every comparison is exact: CIM-MLC
//! reads only shapes (it runs ONNX Runtime on a random image for them), so any values are the
//! network's; small ones keep every intermediate far from `i64`'s range. The data is drawn
//! again from the seed for every variant the minimizer tries, one stream per tensor name, so
//! that a tensor keeps its values while other parts of the network change.

use std::collections::BTreeMap;

use ndarray::{ArrayD, IxDyn};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::network::{Network, Op, ShapeError};

/// The input and the initializers of a network, by initializer name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetData {
    pub input: ArrayD<i64>,
    pub params: BTreeMap<String, ArrayD<i64>>,
}

/// The name of the graph's input: CIM-MLC recognises the network's input by this name
/// (utils/util.py:319, codegen/Addr.py:274), as its own exporter names it.
pub const INPUT: &str = "input";

/// Initializer names of node `i` (the weight, the bias, a constant operand, a shape).
pub fn weight_name(i: usize) -> String {
    format!("n{i}_weight")
}
pub fn bias_name(i: usize) -> String {
    format!("n{i}_bias")
}
pub fn constant_name(i: usize) -> String {
    format!("n{i}_constant")
}
pub fn shape_name(i: usize) -> String {
    format!("n{i}_shape")
}

/// The inclusive value range of each kind of tensor.
const INPUT_RANGE: (i64, i64) = (-3, 3);
const WEIGHT_RANGE: (i64, i64) = (-2, 2);
const BIAS_RANGE: (i64, i64) = (-4, 4);
const ADDEND_RANGE: (i64, i64) = (-3, 3);
const FACTOR_RANGE: (i64, i64) = (-2, 2);

/// The shapes of node `i`'s initializers, with their value ranges, given its input shape.
pub fn param_shapes(op: &Op, i: usize, input: &[usize]) -> Vec<(String, Vec<usize>, (i64, i64))> {
    let mut out = Vec::new();
    match op {
        Op::Conv {
            out_channels,
            kernel,
            group,
            bias,
            ..
        } => {
            let c = input[1];
            out.push((
                weight_name(i),
                vec![*out_channels, c / group, kernel[0], kernel[1]],
                WEIGHT_RANGE,
            ));
            if *bias {
                out.push((bias_name(i), vec![*out_channels], BIAS_RANGE));
            }
        }
        Op::Gemm {
            out: o,
            bias,
            trans_b,
        } => {
            let n = input[1];
            let shape = if *trans_b { vec![*o, n] } else { vec![n, *o] };
            out.push((weight_name(i), shape, WEIGHT_RANGE));
            if *bias {
                out.push((bias_name(i), vec![*o], BIAS_RANGE));
            }
        }
        Op::MatMul { out: o } => out.push((weight_name(i), vec![input[1], *o], WEIGHT_RANGE)),
        Op::Add { constant: true } => out.push((constant_name(i), input.to_vec(), ADDEND_RANGE)),
        Op::Mul { constant: true } => out.push((constant_name(i), input.to_vec(), FACTOR_RANGE)),
        _ => {}
    }
    out
}

/// The data of `network` for case seed `seed`.
pub fn network_data(network: &Network, seed: u64) -> Result<NetData, ShapeError> {
    let shapes = network.shapes()?;
    let input = draw(seed, INPUT, &network.input, INPUT_RANGE);
    let mut params = BTreeMap::new();
    for (i, node) in network.nodes.iter().enumerate() {
        let in_shape = network.shape_of(node.inputs[0], &shapes);
        for (name, shape, range) in param_shapes(&node.op, i, in_shape) {
            let values = draw(seed, &name, &shape, range);
            params.insert(name, values);
        }
    }
    Ok(NetData { input, params })
}

/// A tensor of `shape` with values in `range`, from the stream of (`seed`, `name`).
fn draw(seed: u64, name: &str, shape: &[usize], range: (i64, i64)) -> ArrayD<i64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ fnv1a(name.as_bytes()));
    ArrayD::from_shape_fn(IxDyn(shape), |_| rng.random_range(range.0..=range.1))
}

/// FNV-1a, a stable hash of a tensor's name (the same on every platform and build).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{Node, Spelling, Src};

    #[test]
    fn a_tensor_keeps_its_values_when_another_part_of_the_network_changes() {
        let conv = |out| Node {
            op: Op::Conv {
                out_channels: out,
                kernel: [1, 1],
                stride: [1, 1],
                pads: [0; 4],
                group: 1,
                bias: true,
            },
            inputs: vec![Src::Input],
            spelling: Spelling::default(),
        };
        let mut net = Network {
            input: vec![1, 2, 2, 2],
            nodes: vec![conv(3)],
            outputs: vec![0],
        };
        let a = network_data(&net, 7).unwrap();
        assert_eq!(a.params[&weight_name(0)].shape(), &[3, 2, 1, 1]);
        assert!(a.input.iter().all(|v| (-3..=3).contains(v)));
        net.nodes.push(Node {
            op: Op::Relu,
            inputs: vec![Src::Node(0)],
            spelling: Spelling::default(),
        });
        net.outputs = vec![1];
        let b = network_data(&net, 7).unwrap();
        assert_eq!(a, b);
        assert_ne!(network_data(&net, 8).unwrap().input, a.input);
    }
}
