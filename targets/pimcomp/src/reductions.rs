//! Shrinking a finding's network while its signature holds.
//!
//! Greedy and deterministic, on the engine's one minimization loop (`engine::shrink`): the
//! candidates of [`candidates`] are tried in a fixed order (cut the network after a node, drop
//! a node or a branch, then fewer channels, a smaller input, smaller kernels, stride 1, no
//! pads, no groups); the first one that is well formed and keeps the signature is taken and
//! the search restarts from it, until no candidate keeps it or the time bound or the run
//! budget is spent. The predicate (a compile and a check) is the caller's, so tests can
//! minimize against a pure function.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use serde::Serialize;

use crate::network::{NetNode, NetOp, Network};
use pimdiff_engine::hunt::shrink::{shrink, ShrinkOptions};

/// What a minimization did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Shrunk {
    /// Candidates tried and kept.
    pub tried: u64,
    pub kept: u64,
    /// `(nodes, largest channel count, largest spatial size)` before and after.
    pub before: (usize, usize, usize),
    pub after: (usize, usize, usize),
    /// The time bound or run budget ended it before a fixed point.
    pub cut_short: bool,
}

/// Shrinks `net` while `keeps` holds (see the module docs), with the engine's one driver:
/// after each kept candidate the search restarts from the first candidate of the smaller
/// network (`resume: false`), so the path is the one the recorded findings replay.
pub fn minimize(
    net: &Network,
    deadline: Option<Instant>,
    max_runs: u64,
    keeps: impl FnMut(&Network) -> bool,
) -> (Network, Shrunk) {
    let s = shrink(
        net,
        &[()],
        |(), n| valid_candidates(n),
        &ShrinkOptions {
            max_steps: usize::try_from(max_runs).unwrap_or(usize::MAX),
            deadline,
            resume: false,
        },
        &AtomicBool::new(false),
        keeps,
    );
    let stats = Shrunk {
        tried: s.tried as u64,
        kept: s.kept as u64,
        before: net.size(),
        after: s.case.size(),
        cut_short: s.cut_short,
    };
    (s.case, stats)
}

/// The candidates of [`candidates`] that differ from `net` and are well formed, each with a
/// log line naming its size.
pub fn valid_candidates(net: &Network) -> Vec<(String, Network)> {
    candidates(net)
        .into_iter()
        .filter(|c| c != net && c.shapes().is_ok())
        .map(|c| {
            let (nodes, channels, spatial) = c.size();
            let line = format!("{nodes} nodes, {channels} channels at most, spatial {spatial}");
            (line, c)
        })
        .collect()
}

/// Removes nodes that do not reach the last node, renumbering providers.
pub(crate) fn prune(mut net: Network) -> Network {
    let n = net.nodes.len();
    if n == 0 {
        return net;
    }
    let mut live = vec![false; n];
    live[n - 1] = true;
    live[0] = true;
    for i in (0..n).rev() {
        if live[i] {
            for &p in &net.nodes[i].inputs {
                live[p] = true;
            }
        }
    }
    let mut new_index = vec![usize::MAX; n];
    let mut kept = Vec::new();
    for (i, node) in net.nodes.drain(..).enumerate() {
        if live[i] {
            new_index[i] = kept.len();
            kept.push(node);
        }
    }
    for node in &mut kept {
        for p in &mut node.inputs {
            *p = new_index[*p];
        }
    }
    Network { nodes: kept }
}

/// The network cut after node `i` (node `i` becomes the output).
fn cut_after(net: &Network, i: usize) -> Network {
    prune(Network {
        nodes: net.nodes[..=i].to_vec(),
    })
}

/// The network without node `i`: its consumers read its provider number `via` instead.
pub(crate) fn bypass(net: &Network, i: usize, via: usize) -> Option<Network> {
    let target = *net.nodes[i].inputs.get(via)?;
    let mut nodes: Vec<NetNode> = net.nodes.clone();
    for node in nodes.iter_mut().skip(i + 1) {
        for p in &mut node.inputs {
            if *p == i {
                *p = target;
            }
        }
        // A concat or add that now reads one tensor twice keeps one operand.
        if matches!(node.op, NetOp::Concat | NetOp::Add) {
            node.inputs.dedup();
        }
    }
    if i == nodes.len() - 1 {
        nodes.pop();
        return Some(prune(Network { nodes }));
    }
    // Mark the bypassed node dead by cutting its own inputs to nothing reachable: prune
    // removes it because nothing reads it any more.
    let mut out = prune(Network { nodes });
    // A concat/add left with a single operand becomes a pass-through: drop it as well.
    while let Some(j) = out
        .nodes
        .iter()
        .position(|n| matches!(n.op, NetOp::Concat | NetOp::Add) && n.inputs.len() == 1)
    {
        out = bypass(&out, j, 0)?;
    }
    Some(out)
}

