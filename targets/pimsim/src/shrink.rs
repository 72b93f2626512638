//! Minimizing a tensor case: its size, its reductions, and [`minimize`].
//!
//! Reductions are tried in the design's order — batch, spatial size, channels, groups,
//! kernel, stride, dilation, padding, bias/ReLU, cores, arrays per core, array size — then
//! tensor values are pushed to 0 and toward 1 (one function per [`Family`], each listing the
//! smaller cases it can make from the current one, in a fixed order, with a log line each).
//! The loop is the engine's one driver (`engine::shrink`).
//!
//! When a shape shrinks, the tensors are *sliced* (the first rows/channels/kernel positions
//! are kept, or one is removed), so a smaller case keeps as much of the original data as
//! possible. Every candidate is rebuilt with `Case::new`; one that is not valid is skipped, as
//! is one equal to the current case.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use ndarray::{s, Array1, ArrayD, Axis};
use pimdiff_oracle::{Case, CaseArch, CaseSpec, Conv2d, Mvm, Op};

use crate::check::{check_case, RunConfig, Signature};
use pimdiff_engine::hunt::shrink::{shrink, MinimizeConfig, ShrinkOptions, Shrunk};

/// The result of [`minimize`].
#[derive(Clone, Debug)]
pub struct Minimized {
    /// The smallest case found with the signature.
    pub case: Case,
    pub signature: Signature,
    /// Candidates checked.
    pub tried: usize,
    /// Candidates kept (they had the same signature).
    pub kept: usize,
    /// One line per kept reduction, e.g. `batch 2 → 1`, plus a last line on why it stopped.
    pub log: Vec<String>,
}

/// The size of a case, as minimization measures it: elements of input, weight, bias and
/// output, plus the number of nonzero input and weight values.
pub fn case_size(case: &Case) -> u64 {
    let out: usize = case.spec.output_shape().iter().product();
    let bias = case.bias.as_ref().map_or(0, |b| b.len());
    let nonzero = case
        .input
        .iter()
        .chain(case.weight.iter())
        .filter(|&&v| v != 0)
        .count();
    (case.input.len() + case.weight.len() + bias + out + nonzero) as u64
}

/// Shrinks `case` while `check_case(.., cfg)` keeps `signature`, values included.
pub fn minimize(
    case: &Case,
    cfg: &RunConfig,
    signature: &Signature,
    mcfg: &MinimizeConfig,
) -> Minimized {
    let s = shrink_case(
        case,
        true,
        &ShrinkOptions {
            max_steps: mcfg.max_steps,
            deadline: Instant::now().checked_add(mcfg.time_budget),
            resume: true,
        },
        &AtomicBool::new(false),
        |c| check_case(c, cfg).signature().as_ref() == Some(signature),
    );
    Minimized {
        case: s.case,
        signature: signature.clone(),
        tried: s.tried,
        kept: s.kept,
        log: s.log,
    }
}

/// Shrinks a tensor case with the engine's driver over the [`FAMILIES`], keeping a candidate
/// when `keep` holds; `values`: whether tensor values are reduced too (to 0, then toward ±1),
/// after the shapes. Without, the case keeps its values: localization tells a repair from a
/// coincidence better on varied values than on zeros and ones.
pub fn shrink_case(
    case: &Case,
    values: bool,
    options: &ShrinkOptions,
    cancel: &AtomicBool,
    keep: impl FnMut(&Case) -> bool,
) -> Shrunk<Case> {
    let families: Vec<Family> = FAMILIES
        .iter()
        .copied()
        .filter(|f| values || !matches!(f, Family::ZeroValues | Family::UnitValues))
        .collect();
    shrink(case, &families, candidates, options, cancel, keep)
}

/// A family of reductions, in the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Batch,
    Spatial,
    Groups,
    Channels,
    Kernel,
    Stride,
    Dilation,
    Padding,
    BiasRelu,
    Cores,
    ArraysPerCore,
    ArraySize,
    ZeroValues,
    UnitValues,
}

pub const FAMILIES: &[Family] = &[
    Family::Batch,
    Family::Spatial,
    Family::Groups,
    Family::Channels,
    Family::Kernel,
    Family::Stride,
    Family::Dilation,
    Family::Padding,
    Family::BiasRelu,
    Family::Cores,
    Family::ArraysPerCore,
    Family::ArraySize,
    Family::ZeroValues,
    Family::UnitValues,
];

