//! Seeded, edge-biased cases: a network over what CIM-MLC's front end claims to read and an
//! architecture within what `configs/README.md` describes, both pure functions of the seed.
//!
//! Networks: an image path of convolutions (kernels 1–7, strides 1–3, padding 0–3 on each side
//! independently, grouped and depthwise, with and without bias), max pooling, ReLU,
//! element-wise `Add`/`Mul` with a constant, and branches that join (`Add`, `Mul` or `Concat`
//! of two paths from one value); then optionally `Flatten` or `Reshape` into fully connected
//! layers (`Gemm` with and without bias and `transB`, `MatMul`); sometimes a network starts
//! fully connected, and sometimes an intermediate value is an output too. Attributes at their
//! ONNX defaults are written in some nodes and left out in others ([`Spelling`]). Edges are
//! favoured: kernels as large as the padded input, strides larger than the kernel,
//! asymmetric padding, one channel, 1×1 images, depthwise groups, layers larger than a
//! crossbar and than the chip.
//!
//! A share of the seeds ([`CONVENTIONAL_SHARE`], chosen by a stream of its own, so that the other
//! seeds draw exactly what they drew before) is *conventional* instead: a network as an exporter
//! writes a CNN — square kernels, one stride, symmetric padding of 0 or 1, dense convolutions,
//! every attribute written, a weighted layer first, residual `Add`/`Mul` joins, `Flatten`, pooling
//! windows that tile — on a chip with crossbars of at least 32 rows and columns, `MaxRC` no wider
//! than a crossbar, and at least 2 × 2 cores. The edges find CIM-MLC's crashes; these networks
//! get through to the flows, where a wrong address or length in the code generator shows only if
//! the same flow is otherwise right (most edge cases hit a known bug of CIM-MLC first at every
//! granularity, which would hide it behind that bug's signature).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::arch::{Api, Arch};
use crate::network::{window_out, Network, Node, Op, Spelling, Src};

/// The generator's bounds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NetConfig {
    /// Most layers (nodes) of a network.
    pub max_nodes: usize,
    /// Most channels of an image, and outputs of a fully connected layer.
    pub max_channels: usize,
    /// Largest input height and width.
    pub max_spatial: usize,
    /// Largest kernel side (CIM-MLC's front end reads up to 7 in its templates).
    pub max_kernel: usize,
    /// The API levels drawn (`None`: all three).
    pub api: Option<Api>,
}

impl Default for NetConfig {
    fn default() -> NetConfig {
        NetConfig {
            max_nodes: 6,
            max_channels: 8,
            max_spatial: 8,
            max_kernel: 7,
            api: None,
        }
    }
}

/// A case's inputs besides its network: the architecture and the precisions `main.py` takes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Setting {
    pub arch: Arch,
    /// `--input_precision` (bits of an activation).
    pub input_precision: usize,
    /// `--weight_precision` (bits of a weight).
    pub weight_precision: usize,
}

struct Draw(ChaCha8Rng);

/// The share of seeds whose case is conventional (see the module docs).
pub const CONVENTIONAL_SHARE: f64 = 0.3;

/// Whether `seed`'s case is conventional: a stream of its own, so that the other seeds' draws are
/// those they always were.
pub fn conventional(seed: u64) -> bool {
    Draw(ChaCha8Rng::seed_from_u64(seed ^ 0xc0a7_e571_0a11_5eed)).chance(CONVENTIONAL_SHARE)
}

impl Draw {
    fn int(&mut self, lo: usize, hi: usize) -> usize {
        if hi <= lo {
            lo
        } else {
            self.0.random_range(lo..=hi)
        }
    }
    fn chance(&mut self, p: f64) -> bool {
        self.0.random_bool(p.clamp(0.0, 1.0))
    }
    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.0.random_range(0..from.len())]
    }
}

