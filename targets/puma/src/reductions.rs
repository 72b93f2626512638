//! Smaller variants of a PUMA network, for minimization (`engine::shrink`).
//!
//! Three passes, each listing its candidates simplest first:
//!
//! 0. **Structure**: drop a value with everything computed from it; route a value's users to
//!    one of its operands (`relu(x)` → `x`, `conv(x)` → `x`); drop an output; drop an input or
//!    a matrix nothing uses.
//! 1. **Sizes**: every occurrence of one size (a length, channel count, width or height) made
//!    1, half or one less at once (so that sizes that must agree keep agreeing), then single
//!    fields; image sides, kernel sides (to 1, one less, square), strides and pooling spans
//!    (to 1), a declared padding to the compiler's own `⌊k/2⌋`.
//! 2. **Options and operations**: the compile options to the library's defaults, a scale
//!    factor to 1, `sig`/`tanh` to `relu`, `mul`/`sub` to `add`.
//!
//! Every candidate is *normalized* (the shapes that follow from the operands are re-derived:
//! a dense matrix's width is its vector's length, a conv matrix's input channels and output
//! size follow its stream and its padding, an output has its value's shape) and kept only when
//! [`PumaNetwork::check`] accepts it. A candidate's data is drawn again from the case seed
//! ([`super::network_data`]), so it always fits the network and stays in range.

use std::collections::BTreeSet;

use super::network::{Input, Matrix, Op, Output, PumaNetwork, Shape};

/// The number of passes.
pub const PASSES: usize = 3;

/// The valid candidates of `pass` for `net`, each with a log line.
pub fn candidates(pass: usize, net: &PumaNetwork) -> Vec<(String, PumaNetwork)> {
    let raw = match pass {
        0 => structure(net),
        1 => sizes(net),
        _ => options_and_ops(net),
    };
    let mut seen = BTreeSet::new();
    raw.into_iter()
        .filter_map(|(line, c)| normalize(c).map(|c| (line, c)))
        .filter(|(_, c)| c != net && seen.insert(c.to_json()))
        .collect()
}

/// A network's size for the engine's statistics: values first, then weights and inputs.
pub fn size_of(net: &PumaNetwork) -> u64 {
    let weights: u64 = net.matrices.iter().map(|m| m.elements()).sum();
    let inputs: u64 = net
        .inputs
        .iter()
        .map(|i| i.data_shape().iter().map(|&d| d as u64).product::<u64>())
        .sum();
    (net.values.len() as u64) * 1_000_000_000 + (weights + inputs).min(999_999_999)
}

/// Re-derives the shapes that follow from the operands (module docs); `None` when the result
/// is not a valid network.
pub fn normalize(mut net: PumaNetwork) -> Option<PumaNetwork> {
    let mut shapes: Vec<Shape> = Vec::with_capacity(net.values.len());
    for i in 0..net.values.len() {
        let op = net.values[i].clone();
        match op {
            Op::Mvm { matrix, x } => {
                if let (Some(Shape::Vector(n)), Some(Matrix::Dense { width, .. })) =
                    (shapes.get(x), net.matrices.get_mut(matrix))
                {
                    *width = *n;
                }
            }
            Op::Conv { matrix, x } => {
                if let (Some(Shape::Image(s)), Some(Matrix::Conv { .. })) =
                    (shapes.get(x), net.matrices.get(matrix))
                {
                    let s = *s;
                    let (pw, ph) = net.matrices[matrix].padding()?;
                    if let Some(Matrix::Conv {
                        kernel_width,
                        kernel_height,
                        in_channels,
                        stride,
                        out_width,
                        out_height,
                        ..
                    }) = net.matrices.get_mut(matrix)
                    {
                        *in_channels = s.channels;
                        // The declared padding is kept: the size is re-derived from it.
                        let out = |n: u32, k: u32, p: u32| {
                            (n + 2 * p)
                                .checked_sub(k)
                                .map(|span| span / (*stride).max(1) + 1)
                        };
                        *out_width = out(s.width, *kernel_width, pw)?;
                        *out_height = out(s.height, *kernel_height, ph)?;
                    }
                }
            }
            _ => {}
        }
        let mut probe = net.clone();
        probe.values.truncate(i + 1);
        probe.outputs.clear();
        shapes = probe.check().ok()?;
    }
    for o in &mut net.outputs {
        let shape = *shapes.get(o.value())?;
        *o = match (o.clone(), shape) {
            (
                Output::Vector { name, value, .. } | Output::Image { name, value, .. },
                Shape::Vector(length),
            ) => Output::Vector {
                name,
                length,
                value,
            },
            (
                Output::Vector { name, value, .. } | Output::Image { name, value, .. },
                Shape::Image(s),
            ) => Output::Image {
                name,
                width: s.width,
                height: s.height,
                channels: s.channels,
                value,
            },
        };
    }
    net.check().ok()?;
    Some(net)
}

