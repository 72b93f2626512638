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
//! Widths: `mvmul` runs at `setbw 8,32` (int8 inputs, int32 sums), the int32 vector ops at
//! `setbw 32,32`; `setbw` is emitted only when the width changes. Addresses go through a
//! small LRU cache of registers r0..r30 (`ld`/`st` keep their GMem address in r30 or lower,
//! as pimsim-nn needs); `sldi` loads an address that is not cached.

use pimdiff_isa::inst::{BinVecOp, MemOp, Offset, UnVecOp};
use pimdiff_isa::{Inst, Reg, Width};

use crate::buffers::{window, Buffers, Chunk};
use crate::mapping::Mapping;
use crate::tiling::Spatial;

/// Registers r0..r30 hold addresses; r31 is never used.
const ADDRESS_REGS: usize = 31;
/// Marks a register holding no known value (no address is `u32::MAX`).
const EMPTY: u32 = u32::MAX;

/// One core's instruction stream under construction.
struct Emitter {
    insts: Vec<Inst>,
    /// The value each register holds, [`EMPTY`] when nothing known.
    vals: [u32; ADDRESS_REGS],
    /// Last use of each register (0: never), for LRU replacement.
    stamps: [u64; ADDRESS_REGS],
    clock: u64,
    /// `(ibiw, obiw)` in bits; the machine resets both to 8.
    bw: (u32, u32),
}

impl Emitter {
    fn new() -> Emitter {
        Emitter {
            insts: Vec::new(),
            vals: [EMPTY; ADDRESS_REGS],
            stamps: [0; ADDRESS_REGS],
            clock: 0,
            bw: (8, 8),
        }
    }

    /// A register holding `value`, loading it with `sldi` unless cached. Replacement is
    /// least-recently-used, empty registers first (in index order), so the registers an
    /// instruction has just obtained are never evicted by its next operand.
    fn reg(&mut self, value: u32) -> Reg {
        debug_assert_ne!(value, EMPTY, "addresses are below 2^32 - 1");
        self.clock += 1;
        let i = match self.vals.iter().position(|&v| v == value) {
            Some(i) => i,
            None => {
                let mut victim = 0;
                for (i, &stamp) in self.stamps.iter().enumerate() {
                    if stamp < self.stamps[victim] {
                        victim = i;
                    }
                }
                self.vals[victim] = value;
                let rd = Reg::new(victim as u32).expect("index < 31");
                self.insts.push(Inst::Sldi {
                    rd,
                    imm: value as i32,
                });
                victim
            }
        };
        self.stamps[i] = self.clock;
        Reg::new(i as u32).expect("index < 31")
    }

    fn setbw(&mut self, ibiw: u32, obiw: u32) {
        if self.bw != (ibiw, obiw) {
            self.bw = (ibiw, obiw);
            self.insts.push(Inst::Setbw {
                ibiw: Width::new(ibiw).expect("valid width"),
                obiw: Width::new(obiw).expect("valid width"),
            });
        }
    }

    fn ld(&mut self, lmem: u32, gmem: u32, size: u32) {
        let rd = self.reg(lmem);
        let rs1 = self.reg(gmem);
        self.insts.push(Inst::Mem {
            op: MemOp::Ld,
            rd,
            rs1,
            size,
            offset: Offset::ZERO,
        });
    }

    fn st(&mut self, gmem: u32, lmem: u32, size: u32) {
        let rd = self.reg(gmem);
        let rs1 = self.reg(lmem);
        self.insts.push(Inst::Mem {
            op: MemOp::St,
            rd,
            rs1,
            size,
            offset: Offset::ZERO,
        });
    }

    fn zero(&mut self, lmem: u32, size: u32) {
        let rd = self.reg(lmem);
        self.insts.push(Inst::Lldi {
            rd,
            imm: 0,
            size,
            offset: 0,
            from_float: false,
        });
    }

