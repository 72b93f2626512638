//! One step of one unit: the dispatch from an instruction to its handler (one module per
//! class: `transfer` for load/store, `vector` for set/copy/ALU, `matrix` for mvm, `control`
//! for jumps and halts, `tile` for the tile's send/receive/halt), and the context handlers
//! work in.
//!
//! A handler either finishes its instruction, finishes one chunk of a vector transfer, makes
//! progress inside a chunk, or reports what it waits for without changing any state. Every
//! check of an instruction's ranges, addresses and waits comes before its first write; an
//! operand fault in the middle of an element-wise vector instruction leaves the elements
//! before it written, as the simulator would have.

mod control;
mod matrix;
mod tile;
mod transfer;
mod vector;

use super::fault::{FaultKind, InstAt, Unit, WaitingFor, Writer};
use super::memory::TileMemory;
use super::noc::{Noc, Packet};
use super::registers::Registers;
use super::stats::Stats;
use super::{MachineOptions, Matrix};
use crate::isa::{CoreInst, TileInst};

/// What a step did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The instruction completed; the next one follows.
    Done,
    /// The instruction completed; continue at this pc.
    Jump(u32),
    /// The unit halted.
    Halt,
    /// One chunk of a vector transfer completed; more follow.
    Chunk,
    /// State changed inside a chunk (a receive took its packet).
    Progress,
    /// Nothing changed: the unit waits.
    Blocked(WaitingFor),
}

/// A core's state between steps.
pub(crate) struct CoreState {
    pub pc: u32,
    /// Chunks of the current vector transfer already done.
    pub chunk: u32,
    /// The tile-memory address a load or store latched at its first chunk (the simulator
    /// reads the address register once, when it decodes the instruction).
    pub base: u32,
    pub halted: bool,
    pub waiting: Option<WaitingFor>,
    pub regs: Registers,
}

/// A tile controller's state between steps.
pub(crate) struct TileUnitState {
    pub pc: u32,
    pub chunk: u32,
    pub halted: bool,
    pub waiting: Option<WaitingFor>,
    /// The packet a receive took out of the buffer, waiting for its destination to be free.
    pub latched: Option<Packet>,
}

/// What a core's handler works on.
pub(crate) struct CoreCx<'a> {
    pub at: InstAt,
    pub state: &'a mut CoreState,
    pub mem: &'a mut TileMemory,
    pub mvmus: &'a [Option<Matrix>],
    pub options: &'a MachineOptions,
    pub stats: &'a mut Stats,
}

impl CoreCx<'_> {
    /// This instruction as a writer of tile memory.
    fn writer(&self) -> Writer {
        Writer::Inst(self.at)
    }
}

/// What a tile controller's handler works on.
pub(crate) struct TileCx<'a> {
    pub at: InstAt,
    pub tiles: u32,
    pub state: &'a mut TileUnitState,
    pub mem: &'a mut TileMemory,
    pub noc: &'a mut Noc,
    pub cores_running: u32,
    pub stats: &'a mut Stats,
}

/// Executes (a step of) `inst` on a core.
pub(crate) fn core(cx: &mut CoreCx<'_>, inst: &CoreInst) -> Result<Step, FaultKind> {
    debug_assert!(matches!(cx.at.unit, Unit::Core(_)));
    match *inst {
        CoreInst::Set { d1, imm, vec } => vector::set(cx, d1, imm, vec),
        CoreInst::Copy { d1, r1, vec, .. } => vector::copy(cx, d1, r1, vec),
        CoreInst::Load {
            d1,
            r1,
            load_width,
            vec,
        } => transfer::load(cx, d1, r1, load_width, vec),
        CoreInst::Store {
            d1,
            r1,
            counter,
            store_width,
            vec,
        } => transfer::store(cx, d1, r1, counter, store_width, vec),
        CoreInst::Mvm { xb_nma, r1, r2 } => matrix::mvm(cx, xb_nma, r1, r2),
        CoreInst::Alu {
            aluop,
            d1,
            r1,
            r2,
            imm,
            vec,
        } => vector::alu(cx, aluop, d1, r1, r2, imm, vec),
        CoreInst::Alui {
            aluop,
            d1,
            r1,
            imm,
            vec,
        } => vector::alui(cx, aluop, d1, r1, imm.0, vec),
        CoreInst::AluInt { aluop, d1, r1, r2 } => vector::alu_int(cx, aluop, d1, r1, r2),
        CoreInst::Jmp { imm } => Ok(Step::Jump(imm)),
        CoreInst::Beq { r1, r2, imm } => control::beq(cx, r1, r2, imm),
        CoreInst::Hlt {} => Ok(Step::Halt),
    }
}

/// Executes (a step of) `inst` on a tile's controller.
pub(crate) fn tile(cx: &mut TileCx<'_>, inst: &TileInst) -> Result<Step, FaultKind> {
    match *inst {
        TileInst::Send {
            mem_addr,
            vtile_id,
            send_width,
            target_addr,
            vec,
        } => tile::send(cx, mem_addr, vtile_id, send_width, target_addr, vec),
        TileInst::Receive {
            mem_addr,
            vtile_id,
            receive_width,
            counter,
            vec,
        } => tile::receive(cx, mem_addr, vtile_id, receive_width, counter, vec),
        TileInst::Halt {} => Ok(control::tile_halt(cx)),
    }
}

/// `Ok` when `reg` is a data-memory register (an operand the simulator asserts is one).
fn data_memory(operand: &'static str, reg: u32) -> Result<(), FaultKind> {
    if reg < crate::arch::DATA_MEM_START {
        return Err(FaultKind::NotDataMemory { operand, reg });
    }
    Ok(())
}

/// `Done` after the last of `vec` chunks, `Chunk` before.
fn chunk_step(chunk: u32, vec: u32) -> Step {
    if chunk + 1 >= vec {
        Step::Done
    } else {
        Step::Chunk
    }
}
