//! One core's state, the state all cores share, and [`Exec`]: the context one instruction
//! executes in, with the helpers every instruction handler uses (register access, checked
//! ranges, wrapping element writes, events).
//!
//! Conventions shared by every handler (see `step/`):
//! - register values used as addresses are read as unsigned 32-bit; offsets are added in
//!   exact (`i64`) arithmetic and a range outside its memory is a fault, never a wrap;
//! - vector instructions read all their inputs before writing any output, so an output that
//!   overlaps an input (where isa.md does not call it undefined) sees the old values;
//! - every element write goes through [`Exec::put`], which wraps the value to the destination
//!   width and counts an overflow event when that changed it;
//! - an instruction's memory events are emitted after every check that can fault or block
//!   and before its writes (the order [`observe`](super::observe) promises).

use std::ops::Range;

use super::crossbar::MvmulScratch;
use super::fault::{FaultKind, Operand, WaitingFor};
use super::memory::{fit, gmem_range, lmem_range, store, GMem};
use super::noc::Noc;
use super::observe::{Bytes, Event, Lanes, Sink, Site, Space, View};
use super::stats::{OverflowRecord, Stats, OVERFLOW_RECORDS};
use super::CellFill;
use crate::inst::{Inst, Reg, Width};
use crate::program::Arch;

/// Per-core architectural state.
pub(crate) struct Core {
    pub regs: [i32; 32],
    pub ibiw: Width,
    pub obiw: Width,
    pub pc: u32,
    /// Local memory, grown on demand up to the architecture's size: the bytes past its length
    /// are zero (as at reset). Every access is range-checked first ([`Exec::lm`]), which grows
    /// it, so no access sees the short vector. A case touches a few hundred of its 64 KiB;
    /// zeroing all of them for every core of every case was a third of a clean hunt's time.
    pub lmem: Vec<u8>,
    /// Sequence number of this core's posted `send` that has not been received yet.
    pub posted: Option<u64>,
}

impl Core {
    pub fn new() -> Core {
        Core {
            regs: [0; 32],
            ibiw: Width::W8,
            obiw: Width::W8,
            pc: 0,
            lmem: Vec::new(),
            posted: None,
        }
    }
}

