//! Stage 4 of the channel-wise lowering, bufferization: output-pixel chunks and every
//! core's local-memory map, checked against `local_memory_bytes`.
//!
//! Global memory is laid out by [`crate::gmem`], the same for both lowerings.
//!
//! Output pixels are processed in *chunks*, the same for every core: as many whole images as
//! fit, else as many output rows of one image, else as many pixels of one output row. For a
//! chunk a core holds the *input window* (the bounding box of the input pixels the chunk
//! reads, all channels, NHWC; with padding skipping clipped to the real input, without it
//! including the zero padding), one int32 accumulator per class it computes
//! (`[pixels][width]`), one scratch buffer for further crossbars' products, one receive
//! buffer when it owns a class others contribute to, and the bias of the classes it owns.
//!
//! When not even one pixel's window fits, the last resort is *gathering*: no window, each
//! crossbar's input vector is loaded from GMem (`ld` of one channel tile) into a slot of at
//! most `array_rows` bytes right before its `mvmul`. The minimal chunk is one gathered pixel;
//! only when that does not fit is the case unsupported.

use std::fmt::Write as _;

use pimdiff_isa::bundle::IoManifest;
use pimdiff_oracle::Case;

use crate::gmem;
use crate::mapping::Mapping;
use crate::tiling::{Problem, Spatial};
use crate::{CompileError, Unsupported};

/// The granularity of a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkKind {
    /// `m` whole images.
    Images(usize),
    /// `t` output rows of one image.
    Rows(usize),
    /// `u` pixels of one output row.
    Pixels(usize),
    /// `u` pixels of one output row, input vectors gathered one by one (no window).
    Gather(usize),
}

impl ChunkKind {
    pub fn gathers(self) -> bool {
        matches!(self, ChunkKind::Gather(_))
    }
}

/// A box of output pixels: images `n0..n1`, rows `oh0..oh1`, columns `ow0..ow1`; its
/// pixels are consecutive in raster order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub n0: usize,
    pub n1: usize,
    pub oh0: usize,
    pub oh1: usize,
    pub ow0: usize,
    pub ow1: usize,
}

impl Chunk {
    pub fn pixels(&self) -> usize {
        (self.n1 - self.n0) * (self.oh1 - self.oh0) * (self.ow1 - self.ow0)
    }

    /// Raster index of the first pixel over the whole output.
    pub fn first_pixel(&self, p: &Problem) -> usize {
        (self.n0 * p.oh + self.oh0) * p.ow + self.ow0
    }
}

/// The input window of a chunk in padded coordinates: images `n0..n1`, rows
/// `r0..r0+rows`, columns `c0..c0+cols`, all channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub r0: i64,
    pub rows: usize,
    pub c0: i64,
    pub cols: usize,
}

/// Row (or column) span read by `count` consecutive outputs: `(count-1)·stride +
/// (k-1)·dilation + 1`.
fn span(count: usize, stride: usize, k: usize, dilation: usize) -> usize {
    (count - 1) * stride + (k - 1) * dilation + 1
}

/// The window of `chunk`; `clip` limits it to the real input (padding skipping).
pub fn window(p: &Problem, chunk: &Chunk, clip: bool) -> Window {
    let mut r0 = p.in_row(chunk.oh0, 0);
    let mut r1 = r0 + span(chunk.oh1 - chunk.oh0, p.sh, p.kh, p.dh) as i64;
    let mut c0 = p.in_col(chunk.ow0, 0);
    let mut c1 = c0 + span(chunk.ow1 - chunk.ow0, p.sw, p.kw, p.dw) as i64;
    if clip {
        r0 = r0.max(0);
        r1 = r1.min(p.h as i64);
        c0 = c0.max(0);
        c1 = c1.min(p.w as i64);
    }
    Window {
        r0,
        rows: (r1 - r0).max(0) as usize,
        c0,
        cols: (c1 - c0).max(0) as usize,
    }
}

