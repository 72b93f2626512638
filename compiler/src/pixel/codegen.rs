//! Instruction generation of the pixel-wise lowering: for every output pixel in raster
//! order, on every core at once,
//! 1. each core with crossbars loads the pixel's patch (`lldi` zeroes it first when padding
//!    skipping is off and the patch reaches into the padding; then one `ld` per contiguous
//!    run of real input); when gathering, each crossbar's tile is loaded right before its
//!    `mvmul` instead,
//! 2. computes, class by class, its partial sums: the first crossbar that reads real input
//!    (or any, without padding skipping) writes the accumulator, every further one the
//!    scratch row, added with `vvadd`,
//! 3. takes part in the pixel's transfers: for each class in order, each contributor with a
//!    nonzero partial sum, in ascending core order, `send`s it to the owner, which `recv`s it
//!    (into its accumulator when that holds nothing yet, else into the receive row + `vvadd`),
//! 4. finalizes each run of classes it owns: `lldi` zeroes what nothing wrote, then bias
//!    (`vvadd`), ReLU (`vrelu`, or `mvmul`'s flag where a lone crossbar makes every final
//!    value of the run and there is no bias), and one `st`.
//!
//! Deadlock freedom as in the channel-wise lowering: every core's sends and receives are a
//! subsequence of one global order (pixel, class, contributor), and whether a transfer
//! happens is decided at compile time, for both of its cores alike.

use super::buffers::{Buffers, CoreMap, Patch};
use crate::emitter::Emitter;
use crate::mapping::Mapping;
use crate::tiling::{Crossbar, Problem, Spatial};

/// One output pixel.
#[derive(Clone, Copy, Debug)]
struct Pixel {
    n: usize,
    oh: usize,
    ow: usize,
}

/// Generate every core's instruction stream (with its provenance when `record`).
pub(crate) fn generate(
    spatial: &Spatial,
    mapping: &Mapping,
    buffers: &Buffers,
    clip: bool,
    record: bool,
) -> Vec<Emitter> {
    let p = &spatial.problem;
    let mut g = Codegen::new(spatial, mapping, buffers, clip);
    g.em = (0..mapping.cores).map(|_| Emitter::new(record)).collect();
    g.load_biases();
    for n in 0..p.n {
        for oh in 0..p.oh {
            for ow in 0..p.ow {
                let px = Pixel { n, oh, ow };
                g.load_patches(px);
                g.partial_sums(px);
                g.transfers();
                g.finalize(px);
            }
        }
    }
    g.em
}

struct Codegen<'a> {
    p: &'a Problem,
    spatial: &'a Spatial,
    mapping: &'a Mapping,
    buffers: &'a Buffers,
    clip: bool,
    em: Vec<Emitter>,
    /// Per class: a lone crossbar makes the final value, so ReLU goes into its `mvmul`.
    fold_relu: Vec<bool>,
    /// Per core: `(class, part index)` of each part it computes, in class order.
    core_parts: Vec<Vec<(usize, usize)>>,
    /// Per class and part (in [`crate::mapping::Reduction::parts`] order): how many of the
    /// part's crossbars ran for the current pixel (0: its accumulator holds nothing).
    written: Vec<Vec<usize>>,
    /// Per class: the owner's accumulator holds a value for the current pixel.
    owner_written: Vec<bool>,
}

impl<'a> Codegen<'a> {
    fn new(spatial: &'a Spatial, mapping: &'a Mapping, buffers: &'a Buffers, clip: bool) -> Self {
        let p = &spatial.problem;
        Codegen {
            p,
            spatial,
            mapping,
            buffers,
            clip,
            em: Vec::new(),
            fold_relu: mapping
                .reductions
                .iter()
                .map(|r| p.relu && !p.bias && r.total == 1)
                .collect(),
            core_parts: core_parts(mapping),
            written: mapping
                .reductions
                .iter()
                .map(|r| vec![0; r.parts.len()])
                .collect(),
            owner_written: vec![false; mapping.reductions.len()],
        }
    }

