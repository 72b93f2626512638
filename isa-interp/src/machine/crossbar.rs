//! Array groups and the `mvmul` kernel.
//!
//! Each group's weights are kept as one dense row-major matrix (so `y += x_i · W[i][..]`
//! vectorizes), in the narrowest integer type that holds them, together with their min and max
//! (so the "weight fits `mbiw`" check is O(1)). Export groups are built once when the machine is
//! set up; groups known only from `array_group_map` / PIMCOMP-NN's array count are column
//! windows of one lazily built per-core matrix of all arrays side by side (zero cells build
//! nothing at all).
//!
//! Accumulation is exact: an `i32` fast path is taken when `max|x| · max|w| · rows` provably
//! fits, `i64` when that fits, `i128` otherwise.

use std::collections::HashMap;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::fault::{FaultKind, SetupError};
use super::CellFill;
use crate::program::{Arch, GroupSpec};
use crate::xbar::CoreCrossbars;

/// Dense weights in the narrowest type that holds every value.
pub(crate) enum Weights {
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
}

impl Weights {
    fn from_i32(values: Vec<i32>, min: i32, max: i32) -> Weights {
        if min >= i8::MIN as i32 && max <= i8::MAX as i32 {
            Weights::I8(values.into_iter().map(|v| v as i8).collect())
        } else if min >= i16::MIN as i32 && max <= i16::MAX as i32 {
            Weights::I16(values.into_iter().map(|v| v as i16).collect())
        } else {
            Weights::I32(values)
        }
    }

    fn get(&self, i: usize) -> i32 {
        match self {
            Weights::I8(v) => v[i] as i32,
            Weights::I16(v) => v[i] as i32,
            Weights::I32(v) => v[i],
        }
    }
}

/// A row-major matrix with `stride` weights per row.
pub(crate) struct Dense {
    stride: usize,
    weights: Weights,
}

/// One export group, materialised.
struct ExportGroup {
    rows: u32,
    cols: u32,
    dense: Dense,
    min: i32,
    max: i32,
}

/// The synthetic cells of a core whose groups come from the program's config: all arrays side
/// by side (`array_rows × arrays_per_core·array_cols`), with each array's min and max.
struct Synth {
    dense: Option<Dense>,
    array_min: Vec<i32>,
    array_max: Vec<i32>,
}

/// Where a core's groups come from.
enum Source {
    /// The export lists this core: `group` is the export's group number.
    Export(HashMap<u32, ExportGroup>),
    /// pimsim-nn's `array_group_map`: group `g` is `(first array, array count)`.
    Map(Vec<(u32, u32)>),
    /// PIMCOMP-NN: `group` is the number of arrays, starting at array 0.
    Count,
    /// No groups at all.
    None,
}

/// One core's array groups.
pub(crate) struct CoreXbars {
    source: Source,
    synth: Option<Synth>,
}

/// A resolved group: a `rows × cols` window of a dense matrix (or all zero).
pub(crate) struct GroupView<'a> {
    pub rows: u32,
    pub cols: u32,
    dense: Option<&'a Dense>,
    col0: usize,
    pub min: i32,
    pub max: i32,
}

impl CoreXbars {
    /// Builds core `core`'s groups: from its export entry if there is one, else from the
    /// program's group spec. Validates the export against the architecture.
    pub fn new(
        core: u32,
        export: Option<&CoreCrossbars>,
        spec: &GroupSpec,
        arch: &Arch,
    ) -> Result<CoreXbars, SetupError> {
        let source = match export {
            Some(x) => Source::Export(build_export(core, x, arch)?),
            None => match spec {
                GroupSpec::ExportOnly => Source::None,
                GroupSpec::ArrayCount => Source::Count,
                GroupSpec::ArrayGroupMap(map) => {
                    let mut groups = Vec::new();
                    let mut next: u64 = 0;
                    for &n in map.get(core as usize).map(|v| v.as_slice()).unwrap_or(&[]) {
                        groups.push((next as u32, n));
                        next += n as u64;
                    }
                    if next > arch.arrays_per_core as u64 {
                        return Err(SetupError::GroupMapTooLarge {
                            core,
                            used: next,
                            arrays_per_core: arch.arrays_per_core,
                        });
                    }
                    Source::Map(groups)
                }
            },
        };
        Ok(CoreXbars { source, synth: None })
    }

