//! Observing a run: the events every instruction produces, and the [`Observer`] trait that
//! consumes them.
//!
//! Everything that wants to know *what a run did* rather than only how it ended sits on this
//! one stream: the trace recorder ([`TraceRecorder`](super::TraceRecorder)), the race and
//! uninitialized-read checks, a triage slicer ("which instruction last wrote this byte, and
//! what did that instruction read?"), provenance tracking ("this local-memory byte came from
//! global address A / immediate V / the output of instruction I"). Per-byte consumers keep
//! their state in a [`ShadowMemory`](super::ShadowMemory).
//!
//! # The event stream
//!
//! Each executed instruction produces, in order:
//! 1. [`Event::RegRead`] for every register it read (once per register);
//! 2. its memory and synchronisation events: what it read, what it wrote and *how* (a copy,
//!    a constant fill, a computation), a message it received, an event register it changed;
//! 3. [`Event::RegWrite`] / [`Event::SetWidths`] for the register state it changed;
//! 4. [`Event::Retire`] once it completed.
//!
//! Memory events are delivered *before* the bytes change, so an observer may look at the old
//! contents through the [`View`]; everything an instruction writes is visible by its `Retire`.
//! A memory range in an event is never empty: an instruction that moves zero bytes produces no
//! memory event. Attempts that block produce no events at all. A `send` is special: it *posts*
//! its message (a [`Event::Read`] of the bytes, then no `Retire`), the matching `recv` produces
//! [`Event::Receive`] on the receiving core, and the `send` retires afterwards.
//!
//! # Happens-before
//!
//! Cores run asynchronously; the only orderings between them are:
//! - program start: every host write ([`RunStart::host_writes`]) precedes every instruction;
//! - a `send` and its matching `recv`, in both directions (the send is synchronous: the
//!   sender resumes only after the receiver has the data). [`Event::Receive`] marks that
//!   rendezvous; the sender executes nothing in between;
//! - every `sync` that added to an event register precedes the `wait` that consumes the
//!   count (resets the register): [`Event::Sync`] and [`Event::Wait`].
//!
//! # Cost
//!
//! The interpreter's step is compiled twice: once with no observer (every event site compiles
//! to nothing, so an unobserved run costs what it cost before events existed) and once that
//! delivers events through `dyn Observer`.

pub use super::bytes::{Bytes, Space};
use super::fault::Fault;
use super::memory::GMem;
use crate::inst::{Inst, Reg, Width};

/// The instruction an event belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    pub core: u32,
    /// Index of the instruction in its core's stream.
    pub pc: u32,
    pub inst: Inst,
}

/// How the bytes of a computed destination depend on its sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lanes {
    /// Every destination byte may depend on every source byte (`mvmul`, `vvdmul`, `vavg`).
    All,
    /// Element-wise over `n` elements: the destination and each source split into `n` equal
    /// elements, and element `i` of the destination depends only on element `i` of each
    /// source (`vvadd`, `vrelu`, …).
    Elementwise(u32),
}

/// One thing an instruction did. See the [module documentation](self) for the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// The instruction read a general register (an address, a stride, a value, a bound).
    RegRead { reg: Reg, value: i32 },
    /// The instruction wrote a general register.
    RegWrite { reg: Reg, old: i32, new: i32 },
    /// `setbw` set the core's element widths, `(ibiw, obiw)`.
    SetWidths {
        old: (Width, Width),
        new: (Width, Width),
    },
    /// Bytes read into something that is not memory: a register (`sld`), or a message a
    /// `send` posts (they arrive with the matching [`Event::Receive`]).
    Read { src: Bytes },
    /// `dst` receives the bytes of `srcs`, concatenated in order, unchanged (`ld`, `st`,
    /// `lmv`; `vmv` with one source per gathered element).
    Copy { srcs: &'a [Bytes], dst: Bytes },
    /// Every byte of `dst` is set to `value` (`lldi`).
    Fill { dst: Bytes, value: u8 },
    /// `dst` is computed from `srcs` (and from the crossbar's fixed weights for `mvmul`).
    Compute {
        srcs: &'a [Bytes],
        dst: Bytes,
        lanes: Lanes,
    },
    /// A `recv` took the message that core `from` posted with its `send` at `from_pc`: `dst`
    /// (the receiver's local memory) receives the bytes `src` of the sender's local memory,
    /// which the send read when it posted them (and which cannot change while the sender
    /// waits). A synchronisation in both directions between the two cores.
    Receive {
        from: u32,
        from_pc: u32,
        src: Bytes,
        dst: Bytes,
    },
    /// `sync`: event register `event` of core `target` went from `old` to `old + 1`
    /// (wrapping). Ordered before the `wait` on `target` that consumes it.
    Sync { target: u32, event: u8, old: i32 },
    /// `wait`: the executing core's event register `event` held `value`, the count of the
    /// `sync`s it consumes, and is reset to 0.
    Wait { event: u8, value: i32 },
    /// The instruction completed; the core moves to its next instruction.
    Retire,
}

