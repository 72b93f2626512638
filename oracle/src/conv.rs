//! conv2d, twice: [`conv2d_direct`] (the definition as plain loops) and [`conv2d`] (im2col
//! and a cache-blocked exact integer matrix product on all cores; what the harness uses). They
//! share only argument validation; proptest checks that they agree.
//!
//! # The fast path
//!
//! Per image and group the convolution is one matrix product `C[K × P] = W[K × R] · X[R × P]`
//! over `R = C/groups · kh · kw` kernel taps and `P = OH · OW` output pixels. The pixels are cut
//! into blocks (a few hundred pixels, at least [`NR`]); each block is one rayon task that
//! gathers its im2col slice of `X` and multiplies every weight row against it, so the two
//! operands of the inner loop stay in L1/L2 while `W` (packed once) is shared by all tasks. The
//! inner loop is a register-blocked micro-kernel over [`MR`] output channels × [`NR`] pixels:
//! both operands are packed as *pairs* of consecutive taps, so one AVX2 `vpmaddwd` multiplies
//! 16 int16 pairs and adds each pair into an int32 lane (16 multiply-accumulates per
//! instruction). Without AVX2 the same packed loop runs as portable code. The result does not
//! depend on the number of threads: every task computes a fixed part of the output the same way.
//!
//! # Exactness of the fast path
//!
//! Every product of an int8 input and an int8 weight lies in `[-16256, 16384]`
//! (`-128·-128 = 16384` is the largest magnitude), so it is exact in i16 and the sum of a pair
//! (at most 2^15 in magnitude) is exact in i32. Pairs are summed in i32 over at most
//! `R_CHUNK` = 2^16 taps, so a partial sum's magnitude is at most `2^14 · 2^16 = 2^30 <
//! 2^31`: no i32 overflow. Partial sums of longer reductions are added in i64, whose range
//! (2^63) exceeds `2^14 · MAX_WEIGHT_ELEMENTS = 2^38` by far. The bias is added in i64 and the
//! result checked against the int32 range before ReLU. So the fast path computes the exact
//! mathematical value, the same as the i64 direct loop.

use ndarray::{Array4, ArrayView1, ArrayView4};
use rayon::prelude::*;

use crate::case::{check_bias, check_shape, validate_operator, Conv2d, Op};
use crate::error::{CaseError, OracleError, WEIGHT_NPY};

/// Reduction length summed in i32 before moving to i64 (see the module docs for the bound).
const R_CHUNK: usize = 1 << 16;

/// Output channels of one micro-tile.
pub const MR: usize = 4;

/// Output pixels of one micro-tile: two AVX2 vectors of eight int32 lanes.
pub const NR: usize = 16;

/// Target size (elements) of one task's im2col block: about 256 KiB of i16, so a block stays
/// in L2 while every output channel sweeps over it.
const COL_BUDGET: usize = 1 << 17;

/// Tasks per thread aimed at when a layer has few pixel blocks, so both cores stay busy.
const TASKS_PER_THREAD: usize = 4;

/// Below this many multiply-accumulates a convolution (or an MVM) runs on the calling thread (a hunt's cases
/// are far below it; a ResNet-18 layer is far above).
pub(crate) const PARALLEL_MIN_MACS: u64 = 1 << 20;

/// The exact int32 conv2d of an NCHW int8 `input` with `weight` `[K, C/groups, kh, kw]`,
/// plus `bias` (when `p.bias`), then ReLU (when `p.relu`). Output `[N, K, OH, OW]`.
///
/// Fast path: im2col in blocks of output pixels and a packed, register-blocked int16 GEMM on
/// every rayon thread (exact: see the module docs).
///
/// Errors: [`OracleError::Invalid`] when `p` is invalid or a shape disagrees with it (the
/// same checks as [`CaseSpec::validate`](crate::CaseSpec::validate), including the limits);
/// [`OracleError::Overflow`] with the first output index (row-major) whose value before
/// ReLU does not fit int32.
pub fn conv2d(
    input: ArrayView4<i8>,
    weight: ArrayView4<i8>,
    bias: Option<ArrayView1<i32>>,
    p: &Conv2d,
) -> Result<Array4<i32>, OracleError> {
    conv2d_blocked(input, weight, bias, p, Blocking::DEFAULT)
}

