//! Stage 5, instruction generation: `applyFilters` unwrapped into straight-line code, chunk
//! by chunk, on every core at once.
//!
//! Per chunk, every core
//! 1. loads its input window (`lldi` zeroes first when the window includes padding, i.e.
//!    padding skipping is off; then one `ld` per contiguous run of real input); when
//!    gathering, instead, each crossbar's input tile is loaded right before its `mvmul`,
//! 2. computes, class by class, its partial sums: the class's first crossbar writes the
//!    accumulator with `mvmul` (`lldi` zeroes where it is skipped), every further crossbar
//!    writes the scratch buffer and is added with one `vvadd` per run of pixels it computed,
//! 3. takes part in the chunk's transfers: for each class in order, each contributor in
//!    ascending core order `send`s its accumulator to the owner, which `recv`s and `vvadd`s it,
//! 4. finalizes the classes it owns: bias (`vvadd` per pixel), ReLU (`vrelu`, or `mvmul`'s
//!    flag when a single crossbar makes the final value and there is no bias), then `st`.
//!
//! Deadlock freedom by construction: every core's sends and receives are a subsequence of
//! one global order (chunk, class, contributor), and nothing else blocks; the earliest
//! unfinished transfer always has both of its cores waiting at it.
//!
//! With the GMem reduction ([`crate::Reduction::Gmem`]) step 3 goes through global memory
//! instead, as PIMCOMP-NN's programs do. Per chunk, first as a contributor: for each owner it
//! contributes to, a core `wait`s for that owner's acknowledgement of the previous chunk
//! (event register `16 + owner`; not before its first contribution), `st`s its partial sums
//! to its own GMem slots (one per chunk, class and contributor, after the manifest's tensors:
//! no slot is ever written twice) and `sync`s the owner's event register `contributor`
//! once. Then as an owner: for each contributor, `wait` for its `sync` (value 1), `ld` each
//! of its slots into the receive buffer and `vvadd`, then `sync` the acknowledgement back.
//! Every `ld` of a slot is ordered after its `st` by the `sync`/`wait` pair, and a
//! contributor syncs an owner again only after that owner consumed the previous sync, so the
//! count a `wait` expects is exact. No cycle: the contributor phase of chunk t waits only for
//! owner phases of chunk t−1, the owner phase of chunk t only for contributor phases of t.
//!
//! Widths: `mvmul` runs at `setbw 8,32` (int8 inputs, int32 sums), the int32 vector ops at
//! `setbw 32,32`; `setbw` is emitted only when the width changes; addresses go through the
//! register cache of [`crate::emitter`].

use crate::buffers::{window, Buffers, Chunk, Window};
use crate::emitter::Emitter;
use crate::mapping::{Mapping, Part};
use crate::tiling::{Crossbar, Problem, Spatial};

/// Generate every core's instruction stream (with its provenance when `record`).
pub(crate) fn generate(
    spatial: &Spatial,
    mapping: &Mapping,
    buffers: &Buffers,
    clip: bool,
    gmem: bool,
    record: bool,
) -> Vec<Emitter> {
    let mut g = Codegen::new(spatial, mapping, buffers, clip);
    g.em = (0..mapping.cores).map(|_| Emitter::new(record)).collect();
    g.load_biases();
    // A layout whose slots would pass 4 GiB reduces over the NoC instead.
    let mut slots = gmem
        .then(|| GmemSlots::new(spatial, mapping, buffers))
        .flatten();
    let mut acked = vec![vec![false; mapping.cores]; mapping.cores];
    for chunk in &buffers.chunks {
        let win = window(g.p, chunk, clip);
        g.load_windows(chunk, &win);
        g.partial_sums(chunk, &win);
        match &mut slots {
            None => g.transfers(chunk),
            Some(s) => {
                g.gmem_transfers(chunk, s, &mut acked);
                s.next_chunk(chunk.pixels());
            }
        }
        g.finalize(chunk);
    }
    g.em
}