    /// Resolves `mvmul`'s `group` field to a matrix; unknown groups are faults.
    pub fn group(&mut self, group: u32, core: u32, arch: &Arch, fill: CellFill) -> Result<GroupView<'_>, FaultKind> {
        let (first, count) = match &self.source {
            Source::Export(groups) => {
                let g = groups.get(&group).ok_or_else(|| FaultKind::UnknownGroup {
                    group,
                    reason: format!("the crossbar export of core {core} does not list it"),
                })?;
                return Ok(GroupView {
                    rows: g.rows,
                    cols: g.cols,
                    dense: Some(&g.dense),
                    col0: 0,
                    min: g.min,
                    max: g.max,
                });
            }
            Source::None => {
                return Err(FaultKind::UnknownGroup {
                    group,
                    reason: format!("core {core} has no crossbar export and the program has no array group map"),
                })
            }
            Source::Map(groups) => *groups.get(group as usize).ok_or_else(|| FaultKind::UnknownGroup {
                group,
                reason: format!("core {core}'s array_group_map lists {} groups", groups.len()),
            })?,
            Source::Count => {
                if group == 0 || group > arch.arrays_per_core {
                    return Err(FaultKind::UnknownGroup {
                        group,
                        reason: format!(
                            "as an array count it must be 1..={} (arrays_per_core)",
                            arch.arrays_per_core
                        ),
                    });
                }
                (0, group)
            }
        };
        let synth = self.synth.get_or_insert_with(|| build_synth(core, arch, fill));
        let (a0, a1) = (first as usize, (first + count) as usize);
        let min = synth.array_min[a0..a1].iter().copied().min().unwrap_or(0);
        let max = synth.array_max[a0..a1].iter().copied().max().unwrap_or(0);
        Ok(GroupView {
            rows: arch.array_rows,
            cols: count * arch.array_cols,
            dense: synth.dense.as_ref(),
            col0: first as usize * arch.array_cols as usize,
            min,
            max,
        })
    }
}

fn build_export(core: u32, x: &CoreCrossbars, arch: &Arch) -> Result<HashMap<u32, ExportGroup>, SetupError> {
    let expected = [arch.arrays_per_core as usize, arch.array_rows as usize, arch.array_cols as usize];
    let shape = x.cells.shape();
    let found = [shape[0], shape[1], shape[2]];
    if found != expected {
        return Err(SetupError::CellsShape { core, found, expected });
    }
    let ac = arch.array_cols as usize;
    let mut out = HashMap::with_capacity(x.groups.len());
    for g in &x.groups {
        if let Some(&array) = g.arrays.iter().find(|&&a| a >= arch.arrays_per_core) {
            return Err(SetupError::ArrayIndex {
                core,
                group: g.group,
                array,
                arrays_per_core: arch.arrays_per_core,
            });
        }
        if g.rows > arch.array_rows {
            return Err(SetupError::GroupRows { core, group: g.group, rows: g.rows, array_rows: arch.array_rows });
        }
        let limit = g.arrays.len() as u64 * arch.array_cols as u64;
        if g.cols as u64 > limit {
            return Err(SetupError::GroupCols {
                core,
                group: g.group,
                cols: g.cols,
                arrays: g.arrays.len() as u32,
                limit,
            });
        }
        let (rows, cols) = (g.rows as usize, g.cols as usize);
        let mut values = Vec::with_capacity(rows * cols);
        let (mut min, mut max) = (0i32, 0i32);
        for r in 0..rows {
            for j in 0..cols {
                let v = x.cells[[g.arrays[j / ac] as usize, r, j % ac]];
                min = min.min(v);
                max = max.max(v);
                values.push(v);
            }
        }
        let group = ExportGroup {
            rows: g.rows,
            cols: g.cols,
            dense: Dense { stride: cols, weights: Weights::from_i32(values, min, max) },
            min,
            max,
        };
        if out.insert(g.group, group).is_some() {
            return Err(SetupError::DuplicateGroup { core, group: g.group });
        }
    }
    Ok(out)
}

/// The synthetic cells of `core`. Random cells are signed 8-bit, drawn from ChaCha8 seeded with
/// the fill seed on stream `core`, array by array, row by row, so that every group of a core
/// sees the same cells whichever group is used first.
fn build_synth(core: u32, arch: &Arch, fill: CellFill) -> Synth {
    let arrays = arch.arrays_per_core as usize;
    match fill {
        CellFill::Zero => Synth { dense: None, array_min: vec![0; arrays], array_max: vec![0; arrays] },
        CellFill::Random(seed) => {
            let (rows, ac) = (arch.array_rows as usize, arch.array_cols as usize);
            let stride = arrays * ac;
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(core as u64);
            let mut cells = vec![0i8; rows * stride];
            let mut buf = vec![0u8; ac];
            let (mut array_min, mut array_max) = (vec![0; arrays], vec![0; arrays]);
            for a in 0..arrays {
                for r in 0..rows {
                    rng.fill_bytes(&mut buf);
                    let row = &mut cells[r * stride + a * ac..r * stride + (a + 1) * ac];
                    for (dst, &b) in row.iter_mut().zip(&buf) {
                        *dst = b as i8;
                        array_min[a] = array_min[a].min(b as i8 as i32);
                        array_max[a] = array_max[a].max(b as i8 as i32);
                    }
                }
            }
            Synth { dense: Some(Dense { stride, weights: Weights::I8(cells) }), array_min, array_max }
        }
    }
}

