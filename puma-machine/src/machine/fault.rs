//! What stops a run: a fault (the program did something the simulator asserts against, or
//! that makes its result meaningless), a deadlock (every unit waits and nothing can wake it),
//! the step budget; and the errors of setting a machine up.
//!
//! A fault of the program under test is *data* (a [`RunOutcome`]), never a panic or an `Err`
//! of the interpreter.

use std::fmt;

use crate::arch::{REGISTERS, TILE_MEMORY_WORDS};
use crate::fixed::AluError;

/// Which unit of a tile runs an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unit {
    /// The tile's own controller (send, receive, halt).
    Tile,
    /// Core (the simulator's IMA) `0..8`.
    Core(u32),
}

/// An instruction's place: tile, unit, program counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstAt {
    pub tile: u32,
    pub unit: Unit,
    pub pc: u32,
}

impl fmt::Display for InstAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.unit {
            Unit::Tile => write!(f, "tile {} pc {}", self.tile, self.pc),
            Unit::Core(c) => write!(f, "tile {} core {} pc {}", self.tile, c, self.pc),
        }
    }
}

/// Who wrote a word of tile memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Writer {
    /// The caller, before the run (`Machine::write_input`).
    Host,
    /// An instruction (a core's store, a tile's receive).
    Inst(InstAt),
}

impl fmt::Display for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Writer::Host => f.write_str("the host"),
            Writer::Inst(at) => write!(f, "{at}"),
        }
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// Every tile halted (so every core did, and every packet left its sender).
    Finished,
    /// An instruction did something the machine stops on.
    Fault(Box<Fault>),
    /// Every unhalted unit waits and nothing can wake any of them.
    Deadlock(DeadlockReport),
    /// The step budget ran out first.
    OutOfSteps { steps: u64 },
}

impl RunOutcome {
    /// `finished`, `fault`, `deadlock` or `out-of-steps`.
    pub fn kind(&self) -> &'static str {
        match self {
            RunOutcome::Finished => "finished",
            RunOutcome::Fault(_) => "fault",
            RunOutcome::Deadlock(_) => "deadlock",
            RunOutcome::OutOfSteps { .. } => "out-of-steps",
        }
    }

    pub fn is_finished(&self) -> bool {
        matches!(self, RunOutcome::Finished)
    }

    /// The fault's kind, if the run faulted.
    pub fn fault(&self) -> Option<&FaultKind> {
        match self {
            RunOutcome::Fault(f) => Some(&f.kind),
            _ => None,
        }
    }
}

impl fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunOutcome::Finished => f.write_str("finished: every tile halted"),
            RunOutcome::Fault(fault) => write!(f, "{fault}"),
            RunOutcome::Deadlock(report) => write!(f, "{report}"),
            RunOutcome::OutOfSteps { steps } => write!(
                f,
                "out of steps: the step budget ran out after {steps} steps, before every tile halted"
            ),
        }
    }
}

/// A fault: where, the instruction as its program spells it, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub at: InstAt,
    pub text: String,
    pub kind: FaultKind,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fault at {}: {}\n  {}", self.at, self.text, self.kind)
    }
}

