//! The injected race classes: edits of a program that reduces through global
//! memory ([`pimdiff_compiler::Reduction::Gmem`]) that make it racy by construction. The
//! program may still give the right answer on the fixed schedule; what is broken is the
//! ordering, which the race detector (or schedule exploration) shows.
//!
//! The sites are read off the program as the GMem reduction writes it (`codegen`'s module
//! doc): a contributor `st`s its partial sums and `sync`s event register `contributor` (below
//! 16) of its owner; the owner `wait`s on that register, then `ld`s. GMem addresses are
//! followed through the `sldi` constants in registers ([`gmem_sites`]).

use pimdiff_isa::bundle::IoManifest;
use pimdiff_isa::inst::{MemOp, Offset};
use pimdiff_isa::Inst;

/// Event registers below this count contributions; from it on, acknowledgements.
const ACK_BASE: usize = 16;

/// One `ld` or `st` of a core, with its GMem byte range when the address is a known constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GmemSite {
    pub pc: usize,
    pub store: bool,
    /// `[start, end)` in GMem; `None` when the address register holds no known constant.
    pub range: Option<(u64, u64)>,
}

/// Every `ld` / `st` of `insts` with its GMem range, following `sldi` constants.
pub fn gmem_sites(insts: &[Inst]) -> Vec<GmemSite> {
    let mut regs: [Option<i64>; 32] = [None; 32];
    let mut sites = Vec::new();
    for (pc, inst) in insts.iter().enumerate() {
        match *inst {
            Inst::Sldi { rd, imm } => regs[rd.index()] = Some(imm as u32 as i64),
            Inst::Sld { rd, .. } | Inst::Scalar { rd, .. } | Inst::ScalarImm { rd, .. } => {
                regs[rd.index()] = None
            }
            _ => {
                let Some(t) = inst.gmem_transfer() else {
                    continue;
                };
                let range = regs[t.base.index()]
                    .map(|v| v + t.offset as i64)
                    .filter(|&a| a >= 0)
                    .map(|a| (a as u64, a as u64 + t.size as u64));
                sites.push(GmemSite {
                    pc,
                    store: t.store,
                    range,
                });
            }
        }
    }
    sites
}

/// The first contribution `sync` (core, pc, owner) in core order.
fn first_data_sync(cores: &[Vec<Inst>]) -> Option<(usize, usize, usize)> {
    cores.iter().enumerate().find_map(|(c, insts)| {
        insts.iter().enumerate().find_map(|(pc, inst)| match *inst {
            Inst::Sync { event, core } if event.index() < ACK_BASE => Some((c, pc, core as usize)),
            _ => None,
        })
    })
}

/// `missing-wait`: the first owner that waits for a contribution never waits for that
/// contributor (every such `wait` becomes a `nop`); its `ld`s of the contributor's slots are
/// unordered with the contributor's `st`s.
pub fn missing_wait(cores: &mut [Vec<Inst>]) -> bool {
    let site = cores.iter().enumerate().find_map(|(o, insts)| {
        insts.iter().find_map(|inst| match *inst {
            Inst::Wait { event, .. } if event.index() < ACK_BASE => Some((o, event.index())),
            _ => None,
        })
    });
    let Some((o, ev)) = site else {
        return false;
    };
    for inst in cores[o].iter_mut() {
        if matches!(*inst, Inst::Wait { event, .. } if event.index() == ev) {
            *inst = Inst::Nop;
        }
    }
    true
}

/// `early-sync`: the first contribution `sync` moves before the `st`s (and their `sldi`s)
/// it followed: the owner may load the slot before it is written.
pub fn early_sync(cores: &mut [Vec<Inst>]) -> bool {
    let Some((c, pc, _)) = first_data_sync(cores) else {
        return false;
    };
    let insts = &mut cores[c];
    let mut start = pc;
    while start > 0
        && matches!(
            insts[start - 1],
            Inst::Mem { op: MemOp::St, .. } | Inst::Sldi { .. }
        )
    {
        start -= 1;
    }
    if start == pc {
        return false;
    }
    let sync = insts.remove(pc);
    insts.insert(start, sync);
    true
}

/// `overlapping-stores`: right after its first contribution `sync`, the contributor stores
/// its partial sum once more, over the first output bytes its owner stores: two cores' `st`s
/// to the same bytes, ordered by nothing.
pub fn overlapping_stores(cores: &mut [Vec<Inst>], manifest: &IoManifest) -> bool {
    let Some((c, pc, o)) = first_data_sync(cores) else {
        return false;
    };
    if o == c || o >= cores.len() {
        return false;
    }
    let out = manifest.output.addr as u64;
    let out_end = out + manifest.output.byte_len() as u64;
    let in_output = |s: &GmemSite| s.store && s.range.is_some_and(|(a, _)| a >= out && a < out_end);
    let Some(target) = gmem_sites(&cores[o]).into_iter().find(in_output) else {
        return false;
    };
    let Some(last) = gmem_sites(&cores[c][..pc])
        .into_iter()
        .rev()
        .find(|s| s.store)
    else {
        return false;
    };
    let (Some((t0, t1)), Some((s0, s1))) = (target.range, last.range) else {
        return false;
    };
    let Inst::Mem {
        op: MemOp::St,
        rd,
        rs1,
        offset,
        ..
    } = cores[c][last.pc]
    else {
        return false;
    };
    let shift = offset.value as i64 + t0 as i64 - s0 as i64;
    let Ok(value) = i32::try_from(shift) else {
        return false;
    };
    let size = (t1 - t0).min(s1 - s0) as u32;
    cores[c].insert(
        pc + 1,
        Inst::Mem {
            op: MemOp::St,
            rd,
            rs1,
            size,
            offset: Offset {
                select: offset.select | 1,
                value,
            },
        },
    );
    true
}