/// The network of `seed` (valid by construction: [`Network::shapes`] holds).
pub fn network_from_seed(cfg: &NetConfig, seed: u64) -> Network {
    let mut d = Draw(ChaCha8Rng::seed_from_u64(seed));
    let mut b = Builder {
        net: Network {
            input: Vec::new(),
            nodes: Vec::new(),
            outputs: Vec::new(),
        },
        shapes: Vec::new(),
        conventional: conventional(seed),
    };
    let max_c = cfg.max_channels.max(1);
    let max_s = cfg.max_spatial.max(1);
    let image = d.chance(0.85);
    b.net.input = if image {
        let c = if d.chance(0.2) { 1 } else { d.int(1, max_c) };
        let h = if d.chance(0.1) { 1 } else { d.int(1, max_s) };
        let w = if d.chance(0.3) { h } else { d.int(1, max_s) };
        vec![1, c, h, w]
    } else {
        vec![1, d.int(1, max_c * 4)]
    };
    let budget = d.int(1, cfg.max_nodes.max(1));
    let mut cur = Src::Input;
    if b.conventional {
        // A weighted layer first, as a CNN or an MLP starts.
        cur = if image {
            conv(&mut d, &mut b, cfg, cur, None)
        } else {
            vector_step_weighted(&mut d, &mut b, cfg, cur)
        };
    }
    while b.net.nodes.len() < budget {
        let shape = b.shape(cur).to_vec();
        cur = if shape.len() == 4 {
            if d.chance(0.25) || b.net.nodes.len() + 1 >= budget && d.chance(0.3) {
                let op = if b.conventional || d.chance(0.75) {
                    Op::Flatten
                } else {
                    Op::Reshape
                };
                b.add(&mut d, op, vec![cur])
            } else {
                image_step(&mut d, &mut b, cfg, cur, budget)
            }
        } else {
            vector_step(&mut d, &mut b, cfg, cur)
        };
    }
    // A network without a crossbar layer is no workload for a CIM compiler: end with one.
    if !b.net.nodes.iter().any(|n| n.op.has_weights()) {
        if b.shape(cur).len() == 4 {
            conv(&mut d, &mut b, cfg, cur, None);
        } else {
            vector_step_weighted(&mut d, &mut b, cfg, cur);
        }
    }
    let last = b.net.nodes.len() - 1;
    b.net.outputs.push(last);
    // Sometimes an intermediate value is an output too (it must be read by nobody else or
    // be a value CIM-MLC keeps; either way ONNX allows it).
    if last > 0 && d.chance(0.15) {
        let extra = d.int(0, last - 1);
        b.net.outputs.push(extra);
    }
    // A node nobody reads (a branch the budget cut short) becomes an output.
    for i in 0..b.net.nodes.len() {
        if !b.net.outputs.contains(&i) && b.net.readers(Src::Node(i)).is_empty() {
            b.net.outputs.push(i);
        }
    }
    debug_assert!(b.net.shapes().is_ok(), "{:?}", b.net.shapes());
    b.net
}

/// The setting of `seed` for a network: an architecture within configs/README.md and the
/// precisions.
pub fn setting_from_seed(cfg: &NetConfig, seed: u64) -> Setting {
    let mut d = Draw(ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_a7c4));
    let api = cfg
        .api
        .unwrap_or_else(|| d.pick(&[Api::Core, Api::Crossbar, Api::Wordline]));
    let plain = conventional(seed);
    let sides: &[usize] = if plain {
        &[32, 64, 64, 128, 256]
    } else {
        &[8, 16, 16, 32, 32, 64, 128, 256]
    };
    let side = |d: &mut Draw| d.pick(sides);
    let rows = side(&mut d);
    let cols = side(&mut d);
    let mut max_rows = (rows / d.pick(&[1, 1, 2, 4, 8])).max(1);
    if plain {
        // No wider than a crossbar (configs/README.md's shipped configurations).
        while max_rows > cols {
            max_rows /= 2;
        }
    }
    let least = if plain { 2 } else { 1 };
    let global = if d.chance(0.2) {
        d.pick(&[256, 1024, 4096])
    } else {
        786_432
    };
    Setting {
        arch: Arch {
            api,
            cores: [d.int(least, 4), d.int(least, 4)],
            global_buffer: [global, 32],
            core_alu: 1024,
            core_bus: 48,
            crossbars: [d.int(1, 4), d.int(1, 4)],
            local_buffer: [1024, 32],
            crossbar_alu: 1024,
            crossbar_bus: d.pick(&[64, 256, 1024, 1024, 4096]),
            crossbar_size: [rows, cols],
            max_rows,
            device: d.pick(&["ReRAM", "SRAM", "F"]).to_string(),
            cell_bits: d.pick(&[1, 1, 2, 4, 8]),
        },
        input_precision: d.pick(&[8, 8, 8, 4, 16]),
        weight_precision: d.pick(&[8, 8, 8, 4, 16]),
    }
}

