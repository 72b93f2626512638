//! Transfers: `ld` (global → local), `st` (local → global), `lmv` (local → local) and the
//! local memset `lldi`. Offsets count bytes.

use super::super::core::{sel, Exec, Step};
use super::super::fault::{FaultKind, Operand};
use super::super::memory::overlaps;
use super::super::observe::{Bytes, Event, Sink, Space};
use crate::inst::{MemOp, Offset, Reg, Width};

/// `ld` / `st` / `lmv` of `size` bytes; `lmv` with overlapping ranges is a fault.
pub(super) fn mem<O: Sink>(
    x: &mut Exec<'_, O>,
    op: MemOp,
    rd: Reg,
    rs1: Reg,
    size: u32,
    offset: Offset,
) -> Result<Step, FaultKind> {
    let off_d = sel(offset.applies_to_rd(), offset.value, Width::W8);
    let off_s = sel(offset.applies_to_rs1(), offset.value, Width::W8);
    let n = size as u64;
    match op {
        MemOp::Ld => {
            let d = x.lm(Operand::Rd, rd, off_d, n)?;
            let (s, len) = x.gm(Operand::Rs1, rs1, off_s, n)?;
            x.emit_copy(global(s, len), x.local(&d));
            x.sh.gmem.read(s, &mut x.core.lmem[d]);
            x.sh.gmem.touch(s, len);
        }
        MemOp::St => {
            let (d, len) = x.gm(Operand::Rd, rd, off_d, n)?;
            let s = x.lm(Operand::Rs1, rs1, off_s, n)?;
            x.emit_copy(x.local(&s), global(d, len));
            x.sh.gmem.write(d, &x.core.lmem[s]);
            x.sh.gmem.touch(d, len);
        }
        MemOp::Lmv => {
            let d = x.lm(Operand::Rd, rd, off_d, n)?;
            let s = x.lm(Operand::Rs1, rs1, off_s, n)?;
            if overlaps(&s, &d) {
                return Err(FaultKind::LmvOverlap {
                    src: s.start as i64,
                    dst: d.start as i64,
                    size,
                });
            }
            x.emit_copy(x.local(&s), x.local(&d));
            x.core.lmem.copy_within(s, d.start);
        }
    }
    Ok(Step::Done)
}

/// Sets `size` bytes at `rd + offset` to `imm`.
pub(super) fn lldi<O: Sink>(
    x: &mut Exec<'_, O>,
    rd: Reg,
    imm: u8,
    size: u32,
    offset: i32,
    from_float: bool,
) -> Result<Step, FaultKind> {
    let d = x.lm(Operand::Rd, rd, offset as i64, size as u64)?;
    if let Some(dst) = x.local(&d) {
        x.emit(&Event::Fill { dst, value: imm });
    }
    x.core.lmem[d].fill(imm);
    x.sh.stats.float_lldi += from_float as u64;
    Ok(Step::Done)
}

/// A global range as event bytes (`None` when empty).
fn global(start: u32, len: u32) -> Option<Bytes> {
    (len > 0).then_some(Bytes {
        space: Space::Gmem,
        start,
        len,
    })
}
