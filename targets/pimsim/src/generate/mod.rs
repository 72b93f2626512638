//! Random cases: the one definition of "a valid case" that three callers share.
//!
//! * `pimdiff hunt` draws a case from a seed ([`case_from_seed`], ChaCha8: the same seed
//!   always gives the same case, on every platform and build), and with it the in-repo
//!   compiler's options the case is compiled with ([`case_and_options_from_seed`],
//!   [`options`]);
//! * cargo-fuzz hands raw bytes ([`case_from_unstructured`], `arbitrary::Unstructured`);
//! * proptest properties use [`case_strategy`], whose values shrink toward small plain cases.
//!
//! All three run the same function, [`generate`], over a [`Choices`] source, so validity is
//! defined exactly once. Validity is by construction, never by filtering: every case is valid
//! per `case-format.md`, lies well inside [`pimdiff_oracle::limits`], and has an exact result
//! that fits int32 (the bias range is derived from the largest possible sum). Most cases also
//! fit their architecture; a small, configurable share ([`GenConfig::overcommit_ratio`]) does
//! not, on purpose, so that the compiler's capacity checks are exercised too (those come back
//! as *unsupported*, which is counted, not a finding).
//!
//! Choices are biased toward the edges where lowerings break: channel counts at
//! tile size −1 / = / +1, kernels larger than the unpadded input, stride larger than the
//! kernel, padding larger than the kernel, one-pixel outputs, 1-row or 1-column arrays, one
//! core versus many, all-zero weight tiles, extreme values (−128, 127), groups and depthwise
//! convolutions, dilation, asymmetric padding, batch > 1, bias and ReLU, tight local memory,
//! and local memory at the edges where the in-repo compiler's bufferization changes mode
//! (whole images, output rows, pixels of a row, gathered pixels; patch or gathered input for
//! the pixel-wise lowering), with batches in every mode and several chunks per image.
//! [`edge_tags`] classifies a finished case by those edges (used by the tests and by hunt
//! statistics).
//!
//! Every choice is made so that the *lowest* value of the choice source is the plainest
//! option: a fuzzer or proptest input of all zeros gives a 1×1 MVM on a 1-core chip, and
//! shrinking the input bytes shrinks the case.

use ndarray::{Array1, ArrayD, IxDyn};
use pimdiff_compiler::{local_memory_thresholds, CompileOptions, Lowering};
use pimdiff_oracle::limits::MAX_TOTAL_LOCAL_MEMORY_BYTES;
use pimdiff_oracle::{Case, CaseArch, CaseSpec, Conv2d, Mvm, Op};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub mod choices;
pub mod config;
pub mod options;

pub use self::choices::{Choices, SeedChoices, UnstructuredChoices};
pub use self::config::GenConfig;
use self::options::CaseOptions;

/// The case of `seed`: the same seed and configuration always give the same case, the one
/// a hunt checks (without the compiler options it carries: [`case_and_options_from_seed`]).
pub fn case_from_seed(cfg: &GenConfig, seed: u64) -> Case {
    case_and_options_from_seed(cfg, seed).0
}

/// The case of `seed` and the compiler options drawn for it ([`CaseOptions::draw`], the
/// reduction resolved for the case). The options are drawn before the case's shape: a case
/// whose local memory sits at a bufferization edge sits at the edge of the options it is
/// compiled with.
pub fn case_and_options_from_seed(cfg: &GenConfig, seed: u64) -> (Case, CaseOptions) {
    let mut options = CaseOptions::default();
    let case = generate_with(cfg, &mut SeedChoices::new(seed), |memory_edge| {
        options = CaseOptions::draw(cfg, seed, memory_edge);
        options
    });
    let options = options.resolved(&case);
    (case, options)
}

/// A case decoded from fuzzer input. Never fails for lack of data (an exhausted input picks
/// the plainest option everywhere); the `Result` is there for `arbitrary`'s conventions.
pub fn case_from_unstructured(
    cfg: &GenConfig,
    u: &mut arbitrary::Unstructured,
) -> arbitrary::Result<Case> {
    Ok(generate(cfg, &mut UnstructuredChoices(u)))
}

/// How many choice bytes a proptest value carries. A default case uses roughly 60–150; more
/// only matters for large configurations, where the tail then takes the plainest options.
#[cfg(feature = "proptest")]
const STRATEGY_BYTES: usize = 512;

