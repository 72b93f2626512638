//! Signature-preserving minimization of a failing case.
//!
//! [`minimize`] shrinks a case greedily, one *reduction* at a time, keeping a candidate only
//! when [`check_case`] gives it exactly the same [`Signature`]. Reductions are tried in the
//! design's order — batch, spatial size, channels, groups, kernel, stride, dilation, padding,
//! bias/ReLU, cores, arrays per core, array size — then tensor values are pushed to 0 and
//! toward 1. Whenever a reduction is kept the pass continues with the smaller case; passes
//! repeat until one keeps nothing (a fixpoint) or the budget runs out.
//!
//! When a shape shrinks, the tensors are *sliced* (the first rows/channels/kernel positions
//! are kept), so the smaller case keeps as much of the original data as possible. Every
//! candidate is built with `Case::new`, so it is valid; one that is not is skipped.
//!
//! Deterministic: the same case, configuration and signature give the same steps and the
//! same result (the candidate order is fixed and `check_case` is deterministic), except that
//! the wall-clock `time_budget` may stop a slow run earlier than another; `max_steps` is the
//! deterministic bound.

use std::time::{Duration, Instant};

use ndarray::{Array1, ArrayD, Axis};
use pimdiff_oracle::{Case, CaseArch, CaseSpec, Conv2d, Op};

use crate::driver::{check_case, RunConfig};
pub use crate::generate::describe_case;
use crate::outcome::Signature;

/// Budget of a minimization.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MinimizeConfig {
    /// Wall-clock limit; the best case so far is returned when it runs out.
    pub time_budget: Duration,
    /// Largest number of candidates checked.
    pub max_steps: usize,
}

impl Default for MinimizeConfig {
    /// 10 s and 20,000 candidates: a default-sized case reaches its fixpoint in well under a
    /// second; the bounds only matter for large cases or slow external compilers.
    fn default() -> Self {
        MinimizeConfig {
            time_budget: Duration::from_secs(10),
            max_steps: 20_000,
        }
    }
}

/// The result of a minimization.
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

/// Shrinks `case` while `check_case(.., cfg)` keeps `signature` (see the module docs).
pub fn minimize(
    case: &Case,
    cfg: &RunConfig,
    signature: &Signature,
    mcfg: &MinimizeConfig,
) -> Minimized {
    let start = Instant::now();
    let mut m = Minimized {
        case: case.clone(),
        signature: signature.clone(),
        tried: 0,
        kept: 0,
        log: Vec::new(),
    };
    let out_of_budget =
        |m: &Minimized| m.tried >= mcfg.max_steps || start.elapsed() >= mcfg.time_budget;
    loop {
        let mut progress = false;
        for family in FAMILIES {
            // Apply this family until none of its candidates is kept. After a kept candidate
            // at position k, the new list resumes at k: the candidates before it were just
            // tried and failed (for value reductions the lists line up exactly, which keeps
            // element-by-element shrinking linear; the outer fixpoint loop retries the rest).
            let mut resume = 0;
            loop {
                if out_of_budget(&m) {
                    m.log.push(format!(
                        "stopped: budget exhausted after {} candidates",
                        m.tried
                    ));
                    return m;
                }
                let mut kept_at = None;
                for (k, (what, candidate)) in candidates(*family, &m.case)
                    .into_iter()
                    .enumerate()
                    .skip(resume)
                {
                    if out_of_budget(&m) {
                        break;
                    }
                    m.tried += 1;
                    let result = check_case(&candidate, cfg);
                    if result.outcome.signature().as_ref() == Some(signature) {
                        m.kept += 1;
                        m.log.push(what);
                        m.case = candidate;
                        kept_at = Some(k);
                        progress = true;
                        break;
                    }
                }
                match kept_at {
                    Some(k) => resume = k,
                    None => break,
                }
            }
        }
        if !progress {
            m.log
                .push(format!("stopped: fixpoint after {} candidates", m.tried));
            return m;
        }
    }
}

/// A family of reductions, in the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
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

