//! Smaller variants of a case for the engine's one shrink driver, simplest first within each
//! pass: cut the network after a node, drop an output, bypass a node or one side of a join,
//! smaller numbers (channels, image, kernel, stride, padding, groups, bias), the most explicit
//! spelling, and a simpler architecture (fewer cores and crossbars, a lower API level, a
//! global buffer that never wraps, plain precisions). Every variant is a valid network
//! ([`Network::shapes`]) that keeps a layer with weights (a network without one is no
//! workload for a CIM compiler, and the generator never draws one); the data is drawn again
//! from the seed for each.

use crate::arch::Api;
use crate::case::CimCase;
use crate::network::{Network, Op, Spelling, Src};

/// The passes, in the order the driver tries them.
pub const PASSES: usize = 5;

/// How large a case is: nodes weigh most, then parameters and input elements, then the
/// architecture; minimization only ever lowers it.
pub fn size_of(case: &CimCase) -> u64 {
    let net = &case.network;
    let mut size = net.nodes.len() as u64 * 10_000 + net.outputs.len() as u64 * 1000;
    size += net.input.iter().product::<usize>() as u64;
    if let Ok(shapes) = net.shapes() {
        for (i, n) in net.nodes.iter().enumerate() {
            let input = net.shape_of(n.inputs[0], &shapes);
            for (_, shape, _) in crate::data::param_shapes(&n.op, i, input) {
                size += shape.iter().product::<usize>() as u64;
            }
            size += n.inputs.len() as u64;
            if let Op::Conv { stride, pads, .. } | Op::MaxPool { stride, pads, .. } = &n.op {
                size += (stride[0] + stride[1] - 2 + pads.iter().sum::<usize>()) as u64;
            }
            if !n.spelling.defaults || !n.spelling.kernel_shape {
                size += 1;
            }
        }
    }
    let a = &case.setting.arch;
    size += (a.core_count() * a.crossbars_per_core()) as u64;
    size += a.api as u64 * 100;
    size += u64::from(a.global_buffer[0] < 786_432) + u64::from(a.cell_bits != 1);
    size += u64::from(a.max_rows != a.crossbar_size[0]);
    size += u64::from(case.setting.input_precision != 8)
        + u64::from(case.setting.weight_precision != 8);
    size
}

/// The variants pass `pass` proposes for `case`.
pub fn candidates(pass: usize, case: &CimCase) -> Vec<(String, CimCase)> {
    let with_net = |(line, network): (String, Network)| {
        (
            line,
            CimCase {
                network,
                ..case.clone()
            },
        )
    };
    let out: Vec<(String, CimCase)> = match pass {
        0 => cuts(&case.network).into_iter().map(with_net).collect(),
        1 => bypasses(&case.network).into_iter().map(with_net).collect(),
        2 => smaller_numbers(&case.network)
            .into_iter()
            .map(with_net)
            .collect(),
        3 => explicit(&case.network).into_iter().map(with_net).collect(),
        _ => simpler_setting(case),
    };
    // A simpler operator can make a larger network (stride 1 makes every later layer larger):
    // only what is smaller by the measure is proposed, so minimization never grows a case.
    let size = size_of(case);
    out.into_iter()
        .filter(|(_, c)| {
            c.network.shapes().is_ok()
                && c.network.nodes.iter().any(|n| n.op.has_weights())
                && size_of(c) < size
        })
        .collect()
}

/// The network ending at node `j` (its only output), without what `j` does not need.
fn cut_at(net: &Network, j: usize) -> Network {
    let mut keep = vec![false; net.nodes.len()];
    keep[j] = true;
    for i in (0..=j).rev() {
        if keep[i] {
            for &s in &net.nodes[i].inputs {
                if let Src::Node(k) = s {
                    keep[k] = true;
                }
            }
        }
    }
    let mut index = vec![usize::MAX; net.nodes.len()];
    let mut nodes = Vec::new();
    for i in 0..=j {
        if keep[i] {
            index[i] = nodes.len();
            let mut n = net.nodes[i].clone();
            n.inputs = n.inputs.iter().map(|&s| renumber(s, &index)).collect();
            nodes.push(n);
        }
    }
    Network {
        input: net.input.clone(),
        outputs: vec![nodes.len() - 1],
        nodes,
    }
}