/// The candidates of one family for `case`, each with a log line.
pub fn candidates(family: Family, case: &Case) -> Vec<(String, Case)> {
    let mut out = Candidates {
        case,
        list: Vec::new(),
    };
    match family {
        Family::Batch => batch(&mut out),
        Family::Spatial => spatial(&mut out),
        Family::Groups => groups(&mut out),
        Family::Channels => match case.spec.op {
            Op::Conv2d(c) => conv_channels(&mut out, c),
            Op::Mvm(m) => mvm_features(&mut out, m),
        },
        Family::Kernel => kernel(&mut out),
        Family::Stride | Family::Dilation | Family::Padding => window(&mut out, family),
        Family::BiasRelu => bias_relu(&mut out),
        Family::Cores | Family::ArraysPerCore | Family::ArraySize => arch(&mut out, family),
        Family::ZeroValues => values(&mut out, true),
        Family::UnitValues => values(&mut out, false),
    }
    out.list
}

/// Collects the candidates made from `case`.
struct Candidates<'a> {
    case: &'a Case,
    list: Vec<(String, Case)>,
}

/// The parts of a candidate; whatever is not replaced is the current case's.
struct Parts {
    spec: CaseSpec,
    input: ArrayD<i8>,
    weight: ArrayD<i8>,
    bias: Option<Array1<i32>>,
}

impl Candidates<'_> {
    /// The current case's parts, to be changed into a candidate.
    fn parts(&self) -> Parts {
        Parts {
            spec: self.case.spec.clone(),
            input: self.case.input.clone(),
            weight: self.case.weight.clone(),
            bias: self.case.bias.clone(),
        }
    }

    /// Adds the candidate made of `parts` when it is a valid case other than the current one.
    fn push(&mut self, what: String, parts: Parts) {
        let Ok(c) = Case::new(parts.spec, parts.input, parts.weight, parts.bias, None) else {
            return;
        };
        if c != *self.case {
            self.list.push((what, c));
        }
    }

    /// Adds the current case with another spec (same tensors).
    fn push_spec(&mut self, what: String, spec: CaseSpec) {
        let parts = Parts {
            spec,
            ..self.parts()
        };
        self.push(what, parts);
    }
}

/// Smaller sizes to try for a dimension of size `n` (≥ 2): 1, half, n − 1 (distinct, below n).
fn smaller(n: usize) -> Vec<usize> {
    let mut v = vec![1, n / 2, n.saturating_sub(1)];
    v.retain(|&x| x >= 1 && x < n);
    v.dedup();
    v
}

/// Keeps indices `keep` along `axis`.
fn take<T: Clone>(a: &ArrayD<T>, axis: usize, keep: &[usize]) -> ArrayD<T> {
    a.select(Axis(axis), keep)
}

/// `0..n` without `i`.
fn without(n: usize, i: usize) -> Vec<usize> {
    (0..n).filter(|&j| j != i).collect()
}

fn range(n: usize) -> Vec<usize> {
    (0..n).collect()
}

/// The first `n` bias entries.
fn bias_prefix(bias: &Option<Array1<i32>>, n: usize) -> Option<Array1<i32>> {
    bias.as_ref().map(|b| b.slice(s![..n]).to_owned())
}

/// Fewer batch entries: the first m, then each entry removed.
fn batch(out: &mut Candidates) {
    let case = out.case;
    let n = case.spec.input_shape[0];
    let with_entries = |out: &Candidates, keep: &[usize]| {
        let mut p = out.parts();
        p.spec.input_shape[0] = keep.len();
        p.input = take(&case.input, 0, keep);
        p
    };
    for m in smaller(n) {
        let p = with_entries(out, &range(m));
        out.push(format!("batch {n} → {m}"), p);
    }
    if n >= 2 {
        for i in 0..n {
            let p = with_entries(out, &without(n, i));
            out.push(format!("batch entry {i} removed"), p);
        }
    }
}

/// A smaller input height or width: the first rows (columns), then the last.
fn spatial(out: &mut Candidates) {
    let case = out.case;
    if !matches!(case.spec.op, Op::Conv2d(_)) {
        return;
    }
    for (axis, name) in [(2, "height"), (3, "width")] {
        let n = case.spec.input_shape[axis];
        for m in smaller(n) {
            for (which, keep) in [("first", range(m)), ("last", (n - m..n).collect())] {
                let mut p = out.parts();
                p.spec.input_shape[axis] = m;
                p.input = take(&case.input, axis, &keep);
                out.push(format!("{name} {n} → {m} ({which})"), p);
            }
        }
    }
}