struct Builder {
    net: Network,
    shapes: Vec<Vec<usize>>,
    /// A conventional network (see the module docs).
    conventional: bool,
}

impl Builder {
    fn shape(&self, src: Src) -> &[usize] {
        self.net.shape_of(src, &self.shapes)
    }

    /// Adds a node (its shape must exist: the callers draw only valid ones).
    fn add(&mut self, d: &mut Draw, op: Op, inputs: Vec<Src>) -> Src {
        // Mostly written out: a left-out attribute stops CIM-MLC early (it reads some of them
        // unconditionally), and the flows behind it are what the check is for.
        let spelling = Spelling {
            defaults: d.chance(0.8) || self.conventional,
            kernel_shape: d.chance(0.9) || self.conventional,
        };
        self.net.nodes.push(Node {
            op,
            inputs,
            spelling,
        });
        let shape = match self.net.node_shapes() {
            Ok(mut s) => s.pop().expect("a node was added"),
            Err(e) => panic!("the generator drew an invalid node: {e}"),
        };
        self.shapes.push(shape);
        Src::Node(self.net.nodes.len() - 1)
    }
}

/// One step on an image value: a layer, or a branch that joins.
fn image_step(d: &mut Draw, b: &mut Builder, cfg: &NetConfig, cur: Src, budget: usize) -> Src {
    let left = budget - b.net.nodes.len();
    let roll = d.int(0, 9);
    match roll {
        0..=3 => conv(d, b, cfg, cur, None),
        4 => pool(d, b, cur),
        5 => b.add(d, Op::Relu, vec![cur]),
        6 => {
            let op = if d.chance(0.5) {
                Op::Add { constant: true }
            } else {
                Op::Mul { constant: true }
            };
            b.add(d, op, vec![cur])
        }
        _ if left >= 3 => branch(d, b, cfg, cur),
        _ => conv(d, b, cfg, cur, None),
    }
}

/// Two paths from `cur` joined by `Add`, `Mul` (same shapes) or `Concat` (same image size).
fn branch(d: &mut Draw, b: &mut Builder, cfg: &NetConfig, cur: Src) -> Src {
    let join = d.int(0, if b.conventional { 1 } else { 2 });
    let a = conv(d, b, cfg, cur, None);
    let a_shape = b.shape(a).to_vec();
    let other = if d.chance(0.3) && join != 2 && a_shape == b.shape(cur) {
        // The identity path: a residual connection.
        cur
    } else {
        // The same window as `a` (so the same output size), its own filters: the channels
        // must match for Add and Mul, not for Concat.
        let Some(Op::Conv {
            kernel,
            stride,
            pads,
            ..
        }) = b.net.nodes.last().map(|n| n.op.clone())
        else {
            unreachable!("conv adds a convolution last")
        };
        let out_channels = if join == 2 {
            d.int(1, cfg.max_channels.max(1))
        } else {
            a_shape[1]
        };
        let bias = d.chance(0.5);
        b.add(
            d,
            Op::Conv {
                out_channels,
                kernel,
                stride,
                pads,
                group: 1,
                bias,
            },
            vec![cur],
        )
    };
    let op = match join {
        0 => Op::Add { constant: false },
        1 => Op::Mul { constant: false },
        _ => Op::Concat,
    };
    b.add(d, op, vec![a, other])
}