/// Block sizes and kernel choice of the fast path. Only tests and benchmarks change them:
/// small blocks make small shapes cross every block boundary (pixel blocks, reduction chunks)
/// that real layers cross, and `portable` runs the code that CPUs without AVX2 run.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Blocking {
    /// Target im2col block size in elements (at least [`NR`] output pixels are taken anyway).
    pub col_budget: usize,
    /// Reduction terms summed in i32 before moving to i64; clamped to `2..=R_CHUNK` (the
    /// exactness bound; taps are summed in pairs).
    pub r_chunk: usize,
    /// Use the portable micro-kernel even where AVX2 is available.
    pub portable: bool,
}

impl Blocking {
    #[doc(hidden)]
    pub const DEFAULT: Blocking = Blocking {
        col_budget: COL_BUDGET,
        r_chunk: R_CHUNK,
        portable: false,
    };
}

/// [`conv2d`] with explicit block sizes (for tests).
#[doc(hidden)]
pub fn conv2d_blocked(
    input: ArrayView4<i8>,
    weight: ArrayView4<i8>,
    bias: Option<ArrayView1<i32>>,
    p: &Conv2d,
    blocking: Blocking,
) -> Result<Array4<i32>, OracleError> {
    let g = Geometry::new(&input, &weight, bias.as_ref(), p)?;
    let x: Vec<i8> = input.iter().copied().collect();
    let b: Vec<i64> = match &bias {
        Some(b) => b.iter().map(|&v| v as i64).collect(),
        None => vec![0; g.k],
    };
    let packed = PackedWeights::new(&g, &weight);
    let pixels = g.oh * g.ow;
    let threads = rayon::current_num_threads().max(1);
    let by_budget = blocking.col_budget / packed.r_len.max(1);
    let by_balance = pixels.div_ceil(threads * TASKS_PER_THREAD);
    let block = by_budget.min(by_balance).max(1).div_ceil(NR) * NR;
    let tasks: Vec<Task> = (0..g.n)
        .flat_map(|n| (0..g.groups).map(move |grp| (n, grp)))
        .flat_map(|(n, grp)| {
            (0..pixels).step_by(block).map(move |p0| Task {
                n,
                grp,
                p0,
                pb: block.min(pixels - p0),
            })
        })
        .collect();
    let kernel = Kernel::select(blocking.portable);
    let chunk_pairs = blocking.r_chunk.clamp(2, R_CHUNK) / 2;
    let ctx = TaskCtx {
        g: &g,
        x: &x,
        b: &b,
        relu: p.relu,
        w: &packed,
        kernel,
        chunk_pairs,
    };
    let new_scratch = || Scratch::new(packed.pairs, block, g.kg);
    let macs = (g.n * g.k * pixels) as u64 * packed.r_len as u64;
    let results: Vec<TaskResult> = if macs < PARALLEL_MIN_MACS {
        // Small: on this thread. Handing tiny work to the pool costs more than it saves, and
        // a caller on a thread the pool does not own would block on it.
        let mut scratch = new_scratch();
        tasks.iter().map(|t| ctx.run(t, &mut scratch)).collect()
    } else {
        tasks
            .par_iter()
            .map_init(new_scratch, |scratch, task| ctx.run(task, scratch))
            .collect()
    };

    let mut out = vec![0i32; g.n * g.k * pixels];
    let mut first_overflow: Option<(usize, i64)> = None;
    for (task, result) in tasks.iter().zip(results) {
        for kk in 0..g.kg {
            let k = task.grp * g.kg + kk;
            let row = (task.n * g.k + k) * pixels + task.p0;
            out[row..row + task.pb]
                .copy_from_slice(&result.values[kk * task.pb..(kk + 1) * task.pb]);
        }
        if let Some((kk, q, value)) = result.overflow {
            let flat = (task.n * g.k + task.grp * g.kg + kk) * pixels + task.p0 + q;
            match first_overflow {
                Some((f, _)) if f <= flat => {}
                _ => first_overflow = Some((flat, value)),
            }
        }
    }
    if let Some((flat, value)) = first_overflow {
        let ow = flat % g.ow;
        let oh = (flat / g.ow) % g.oh;
        let k = (flat / pixels) % g.k;
        let n = flat / (pixels * g.k);
        return Err(OracleError::Overflow {
            index: vec![n, k, oh, ow],
            value,
        });
    }
    Array4::from_shape_vec((g.n, g.k, g.oh, g.ow), out)
        .map_err(|e| OracleError::Internal(format!("conv2d output buffer: {e}")))
}

