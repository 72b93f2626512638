//! Trace mode: for every executed instruction, the registers and memory bytes it changed.
//!
//! [`TraceRecorder`] is an [`Observer`]: it saves the old contents of every range an
//! instruction is about to write (memory events arrive before the write), and when the
//! instruction retires it keeps only the bytes that actually changed, as runs.

use serde::Serialize;

use super::observe::{Bytes, Event, Observer, Site, Space, View};
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

/// Records a [`Trace`] from a run's events.
#[derive(Default)]
pub struct TraceRecorder {
    trace: Trace,
    /// The instruction being recorded and what it has changed so far.
    at: Option<(u32, u32)>,
    regs: Vec<RegChange>,
    widths: Option<(u32, u32)>,
    events: Vec<EventChange>,
    /// Old contents of the ranges about to be written.
    saved: Vec<(Bytes, Vec<u8>)>,
}

impl TraceRecorder {
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    pub fn into_trace(self) -> Trace {
        self.trace
    }

    /// Saves the old contents of `dst`, extending the previous saved range when `dst`
    /// directly follows it (a gather writes its destination element by element).
    fn save(&mut self, dst: Bytes, view: &View<'_>) {
        let Some(old) = view.read(dst) else { return };
        if let Some((last, bytes)) = self.saved.last_mut() {
            if last.space == dst.space && last.end() == dst.start as u64 {
                last.len += dst.len;
                bytes.extend_from_slice(&old);
                return;
            }
        }
        self.saved.push((dst, old));
    }

    fn retire(&mut self, at: &Site, view: &View<'_>) {
        let mut lmem = Vec::new();
        let mut gmem = Vec::new();
        for (dst, old) in self.saved.drain(..) {
            let new = view.read(dst).unwrap_or_default();
            let out = match dst.space {
                Space::Gmem => &mut gmem,
                Space::Lmem(_) => &mut lmem,
            };
            diff(dst.start, &old, &new, out);
        }
        self.regs.sort_by_key(|c| c.reg);
        self.trace.entries.push(TraceEntry {
            core: at.core,
            pc: at.pc,
            inst: at.inst,
            regs: std::mem::take(&mut self.regs),
            widths: self.widths.take(),
            events: std::mem::take(&mut self.events),
            lmem,
            gmem,
        });
        self.at = None;
    }
}

impl Observer for TraceRecorder {
    fn event(&mut self, at: &Site, event: &Event<'_>, view: &View<'_>) {
        if self.at != Some((at.core, at.pc)) {
            // Whatever was pending belongs to an attempt that did not retire (a posted send).
            self.at = Some((at.core, at.pc));
            self.regs.clear();
            self.widths = None;
            self.events.clear();
            self.saved.clear();
        }
        match *event {
            Event::RegWrite { reg, old, new } if old != new => self.regs.push(RegChange {
                reg: reg.index() as u8,
                old,
                new,
            }),
            Event::SetWidths { old, new } if old != new => {
                self.widths = Some((new.0.bits(), new.1.bits()))
            }
            Event::Sync { target, event, old } => self.events.push(EventChange {
                core: target,
                event,
                old,
                new: old.wrapping_add(1),
            }),
            Event::Wait { event, value } if value != 0 => self.events.push(EventChange {
                core: at.core,
                event,
                old: value,
                new: 0,
            }),
            Event::Retire => self.retire(at, view),
            _ => {
                if let Some(dst) = event.writes() {
                    self.save(dst, view);
                }
            }
        }
    }
}

/// The runs of bytes where `old` and `new` differ, as changes starting at `addr`.
fn diff(addr: u32, old: &[u8], new: &[u8], out: &mut Vec<MemChange>) {
    let n = old.len().min(new.len());
    let mut i = 0;
    while i < n {
        if old[i] == new[i] {
            i += 1;
            continue;
        }
        let start = i;
        while i < n && old[i] != new[i] {
            i += 1;
        }
        out.push(MemChange {
            addr: addr + start as u32,
            old: old[start..i].to_vec(),
            new: new[start..i].to_vec(),
        });
    }
}