/// The most cores a GMem reduction serves: event registers `0..16` count contributions,
/// `16..32` acknowledgements.
pub const GMEM_REDUCTION_MAX_CORES: usize = 16;

/// Where contributors' partial sums go in global memory: after everything the manifest
/// names, one slot per (chunk, class, contributor), never reused.
struct GmemSlots {
    /// Start of the current chunk's slots.
    chunk_base: u32,
    /// Per class: the width-units before it in a pixel's row of slots, and per contributor
    /// (in `parts` order, the owner's part excluded) its index within the class.
    class_offset: Vec<u32>,
    /// Width units of all slots of one pixel.
    row_units: u32,
}

impl GmemSlots {
    fn new(spatial: &Spatial, mapping: &Mapping, buffers: &Buffers) -> Option<GmemSlots> {
        let m = &buffers.manifest;
        let mut end = m.output.addr as u64 + m.output.byte_len() as u64;
        for c in &m.constants {
            end = end.max(c.addr as u64 + c.data.len() as u64);
        }
        let mut class_offset = Vec::new();
        let mut units = 0u32;
        for (ci, red) in mapping.reductions.iter().enumerate() {
            class_offset.push(units);
            let contributors = red.parts.iter().filter(|p| p.core != red.owner).count() as u32;
            units += contributors * spatial.classes[ci].width as u32;
        }
        let base = end.div_ceil(64) * 64;
        let total: u64 = buffers.chunks.iter().map(|c| c.pixels() as u64).sum();
        let fits = base + units as u64 * total * 4 <= u32::MAX as u64;
        fits.then_some(GmemSlots {
            chunk_base: base as u32,
            class_offset,
            row_units: units,
        })
    }

    /// The slot of contributor number `j` of class `ci` (width `width`) in a chunk of `px`
    /// pixels.
    fn slot(&self, ci: usize, j: u32, width: u32, px: u32) -> u32 {
        self.chunk_base + (self.class_offset[ci] * px + j * width * px) * 4
    }

    fn next_chunk(&mut self, px: usize) {
        self.chunk_base += self.row_units * px as u32 * 4;
    }
}

/// The state of code generation: the plan it follows, every core's emitter, and per-pixel
/// scratch vectors reused across crossbars.
struct Codegen<'a> {
    p: &'a Problem,
    spatial: &'a Spatial,
    mapping: &'a Mapping,
    buffers: &'a Buffers,
    clip: bool,
    gather: bool,
    em: Vec<Emitter>,
    /// Per class: does a lone crossbar produce the final value (ReLU folded into `mvmul`)?
    fold_relu: Vec<bool>,
    /// Per pixel of the chunk: does the current crossbar run for it?
    valid: Vec<bool>,
    /// Per pixel of the chunk: the current crossbar's input address (LMem in the window, or
    /// GMem when gathering, `u32::MAX` for padding).
    src: Vec<u32>,
}

impl<'a> Codegen<'a> {
    fn new(spatial: &'a Spatial, mapping: &'a Mapping, buffers: &'a Buffers, clip: bool) -> Self {
        let p = &spatial.problem;
        let fold_relu = mapping
            .reductions
            .iter()
            .map(|r| p.relu && !p.bias && r.total == 1)
            .collect();
        Codegen {
            p,
            spatial,
            mapping,
            buffers,
            clip,
            gather: buffers.kind.gathers(),
            em: Vec::new(),
            fold_relu,
            valid: Vec::new(),
            src: Vec::new(),
        }
    }

    /// Bias vectors, once, into every owner's local memory.
    fn load_biases(&mut self) {
        if !self.p.bias {
            return;
        }
        for (core, cb) in self.buffers.cores.iter().enumerate() {
            self.em[core].at("codegen::load_biases");
            for &(c, at) in &cb.bias {
                let class = &self.spatial.classes[c];
                let g = self.buffers.bias_addr + class.k0 as u32 * 4;
                self.em[core].ld(at, g, class.width as u32 * 4);
            }
        }
    }

