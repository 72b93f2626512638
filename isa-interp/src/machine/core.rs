//! One core's state and the semantics of every instruction: [`step`] has one `match` arm per
//! opcode, in isa.md's order, so it can be audited against the specification line by line.
//!
//! Conventions shared by every arm:
//! - register values used as addresses are read as unsigned 32-bit; offsets are added in
//!   exact (`i64`) arithmetic and a range outside its memory is a fault, never a wrap;
//! - vector instructions read all their inputs before writing any output, so an output that
//!   overlaps an input (where isa.md does not call it undefined) sees the old values;
//! - every element write goes through [`Exec::put`], which wraps the value to the destination
//!   width and counts an overflow event when that changed it.

use std::ops::Range;

use super::crossbar::{self, CoreXbars, MvmulScratch};
use super::fault::{FaultKind, Operand, WaitingFor};
use super::memory::{fit, gmem_range, lmem_range, load, overlaps, store, GMem};
use super::noc::{Message, Noc};
use super::stats::{mesh_hops, OverflowRecord, Stats, OVERFLOW_RECORDS};
use super::trace::Recorder;
use super::CellFill;
use crate::inst::{BinVecOp, Inst, MemOp, Offset, Reg, ScalarImmOp, ScalarOp, UnVecOp, Width};
use crate::program::Arch;

/// Per-core architectural state.
pub(crate) struct Core {
    pub regs: [i32; 32],
    pub ibiw: Width,
    pub obiw: Width,
    pub pc: u32,
    pub lmem: Vec<u8>,
    /// Sequence number of this core's posted `send` that has not been received yet.
    pub posted: Option<u64>,
}

impl Core {
    pub fn new(local_memory_bytes: u32) -> Core {
        Core {
            regs: [0; 32],
            ibiw: Width::W8,
            obiw: Width::W8,
            pc: 0,
            lmem: vec![0; local_memory_bytes as usize],
            posted: None,
        }
    }
}

/// State shared by all cores (and reusable scratch buffers).
pub(crate) struct Shared {
    pub arch: Arch,
    pub fill: CellFill,
    pub gmem: GMem,
    pub events: Vec<[i32; 32]>,
    pub noc: Noc,
    pub stats: Stats,
    pub rec: Recorder,
    vals: Vec<i128>,
    mv: MvmulScratch,
}

impl Shared {
    pub fn new(arch: Arch, fill: CellFill, trace: bool) -> Shared {
        let cores = arch.cores as usize;
        Shared {
            arch,
            fill,
            gmem: GMem::default(),
            events: vec![[0; 32]; cores],
            noc: Noc::default(),
            stats: Stats {
                cores: vec![Default::default(); cores],
                ..Default::default()
            },
            rec: Recorder {
                on: trace,
                ..Default::default()
            },
            vals: Vec::new(),
            mv: MvmulScratch::default(),
        }
    }
}

/// What one attempt to execute the current instruction did.
pub(crate) enum Step {
    /// The instruction completed; the pc moves on.
    Done,
    /// A `send` posted its message and now waits for the receiver (progress, same pc).
    Posted,
    /// The instruction cannot complete yet.
    Blocked(WaitingFor),
}

