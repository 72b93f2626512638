//! Provenance: where every byte of memory came from, and which instruction last wrote it.
//!
//! A localization needs to say *why* a computed value is wrong, not only that it is: an
//! `mvmul` that gathered global address 681 where it should have read 684 names a different
//! bug than one whose weights are wrong. [`Provenance`] follows every byte through copies
//! (`ld`, `st`, `lmv`, `vmv`, `send`/`recv`): a copied byte keeps its [`Origin`], a filled one
//! (`lldi`) is an immediate, a computed one is [`Origin::Computed`]. A caller may
//! [`tag`](Provenance::tag) bytes with its own meaning (e.g. "element 17 of node 3's output"),
//! and the tag then travels with the bytes as any origin does.
//!
//! It is an [`Observer`] over the interpreter's event stream with its state in a
//! [`ShadowMemory`]; it adds nothing to the step handlers.

use super::observe::{Bytes, Event, Observer, RunStart, Site, Space, View};
use super::shadow::ShadowMemory;

/// Where a byte's value came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Nothing wrote it during the run (a local byte at reset).
    #[default]
    Unknown,
    /// The global byte at this address as the run found it (preloaded by the host, or 0).
    Gmem(u32),
    /// An immediate (`lldi`).
    Imm(u8),
    /// Computed by an instruction (`mvmul`, `vvadd`, …): the writer says which.
    Computed,
    /// A caller's tag (see [`Provenance::tag`]): `(tag, index)`.
    Tag(u32, u32),
}

/// An instruction: core and index in that core's stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstAt {
    pub core: u32,
    pub pc: u32,
}

/// The state of one byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByteOrigin {
    pub origin: Origin,
    /// The instruction that last wrote the byte; `None` before any did.
    pub writer: Option<InstAt>,
}

/// Follows the origin of every byte through a run (see the module documentation).
#[derive(Default)]
pub struct Provenance {
    shadow: Option<ShadowMemory<ByteOrigin>>,
    scratch: Vec<ByteOrigin>,
}

impl Provenance {
    pub fn new() -> Self {
        Self::default()
    }

    /// The states of `bytes`, in order. A global byte no instruction wrote reads as
    /// [`Origin::Gmem`] of its own address.
    pub fn origins(&self, bytes: Bytes, out: &mut Vec<ByteOrigin>) {
        out.clear();
        let Some(shadow) = &self.shadow else {
            return;
        };
        shadow.chunks(bytes, |addr, states| {
            for (k, s) in states.iter().enumerate() {
                out.push(match (bytes.space, s.writer) {
                    (Space::Gmem, None) => ByteOrigin {
                        origin: Origin::Gmem(addr + k as u32),
                        writer: None,
                    },
                    _ => *s,
                });
            }
        });
    }

    /// Gives byte `k` of `bytes` the origin `Tag(tag, first + k)`, keeping its writer.
    pub fn tag(&mut self, bytes: Bytes, tag: u32, first: u32) {
        let Some(shadow) = &mut self.shadow else {
            return;
        };
        let mut k = first;
        shadow.chunks_mut(bytes, |_, states| {
            for s in states {
                s.origin = Origin::Tag(tag, k);
                k += 1;
            }
        });
    }

    /// `dst` receives the states of `srcs` (concatenated), written by `writer`.
    fn copy(&mut self, srcs: &[Bytes], dst: Bytes, writer: InstAt) {
        let mut states = std::mem::take(&mut self.scratch);
        let mut all = Vec::with_capacity(dst.len as usize);
        for &src in srcs {
            self.origins(src, &mut states);
            all.extend_from_slice(&states);
        }
        self.scratch = states;
        let Some(shadow) = &mut self.shadow else {
            return;
        };
        let mut from = all.into_iter();
        shadow.chunks_mut(dst, |_, s| {
            for d in s.iter_mut() {
                let origin = from.next().map(|b| b.origin).unwrap_or_default();
                *d = ByteOrigin {
                    origin,
                    writer: Some(writer),
                };
            }
        });
    }

    fn set(&mut self, dst: Bytes, origin: Origin, writer: InstAt) {
        if let Some(shadow) = &mut self.shadow {
            shadow.fill(
                dst,
                ByteOrigin {
                    origin,
                    writer: Some(writer),
                },
            );
        }
    }
}

impl Observer for Provenance {
    fn start(&mut self, run: &RunStart<'_>) {
        self.shadow = Some(ShadowMemory::new(run.cores, run.local_memory_bytes));
    }

    fn event(&mut self, at: &Site, event: &Event<'_>, _view: &View<'_>) {
        let writer = InstAt {
            core: at.core,
            pc: at.pc,
        };
        match *event {
            Event::Copy { srcs, dst } => self.copy(srcs, dst, writer),
            Event::Receive { src, dst, .. } => self.copy(&[src], dst, writer),
            Event::Fill { dst, value } => self.set(dst, Origin::Imm(value), writer),
            Event::Compute { dst, .. } => self.set(dst, Origin::Computed, writer),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{Machine, MachineOptions};
    use crate::{Arch, CrossbarExport};

    fn run(asm: &str) -> Provenance {
        let program = crate::formats::asm::parse(asm).unwrap();
        let arch = Arch::resolve(
            &program.arch,
            program.cores.len() as u32,
            &Default::default(),
        );
        let export = CrossbarExport::default();
        let mut m = Machine::new(&program, &export, arch, MachineOptions::default()).unwrap();
        m.write_gmem(100, &[1, 2, 3, 4]).unwrap();
        let mut p = Provenance::new();
        assert!(m.run_observed(&mut p).is_finished());
        p
    }

    #[test]
    fn copies_keep_origins_and_name_their_writer() {
        let p = run("core 0:\n\
             sldi r1, imm=100\n\
             sldi r2, imm=10\n\
             ld r2, r1, size=4\n\
             lldi r2, imm=0, size=2, off=1\n\
             sldi r3, imm=20\n\
             lmv r3, r2, size=4\n\
             vrelu r3, r3, len=1\n");
        let mut got = Vec::new();
        p.origins(
            Bytes {
                space: Space::Lmem(0),
                start: 20,
                len: 4,
            },
            &mut got,
        );
        let at = |pc| Some(InstAt { core: 0, pc });
        assert_eq!(
            got,
            vec![
                ByteOrigin {
                    origin: Origin::Computed,
                    writer: at(6)
                },
                ByteOrigin {
                    origin: Origin::Imm(0),
                    writer: at(5)
                },
                ByteOrigin {
                    origin: Origin::Imm(0),
                    writer: at(5)
                },
                ByteOrigin {
                    origin: Origin::Gmem(103),
                    writer: at(5)
                },
            ]
        );
    }
}