const FAMILIES: &[Family] = &[
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

/// Smaller sizes to try for a dimension of size `n` (≥ 2): 1, half, n − 1 (distinct, below n).
fn smaller(n: usize) -> Vec<usize> {
    let mut v = vec![1, n / 2, n.saturating_sub(1)];
    v.retain(|&x| x >= 1 && x < n);
    v.dedup();
    v
}

/// Rebuilds a case from parts; `None` when it is not valid.
fn build(
    spec: CaseSpec,
    input: ArrayD<i8>,
    weight: ArrayD<i8>,
    bias: Option<Array1<i32>>,
) -> Option<Case> {
    Case::new(spec, input, weight, bias, None).ok()
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

/// The candidates of one family for `case`, each with a log line.
fn candidates(family: Family, case: &Case) -> Vec<(String, Case)> {
    let spec = &case.spec;
    let mut out = Vec::new();
    let mut push = |what: String, c: Option<Case>| {
        if let Some(c) = c {
            if c != *case {
                out.push((what, c));
            }
        }
    };
    match family {
        Family::Batch => {
            let n = spec.input_shape[0];
            for m in smaller(n) {
                let mut s = spec.clone();
                s.input_shape[0] = m;
                push(
                    format!("batch {n} → {m}"),
                    build(
                        s,
                        take(&case.input, 0, &range(m)),
                        case.weight.clone(),
                        case.bias.clone(),
                    ),
                );
            }
            if n >= 2 {
                for i in 0..n {
                    let mut s = spec.clone();
                    s.input_shape[0] = n - 1;
                    push(
                        format!("batch entry {i} removed"),
                        build(
                            s,
                            take(&case.input, 0, &without(n, i)),
                            case.weight.clone(),
                            case.bias.clone(),
                        ),
                    );
                }
            }
        }
        Family::Spatial => {
            if let Op::Conv2d(_) = spec.op {
                for (axis, name) in [(2, "height"), (3, "width")] {
                    let n = spec.input_shape[axis];
                    for m in smaller(n) {
                        let mut s = spec.clone();
                        s.input_shape[axis] = m;
                        // The first m rows, then the last m rows.
                        push(
                            format!("{name} {n} → {m} (first)"),
                            build(
                                s.clone(),
                                take(&case.input, axis, &range(m)),
                                case.weight.clone(),
                                case.bias.clone(),
                            ),
                        );
                        let last: Vec<usize> = (n - m..n).collect();
                        push(
                            format!("{name} {n} → {m} (last)"),
                            build(
                                s,
                                take(&case.input, axis, &last),
                                case.weight.clone(),
                                case.bias.clone(),
                            ),
                        );
                    }
                }
            }
        }
        Family::Groups => {
            if let Op::Conv2d(c) = spec.op {
                if c.groups > 1 {
                    // Keep only the first group: a plain convolution of its channels.
                    let (cpg, kpg) = (c.in_channels / c.groups, c.out_channels / c.groups);
                    let mut s = spec.clone();
                    s.op = Op::Conv2d(Conv2d {
                        in_channels: cpg,
                        out_channels: kpg,
                        groups: 1,
                        ..c
                    });
                    s.input_shape[1] = cpg;
                    push(
                        format!("groups {} → 1 (first group)", c.groups),
                        build(
                            s,
                            take(&case.input, 1, &range(cpg)),
                            take(&case.weight, 0, &range(kpg)),
                            case.bias
                                .as_ref()
                                .map(|b| b.slice(ndarray::s![..kpg]).to_owned()),
                        ),
                    );
                    // Fewer groups, same channels per group.
                    for g in smaller(c.groups) {
                        let mut s = spec.clone();
                        s.op = Op::Conv2d(Conv2d {
                            in_channels: cpg * g,
                            out_channels: kpg * g,
                            groups: g,
                            ..c
                        });
                        s.input_shape[1] = cpg * g;
                        push(
                            format!("groups {} → {g}", c.groups),
                            build(
                                s,
                                take(&case.input, 1, &range(cpg * g)),
                                take(&case.weight, 0, &range(kpg * g)),
                                case.bias
                                    .as_ref()
                                    .map(|b| b.slice(ndarray::s![..kpg * g]).to_owned()),
                            ),
                        );
                    }
                }
            }
        }
        Family::Channels => match spec.op {
            Op::Conv2d(c) => {
                let g = c.groups;
                let (cpg, kpg) = (c.in_channels / g, c.out_channels / g);
                // Input channels per group.
                for m in smaller(cpg) {
                    let keep_in: Vec<usize> = (0..g)
                        .flat_map(|gi| (0..m).map(move |i| gi * cpg + i))
                        .collect();
                    let mut s = spec.clone();
                    s.op = Op::Conv2d(Conv2d {
                        in_channels: m * g,
                        ..c
                    });
                    s.input_shape[1] = m * g;
                    push(
                        format!("input channels {} → {}", c.in_channels, m * g),
                        build(
                            s,
                            take(&case.input, 1, &keep_in),
                            take(&case.weight, 1, &range(m)),
                            case.bias.clone(),
                        ),
                    );
                }
                // One input channel (of every group) removed.
                if cpg >= 2 {
                    for i in 0..cpg {
                        let keep_in: Vec<usize> = (0..g)
                            .flat_map(|gi| without(cpg, i).into_iter().map(move |j| gi * cpg + j))
                            .collect();
                        let mut s = spec.clone();
                        s.op = Op::Conv2d(Conv2d {
                            in_channels: (cpg - 1) * g,
                            ..c
                        });
                        s.input_shape[1] = (cpg - 1) * g;
                        push(
                            format!("input channel {i} removed"),
                            build(
                                s,
                                take(&case.input, 1, &keep_in),
                                take(&case.weight, 1, &without(cpg, i)),
                                case.bias.clone(),
                            ),
                        );
                    }
                }
                // Output channels per group.
                for m in smaller(kpg) {
                    let keep_out: Vec<usize> = (0..g)
                        .flat_map(|gi| (0..m).map(move |i| gi * kpg + i))
                        .collect();
                    let mut s = spec.clone();
                    s.op = Op::Conv2d(Conv2d {
                        out_channels: m * g,
                        ..c
                    });
                    push(
                        format!("output channels {} → {}", c.out_channels, m * g),
                        build(
                            s,
                            case.input.clone(),
                            take(&case.weight, 0, &keep_out),
                            case.bias
                                .as_ref()
                                .map(|b| b.select(Axis(0), &keep_out)),
                        ),
                    );
                }
                // One output channel (of every group) removed.
                if kpg >= 2 {
                    for i in 0..kpg {
                        let keep_out: Vec<usize> = (0..g)
                            .flat_map(|gi| without(kpg, i).into_iter().map(move |j| gi * kpg + j))
                            .collect();
                        let mut s = spec.clone();
                        s.op = Op::Conv2d(Conv2d {
                            out_channels: (kpg - 1) * g,
                            ..c
                        });
                        push(
                            format!("output channel {i} removed"),
                            build(
                                s,
                                case.input.clone(),
                                take(&case.weight, 0, &keep_out),
                                case.bias
                                    .as_ref()
                                    .map(|b| b.select(Axis(0), &keep_out)),
                            ),
                        );
                    }
                }
            }
            Op::Mvm(mv) => {
                if mv.out_features >= 2 {
                    for i in 0..mv.out_features {
                        let keep = without(mv.out_features, i);
                        let mut s = spec.clone();
                        s.op = Op::Mvm(pimdiff_oracle::Mvm {
                            out_features: mv.out_features - 1,
                            ..mv
                        });
                        push(
                            format!("out feature {i} removed"),
                            build(
                                s,
                                case.input.clone(),
                                take(&case.weight, 0, &keep),
                                case.bias
                                    .as_ref()
                                    .map(|b| b.select(Axis(0), &keep)),
                            ),
                        );
                    }
                }
                if mv.in_features >= 2 {
                    for i in 0..mv.in_features {
                        let keep = without(mv.in_features, i);
                        let mut s = spec.clone();
                        s.op = Op::Mvm(pimdiff_oracle::Mvm {
                            in_features: mv.in_features - 1,
                            ..mv
                        });
                        s.input_shape[1] = mv.in_features - 1;
                        push(
                            format!("in feature {i} removed"),
                            build(
                                s,
                                take(&case.input, 1, &keep),
                                take(&case.weight, 1, &keep),
                                case.bias.clone(),
                            ),
                        );
                    }
                }
                for m in smaller(mv.in_features) {
                    let mut s = spec.clone();
                    s.op = Op::Mvm(pimdiff_oracle::Mvm {
                        in_features: m,
                        ..mv
                    });
                    s.input_shape[1] = m;
                    push(
                        format!("in features {} → {m}", mv.in_features),
                        build(
                            s,
                            take(&case.input, 1, &range(m)),
                            take(&case.weight, 1, &range(m)),
                            case.bias.clone(),
                        ),
                    );
                }
                for m in smaller(mv.out_features) {
                    let mut s = spec.clone();
                    s.op = Op::Mvm(pimdiff_oracle::Mvm {
                        out_features: m,
                        ..mv
                    });
                    push(
                        format!("out features {} → {m}", mv.out_features),
                        build(
                            s,
                            case.input.clone(),
                            take(&case.weight, 0, &range(m)),
                            case.bias
                                .as_ref()
                                .map(|b| b.slice(ndarray::s![..m]).to_owned()),
                        ),
                    );
                }
            }
        },
        Family::Kernel => {
            if let Op::Conv2d(c) = spec.op {
                for (axis, name) in [(0, "kernel height"), (1, "kernel width")] {
                    let k = c.kernel[axis];
                    for m in smaller(k) {
                        let mut op = c;
                        op.kernel[axis] = m;
                        let mut s = spec.clone();
                        s.op = Op::Conv2d(op);
                        push(
                            format!("{name} {k} → {m}"),
                            build(
                                s,
                                case.input.clone(),
                                take(&case.weight, 2 + axis, &range(m)),
                                case.bias.clone(),
                            ),
                        );
                    }
                }
            }
        }
        Family::Stride | Family::Dilation | Family::Padding => {
            if let Op::Conv2d(c) = spec.op {
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
                    let mut s = spec.clone();
                    s.op = Op::Conv2d(op);
                    push(
                        what,
                        build(
                            s,
                            case.input.clone(),
                            case.weight.clone(),
                            case.bias.clone(),
                        ),
                    );
                }
            }
        }
        Family::BiasRelu => {
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
                push(
                    "bias removed".into(),
                    build(
                        with(false, relu),
                        case.input.clone(),
                        case.weight.clone(),
                        None,
                    ),
                );
            }
            if relu {
                push(
                    "relu removed".into(),
                    build(
                        with(bias, false),
                        case.input.clone(),
                        case.weight.clone(),
                        case.bias.clone(),
                    ),
                );
            }
        }
        Family::Cores | Family::ArraysPerCore | Family::ArraySize => {
            let a = spec.arch;
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
                let mut s = spec.clone();
                s.arch = arch;
                push(
                    what,
                    build(
                        s,
                        case.input.clone(),
                        case.weight.clone(),
                        case.bias.clone(),
                    ),
                );
            }
        }
        Family::ZeroValues | Family::UnitValues => {
            let zero = family == Family::ZeroValues;
            value_candidates(case, zero, &mut push);
        }
    }
    out
}

