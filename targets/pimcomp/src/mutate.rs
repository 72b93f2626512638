//! Mutations of PIMCOMP-NN networks for coverage-guided hunts (`engine::guided`): one
//! layer's parameter changed, a layer inserted or deleted, two networks spliced.
//!
//! Every mutant is checked before it is returned: well formed ([`Network::shapes`]: providers
//! before consumers, one sink, operand shapes that fit), within the generator's bounds
//! ([`NetConfig`]: channels, spatial size, kernels) and at most [`MAX_NODES`] nodes, so that a
//! corpus entry mutated many generations over still compiles in well under a second. A
//! mutation whose choices break a network (an add whose operands no longer agree, say) gives
//! `None`, and the caller draws again: validity by checking, as the shapes of a mutated
//! network's consumers are not known before it is built.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::network::{ConvSpec, NetConfig, NetNode, NetOp, Network, PoolSpec, Shape};
use super::reductions::{bypass, prune};

/// The most nodes a mutant may have (the generator's largest networks have about 25).
pub const MAX_NODES: usize = 40;

/// A valid variant of `net` (see the module docs), spliced with `other` when given; `None`
/// when the drawn mutation gives no valid network.
pub fn mutate_network(
    cfg: &NetConfig,
    net: &Network,
    other: Option<&Network>,
    rng: &mut ChaCha8Rng,
) -> Option<Network> {
    let mutant = match other {
        Some(o) => splice(net, o, rng),
        None => match rng.random_range(0..4) {
            0 | 1 => change_parameter(cfg, net, rng),
            2 => insert_layer(cfg, net, rng),
            _ => delete_layer(net, rng),
        },
    }?;
    (mutant != *net && within_bounds(cfg, &mutant)).then_some(mutant)
}

/// Whether `net` is well formed, at most [`MAX_NODES`] nodes, and inside `cfg`'s bounds.
pub fn within_bounds(cfg: &NetConfig, net: &Network) -> bool {
    if net.nodes.len() > MAX_NODES || net.nodes.len() < 2 {
        return false;
    }
    let Ok(shapes) = net.shapes() else {
        return false;
    };
    let input_ok = matches!(shapes[0], Shape::Spatial { c, h, w }
        if c <= cfg.max_channels.max(16) && h <= cfg.max_spatial && w <= cfg.max_spatial);
    let ops_ok = net.nodes.iter().all(|n| match &n.op {
        NetOp::Conv(c) => {
            c.out_channels <= cfg.max_channels.max(1)
                && c.kernel.iter().all(|&k| k <= cfg.max_kernel.max(1))
        }
        NetOp::Fc { out, .. } => *out <= cfg.max_channels.max(1),
        _ => true,
    });
    input_ok && ops_ok
}

/// A value for a channel count: an edge (1, 3, tile boundaries around 128) or near `now`.
fn channels(cfg: &NetConfig, now: usize, rng: &mut ChaCha8Rng) -> usize {
    let max = cfg.max_channels.max(1);
    let v = match rng.random_range(0..6) {
        0 => [1, 3, 127, 128, 129][rng.random_range(0..5)],
        1 => now.saturating_sub(1).max(1),
        2 => now + 1,
        3 => now * 2,
        4 => (now / 2).max(1),
        _ => rng.random_range(1..=max.min(32)),
    };
    v.clamp(1, max)
}

fn small(rng: &mut ChaCha8Rng, lo: usize, hi: usize) -> usize {
    rng.random_range(lo..=hi.max(lo))
}

