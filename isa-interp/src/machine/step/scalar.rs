//! Scalar instructions (registers only, and `sld`'s four bytes of global memory).

use super::super::core::{Exec, Step};
use super::super::fault::{FaultKind, Operand};
use super::super::observe::{Bytes, Event, Sink, Space};
use crate::inst::{Reg, ScalarImmOp, ScalarOp, Width};

/// `rd = imm`.
pub(super) fn sldi<O: Sink>(x: &mut Exec<'_, O>, rd: Reg, imm: i32) -> Result<Step, FaultKind> {
    x.set(rd, imm);
    Ok(Step::Done)
}

/// `rd = GMem32[rs1 + offset]`, little-endian.
pub(super) fn sld<O: Sink>(
    x: &mut Exec<'_, O>,
    rd: Reg,
    rs1: Reg,
    offset: i32,
) -> Result<Step, FaultKind> {
    let (a, n) = x.gm(Operand::Rs1, rs1, offset as i64, 4)?;
    x.emit(&Event::Read {
        src: Bytes {
            space: Space::Gmem,
            start: a,
            len: n,
        },
    });
    let mut b = [0u8; 4];
    x.sh.gmem.read(a, &mut b);
    x.sh.gmem.touch(a, n);
    x.set(rd, i32::from_le_bytes(b));
    Ok(Step::Done)
}

/// The arithmetic of the scalar ops, public so that the static analyses that follow register
/// values (the side-table alignment, the uninitialised-load check) compute what the machine does.
impl ScalarOp {
    /// `a op b`, wrapping at 32 bits.
    pub fn apply(self, a: i32, b: i32) -> i32 {
        match self {
            ScalarOp::Add => a.wrapping_add(b),
            ScalarOp::Sub => a.wrapping_sub(b),
            ScalarOp::Mul => a.wrapping_mul(b),
        }
    }
}

impl ScalarImmOp {
    /// `a op imm`, wrapping at 32 bits.
    pub fn apply(self, a: i32, imm: i32) -> i32 {
        match self {
            ScalarImmOp::Add => a.wrapping_add(imm),
            ScalarImmOp::Mul => a.wrapping_mul(imm),
        }
    }
}

/// `sadd` / `ssub` / `smul`, wrapping.
pub(super) fn scalar<O: Sink>(
    x: &mut Exec<'_, O>,
    op: ScalarOp,
    rd: Reg,
    rs1: Reg,
    rs2: Reg,
) -> Result<Step, FaultKind> {
    let (a, b) = (x.r(rs1), x.r(rs2));
    x.set(rd, op.apply(a, b));
    Ok(Step::Done)
}

/// `saddi` / `smuli`, wrapping.
pub(super) fn scalar_imm<O: Sink>(
    x: &mut Exec<'_, O>,
    op: ScalarImmOp,
    rd: Reg,
    rs1: Reg,
    imm: i32,
) -> Result<Step, FaultKind> {
    let a = x.r(rs1);
    x.set(rd, op.apply(a, imm));
    Ok(Step::Done)
}

/// Sets the core's element widths.
pub(super) fn setbw<O: Sink>(
    x: &mut Exec<'_, O>,
    ibiw: Width,
    obiw: Width,
) -> Result<Step, FaultKind> {
    x.emit(&Event::SetWidths {
        old: (x.core.ibiw, x.core.obiw),
        new: (ibiw, obiw),
    });
    x.core.ibiw = ibiw;
    x.core.obiw = obiw;
    Ok(Step::Done)
}