/// A proptest strategy over valid cases. The value is decoded from a byte vector through the
/// same path as fuzzer input, so proptest's shrinking (shorter vectors, bytes toward 0) moves
/// every choice toward its plainest option: smaller shapes, fewer features, plain values.
#[cfg(feature = "proptest")]
pub fn case_strategy(cfg: GenConfig) -> impl proptest::strategy::Strategy<Value = Case> {
    use proptest::prelude::*;
    let cfg = cfg.sanitized();
    proptest::collection::vec(any::<u8>(), 0..STRATEGY_BYTES).prop_map(move |bytes| {
        let mut u = arbitrary::Unstructured::new(&bytes);
        generate(&cfg, &mut UnstructuredChoices(&mut u))
    })
}

/// The generator proper: one valid case from any choice source, for the default compiler
/// options.
pub fn generate<C: Choices>(cfg: &GenConfig, c: &mut C) -> Case {
    generate_with(cfg, c, |_| CaseOptions::default())
}

/// [`generate`] for a case compiled with the options `options` gives, told whether the case's
/// local memory will sit at a bufferization edge (the options move those edges).
pub fn generate_with<C: Choices>(
    cfg: &GenConfig,
    c: &mut C,
    options: impl FnOnce(bool) -> CaseOptions,
) -> Case {
    let cfg = cfg.sanitized();
    // Local memory at a bufferization edge (decided first, because such cases also lean
    // toward batches: per-image offsets differ between the chunkings).
    let memory_edge = c.chance(cfg.memory_edge_ratio);
    let options = &options(memory_edge);
    let spec = if c.chance(1.0 - cfg.mvm_ratio) {
        conv_spec(&cfg, c, memory_edge)
    } else {
        mvm_spec(&cfg, c, memory_edge)
    };
    let tensor_seed = c.int(0, u64::MAX);
    let modes = (
        c.size(0, FillMode::COUNT - 1),
        c.size(0, FillMode::COUNT - 1),
    );
    let zero_tiles = c.chance(cfg.edge_ratio * 0.3);
    let mut rng = ChaCha8Rng::seed_from_u64(tensor_seed);
    let input_shape = spec.input_shape.clone();
    let weight_shape = spec.weight_shape();
    let input = fill(&mut rng, &input_shape, FillMode::from_index(modes.0));
    let mut weight = fill(&mut rng, &weight_shape, FillMode::from_index(modes.1));
    if zero_tiles {
        zero_weight_tiles(&mut rng, &spec, &mut weight);
    }
    let bias = spec.bias_len().map(|len| {
        let bound = bias_bound(&spec);
        let extreme = rng.random_bool(0.2);
        Array1::from_iter((0..len).map(|_| {
            if extreme {
                if rng.random_bool(0.5) {
                    bound
                } else {
                    -bound
                }
            } else {
                rng.random_range(-1000..=1000)
            }
        }))
    });
    let case = match Case::new(spec, input, weight, bias, None) {
        Ok(case) => case,
        // Unreachable by construction (every bound above is checked against the limits and
        // the int32 range); falling back to the plainest case keeps the generator total.
        Err(_) => return plain_case(),
    };
    let edge_bytes = if memory_edge {
        memory_at_edge(&cfg, c, &case, options)
    } else {
        None
    };
    match edge_bytes {
        Some(bytes) => {
            let mut spec = case.spec.clone();
            spec.arch.local_memory_bytes = bytes;
            Case::new(spec, case.input, case.weight, case.bias, None)
                .unwrap_or_else(|_| plain_case())
        }
        None => case,
    }
}

/// Local memory at one of the edges where the in-repo compiler's bufferization changes mode
/// ([`pimdiff_compiler::local_memory_thresholds`], both lowerings): exactly at a threshold, a
/// few bytes above it, or one byte below it (the next finer mode at its largest chunk, so a
/// ragged last chunk). Ample memory, the common case, always takes the coarsest mode: whole
/// images, one chunk. `None` when the case does not map at all (an overcommitted one).
fn memory_at_edge<C: Choices>(
    cfg: &GenConfig,
    c: &mut C,
    case: &Case,
    options: &CaseOptions,
) -> Option<usize> {
    let mut edges: Vec<u64> = Vec::new();
    for lowering in Lowering::ALL {
        let options = options.compile_options(&CompileOptions {
            lowering,
            ..CompileOptions::default()
        });
        edges.extend(thresholds(case, &options, local_memory_thresholds)?);
    }
    edges.sort_unstable();
    edges.dedup();
    if edges.is_empty() {
        return None;
    }
    let edge = c.pick(&edges);
    let bytes = match c.size(0, 3) {
        0 => edge,
        1 => edge + c.int(1, 8),
        2 => edge.saturating_sub(1),
        _ => edge + c.int(9, 64),
    };
    let cap = (cfg.max_local_memory_bytes as u64)
        .min(MAX_TOTAL_LOCAL_MEMORY_BYTES / case.spec.arch.cores.max(1) as u64);
    Some(bytes.clamp(1, cap.max(1)) as usize)
}

