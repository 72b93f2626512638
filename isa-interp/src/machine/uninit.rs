//! The uninitialized-read check: an [`Observer`] that reports instructions reading memory
//! nothing wrote.
//!
//! # What counts as initialized
//!
//! A byte is initialized once the host wrote it before the run ([`RunStart::host_writes`]:
//! the case input and the io manifest's constants, `--gmem` preloads, test set-up) or an
//! instruction wrote it (`ld`, `st`, `lmv`, `vmv`, `lldi`, a computed destination, a `recv`),
//! whatever the written value was made from. Everything else is not, although the ISA defines
//! memory as zero at reset: a compiler that means zeros writes them (`lldi`, a constant
//! segment), and a read of never-written bytes is how a forgotten hand-off (a missing
//! constant, a wrong slot address, a partial sum read before it was stored) shows up, even
//! when zero happens to be the right value. Crossbar cells are not memory: `mvmul` reads its
//! weights from the crossbar export, which is initialized by construction.
//!
//! A read is what [`Event::reads`] names (`ld`/`st`/`lmv`/`vmv` sources, vector and `mvmul`
//! operands, `sld`, the bytes a `send` posts). Each instruction that reads uninitialized
//! bytes is reported once, with the first uninitialized range of its first such source; the
//! bytes it writes become initialized (the report is at the first use, not propagated).

use super::bytes::Bytes;
use super::observe::{Event, Observer, RunStart, Site, View};
use super::shadow::ShadowMemory;
use crate::inst::Inst;

/// An instruction that read bytes nothing wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UninitRead {
    pub core: u32,
    pub pc: u32,
    pub inst: Inst,
    /// The first run of uninitialized bytes it read.
    pub bytes: Bytes,
}

impl std::fmt::Display for UninitRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "uninitialized read of {}: core {} pc {} ({}) reads bytes nothing wrote",
            self.bytes, self.core, self.pc, self.inst
        )
    }
}

/// How many uninitialized reads are kept in full (all are counted).
pub const KEPT_UNINIT: usize = 16;

/// The check. Lend it to [`Machine::run_observed`](super::Machine::run_observed), then read
/// [`reads`](Self::reads) and [`count`](Self::count).
pub struct UninitCheck {
    /// `true`: initialized.
    shadow: ShadowMemory<bool>,
    reads: Vec<UninitRead>,
    count: u64,
    /// The (core, pc) of the last report: an instruction is reported once.
    last: Option<(u32, u32)>,
}

impl Default for UninitCheck {
    fn default() -> Self {
        UninitCheck {
            shadow: ShadowMemory::new(0, 0),
            reads: Vec::new(),
            count: 0,
            last: None,
        }
    }
}

impl UninitCheck {
    /// The first [`KEPT_UNINIT`] reports, in run order.
    pub fn reads(&self) -> &[UninitRead] {
        &self.reads
    }

    /// How many instructions read uninitialized bytes.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The first run of uninitialized bytes in `src`, if any.
    fn first_gap(&self, src: Bytes) -> Option<Bytes> {
        let mut gap: Option<(u64, u64)> = None;
        let mut done = false;
        self.shadow.chunks(src, |addr, init| {
            if done {
                return;
            }
            for (i, &ok) in init.iter().enumerate() {
                let a = addr as u64 + i as u64;
                match (&mut gap, ok) {
                    (None, false) => gap = Some((a, a + 1)),
                    (Some(g), false) => g.1 = a + 1,
                    (Some(_), true) => {
                        done = true;
                        return;
                    }
                    (None, true) => {}
                }
            }
        });
        gap.map(|(s, e)| Bytes {
            space: src.space,
            start: s as u32,
            len: (e - s) as u32,
        })
    }
}

impl Observer for UninitCheck {
    fn start(&mut self, run: &RunStart<'_>) {
        self.shadow = ShadowMemory::new(run.cores, run.local_memory_bytes);
        for &b in run.host_writes {
            self.shadow.fill(b, true);
        }
    }

    fn event(&mut self, at: &Site, event: &Event<'_>, _: &View<'_>) {
        if self.last != Some((at.core, at.pc)) {
            if let Some(bytes) = event.reads().iter().find_map(|&s| self.first_gap(s)) {
                self.last = Some((at.core, at.pc));
                self.count += 1;
                if self.reads.len() < KEPT_UNINIT {
                    self.reads.push(UninitRead {
                        core: at.core,
                        pc: at.pc,
                        inst: at.inst,
                        bytes,
                    });
                }
            }
        }
        if let Some(dst) = event.writes() {
            self.shadow.fill(dst, true);
        }
    }
}