/// Executes (or retries) core `id`'s current instruction `inst`.
pub(crate) fn step(
    core: &mut Core,
    id: u32,
    inst: &Inst,
    sh: &mut Shared,
    xb: &mut CoreXbars,
) -> Result<Step, FaultKind> {
    let mut x = Exec { core, id, inst, sh };
    let (ib, ob) = (x.core.ibiw, x.core.obiw);
    match *inst {
        Inst::Nop => {}
        Inst::Sldi { rd, imm } => x.set(rd, imm),
        Inst::Sld { rd, rs1, offset } => {
            let (a, n) = gmem_range(Operand::Rs1, x.r(rs1), offset as i64, 4)?;
            let mut b = [0u8; 4];
            x.sh.gmem.read(a, &mut b);
            x.sh.gmem.touch(a, n);
            x.set(rd, i32::from_le_bytes(b));
        }
        Inst::Scalar {
            op: ScalarOp::Add,
            rd,
            rs1,
            rs2,
        } => x.set(rd, x.r(rs1).wrapping_add(x.r(rs2))),
        Inst::Scalar {
            op: ScalarOp::Sub,
            rd,
            rs1,
            rs2,
        } => x.set(rd, x.r(rs1).wrapping_sub(x.r(rs2))),
        Inst::Scalar {
            op: ScalarOp::Mul,
            rd,
            rs1,
            rs2,
        } => x.set(rd, x.r(rs1).wrapping_mul(x.r(rs2))),
        Inst::ScalarImm {
            op: ScalarImmOp::Add,
            rd,
            rs1,
            imm,
        } => x.set(rd, x.r(rs1).wrapping_add(imm)),
        Inst::ScalarImm {
            op: ScalarImmOp::Mul,
            rd,
            rs1,
            imm,
        } => x.set(rd, x.r(rs1).wrapping_mul(imm)),
        Inst::Setbw { ibiw, obiw } => {
            x.core.ibiw = ibiw;
            x.core.obiw = obiw;
        }
        Inst::Mvmul {
            rd,
            rs1,
            mbiw,
            relu,
            group,
        } => {
            let arch = x.sh.arch;
            let view = xb.group(group, id, &arch, x.sh.fill)?;
            let (lo, hi) = signed_range(mbiw);
            if (view.min as i64) < lo || (view.max as i64) > hi {
                let (row, col, value) = view
                    .first_outside(lo as i32, hi as i32)
                    .unwrap_or((0, 0, view.max));
                return Err(FaultKind::WeightTooWide {
                    group,
                    row,
                    col,
                    value,
                    mbiw: mbiw.bits(),
                });
            }
            let src = x.lm(Operand::Rs1, rs1, 0, view.rows as u64 * ib.bytes() as u64)?;
            let dst = x.lm(Operand::Rd, rd, 0, view.cols as u64 * ob.bytes() as u64)?;
            let mut mv = std::mem::take(&mut x.sh.mv);
            mv.x.clear();
            mv.x.extend(
                (0..view.rows as usize)
                    .map(|i| load(&x.core.lmem, src.start + i * ib.bytes() as usize, ib) as i32),
            );
            let acc = crossbar::mvmul(&view, &mut mv);
            x.sh.rec.lmem(&x.core.lmem, dst.clone());
            for j in 0..view.cols as usize {
                let y = acc.get(j);
                x.put(
                    dst.start + j * ob.bytes() as usize,
                    ob,
                    if relu { y.max(0) } else { y },
                );
            }
            x.sh.mv = mv;
        }
        Inst::BinVec {
            op: BinVecOp::Vvadd,
            rd,
            rs1,
            rs2,
            len,
            offset,
        } => x.elementwise(rd, rs1, Some(rs2), len, offset, ib, ib, |_, a, b| {
            Ok(a as i128 + b as i128)
        })?,
        Inst::BinVec {
            op: BinVecOp::Vvsub,
            rd,
            rs1,
            rs2,
            len,
            offset,
        } => x.elementwise(rd, rs1, Some(rs2), len, offset, ib, ib, |_, a, b| {
            Ok(a as i128 - b as i128)
        })?,
        Inst::BinVec {
            op: BinVecOp::Vvmul,
            rd,
            rs1,
            rs2,
            len,
            offset,
        } => x.elementwise(rd, rs1, Some(rs2), len, offset, ib, ob, |_, a, b| {
            Ok(a as i128 * b as i128)
        })?,
        Inst::BinVec {
            op: BinVecOp::Vvdmul,
            rd,
            rs1,
            rs2,
            len,
            offset,
        } => {
            let n = len as u64 * ib.bytes() as u64;
            let a = x.lm(
                Operand::Rs1,
                rs1,
                sel(offset.applies_to_rs1(), offset.value, ib),
                n,
            )?;
            let b = x.lm(
                Operand::Rs2,
                rs2,
                sel(offset.applies_to_rs2(), offset.value, ib),
                n,
            )?;
            let d = x.lm(Operand::Rd, rd, 0, ob.bytes() as u64)?;
            let w = ib.bytes() as usize;
            let sum: i128 = (0..len as usize)
                .map(|i| {
                    load(&x.core.lmem, a.start + i * w, ib) as i128
                        * load(&x.core.lmem, b.start + i * w, ib) as i128
                })
                .sum();
            x.sh.rec.lmem(&x.core.lmem, d.clone());
            x.put(d.start, ob, sum);
        }
        Inst::BinVec {
            op: BinVecOp::Vvmax,
            rd,
            rs1,
            rs2,
            len,
            offset,
        } => x.elementwise(rd, rs1, Some(rs2), len, offset, ib, ib, |_, a, b| {
            Ok(a.max(b) as i128)
        })?,
        Inst::BinVec {
            op: BinVecOp::Vvsll,
            rd,
            rs1,
            rs2,
            len,
            offset,
        } => x.elementwise(rd, rs1, Some(rs2), len, offset, ib, ob, |i, a, b| match b {
            _ if b < 0 => Err(FaultKind::NegativeShift {
                index: i,
                amount: b,
            }),
            _ if b >= 64 => Ok(0),
            _ => Ok((a as i128) << b),
        })?,
        Inst::BinVec {
            op: BinVecOp::Vvsra,
            rd,
            rs1,
            rs2,
            len,
            offset,
        } => x.elementwise(rd, rs1, Some(rs2), len, offset, ib, ob, |i, a, b| match b {
            _ if b < 0 => Err(FaultKind::NegativeShift {
                index: i,
                amount: b,
            }),
            _ => Ok((a >> b.min(63)) as i128),
        })?,
        Inst::BinVec {
            op: BinVecOp::Vrsu,
            rd,
            rs1,
            rs2,
            len,
            offset,
        } => {
            let bound = x.r(rs2) as i64;
            x.resize_overlap_check(rd, rs1, len, offset)?;
            x.elementwise(rd, rs1, None, len, offset, ib, ob, |_, a, _| {
                Ok(a.min(bound) as i128)
            })?
        }
        Inst::BinVec {
            op: BinVecOp::Vrsl,
            rd,
            rs1,
            rs2,
            len,
            offset,
        } => {
            let bound = x.r(rs2) as i64;
            x.resize_overlap_check(rd, rs1, len, offset)?;
            x.elementwise(rd, rs1, None, len, offset, ib, ob, |_, a, _| {
                Ok(a.max(bound) as i128)
            })?
        }
        Inst::Vavg {
            rd,
            rs1,
            rs2,
            len,
            offset,
        } => {
            if len == 0 {
                return Err(FaultKind::VavgZeroLength);
            }
            let w = ib.bytes() as i64;
            let stride = x.r(rs2) as i64 * w;
            let first = x.lm(Operand::Rs1, rs1, offset as i64 * w, w as u64)?;
            x.lm(
                Operand::Rs1,
                rs1,
                span(offset as i64 * w, len, stride),
                w as u64,
            )?;
            let d = x.lm(Operand::Rd, rd, 0, ob.bytes() as u64)?;
            // A zero stride reads one element `len` times (len may be 2^32 - 1): multiply.
            let sum: i128 = if stride == 0 {
                load(&x.core.lmem, first.start, ib) as i128 * len as i128
            } else {
                (0..len as i64)
                    .map(|k| {
                        load(&x.core.lmem, (first.start as i64 + k * stride) as usize, ib) as i128
                    })
                    .sum()
            };
            x.sh.rec.lmem(&x.core.lmem, d.clone());
            x.put(d.start, ob, sum / len as i128);
        }
        Inst::UnVec {
            op: UnVecOp::Vrelu,
            rd,
            rs1,
            len,
            offset,
        } => x.elementwise(rd, rs1, None, len, offset, ib, ib, |_, a, _| {
            Ok(a.max(0) as i128)
        })?,
        Inst::UnVec {
            op: UnVecOp::Vtanh,
            rd,
            rs1,
            len,
            offset,
        } => {
            let scale = 2f64.powi(x.sh.arch.frac_bits as i32);
            x.elementwise(rd, rs1, None, len, offset, ib, ob, |_, a, _| {
                Ok(fixed(a, scale, f64::tanh))
            })?
        }
        Inst::UnVec {
            op: UnVecOp::Vsigm,
            rd,
            rs1,
            len,
            offset,
        } => {
            let scale = 2f64.powi(x.sh.arch.frac_bits as i32);
            x.elementwise(rd, rs1, None, len, offset, ib, ob, |_, a, _| {
                Ok(fixed(a, scale, |v| 1.0 / (1.0 + (-v).exp())))
            })?
        }
        Inst::Vmv { rd, rs1, rs2, len } => {
            let w = ib.bytes() as i64;
            let stride = x.r(rs2) as i64 * w;
            let d = x.lm(Operand::Rd, rd, 0, len as u64 * w as u64)?;
            if len > 0 {
                x.lm(Operand::Rs1, rs1, 0, w as u64)?;
                x.lm(Operand::Rs1, rs1, span(0, len, stride), w as u64)?;
            }
            let base = x.r(rs1) as u32 as i64;
            for k in 0..len as i64 {
                let s = (base + k * stride) as usize;
                if overlaps(&(s..s + w as usize), &d) {
                    return Err(FaultKind::VmvOverlap {
                        index: k as u32,
                        src: s as i64,
                        width: w as u32,
                        dst: d.start as i64,
                        dst_len: d.len() as u64,
                    });
                }
            }
            x.sh.rec.lmem(&x.core.lmem, d.clone());
            for k in 0..len as i64 {
                let v = load(&x.core.lmem, (base + k * stride) as usize, ib);
                x.put(d.start + k as usize * w as usize, ib, v as i128);
            }
        }
        Inst::Mem {
            op: MemOp::Ld,
            rd,
            rs1,
            size,
            offset,
        } => {
            let d = x.lm(
                Operand::Rd,
                rd,
                sel(offset.applies_to_rd(), offset.value, Width::W8),
                size as u64,
            )?;
            let (s, n) = gmem_range(
                Operand::Rs1,
                x.r(rs1),
                sel(offset.applies_to_rs1(), offset.value, Width::W8),
                size as u64,
            )?;
            x.sh.rec.lmem(&x.core.lmem, d.clone());
            x.sh.gmem.read(s, &mut x.core.lmem[d]);
            x.sh.gmem.touch(s, n);
        }
        Inst::Mem {
            op: MemOp::St,
            rd,
            rs1,
            size,
            offset,
        } => {
            let (d, n) = gmem_range(
                Operand::Rd,
                x.r(rd),
                sel(offset.applies_to_rd(), offset.value, Width::W8),
                size as u64,
            )?;
            let s = x.lm(
                Operand::Rs1,
                rs1,
                sel(offset.applies_to_rs1(), offset.value, Width::W8),
                size as u64,
            )?;
            let gmem = &mut x.sh.gmem;
            x.sh.rec.gmem(d, || {
                let mut old = vec![0; n as usize];
                gmem.read(d, &mut old);
                old
            });
            gmem.write(d, &x.core.lmem[s]);
            gmem.touch(d, n);
        }
        Inst::Lldi {
            rd,
            imm,
            size,
            offset,
            from_float,
        } => {
            let d = x.lm(Operand::Rd, rd, offset as i64, size as u64)?;
            x.sh.rec.lmem(&x.core.lmem, d.clone());
            x.core.lmem[d].fill(imm);
            x.sh.stats.float_lldi += from_float as u64;
        }
        Inst::Mem {
            op: MemOp::Lmv,
            rd,
            rs1,
            size,
            offset,
        } => {
            let d = x.lm(
                Operand::Rd,
                rd,
                sel(offset.applies_to_rd(), offset.value, Width::W8),
                size as u64,
            )?;
            let s = x.lm(
                Operand::Rs1,
                rs1,
                sel(offset.applies_to_rs1(), offset.value, Width::W8),
                size as u64,
            )?;
            if overlaps(&s, &d) {
                return Err(FaultKind::LmvOverlap {
                    src: s.start as i64,
                    dst: d.start as i64,
                    size,
                });
            }
            x.sh.rec.lmem(&x.core.lmem, d.clone());
            x.core.lmem.copy_within(s, d.start);
        }
        Inst::Send {
            rs1,
            core: to,
            size,
            offset,
        } => {
            x.peer(to)?;
            if let Some(seq) = x.core.posted {
                if x.sh.noc.delivered(id, to) > seq {
                    x.core.posted = None;
                    return Ok(Step::Done);
                }
                return Ok(Step::Blocked(WaitingFor::Send {
                    to,
                    peer_finished: false,
                }));
            }
            let s = x.lm(Operand::Rs1, rs1, offset as i64, size as u64)?;
            let msg = Message {
                data: x.core.lmem[s].to_vec(),
                sender_pc: x.core.pc,
                sender_inst: *inst,
            };
            let ch = x.sh.noc.channel(id, to);
            debug_assert!(
                ch.pending.is_none(),
                "a sender blocks until its message is taken"
            );
            ch.pending = Some(msg);
            x.core.posted = Some(ch.posted);
            ch.posted += 1;
            return Ok(Step::Posted);
        }
        Inst::Recv {
            rd,
            core: from,
            size,
            offset,
        } => {
            x.peer(from)?;
            let d = x.lm(Operand::Rd, rd, offset as i64, size as u64)?;
            let ch = x.sh.noc.channel(from, id);
            let Some(msg) = ch.pending.take() else {
                return Ok(Step::Blocked(WaitingFor::Recv {
                    from,
                    peer_finished: false,
                }));
            };
            if msg.data.len() != size as usize {
                let kind = FaultKind::SizeMismatch {
                    sender: from,
                    sender_pc: msg.sender_pc,
                    sender_inst: msg.sender_inst,
                    send_size: msg.data.len() as u32,
                    receiver: id,
                    receiver_pc: x.core.pc,
                    recv_size: size,
                };
                ch.pending = Some(msg);
                return Err(kind);
            }
            ch.delivered += 1;
            x.sh.rec.lmem(&x.core.lmem, d.clone());
            x.core.lmem[d].copy_from_slice(&msg.data);
            let hops = mesh_hops(from, id, x.sh.arch.mesh_cols);
            let noc = &mut x.sh.stats.noc;
            noc.messages += 1;
            noc.bytes += size as u64;
            noc.hop_bytes += size as u64 * hops as u64;
            let pair = noc.pairs.entry((from, id)).or_default();
            pair.messages += 1;
            pair.bytes += size as u64;
            pair.hops = hops;
        }
        Inst::Wait { event, value } => {
            let current = x.sh.events[id as usize][event.index()];
            if current != value {
                return Ok(Step::Blocked(WaitingFor::Event {
                    event: event.index() as u32,
                    want: value,
                    current,
                }));
            }
            x.sh.rec.event(id, event.index() as u8, current);
            x.sh.events[id as usize][event.index()] = 0;
        }
        Inst::Sync {
            event,
            core: target,
        } => {
            if target >= x.sh.arch.cores {
                return Err(FaultKind::BadCore {
                    core: target,
                    cores: x.sh.arch.cores,
                });
            }
            let ev = &mut x.sh.events[target as usize][event.index()];
            let old = *ev;
            *ev = old.wrapping_add(1);
            x.sh.rec.event(target, event.index() as u8, old);
        }
    }
    Ok(Step::Done)
}