fn renumber(s: Src, index: &[usize]) -> Src {
    match s {
        Src::Input => Src::Input,
        Src::Node(k) => Src::Node(index[k]),
    }
}

/// Cuts after each node (earliest first), and each output dropped.
fn cuts(net: &Network) -> Vec<(String, Network)> {
    let mut out: Vec<(String, Network)> = (0..net.nodes.len())
        .filter(|&j| j + 1 < net.nodes.len() || net.outputs.len() > 1)
        .map(|j| (format!("cut after node {j}"), cut_at(net, j)))
        .collect();
    if net.outputs.len() > 1 {
        for k in 0..net.outputs.len() {
            let mut n = net.clone();
            let dropped = n.outputs.remove(k);
            if let Some(pruned) = prune(n) {
                out.push((format!("output {dropped} dropped"), pruned));
            }
        }
    }
    out
}

/// Removes node `i`, its readers reading `with` instead; `None` when `i` is an output and
/// `with` is the input.
fn remove(net: &Network, i: usize, with: Src) -> Option<Network> {
    let mut n = net.clone();
    if n.outputs.contains(&i) {
        let Src::Node(w) = with else { return None };
        n.outputs = n
            .outputs
            .iter()
            .map(|&o| if o == i { w } else { o })
            .collect();
        n.outputs.dedup();
    }
    for node in &mut n.nodes {
        for s in &mut node.inputs {
            if *s == Src::Node(i) {
                *s = with;
            }
        }
    }
    n.nodes.remove(i);
    let shift = |s: Src| match s {
        Src::Node(k) if k > i => Src::Node(k - 1),
        s => s,
    };
    for node in &mut n.nodes {
        node.inputs = node.inputs.iter().map(|&s| shift(s)).collect();
    }
    n.outputs = n
        .outputs
        .iter()
        .map(|&o| if o > i { o - 1 } else { o })
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    n.outputs.retain(|o| seen.insert(*o));
    prune(n)
}

/// Removes nodes that nothing reads and that are no output, until none is left.
fn prune(mut n: Network) -> Option<Network> {
    loop {
        if n.outputs.is_empty() || n.nodes.is_empty() {
            return None;
        }
        let dead = (0..n.nodes.len()).find(|&i| {
            !n.outputs.contains(&i) && n.nodes.iter().all(|m| !m.inputs.contains(&Src::Node(i)))
        });
        match dead {
            Some(i) => {
                n.nodes.remove(i);
                for node in &mut n.nodes {
                    for s in &mut node.inputs {
                        if let Src::Node(k) = s {
                            if *k > i {
                                *k -= 1;
                            }
                        }
                    }
                }
                n.outputs = n
                    .outputs
                    .iter()
                    .map(|&o| if o > i { o - 1 } else { o })
                    .collect();
            }
            None => return Some(n),
        }
    }
}

/// Each node bypassed (its readers read its first source), and each join reduced to one side.
fn bypasses(net: &Network) -> Vec<(String, Network)> {
    let mut out = Vec::new();
    for (i, node) in net.nodes.iter().enumerate() {
        for (k, &src) in node.inputs.iter().enumerate() {
            if k > 0 && !matches!(node.op, Op::Add { .. } | Op::Mul { .. } | Op::Concat) {
                continue;
            }
            if let Some(n) = remove(net, i, src) {
                out.push((
                    format!(
                        "node {i} ({}) bypassed to its input {k}",
                        node.op.onnx_type()
                    ),
                    n,
                ));
            }
        }
        if let Op::Concat = node.op {
            for k in 0..node.inputs.len() {
                if node.inputs.len() > 2 {
                    let mut n = net.clone();
                    n.nodes[i].inputs.remove(k);
                    if let Some(n) = prune(n) {
                        out.push((format!("node {i} (Concat) without operand {k}"), n));
                    }
                }
            }
        }
        if let Op::Add { constant: false } | Op::Mul { constant: false } = node.op {
            // One side becomes a constant of the same shape.
            let mut n = net.clone();
            n.nodes[i].op = match node.op {
                Op::Add { .. } => Op::Add { constant: true },
                _ => Op::Mul { constant: true },
            };
            n.nodes[i].inputs.truncate(1);
            if let Some(n) = prune(n) {
                out.push((
                    format!("node {i} ({}) with a constant operand", node.op.onnx_type()),
                    n,
                ));
            }
        }
    }
    out
}