/// The same operator as [`conv2d`], computed as its definition: for every output element, a
/// sum over channels and kernel positions in i64, skipping positions in the padding. Slow;
/// it is the independent check of the fast path.
pub fn conv2d_direct(
    input: ArrayView4<i8>,
    weight: ArrayView4<i8>,
    bias: Option<ArrayView1<i32>>,
    p: &Conv2d,
) -> Result<Array4<i32>, OracleError> {
    let g = Geometry::new(&input, &weight, bias.as_ref(), p)?;
    let mut out = Array4::<i32>::zeros((g.n, g.k, g.oh, g.ow));
    for n in 0..g.n {
        for k in 0..g.k {
            let grp = k / g.kg;
            for oh in 0..g.oh {
                for ow in 0..g.ow {
                    let mut sum: i64 = 0;
                    for c in 0..g.cg {
                        for i in 0..g.kh {
                            // Row in the unpadded input; out of range means padding (zero).
                            let ih = (oh * g.sh + i * g.dh) as isize - g.pt as isize;
                            if ih < 0 || ih >= g.h as isize {
                                continue;
                            }
                            for j in 0..g.kw {
                                let iw = (ow * g.sw + j * g.dw) as isize - g.pl as isize;
                                if iw < 0 || iw >= g.w as isize {
                                    continue;
                                }
                                let xv =
                                    input[[n, grp * g.cg + c, ih as usize, iw as usize]] as i64;
                                let wv = weight[[k, c, i, j]] as i64;
                                sum += xv * wv;
                            }
                        }
                    }
                    if let Some(b) = &bias {
                        sum += b[k] as i64;
                    }
                    let v = i32::try_from(sum).map_err(|_| OracleError::Overflow {
                        index: vec![n, k, oh, ow],
                        value: sum,
                    })?;
                    out[[n, k, oh, ow]] = if p.relu { v.max(0) } else { v };
                }
            }
        }
    }
    Ok(out)
}

/// Every size of one conv2d, checked.
struct Geometry {
    n: usize,
    h: usize,
    w: usize,
    k: usize,
    groups: usize,
    /// Input channels per group.
    cg: usize,
    /// Output channels per group.
    kg: usize,
    kh: usize,
    kw: usize,
    sh: usize,
    sw: usize,
    dh: usize,
    dw: usize,
    pt: usize,
    pl: usize,
    oh: usize,
    ow: usize,
}

impl Geometry {
    fn new(
        input: &ArrayView4<i8>,
        weight: &ArrayView4<i8>,
        bias: Option<&ArrayView1<i32>>,
        p: &Conv2d,
    ) -> Result<Geometry, CaseError> {
        let shape = input.shape();
        validate_operator(&Op::Conv2d(*p), shape)?;
        check_shape(WEIGHT_NPY, &p.weight_shape(), weight.shape())?;
        check_bias(p.bias.then_some(p.out_channels), bias.map(|b| b.shape()))?;
        let (h, w) = (shape[2], shape[3]);
        // `validate_operator` has checked that the output is at least 1×1.
        let (oh, ow) = p.output_hw(h, w).ok_or(CaseError::EmptyOutput {
            axis: "height",
            padded: 0,
            window: 0,
        })?;
        Ok(Geometry {
            n: shape[0],
            h,
            w,
            k: p.out_channels,
            groups: p.groups,
            cg: p.in_channels / p.groups,
            kg: p.out_channels / p.groups,
            kh: p.kernel[0],
            kw: p.kernel[1],
            sh: p.stride[0],
            sw: p.stride[1],
            dh: p.dilation[0],
            dw: p.dilation[1],
            pt: p.padding[0],
            pl: p.padding[1],
            oh,
            ow,
        })
    }