/// An upper bound of the window bytes of every chunk of `kind`.
fn window_bound(p: &Problem, kind: ChunkKind, clip: bool) -> u64 {
    let (m, t, u) = match kind {
        ChunkKind::Images(m) => (m, p.oh, p.ow),
        ChunkKind::Rows(t) => (1, t, p.ow),
        ChunkKind::Pixels(u) | ChunkKind::Gather(u) => (1, 1, u),
    };
    let mut rows = span(t, p.sh, p.kh, p.dh);
    let mut cols = span(u, p.sw, p.kw, p.dw);
    if clip {
        rows = rows.min(p.h);
        cols = cols.min(p.w);
    }
    m as u64 * rows as u64 * cols as u64 * p.c as u64
}

fn kind_pixels(p: &Problem, kind: ChunkKind) -> usize {
    match kind {
        ChunkKind::Images(m) => m * p.oh * p.ow,
        ChunkKind::Rows(t) => t * p.ow,
        ChunkKind::Pixels(u) | ChunkKind::Gather(u) => u,
    }
}

/// What one core holds, independent of the chunk size.
#[derive(Clone, Debug, Default)]
pub struct CoreNeeds {
    /// The core runs at least one crossbar, so it loads input windows.
    pub window: bool,
    /// Classes the core computes or owns, ascending, with their widths.
    pub classes: Vec<(usize, usize)>,
    /// Widest class that has two or more crossbars here (needs the scratch buffer), or 0.
    pub scratch_width: usize,
    /// Widest owned class with contributors (needs the receive buffer), or 0.
    pub recv_width: usize,
    /// Owned classes that add a bias, with their widths.
    pub bias: Vec<(usize, usize)>,
    /// Rows of the tallest crossbar here: the input slot when gathering.
    pub gather_slot: usize,
}

impl CoreNeeds {
    /// Input bytes for a chunk of `kind`, whose window is at most `window` bytes.
    fn input_bytes(&self, kind: ChunkKind, window: u64) -> u64 {
        match (self.window, kind.gathers()) {
            (false, _) => 0,
            (true, true) => self.gather_slot as u64,
            (true, false) => window,
        }
    }

    fn bytes(&self, window: u64, pixels: usize) -> u64 {
        let px = pixels as u64;
        let per_px: u64 = self
            .classes
            .iter()
            .map(|&(_, w)| align4(w as u64 * 4))
            .sum::<u64>()
            + self.scratch_width as u64 * 4
            + self.recv_width as u64 * 4;
        let bias: u64 = self.bias.iter().map(|&(_, w)| w as u64 * 4).sum();
        let win = if self.window { align4(window) } else { 0 };
        bias + win + px * per_px
    }
}

fn align4(x: u64) -> u64 {
    x.div_ceil(4) * 4
}

/// One core's local-memory map (byte addresses).
#[derive(Clone, Debug, Default)]
pub struct CoreBuffers {
    pub window: u32,
    pub window_bytes: u32,
    /// `(class, address)` of each accumulator, `[max pixels][width]` int32.
    pub acc: Vec<(usize, u32)>,
    pub scratch: u32,
    pub recv: u32,
    /// `(class, address)` of each owned class's bias vector.
    pub bias: Vec<(usize, u32)>,
    /// Bytes used in total.
    pub used: u32,
}

impl CoreBuffers {
    pub fn acc_of(&self, class: usize) -> u32 {
        self.acc
            .iter()
            .find(|&&(c, _)| c == class)
            .map_or(0, |&(_, a)| a)
    }
    pub fn bias_of(&self, class: usize) -> u32 {
        self.bias
            .iter()
            .find(|&&(c, _)| c == class)
            .map_or(0, |&(_, a)| a)
    }
}

/// The whole bufferization.
#[derive(Clone, Debug)]
pub struct Buffers {
    pub kind: ChunkKind,
    /// Pixels of the largest chunk.
    pub max_pixels: usize,
    pub chunks: Vec<Chunk>,
    pub needs: Vec<CoreNeeds>,
    pub cores: Vec<CoreBuffers>,
    pub manifest: IoManifest,
    /// GMem address of the bias segment (meaningful when the op has a bias).
    pub bias_addr: u32,
}