    /// Step 1: every computing core loads the chunk's input window (none when gathering).
    fn load_windows(&mut self, chunk: &Chunk, win: &Window) {
        if self.gather {
            return;
        }
        let in_addr = self.buffers.manifest.input.addr;
        for (core, e) in self.em.iter_mut().enumerate() {
            if !self.buffers.needs[core].window {
                continue;
            }
            let base = self.buffers.cores[core].window;
            e.at("codegen::load_window");
            load_window(e, self.p, chunk, win, base, in_addr, chunk.n1 - chunk.n0);
        }
    }

    /// Step 2: every core's partial sums of every class it computes.
    fn partial_sums(&mut self, chunk: &Chunk, win: &Window) {
        let row_bytes_of = |ci: usize| (self.spatial.classes[ci].width * 4) as u32;
        let mapping = self.mapping;
        for (ci, red) in mapping.reductions.iter().enumerate() {
            for part in &red.parts {
                self.class_part(ci, part, chunk, win);
            }
            if red.parts.is_empty() {
                let cb = &self.buffers.cores[red.owner];
                let bytes = chunk.pixels() as u32 * row_bytes_of(ci);
                self.em[red.owner].at("codegen::partial_sums");
                self.em[red.owner].zero(cb.acc_of(ci), bytes);
            }
        }
    }

    /// One core's share of a class: the first crossbar writes the accumulator, every
    /// further one the scratch buffer, added run by run.
    fn class_part(&mut self, ci: usize, part: &Part, chunk: &Chunk, win: &Window) {
        let width = self.spatial.classes[ci].width;
        let row_bytes = (width * 4) as u32;
        let px = chunk.pixels();
        let (spatial, mapping, buffers) = (self.spatial, self.mapping, self.buffers);
        let cb = &buffers.cores[part.core];
        let acc = cb.acc_of(ci);
        for (nth, &pi) in part.placements.iter().enumerate() {
            let pl = mapping.placements[pi];
            let x = spatial.xbars[pl.xbar];
            self.crossbar_sources(&x, chunk, win, cb.window);
            let first = nth == 0;
            let target = if first { acc } else { cb.scratch };
            let e = &mut self.em[part.core];
            e.at("codegen::class_part");
            for q in 0..px {
                if !self.valid[q] {
                    continue;
                }
                let input = if self.gather {
                    // One tile into the slot: real input, or multiplied padding zeros.
                    if self.src[q] == u32::MAX {
                        e.zero(cb.window, x.rows as u32);
                    } else {
                        e.ld(cb.window, self.src[q], x.rows as u32);
                    }
                    cb.window
                } else {
                    self.src[q]
                };
                let relu = self.fold_relu[ci];
                e.mvmul(target + q as u32 * row_bytes, input, pl.array as u32, relu);
            }
            add_runs(e, &self.valid, first, acc, cb.scratch, width as u32);
        }
    }

    /// Fill `valid` and `src` for crossbar `x` over the chunk's pixels.
    fn crossbar_sources(&mut self, x: &Crossbar, chunk: &Chunk, win: &Window, window_at: u32) {
        let p = self.p;
        let in_addr = self.buffers.manifest.input.addr;
        self.valid.clear();
        self.src.clear();
        for n in chunk.n0..chunk.n1 {
            for oh in chunk.oh0..chunk.oh1 {
                let ih = p.in_row(oh, x.i);
                for ow in chunk.ow0..chunk.ow1 {
                    let iw = p.in_col(ow, x.j);
                    let inside = (0..p.h as i64).contains(&ih) && (0..p.w as i64).contains(&iw);
                    let use_it = inside || !self.clip;
                    self.valid.push(use_it);
                    if self.gather {
                        // GMem address of the tile, or u32::MAX for padding.
                        self.src.push(if inside {
                            in_addr
                                + (((n * p.h + ih as usize) * p.w + iw as usize) * p.c + x.c0)
                                    as u32
                        } else {
                            u32::MAX
                        });
                    } else if use_it {
                        let pix = (((n - chunk.n0) * win.rows) as i64 + (ih - win.r0))
                            * win.cols as i64
                            + (iw - win.c0);
                        self.src
                            .push(window_at + (pix as usize * p.c + x.c0) as u32);
                    } else {
                        self.src.push(0);
                    }
                }
            }
        }
    }

