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

use ndarray::s;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::fault::{FaultKind, SetupError};
use super::CellFill;
use crate::program::{Arch, GroupSpec};
use crate::xbar::CoreCrossbars;

/// Dense weights. Weights that fit 16 bits are stored *pair-interleaved*: rows `2p` and
/// `2p + 1` of column `j` sit next to each other (`v[(p·stride + j)·2 + (r & 1)]`, an odd last
/// row padded with zeros), which is the operand layout of the x86 `pmaddwd` instruction (16
/// multiply-accumulates per AVX2 instruction); wider weights are plain row-major `i32`.
pub(crate) enum Weights {
    Pairs(Vec<i16>),
    I32(Vec<i32>),
}

/// A matrix of `rows` rows with `stride` columns per row.
pub(crate) struct Dense {
    stride: usize,
    weights: Weights,
}

impl Dense {
    /// Builds from row-major values.
    fn from_row_major(rows: usize, stride: usize, values: Vec<i32>, min: i32, max: i32) -> Dense {
        if min >= i16::MIN as i32 && max <= i16::MAX as i32 {
            let mut pairs = vec![0i16; rows.div_ceil(2) * stride * 2];
            // Rows 2p and 2p + 1 interleaved into pair row p (see `pair_index`).
            for (p, out) in pairs.chunks_exact_mut(2 * stride.max(1)).enumerate() {
                let r = 2 * p;
                let even = &values[r * stride..(r + 1) * stride];
                for (o, &v) in out.iter_mut().step_by(2).zip(even) {
                    *o = v as i16;
                }
                if r + 1 < rows {
                    let odd = &values[(r + 1) * stride..(r + 2) * stride];
                    for (o, &v) in out.iter_mut().skip(1).step_by(2).zip(odd) {
                        *o = v as i16;
                    }
                }
            }
            Dense {
                stride,
                weights: Weights::Pairs(pairs),
            }
        } else {
            Dense {
                stride,
                weights: Weights::I32(values),
            }
        }
    }

    #[inline]
    fn get(&self, r: usize, j: usize) -> i32 {
        match &self.weights {
            Weights::Pairs(v) => v[pair_index(self.stride, r, j)] as i32,
            Weights::I32(v) => v[r * self.stride + j],
        }
    }

    /// Row `r`, columns `col0..col0 + cols`, in order.
    #[inline]
    fn row(&self, r: usize, col0: usize, cols: usize) -> impl Iterator<Item = i32> + '_ {
        let (pairs, wide) = match &self.weights {
            Weights::Pairs(v) => {
                let start = pair_index(self.stride, r, col0);
                (
                    Some(
                        v[start..start + 2 * cols - 1]
                            .iter()
                            .step_by(2)
                            .map(|&w| w as i32),
                    ),
                    None,
                )
            }
            Weights::I32(v) => (
                None,
                Some(
                    v[r * self.stride + col0..r * self.stride + col0 + cols]
                        .iter()
                        .copied(),
                ),
            ),
        };
        pairs
            .into_iter()
            .flatten()
            .chain(wide.into_iter().flatten())
    }
}

#[inline(always)]
fn pair_index(stride: usize, r: usize, j: usize) -> usize {
    ((r / 2) * stride + j) * 2 + (r & 1)
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
        Ok(CoreXbars {
            source,
            synth: None,
        })
    }

    /// Resolves `mvmul`'s `group` field to a matrix; unknown groups are faults.
    pub fn group(
        &mut self,
        group: u32,
        core: u32,
        arch: &Arch,
        fill: CellFill,
    ) -> Result<GroupView<'_>, FaultKind> {
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
                    reason: format!(
                        "core {core} has no crossbar export and the program has no array group map"
                    ),
                })
            }
            Source::Map(groups) => {
                *groups
                    .get(group as usize)
                    .ok_or_else(|| FaultKind::UnknownGroup {
                        group,
                        reason: format!(
                            "core {core}'s array_group_map lists {} groups",
                            groups.len()
                        ),
                    })?
            }
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
        let synth = self
            .synth
            .get_or_insert_with(|| build_synth(core, arch, fill));
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