/// Bufferize: choose the chunking, lay out every core's local memory and the global memory.
pub fn bufferize(
    case: &Case,
    spatial: &Spatial,
    mapping: &Mapping,
    clip: bool,
) -> Result<Buffers, CompileError> {
    let p = &spatial.problem;
    gmem::check_instruction_bound(spatial, mapping)?;
    let needs = core_needs(spatial, mapping);
    let lmem = case.spec.arch.local_memory_bytes as u64;
    let kind = choose_chunking(p, &needs, clip, lmem)?;
    let max_pixels = kind_pixels(p, kind);
    let win_bytes = window_bound(p, kind, clip);
    let cores = needs
        .iter()
        .map(|n| lay_out_core(n, kind, win_bytes, max_pixels, lmem))
        .collect();
    let gmem::Layout {
        manifest,
        bias_addr,
    } = gmem::layout(case, p)?;
    Ok(Buffers {
        kind,
        max_pixels,
        chunks: make_chunks(p, kind),
        needs,
        cores,
        manifest,
        bias_addr,
    })
}

/// What every core holds, from the mapping: classes computed or owned, scratch and receive
/// widths, biases, the tallest crossbar.
pub(crate) fn core_needs(spatial: &Spatial, mapping: &Mapping) -> Vec<CoreNeeds> {
    let mut needs: Vec<CoreNeeds> = vec![CoreNeeds::default(); mapping.cores];
    for (ci, red) in mapping.reductions.iter().enumerate() {
        let width = spatial.classes[ci].width;
        for part in &red.parts {
            let n = &mut needs[part.core];
            n.window = true;
            for &pi in &part.placements {
                n.gather_slot = n
                    .gather_slot
                    .max(spatial.xbars[mapping.placements[pi].xbar].rows);
            }
            n.classes.push((ci, width));
            if part.placements.len() >= 2 {
                n.scratch_width = n.scratch_width.max(width);
            }
        }
        let o = &mut needs[red.owner];
        if red.parts.is_empty() {
            o.classes.push((ci, width));
        }
        if red.parts.len() > 1 {
            o.recv_width = o.recv_width.max(width);
        }
        if spatial.problem.bias {
            o.bias.push((ci, width));
        }
    }
    needs
}

/// The bytes the busiest core needs for a chunk of `kind`, and that core.
fn need(p: &Problem, needs: &[CoreNeeds], clip: bool, kind: ChunkKind) -> (u64, usize) {
    let win = window_bound(p, kind, clip);
    let px = kind_pixels(p, kind);
    needs
        .iter()
        .enumerate()
        .map(|(core, n)| (n.bytes(n.input_bytes(kind, win), px), core))
        .max()
        .unwrap_or((0, 0))
}

/// The local memory at which each chunking starts to be chosen, smallest chunk of each kind
/// and largest: below `Images(n)`'s it is fewer images per chunk, below `Images(1)`'s rows,
/// and so on down to one gathered pixel, below which the case is unsupported. Testing reads
/// these to put local memory just above (or below) a mode's edge, so that every chunking and
/// several chunks per image are exercised.
pub(crate) fn thresholds(p: &Problem, needs: &[CoreNeeds], clip: bool) -> Vec<u64> {
    [
        ChunkKind::Images(p.n),
        ChunkKind::Images(1),
        ChunkKind::Rows(p.oh),
        ChunkKind::Rows(1),
        ChunkKind::Pixels(p.ow),
        ChunkKind::Pixels(1),
        ChunkKind::Gather(p.ow),
        ChunkKind::Gather(1),
    ]
    .into_iter()
    .map(|kind| need(p, needs, clip, kind).0)
    .collect()
}

/// The coarsest chunking whose buffers fit every core's local memory: whole images, else
/// output rows, else pixels of a row, else gathered pixels; `Unsupported` when not even
/// one gathered pixel fits.
fn choose_chunking(
    p: &Problem,
    needs: &[CoreNeeds],
    clip: bool,
    lmem: u64,
) -> Result<ChunkKind, CompileError> {
    let need_of = |kind: ChunkKind| need(p, needs, clip, kind);
    let fits = |kind: ChunkKind| need_of(kind).0 <= lmem;
    // Largest size in 1..=max for which `make(size)` fits, if any.
    let largest = |max: usize, make: &dyn Fn(usize) -> ChunkKind| -> Option<usize> {
        if !fits(make(1)) {
            return None;
        }
        let (mut lo, mut hi) = (1usize, max);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(make(mid)) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Some(lo)
    };
    if let Some(m) = largest(p.n, &ChunkKind::Images) {
        Ok(ChunkKind::Images(m))
    } else if let Some(t) = largest(p.oh, &ChunkKind::Rows) {
        Ok(ChunkKind::Rows(t))
    } else if let Some(u) = largest(p.ow, &ChunkKind::Pixels) {
        Ok(ChunkKind::Pixels(u))
    } else if let Some(u) = largest(p.ow, &ChunkKind::Gather) {
        Ok(ChunkKind::Gather(u))
    } else {
        let (needed, core) = need_of(ChunkKind::Gather(1));
        Err(CompileError::Unsupported(Unsupported::LocalMemory {
            core,
            needed,
            available: lmem,
        }))
    }
}

