//! The harness's own model of what a channel-wise lowering of a case needs: crossbar arrays,
//! a lower bound of the instruction count, and local memory for the smallest chunk. Written
//! from the lowering's documented rules (the compiler's module docs and `docs/design.md`), not
//! by calling the compiler, so that a capacity check that goes wrong in the compiler is caught
//! here instead of being trusted ([`crate::check::refute`]).
//!
//! The lowering, as the model sees it:
//!
//! * **Crossbars.** Per group, output channels are cut into tiles of `array_cols` (one *class*
//!   per tile) and input channels into tiles of `array_rows`; one crossbar per (class, input
//!   tile, kernel position), in that order. With *padding skipping*, a kernel row (column)
//!   that reads only padding for every output row (column) has no crossbars; with *weight
//!   skipping*, a crossbar whose weights are all zero has none. Each remaining crossbar
//!   occupies one array: `arrays = kept crossbars`.
//! * **Instructions.** At least two per kept crossbar and output pixel (the `mvmul` and its
//!   address), plus one store per class and pixel, plus one bias addition per class and pixel
//!   when there is a bias.
//! * **Placement.** Classes in order fill cores one after another: a class that does not fit
//!   the current core's free arrays but fits an empty core moves to the next core when the
//!   cores after it still hold every crossbar not yet placed; otherwise it is split over
//!   consecutive cores. A full core moves the fill on. A class's *owner* is the first core
//!   holding one of its crossbars (for a class without crossbars: the core the fill reached).
//! * **Local memory of one gathered pixel**, per core: the bias of every owned class (4 bytes
//!   per channel), an input slot as tall as its tallest crossbar (rounded up to 4 bytes) when
//!   it holds any, one int32 accumulator per class it computes or owns, a scratch vector as
//!   wide as its widest class with two or more crossbars there, and a receive vector as wide
//!   as its widest owned class that other cores contribute to. The need is the largest core's.

use pimdiff_compiler::CompileOptions;
use pimdiff_oracle::{Case, Op};

/// What the model says a case needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Demand {
    /// Crossbar arrays (kept crossbars).
    pub arrays: u64,
    /// The lower bound of the instruction count.
    pub instructions: u64,
    /// Local memory of the neediest core for one gathered pixel; `None` when the arrays do
    /// not fit, so that there is no placement to speak of.
    pub local_memory: Option<u64>,
}

/// The operator as a grouped 2-D convolution (an MVM is a 1×1 one over one-pixel images).
struct Geometry {
    c: usize,
    k: usize,
    kh: usize,
    kw: usize,
    groups: usize,
    pixels: u64,
    bias: bool,
    /// Per kernel row / column: does it read real input for some output row / column?
    row_reaches: Vec<bool>,
    col_reaches: Vec<bool>,
}

impl Geometry {
    fn of(case: &Case) -> Geometry {
        let out = case.spec.output_shape();
        let pixels = out
            .iter()
            .enumerate()
            .filter(|&(d, _)| d != 1)
            .fold(1u64, |p, (_, &v)| p.saturating_mul(v as u64));
        match &case.spec.op {
            Op::Conv2d(cv) => {
                let dim = |d: usize| case.spec.input_shape.get(d).copied().unwrap_or(1);
                let (h, w) = (dim(2), dim(3));
                let (oh, ow) = (
                    out.get(2).copied().unwrap_or(1),
                    out.get(3).copied().unwrap_or(1),
                );
                let reach = |taps: usize, d: usize, s: usize, pad: usize, extent: usize, outs| {
                    (0..taps)
                        .map(|t| tap_reaches_input(t * d, s, pad, extent, outs))
                        .collect()
                };
                Geometry {
                    c: cv.in_channels,
                    k: cv.out_channels,
                    kh: cv.kernel[0],
                    kw: cv.kernel[1],
                    groups: cv.groups.max(1),
                    pixels,
                    bias: cv.bias,
                    row_reaches: reach(
                        cv.kernel[0],
                        cv.dilation[0],
                        cv.stride[0],
                        cv.padding[0],
                        h,
                        oh,
                    ),
                    col_reaches: reach(
                        cv.kernel[1],
                        cv.dilation[1],
                        cv.stride[1],
                        cv.padding[1],
                        w,
                        ow,
                    ),
                }
            }
            Op::Mvm(m) => Geometry {
                c: m.in_features,
                k: m.out_features,
                kh: 1,
                kw: 1,
                groups: 1,
                pixels,
                bias: m.bias,
                row_reaches: vec![true],
                col_reaches: vec![true],
            },
        }
    }
}