/// Value reductions: with `zero`, whole tensors, halves, then single elements set to 0;
/// otherwise every value with |v| > 1 set to its sign, tensor by tensor, then one by one.
fn value_candidates(case: &Case, zero: bool, push: &mut impl FnMut(String, Option<Case>)) {
    let rebuild = |input: ArrayD<i8>, weight: ArrayD<i8>, bias: Option<Array1<i32>>| {
        build(case.spec.clone(), input, weight, bias)
    };
    let target8 = |v: i8| if zero { 0 } else { v.signum() };
    let target32 = |v: i32| if zero { 0 } else { v.signum() };
    let changes8 = |v: i8| if zero { v != 0 } else { v.unsigned_abs() > 1 };
    let changes32 = |v: i32| if zero { v != 0 } else { v.unsigned_abs() > 1 };
    let word = if zero { "0" } else { "±1" };
    // Whole tensors.
    if case.input.iter().any(|&v| changes8(v)) {
        push(
            format!("input → {word}"),
            rebuild(
                case.input.mapv(target8),
                case.weight.clone(),
                case.bias.clone(),
            ),
        );
    }
    if case.weight.iter().any(|&v| changes8(v)) {
        push(
            format!("weight → {word}"),
            rebuild(
                case.input.clone(),
                case.weight.mapv(target8),
                case.bias.clone(),
            ),
        );
    }
    if let Some(b) = &case.bias {
        if b.iter().any(|&v| changes32(v)) {
            push(
                format!("bias → {word}"),
                rebuild(
                    case.input.clone(),
                    case.weight.clone(),
                    Some(b.mapv(target32)),
                ),
            );
        }
    }
    // Halves, then single elements (input, weight), then single bias entries.
    for (name, is_input) in [("input", true), ("weight", false)] {
        let t = if is_input { &case.input } else { &case.weight };
        let len = t.len();
        let flat: Vec<i8> = t.iter().copied().collect();
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        if len >= 4 {
            ranges.push((0, len / 2));
            ranges.push((len / 2, len));
        }
        ranges.extend((0..len).map(|i| (i, i + 1)));
        for (lo, hi) in ranges {
            if !flat[lo..hi].iter().any(|&v| changes8(v)) {
                continue;
            }
            let mut values = flat.clone();
            for v in &mut values[lo..hi] {
                *v = target8(*v);
            }
            let Ok(changed) = ArrayD::from_shape_vec(t.raw_dim(), values) else {
                continue;
            };
            let what = if hi - lo == 1 {
                format!("{name}[{lo}] → {word}")
            } else {
                format!("{name}[{lo}..{hi}] → {word}")
            };
            if is_input {
                push(
                    what,
                    rebuild(changed, case.weight.clone(), case.bias.clone()),
                );
            } else {
                push(
                    what,
                    rebuild(case.input.clone(), changed, case.bias.clone()),
                );
            }
        }
    }
    if let Some(b) = &case.bias {
        for i in 0..b.len() {
            if changes32(b[i]) {
                let mut nb = b.clone();
                nb[i] = target32(b[i]);
                push(
                    format!("bias[{i}] → {word}"),
                    rebuild(case.input.clone(), case.weight.clone(), Some(nb)),
                );
            }
        }
    }
}