/// The execution context of one instruction.
struct Exec<'a> {
    core: &'a mut Core,
    id: u32,
    inst: &'a Inst,
    sh: &'a mut Shared,
}

impl Exec<'_> {
    #[inline]
    fn r(&self, reg: Reg) -> i32 {
        self.core.regs[reg.index()]
    }

    #[inline]
    fn set(&mut self, reg: Reg, v: i32) {
        self.core.regs[reg.index()] = v;
    }

    /// A checked LMem range based at register `reg`, tracking the high-water mark.
    #[inline]
    fn lm(
        &mut self,
        operand: Operand,
        reg: Reg,
        offset: i64,
        len: u64,
    ) -> Result<Range<usize>, FaultKind> {
        let r = lmem_range(
            operand,
            self.r(reg),
            offset,
            len,
            self.sh.arch.local_memory_bytes,
        )?;
        let hw = &mut self.sh.stats.cores[self.id as usize].lmem_high_water;
        *hw = (*hw).max(r.end as u64);
        Ok(r)
    }

    /// Checks that `core` may be the peer of a send/recv.
    fn peer(&self, core: u32) -> Result<(), FaultKind> {
        if core >= self.sh.arch.cores {
            return Err(FaultKind::BadCore {
                core,
                cores: self.sh.arch.cores,
            });
        }
        if core == self.id {
            return Err(FaultKind::MessageToSelf { core });
        }
        Ok(())
    }

    /// Writes element `v` of width `w` at LMem byte `at`, wrapping and counting overflow.
    #[inline]
    fn put(&mut self, at: usize, w: Width, v: i128) {
        let (stored, wrapped) = fit(v, w.bits());
        if wrapped {
            let stats = &mut self.sh.stats;
            stats.overflow_events += 1;
            if stats.overflows.len() < OVERFLOW_RECORDS {
                stats.overflows.push(OverflowRecord {
                    core: self.id,
                    pc: self.core.pc,
                    inst: *self.inst,
                    value: v,
                    bits: w.bits(),
                    stored,
                });
            }
        }
        store(&mut self.core.lmem, at, w, stored);
    }

    /// `D[i] = f(i, A[i], B[i])` for `i < len`: A (and B when given) of width `wa`, D of
    /// width `wd`, offsets per `offset`'s select bits counted in each operand's own width.
    #[allow(clippy::too_many_arguments)]
    fn elementwise(
        &mut self,
        rd: Reg,
        rs1: Reg,
        rs2: Option<Reg>,
        len: u32,
        offset: Offset,
        wa: Width,
        wd: Width,
        mut f: impl FnMut(u32, i64, i64) -> Result<i128, FaultKind>,
    ) -> Result<(), FaultKind> {
        let n = len as u64;
        let a = self.lm(
            Operand::Rs1,
            rs1,
            sel(offset.applies_to_rs1(), offset.value, wa),
            n * wa.bytes() as u64,
        )?;
        let b = match rs2 {
            Some(rs2) => Some(self.lm(
                Operand::Rs2,
                rs2,
                sel(offset.applies_to_rs2(), offset.value, wa),
                n * wa.bytes() as u64,
            )?),
            None => None,
        };
        let d = self.lm(
            Operand::Rd,
            rd,
            sel(offset.applies_to_rd(), offset.value, wd),
            n * wd.bytes() as u64,
        )?;
        let mut vals = std::mem::take(&mut self.sh.vals);
        vals.clear();
        let w = wa.bytes() as usize;
        let mem = &self.core.lmem;
        for i in 0..len as usize {
            let av = load(mem, a.start + i * w, wa);
            let bv = match &b {
                Some(b) => load(mem, b.start + i * w, wa),
                None => 0,
            };
            match f(i as u32, av, bv) {
                Ok(v) => vals.push(v),
                Err(e) => {
                    self.sh.vals = vals;
                    return Err(e);
                }
            }
        }
        self.sh.rec.lmem(&self.core.lmem, d.clone());
        for (i, &v) in vals.iter().enumerate() {
            self.put(d.start + i * wd.bytes() as usize, wd, v);
        }
        self.sh.vals = vals;
        Ok(())
    }

    /// `vrsu` / `vrsl`: when the byte width grows, source and destination must not overlap.
    fn resize_overlap_check(
        &mut self,
        rd: Reg,
        rs1: Reg,
        len: u32,
        offset: Offset,
    ) -> Result<(), FaultKind> {
        let (ib, ob) = (self.core.ibiw, self.core.obiw);
        if ob.bytes() <= ib.bytes() {
            return Ok(());
        }
        let size = self.sh.arch.local_memory_bytes;
        let n = len as u64;
        let a = lmem_range(
            Operand::Rs1,
            self.r(rs1),
            sel(offset.applies_to_rs1(), offset.value, ib),
            n * ib.bytes() as u64,
            size,
        )?;
        let d = lmem_range(
            Operand::Rd,
            self.r(rd),
            sel(offset.applies_to_rd(), offset.value, ob),
            n * ob.bytes() as u64,
            size,
        )?;
        if overlaps(&a, &d) {
            return Err(FaultKind::ResizeOverlap {
                src: a.start as i64,
                src_len: a.len() as u64,
                dst: d.start as i64,
                dst_len: d.len() as u64,
                ibyw: ib.bytes(),
                obyw: ob.bytes(),
            });
        }
        Ok(())
    }
}

/// The offset in bytes for one operand: `value · bytes(w)` when its select bit is set.
#[inline]
fn sel(selected: bool, value: i32, w: Width) -> i64 {
    if selected {
        value as i64 * w.bytes() as i64
    } else {
        0
    }
}

/// The byte offset of the last of `len` (≥ 1) strided elements, saturating (a saturated
/// value is far outside any memory, so the range check reports it).
#[inline]
fn span(first: i64, len: u32, stride: i64) -> i64 {
    (len as i64 - 1)
        .saturating_mul(stride)
        .saturating_add(first)
}

/// `[min, max]` of a signed `w`-bit number.
fn signed_range(w: Width) -> (i64, i64) {
    let b = w.bits();
    (-(1i64 << (b - 1)), (1i64 << (b - 1)) - 1)
}

/// Fixed point with scale `2^F`: `round(f(a / 2^F) · 2^F)`, half away from zero.
fn fixed(a: i64, scale: f64, f: impl Fn(f64) -> f64) -> i128 {
    (f(a as f64 / scale) * scale).round() as i128
}