/// A convolution of `cur` (an image), edge-biased; `out` forces the output channels.
fn conv(d: &mut Draw, b: &mut Builder, cfg: &NetConfig, cur: Src, out: Option<usize>) -> Src {
    let [_, c, h, w] = <[usize; 4]>::try_from(b.shape(cur)).expect("an image");
    let max_k = cfg.max_kernel.clamp(1, 7);
    loop {
        let kh = if d.chance(0.2) { 1 } else { d.int(1, max_k) };
        let kw = if d.chance(0.6) { kh } else { d.int(1, max_k) };
        let stride = if d.chance(0.5) { 1 } else { d.int(1, 3) };
        let stride = [stride, if d.chance(0.8) { stride } else { d.int(1, 3) }];
        let mut pads = [0; 4];
        if d.chance(0.6) {
            let p = d.int(0, 3);
            pads = [p; 4];
            if d.chance(0.3) {
                pads = [d.int(0, 3), d.int(0, 3), d.int(0, 3), d.int(0, 3)];
            }
        }
        let (kw, stride, pads) = if b.conventional {
            // Square, one stride, "same" padding of an odd kernel or none.
            let p = usize::from(kh % 2 == 1 && kh > 1 && d.chance(0.6));
            (kh, [stride[0]; 2], [p; 4])
        } else {
            (kw, stride, pads)
        };
        let fits = window_out(h, kh, stride[0], pads[0], pads[2]).is_some()
            && window_out(w, kw, stride[1], pads[1], pads[3]).is_some();
        if !fits {
            continue;
        }
        let group = match d.int(0, 9) {
            _ if b.conventional => 1,
            0 => c, // depthwise
            1 => (1..=c)
                .rev()
                .find(|g| c % g == 0 && *g < c)
                .unwrap_or(1)
                .max(1),
            _ => 1,
        };
        let out_channels = out.unwrap_or_else(|| {
            let k = d.int(1, cfg.max_channels.max(1));
            if group > 1 {
                // A multiple of the groups: depthwise keeps one filter per channel mostly.
                group * if d.chance(0.7) { 1 } else { (k / group).max(1) }
            } else {
                k
            }
        });
        if !out_channels.is_multiple_of(group) {
            continue;
        }
        let bias = d.chance(0.6);
        return b.add(
            d,
            Op::Conv {
                out_channels,
                kernel: [kh, kw],
                stride,
                pads,
                group,
                bias,
            },
            vec![cur],
        );
    }
}

/// Max pooling of `cur`, padding always smaller than the window.
fn pool(d: &mut Draw, b: &mut Builder, cur: Src) -> Src {
    let [_, _, h, w] = <[usize; 4]>::try_from(b.shape(cur)).expect("an image");
    if b.conventional {
        // Windows that tile the map: 2 × 2 at stride 2, no padding.
        if h >= 2 && w >= 2 {
            let op = Op::MaxPool {
                kernel: [2, 2],
                stride: [2, 2],
                pads: [0; 4],
            };
            return b.add(d, op, vec![cur]);
        }
        return b.add(d, Op::Relu, vec![cur]);
    }
    for _ in 0..32 {
        let k = [d.int(1, 3.min(h + 2)), d.int(1, 3.min(w + 2))];
        let stride = if d.chance(0.5) {
            k
        } else {
            [d.int(1, 3), d.int(1, 3)]
        };
        let pads = if d.chance(0.7) {
            [0; 4]
        } else {
            [
                d.int(0, k[0] - 1),
                d.int(0, k[1] - 1),
                d.int(0, k[0] - 1),
                d.int(0, k[1] - 1),
            ]
        };
        let fits = window_out(h, k[0], stride[0], pads[0], pads[2]).is_some()
            && window_out(w, k[1], stride[1], pads[1], pads[3]).is_some();
        if fits {
            return b.add(
                d,
                Op::MaxPool {
                    kernel: k,
                    stride,
                    pads,
                },
                vec![cur],
            );
        }
    }
    b.add(d, Op::Relu, vec![cur])
}

/// A fully connected layer on a `[1, N]` value.
fn vector_step_weighted(d: &mut Draw, b: &mut Builder, cfg: &NetConfig, cur: Src) -> Src {
    let out = d.int(1, cfg.max_channels.max(1) * 2);
    let (bias, trans_b) = (d.chance(0.6), d.chance(0.5));
    if d.chance(0.6) {
        b.add(d, Op::Gemm { out, bias, trans_b }, vec![cur])
    } else {
        b.add(d, Op::MatMul { out }, vec![cur])
    }
}