    /// Step 3: the chunk's transfers, in the global (class, contributor) order.
    fn transfers(&mut self, chunk: &Chunk) {
        let px = chunk.pixels() as u32;
        for (ci, red) in self.mapping.reductions.iter().enumerate() {
            let width = self.spatial.classes[ci].width as u32;
            let bytes = px * width * 4;
            for part in red.parts.iter().filter(|part| part.core != red.owner) {
                let from = self.buffers.cores[part.core].acc_of(ci);
                self.em[part.core].at("codegen::transfers");
                self.em[part.core].send(from, red.owner as u32, bytes);
                let ob = &self.buffers.cores[red.owner];
                let acc = ob.acc_of(ci);
                self.em[red.owner].at("codegen::transfers");
                self.em[red.owner].recv(ob.recv, part.core as u32, bytes);
                self.em[red.owner].vvadd(acc, acc, ob.recv, px * width);
            }
        }
    }

    /// Step 3 through global memory (see the module documentation): contributors store and
    /// sync, then owners wait, load, add and acknowledge. `acked[c][o]`: core `c` has synced
    /// owner `o` before (so it first waits for `o`'s acknowledgement).
    fn gmem_transfers(&mut self, chunk: &Chunk, slots: &GmemSlots, acked: &mut [Vec<bool>]) {
        let px = chunk.pixels() as u32;
        let cores = self.mapping.cores;
        // (class, contributor index, contributor core, owner) in the global order.
        let mut parts = Vec::new();
        for (ci, red) in self.mapping.reductions.iter().enumerate() {
            let others = red.parts.iter().filter(|part| part.core != red.owner);
            for (j, part) in others.enumerate() {
                parts.push((ci, j as u32, part.core, red.owner));
            }
        }
        for (c, acked) in acked.iter_mut().enumerate().take(cores) {
            for (o, was_acked) in acked.iter_mut().enumerate().take(cores) {
                let mine: Vec<_> = parts.iter().filter(|t| t.2 == c && t.3 == o).collect();
                if mine.is_empty() {
                    continue;
                }
                let e = &mut self.em[c];
                e.at("codegen::gmem_transfers");
                if *was_acked {
                    e.wait(16 + o as u32, 1);
                }
                for &&(ci, j, _, _) in &mine {
                    let width = self.spatial.classes[ci].width as u32;
                    let from = self.buffers.cores[c].acc_of(ci);
                    e.st(slots.slot(ci, j, width, px), from, px * width * 4);
                }
                e.sync(c as u32, o as u32);
                *was_acked = true;
            }
        }
        for o in 0..cores {
            for c in 0..cores {
                let mine: Vec<_> = parts.iter().filter(|t| t.2 == c && t.3 == o).collect();
                if mine.is_empty() {
                    continue;
                }
                let ob = &self.buffers.cores[o];
                let e = &mut self.em[o];
                e.at("codegen::gmem_transfers");
                e.wait(c as u32, 1);
                for &&(ci, j, _, _) in &mine {
                    let width = self.spatial.classes[ci].width as u32;
                    let acc = ob.acc_of(ci);
                    e.ld(ob.recv, slots.slot(ci, j, width, px), px * width * 4);
                    e.vvadd(acc, acc, ob.recv, px * width);
                }
                e.sync(16 + o as u32, c as u32);
            }
        }
    }