/// The conv2d with `groups` groups of the current case's channels per group, keeping the first
/// groups' data.
fn with_groups(out: &Candidates, c: Conv2d, groups: usize) -> Parts {
    let case = out.case;
    let (cpg, kpg) = (c.in_channels / c.groups, c.out_channels / c.groups);
    let mut p = out.parts();
    p.spec.op = Op::Conv2d(Conv2d {
        in_channels: cpg * groups,
        out_channels: kpg * groups,
        groups,
        ..c
    });
    p.spec.input_shape[1] = cpg * groups;
    p.input = take(&case.input, 1, &range(cpg * groups));
    p.weight = take(&case.weight, 0, &range(kpg * groups));
    p.bias = bias_prefix(&case.bias, kpg * groups);
    p
}

/// Fewer groups: only the first group (a plain convolution), then fewer groups of the same
/// size.
fn groups(out: &mut Candidates) {
    let Op::Conv2d(c) = out.case.spec.op else {
        return;
    };
    if c.groups <= 1 {
        return;
    }
    let p = with_groups(out, c, 1);
    out.push(format!("groups {} → 1 (first group)", c.groups), p);
    for g in smaller(c.groups) {
        let p = with_groups(out, c, g);
        out.push(format!("groups {} → {g}", c.groups), p);
    }
}

/// `keep` (indices within one group of `per_group`) repeated for each of `groups` groups.
fn in_every_group(groups: usize, per_group: usize, keep: &[usize]) -> Vec<usize> {
    (0..groups)
        .flat_map(|gi| keep.iter().map(move |&i| gi * per_group + i))
        .collect()
}

/// Fewer input or output channels per group of a conv2d: the first m, then each one removed.
fn conv_channels(out: &mut Candidates, c: Conv2d) {
    let g = c.groups;
    let (cpg, kpg) = (c.in_channels / g, c.out_channels / g);
    for m in smaller(cpg) {
        let p = conv_inputs(out, c, &range(m));
        out.push(format!("input channels {} → {}", c.in_channels, m * g), p);
    }
    if cpg >= 2 {
        for i in 0..cpg {
            let p = conv_inputs(out, c, &without(cpg, i));
            out.push(format!("input channel {i} removed"), p);
        }
    }
    for m in smaller(kpg) {
        let p = conv_outputs(out, c, &range(m));
        out.push(format!("output channels {} → {}", c.out_channels, m * g), p);
    }
    if kpg >= 2 {
        for i in 0..kpg {
            let p = conv_outputs(out, c, &without(kpg, i));
            out.push(format!("output channel {i} removed"), p);
        }
    }
}

/// The conv2d keeping input channels `keep` of every group.
fn conv_inputs(out: &Candidates, c: Conv2d, keep: &[usize]) -> Parts {
    let case = out.case;
    let g = c.groups;
    let mut p = out.parts();
    p.spec.op = Op::Conv2d(Conv2d {
        in_channels: keep.len() * g,
        ..c
    });
    p.spec.input_shape[1] = keep.len() * g;
    p.input = take(&case.input, 1, &in_every_group(g, c.in_channels / g, keep));
    p.weight = take(&case.weight, 1, keep);
    p
}

/// The conv2d keeping output channels `keep` of every group.
fn conv_outputs(out: &Candidates, c: Conv2d, keep: &[usize]) -> Parts {
    let case = out.case;
    let g = c.groups;
    let keep_out = in_every_group(g, c.out_channels / g, keep);
    let mut p = out.parts();
    p.spec.op = Op::Conv2d(Conv2d {
        out_channels: keep.len() * g,
        ..c
    });
    p.weight = take(&case.weight, 0, &keep_out);
    p.bias = case.bias.as_ref().map(|b| b.select(Axis(0), &keep_out));
    p
}

