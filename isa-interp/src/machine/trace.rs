//! Trace mode: for every executed instruction, the registers and memory bytes it changed.
//!
//! Instructions announce each memory range before writing it ([`Recorder::lmem`],
//! [`Recorder::gmem`]); the machine compares the saved bytes with the final ones after the
//! instruction and keeps only the bytes that actually changed, as runs.

use serde::Serialize;

use crate::inst::Inst;

/// Everything a traced run changed, in execution order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Trace {
    pub entries: Vec<TraceEntry>,
}

/// One executed instruction's changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceEntry {
    pub core: u32,
    pub pc: u32,
    #[serde(skip)]
    pub inst: Inst,
    pub regs: Vec<RegChange>,
    /// `ibiw` / `obiw` after the instruction, when it changed them.
    pub widths: Option<(u32, u32)>,
    pub events: Vec<EventChange>,
    /// Changed local memory bytes (of the executing core).
    pub lmem: Vec<MemChange>,
    pub gmem: Vec<MemChange>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RegChange {
    pub reg: u8,
    pub old: i32,
    pub new: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EventChange {
    pub core: u32,
    pub event: u8,
    pub old: i32,
    pub new: i32,
}

/// A run of changed bytes starting at `addr`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemChange {
    pub addr: u32,
    pub old: Vec<u8>,
    pub new: Vec<u8>,
}

/// Saved "before" images of one instruction's writes (only collected in trace mode).
#[derive(Default)]
pub(crate) struct Recorder {
    pub on: bool,
    pub lmem: Vec<(u32, Vec<u8>)>,
    pub gmem: Vec<(u32, Vec<u8>)>,
    pub events: Vec<(u32, u8, i32)>,
}

impl Recorder {
    /// Saves `mem[range]` before the instruction overwrites it.
    #[inline]
    pub fn lmem(&mut self, mem: &[u8], range: std::ops::Range<usize>) {
        if self.on && !range.is_empty() {
            self.lmem.push((range.start as u32, mem[range].to_vec()));
        }
    }

    #[inline]
    pub fn gmem(&mut self, addr: u32, old: impl FnOnce() -> Vec<u8>) {
        if self.on {
            self.gmem.push((addr, old()));
        }
    }

    #[inline]
    pub fn event(&mut self, core: u32, event: u8, old: i32) {
        if self.on {
            self.events.push((core, event, old));
        }
    }
}

/// The runs of bytes where `old` and `new` differ, as changes starting at `addr`.
pub(crate) fn diff(addr: u32, old: &[u8], new: &[u8], out: &mut Vec<MemChange>) {
    let mut i = 0;
    while i < old.len() {
        if old[i] == new[i] {
            i += 1;
            continue;
        }
        let start = i;
        while i < old.len() && old[i] != new[i] {
            i += 1;
        }
        out.push(MemChange {
            addr: addr + start as u32,
            old: old[start..i].to_vec(),
            new: new[start..i].to_vec(),
        });
    }
}

impl Recorder {
    pub fn clear(&mut self) {
        self.lmem.clear();
        self.gmem.clear();
        self.events.clear();
    }
}

/// Builds the trace entry of the instruction core `id` just completed, from the saved
/// registers and widths (`before`) and the recorder's saved memory images; clears the recorder.
pub(crate) fn entry(
    id: u32,
    inst: &Inst,
    before: ([i32; 32], crate::inst::Width, crate::inst::Width),
    core: &super::core::Core,
    sh: &mut super::core::Shared,
) -> TraceEntry {
    let (regs, ibiw, obiw) = before;
    let regs = (0..32)
        .filter(|&r| regs[r] != core.regs[r])
        .map(|r| RegChange {
            reg: r as u8,
            old: regs[r],
            new: core.regs[r],
        })
        .collect();
    let widths =
        (ibiw != core.ibiw || obiw != core.obiw).then(|| (core.ibiw.bits(), core.obiw.bits()));
    let events = sh
        .rec
        .events
        .iter()
        .map(|&(c, e, old)| EventChange {
            core: c,
            event: e,
            old,
            new: sh.events[c as usize][e as usize],
        })
        .filter(|c| c.old != c.new)
        .collect();
    let mut lmem = Vec::new();
    for (addr, old) in &sh.rec.lmem {
        let a = *addr as usize;
        diff(*addr, old, &core.lmem[a..a + old.len()], &mut lmem);
    }
    let mut gmem = Vec::new();
    for (addr, old) in &sh.rec.gmem {
        let mut new = vec![0; old.len()];
        sh.gmem.read(*addr, &mut new);
        diff(*addr, old, &new, &mut gmem);
    }
    sh.rec.clear();
    TraceEntry {
        core: id,
        pc: core.pc,
        inst: *inst,
        regs,
        widths,
        events,
        lmem,
        gmem,
    }
}