/// Why a run faulted. Ranges are exact (`u64`, never wrapped).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultKind {
    /// Registers outside the core's map (`0..2560`; ima.py asserts on every access).
    #[error("registers [{start}, {start} + {len}) of operand {operand} leave the register map 0..{REGISTERS}")]
    RegisterRange {
        operand: &'static str,
        start: u64,
        len: u64,
    },
    /// An operand the simulator reads from, or a destination it writes to, data memory only
    /// (load/store addresses, `set`, `alu_int`, `beq`; ima.py asserts `>= datamem_off`).
    #[error("register {reg} of operand {operand} is not a data-memory register (512 and up)")]
    NotDataMemory { operand: &'static str, reg: u32 },
    /// A register read as an operand holds no value: never written, or copied from a word
    /// that held none (`written` tells which). The simulator stops on the empty string.
    #[error("register {reg} holds no value ({})", if *written { "it was written from a word that held none" } else { "never written" })]
    UndefinedRegister { reg: u32, written: bool },
    /// A tile-memory address held in a register is negative.
    #[error("register {reg} holds {value}, not a tile-memory address")]
    BadAddress { reg: u32, value: i64 },
    /// Tile-memory words outside `0..32768`.
    #[error("tile memory [{start}, {start} + {len}) leaves the memory 0..{TILE_MEMORY_WORDS}")]
    TileMemoryRange { start: u64, len: u64 },
    /// A load or send of a tile-memory word that nothing ever wrote (found when the machine
    /// stalls on it, or at once for a load's later words).
    #[error("tile memory word {addr} is read but was never written")]
    ReadNeverWritten { addr: u32 },
    /// A load whose first word is valid reads a later word that is not (already consumed, or
    /// not yet rewritten): the simulator checks only the first word and reads stale data.
    #[error("tile memory word {addr} is read while invalid (its reads are used up or it is not yet rewritten)")]
    ReadInvalidWord { addr: u32 },
    /// A store whose first word is free overwrites a later word still valid (with reads
    /// left): the simulator checks only the first word.
    #[error("tile memory word {addr} is overwritten while still valid with {counter} reads left")]
    StoreOverValidWord { addr: u32, counter: i64 },
    /// A read of a valid word whose counter is already 0 (more reads than its writer
    /// announced).
    #[error("tile memory word {addr} is read with its counter at {counter}")]
    CounterUnderflow { addr: u32, counter: i64 },
    /// The ALU has no result (an operation the simulator lacks, an overflow, ...).
    #[error("{op}: {error}")]
    Alu { op: &'static str, error: AluError },
    /// An `mvm` output does not fit in 64 bits.
    #[error("output {output} of MVMU {mvmu} does not fit in 64 bits")]
    MvmOverflow { mvmu: u32, output: u32 },
    /// An ALU result bound for a crossbar register: the simulator writes the first operand
    /// there instead (`alu`) or stops (`alui`) (ima.py `writeToXbarMem(self, dst_addr,
    /// ex_val1)`). Only with `Quirks::alu_xbar_write_faults`.
    #[error("the result goes to crossbar register {reg}, which the simulator fills with the operand instead")]
    AluToXbarRegister { reg: u32 },
    /// A send to a tile the model does not have.
    #[error("target tile {target} does not exist (the model has {tiles})")]
    NoSuchTile { target: u32, tiles: u32 },
    /// A `vtile_id` beyond the receive buffer (150 entries).
    #[error("vtile_id {vtile} is beyond the {depth}-entry receive buffer")]
    VtileRange { vtile: u32, depth: u32 },
    /// A received packet whose length is not the receive's width.
    #[error("a packet of {sent} words meets a receive of {receive_width}")]
    WidthMismatch { receive_width: u32, sent: u32 },
    /// A receive that waits for a packet tagged `vtile` that nothing will send (found when
    /// the machine stalls: no such packet is on its way and no remaining send makes one).
    #[error("no send will ever deliver a packet tagged vtile_id {vtile} to this tile")]
    ReceiveWithoutSend { vtile: u32 },
    /// The program ended without a halt (the simulator waits forever).
    #[error("the program of {len} instructions ends without halting")]
    RanOffEnd { len: u32 },
}

/// What a blocked unit waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitingFor {
    /// A load: the first word of its chunk to become valid.
    LoadWord { addr: u32 },
    /// A store: the first word of its chunk to be consumed (still valid with `counter`
    /// reads left).
    StoreWord { addr: u32, counter: i64 },
    /// A send: this word of its chunk to become valid.
    SendWord { addr: u32 },
    /// A receive: a packet tagged `vtile` in the receive buffer.
    Packet { vtile: u32 },
    /// A receive: this destination word to be consumed.
    ReceiveWord { addr: u32, counter: i64 },
    /// A tile's halt: its cores to halt and its packets to leave.
    Halt {
        cores_running: u32,
        queued_packets: u32,
    },
}

impl fmt::Display for WaitingFor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitingFor::LoadWord { addr } => write!(f, "word {addr} to become valid"),
            WaitingFor::StoreWord { addr, counter } => {
                write!(f, "word {addr} to be consumed ({counter} reads left)")
            }
            WaitingFor::SendWord { addr } => write!(f, "word {addr} to become valid"),
            WaitingFor::Packet { vtile } => write!(f, "a packet tagged vtile_id {vtile}"),
            WaitingFor::ReceiveWord { addr, counter } => {
                write!(f, "word {addr} to be consumed ({counter} reads left)")
            }
            WaitingFor::Halt {
                cores_running,
                queued_packets,
            } => write!(
                f,
                "{cores_running} cores to halt and {queued_packets} packets to leave"
            ),
        }
    }
}

/// One blocked unit of a deadlock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    pub at: InstAt,
    pub text: String,
    pub waiting: WaitingFor,
}

/// A packet at the head of its sender's queue that cannot enter the receiver's buffer (the
/// entry for its `vtile` is occupied).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StuckPacket {
    pub from: u32,
    pub to: u32,
    pub vtile: u32,
    pub words: u32,
}

/// Every blocked unit (in schedule order) and every stuck packet at a deadlock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlockReport {
    pub blocked: Vec<Blocked>,
    pub stuck_packets: Vec<StuckPacket>,
}

impl fmt::Display for DeadlockReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "deadlock: {} units wait", self.blocked.len())?;
        for b in &self.blocked {
            write!(f, "\n  {}: {} waits for {}", b.at, b.text, b.waiting)?;
        }
        for p in &self.stuck_packets {
            write!(
                f,
                "\n  a packet of {} words from tile {} to tile {} (vtile_id {}) finds its buffer entry full",
                p.words, p.from, p.to, p.vtile
            )?;
        }
        Ok(())
    }
}

/// The caller's request does not fit the model or the machine.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("tile {tile} does not exist (the model has {tiles})")]
    NoSuchTile { tile: u32, tiles: u32 },
    #[error("core {core} does not exist (a tile has {cores})")]
    NoSuchCore { core: u32, cores: u32 },
    #[error("tile {tile} has {cores} cores and {mvmus} MVMUs on core {core}; the architecture has {expected_cores} cores of {expected_mvmus} MVMUs")]
    Shape {
        tile: u32,
        core: u32,
        cores: u32,
        mvmus: u32,
        expected_cores: u32,
        expected_mvmus: u32,
    },
    #[error("tile memory [{addr}, {addr} + {len}) of tile {tile} leaves the memory 0..{TILE_MEMORY_WORDS}")]
    TileMemoryRange { tile: u32, addr: u32, len: u64 },
    #[error("register {addr} leaves the register map 0..{REGISTERS}")]
    RegisterRange { addr: u32 },
    #[error("frac_bits {bits} is above the largest supported, {max}")]
    FracBits { bits: u32, max: u32 },
    #[error("the machine has already run; inputs go in before the run")]
    AlreadyRan,
}