/// `net` with the values where `keep` is false removed, every reference to a removed value
/// `v` sent to `redirect[v]` (a kept value), and outputs of removed values without a
/// redirection dropped.
fn retain(net: &PumaNetwork, keep: &[bool], redirect: &[Option<usize>]) -> PumaNetwork {
    let mut new_index = vec![None; net.values.len()];
    let mut next = 0;
    for (i, k) in keep.iter().enumerate() {
        if *k {
            new_index[i] = Some(next);
            next += 1;
        }
    }
    let map = |v: usize| -> Option<usize> {
        new_index[v].or_else(|| redirect[v].and_then(|r| new_index[r]))
    };
    let mut out = net.clone();
    out.values = net
        .values
        .iter()
        .enumerate()
        .filter(|(i, _)| keep[*i])
        .map(|(_, op)| remap_op(op, &|v| map(v).unwrap_or(v)))
        .collect();
    out.outputs = net
        .outputs
        .iter()
        .filter_map(|o| {
            let v = map(o.value())?;
            let mut o = o.clone();
            match &mut o {
                Output::Vector { value, .. } | Output::Image { value, .. } => *value = v,
            }
            Some(o)
        })
        .collect();
    out
}

fn remap_op(op: &Op, f: &dyn Fn(usize) -> usize) -> Op {
    match *op {
        Op::Input { input } => Op::Input { input },
        Op::Mvm { matrix, x } => Op::Mvm { matrix, x: f(x) },
        Op::Conv { matrix, x } => Op::Conv { matrix, x: f(x) },
        Op::Add { a, b } => Op::Add { a: f(a), b: f(b) },
        Op::Sub { a, b } => Op::Sub { a: f(a), b: f(b) },
        Op::Mul { a, b } => Op::Mul { a: f(a), b: f(b) },
        Op::Scale { factor, x } => Op::Scale { factor, x: f(x) },
        Op::Relu { x } => Op::Relu { x: f(x) },
        Op::Tanh { x } => Op::Tanh { x: f(x) },
        Op::Sig { x } => Op::Sig { x: f(x) },
        Op::MaxPool { hspan, wspan, x } => Op::MaxPool {
            hspan,
            wspan,
            x: f(x),
        },
    }
}