/// One parameter of one node changed.
fn change_parameter(cfg: &NetConfig, net: &Network, rng: &mut ChaCha8Rng) -> Option<Network> {
    let i = rng.random_range(0..net.nodes.len());
    let mut out = net.clone();
    let k_max = cfg.max_kernel.max(1);
    match &mut out.nodes[i].op {
        NetOp::Input {
            channels: c,
            height,
            width,
        } => match rng.random_range(0..3) {
            0 => *c = channels(cfg, *c, rng).min(cfg.max_channels.max(16)),
            1 => *height = small(rng, 1, cfg.max_spatial),
            _ => *width = small(rng, 1, cfg.max_spatial),
        },
        NetOp::Conv(c) => conv_parameter(cfg, c, rng),
        NetOp::Pool(p) => match rng.random_range(0..5) {
            0 => p.max = !p.max,
            1 => p.global = !p.global && !p.max,
            2 => {
                let k = small(rng, 1, 3.min(k_max));
                p.kernel = [k, k];
                p.pads = [0; 4];
            }
            3 => {
                let s = small(rng, 1, 3);
                p.stride = [s, s];
            }
            _ => {
                let side = rng.random_range(0..4);
                p.pads[side] = small(rng, 0, p.kernel[side / 2].saturating_sub(1));
            }
        },
        NetOp::Fc { out: o, bias, relu } => match rng.random_range(0..3) {
            0 => *o = channels(cfg, *o, rng),
            1 => *bias = !*bias,
            _ => *relu = !*relu,
        },
        NetOp::Clip { min, max } => {
            let edges = [(0.0, 6.0), (-1.0, 1.0), (0.0, 0.0), (-128.0, 127.0)];
            (*min, *max) = edges[rng.random_range(0..edges.len())];
        }
        NetOp::Reshape => out.nodes[i].op = NetOp::Flatten,
        NetOp::Flatten => out.nodes[i].op = NetOp::Reshape,
        NetOp::Concat | NetOp::Add => {
            // The operands in another order: a compiler must join them as listed.
            out.nodes[i].inputs.reverse();
        }
        NetOp::Relu | NetOp::Lrn | NetOp::Dropout | NetOp::Softmax => return None,
    }
    Some(out)
}

fn conv_parameter(cfg: &NetConfig, c: &mut ConvSpec, rng: &mut ChaCha8Rng) {
    let k_max = cfg.max_kernel.max(1);
    match rng.random_range(0..8) {
        0 => {
            c.out_channels = channels(cfg, c.out_channels, rng);
            c.group = 1;
        }
        1 => {
            let k = small(rng, 1, k_max);
            c.kernel = if rng.random_bool(0.7) {
                [k, k]
            } else {
                [k, small(rng, 1, k_max)]
            };
        }
        2 => c.stride = [small(rng, 1, 3), small(rng, 1, 3)],
        3 => c.pads[rng.random_range(0..4)] = small(rng, 0, 2),
        4 => {
            // Depthwise (output channels = groups = input channels, set by the caller's
            // check: only valid when they agree) or back to a plain convolution.
            if c.group == 1 {
                c.group = c.out_channels;
            } else {
                c.group = 1;
            }
        }
        5 => c.bias = !c.bias,
        6 => c.relu = !c.relu,
        _ => c.pads = [0; 4],
    }
}

/// A name not yet in `net`, from `stem`.
fn fresh_name(net: &Network, stem: &str) -> String {
    (net.nodes.len()..)
        .map(|n| format!("{stem}_m{n}"))
        .find(|name| net.nodes.iter().all(|m| &m.name != name))
        .unwrap_or_else(|| unreachable!("the names are unbounded"))
}

/// A new layer after node `i`, its consumers reading the new layer instead (or, after the
/// sink, a new sink).
fn insert_layer(cfg: &NetConfig, net: &Network, rng: &mut ChaCha8Rng) -> Option<Network> {
    let shapes = net.shapes().ok()?;
    let i = rng.random_range(0..net.nodes.len());
    let op = new_layer(cfg, shapes[i], rng)?;
    let stem = op.operation().trim_start_matches("OP_").to_lowercase();
    let name = fresh_name(net, &stem);
    let at = i + 1;
    let mut nodes: Vec<NetNode> = net.nodes.clone();
    for n in nodes.iter_mut().skip(at) {
        for p in &mut n.inputs {
            if *p >= at {
                *p += 1;
            } else if *p == i {
                *p = at;
            }
        }
    }
    nodes.insert(
        at,
        NetNode {
            name,
            op,
            inputs: vec![i],
        },
    );
    Some(Network { nodes })
}