fn build_export(
    core: u32,
    x: &CoreCrossbars,
    arch: &Arch,
) -> Result<HashMap<u32, ExportGroup>, SetupError> {
    let expected = [
        arch.arrays_per_core as usize,
        arch.array_rows as usize,
        arch.array_cols as usize,
    ];
    let shape = x.cells.shape();
    let found = [shape[0], shape[1], shape[2]];
    if found != expected {
        return Err(SetupError::CellsShape {
            core,
            found,
            expected,
        });
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
            return Err(SetupError::GroupRows {
                core,
                group: g.group,
                rows: g.rows,
                array_rows: arch.array_rows,
            });
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
        // Row r: the first `cols` columns of the group's arrays' rows r, side by side.
        let mut values = Vec::with_capacity(rows * cols);
        for r in 0..rows {
            for (k, &a) in g.arrays.iter().enumerate().take(cols.div_ceil(ac.max(1))) {
                let row = x.cells.slice(s![a as usize, r, ..(cols - k * ac).min(ac)]);
                match row.as_slice() {
                    Some(cells) => values.extend_from_slice(cells),
                    None => values.extend(row.iter().copied()),
                }
            }
        }
        let (min, max) = values
            .iter()
            .fold((0i32, 0i32), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        let group = ExportGroup {
            rows: g.rows,
            cols: g.cols,
            dense: Dense::from_row_major(rows, cols, values, min, max),
            min,
            max,
        };
        if out.insert(g.group, group).is_some() {
            return Err(SetupError::DuplicateGroup {
                core,
                group: g.group,
            });
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
        CellFill::Zero => Synth {
            dense: None,
            array_min: vec![0; arrays],
            array_max: vec![0; arrays],
        },
        CellFill::Random(seed) => {
            let (rows, ac) = (arch.array_rows as usize, arch.array_cols as usize);
            let stride = arrays * ac;
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(core as u64);
            let mut cells = vec![0i16; rows.div_ceil(2) * stride * 2];
            let mut buf = vec![0u8; ac];
            let (mut array_min, mut array_max) = (vec![0; arrays], vec![0; arrays]);
            for a in 0..arrays {
                for r in 0..rows {
                    rng.fill_bytes(&mut buf);
                    for (c, &b) in buf.iter().enumerate() {
                        let v = b as i8;
                        cells[pair_index(stride, r, a * ac + c)] = v as i16;
                        array_min[a] = array_min[a].min(v as i32);
                        array_max[a] = array_max[a].max(v as i32);
                    }
                }
            }
            Synth {
                dense: Some(Dense {
                    stride,
                    weights: Weights::Pairs(cells),
                }),
                array_min,
                array_max,
            }
        }
    }
}

impl GroupView<'_> {
    /// The first weight (row-major) outside `[lo, hi]`, for the fault report.
    pub fn first_outside(&self, lo: i32, hi: i32) -> Option<(u32, u32, i32)> {
        let dense = self.dense?;
        for r in 0..self.rows as usize {
            for j in 0..self.cols as usize {
                let v = dense.get(r, self.col0 + j);
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
    let Some(dense) = view.dense else {
        return Acc::Zero;
    };
    if view.min == 0 && view.max == 0 {
        return Acc::Zero;
    }
    let x = &scratch.x;
    let xmax = x
        .iter()
        .map(|v| v.unsigned_abs() as u128)
        .max()
        .unwrap_or(0);
    let wmax = (view.min.unsigned_abs().max(view.max.unsigned_abs())) as u128;
    let bound = xmax * wmax * x.len() as u128;
    let col0 = view.col0;
    if bound <= i32::MAX as u128 {
        scratch.a32.clear();
        scratch.a32.resize(cols, 0);
        match &dense.weights {
            Weights::Pairs(w) if xmax <= i16::MAX as u128 => {
                pairs_i32(x, w, dense.stride, col0, &mut scratch.a32);
            }
            _ => {
                for (i, &xi) in x.iter().enumerate() {
                    if xi != 0 {
                        for (a, wv) in scratch.a32.iter_mut().zip(dense.row(i, col0, cols)) {
                            *a = a.wrapping_add(xi.wrapping_mul(wv));
                        }
                    }
                }
            }
        }
        Acc::I32(&scratch.a32)
    } else if bound <= i64::MAX as u128 {
        scratch.a64.clear();
        scratch.a64.resize(cols, 0);
        for (i, &xi) in x.iter().enumerate() {
            if xi != 0 {
                for (a, wv) in scratch.a64.iter_mut().zip(dense.row(i, col0, cols)) {
                    *a = a.wrapping_add(xi as i64 * wv as i64);
                }
            }
        }
        Acc::I64(&scratch.a64)
    } else {
        scratch.a128.clear();
        scratch.a128.resize(cols, 0);
        for (i, &xi) in x.iter().enumerate() {
            if xi != 0 {
                for (a, wv) in scratch.a128.iter_mut().zip(dense.row(i, col0, cols)) {
                    *a += xi as i128 * wv as i128;
                }
            }
        }
        Acc::I128(&scratch.a128)
    }
}

/// The `i32` fast path over pair-interleaved 16-bit weights with 16-bit inputs; the caller
/// proved that no partial sum overflows. AVX2 (`vpmaddwd`) when the CPU has it: the default
/// x86-64 target only assumes SSE2.
///
/// `w` holds `x.len().div_ceil(2)` row pairs of `stride` columns each; the product covers
/// columns `col0..col0 + acc.len()`.
fn pairs_i32(x: &[i32], w: &[i16], stride: usize, col0: usize, acc: &mut [i32]) {
    check_pairs_layout(x, w, stride, col0, acc);
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above), and `check_pairs_layout`
            // proved the bounds that `avx2::pairs_i32` documents.
            unsafe { avx2::pairs_i32(x, w, stride, col0, acc) };
            return;
        }
    }
    pairs_i32_scalar(x, w, stride, col0, acc, 0)
}

/// The layout every implementation of [`pairs_i32`] relies on: the columns fit a row, and
/// every row pair of `x` is inside `w`. A violation is a bug in the caller, never input.
#[inline]
fn check_pairs_layout(x: &[i32], w: &[i16], stride: usize, col0: usize, acc: &[i32]) {
    assert!(
        col0 + acc.len() <= stride,
        "columns {col0}..{} outside a row of {stride}",
        col0 + acc.len()
    );
    assert!(
        x.len().div_ceil(2) * stride * 2 <= w.len(),
        "{} rows of {stride} columns do not fit {} paired weights",
        x.len(),
        w.len()
    );
}

/// Columns `from..` of [`pairs_i32`], portable.
#[inline(always)]
fn pairs_i32_scalar(
    x: &[i32],
    w: &[i16],
    stride: usize,
    col0: usize,
    acc: &mut [i32],
    from: usize,
) {
    let cols = acc.len();
    for p in 0..x.len().div_ceil(2) {
        let x0 = x[2 * p];
        let x1 = x.get(2 * p + 1).copied().unwrap_or(0);
        if x0 == 0 && x1 == 0 {
            continue;
        }
        let row = &w[(p * stride + col0) * 2..(p * stride + col0 + cols) * 2];
        for j in from..cols {
            let v = x0
                .wrapping_mul(row[2 * j] as i32)
                .wrapping_add(x1.wrapping_mul(row[2 * j + 1] as i32));
            acc[j] = acc[j].wrapping_add(v);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Columns in blocks of 64 (eight 8-lane accumulators kept in registers across all row
    /// pairs), then blocks of 8, then the scalar tail.
    ///
    /// # Safety
    /// The CPU must support AVX2, and the layout must be the one `check_pairs_layout`
    /// asserts (`col0 + acc.len() <= stride`, `x.len().div_ceil(2) · stride · 2 <= w.len()`):
    /// then every 16-weight load below lies inside `w` and every 8-lane store inside `acc`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn pairs_i32(
        x: &[i32],
        w: &[i16],
        stride: usize,
        col0: usize,
        acc: &mut [i32],
    ) {
        let cols = acc.len();
        let npairs = x.len().div_ceil(2);
        debug_assert!(col0 + cols <= stride && npairs * stride * 2 <= w.len());
        let xs: Vec<__m256i> = (0..npairs)
            .map(|p| {
                let x0 = x[2 * p] as i16 as u16 as u32;
                let x1 = x.get(2 * p + 1).copied().unwrap_or(0) as i16 as u16 as u32;
                _mm256_set1_epi32((x0 | (x1 << 16)) as i32)
            })
            .collect();
        let mut j = 0;
        while j + 64 <= cols {
            let mut a = [_mm256_setzero_si256(); 8];
            for (p, &xv) in xs.iter().enumerate() {
                // SAFETY: pair p's columns col0 + j .. col0 + j + 64 are inside row pair p
                // (j + 64 <= cols and col0 + cols <= stride), which is inside `w`
                // (p < npairs, npairs · stride · 2 <= w.len()); each load reads 16 of them.
                let base = w.as_ptr().add((p * stride + col0 + j) * 2) as *const __m256i;
                for (k, ak) in a.iter_mut().enumerate() {
                    *ak = _mm256_add_epi32(
                        *ak,
                        _mm256_madd_epi16(_mm256_loadu_si256(base.add(k)), xv),
                    );
                }
            }
            for (k, ak) in a.iter().enumerate() {
                // SAFETY: lanes j + 8k .. j + 8k + 8 are inside `acc` (j + 64 <= cols).
                _mm256_storeu_si256(acc.as_mut_ptr().add(j + 8 * k) as *mut __m256i, *ak);
            }
            j += 64;
        }
        while j + 8 <= cols {
            let mut a = _mm256_setzero_si256();
            for (p, &xv) in xs.iter().enumerate() {
                // SAFETY: as above, for columns col0 + j .. col0 + j + 8 (j + 8 <= cols).
                let base = w.as_ptr().add((p * stride + col0 + j) * 2) as *const __m256i;
                a = _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_loadu_si256(base), xv));
            }
            // SAFETY: lanes j .. j + 8 are inside `acc` (j + 8 <= cols).
            _mm256_storeu_si256(acc.as_mut_ptr().add(j) as *mut __m256i, a);
            j += 8;
        }
        super::pairs_i32_scalar(x, w, stride, col0, acc, j);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Inputs for the `i32` path: x in i16, pair-interleaved weights for `rows` rows of
    /// `stride` columns, a window `col0..col0 + cols` (wide enough to use the 64- and 8-column
    /// blocks and the tail).
    fn layout() -> impl Strategy<Value = (Vec<i32>, Vec<i16>, usize, usize, usize)> {
        (1usize..=9, 1usize..=150, 0usize..=20).prop_flat_map(|(rows, cols, extra)| {
            let stride = cols + extra;
            (
                proptest::collection::vec(i16::MIN as i32..=i16::MAX as i32, rows),
                proptest::collection::vec(any::<i16>(), rows.div_ceil(2) * stride * 2),
                Just(stride),
                0..=extra,
                Just(cols),
            )
        })
    }

    proptest! {
        /// Whatever the CPU, the dispatching `pairs_i32` (AVX2 where available) and the
        /// portable loop agree bit for bit, wrapping included.
        #[test]
        fn simd_and_scalar_paths_agree((x, w, stride, col0, cols) in layout()) {
            let mut fast = vec![0i32; cols];
            pairs_i32(&x, &w, stride, col0, &mut fast);
            let mut portable = vec![0i32; cols];
            pairs_i32_scalar(&x, &w, stride, col0, &mut portable, 0);
            prop_assert_eq!(fast, portable);
        }
    }
}