fn structure(net: &PumaNetwork) -> Vec<(String, PumaNetwork)> {
    let n = net.values.len();
    let mut out = Vec::new();
    // Drop value v and everything computed from it.
    for v in 0..n {
        let mut keep = vec![true; n];
        keep[v] = false;
        for i in v + 1..n {
            if net.values[i].operands().iter().any(|&o| !keep[o]) {
                keep[i] = false;
            }
        }
        out.push((
            format!("drop values[{v}] and what is computed from it"),
            retain(net, &keep, &vec![None; n]),
        ));
    }
    // Route v's users to one of its operands.
    for v in 0..n {
        for x in net.values[v].operands() {
            let mut keep = vec![true; n];
            keep[v] = false;
            let mut redirect = vec![None; n];
            redirect[v] = Some(x);
            out.push((
                format!(
                    "values[{v}] ({}) replaced by values[{x}]",
                    net.values[v].name()
                ),
                retain(net, &keep, &redirect),
            ));
        }
    }
    for o in 0..net.outputs.len() {
        let mut c = net.clone();
        let name = c.outputs.remove(o);
        out.push((format!("drop output `{}`", name.name()), c));
    }
    let used_inputs: BTreeSet<usize> = net
        .values
        .iter()
        .filter_map(|op| match op {
            Op::Input { input } => Some(*input),
            _ => None,
        })
        .collect();
    for i in (0..net.inputs.len()).filter(|i| !used_inputs.contains(i)) {
        let mut c = net.clone();
        c.inputs.remove(i);
        for op in &mut c.values {
            if let Op::Input { input } = op {
                if *input > i {
                    *input -= 1;
                }
            }
        }
        out.push((format!("drop unused input `{}`", net.inputs[i].name()), c));
    }
    let used_matrices: BTreeSet<usize> = net
        .values
        .iter()
        .filter_map(|op| match op {
            Op::Mvm { matrix, .. } | Op::Conv { matrix, .. } => Some(*matrix),
            _ => None,
        })
        .collect();
    for m in (0..net.matrices.len()).filter(|m| !used_matrices.contains(m)) {
        let mut c = net.clone();
        c.matrices.remove(m);
        for op in &mut c.values {
            if let Op::Mvm { matrix, .. } | Op::Conv { matrix, .. } = op {
                if *matrix > m {
                    *matrix -= 1;
                }
            }
        }
        out.push((
            format!("drop unused matrix `{}`", net.matrices[m].name()),
            c,
        ));
    }
    out
}

/// Smaller values of a size, simplest first.
fn smaller(v: u32) -> Vec<u32> {
    let mut c = vec![1, v / 2, v - 1];
    c.retain(|&s| s >= 1 && s < v);
    c.dedup();
    c
}

/// Every size field of a network (lengths, channels, widths, heights; not kernels, strides
/// and the derived conv output sizes), by where it is. A used matrix's width and input
/// channels follow its operand ([`normalize`]); an unused one's are its own.
fn size_fields(net: &mut PumaNetwork) -> Vec<&mut u32> {
    let mut fields: Vec<&mut u32> = Vec::new();
    for i in &mut net.inputs {
        match i {
            Input::Vector { length, .. } => fields.push(length),
            Input::Image {
                width,
                height,
                channels,
                ..
            } => {
                fields.push(width);
                fields.push(height);
                fields.push(channels);
            }
        }
    }
    for m in &mut net.matrices {
        match m {
            Matrix::Dense { width, height, .. } => {
                fields.push(width);
                fields.push(height);
            }
            Matrix::Conv {
                in_channels,
                out_channels,
                ..
            } => {
                fields.push(in_channels);
                fields.push(out_channels);
            }
        }
    }
    fields
}

fn sizes(net: &PumaNetwork) -> Vec<(String, PumaNetwork)> {
    let mut out = Vec::new();
    let mut probe = net.clone();
    let values: BTreeSet<u32> = size_fields(&mut probe).into_iter().map(|f| *f).collect();
    // Every occurrence of one size at once.
    for &s in values.iter().rev() {
        for to in smaller(s) {
            let mut c = net.clone();
            for f in size_fields(&mut c) {
                if *f == s {
                    *f = to;
                }
            }
            out.push((format!("every size {s} → {to}"), c));
        }
    }
    // One field at a time.
    let count = size_fields(&mut probe).len();
    for k in 0..count {
        let s = *size_fields(&mut probe)[k];
        for to in smaller(s) {
            let mut c = net.clone();
            *size_fields(&mut c)[k] = to;
            out.push((format!("size field {k}: {s} → {to}"), c));
        }
    }
    out.extend(kernels_and_strides(net));
    out
}