/// Whether a kernel tap at offset `offset` (already times the dilation) reads a real input
/// row for some output row: input row `o·stride + offset − pad` lies in `0..extent` for some
/// `o < outputs`, i.e. `o·stride ∈ [pad − offset, pad − offset + extent − 1]`.
fn tap_reaches_input(
    offset: usize,
    stride: usize,
    pad: usize,
    extent: usize,
    outputs: usize,
) -> bool {
    let lo = pad as i64 - offset as i64;
    let hi = lo + extent as i64 - 1;
    let stride = stride.max(1) as i64;
    if hi < 0 || outputs == 0 {
        return false;
    }
    let first = if lo <= 0 {
        0
    } else {
        (lo + stride - 1) / stride
    };
    first < outputs as i64 && first * stride <= hi
}

/// One class (output tile): its width and the rows of its kept crossbars, in order.
struct Class {
    width: usize,
    kept_rows: Vec<usize>,
}

/// The classes of the lowering, with their kept crossbars.
fn classes(
    case: &Case,
    g: &Geometry,
    rows: usize,
    cols: usize,
    options: &CompileOptions,
) -> Vec<Class> {
    let cg = g.c / g.groups;
    let kg = g.k / g.groups;
    let tiles_k = kg.div_ceil(cols);
    let tiles_c = cg.div_ceil(rows);
    let per_class = tiles_c * g.kh * g.kw;
    // Which crossbars hold a nonzero weight: one pass over the weights (K, C/groups, kh, kw).
    let mut nonzero = vec![false; g.groups * tiles_k * per_class];
    for (e, &v) in case.weight.iter().enumerate() {
        if v == 0 {
            continue;
        }
        let j = e % g.kw;
        let i = (e / g.kw) % g.kh;
        let ci = (e / (g.kw * g.kh)) % cg;
        let k = e / (g.kw * g.kh * cg);
        let class = (k / kg) * tiles_k + (k % kg) / cols;
        nonzero[class * per_class + ((ci / rows) * g.kh + i) * g.kw + j] = true;
    }
    let mut out = Vec::with_capacity(g.groups * tiles_k);
    for class in 0..g.groups * tiles_k {
        let ot = class % tiles_k;
        let mut kept_rows = Vec::new();
        for it in 0..tiles_c {
            for i in 0..g.kh {
                for j in 0..g.kw {
                    let padding_only = !(g.row_reaches[i] && g.col_reaches[j]);
                    let zero = !nonzero[class * per_class + (it * g.kh + i) * g.kw + j];
                    let skipped =
                        (options.skip_padding && padding_only) || (options.weight_skipping && zero);
                    if !skipped {
                        kept_rows.push(rows.min(cg - it * rows));
                    }
                }
            }
        }
        out.push(Class {
            width: cols.min(kg - ot * cols),
            kept_rows,
        });
    }
    out
}

/// What one core holds for a gathered one-pixel chunk.
#[derive(Clone, Debug, Default)]
struct CoreLoad {
    slot_rows: usize,
    holds_crossbars: bool,
    acc_bytes: u64,
    bias_bytes: u64,
    scratch_width: usize,
    recv_width: usize,
}

impl CoreLoad {
    fn bytes(&self) -> u64 {
        let slot = if self.holds_crossbars {
            (self.slot_rows as u64).div_ceil(4) * 4
        } else {
            0
        };
        self.bias_bytes + slot + self.acc_bytes + 4 * (self.scratch_width + self.recv_width) as u64
    }
}