/// Fewer MVM features: each output, each input removed; then the first m inputs, outputs.
fn mvm_features(out: &mut Candidates, mv: Mvm) {
    if mv.out_features >= 2 {
        for i in 0..mv.out_features {
            let p = mvm_outputs(out, mv, &without(mv.out_features, i));
            out.push(format!("out feature {i} removed"), p);
        }
    }
    if mv.in_features >= 2 {
        for i in 0..mv.in_features {
            let p = mvm_inputs(out, mv, &without(mv.in_features, i));
            out.push(format!("in feature {i} removed"), p);
        }
    }
    for m in smaller(mv.in_features) {
        let p = mvm_inputs(out, mv, &range(m));
        out.push(format!("in features {} → {m}", mv.in_features), p);
    }
    for m in smaller(mv.out_features) {
        let p = mvm_outputs(out, mv, &range(m));
        out.push(format!("out features {} → {m}", mv.out_features), p);
    }
}

/// The MVM keeping input features `keep`.
fn mvm_inputs(out: &Candidates, mv: Mvm, keep: &[usize]) -> Parts {
    let case = out.case;
    let mut p = out.parts();
    p.spec.op = Op::Mvm(Mvm {
        in_features: keep.len(),
        ..mv
    });
    p.spec.input_shape[1] = keep.len();
    p.input = take(&case.input, 1, keep);
    p.weight = take(&case.weight, 1, keep);
    p
}

/// The MVM keeping output features `keep`.
fn mvm_outputs(out: &Candidates, mv: Mvm, keep: &[usize]) -> Parts {
    let case = out.case;
    let mut p = out.parts();
    p.spec.op = Op::Mvm(Mvm {
        out_features: keep.len(),
        ..mv
    });
    p.weight = take(&case.weight, 0, keep);
    p.bias = case.bias.as_ref().map(|b| b.select(Axis(0), keep));
    p
}

/// A smaller kernel height or width (the first positions kept).
fn kernel(out: &mut Candidates) {
    let case = out.case;
    let Op::Conv2d(c) = case.spec.op else {
        return;
    };
    for (axis, name) in [(0, "kernel height"), (1, "kernel width")] {
        let k = c.kernel[axis];
        for m in smaller(k) {
            let mut op = c;
            op.kernel[axis] = m;
            let mut p = out.parts();
            p.spec.op = Op::Conv2d(op);
            p.weight = take(&case.weight, 2 + axis, &range(m));
            out.push(format!("{name} {k} → {m}"), p);
        }
    }
}

/// Smaller strides, dilations or paddings (same tensors).
fn window(out: &mut Candidates, family: Family) {
    let Op::Conv2d(c) = out.case.spec.op else {
        return;
    };
    let mut ops: Vec<(String, Conv2d)> = Vec::new();
    match family {
        Family::Stride => {
            for a in 0..2 {
                for m in smaller(c.stride[a]) {
                    let mut op = c;
                    op.stride[a] = m;
                    ops.push((format!("stride[{a}] {} → {m}", c.stride[a]), op));
                }
            }
        }
        Family::Dilation => {
            for a in 0..2 {
                for m in smaller(c.dilation[a]) {
                    let mut op = c;
                    op.dilation[a] = m;
                    ops.push((format!("dilation[{a}] {} → {m}", c.dilation[a]), op));
                }
            }
        }
        _ => {
            for a in 0..4 {
                let p = c.padding[a];
                let mut options = vec![0, p / 2, p.saturating_sub(1)];
                options.retain(|&x| x < p);
                options.dedup();
                for m in options {
                    let mut op = c;
                    op.padding[a] = m;
                    ops.push((format!("padding[{a}] {p} → {m}"), op));
                }
            }
        }
    }
    for (what, op) in ops {
        let mut spec = out.case.spec.clone();
        spec.op = Op::Conv2d(op);
        out.push_spec(what, spec);
    }
}

/// Without the bias, then without the ReLU.
fn bias_relu(out: &mut Candidates) {
    let spec = &out.case.spec;
    let (bias, relu) = (spec.op.has_bias(), spec.op.has_relu());
    let with = |bias: bool, relu: bool| {
        let mut s = spec.clone();
        match &mut s.op {
            Op::Conv2d(c) => {
                c.bias = bias;
                c.relu = relu;
            }
            Op::Mvm(m) => {
                m.bias = bias;
                m.relu = relu;
            }
        }
        s
    };
    if bias {
        let p = Parts {
            spec: with(false, relu),
            bias: None,
            ..out.parts()
        };
        out.push("bias removed".into(), p);
    }
    if relu {
        let spec = with(bias, false);
        out.push_spec("relu removed".into(), spec);
    }
}

