//! The semantics of every instruction, one module per class, following isa.md's sections:
//! [`scalar`] (registers only), [`matrix`] (`mvmul`), [`vector`] (element-wise and reducing
//! vector ops, `vmv`), [`transfer`] (`ld`, `st`, `lmv`, `lldi`) and [`comm`] (`send`, `recv`,
//! `wait`, `sync`). [`step`] only dispatches; the conventions all handlers share are in
//! [`Exec`](super::core::Exec)'s module.

mod comm;
mod matrix;
mod scalar;
mod transfer;
mod vector;

use super::core::{Core, Exec, Shared, Step};
use super::crossbar::CoreXbars;
use super::fault::FaultKind;
use super::observe::{Event, Sink};
use crate::inst::Inst;

/// Executes (or retries) core `id`'s current instruction `inst`, reporting its events to
/// `obs` (including [`Event::Retire`] when it completes).
pub(crate) fn step<O: Sink>(
    core: &mut Core,
    id: u32,
    inst: &Inst,
    sh: &mut Shared,
    xb: &mut CoreXbars,
    obs: &mut O,
) -> Result<Step, FaultKind> {
    let mut x = Exec::new(core, id, inst, sh, obs);
    let step = match *inst {
        Inst::Nop => Ok(Step::Done),
        Inst::Sldi { rd, imm } => scalar::sldi(&mut x, rd, imm),
        Inst::Sld { rd, rs1, offset } => scalar::sld(&mut x, rd, rs1, offset),
        Inst::Scalar { op, rd, rs1, rs2 } => scalar::scalar(&mut x, op, rd, rs1, rs2),
        Inst::ScalarImm { op, rd, rs1, imm } => scalar::scalar_imm(&mut x, op, rd, rs1, imm),
        Inst::Setbw { ibiw, obiw } => scalar::setbw(&mut x, ibiw, obiw),
        Inst::Mvmul {
            rd,
            rs1,
            mbiw,
            relu,
            group,
        } => matrix::mvmul(&mut x, xb, rd, rs1, mbiw, relu, group),
        Inst::BinVec {
            op,
            rd,
            rs1,
            rs2,
            len,
            offset,
        } => vector::binary(&mut x, op, [rd, rs1, rs2], len, offset),
        Inst::UnVec {
            op,
            rd,
            rs1,
            len,
            offset,
        } => vector::unary(&mut x, op, rd, rs1, len, offset),
        Inst::Vavg {
            rd,
            rs1,
            rs2,
            len,
            offset,
        } => vector::vavg(&mut x, [rd, rs1, rs2], len, offset),
        Inst::Vmv { rd, rs1, rs2, len } => vector::vmv(&mut x, [rd, rs1, rs2], len),
        Inst::Mem {
            op,
            rd,
            rs1,
            size,
            offset,
        } => transfer::mem(&mut x, op, rd, rs1, size, offset),
        Inst::Lldi {
            rd,
            imm,
            size,
            offset,
            from_float,
        } => transfer::lldi(&mut x, rd, imm, size, offset, from_float),
        Inst::Send {
            rs1,
            core,
            size,
            offset,
        } => comm::send(&mut x, rs1, core, size, offset),
        Inst::Recv {
            rd,
            core,
            size,
            offset,
        } => comm::recv(&mut x, rd, core, size, offset),
        Inst::Wait { event, value } => comm::wait(&mut x, event, value),
        Inst::Sync { event, core } => comm::sync(&mut x, event, core),
    }?;
    match step {
        Step::Done => x.emit(&Event::Retire),
        Step::Posted => x.flush_reads(),
        Step::Blocked(_) => {}
    }
    Ok(step)
}