/// Places the classes (see the module docs) and returns every core's load. The arrays must
/// fit: `Σ kept ≤ cores × per_core`.
fn place(classes: &[Class], cores: usize, per_core: usize, bias: bool) -> Vec<CoreLoad> {
    let mut loads = vec![CoreLoad::default(); cores];
    let mut used = vec![0usize; cores];
    let mut core = 0usize;
    let mut remaining: usize = classes.iter().map(|c| c.kept_rows.len()).sum();
    for class in classes {
        let size = class.kept_rows.len();
        if size > per_core - used[core]
            && size <= per_core
            && core + 1 < cores
            && (cores - core - 1) * per_core >= remaining
        {
            core += 1;
        }
        // (core, crossbars there, tallest there), in fill order.
        let mut parts: Vec<(usize, usize, usize)> = Vec::new();
        for &rows in &class.kept_rows {
            while used[core] == per_core {
                core += 1;
            }
            used[core] += 1;
            match parts.last_mut() {
                Some(p) if p.0 == core => {
                    p.1 += 1;
                    p.2 = p.2.max(rows);
                }
                _ => parts.push((core, 1, rows)),
            }
        }
        remaining -= size;
        let width = class.width;
        for &(c, count, tallest) in &parts {
            let l = &mut loads[c];
            l.holds_crossbars = true;
            l.slot_rows = l.slot_rows.max(tallest);
            l.acc_bytes += 4 * width as u64;
            if count >= 2 {
                l.scratch_width = l.scratch_width.max(width);
            }
        }
        let owner = parts.first().map_or(core.min(cores - 1), |p| p.0);
        let o = &mut loads[owner];
        if parts.is_empty() {
            o.acc_bytes += 4 * width as u64;
        }
        if parts.len() > 1 {
            o.recv_width = o.recv_width.max(width);
        }
        if bias {
            o.bias_bytes += 4 * width as u64;
        }
        if used[core] == per_core && core + 1 < cores {
            core += 1;
        }
    }
    loads
}

/// What a channel-wise lowering with `options` needs for `case` (see the module docs).
pub fn demand(case: &Case, options: &CompileOptions) -> Demand {
    let arch = &case.spec.arch;
    let (rows, cols) = (arch.array_rows.max(1), arch.array_cols.max(1));
    let g = Geometry::of(case);
    let classes = classes(case, &g, rows, cols, options);
    let kept: u64 = classes.iter().map(|c| c.kept_rows.len() as u64).sum();
    let finals = classes.len() as u64 * g.pixels * (1 + g.bias as u64);
    let instructions = kept
        .saturating_mul(g.pixels)
        .saturating_mul(2)
        .saturating_add(finals);
    let available = (arch.cores as u64).saturating_mul(arch.arrays_per_core as u64);
    let local_memory = (kept <= available && arch.cores > 0).then(|| {
        place(&classes, arch.cores, arch.arrays_per_core, g.bias)
            .iter()
            .map(CoreLoad::bytes)
            .max()
            .unwrap_or(0)
    });
    Demand {
        arrays: kept,
        instructions,
        local_memory,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taps_reach_the_input_exactly_when_some_output_reads_a_real_row() {
        // 3 input rows, padding 2 on top, kernel taps 0..5, stride 1, 3 outputs (rows -2..0,
        // -1..1, 0..2 start at -2, -1, 0).
        let brute = |off: usize, stride: usize, pad: usize, extent: usize, outs: usize| {
            (0..outs).any(|o| {
                let r = (o * stride + off) as i64 - pad as i64;
                (0..extent as i64).contains(&r)
            })
        };
        for stride in 1..4 {
            for pad in 0..5 {
                for extent in 1..5 {
                    for outs in 1..5 {
                        for off in 0..10 {
                            assert_eq!(
                                tap_reaches_input(off, stride, pad, extent, outs),
                                brute(off, stride, pad, extent, outs),
                                "off {off} stride {stride} pad {pad} extent {extent} outs {outs}"
                            );
                        }
                    }
                }
            }
        }
    }
}