impl GroupView<'_> {
    /// The first weight (row-major) outside `[lo, hi]`, for the fault report.
    pub fn first_outside(&self, lo: i32, hi: i32) -> Option<(u32, u32, i32)> {
        let dense = self.dense?;
        for r in 0..self.rows as usize {
            for j in 0..self.cols as usize {
                let v = dense.weights.get(r * dense.stride + self.col0 + j);
                if v < lo || v > hi {
                    return Some((r as u32, j as u32, v));
                }
            }
        }
        None
    }
}

/// Reusable accumulators for [`mvmul`].
#[derive(Default)]
pub(crate) struct MvmulScratch {
    pub x: Vec<i32>,
    a32: Vec<i32>,
    a64: Vec<i64>,
    a128: Vec<i128>,
}

/// `y_j = Σ_i x_i · W[i][j]`, exactly; the result is in one of the scratch accumulators.
pub(crate) enum Acc<'a> {
    Zero,
    I32(&'a [i32]),
    I64(&'a [i64]),
    I128(&'a [i128]),
}

impl Acc<'_> {
    #[inline]
    pub fn get(&self, j: usize) -> i128 {
        match self {
            Acc::Zero => 0,
            Acc::I32(a) => a[j] as i128,
            Acc::I64(a) => a[j] as i128,
            Acc::I128(a) => a[j],
        }
    }
}

/// Multiplies `scratch.x` (`view.rows` inputs) by the group's matrix.
pub(crate) fn mvmul<'s>(view: &GroupView<'_>, scratch: &'s mut MvmulScratch) -> Acc<'s> {
    let cols = view.cols as usize;
    let Some(dense) = view.dense else { return Acc::Zero };
    if view.min == 0 && view.max == 0 {
        return Acc::Zero;
    }
    let x = &scratch.x;
    let xmax = x.iter().map(|v| v.unsigned_abs() as u128).max().unwrap_or(0);
    let wmax = (view.min.unsigned_abs().max(view.max.unsigned_abs())) as u128;
    let bound = xmax * wmax * x.len() as u128;
    let (stride, col0) = (dense.stride, view.col0);
    if bound <= i32::MAX as u128 {
        scratch.a32.clear();
        scratch.a32.resize(cols, 0);
        let acc = &mut scratch.a32[..];
        match &dense.weights {
            Weights::I8(w) => dispatch_i32(x, w, stride, col0, acc),
            Weights::I16(w) => dispatch_i32(x, w, stride, col0, acc),
            Weights::I32(w) => dispatch_i32(x, w, stride, col0, acc),
        }
        Acc::I32(&scratch.a32)
    } else if bound <= i64::MAX as u128 {
        scratch.a64.clear();
        scratch.a64.resize(cols, 0);
        let acc = &mut scratch.a64[..];
        match &dense.weights {
            Weights::I8(w) => kernel_i64(x, w, stride, col0, acc),
            Weights::I16(w) => kernel_i64(x, w, stride, col0, acc),
            Weights::I32(w) => kernel_i64(x, w, stride, col0, acc),
        }
        Acc::I64(&scratch.a64)
    } else {
        scratch.a128.clear();
        scratch.a128.resize(cols, 0);
        for (i, &xi) in x.iter().enumerate() {
            if xi == 0 {
                continue;
            }
            for (j, a) in scratch.a128.iter_mut().enumerate() {
                *a += xi as i128 * dense.weights.get(i * stride + col0 + j) as i128;
            }
        }
        Acc::I128(&scratch.a128)
    }
}

/// The `i32` accumulation, proven not to overflow by the caller; AVX2 when the CPU has it
/// (the default x86-64 target only assumes SSE2, which lacks a 32-bit vector multiply).
fn dispatch_i32<W: Copy + Into<i32>>(x: &[i32], w: &[W], stride: usize, col0: usize, acc: &mut [i32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            unsafe { kernel_i32_avx2(x, w, stride, col0, acc) };
            return;
        }
    }
    kernel_i32(x, w, stride, col0, acc)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn kernel_i32_avx2<W: Copy + Into<i32>>(x: &[i32], w: &[W], stride: usize, col0: usize, acc: &mut [i32]) {
    kernel_i32(x, w, stride, col0, acc)
}

#[inline(always)]
fn kernel_i32<W: Copy + Into<i32>>(x: &[i32], w: &[W], stride: usize, col0: usize, acc: &mut [i32]) {
    let cols = acc.len();
    for (i, &xi) in x.iter().enumerate() {
        if xi == 0 {
            continue;
        }
        let row = &w[i * stride + col0..i * stride + col0 + cols];
        for (a, &wv) in acc.iter_mut().zip(row) {
            *a = a.wrapping_add(xi.wrapping_mul(wv.into()));
        }
    }
}

fn kernel_i64<W: Copy + Into<i32>>(x: &[i32], w: &[W], stride: usize, col0: usize, acc: &mut [i64]) {
    let cols = acc.len();
    for (i, &xi) in x.iter().enumerate() {
        if xi == 0 {
            continue;
        }
        let row = &w[i * stride + col0..i * stride + col0 + cols];
        for (a, &wv) in acc.iter_mut().zip(row) {
            *a = a.wrapping_add(xi as i64 * wv.into() as i64);
        }
    }
}