    fn mvmul(&mut self, dst: u32, src: u32, group: u32, relu: bool) {
        self.setbw(8, 32);
        let rd = self.reg(dst);
        let rs1 = self.reg(src);
        self.insts.push(Inst::Mvmul {
            rd,
            rs1,
            mbiw: Width::W8,
            relu,
            group,
        });
    }

    /// `dst = a + b` over `len` int32 elements.
    fn vvadd(&mut self, dst: u32, a: u32, b: u32, len: u32) {
        self.setbw(32, 32);
        let rd = self.reg(dst);
        let rs1 = self.reg(a);
        let rs2 = self.reg(b);
        self.insts.push(Inst::BinVec {
            op: BinVecOp::Vvadd,
            rd,
            rs1,
            rs2,
            len,
            offset: Offset::ZERO,
        });
    }

    fn vrelu(&mut self, dst: u32, len: u32) {
        self.setbw(32, 32);
        let rd = self.reg(dst);
        self.insts.push(Inst::UnVec {
            op: UnVecOp::Vrelu,
            rd,
            rs1: rd,
            len,
            offset: Offset::ZERO,
        });
    }

    fn send(&mut self, src: u32, core: u32, size: u32) {
        let rs1 = self.reg(src);
        self.insts.push(Inst::Send {
            rs1,
            core,
            size,
            offset: 0,
        });
    }

    fn recv(&mut self, dst: u32, core: u32, size: u32) {
        let rd = self.reg(dst);
        self.insts.push(Inst::Recv {
            rd,
            core,
            size,
            offset: 0,
        });
    }
}