    /// Bias vectors, once: one `ld` per run of owned classes.
    fn load_biases(&mut self) {
        if !self.p.bias {
            return;
        }
        for (core, m) in self.buffers.cores.iter().enumerate() {
            self.em[core].at("pixel::codegen::load_biases");
            for r in &m.runs {
                let g = self.buffers.bias_addr + r.k0 as u32 * 4;
                self.em[core].ld(r.bias, g, r.width as u32 * 4);
            }
        }
    }

    /// The input row and column crossbar position `(i, j)` reads for `px`, and whether
    /// they are real input.
    fn input_at(&self, px: Pixel, i: usize, j: usize) -> (i64, i64, bool) {
        let (ih, iw) = (self.p.in_row(px.oh, i), self.p.in_col(px.ow, j));
        let inside = (0..self.p.h as i64).contains(&ih) && (0..self.p.w as i64).contains(&iw);
        (ih, iw, inside)
    }

    /// GMem address of input pixel `(n, ih, iw)`, channel `c`.
    fn input_addr(&self, n: usize, ih: i64, iw: i64, c: usize) -> u32 {
        let p = self.p;
        let pixel = (n * p.h + ih as usize) * p.w + iw as usize;
        self.buffers.manifest.input.addr + (pixel * p.c + c) as u32
    }

    /// Step 1: every core with crossbars loads the pixel's patch (none when gathering).
    fn load_patches(&mut self, px: Pixel) {
        if self.buffers.gather {
            return;
        }
        let buffers = self.buffers;
        for core in 0..self.em.len() {
            let m = &buffers.cores[core];
            if let Some(patch) = &m.patch {
                let loads = self.patch_loads(px, patch, m.input);
                let e = &mut self.em[core];
                e.at("pixel::codegen::load_patches");
                if loads.zero_first {
                    e.zero(m.input, m.input_bytes);
                }
                for (l, g, size) in loads.runs {
                    e.ld(l, g, size);
                }
            }
        }
    }

    /// The `ld`s that fill a patch at LMem `base` for `px`: one per contiguous run of real
    /// input over the positions the core uses (every position of a row's span when a row
    /// is contiguous anyway).
    fn patch_loads(&self, px: Pixel, patch: &Patch, base: u32) -> PatchLoads {
        let p = self.p;
        let contiguous = patch.span == p.c && p.dw == 1;
        let mut loads = PatchLoads::default();
        let mut run: Option<(u32, u32, u32)> = None;
        for i in 0..p.kh {
            let row = &patch.used[i * p.kw..(i + 1) * p.kw];
            let (Some(j0), Some(j1)) = (row.iter().position(|&u| u), row.iter().rposition(|&u| u))
            else {
                continue;
            };
            for (j, &used) in row.iter().enumerate().take(j1 + 1).skip(j0) {
                if !(used || contiguous) {
                    continue;
                }
                let (ih, iw, inside) = self.input_at(px, i, j);
                if !inside {
                    loads.zero_first |= !self.clip && used;
                    continue;
                }
                let l = base + ((i * p.kw + j) * patch.span) as u32;
                let g = self.input_addr(px.n, ih, iw, patch.c0);
                let s = patch.span as u32;
                run = match run {
                    Some((rl, rg, rs)) if rl + rs == l && rg + rs == g => Some((rl, rg, rs + s)),
                    Some(done) => {
                        loads.runs.push(done);
                        Some((l, g, s))
                    }
                    None => Some((l, g, s)),
                };
            }
        }
        loads.runs.extend(run);
        loads
    }