/// Fewer cores, arrays per core, or smaller arrays (same tensors).
fn arch(out: &mut Candidates, family: Family) {
    let a = out.case.spec.arch;
    let mut archs: Vec<(String, CaseArch)> = Vec::new();
    match family {
        Family::Cores => {
            for m in smaller(a.cores) {
                archs.push((
                    format!("cores {} → {m}", a.cores),
                    CaseArch { cores: m, ..a },
                ));
            }
        }
        Family::ArraysPerCore => {
            for m in smaller(a.arrays_per_core) {
                archs.push((
                    format!("arrays per core {} → {m}", a.arrays_per_core),
                    CaseArch {
                        arrays_per_core: m,
                        ..a
                    },
                ));
            }
        }
        _ => {
            for m in smaller(a.array_rows) {
                archs.push((
                    format!("array rows {} → {m}", a.array_rows),
                    CaseArch { array_rows: m, ..a },
                ));
            }
            for m in smaller(a.array_cols) {
                archs.push((
                    format!("array cols {} → {m}", a.array_cols),
                    CaseArch { array_cols: m, ..a },
                ));
            }
        }
    }
    for (what, arch) in archs {
        let mut spec = out.case.spec.clone();
        spec.arch = arch;
        out.push_spec(what, spec);
    }
}

/// Value reductions: with `zero`, whole tensors, halves, then single elements set to 0;
/// otherwise every value with |v| > 1 set to its sign, tensor by tensor, then one by one.
fn values(out: &mut Candidates, zero: bool) {
    let case = out.case;
    let target8 = |v: i8| if zero { 0 } else { v.signum() };
    let target32 = |v: i32| if zero { 0 } else { v.signum() };
    let changes8 = |v: i8| if zero { v != 0 } else { v.unsigned_abs() > 1 };
    let changes32 = |v: i32| if zero { v != 0 } else { v.unsigned_abs() > 1 };
    let word = if zero { "0" } else { "±1" };
    // Whole tensors.
    if case.input.iter().any(|&v| changes8(v)) {
        let p = Parts {
            input: case.input.mapv(target8),
            ..out.parts()
        };
        out.push(format!("input → {word}"), p);
    }
    if case.weight.iter().any(|&v| changes8(v)) {
        let p = Parts {
            weight: case.weight.mapv(target8),
            ..out.parts()
        };
        out.push(format!("weight → {word}"), p);
    }
    if let Some(b) = &case.bias {
        if b.iter().any(|&v| changes32(v)) {
            let p = Parts {
                bias: Some(b.mapv(target32)),
                ..out.parts()
            };
            out.push(format!("bias → {word}"), p);
        }
    }
    // Halves, then single elements (input, weight), then single bias entries.
    for (name, is_input) in [("input", true), ("weight", false)] {
        let t = if is_input { &case.input } else { &case.weight };
        for (lo, hi) in halves_then_elements(t.len()) {
            if !t.iter().skip(lo).take(hi - lo).any(|&v| changes8(v)) {
                continue;
            }
            let changed = map_range(t, lo, hi, target8);
            let what = if hi - lo == 1 {
                format!("{name}[{lo}] → {word}")
            } else {
                format!("{name}[{lo}..{hi}] → {word}")
            };
            let mut p = out.parts();
            if is_input {
                p.input = changed;
            } else {
                p.weight = changed;
            }
            out.push(what, p);
        }
    }
    if let Some(b) = &case.bias {
        for i in 0..b.len() {
            if changes32(b[i]) {
                let mut nb = b.clone();
                nb[i] = target32(b[i]);
                let p = Parts {
                    bias: Some(nb),
                    ..out.parts()
                };
                out.push(format!("bias[{i}] → {word}"), p);
            }
        }
    }
}

/// The flat ranges a value reduction tries: the two halves (when there are at least 4
/// elements), then every single element.
fn halves_then_elements(len: usize) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    if len >= 4 {
        ranges.push((0, len / 2));
        ranges.push((len / 2, len));
    }
    ranges.extend((0..len).map(|i| (i, i + 1)));
    ranges
}

/// `t` with `f` applied to the flat (row-major) elements `lo..hi`.
fn map_range(t: &ArrayD<i8>, lo: usize, hi: usize, f: impl Fn(i8) -> i8) -> ArrayD<i8> {
    let mut changed = t.as_standard_layout().into_owned();
    if let Some(flat) = changed.as_slice_mut() {
        for v in &mut flat[lo..hi] {
            *v = f(*v);
        }
    }
    changed
}