/// `local_memory_thresholds` of the compiler under test, `None` when it declines the case or
/// panics. The generator runs before the per-case catch of a hunt: a panic here would end the
/// worker thread, and a hunt waits for its workers, so a compiler bug in the thresholds would
/// hang the hunt instead of being found. Without the edge the case keeps its memory, and its
/// compilation meets the same bug inside the catch, as a `crash` finding.
fn thresholds(
    case: &Case,
    options: &CompileOptions,
    of: impl FnOnce(&Case, &CompileOptions) -> Result<Vec<u64>, pimdiff_compiler::CompileError>,
) -> Option<Vec<u64>> {
    pimdiff_engine::hunt::panic::catch(|| of(case, options))
        .ok()?
        .ok()
}

/// A one-line description of a case's shape, for logs and tables: e.g.
/// `conv2d N1 C2→K1 3×3 k2×2 s1 p[0,0,1,0] d1 g1 +bias | 1 core × 2 arrays of 2×1`.
pub fn describe_case(case: &Case) -> String {
    let a = &case.spec.arch;
    let arch = format!(
        "{} core{} × {} arrays of {}×{}, {} B local",
        a.cores,
        if a.cores == 1 { "" } else { "s" },
        a.arrays_per_core,
        a.array_rows,
        a.array_cols,
        a.local_memory_bytes
    );
    let flags = |bias: bool, relu: bool| {
        let mut s = String::new();
        if bias {
            s.push_str(" +bias");
        }
        if relu {
            s.push_str(" +relu");
        }
        s
    };
    let n = case.spec.input_shape[0];
    match &case.spec.op {
        Op::Conv2d(c) => {
            let (h, w) = (case.spec.input_shape[2], case.spec.input_shape[3]);
            format!(
                "conv2d N{n} C{}→K{} {h}×{w} k{}×{} s{}×{} p{:?} d{}×{} g{}{} | {arch}",
                c.in_channels,
                c.out_channels,
                c.kernel[0],
                c.kernel[1],
                c.stride[0],
                c.stride[1],
                c.padding,
                c.dilation[0],
                c.dilation[1],
                c.groups,
                flags(c.bias, c.relu)
            )
        }
        Op::Mvm(m) => format!(
            "mvm N{n} {}→{}{} | {arch}",
            m.in_features,
            m.out_features,
            flags(m.bias, m.relu)
        ),
    }
}

/// The plainest valid case: a 1×1 MVM on one 1×1 array, with all values 0.
pub fn plain_case() -> Case {
    let spec = CaseSpec {
        op: Op::Mvm(Mvm {
            in_features: 1,
            out_features: 1,
            bias: false,
            relu: false,
        }),
        input_shape: vec![1, 1],
        arch: CaseArch {
            cores: 1,
            arrays_per_core: 1,
            array_rows: 1,
            array_cols: 1,
            local_memory_bytes: 1024,
        },
    };
    let input = ArrayD::zeros(IxDyn(&[1, 1]));
    let weight = ArrayD::zeros(IxDyn(&[1, 1]));
    Case::new(spec, input, weight, None, None).expect("the plain case is valid")
}

/// The largest |bias| that keeps every exact result inside int32: `i32::MAX` minus the
/// largest possible |sum of products| (every term 128·128).
fn bias_bound(spec: &CaseSpec) -> i32 {
    let terms = match &spec.op {
        Op::Conv2d(c) => {
            let [_, cg, kh, kw] = c.weight_shape();
            (cg * kh * kw) as i64
        }
        Op::Mvm(m) => m.in_features as i64,
    };
    let max_sum = terms * 128 * 128;
    (i32::MAX as i64 - max_sum).clamp(0, i32::MAX as i64) as i32
}

