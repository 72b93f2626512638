//! Register-to-register instructions: `set`, `copy`, `alu`, `alui`, `alu_int` (ima.py
//! `do_execute`). Vector forms work element by element in order, so overlapping source and
//! destination ranges behave as in the simulator.

use super::{data_memory, CoreCx, Step};
use crate::arch::DATA_MEM_START;
use crate::fixed::{self, AluError};
use crate::machine::fault::FaultKind;
use crate::machine::registers::Registers;
use crate::values::{AluOp, IntOp};

fn alu_fault(op: AluOp) -> impl Fn(AluError) -> FaultKind {
    move |error| FaultKind::Alu {
        op: op.name(),
        error,
    }
}

/// `set(d1, imm, vec)`: data memory only (ima.py asserts the destination is not a crossbar
/// register); the immediate is stored as the integer it is.
pub(super) fn set(cx: &mut CoreCx<'_>, d1: u32, imm: i64, vec: u32) -> Result<Step, FaultKind> {
    let d1 = Registers::check("d1", d1 as u64, vec)?;
    if vec > 0 {
        data_memory("d1", d1)?;
    }
    for i in 0..vec {
        cx.state.regs.set(d1 + i, Some(imm), cx.at.pc);
    }
    Ok(Step::Done)
}

/// `copy(d1, r1, vec)`: any register to any register; a word that holds nothing copies as
/// nothing (the simulator copies the empty string).
pub(super) fn copy(cx: &mut CoreCx<'_>, d1: u32, r1: u32, vec: u32) -> Result<Step, FaultKind> {
    let r1 = Registers::check("r1", r1 as u64, vec)?;
    let d1 = Registers::check("d1", d1 as u64, vec)?;
    for i in 0..vec {
        let v = cx.state.regs.get(r1 + i);
        cx.state.regs.set(d1 + i, v, cx.at.pc);
    }
    Ok(Step::Done)
}

/// The destination check of `alu`/`alui`: with `Quirks::alu_xbar_write_faults`, a
/// destination among the crossbar registers is a fault (the simulator writes the operand
/// there, or stops).
fn alu_destination(cx: &CoreCx<'_>, d1: u32, vec: u32) -> Result<u32, FaultKind> {
    let d1 = Registers::check("d1", d1 as u64, vec)?;
    if cx.options.quirks.alu_xbar_write_faults && vec > 0 && d1 < DATA_MEM_START {
        return Err(FaultKind::AluToXbarRegister { reg: d1 });
    }
    Ok(d1)
}

fn write_result(cx: &mut CoreCx<'_>, op: AluOp, reg: u32, value: i64) {
    cx.stats.count_alu(op);
    cx.stats.note_result(value);
    cx.state.regs.set(reg, Some(value), cx.at.pc);
}

/// `alu(op, d1, r1, r2, imm, vec)`: `d1+i ← r1+i op r2+i` (`r2` unread by unary operations).
pub(super) fn alu(
    cx: &mut CoreCx<'_>,
    op: AluOp,
    d1: u32,
    r1: u32,
    r2: u32,
    imm: i64,
    vec: u32,
) -> Result<Step, FaultKind> {
    let r1 = Registers::check("r1", r1 as u64, vec)?;
    let r2 = if op.is_binary() {
        Registers::check("r2", r2 as u64, vec)?
    } else {
        r2
    };
    let d1 = alu_destination(cx, d1, vec)?;
    let frac = cx.options.frac_bits;
    for i in 0..vec {
        let a = cx.state.regs.operand(r1 + i)?;
        let b = if op.is_binary() {
            cx.state.regs.operand(r2 + i)?
        } else {
            0
        };
        let out = fixed::alu(op, a, b, imm, frac).map_err(alu_fault(op))?;
        write_result(cx, op, d1 + i, out);
    }
    Ok(Step::Done)
}

/// `alui(op, d1, r1, imm, vec)`: `d1+i ← imm op r1+i`, the immediate scaled to the grid
/// (`float2fixed`, instrn_proto.py `i_alui`) and the *first* operand, as the simulator passes
/// it (`alu.propagate(self.de_val1, ex_val2, ...)`).
pub(super) fn alui(
    cx: &mut CoreCx<'_>,
    op: AluOp,
    d1: u32,
    r1: u32,
    imm: f64,
    vec: u32,
) -> Result<Step, FaultKind> {
    let r1 = Registers::check("r1", r1 as u64, vec)?;
    let d1 = alu_destination(cx, d1, vec)?;
    let frac = cx.options.frac_bits;
    let a = fixed::from_real(imm, frac).ok_or(FaultKind::Alu {
        op: op.name(),
        error: AluError::Overflow,
    })?;
    for i in 0..vec {
        let b = if op.is_binary() {
            cx.state.regs.operand(r1 + i)?
        } else {
            0
        };
        let out = fixed::alu(op, a, b, 0, frac).map_err(alu_fault(op))?;
        write_result(cx, op, d1 + i, out);
    }
    Ok(Step::Done)
}

/// `alu_int(op, d1, r1, r2)`: integers in data memory (ima.py asserts all three are there).
pub(super) fn alu_int(
    cx: &mut CoreCx<'_>,
    op: IntOp,
    d1: u32,
    r1: u32,
    r2: u32,
) -> Result<Step, FaultKind> {
    for (operand, reg) in [("d1", d1), ("r1", r1), ("r2", r2)] {
        Registers::check(operand, reg as u64, 1)?;
        data_memory(operand, reg)?;
    }
    let a = cx.state.regs.operand(r1)?;
    let b = cx.state.regs.operand(r2)?;
    let out = fixed::int_alu(op, a, b).map_err(|error| FaultKind::Alu {
        op: op.name(),
        error,
    })?;
    cx.state.regs.set(d1, Some(out), cx.at.pc);
    Ok(Step::Done)
}
