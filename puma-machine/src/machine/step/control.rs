//! Control: `beq` (ima.py, the integer ALU's `eq_chk`) and the tile's `halt` (tile.py: a
//! tile halts once all its cores halted and its send queue is empty). `jmp` and `hlt` need
//! no state and are answered in the dispatch.

use super::{data_memory, CoreCx, Step, TileCx};
use crate::machine::fault::{FaultKind, WaitingFor};
use crate::machine::registers::Registers;

/// `beq(r1, r2, imm)`: continue at `imm` when the two data-memory registers are equal.
pub(super) fn beq(cx: &mut CoreCx<'_>, r1: u32, r2: u32, imm: u32) -> Result<Step, FaultKind> {
    for (operand, reg) in [("r1", r1), ("r2", r2)] {
        Registers::check(operand, reg as u64, 1)?;
        data_memory(operand, reg)?;
    }
    let equal = cx.state.regs.operand(r1)? == cx.state.regs.operand(r2)?;
    Ok(if equal { Step::Jump(imm) } else { Step::Done })
}

/// `halt()` of a tile: waits for its cores and its send queue.
pub(super) fn tile_halt(cx: &mut TileCx<'_>) -> Step {
    let queued = cx.noc.queued(cx.at.tile) as u32;
    if cx.cores_running == 0 && queued == 0 {
        Step::Halt
    } else {
        Step::Blocked(WaitingFor::Halt {
            cores_running: cx.cores_running,
            queued_packets: queued,
        })
    }
}
