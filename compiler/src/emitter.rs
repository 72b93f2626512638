//! One core's instruction stream under construction, shared by both lowerings: a small LRU
//! cache of address registers, `setbw` only when the widths change, and one method per
//! instruction the lowerings emit.
//!
//! Addresses go through registers r0..r30 (`ld`/`st` keep their GMem address in r30 or
//! lower, as pimsim-nn needs); `sldi` loads an address that is not cached.
//!
//! The emitter also records *provenance*: the code generator names the step it is in with
//! [`Emitter::at`] (a static `stage::function` label), and every instruction emitted until
//! the next call carries that label. Only label changes are stored, and only when asked
//! for ([`crate::compile_with_provenance`]): [`crate::compile`] pays one branch per step.

use pimdiff_isa::inst::{BinVecOp, MemOp, Offset, UnVecOp};
use pimdiff_isa::{Inst, Reg, Width};

/// Registers r0..r30 hold addresses; r31 is never used.
const ADDRESS_REGS: usize = 31;
/// Marks a register holding no known value (no address is `u32::MAX`).
const EMPTY: u32 = u32::MAX;

/// One core's instruction stream under construction.
pub(crate) struct Emitter {
    pub(crate) insts: Vec<Inst>,
    /// The value each register holds, [`EMPTY`] when nothing known.
    vals: [u32; ADDRESS_REGS],
    /// Last use of each register (0: never), for LRU replacement.
    stamps: [u64; ADDRESS_REGS],
    clock: u64,
    /// `(ibiw, obiw)` in bits; the machine resets both to 8.
    bw: (u32, u32),
    /// `(first instruction, label)` of each run of instructions with the same label.
    spans: Vec<(u32, &'static str)>,
    /// Record provenance at all.
    record: bool,
}

impl Emitter {
    pub(crate) fn new(record: bool) -> Emitter {
        Emitter {
            insts: Vec::new(),
            vals: [EMPTY; ADDRESS_REGS],
            stamps: [0; ADDRESS_REGS],
            clock: 0,
            bw: (8, 8),
            spans: Vec::new(),
            record,
        }
    }

    /// The instructions emitted from now on come from `label` (`stage::function`).
    pub(crate) fn at(&mut self, label: &'static str) {
        if !self.record {
            return;
        }
        let here = self.insts.len() as u32;
        match self.spans.last_mut() {
            Some(last) if std::ptr::eq(last.1, label) => {}
            Some(last) if last.0 == here => last.1 = label,
            _ => self.spans.push((here, label)),
        }
    }

    /// The instructions and their provenance spans.
    pub(crate) fn finish(mut self) -> (Vec<Inst>, Vec<(u32, &'static str)>) {
        let len = self.insts.len() as u32;
        while self.spans.last().is_some_and(|s| s.0 == len) {
            self.spans.pop();
        }
        (self.insts, self.spans)
    }

    /// A register holding `value`, loading it with `sldi` unless cached. Replacement is
    /// least-recently-used, empty registers first (in index order), so the registers an
    /// instruction has just obtained are never evicted by its next operand.
    pub(crate) fn reg(&mut self, value: u32) -> Reg {
        debug_assert_ne!(value, EMPTY, "addresses are below 2^32 - 1");
        self.clock += 1;
        // Both scans are written without an early exit, so that they compile to a few vector
        // compares over the 31 registers: this function is the compiler's hottest (a tenth of
        // a default hunt's time). Values are distinct (a value is only loaded on a miss), so
        // the last match is the only one; the victim is the first least-recently-used.
        let hit = self.vals.iter().enumerate().fold(
            ADDRESS_REGS,
            |hit, (i, &v)| if v == value { i } else { hit },
        );
        let i = if hit < ADDRESS_REGS {
            hit
        } else {
            let mut victim = 0;
            let mut oldest = self.stamps[0];
            for (i, &stamp) in self.stamps.iter().enumerate().skip(1) {
                if stamp < oldest {
                    oldest = stamp;
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
        };
        self.stamps[i] = self.clock;
        Reg::new(i as u32).expect("index < 31")
    }

    pub(crate) fn setbw(&mut self, ibiw: u32, obiw: u32) {
        if self.bw != (ibiw, obiw) {
            self.bw = (ibiw, obiw);
            self.insts.push(Inst::Setbw {
                ibiw: Width::new(ibiw).expect("valid width"),
                obiw: Width::new(obiw).expect("valid width"),
            });
        }
    }

    pub(crate) fn ld(&mut self, lmem: u32, gmem: u32, size: u32) {
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

    pub(crate) fn st(&mut self, gmem: u32, lmem: u32, size: u32) {
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

    pub(crate) fn zero(&mut self, lmem: u32, size: u32) {
        let rd = self.reg(lmem);
        self.insts.push(Inst::Lldi {
            rd,
            imm: 0,
            size,
            offset: 0,
            from_float: false,
        });
    }

    pub(crate) fn mvmul(&mut self, dst: u32, src: u32, group: u32, relu: bool) {
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
    pub(crate) fn vvadd(&mut self, dst: u32, a: u32, b: u32, len: u32) {
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

    pub(crate) fn vrelu(&mut self, dst: u32, len: u32) {
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

    pub(crate) fn send(&mut self, src: u32, core: u32, size: u32) {
        let rs1 = self.reg(src);
        self.insts.push(Inst::Send {
            rs1,
            core,
            size,
            offset: 0,
        });
    }

    pub(crate) fn recv(&mut self, dst: u32, core: u32, size: u32) {
        let rd = self.reg(dst);
        self.insts.push(Inst::Recv {
            rd,
            core,
            size,
            offset: 0,
        });
    }

    /// `wait ev, value` on event register `event`.
    pub(crate) fn wait(&mut self, event: u32, value: i32) {
        self.insts.push(Inst::Wait {
            event: event_reg(event),
            value,
        });
    }

    /// `sync ev, core`: adds 1 to event register `event` of `core`.
    pub(crate) fn sync(&mut self, event: u32, core: u32) {
        self.insts.push(Inst::Sync {
            event: event_reg(event),
            core,
        });
    }
}

/// Event register `index` (the caller keeps it below 32).
fn event_reg(index: u32) -> Reg {
    Reg::new(index % Reg::COUNT as u32).unwrap_or_else(|| unreachable!("index below 32"))
}
