//! Vector instructions over local memory: element-wise (`vvadd` … `vrsl`, `vrelu`, `vtanh`,
//! `vsigm`), reducing (`vvdmul`, `vavg`) and the strided gather `vmv`.

use super::super::core::{sel, Exec, Step};
use super::super::fault::{FaultKind, Operand};
use super::super::memory::{lmem_range, load, overlaps};
use super::super::observe::{Bytes, Event, Lanes, Sink, Space};
use crate::inst::{BinVecOp, Offset, Reg, UnVecOp, Width};

/// The vector ops with two sources (`regs` = `[rd, rs1, rs2]`). For `vrsu` / `vrsl`, `rs2`
/// holds the bound (a value), and `vvdmul` reduces to one element.
pub(super) fn binary<O: Sink>(
    x: &mut Exec<'_, O>,
    op: BinVecOp,
    regs: [Reg; 3],
    len: u32,
    offset: Offset,
) -> Result<Step, FaultKind> {
    let [rd, rs1, rs2] = regs;
    let (ib, ob) = (x.core.ibiw, x.core.obiw);
    let ops = Operands {
        rd,
        rs1,
        rs2: Some(rs2),
        len,
        offset,
    };
    match op {
        BinVecOp::Vvadd => elementwise(x, ops, ib, ib, |_, a, b| Ok(a as i128 + b as i128)),
        BinVecOp::Vvsub => elementwise(x, ops, ib, ib, |_, a, b| Ok(a as i128 - b as i128)),
        BinVecOp::Vvmul => elementwise(x, ops, ib, ob, |_, a, b| Ok(a as i128 * b as i128)),
        BinVecOp::Vvmax => elementwise(x, ops, ib, ib, |_, a, b| Ok(a.max(b) as i128)),
        BinVecOp::Vvsll => elementwise(x, ops, ib, ob, |i, a, b| match b {
            _ if b < 0 => Err(FaultKind::NegativeShift {
                index: i,
                amount: b,
            }),
            _ if b >= 64 => Ok(0),
            _ => Ok((a as i128) << b),
        }),
        BinVecOp::Vvsra => elementwise(x, ops, ib, ob, |i, a, b| match b {
            _ if b < 0 => Err(FaultKind::NegativeShift {
                index: i,
                amount: b,
            }),
            _ => Ok((a >> b.min(63)) as i128),
        }),
        BinVecOp::Vvdmul => vvdmul(x, ops),
        BinVecOp::Vrsu => clamp(x, ops, rs2, i64::min),
        BinVecOp::Vrsl => clamp(x, ops, rs2, i64::max),
    }
}

/// The vector ops with one source.
pub(super) fn unary<O: Sink>(
    x: &mut Exec<'_, O>,
    op: UnVecOp,
    rd: Reg,
    rs1: Reg,
    len: u32,
    offset: Offset,
) -> Result<Step, FaultKind> {
    let (ib, ob) = (x.core.ibiw, x.core.obiw);
    let ops = Operands {
        rd,
        rs1,
        rs2: None,
        len,
        offset,
    };
    let scale = 2f64.powi(x.sh.arch.frac_bits as i32);
    match op {
        UnVecOp::Vrelu => elementwise(x, ops, ib, ib, |_, a, _| Ok(a.max(0) as i128)),
        UnVecOp::Vtanh => elementwise(x, ops, ib, ob, |_, a, _| Ok(fixed(a, scale, f64::tanh))),
        UnVecOp::Vsigm => elementwise(x, ops, ib, ob, |_, a, _| {
            Ok(fixed(a, scale, |v| 1.0 / (1.0 + (-v).exp())))
        }),
    }
}