/// One core's local-memory map: biases, window (or gather slot), accumulators, scratch,
/// receive buffer, in that order.
fn lay_out_core(
    n: &CoreNeeds,
    kind: ChunkKind,
    win_bytes: u64,
    max_pixels: usize,
    lmem: u64,
) -> CoreBuffers {
    let mut b = CoreBuffers::default();
    let mut at = 0u64;
    for &(c, w) in &n.bias {
        b.bias.push((c, at as u32));
        at += w as u64 * 4;
    }
    if n.window {
        let bytes = n.input_bytes(kind, win_bytes);
        b.window = at as u32;
        b.window_bytes = bytes as u32;
        at = align4(at + bytes);
    }
    for &(c, w) in &n.classes {
        b.acc.push((c, at as u32));
        at += align4(w as u64 * 4) * max_pixels as u64;
    }
    b.scratch = at as u32;
    at += n.scratch_width as u64 * 4 * max_pixels as u64;
    b.recv = at as u32;
    at += n.recv_width as u64 * 4 * max_pixels as u64;
    debug_assert!(at <= lmem);
    b.used = at as u32;
    b
}

fn make_chunks(p: &Problem, kind: ChunkKind) -> Vec<Chunk> {
    let mut out = Vec::new();
    match kind {
        ChunkKind::Images(m) => {
            for n0 in (0..p.n).step_by(m) {
                out.push(Chunk {
                    n0,
                    n1: (n0 + m).min(p.n),
                    oh0: 0,
                    oh1: p.oh,
                    ow0: 0,
                    ow1: p.ow,
                });
            }
        }
        ChunkKind::Rows(t) => {
            for n0 in 0..p.n {
                for oh0 in (0..p.oh).step_by(t) {
                    out.push(Chunk {
                        n0,
                        n1: n0 + 1,
                        oh0,
                        oh1: (oh0 + t).min(p.oh),
                        ow0: 0,
                        ow1: p.ow,
                    });
                }
            }
        }
        ChunkKind::Pixels(u) | ChunkKind::Gather(u) => {
            for n0 in 0..p.n {
                for oh0 in 0..p.oh {
                    for ow0 in (0..p.ow).step_by(u) {
                        out.push(Chunk {
                            n0,
                            n1: n0 + 1,
                            oh0,
                            oh1: oh0 + 1,
                            ow0,
                            ow1: (ow0 + u).min(p.ow),
                        });
                    }
                }
            }
        }
    }
    out
}

/// Text of the bufferization (part of `--emit pim`).
pub fn describe(b: &Buffers, out: &mut String) {
    gmem::describe(&b.manifest, out);
    let _ = writeln!(
        out,
        "chunks: {:?}, {} chunk(s), at most {} pixel(s) each",
        b.kind,
        b.chunks.len(),
        b.max_pixels
    );
    for (core, cb) in b.cores.iter().enumerate() {
        if cb.used == 0 {
            continue;
        }
        let _ = write!(out, "core {core} lmem {} bytes:", cb.used);
        for &(c, a) in &cb.bias {
            let _ = write!(out, " bias[class {c}]@{a}");
        }
        if b.needs[core].window {
            let name = if b.kind.gathers() {
                "gather slot"
            } else {
                "window"
            };
            let _ = write!(out, " {name}@{}+{}", cb.window, cb.window_bytes);
        }
        for &(c, a) in &cb.acc {
            let _ = write!(out, " acc[class {c}]@{a}");
        }
        if b.needs[core].scratch_width > 0 {
            let _ = write!(out, " scratch@{}", cb.scratch);
        }
        if b.needs[core].recv_width > 0 {
            let _ = write!(out, " recv@{}", cb.recv);
        }
        out.push('\n');
    }
}