    /// Step 2: every core's partial sums of every class it computes.
    fn partial_sums(&mut self, px: Pixel) {
        let mapping = self.mapping;
        for core in 0..self.em.len() {
            for k in 0..self.core_parts[core].len() {
                let (ci, part) = self.core_parts[core][k];
                let placements = &mapping.reductions[ci].parts[part].placements;
                self.written[ci][part] = self.class_products(px, ci, core, placements);
            }
            if self.buffers.staged {
                self.add_staged(core);
            }
        }
        for (ci, red) in mapping.reductions.iter().enumerate() {
            self.owner_written[ci] = red
                .parts
                .iter()
                .zip(&self.written[ci])
                .any(|(part, &w)| part.core == red.owner && w > 0);
        }
    }

    /// The `mvmul`s of one core's share of a class for `px`: the first crossbar that runs
    /// writes the accumulator; each further one writes its staged scratch row, or the one
    /// scratch row, which is added at once. Returns how many crossbars ran.
    fn class_products(&mut self, px: Pixel, ci: usize, core: usize, placements: &[usize]) -> usize {
        let (spatial, mapping, buffers) = (self.spatial, self.mapping, self.buffers);
        let m: &CoreMap = &buffers.cores[core];
        let width = spatial.classes[ci].width as u32;
        let acc = m.acc_of(spatial, ci);
        let staged = m.staged.iter().find(|&&(c, _)| c == ci).map(|&(_, a)| a);
        let mut ran = 0;
        for &pi in placements {
            let pl = mapping.placements[pi];
            let x = spatial.xbars[pl.xbar];
            let Some(input) = self.crossbar_input(px, core, &x) else {
                continue;
            };
            let e = &mut self.em[core];
            e.at("pixel::codegen::class_products");
            match (ran, staged) {
                (0, _) => e.mvmul(acc, input, pl.array as u32, self.fold_relu[ci]),
                (_, Some(rows)) => {
                    let row = rows + (ran as u32 - 1) * width * 4;
                    e.mvmul(row, input, pl.array as u32, false);
                }
                (_, None) => {
                    e.mvmul(m.scratch, input, pl.array as u32, false);
                    e.vvadd(acc, acc, m.scratch, width);
                }
            }
            ran += 1;
        }
        ran
    }

    /// With staged scratch, after all of a core's `mvmul`s: each class's products added to
    /// its accumulator.
    fn add_staged(&mut self, core: usize) {
        let (spatial, buffers) = (self.spatial, self.buffers);
        let m = &buffers.cores[core];
        for &(ci, part) in &self.core_parts[core] {
            let ran = self.written[ci][part];
            let Some(&(_, rows)) = m.staged.iter().find(|&&(c, _)| c == ci) else {
                continue;
            };
            let width = spatial.classes[ci].width as u32;
            let acc = m.acc_of(spatial, ci);
            self.em[core].at("pixel::codegen::add_staged");
            for r in 1..ran {
                let row = rows + (r as u32 - 1) * width * 4;
                self.em[core].vvadd(acc, acc, row, width);
            }
        }
    }

    /// The LMem address of crossbar `x`'s input vector for `px` (loading it first when
    /// gathering), or `None` when the crossbar does not run for this pixel.
    fn crossbar_input(&mut self, px: Pixel, core: usize, x: &Crossbar) -> Option<u32> {
        let (ih, iw, inside) = self.input_at(px, x.i, x.j);
        if !inside && self.clip {
            return None;
        }
        let buffers = self.buffers;
        let m = &buffers.cores[core];
        let patch = m.patch.as_ref()?;
        if !buffers.gather {
            let at = (x.i * self.p.kw + x.j) * patch.span + (x.c0 - patch.c0);
            return Some(m.input + at as u32);
        }
        // One tile into the slot: real input, or multiplied padding zeros.
        let g = inside.then(|| self.input_addr(px.n, ih, iw, x.c0));
        let e = &mut self.em[core];
        e.at("pixel::codegen::crossbar_input");
        match g {
            Some(g) => e.ld(m.input, g, x.rows as u32),
            None => e.zero(m.input, x.rows as u32),
        }
        Some(m.input)
    }