/// Every channel count (input, CONV outputs with group 1, FC outputs) mapped by `f`.
fn all_channels(net: &Network, f: fn(usize) -> usize) -> Network {
    let mut c = net.clone();
    for node in &mut c.nodes {
        match &mut node.op {
            NetOp::Input { channels, .. } => *channels = f(*channels),
            NetOp::Conv(spec) => {
                spec.out_channels = f(spec.out_channels);
                spec.group = 1;
            }
            NetOp::Fc { out, .. } => *out = f(*out),
            _ => {}
        }
    }
    c
}

fn halve(v: usize) -> usize {
    (v / 2).max(1)
}

/// Every candidate one step smaller than `net`, in the order they are tried.
pub fn candidates(net: &Network) -> Vec<Network> {
    let mut out = Vec::new();
    let n = net.nodes.len();
    // Structure first: cut the tail, then drop single nodes (and branches, through prune).
    for i in 1..n.saturating_sub(1) {
        out.push(cut_after(net, i));
    }
    for i in (1..n).rev() {
        for via in 0..net.nodes[i].inputs.len() {
            if let Some(c) = bypass(net, i, via) {
                out.push(c);
            }
        }
    }
    // Channel counts together (a residual add ties a conv's output to its input's count).
    for f in [|_: usize| 1, halve] {
        out.push(all_channels(net, f));
    }
    // Then parameters, node by node.
    for i in 0..n {
        for op in smaller_ops(&net.nodes[i].op) {
            let mut c = net.clone();
            c.nodes[i].op = op;
            out.push(c);
        }
    }
    out
}

/// Smaller versions of one operator.
fn smaller_ops(op: &NetOp) -> Vec<NetOp> {
    let mut out = Vec::new();
    match op {
        NetOp::Input {
            channels,
            height,
            width,
        } => {
            for (c, h, w) in [
                (halve(*channels), *height, *width),
                (channels.saturating_sub(1).max(1), *height, *width),
                (*channels, halve(*height), *width),
                (*channels, height.saturating_sub(1).max(1), *width),
                (*channels, *height, halve(*width)),
                (*channels, *height, width.saturating_sub(1).max(1)),
            ] {
                out.push(NetOp::Input {
                    channels: c,
                    height: h,
                    width: w,
                });
            }
        }
        NetOp::Conv(c) => {
            let mut push = |f: &dyn Fn(&mut crate::network::ConvSpec)| {
                let mut s = c.clone();
                f(&mut s);
                out.push(NetOp::Conv(s));
            };
            push(&|s| s.out_channels = halve(s.out_channels));
            push(&|s| s.out_channels = s.out_channels.saturating_sub(1).max(1));
            push(&|s| s.group = 1);
            push(&|s| s.kernel = [halve(s.kernel[0]), s.kernel[1]]);
            push(&|s| s.kernel = [s.kernel[0], halve(s.kernel[1])]);
            push(&|s| s.kernel = [s.kernel[0].saturating_sub(1).max(1), s.kernel[1]]);
            push(&|s| s.kernel = [s.kernel[0], s.kernel[1].saturating_sub(1).max(1)]);
            push(&|s| s.stride = [1, 1]);
            push(&|s| s.pads = [0; 4]);
            for k in 0..4 {
                push(&|s| s.pads[k] = s.pads[k].saturating_sub(1));
            }
            push(&|s| s.relu = false);
            push(&|s| s.bias = false);
        }
        NetOp::Pool(p) => {
            let mut s = p.clone();
            s.pads = [0; 4];
            out.push(NetOp::Pool(s));
            let mut s = p.clone();
            s.stride = [1, 1];
            out.push(NetOp::Pool(s));
            let mut s = p.clone();
            s.kernel = [halve(s.kernel[0]), halve(s.kernel[1])];
            s.pads = [0; 4];
            out.push(NetOp::Pool(s));
            let mut s = p.clone();
            s.max = true;
            s.global = false;
            out.push(NetOp::Pool(s));
        }
        NetOp::Fc { out: o, bias, relu } => {
            out.push(NetOp::Fc {
                out: halve(*o),
                bias: *bias,
                relu: *relu,
            });
            out.push(NetOp::Fc {
                out: o.saturating_sub(1).max(1),
                bias: *bias,
                relu: *relu,
            });
            out.push(NetOp::Fc {
                out: *o,
                bias: *bias,
                relu: false,
            });
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{network_from_seed, NetConfig};

    #[test]
    fn candidates_are_smaller_or_equal_and_mostly_well_formed() {
        let cfg = NetConfig::default();
        for seed in 0..50 {
            let net = network_from_seed(&cfg, seed);
            assert!(net.shapes().is_ok(), "seed {seed}");
            for c in candidates(&net) {
                assert!(c.nodes.len() <= net.nodes.len());
            }
        }
    }
}