/// A size near `tile` (tile − 1, tile, tile + 1, 2·tile ± 1) or uniform in `1..=max`.
fn edge_size<C: Choices>(c: &mut C, edge_ratio: f64, tile: usize, max: usize) -> usize {
    if c.chance(edge_ratio) {
        let options = [
            tile,
            tile.saturating_sub(1),
            tile + 1,
            2 * tile - 1,
            2 * tile + 1,
            1,
        ];
        let v = c.pick(&options);
        v.clamp(1, max)
    } else {
        c.size(1, max)
    }
}

/// Array rows or columns: often 1 (the 1-row / 1-column edge), otherwise uniform.
fn array_dim<C: Choices>(c: &mut C, cfg: &GenConfig) -> usize {
    if c.chance(cfg.edge_ratio * 0.2) {
        1
    } else {
        c.size(1, cfg.max_array_dim)
    }
}

fn conv_spec<C: Choices>(cfg: &GenConfig, c: &mut C, memory_edge: bool) -> CaseSpec {
    let rows = array_dim(c, cfg);
    let cols = array_dim(c, cfg);
    let (groups, cin, cout) = conv_channels(cfg, c, rows, cols);
    let n = batch(c, cfg, memory_edge);
    let w = conv_window(cfg, c);
    let bias = c.chance(0.5);
    let relu = c.chance(0.5);
    let op = Conv2d {
        in_channels: cin,
        out_channels: cout,
        kernel: w.kernel,
        stride: w.stride,
        padding: w.padding,
        dilation: w.dilation,
        groups,
        bias,
        relu,
    };
    let input_shape = vec![n, cin, w.hw[0], w.hw[1]];
    // Too many crossbars for the largest chip: take whole-group tiles instead (one tile of
    // input and output channels per group and kernel position).
    let (mut rows, mut cols) = (rows, cols);
    if op_arrays_conv(&op, rows, cols) > cfg.max_cores * cfg.max_arrays_per_core {
        rows = (cin / groups).clamp(1, cfg.max_array_dim);
        cols = (cout / groups).clamp(1, cfg.max_array_dim);
    }
    let arch = arch_for(
        cfg,
        c,
        op_arrays_conv(&op, rows, cols),
        rows,
        cols,
        footprint(&op_spec_bytes(&Op::Conv2d(op), &input_shape)),
    );
    CaseSpec {
        op: Op::Conv2d(op),
        input_shape,
        arch,
    }
}

/// `(groups, in_channels, out_channels)`: plain, a small group count, or depthwise, with
/// channel counts near the array's `rows × cols` tile.
fn conv_channels<C: Choices>(
    cfg: &GenConfig,
    c: &mut C,
    rows: usize,
    cols: usize,
) -> (usize, usize, usize) {
    let group_kind = if c.chance(cfg.edge_ratio * 0.4) {
        c.size(1, 2)
    } else {
        0
    };
    match group_kind {
        1 => {
            // Grouped: 2 or 3 groups with channels per group near the tile.
            let g = c.size(2, 3).min(cfg.max_channels).max(1);
            let per = (cfg.max_channels / g).max(1);
            let cpg = edge_size(c, cfg.edge_ratio, rows, per);
            let kpg = edge_size(c, cfg.edge_ratio, cols, per);
            (g, cpg * g, kpg * g)
        }
        2 => {
            // Depthwise: one input channel per group, a multiplier of 1 or 2.
            let g = c.size(1, cfg.max_channels);
            let mult = if 2 * g <= cfg.max_channels {
                c.size(1, 2)
            } else {
                1
            };
            (g, g, g * mult)
        }
        _ => (
            1,
            edge_size(c, cfg.edge_ratio, rows, cfg.max_channels),
            edge_size(c, cfg.edge_ratio, cols, cfg.max_channels),
        ),
    }
}

/// The spatial side of a conv2d: kernel, dilation, input size, padding and stride.
struct Window {
    kernel: [usize; 2],
    dilation: [usize; 2],
    hw: [usize; 2],
    padding: [usize; 4],
    stride: [usize; 2],
}