impl Core {
    /// Makes local memory at least `end` bytes long (new bytes zero). `end` must be within
    /// the architecture's local memory size (checked by the caller).
    #[inline]
    pub fn grow_lmem(&mut self, end: usize) {
        if end > self.lmem.len() {
            self.lmem.resize(end, 0);
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
    /// Computed element values, before they are written.
    pub vals: Vec<i128>,
    pub mv: MvmulScratch,
    /// Source ranges of a strided read, for its event.
    pub spans: Vec<Bytes>,
}

impl Shared {
    pub fn new(arch: Arch, fill: CellFill) -> Shared {
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
            vals: Vec::new(),
            mv: MvmulScratch::default(),
            spans: Vec::new(),
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

/// The execution context of one attempt at one instruction.
pub(crate) struct Exec<'a, O: Sink> {
    pub core: &'a mut Core,
    pub id: u32,
    pub inst: &'a Inst,
    pub sh: &'a mut Shared,
    obs: &'a mut O,
    /// Registers read so far (bit per register), reported as events once the attempt emits
    /// anything or completes: a blocked attempt reports nothing.
    reads: u32,
    /// Registers already reported for this attempt.
    reported: u32,
}

impl<'a, O: Sink> Exec<'a, O> {
    pub fn new(
        core: &'a mut Core,
        id: u32,
        inst: &'a Inst,
        sh: &'a mut Shared,
        obs: &'a mut O,
    ) -> Self {
        Exec {
            core,
            id,
            inst,
            sh,
            obs,
            reads: 0,
            reported: 0,
        }
    }

    /// Reads register `reg`.
    #[inline]
    pub fn r(&mut self, reg: Reg) -> i32 {
        if O::ON {
            self.reads |= 1 << reg.index();
        }
        self.core.regs[reg.index()]
    }

    /// Writes register `reg`.
    #[inline]
    pub fn set(&mut self, reg: Reg, v: i32) {
        let old = self.core.regs[reg.index()];
        self.emit(&Event::RegWrite { reg, old, new: v });
        self.core.regs[reg.index()] = v;
    }

    /// A checked LMem range based at register `reg`, tracking the high-water mark.
    #[inline]
    pub fn lm(
        &mut self,
        operand: Operand,
        reg: Reg,
        offset: i64,
        len: u64,
    ) -> Result<Range<usize>, FaultKind> {
        let base = self.r(reg);
        let r = lmem_range(operand, base, offset, len, self.sh.arch.local_memory_bytes)?;
        let hw = &mut self.sh.stats.cores[self.id as usize].lmem_high_water;
        *hw = (*hw).max(r.end as u64);
        self.core.grow_lmem(r.end);
        Ok(r)
    }

    /// A checked GMem range based at register `reg`: `(start, len)`.
    #[inline]
    pub fn gm(
        &mut self,
        operand: Operand,
        reg: Reg,
        offset: i64,
        len: u64,
    ) -> Result<(u32, u32), FaultKind> {
        let base = self.r(reg);
        gmem_range(operand, base, offset, len)
    }

    /// Checks that `core` may be the peer of a send/recv.
    pub fn peer(&self, core: u32) -> Result<(), FaultKind> {
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
    pub fn put(&mut self, at: usize, w: Width, v: i128) {
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

    /// This core's local memory range `r` as event bytes (`None` when empty).
    #[inline]
    pub fn local(&self, r: &Range<usize>) -> Option<Bytes> {
        (!r.is_empty()).then(|| Bytes {
            space: Space::Lmem(self.id),
            start: r.start as u32,
            len: r.len() as u32,
        })
    }

    /// Delivers `event` (after the register reads not yet reported).
    #[inline(always)]
    pub fn emit(&mut self, event: &Event<'_>) {
        if O::ON {
            self.flush_reads();
            self.deliver(event);
        }
    }

    /// `dst` receives `src` unchanged (both of the same, possibly zero, length).
    #[inline(always)]
    pub fn emit_copy(&mut self, src: Option<Bytes>, dst: Option<Bytes>) {
        if let (true, Some(src), Some(dst)) = (O::ON, src, dst) {
            self.emit(&Event::Copy { srcs: &[src], dst });
        }
    }

    /// `dst` (local) is computed from the local ranges `srcs` (empty ones left out).
    #[inline(always)]
    pub fn emit_compute(&mut self, srcs: &[&Range<usize>], dst: &Range<usize>, lanes: Lanes) {
        if !O::ON {
            return;
        }
        let Some(dst) = self.local(dst) else { return };
        let mut buf = [dst; 2];
        let mut n = 0;
        for s in srcs.iter().filter_map(|s| self.local(s)) {
            buf[n] = s;
            n += 1;
        }
        self.emit(&Event::Compute {
            srcs: &buf[..n],
            dst,
            lanes,
        });
    }

    /// Reports the registers read so far; called before any other event and when an attempt
    /// completes.
    pub fn flush_reads(&mut self) {
        let mut pending = self.reads & !self.reported;
        self.reported |= pending;
        while pending != 0 {
            let i = pending.trailing_zeros();
            pending &= pending - 1;
            if let Some(reg) = Reg::new(i) {
                let value = self.core.regs[i as usize];
                self.deliver(&Event::RegRead { reg, value });
            }
        }
    }

    fn deliver(&mut self, event: &Event<'_>) {
        let site = Site {
            core: self.id,
            pc: self.core.pc,
            inst: *self.inst,
        };
        let view = View {
            core: self.id,
            regs: &self.core.regs,
            lmem: &self.core.lmem,
            gmem: &self.sh.gmem,
        };
        self.obs.event(&site, event, &view);
    }
}

/// The offset in bytes for one operand: `value · bytes(w)` when its select bit is set.
#[inline]
pub(crate) fn sel(selected: bool, value: i32, w: Width) -> i64 {
    if selected {
        value as i64 * w.bytes() as i64
    } else {
        0
    }
}