    /// Step 4: every owner adds the bias, applies ReLU and stores its classes.
    fn finalize(&mut self, chunk: &Chunk) {
        let p = self.p;
        let px = chunk.pixels();
        let out_addr = self.buffers.manifest.output.addr;
        let first_px = chunk.first_pixel(p);
        for (ci, red) in self.mapping.reductions.iter().enumerate() {
            let class = self.spatial.classes[ci];
            let width = class.width as u32;
            let row_bytes = width * 4;
            let e = &mut self.em[red.owner];
            e.at("codegen::finalize");
            let cb = &self.buffers.cores[red.owner];
            let acc = cb.acc_of(ci);
            if p.bias {
                let b = cb.bias_of(ci);
                for q in 0..px as u32 {
                    e.vvadd(acc + q * row_bytes, acc + q * row_bytes, b, width);
                }
            }
            if p.relu && !self.fold_relu[ci] {
                e.vrelu(acc, px as u32 * width);
            }
            if class.width == p.k {
                let g = out_addr + (first_px * p.k * 4) as u32;
                e.st(g, acc, px as u32 * row_bytes);
            } else {
                for q in 0..px {
                    let g = out_addr + (((first_px + q) * p.k + class.k0) * 4) as u32;
                    e.st(g, acc + q as u32 * row_bytes, row_bytes);
                }
            }
        }
    }
}

/// After one crossbar's `mvmul`s: per run of pixels of equal validity, the first crossbar
/// zeroes the accumulator where it did not run; a further one adds the scratch buffer
/// where it did.
fn add_runs(e: &mut Emitter, valid: &[bool], first: bool, acc: u32, scratch: u32, width: u32) {
    e.at("codegen::add_runs");
    let row_bytes = width * 4;
    let px = valid.len();
    let mut q = 0;
    while q < px {
        let v = valid[q];
        let start = q;
        while q < px && valid[q] == v {
            q += 1;
        }
        let len = (q - start) as u32;
        let off = start as u32 * row_bytes;
        if first && !v {
            e.zero(acc + off, len * row_bytes);
        } else if !first && v {
            e.vvadd(acc + off, acc + off, scratch + off, len * width);
        }
    }
}

/// Load one chunk's input window: zero it first when it reaches into the padding, then copy
/// each contiguous run of real input (merged across rows and images when GMem and LMem are
/// both contiguous).
fn load_window(
    e: &mut Emitter,
    p: &Problem,
    chunk: &Chunk,
    win: &Window,
    base: u32,
    in_addr: u32,
    n_imgs: usize,
) {
    let total = n_imgs * win.rows * win.cols * p.c;
    if total == 0 {
        return;
    }
    let r_lo = win.r0.max(0);
    let r_hi = (win.r0 + win.rows as i64).min(p.h as i64);
    let c_lo = win.c0.max(0);
    let c_hi = (win.c0 + win.cols as i64).min(p.w as i64);
    let has_padding = r_lo != win.r0
        || r_hi != win.r0 + win.rows as i64
        || c_lo != win.c0
        || c_hi != win.c0 + win.cols as i64;
    if has_padding {
        e.zero(base, total as u32);
    }
    if r_lo >= r_hi || c_lo >= c_hi {
        return;
    }
    let seg = (c_hi - c_lo) as usize * p.c;
    // Pending run: (lmem, gmem, size).
    let mut run: Option<(u32, u32, u32)> = None;
    for n in chunk.n0..chunk.n1 {
        for r in r_lo..r_hi {
            let g = in_addr as usize + ((n * p.h + r as usize) * p.w + c_lo as usize) * p.c;
            let l = base as usize
                + ((((n - chunk.n0) * win.rows) as i64 + r - win.r0) as usize * win.cols
                    + (c_lo - win.c0) as usize)
                    * p.c;
            let (l, g, s) = (l as u32, g as u32, seg as u32);
            run = match run {
                Some((rl, rg, rs)) if rl + rs == l && rg + rs == g => Some((rl, rg, rs + s)),
                Some((rl, rg, rs)) => {
                    e.ld(rl, rg, rs);
                    Some((l, g, s))
                }
                None => Some((l, g, s)),
            };
        }
    }
    if let Some((rl, rg, rs)) = run {
        e.ld(rl, rg, rs);
    }
}