/// Kernel (often square), dilation, input size (sometimes below the kernel's window), padding
/// and stride, adjusted so that the padded input holds at least one window (sometimes exactly
/// one: a one-pixel output).
fn conv_window<C: Choices>(cfg: &GenConfig, c: &mut C) -> Window {
    let mut kernel = [c.size(1, cfg.max_kernel), c.size(1, cfg.max_kernel)];
    if c.chance(cfg.edge_ratio * 0.5) {
        kernel[1] = kernel[0];
    }
    let dilation = if c.chance(cfg.edge_ratio * 0.3) {
        [c.size(1, 2), c.size(1, 2)]
    } else {
        [1, 1]
    };
    let window = |k: usize, d: usize| d * (k - 1) + 1;
    let mut hw = [c.size(1, cfg.max_spatial), c.size(1, cfg.max_spatial)];
    // Kernel larger than the unpadded input: shrink the input below the window.
    if c.chance(cfg.edge_ratio * 0.3) {
        for a in 0..2 {
            let w = window(kernel[a], dilation[a]);
            if w > 1 {
                hw[a] = c.size(1, w - 1);
            }
        }
    }
    let mut padding = conv_padding(cfg, c, kernel);
    let stride = conv_stride(c, kernel);
    // One-pixel output: make the padded input exactly one window.
    let one_pixel = c.chance(cfg.edge_ratio * 0.2);
    for a in 0..2 {
        let w = window(kernel[a], dilation[a]);
        let pads = padding[a] + padding[a + 2];
        if one_pixel && w > pads {
            hw[a] = w - pads;
        }
        // Make the padded input at least one window (add padding at the bottom/right).
        let padded = hw[a] + padding[a] + padding[a + 2];
        if padded < w {
            padding[a + 2] += w - padded;
        }
    }
    Window {
        kernel,
        dilation,
        hw,
        padding,
        stride,
    }
}

/// Padding: none, symmetric, asymmetric, or larger than the kernel.
fn conv_padding<C: Choices>(cfg: &GenConfig, c: &mut C, kernel: [usize; 2]) -> [usize; 4] {
    match c.size(0, 3) {
        0 => [0; 4],
        1 => {
            let ph = c.size(0, kernel[0] / 2 + 1);
            let pw = c.size(0, kernel[1] / 2 + 1);
            [ph, pw, ph, pw]
        }
        2 => [
            c.size(0, kernel[0]),
            c.size(0, kernel[1]),
            c.size(0, kernel[0]),
            c.size(0, kernel[1]),
        ],
        _ => {
            if c.chance(cfg.edge_ratio) {
                // Larger than the kernel.
                [
                    kernel[0] + c.size(0, 1),
                    kernel[1] + c.size(0, 1),
                    c.size(0, kernel[0] + 1),
                    c.size(0, kernel[1] + 1),
                ]
            } else {
                [0; 4]
            }
        }
    }
}

/// Stride: 1, 2, or larger than the kernel.
fn conv_stride<C: Choices>(c: &mut C, kernel: [usize; 2]) -> [usize; 2] {
    let mut stride = [1, 1];
    for a in 0..2 {
        stride[a] = match c.size(0, 3) {
            0 | 1 => 1,
            2 => 2,
            _ => kernel[a] + c.size(1, 2),
        };
    }
    stride
}

fn mvm_spec<C: Choices>(cfg: &GenConfig, c: &mut C, memory_edge: bool) -> CaseSpec {
    let rows = array_dim(c, cfg);
    let cols = array_dim(c, cfg);
    let in_features = edge_size(c, cfg.edge_ratio, rows, cfg.max_channels);
    let out_features = edge_size(c, cfg.edge_ratio, cols, cfg.max_channels);
    let n = batch(c, cfg, memory_edge);
    let bias = c.chance(0.5);
    let relu = c.chance(0.5);
    let op = Mvm {
        in_features,
        out_features,
        bias,
        relu,
    };
    let input_shape = vec![n, in_features];
    let (mut rows, mut cols) = (rows, cols);
    if in_features.div_ceil(rows) * out_features.div_ceil(cols)
        > cfg.max_cores * cfg.max_arrays_per_core
    {
        rows = in_features.min(cfg.max_array_dim);
        cols = out_features.min(cfg.max_array_dim);
    }
    let arrays = in_features.div_ceil(rows) * out_features.div_ceil(cols);
    let arch = arch_for(
        cfg,
        c,
        arrays,
        rows,
        cols,
        footprint(&op_spec_bytes(&Op::Mvm(op), &input_shape)),
    );
    CaseSpec {
        op: Op::Mvm(op),
        input_shape,
        arch,
    }
}

/// Batch: often 1; more than 1 in 30% of cases, and in 60% of those whose local memory sits
/// at a bufferization edge, so that every chunking meets images after the first.
fn batch<C: Choices>(c: &mut C, cfg: &GenConfig, memory_edge: bool) -> usize {
    let share = if memory_edge { 0.6 } else { 0.3 };
    if cfg.max_batch > 1 && c.chance(share) {
        c.size(2, cfg.max_batch)
    } else {
        1
    }
}