    /// Step 3: the pixel's transfers, in the global (class, contributor) order; only
    /// partial sums that were written travel.
    fn transfers(&mut self) {
        let (spatial, mapping, buffers) = (self.spatial, self.mapping, self.buffers);
        for (ci, red) in mapping.reductions.iter().enumerate() {
            let width = spatial.classes[ci].width as u32;
            let owner = &buffers.cores[red.owner];
            let acc = owner.acc_of(spatial, ci);
            for (k, part) in red.parts.iter().enumerate() {
                if part.core == red.owner || self.written[ci][k] == 0 {
                    continue;
                }
                let from = buffers.cores[part.core].acc_of(spatial, ci);
                self.em[part.core].at("pixel::codegen::transfers");
                self.em[part.core].send(from, red.owner as u32, width * 4);
                let e = &mut self.em[red.owner];
                e.at("pixel::codegen::transfers");
                if self.owner_written[ci] {
                    e.recv(owner.recv, part.core as u32, width * 4);
                    e.vvadd(acc, acc, owner.recv, width);
                } else {
                    e.recv(acc, part.core as u32, width * 4);
                    self.owner_written[ci] = true;
                }
            }
        }
    }

    /// Step 4: every owner zeroes what nothing wrote, adds the bias, applies ReLU and stores
    /// each run of its classes with one instruction each.
    fn finalize(&mut self, px: Pixel) {
        let p = self.p;
        let (spatial, buffers) = (self.spatial, self.buffers);
        let pixel = (px.n * p.oh + px.oh) * p.ow + px.ow;
        for (core, m) in buffers.cores.iter().enumerate() {
            let e = &mut self.em[core];
            for r in &m.runs {
                e.at("pixel::codegen::finalize");
                zero_unwritten(
                    e,
                    spatial,
                    r.classes.clone(),
                    &self.owner_written,
                    r.acc,
                    r.k0,
                );
                let width = r.width as u32;
                if p.bias {
                    e.vvadd(r.acc, r.acc, r.bias, width);
                }
                if p.relu && r.classes.clone().any(|c| !self.fold_relu[c]) {
                    e.vrelu(r.acc, width);
                }
                let g = buffers.manifest.output.addr + ((pixel * p.k + r.k0) * 4) as u32;
                e.st(g, r.acc, width * 4);
            }
        }
    }
}

/// Per core, `(class, part index)` of each part it computes, in class order.
fn core_parts(mapping: &Mapping) -> Vec<Vec<(usize, usize)>> {
    let mut out = vec![Vec::new(); mapping.cores];
    for (ci, red) in mapping.reductions.iter().enumerate() {
        for (k, part) in red.parts.iter().enumerate() {
            out[part.core].push((ci, k));
        }
    }
    out
}

/// The patch loads of one pixel on one core.
#[derive(Default)]
struct PatchLoads {
    /// Some used position lies in the padding and padding is multiplied: zero the patch.
    zero_first: bool,
    /// `(lmem, gmem, size)` of each `ld`.
    runs: Vec<(u32, u32, u32)>,
}

/// `lldi` zeroes over each stretch of consecutive classes of a run that hold no value.
fn zero_unwritten(
    e: &mut Emitter,
    spatial: &Spatial,
    classes: std::ops::Range<usize>,
    written: &[bool],
    acc: u32,
    k0: usize,
) {
    let mut c = classes.start;
    while c < classes.end {
        if written[c] {
            c += 1;
            continue;
        }
        e.at("pixel::codegen::zero_unwritten");
        let start = spatial.classes[c].k0;
        let mut end = start;
        while c < classes.end && !written[c] {
            end += spatial.classes[c].width;
            c += 1;
        }
        e.zero(acc + ((start - k0) * 4) as u32, ((end - start) * 4) as u32);
    }
    e.at("pixel::codegen::finalize");
}