fn kernels_and_strides(net: &PumaNetwork) -> Vec<(String, PumaNetwork)> {
    let mut out = Vec::new();
    for (m, matrix) in net.matrices.iter().enumerate() {
        let Matrix::Conv {
            kernel_width: kw,
            kernel_height: kh,
            stride,
            ..
        } = *matrix
        else {
            continue;
        };
        let mut kernels: Vec<(u32, u32)> = vec![(1, 1), (kw.min(kh), kw.min(kh))];
        kernels.extend(smaller(kw).into_iter().map(|w| (w, kh)));
        kernels.extend(smaller(kh).into_iter().map(|h| (kw, h)));
        for (w, h) in kernels.into_iter().filter(|&k| k != (kw, kh)) {
            let mut c = net.clone();
            if let Matrix::Conv {
                kernel_width,
                kernel_height,
                ..
            } = &mut c.matrices[m]
            {
                (*kernel_width, *kernel_height) = (w, h);
            }
            out.push((
                format!("`{}`: kernel {kw}×{kh} → {w}×{h}", matrix.name()),
                c,
            ));
        }
        if stride > 1 {
            let mut c = net.clone();
            if let Matrix::Conv { stride, .. } = &mut c.matrices[m] {
                *stride = 1;
            }
            out.push((format!("`{}`: stride {stride} → 1", matrix.name()), c));
        }
        if let Matrix::Conv {
            padding_width: Some(_),
            ..
        }
        | Matrix::Conv {
            padding_height: Some(_),
            ..
        } = matrix
        {
            let mut c = net.clone();
            if let Matrix::Conv {
                padding_width,
                padding_height,
                ..
            } = &mut c.matrices[m]
            {
                (*padding_width, *padding_height) = (None, None);
            }
            out.push((format!("`{}`: declared padding → ⌊k/2⌋", matrix.name()), c));
        }
    }
    for (i, input) in net.inputs.iter().enumerate() {
        if let Input::Image { stride, .. } = *input {
            if stride > 1 {
                let mut c = net.clone();
                if let Input::Image { stride, .. } = &mut c.inputs[i] {
                    *stride = 1;
                }
                out.push((format!("`{}`: stream stride {stride} → 1", input.name()), c));
            }
        }
    }
    for (v, op) in net.values.iter().enumerate() {
        if let Op::MaxPool { hspan, wspan, x } = *op {
            let mut spans = vec![(1, 1), (hspan.min(wspan), hspan.min(wspan))];
            spans.extend(smaller(hspan).into_iter().map(|h| (h, wspan)));
            spans.extend(smaller(wspan).into_iter().map(|w| (hspan, w)));
            for (h, w) in spans.into_iter().filter(|&s| s != (hspan, wspan)) {
                let mut c = net.clone();
                c.values[v] = Op::MaxPool {
                    hspan: h,
                    wspan: w,
                    x,
                };
                out.push((format!("values[{v}]: pool {hspan}×{wspan} → {h}×{w}"), c));
            }
        }
    }
    out
}

fn options_and_ops(net: &PumaNetwork) -> Vec<(String, PumaNetwork)> {
    let mut out = Vec::new();
    let defaults = super::network::CompileOptions::default();
    if net.options != defaults {
        let mut c = net.clone();
        c.options = defaults;
        out.push(("the library's default options".to_string(), c));
    }
    for (v, op) in net.values.iter().enumerate() {
        let simpler = match *op {
            Op::Scale { factor, x } if factor != 1 => Some(Op::Scale { factor: 1, x }),
            Op::Sig { x } | Op::Tanh { x } => Some(Op::Relu { x }),
            Op::Mul { a, b } | Op::Sub { a, b } => Some(Op::Add { a, b }),
            _ => None,
        };
        if let Some(s) = simpler {
            let mut c = net.clone();
            let line = format!("values[{v}]: {} → {}", op.name(), s.name());
            c.values[v] = s;
            out.push((line, c));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{network_from_seed, PumaNetConfig};

    #[test]
    fn every_candidate_is_valid_and_not_larger() {
        let cfg = PumaNetConfig::default();
        // Seeds 0..12 (3 declares a padding), then more that declare a padding or pool a
        // strided stream.
        for seed in (0..15).chain([22, 28, 45, 47]) {
            let net = network_from_seed(&cfg, seed);
            for pass in 0..PASSES {
                for (line, c) in candidates(pass, &net) {
                    assert!(c.check().is_ok(), "seed {seed}: {line}");
                    assert!(c.values.len() <= net.values.len(), "seed {seed}: {line}");
                    assert_ne!(c, net, "seed {seed}: {line}");
                }
            }
        }
    }
}