/// Crossbars a channel-wise lowering needs without weight skipping: per group, every
/// (input tile, output tile, kernel position).
fn op_arrays_conv(op: &Conv2d, rows: usize, cols: usize) -> usize {
    let cpg = op.in_channels / op.groups;
    let kpg = op.out_channels / op.groups;
    op.groups * cpg.div_ceil(rows) * kpg.div_ceil(cols) * op.kernel[0] * op.kernel[1]
}

/// Bytes of input, output and bias of an operator: a rough lower bound of the local memory a
/// lowering touches, used to make memory *tight* on purpose.
fn op_spec_bytes(op: &Op, input_shape: &[usize]) -> [usize; 3] {
    let spec = CaseSpec {
        op: op.clone(),
        input_shape: input_shape.to_vec(),
        arch: CaseArch {
            cores: 1,
            arrays_per_core: 1,
            array_rows: 1,
            array_cols: 1,
            local_memory_bytes: 1,
        },
    };
    let input: usize = input_shape.iter().product();
    let output: usize = spec.output_shape().iter().product::<usize>() * 4;
    let bias = spec.bias_len().unwrap_or(0) * 4;
    [input, output, bias]
}

fn footprint(parts: &[usize; 3]) -> usize {
    parts.iter().sum()
}

/// An architecture for an operator that needs `arrays` crossbars of `rows × cols`: one core
/// or many, the arrays per core either just enough or with room to spare, and local memory
/// generous or tight. With probability `overcommit_ratio` it deliberately does not fit.
fn arch_for<C: Choices>(
    cfg: &GenConfig,
    c: &mut C,
    arrays: usize,
    rows: usize,
    cols: usize,
    bytes: usize,
) -> CaseArch {
    let arrays = arrays.max(1);
    let overcommit = c.chance(cfg.overcommit_ratio);
    let single = c.chance(0.3);
    let (cores, per_core) = if overcommit {
        let cores = c.size(1, cfg.max_cores);
        let short = arrays.saturating_sub(1) / cores;
        (cores, short.clamp(1, cfg.max_arrays_per_core))
    } else if single && arrays <= cfg.max_arrays_per_core {
        let per_core = if c.chance(cfg.edge_ratio) {
            arrays
        } else {
            c.size(arrays, cfg.max_arrays_per_core)
        };
        (1, per_core)
    } else {
        // Several cores: at least enough in total; often exactly enough per core, so that
        // output tiles are split across cores and partial sums travel.
        let min_cores = arrays.div_ceil(cfg.max_arrays_per_core).max(1);
        let cores = c.size(min_cores.min(cfg.max_cores), cfg.max_cores);
        let needed = arrays.div_ceil(cores);
        let per_core = if c.chance(cfg.edge_ratio) {
            needed
        } else {
            c.size(needed, cfg.max_arrays_per_core)
        };
        // More than the largest chip holds (a rare depthwise case): the largest chip, which
        // the compiler declines as unsupported.
        (cores, per_core.clamp(1, cfg.max_arrays_per_core))
    };
    // Local memory: generous, or tight (around the tensors' own footprint per core).
    let local = if overcommit && c.chance(0.5) {
        (bytes / 4).max(16)
    } else if c.chance(cfg.edge_ratio * 0.2) {
        (bytes + c.size(0, bytes.max(64))).clamp(64, cfg.max_local_memory_bytes)
    } else {
        cfg.max_local_memory_bytes
    };
    CaseArch {
        cores,
        arrays_per_core: per_core,
        array_rows: rows,
        array_cols: cols,
        local_memory_bytes: local,
    }
}

/// How a tensor's values are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FillMode {
    /// Uniform over the whole int8 range.
    Uniform,
    /// Small values in −2..=2 (sums stay readable in reports).
    Small,
    /// Only −128 and 127 (the extremes).
    Extreme,
    /// Mostly zero with a few uniform values.
    Sparse,
    /// All zero.
    Zero,
}

impl FillMode {
    const COUNT: usize = 5;

    fn from_index(i: usize) -> FillMode {
        match i {
            0 => FillMode::Uniform,
            1 => FillMode::Small,
            2 => FillMode::Extreme,
            3 => FillMode::Sparse,
            _ => FillMode::Zero,
        }
    }
}