    /// Fills the packed im2col block `col` for output pixels `p0..p0 + pb` of image `n`, group
    /// `grp`: element `((panel·pairs + t)·NR + q)·2 + e` is the input value that kernel tap
    /// `r = 2t + e` (taps ordered `(c, i, j)`) sees at pixel `p0 + panel·NR + q` (0 in the
    /// padding, for a tap `r ≥ R` and for a pixel past the block). Each tap is first gathered
    /// as a plain row over the block's pixels (contiguous copies along output rows), then two
    /// rows are interleaved into the pair layout.
    fn im2col(&self, x: &[i8], task: &Task, pairs: usize, col: &mut [i16], rows: &mut [i16]) {
        let (row_a, row_b) = rows[..2 * task.pb].split_at_mut(task.pb);
        for t in 0..pairs {
            self.tap_row(x, task, 2 * t, row_a);
            self.tap_row(x, task, 2 * t + 1, row_b);
            for panel in 0..task.pb.div_ceil(NR) {
                let dst = &mut col[(panel * pairs + t) * NR * 2..][..NR * 2];
                let cols = NR.min(task.pb - panel * NR);
                let (a, b) = (&row_a[panel * NR..][..cols], &row_b[panel * NR..][..cols]);
                for ((d, &va), &vb) in dst.chunks_exact_mut(2).zip(a).zip(b) {
                    d[0] = va;
                    d[1] = vb;
                }
                dst[cols * 2..].fill(0);
            }
        }
    }

    /// `row[q]` = the value tap `r` sees at pixel `p0 + q` (0 in the padding or for `r ≥ R`).
    fn tap_row(&self, x: &[i8], task: &Task, r: usize, row: &mut [i16]) {
        if r >= self.cg * self.kh * self.kw {
            row.fill(0);
            return;
        }
        let (c, i, j) = (
            r / (self.kh * self.kw),
            (r / self.kw) % self.kh,
            r % self.kw,
        );
        let plane = self.h * self.w;
        let channel = (task.n * self.groups * self.cg + task.grp * self.cg + c) * plane;
        let image = &x[channel..channel + plane];
        let mut q = 0;
        while q < task.pb {
            // The pixels of one output row: `ow0..ow0 + len`.
            let (oh, ow0) = ((task.p0 + q) / self.ow, (task.p0 + q) % self.ow);
            let len = (self.ow - ow0).min(task.pb - q);
            let dst = &mut row[q..q + len];
            let ih = (oh * self.sh + i * self.dh) as isize - self.pt as isize;
            if ih < 0 || ih as usize >= self.h {
                dst.fill(0);
            } else {
                let src = &image[ih as usize * self.w..(ih as usize + 1) * self.w];
                let off = (j * self.dw) as isize - self.pl as isize;
                // Pixels `lo..hi` of this row have their column `(ow0 + k)·sw + off` in the
                // image.
                let (sw, ow0) = (self.sw as isize, ow0 as isize);
                let at_least =
                    |bound: isize| (ceil_div(bound - off, sw) - ow0).clamp(0, len as isize);
                let (lo, hi) = (at_least(0) as usize, at_least(self.w as isize) as usize);
                let hi = hi.max(lo);
                dst[..lo].fill(0);
                dst[hi..].fill(0);
                if lo == hi {
                    q += len;
                    continue;
                }
                let start = ((ow0 + lo as isize) * sw + off) as usize;
                if self.sw == 1 {
                    for (d, &v) in dst[lo..hi].iter_mut().zip(&src[start..]) {
                        *d = v as i16;
                    }
                } else {
                    for (d, &v) in dst[lo..hi]
                        .iter_mut()
                        .zip(src[start..].iter().step_by(self.sw))
                    {
                        *d = v as i16;
                    }
                }
            }
            q += len;
        }
    }
}

/// `ceil(a / b)` for `b > 0`.
fn ceil_div(a: isize, b: isize) -> isize {
    a.div_euclid(b) + (a.rem_euclid(b) != 0) as isize
}