/// One element at `rd` (obiw, no offset) = `Σ A[i]·B[i]` (ibiw).
fn vvdmul<O: Sink>(x: &mut Exec<'_, O>, ops: Operands) -> Result<Step, FaultKind> {
    let (ib, ob) = (x.core.ibiw, x.core.obiw);
    let Operands {
        rd,
        rs1,
        rs2,
        len,
        offset,
    } = ops;
    let n = len as u64 * ib.bytes() as u64;
    let a = x.lm(
        Operand::Rs1,
        rs1,
        sel(offset.applies_to_rs1(), offset.value, ib),
        n,
    )?;
    let b = match rs2 {
        Some(rs2) => x.lm(
            Operand::Rs2,
            rs2,
            sel(offset.applies_to_rs2(), offset.value, ib),
            n,
        )?,
        None => 0..0,
    };
    let d = x.lm(Operand::Rd, rd, 0, ob.bytes() as u64)?;
    let w = ib.bytes() as usize;
    let sum: i128 = (0..len as usize)
        .map(|i| {
            load(&x.core.lmem, a.start + i * w, ib) as i128
                * load(&x.core.lmem, b.start + i * w, ib) as i128
        })
        .sum();
    x.emit_compute(&[&a, &b], &d, Lanes::All);
    x.put(d.start, ob, sum);
    Ok(Step::Done)
}

/// One element at `rd` (obiw) = the sum of `len` elements from `rs1 + offset·ibyw` with a
/// stride of `rs2` elements, divided by `len` (truncating); `len = 0` is a fault.
pub(super) fn vavg<O: Sink>(
    x: &mut Exec<'_, O>,
    regs: [Reg; 3],
    len: u32,
    offset: i32,
) -> Result<Step, FaultKind> {
    let [rd, rs1, rs2] = regs;
    let (ib, ob) = (x.core.ibiw, x.core.obiw);
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
            .map(|k| load(&x.core.lmem, (first.start as i64 + k * stride) as usize, ib) as i128)
            .sum()
    };
    if O::ON {
        let count = if stride == 0 { 1 } else { len };
        let srcs = strided(x, first.start, w, count, stride);
        let dst = x.local(&d);
        if let Some(dst) = dst {
            x.emit(&Event::Compute {
                srcs: &srcs,
                dst,
                lanes: Lanes::All,
            });
        }
        x.sh.spans = srcs;
    }
    x.put(d.start, ob, sum / len as i128);
    Ok(Step::Done)
}

/// Gathers `len` elements (ibiw) from `rs1` with a stride of `rs2` elements into a contiguous
/// vector at `rd`. A source element overlapping the destination is a fault.
pub(super) fn vmv<O: Sink>(
    x: &mut Exec<'_, O>,
    regs: [Reg; 3],
    len: u32,
) -> Result<Step, FaultKind> {
    let [rd, rs1, rs2] = regs;
    let ib = x.core.ibiw;
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
    if O::ON && len > 0 {
        let srcs = strided(x, base as usize, w, len, stride);
        if let Some(dst) = x.local(&d) {
            x.emit(&Event::Copy { srcs: &srcs, dst });
        }
        x.sh.spans = srcs;
    }
    for k in 0..len as i64 {
        let v = load(&x.core.lmem, (base + k * stride) as usize, ib);
        x.put(d.start + k as usize * w as usize, ib, v as i128);
    }
    Ok(Step::Done)
}

/// The register operands and length of a vector op (`rs2` absent for one source).
#[derive(Clone, Copy)]
struct Operands {
    rd: Reg,
    rs1: Reg,
    rs2: Option<Reg>,
    len: u32,
    offset: Offset,
}

/// `D[i] = f(i, A[i], B[i])` for `i < len`: A (and B when given) of width `wa`, D of width
/// `wd`, offsets per `offset`'s select bits counted in each operand's own width. All values are
/// computed (and may fault) before any is written.
fn elementwise<O: Sink>(
    x: &mut Exec<'_, O>,
    ops: Operands,
    wa: Width,
    wd: Width,
    mut f: impl FnMut(u32, i64, i64) -> Result<i128, FaultKind>,
) -> Result<Step, FaultKind> {
    let Operands {
        rd,
        rs1,
        rs2,
        len,
        offset,
    } = ops;
    let n = len as u64;
    let a = x.lm(
        Operand::Rs1,
        rs1,
        sel(offset.applies_to_rs1(), offset.value, wa),
        n * wa.bytes() as u64,
    )?;
    let b = match rs2 {
        Some(rs2) => Some(x.lm(
            Operand::Rs2,
            rs2,
            sel(offset.applies_to_rs2(), offset.value, wa),
            n * wa.bytes() as u64,
        )?),
        None => None,
    };
    let d = x.lm(
        Operand::Rd,
        rd,
        sel(offset.applies_to_rd(), offset.value, wd),
        n * wd.bytes() as u64,
    )?;
    let mut vals = std::mem::take(&mut x.sh.vals);
    vals.clear();
    let w = wa.bytes() as usize;
    let mem = &x.core.lmem;
    for i in 0..len as usize {
        let av = load(mem, a.start + i * w, wa);
        let bv = match &b {
            Some(b) => load(mem, b.start + i * w, wa),
            None => 0,
        };
        match f(i as u32, av, bv) {
            Ok(v) => vals.push(v),
            Err(e) => {
                x.sh.vals = vals;
                return Err(e);
            }
        }
    }
    let none = 0..0;
    x.emit_compute(
        &[&a, b.as_ref().unwrap_or(&none)],
        &d,
        Lanes::Elementwise(len),
    );
    for (i, &v) in vals.iter().enumerate() {
        x.put(d.start + i * wd.bytes() as usize, wd, v);
    }
    x.sh.vals = vals;
    Ok(Step::Done)
}