/// A layer that reads a tensor of `shape`.
fn new_layer(cfg: &NetConfig, shape: Shape, rng: &mut ChaCha8Rng) -> Option<NetOp> {
    let k_max = cfg.max_kernel.max(1);
    let op = match (shape, rng.random_range(0..8)) {
        (Shape::Spatial { c, h, w }, 0..=2) => {
            let k = small(rng, 1, k_max.min(h.max(w)));
            let p = if rng.random_bool(0.5) { k / 2 } else { 0 };
            let keep = rng.random_bool(0.5);
            NetOp::Conv(ConvSpec {
                out_channels: if keep { c } else { channels(cfg, c, rng) },
                kernel: [k, k],
                stride: [1, 1],
                pads: [p; 4],
                group: 1,
                bias: rng.random_bool(0.85),
                relu: rng.random_bool(0.5),
            })
        }
        (Shape::Spatial { .. }, 3) => NetOp::Pool(PoolSpec {
            max: rng.random_bool(0.7),
            global: false,
            kernel: [1, 1],
            stride: [1, 1],
            pads: [0; 4],
        }),
        (Shape::Spatial { .. }, 4) => NetOp::Lrn,
        (Shape::Spatial { .. }, 5) => {
            if rng.random_bool(0.5) {
                NetOp::Flatten
            } else {
                NetOp::Reshape
            }
        }
        (Shape::Flat(f), 0..=2) => NetOp::Fc {
            out: channels(cfg, f.min(cfg.max_channels.max(1)), rng),
            bias: rng.random_bool(0.85),
            relu: rng.random_bool(0.5),
        },
        (_, 6) => NetOp::Clip { min: 0.0, max: 6.0 },
        (_, 7) => NetOp::Relu,
        _ => NetOp::Dropout,
    };
    Some(op)
}

/// One layer removed, its consumers reading its provider (and what only it fed, pruned).
fn delete_layer(net: &Network, rng: &mut ChaCha8Rng) -> Option<Network> {
    if net.nodes.len() <= 2 {
        return None;
    }
    let i = rng.random_range(1..net.nodes.len());
    let via = rng.random_range(0..net.nodes[i].inputs.len().max(1));
    bypass(net, i, via)
}

/// The head of `a` up to a node, then the tail of `b` from a node on, `b`'s nodes that read
/// anything before the cut reading `a`'s last kept node instead.
fn splice(a: &Network, b: &Network, rng: &mut ChaCha8Rng) -> Option<Network> {
    let i = rng
        .random_range(1..a.nodes.len().max(2))
        .min(a.nodes.len() - 1);
    let j = rng
        .random_range(1..b.nodes.len().max(2))
        .min(b.nodes.len() - 1);
    if j >= b.nodes.len() {
        return None;
    }
    let mut nodes: Vec<NetNode> = a.nodes[..=i].to_vec();
    let offset = nodes.len();
    for n in &b.nodes[j..] {
        let mut n = n.clone();
        for p in &mut n.inputs {
            *p = if *p >= j { *p - j + offset } else { i };
        }
        // A concat or add that now reads one tensor twice keeps one operand.
        if matches!(n.op, NetOp::Concat | NetOp::Add) {
            n.inputs.dedup();
            if n.inputs.len() < 2 {
                return None;
            }
        }
        n.name = format!("{}_s", n.name);
        nodes.push(n);
    }
    let mut out = prune(Network { nodes });
    let mut names: Vec<String> = Vec::new();
    for idx in 0..out.nodes.len() {
        let mut name = out.nodes[idx].name.clone();
        while names.contains(&name) {
            name.push('x');
        }
        names.push(name.clone());
        out.nodes[idx].name = name;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::network::network_from_seed;

    #[test]
    fn mutants_are_valid_and_differ() {
        let cfg = NetConfig::default();
        let mut made = 0;
        for seed in 0..200u64 {
            let net = network_from_seed(&cfg, seed);
            let other = network_from_seed(&cfg, seed + 1000);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let with = (seed % 3 == 0).then_some(&other);
            if let Some(m) = mutate_network(&cfg, &net, with, &mut rng) {
                assert!(within_bounds(&cfg, &m), "seed {seed}:\n{m}");
                assert_ne!(m, net);
                made += 1;
            }
        }
        // Most draws give a valid mutant (the engine retries the others).
        assert!(made >= 120, "only {made} of 200 draws gave a mutant");
    }

    #[test]
    fn insert_after_the_sink_makes_a_new_sink() {
        let cfg = NetConfig::default();
        let net = network_from_seed(&cfg, 1);
        let n = net.nodes.len();
        for seed in 0..50 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            if let Some(m) = insert_layer(&cfg, &net, &mut rng) {
                assert_eq!(m.nodes.len(), n + 1);
                if m.shapes().is_ok() {
                    assert!(m.consumers().last().is_some_and(Vec::is_empty));
                }
            }
        }
    }
}