/// Smaller values of `v`: 1, half, one less (each smaller than `v`).
fn down(v: usize) -> Vec<usize> {
    let mut c = vec![1, v / 2, v.saturating_sub(1)];
    c.retain(|&x| x >= 1 && x < v);
    c.dedup();
    c
}

/// Smaller numbers, one at a time: the input, then each node's.
fn smaller_numbers(net: &Network) -> Vec<(String, Network)> {
    let mut out = Vec::new();
    for d in 1..net.input.len() {
        for v in down(net.input[d]) {
            let mut n = net.clone();
            n.input[d] = v;
            out.push((format!("input dimension {d} {} -> {v}", net.input[d]), n));
        }
    }
    for (i, node) in net.nodes.iter().enumerate() {
        for (what, op) in smaller_op(&node.op) {
            let mut n = net.clone();
            n.nodes[i].op = op;
            out.push((format!("node {i}: {what}"), n));
        }
    }
    out
}

/// The operators one number smaller than `op`, each with what changed.
fn smaller_op(op: &Op) -> Vec<(String, Op)> {
    match op.clone() {
        Op::Conv {
            out_channels,
            kernel,
            stride,
            pads,
            group,
            bias,
        } => {
            let conv = |o, k, s, p, g, b| Op::Conv {
                out_channels: o,
                kernel: k,
                stride: s,
                pads: p,
                group: g,
                bias: b,
            };
            let mut out = Vec::new();
            for o in down(out_channels) {
                out.push((
                    format!("{o} filters"),
                    conv(o, kernel, stride, pads, group, bias),
                ));
            }
            if group > 1 {
                out.push((
                    "group 1".into(),
                    conv(out_channels, kernel, stride, pads, 1, bias),
                ));
            }
            for (what, k, s, p) in window_edits(kernel, stride, pads) {
                out.push((what, conv(out_channels, k, s, p, group, bias)));
            }
            if bias {
                out.push((
                    "no bias".into(),
                    conv(out_channels, kernel, stride, pads, group, false),
                ));
            }
            out
        }
        Op::Gemm {
            out: o,
            bias,
            trans_b,
        } => {
            let mut out: Vec<(String, Op)> = down(o)
                .into_iter()
                .map(|v| {
                    (
                        format!("{v} outputs"),
                        Op::Gemm {
                            out: v,
                            bias,
                            trans_b,
                        },
                    )
                })
                .collect();
            if bias {
                out.push((
                    "no bias".into(),
                    Op::Gemm {
                        out: o,
                        bias: false,
                        trans_b,
                    },
                ));
            }
            if trans_b {
                out.push((
                    "transB 0".into(),
                    Op::Gemm {
                        out: o,
                        bias,
                        trans_b: false,
                    },
                ));
            }
            out.push(("as MatMul".into(), Op::MatMul { out: o }));
            out
        }
        Op::MatMul { out: o } => down(o)
            .into_iter()
            .map(|v| (format!("{v} outputs"), Op::MatMul { out: v }))
            .collect(),
        Op::MaxPool {
            kernel,
            stride,
            pads,
        } => window_edits(kernel, stride, pads)
            .into_iter()
            .map(|(what, kernel, stride, pads)| {
                (
                    what,
                    Op::MaxPool {
                        kernel,
                        stride,
                        pads,
                    },
                )
            })
            .collect(),
        Op::Reshape => vec![("as Flatten".into(), Op::Flatten)],
        _ => Vec::new(),
    }
}

/// What changed, and the window's kernel, stride and padding.
type WindowEdit = (String, [usize; 2], [usize; 2], [usize; 4]);

/// A window one step simpler: a smaller kernel side, stride 1 on an axis, no padding on a side.
fn window_edits(kernel: [usize; 2], stride: [usize; 2], pads: [usize; 4]) -> Vec<WindowEdit> {
    let mut out = Vec::new();
    for a in 0..2 {
        for k in down(kernel[a]) {
            let mut kk = kernel;
            kk[a] = k;
            out.push((format!("kernel {kk:?}"), kk, stride, pads));
        }
        if stride[a] > 1 {
            let mut s = stride;
            s[a] = 1;
            out.push((format!("stride {s:?}"), kernel, s, pads));
        }
    }
    for side in 0..4 {
        if pads[side] > 0 {
            let mut p = pads;
            p[side] = 0;
            out.push((format!("padding {p:?}"), kernel, stride, p));
        }
    }
    out
}