fn fill(rng: &mut ChaCha8Rng, shape: &[usize], mode: FillMode) -> ArrayD<i8> {
    let len: usize = shape.iter().product();
    let values: Vec<i8> = (0..len)
        .map(|_| match mode {
            FillMode::Uniform => rng.random::<i8>(),
            FillMode::Small => rng.random_range(-2..=2),
            FillMode::Extreme => {
                if rng.random_bool(0.5) {
                    -128
                } else {
                    127
                }
            }
            FillMode::Sparse => {
                if rng.random_bool(0.2) {
                    rng.random::<i8>()
                } else {
                    0
                }
            }
            FillMode::Zero => 0,
        })
        .collect();
    ArrayD::from_shape_vec(IxDyn(shape), values).expect("length is the product of the shape")
}

/// Zeroes some whole crossbar tiles of the weight (a block of `array_rows` input channels ×
/// `array_cols` output channels at one kernel position), so that weight skipping has work.
fn zero_weight_tiles(rng: &mut ChaCha8Rng, spec: &CaseSpec, weight: &mut ArrayD<i8>) {
    let (rows, cols) = (spec.arch.array_rows, spec.arch.array_cols);
    match &spec.op {
        Op::Conv2d(op) => {
            let [k, cg, kh, kw] = op.weight_shape();
            let kpg = k / op.groups;
            for g in 0..op.groups {
                for ot in 0..kpg.div_ceil(cols) {
                    for it in 0..cg.div_ceil(rows) {
                        for i in 0..kh {
                            for j in 0..kw {
                                if !rng.random_bool(0.4) {
                                    continue;
                                }
                                for o in ot * cols..((ot + 1) * cols).min(kpg) {
                                    for ci in it * rows..((it + 1) * rows).min(cg) {
                                        weight[[g * kpg + o, ci, i, j]] = 0;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        Op::Mvm(m) => {
            for ot in 0..m.out_features.div_ceil(cols) {
                for it in 0..m.in_features.div_ceil(rows) {
                    if !rng.random_bool(0.4) {
                        continue;
                    }
                    for o in ot * cols..((ot + 1) * cols).min(m.out_features) {
                        for i in it * rows..((it + 1) * rows).min(m.in_features) {
                            weight[[o, i]] = 0;
                        }
                    }
                }
            }
        }
    }
}

/// An edge of the case space that lowerings get wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EdgeTag {
    Mvm,
    /// Input channels (per group) or output channels (per group) one below a tile size.
    ChannelsTileMinusOne,
    /// Channels exactly a tile size (≥ 2).
    ChannelsAtTile,
    /// Channels one above a tile size.
    ChannelsTilePlusOne,
    /// The kernel is larger than the unpadded input along an axis.
    KernelLargerThanInput,
    /// The stride is larger than the kernel along an axis.
    StrideLargerThanKernel,
    /// A padding is larger than the kernel along its axis.
    PaddingLargerThanKernel,
    AsymmetricPadding,
    /// The output has a single pixel.
    OnePixelOutput,
    OneRowArrays,
    OneColumnArrays,
    SingleCore,
    ManyCores,
    /// A whole crossbar tile of the weight is zero (nonzero weights elsewhere).
    ZeroWeightTile,
    /// The input or weight contains −128 or 127.
    ExtremeValues,
    Grouped,
    Depthwise,
    Dilated,
    Batch,
    Bias,
    Relu,
    /// Local memory at most 4 KiB.
    TightMemory,
}

/// The edges a case sits on, computed from the case alone (not from how it was made).
pub fn edge_tags(case: &Case) -> Vec<EdgeTag> {
    let mut tags = Vec::new();
    let arch = &case.spec.arch;
    let (rows, cols) = (arch.array_rows, arch.array_cols);
    let channels = |cin: usize, cout: usize, tags: &mut Vec<EdgeTag>| {
        for (ch, tile) in [(cin, rows), (cout, cols)] {
            if ch + 1 == tile {
                tags.push(EdgeTag::ChannelsTileMinusOne);
            }
            if ch == tile && tile >= 2 {
                tags.push(EdgeTag::ChannelsAtTile);
            }
            if ch == tile + 1 {
                tags.push(EdgeTag::ChannelsTilePlusOne);
            }
        }
    };
    match &case.spec.op {
        Op::Mvm(m) => {
            tags.push(EdgeTag::Mvm);
            channels(m.in_features, m.out_features, &mut tags);
        }
        Op::Conv2d(op) => {
            channels(
                op.in_channels / op.groups,
                op.out_channels / op.groups,
                &mut tags,
            );
            let (h, w) = (case.spec.input_shape[2], case.spec.input_shape[3]);
            if op.kernel[0] > h || op.kernel[1] > w {
                tags.push(EdgeTag::KernelLargerThanInput);
            }
            if op.stride[0] > op.kernel[0] || op.stride[1] > op.kernel[1] {
                tags.push(EdgeTag::StrideLargerThanKernel);
            }
            let p = op.padding;
            if p[0].max(p[2]) > op.kernel[0] || p[1].max(p[3]) > op.kernel[1] {
                tags.push(EdgeTag::PaddingLargerThanKernel);
            }
            if p[0] != p[2] || p[1] != p[3] {
                tags.push(EdgeTag::AsymmetricPadding);
            }
            let out = case.spec.output_shape();
            if out[2] == 1 && out[3] == 1 {
                tags.push(EdgeTag::OnePixelOutput);
            }
            if op.groups > 1 {
                tags.push(if op.groups == op.in_channels {
                    EdgeTag::Depthwise
                } else {
                    EdgeTag::Grouped
                });
            }
            if op.dilation != [1, 1] {
                tags.push(EdgeTag::Dilated);
            }
        }
    }
    if rows == 1 {
        tags.push(EdgeTag::OneRowArrays);
    }
    if cols == 1 {
        tags.push(EdgeTag::OneColumnArrays);
    }
    tags.push(if arch.cores == 1 {
        EdgeTag::SingleCore
    } else {
        EdgeTag::ManyCores
    });
    if has_zero_weight_tile(case) {
        tags.push(EdgeTag::ZeroWeightTile);
    }
    let extreme = |v: &i8| *v == -128 || *v == 127;
    if case.input.iter().any(extreme) || case.weight.iter().any(extreme) {
        tags.push(EdgeTag::ExtremeValues);
    }
    if case.spec.input_shape[0] > 1 {
        tags.push(EdgeTag::Batch);
    }
    if case.spec.op.has_bias() {
        tags.push(EdgeTag::Bias);
    }
    if case.spec.op.has_relu() {
        tags.push(EdgeTag::Relu);
    }
    if arch.local_memory_bytes <= 4096 {
        tags.push(EdgeTag::TightMemory);
    }
    tags
}

/// Whether some crossbar tile (tile of input × output channels at one kernel position) is all
/// zero while the weight as a whole is not.
fn has_zero_weight_tile(case: &Case) -> bool {
    if case.weight.iter().all(|&v| v == 0) {
        return false;
    }
    let (rows, cols) = (case.spec.arch.array_rows, case.spec.arch.array_cols);
    match &case.spec.op {
        Op::Conv2d(op) => {
            let [k, cg, kh, kw] = op.weight_shape();
            let kpg = k / op.groups;
            (0..op.groups).any(|g| {
                (0..kpg.div_ceil(cols)).any(|ot| {
                    (0..cg.div_ceil(rows)).any(|it| {
                        (0..kh * kw).any(|p| {
                            let (i, j) = (p / kw, p % kw);
                            (ot * cols..((ot + 1) * cols).min(kpg)).all(|o| {
                                (it * rows..((it + 1) * rows).min(cg))
                                    .all(|ci| case.weight[[g * kpg + o, ci, i, j]] == 0)
                            })
                        })
                    })
                })
            })
        }
        Op::Mvm(m) => (0..m.out_features.div_ceil(cols)).any(|ot| {
            (0..m.in_features.div_ceil(rows)).any(|it| {
                (ot * cols..((ot + 1) * cols).min(m.out_features)).all(|o| {
                    (it * rows..((it + 1) * rows).min(m.in_features))
                        .all(|i| case.weight[[o, i]] == 0)
                })
            })
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_of_the_compiler_in_the_thresholds_is_no_edge() {
        let case = plain_case();
        let options = CompileOptions::default();
        assert_eq!(thresholds(&case, &options, |_, _| panic!("a bug")), None);
        assert_eq!(
            thresholds(&case, &options, |_, _| Ok(vec![3, 1])),
            Some(vec![3, 1])
        );
        assert_eq!(
            thresholds(&case, &options, local_memory_thresholds),
            local_memory_thresholds(&case, &options).ok()
        );
    }
}