/// One rayon task: the output pixels `p0..p0 + pb` of image `n`, group `grp`, all of the
/// group's output channels.
struct Task {
    n: usize,
    grp: usize,
    p0: usize,
    pb: usize,
}

/// A task's output, `[kg][pb]` after bias and ReLU, and its first overflow (row-major within
/// the task: `(kk, q, value)`).
struct TaskResult {
    values: Vec<i32>,
    overflow: Option<(usize, usize, i64)>,
}

/// Per-thread buffers, reused across tasks.
struct Scratch {
    col: Vec<i16>,
    /// Two plain im2col rows of the block (see [`Geometry::im2col`]).
    rows: Vec<i16>,
    wide: Vec<i64>,
}

impl Scratch {
    fn new(pairs: usize, block: usize, kg: usize) -> Scratch {
        Scratch {
            col: vec![0; block.div_ceil(NR) * pairs * NR * 2],
            rows: vec![0; 2 * block],
            wide: vec![0; kg * block],
        }
    }
}

/// The weights of every group, packed for the micro-kernel: element
/// `(((grp·kblocks + kb)·pairs + t)·MR + m)·2 + e` is `W[grp·kg + kb·MR + m][2t + e]` (0 past
/// the group's channels or taps).
struct PackedWeights {
    data: Vec<i16>,
    /// Taps per output channel, `R`.
    r_len: usize,
    /// `ceil(R / 2)`.
    pairs: usize,
    /// `ceil(kg / MR)`.
    kblocks: usize,
}

impl PackedWeights {
    fn new(g: &Geometry, weight: &ArrayView4<i8>) -> PackedWeights {
        let r_len = g.cg * g.kh * g.kw;
        let pairs = r_len.div_ceil(2);
        let kblocks = g.kg.div_ceil(MR);
        let mut data = vec![0i16; g.groups * kblocks * pairs * MR * 2];
        for ((k, c, i, j), &v) in weight.indexed_iter() {
            let (grp, kk) = (k / g.kg, k % g.kg);
            let r = (c * g.kh + i) * g.kw + j;
            let at = (((grp * kblocks + kk / MR) * pairs + r / 2) * MR + kk % MR) * 2 + r % 2;
            data[at] = v as i16;
        }
        PackedWeights {
            data,
            r_len,
            pairs,
            kblocks,
        }
    }

    /// The packed rows of output channels `kb·MR ..` of group `grp`.
    fn block(&self, grp: usize, kb: usize) -> &[i16] {
        let len = self.pairs * MR * 2;
        let at = (grp * self.kblocks + kb) * len;
        &self.data[at..at + len]
    }
}

/// What one task needs besides its own buffers.
struct TaskCtx<'a> {
    g: &'a Geometry,
    x: &'a [i8],
    b: &'a [i64],
    relu: bool,
    w: &'a PackedWeights,
    kernel: Kernel,
    chunk_pairs: usize,
}

impl TaskCtx<'_> {
    fn run(&self, task: &Task, s: &mut Scratch) -> TaskResult {
        let (g, pairs) = (self.g, self.w.pairs);
        g.im2col(self.x, task, pairs, &mut s.col, &mut s.rows);
        let wide = &mut s.wide[..g.kg * task.pb];
        wide.fill(0);
        let mut tile = [0i32; MR * NR];
        for panel in 0..task.pb.div_ceil(NR) {
            let cols = NR.min(task.pb - panel * NR);
            let x_panel = &s.col[panel * pairs * NR * 2..(panel + 1) * pairs * NR * 2];
            for kb in 0..self.w.kblocks {
                let rows = MR.min(g.kg - kb * MR);
                let w_block = self.w.block(task.grp, kb);
                for t0 in (0..pairs).step_by(self.chunk_pairs) {
                    let t1 = (t0 + self.chunk_pairs).min(pairs);
                    self.kernel.run(
                        &w_block[t0 * MR * 2..t1 * MR * 2],
                        &x_panel[t0 * NR * 2..t1 * NR * 2],
                        &mut tile,
                    );
                    for m in 0..rows {
                        let dst = &mut wide[(kb * MR + m) * task.pb + panel * NR..][..cols];
                        for (d, &v) in dst.iter_mut().zip(&tile[m * NR..m * NR + cols]) {
                            *d += v as i64;
                        }
                    }
                }
            }
        }
        let mut values = vec![0i32; g.kg * task.pb];
        let mut overflow = None;
        for kk in 0..g.kg {
            let bias = self.b[task.grp * g.kg + kk];
            for q in 0..task.pb {
                let value = wide[kk * task.pb + q] + bias;
                match i32::try_from(value) {
                    Ok(v) => values[kk * task.pb + q] = if self.relu { v.max(0) } else { v },
                    Err(_) => {
                        if overflow.is_none() {
                            overflow = Some((kk, q, value));
                        }
                    }
                }
            }
        }
        TaskResult { values, overflow }
    }
}