/// Each node with every optional attribute written.
fn explicit(net: &Network) -> Vec<(String, Network)> {
    let full = Spelling {
        defaults: true,
        kernel_shape: true,
    };
    net.nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.spelling != full)
        .map(|(i, _)| {
            let mut n = net.clone();
            n.nodes[i].spelling = full;
            (format!("node {i}: every attribute written"), n)
        })
        .collect()
}

/// A simpler setting, one field at a time.
fn simpler_setting(case: &CimCase) -> Vec<(String, CimCase)> {
    let mut out = Vec::new();
    let mut edit = |what: String, f: &dyn Fn(&mut CimCase)| {
        let mut c = case.clone();
        f(&mut c);
        out.push((what, c));
    };
    let a = &case.setting.arch;
    let lower = match a.api {
        Api::Wordline => Some(Api::Crossbar),
        Api::Crossbar => Some(Api::Core),
        Api::Core => None,
    };
    if let Some(api) = lower {
        edit(format!("API {}", api.name()), &|c| c.setting.arch.api = api);
    }
    for axis in 0..2 {
        if a.cores[axis] > 1 {
            edit(format!("cores axis {axis} -> 1"), &|c| {
                c.setting.arch.cores[axis] = 1
            });
        }
        if a.crossbars[axis] > 1 {
            edit(format!("crossbars axis {axis} -> 1"), &|c| {
                c.setting.arch.crossbars[axis] = 1
            });
        }
    }
    if a.global_buffer[0] < 786_432 {
        edit("global buffer 786432".into(), &|c| {
            c.setting.arch.global_buffer[0] = 786_432
        });
    }
    if a.cell_bits != 1 {
        edit("1 bit per cell".into(), &|c| c.setting.arch.cell_bits = 1);
    }
    if a.max_rows != a.crossbar_size[0] {
        edit("every row at once".into(), &|c| {
            c.setting.arch.max_rows = c.setting.arch.crossbar_size[0]
        });
    }
    if case.setting.input_precision != 8 || case.setting.weight_precision != 8 {
        edit("8-bit precisions".into(), &|c| {
            c.setting.input_precision = 8;
            c.setting.weight_precision = 8;
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{network_from_seed, setting_from_seed, NetConfig};
    use crate::network::Node;

    fn node(op: Op, inputs: Vec<Src>) -> Node {
        Node {
            op,
            inputs,
            spelling: Spelling::default(),
        }
    }

    #[test]
    fn every_candidate_is_valid_and_smaller() {
        let cfg = NetConfig::default();
        for seed in 0..300 {
            let case = CimCase {
                network: network_from_seed(&cfg, seed),
                setting: setting_from_seed(&cfg, seed),
                seed,
            };
            for pass in 0..PASSES {
                for (line, c) in candidates(pass, &case) {
                    c.network
                        .shapes()
                        .unwrap_or_else(|e| panic!("seed {seed} {line}: {e}"));
                    assert!(
                        size_of(&c) < size_of(&case),
                        "seed {seed} pass {pass} {line}"
                    );
                }
            }
        }
    }

    #[test]
    fn bypassing_a_node_rewires_its_readers_and_renumbers() {
        let net = Network {
            input: vec![1, 2, 3, 3],
            nodes: vec![
                node(Op::Relu, vec![Src::Input]),
                node(Op::Relu, vec![Src::Node(0)]),
                node(
                    Op::Add { constant: false },
                    vec![Src::Node(1), Src::Node(0)],
                ),
            ],
            outputs: vec![2],
        };
        let n = remove(&net, 1, Src::Node(0)).unwrap();
        assert_eq!(n.nodes.len(), 2);
        assert_eq!(n.nodes[1].inputs, vec![Src::Node(0), Src::Node(0)]);
        assert_eq!(n.outputs, vec![1]);
        let cut = cut_at(&net, 1);
        assert_eq!((cut.nodes.len(), cut.outputs.clone()), (2, vec![1]));
    }
}