impl Event<'_> {
    /// The memory this event reads. A [`Event::Receive`] reads nothing: its source bytes were
    /// read when the `send` posted them (its [`Event::Read`]).
    pub fn reads(&self) -> &[Bytes] {
        match self {
            Event::Read { src } => std::slice::from_ref(src),
            Event::Copy { srcs, .. } | Event::Compute { srcs, .. } => srcs,
            _ => &[],
        }
    }

    /// The memory this event writes.
    pub fn writes(&self) -> Option<Bytes> {
        match *self {
            Event::Copy { dst, .. }
            | Event::Fill { dst, .. }
            | Event::Compute { dst, .. }
            | Event::Receive { dst, .. } => Some(dst),
            _ => None,
        }
    }
}

/// What an observer learns when the run begins.
#[derive(Clone, Copy, Debug)]
pub struct RunStart<'a> {
    pub cores: u32,
    pub local_memory_bytes: u32,
    /// Everything the host wrote before the run (`Machine::write_gmem` / `write_lmem`:
    /// inputs, constants, preloads), in order. It all happens before any instruction.
    pub host_writes: &'a [Bytes],
}

/// Read access to the machine while an event is delivered: the executing core's registers
/// and local memory, and the global memory. Memory events arrive before their bytes change.
pub struct View<'a> {
    pub(crate) core: u32,
    pub(crate) regs: &'a [i32; 32],
    pub(crate) lmem: &'a [u8],
    pub(crate) gmem: &'a GMem,
}

impl View<'_> {
    /// The executing core.
    pub fn core(&self) -> u32 {
        self.core
    }

    /// The executing core's general registers.
    pub fn regs(&self) -> &[i32; 32] {
        self.regs
    }

    /// The executing core's local memory as far as the run has touched it: every byte past
    /// the end of this slice is zero (local memory grows on demand; see [`View::read`]).
    pub fn lmem(&self) -> &[u8] {
        self.lmem
    }

    /// The current contents of `bytes`; `None` for another core's local memory.
    pub fn read(&self, bytes: Bytes) -> Option<Vec<u8>> {
        match bytes.space {
            Space::Gmem => {
                let mut out = vec![0; bytes.len as usize];
                self.gmem.read(bytes.start, &mut out);
                Some(out)
            }
            Space::Lmem(c) if c == self.core => {
                // Bytes past what the run has touched are zero, as at reset.
                let mut out = vec![0; bytes.len as usize];
                let start = (bytes.start as usize).min(self.lmem.len());
                let end = (bytes.end() as usize).min(self.lmem.len());
                out[..end - start].copy_from_slice(&self.lmem[start..end]);
                Some(out)
            }
            Space::Lmem(_) => None,
        }
    }
}

/// A consumer of a run's events. Lend one to
/// [`Machine::run_observed`](super::Machine::run_observed); the machine calls it in the
/// order events happen (one global interleaving of all cores, the schedule's).
pub trait Observer {
    /// The run begins (called once, before any event).
    fn start(&mut self, _run: &RunStart<'_>) {}

    /// One event of the instruction at `at`.
    fn event(&mut self, at: &Site, event: &Event<'_>, view: &View<'_>);

    /// A fault that ends the run now (e.g. a check in strict mode found something). Polled
    /// after every instruction that made progress, so the fault's instruction has executed.
    fn stop(&mut self) -> Option<Fault> {
        None
    }
}

impl<O: Observer + ?Sized> Observer for &mut O {
    fn start(&mut self, run: &RunStart<'_>) {
        (**self).start(run)
    }

    fn event(&mut self, at: &Site, event: &Event<'_>, view: &View<'_>) {
        (**self).event(at, event, view)
    }

    fn stop(&mut self) -> Option<Fault> {
        (**self).stop()
    }
}

/// Where the interpreter's step sends events. Two implementations: [`Quiet`] (no observer:
/// every call compiles away) and [`Fan`] (delivers to observers).
pub(crate) trait Sink {
    /// Whether events are delivered at all; event sites that need work to build their
    /// event test it first.
    const ON: bool;

    fn event(&mut self, at: &Site, event: &Event<'_>, view: &View<'_>);

    fn stop(&mut self) -> Option<Fault>;
}

/// No observer.
pub(crate) struct Quiet;

impl Sink for Quiet {
    const ON: bool = false;

    #[inline(always)]
    fn event(&mut self, _: &Site, _: &Event<'_>, _: &View<'_>) {}

    #[inline(always)]
    fn stop(&mut self) -> Option<Fault> {
        None
    }
}

/// Observers, each receiving every event in turn.
pub(crate) struct Fan<'a> {
    pub observers: Vec<&'a mut dyn Observer>,
}

impl Sink for Fan<'_> {
    const ON: bool = true;

    fn event(&mut self, at: &Site, event: &Event<'_>, view: &View<'_>) {
        for o in &mut self.observers {
            o.event(at, event, view);
        }
    }

    fn stop(&mut self) -> Option<Fault> {
        self.observers.iter_mut().find_map(|o| o.stop())
    }
}