/// One step on a `[1, N]` value: a fully connected layer, an activation or an element-wise op.
fn vector_step(d: &mut Draw, b: &mut Builder, cfg: &NetConfig, cur: Src) -> Src {
    let out = d.int(1, cfg.max_channels.max(1) * 2);
    let (bias, trans_b) = (d.chance(0.6), d.chance(0.5));
    match d.int(0, 7) {
        0..=2 => b.add(d, Op::Gemm { out, bias, trans_b }, vec![cur]),
        3 | 4 => b.add(d, Op::MatMul { out }, vec![cur]),
        5 => b.add(d, Op::Relu, vec![cur]),
        _ => {
            let op = if d.chance(0.5) {
                Op::Add { constant: true }
            } else {
                Op::Mul { constant: true }
            };
            b.add(d, op, vec![cur])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_gives_a_valid_network_and_the_same_one_twice() {
        let cfg = NetConfig::default();
        let mut ops = std::collections::BTreeSet::new();
        for seed in 0..2000 {
            let net = network_from_seed(&cfg, seed);
            net.shapes()
                .unwrap_or_else(|e| panic!("seed {seed}: {e}: {net:?}"));
            assert_eq!(net, network_from_seed(&cfg, seed));
            assert!(net.nodes.len() <= cfg.max_nodes + 3, "seed {seed}");
            assert!(net.nodes.iter().any(|n| n.op.has_weights()), "seed {seed}");
            for n in &net.nodes {
                ops.insert(n.op.onnx_type());
            }
            let s = setting_from_seed(&cfg, seed);
            assert!(
                s.arch.max_rows >= 1 && s.arch.crossbar_size[0].is_multiple_of(s.arch.max_rows)
            );
        }
        assert_eq!(ops.len(), 10, "{ops:?}");
    }

    #[test]
    fn a_share_of_the_seeds_is_conventional_and_is_what_an_exporter_writes() {
        let cfg = NetConfig::default();
        let seeds: Vec<u64> = (0..3000).filter(|&s| conventional(s)).collect();
        let share = seeds.len() as f64 / 3000.0;
        assert!((share - CONVENTIONAL_SHARE).abs() < 0.05, "{share}");
        let mut ops = std::collections::BTreeSet::new();
        for &seed in &seeds {
            let net = network_from_seed(&cfg, seed);
            assert!(net.nodes[0].op.has_weights(), "seed {seed}: {net:?}");
            for n in &net.nodes {
                ops.insert(n.op.onnx_type());
                assert!(
                    n.spelling.defaults && n.spelling.kernel_shape,
                    "seed {seed}"
                );
                match n.op {
                    Op::Conv {
                        kernel,
                        stride,
                        pads,
                        group,
                        ..
                    } => {
                        assert_eq!(kernel[0], kernel[1], "seed {seed}");
                        assert_eq!(stride[0], stride[1], "seed {seed}");
                        assert!(pads.iter().all(|&p| p == pads[0] && p <= 1), "seed {seed}");
                        assert_eq!(group, 1, "seed {seed}");
                    }
                    Op::MaxPool {
                        kernel,
                        stride,
                        pads,
                    } => {
                        assert_eq!(
                            (kernel, stride, pads),
                            ([2, 2], [2, 2], [0; 4]),
                            "seed {seed}"
                        );
                    }
                    Op::Concat | Op::Reshape => panic!("seed {seed}: {net:?}"),
                    _ => {}
                }
            }
            let arch = setting_from_seed(&cfg, seed).arch;
            assert!(arch.crossbar_size.iter().all(|&s| s >= 32), "seed {seed}");
            assert!(arch.max_rows <= arch.crossbar_size[1], "seed {seed}");
            assert!(arch.cores.iter().all(|&c| c >= 2), "seed {seed}");
        }
        // Still every operator but the two an exporter's CNN does without.
        assert_eq!(ops.len(), 8, "{ops:?}");
    }
}