/// `vrsu` / `vrsl`: each element of `rs1` bounded by the value in register `rs2` (`limit`
/// is `min` for an upper bound, `max` for a lower one), written at the output width.
fn clamp<O: Sink>(
    x: &mut Exec<'_, O>,
    ops: Operands,
    rs2: Reg,
    limit: fn(i64, i64) -> i64,
) -> Result<Step, FaultKind> {
    let bound = x.r(rs2) as i64;
    resize_overlap_check(x, &ops)?;
    let (ib, ob) = (x.core.ibiw, x.core.obiw);
    let ops = Operands { rs2: None, ..ops };
    elementwise(x, ops, ib, ob, |_, a, _| Ok(limit(a, bound) as i128))
}

/// `vrsu` / `vrsl`: when the byte width grows, source and destination must not overlap.
fn resize_overlap_check<O: Sink>(x: &mut Exec<'_, O>, ops: &Operands) -> Result<(), FaultKind> {
    let (ib, ob) = (x.core.ibiw, x.core.obiw);
    if ob.bytes() <= ib.bytes() {
        return Ok(());
    }
    let size = x.sh.arch.local_memory_bytes;
    let n = ops.len as u64;
    let offset = ops.offset;
    let a = lmem_range(
        Operand::Rs1,
        x.r(ops.rs1),
        sel(offset.applies_to_rs1(), offset.value, ib),
        n * ib.bytes() as u64,
        size,
    )?;
    let d = lmem_range(
        Operand::Rd,
        x.r(ops.rd),
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

/// The local ranges of `count` elements of `w` bytes starting at byte `first` with a stride
/// of `stride` bytes, in order; elements that follow each other directly share one range.
/// Reuses the shared scratch vector.
fn strided<O: Sink>(
    x: &mut Exec<'_, O>,
    first: usize,
    w: i64,
    count: u32,
    stride: i64,
) -> Vec<Bytes> {
    let mut out = std::mem::take(&mut x.sh.spans);
    out.clear();
    for k in 0..count as i64 {
        let start = (first as i64 + k * stride) as u32;
        match out.last_mut() {
            Some(last) if stride == w => last.len += w as u32,
            _ => out.push(Bytes {
                space: Space::Lmem(x.id),
                start,
                len: w as u32,
            }),
        }
    }
    out
}

/// The byte offset of the last of `len` (≥ 1) strided elements, saturating (a saturated
/// value is far outside any memory, so the range check reports it).
#[inline]
fn span(first: i64, len: u32, stride: i64) -> i64 {
    (len as i64 - 1)
        .saturating_mul(stride)
        .saturating_add(first)
}

/// Fixed point with scale `2^F`: `round(f(a / 2^F) · 2^F)`, half away from zero.
fn fixed(a: i64, scale: f64, f: impl Fn(f64) -> f64) -> i128 {
    (f(a as f64 / scale) * scale).round() as i128
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_saturates() {
        assert_eq!(span(4, 3, 2), 8);
        assert_eq!(span(0, u32::MAX, i64::MAX), i64::MAX);
    }

    #[test]
    fn fixed_rounds_half_away_from_zero() {
        assert_eq!(fixed(3, 2.0, |v| v), 3);
        assert_eq!(fixed(-3, 1.0, |v| v / 2.0), -2);
    }
}