/// Generate every core's instruction stream.
pub fn generate(
    spatial: &Spatial,
    mapping: &Mapping,
    buffers: &Buffers,
    clip: bool,
) -> Vec<Vec<Inst>> {
    let p = &spatial.problem;
    let mut em: Vec<Emitter> = (0..mapping.cores).map(|_| Emitter::new()).collect();
    let out_addr = buffers.manifest.output.addr;
    let in_addr = buffers.manifest.input.addr;

    // Bias vectors, once.
    if p.bias {
        for (core, cb) in buffers.cores.iter().enumerate() {
            for &(c, at) in &cb.bias {
                let class = &spatial.classes[c];
                let g = buffers.bias_addr + class.k0 as u32 * 4;
                em[core].ld(at, g, class.width as u32 * 4);
            }
        }
    }

    // Per class: does a lone crossbar produce the final value (ReLU folded into mvmul)?
    let fold_relu: Vec<bool> = mapping
        .reductions
        .iter()
        .map(|r| p.relu && !p.bias && r.total == 1)
        .collect();

    // Scratch per pixel: validity of one crossbar over the chunk's pixels.
    let mut valid: Vec<bool> = Vec::new();
    let mut src: Vec<u32> = Vec::new();

    for chunk in &buffers.chunks {
        let px = chunk.pixels();
        let win = window(p, chunk, clip);
        let n_imgs = chunk.n1 - chunk.n0;

        // 1. Input windows (none when gathering).
        let gather = buffers.kind.gathers();
        for (core, e) in em.iter_mut().enumerate() {
            if gather || !buffers.needs[core].window {
                continue;
            }
            load_window(
                e,
                p,
                chunk,
                &win,
                buffers.cores[core].window,
                in_addr,
                n_imgs,
            );
        }

        // 2. Partial sums.
        for (ci, red) in mapping.reductions.iter().enumerate() {
            let width = spatial.classes[ci].width;
            let row_bytes = (width * 4) as u32;
            for part in &red.parts {
                let e = &mut em[part.core];
                let cb = &buffers.cores[part.core];
                let acc = cb.acc_of(ci);
                for (nth, &pi) in part.placements.iter().enumerate() {
                    let pl = mapping.placements[pi];
                    let x = spatial.xbars[pl.xbar];
                    valid.clear();
                    src.clear();
                    let tile_bytes = x.rows as u32;
                    for n in chunk.n0..chunk.n1 {
                        for oh in chunk.oh0..chunk.oh1 {
                            let ih = p.in_row(oh, x.i);
                            for ow in chunk.ow0..chunk.ow1 {
                                let iw = p.in_col(ow, x.j);
                                let inside =
                                    (0..p.h as i64).contains(&ih) && (0..p.w as i64).contains(&iw);
                                let use_it = inside || !clip;
                                valid.push(use_it);
                                if gather {
                                    // GMem address of the tile, or u32::MAX for padding.
                                    src.push(if inside {
                                        in_addr
                                            + (((n * p.h + ih as usize) * p.w + iw as usize) * p.c
                                                + x.c0)
                                                as u32
                                    } else {
                                        u32::MAX
                                    });
                                } else if use_it {
                                    let pix = (((n - chunk.n0) * win.rows) as i64 + (ih - win.r0))
                                        * win.cols as i64
                                        + (iw - win.c0);
                                    src.push(cb.window + (pix as usize * p.c + x.c0) as u32);
                                } else {
                                    src.push(0);
                                }
                            }
                        }
                    }
                    let first = nth == 0;
                    let target = if first { acc } else { cb.scratch };
                    for q in 0..px {
                        if !valid[q] {
                            continue;
                        }
                        let input = if gather {
                            // One tile into the slot: real input, or multiplied padding zeros.
                            if src[q] == u32::MAX {
                                e.zero(cb.window, tile_bytes);
                            } else {
                                e.ld(cb.window, src[q], tile_bytes);
                            }
                            cb.window
                        } else {
                            src[q]
                        };
                        e.mvmul(
                            target + q as u32 * row_bytes,
                            input,
                            pl.array as u32,
                            fold_relu[ci],
                        );
                    }
                    // Runs of equal validity.
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
                            e.vvadd(acc + off, acc + off, cb.scratch + off, len * width as u32);
                        }
                    }
                }
            }
            if red.parts.is_empty() {
                let cb = &buffers.cores[red.owner];
                em[red.owner].zero(cb.acc_of(ci), px as u32 * row_bytes);
            }
        }

        // 3. Transfers, in the global (class, contributor) order.
        for (ci, red) in mapping.reductions.iter().enumerate() {
            let width = spatial.classes[ci].width as u32;
            let bytes = px as u32 * width * 4;
            for part in red.parts.iter().filter(|part| part.core != red.owner) {
                let from = buffers.cores[part.core].acc_of(ci);
                em[part.core].send(from, red.owner as u32, bytes);
                let ob = &buffers.cores[red.owner];
                let acc = ob.acc_of(ci);
                em[red.owner].recv(ob.recv, part.core as u32, bytes);
                em[red.owner].vvadd(acc, acc, ob.recv, px as u32 * width);
            }
        }

        // 4. Finalize and store.
        let first_px = chunk.first_pixel(p);
        for (ci, red) in mapping.reductions.iter().enumerate() {
            let class = spatial.classes[ci];
            let width = class.width as u32;
            let row_bytes = width * 4;
            let e = &mut em[red.owner];
            let cb = &buffers.cores[red.owner];
            let acc = cb.acc_of(ci);
            if p.bias {
                let b = cb.bias_of(ci);
                for q in 0..px as u32 {
                    e.vvadd(acc + q * row_bytes, acc + q * row_bytes, b, width);
                }
            }
            if p.relu && !fold_relu[ci] {
                e.vrelu(acc, px as u32 * width);
            }
            if class.width == p.k {
                e.st(
                    out_addr + (first_px * p.k * 4) as u32,
                    acc,
                    px as u32 * row_bytes,
                );
            } else {
                for q in 0..px {
                    let g = out_addr + (((first_px + q) * p.k + class.k0) * 4) as u32;
                    e.st(g, acc + q as u32 * row_bytes, row_bytes);
                }
            }
        }
    }
    em.into_iter().map(|e| e.insts).collect()
}

/// Load one chunk's input window: zero it first when it reaches into the padding, then copy
/// each contiguous run of real input (merged across rows and images when GMem and LMem are
/// both contiguous).
fn load_window(
    e: &mut Emitter,
    p: &crate::tiling::Problem,
    chunk: &Chunk,
    win: &crate::buffers::Window,
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