/// The micro-kernel: `tile[m·NR + q] = Σ_t Σ_e w[(t·MR + m)·2 + e] · x[(t·NR + q)·2 + e]`
/// over the pairs `t` given (at most `R_CHUNK / 2` of them: exact in i32, module docs).
#[derive(Clone, Copy, Debug)]
enum Kernel {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Kernel {
    fn select(portable: bool) -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if !portable && std::is_x86_feature_detected!("avx2") {
                return Kernel::Avx2;
            }
        }
        let _ = portable;
        Kernel::Portable
    }

    fn run(self, w: &[i16], x: &[i16], tile: &mut [i32; MR * NR]) {
        let pairs = w.len() / (MR * 2);
        assert!(w.len() == pairs * MR * 2 && x.len() == pairs * NR * 2);
        match self {
            Kernel::Portable => kernel_portable(w, x, tile),
            // SAFETY: `Avx2` is selected only when the CPU supports AVX2, and the lengths of
            // `w` and `x` were checked above against the pair count the kernel reads.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { kernel_avx2(w, x, tile) },
        }
    }
}

fn kernel_portable(w: &[i16], x: &[i16], tile: &mut [i32; MR * NR]) {
    tile.fill(0);
    for (wt, xt) in w.chunks_exact(MR * 2).zip(x.chunks_exact(NR * 2)) {
        for m in 0..MR {
            let (w0, w1) = (wt[2 * m] as i32, wt[2 * m + 1] as i32);
            let acc = &mut tile[m * NR..(m + 1) * NR];
            for (a, xq) in acc.iter_mut().zip(xt.chunks_exact(2)) {
                // Exact (module docs); wrapping keeps debug builds free of overflow checks.
                *a = a.wrapping_add(w0 * xq[0] as i32 + w1 * xq[1] as i32);
            }
        }
    }
}

/// [`kernel_portable`] with `vpmaddwd`: per pair `t`, two loads of 16 interleaved pixels and,
/// per output channel, one broadcast of its weight pair and two multiply-add-pairs.
///
/// # Safety
///
/// The CPU must support AVX2; `w` must hold `pairs·MR·2` and `x` `pairs·NR·2` elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn kernel_avx2(w: &[i16], x: &[i16], tile: &mut [i32; MR * NR]) {
    use std::arch::x86_64::*;
    let pairs = w.len() / (MR * 2);
    let mut acc = [_mm256_setzero_si256(); MR * 2];
    let (wp, xp) = (w.as_ptr(), x.as_ptr());
    for t in 0..pairs {
        let x0 = _mm256_loadu_si256(xp.add(t * NR * 2) as *const __m256i);
        let x1 = _mm256_loadu_si256(xp.add(t * NR * 2 + 16) as *const __m256i);
        for m in 0..MR {
            let pair = (wp.add((t * MR + m) * 2) as *const i32).read_unaligned();
            let wv = _mm256_set1_epi32(pair);
            acc[2 * m] = _mm256_add_epi32(acc[2 * m], _mm256_madd_epi16(x0, wv));
            acc[2 * m + 1] = _mm256_add_epi32(acc[2 * m + 1], _mm256_madd_epi16(x1, wv));
        }
    }
    for (i, a) in acc.iter().enumerate() {
        _mm256_storeu_si256(tile.as_mut_ptr().add(i * 8) as *mut __m256i, *a);
    }
}
