//! The machine: a model's tiles and cores with their register files, MVMUs, tile memories and
//! the network between tiles, run in the simulator's order to a [`RunOutcome`].
//!
//! # Using it
//!
//! ```text
//! let mut m = Machine::new(&model, MachineOptions::default())?;
//! m.write_input(0, 8, &inputs)?;          // where the input lives: tile, address, values
//! let outcome = m.run();                  // finished / fault / deadlock / out of steps
//! let words = m.read(1, 0, 12)?;          // where the output lives: tile, address, length
//! ```
//!
//! The placement of inputs and outputs is the caller's (the compiler does not write it down);
//! an input word is written valid with the counter the simulator's node gives inputs
//! ([`INPUT_COUNTER`]). Each [`Word`] read back says whether it was ever written, and by which
//! instruction, and which store produced its value.
//!
//! # Schedule
//!
//! The simulator advances every tile one cycle at a time, in tile order, and within a tile the
//! tile's controller and then its eight cores; after all tiles the network moves packets.
//! The machine runs rounds in the same order, each unit taking one step (an instruction, or
//! one chunk of a vector transfer) per round, then the network delivering. Latencies are left
//! out: they change when a unit waits, not what it computes, for every program whose
//! synchronisation is sound. Where the simulator's timing could change a value (two stores
//! racing for one free word, a load whose later words are not yet valid), the machine either
//! faults or follows this fixed order; `docs/puma-isa.md` lists the cases.
//!
//! A round in which no unit makes progress and no packet moves is a stall: the machine looks
//! for the root cause ([`FaultKind::ReadNeverWritten`], [`FaultKind::ReceiveWithoutSend`]) and
//! otherwise reports a [`DeadlockReport`]. The step budget bounds every run.

mod fault;
mod memory;
mod noc;
mod registers;
mod schedule;
mod stats;
mod step;

pub use self::fault::{
    Blocked, DeadlockReport, Fault, FaultKind, InstAt, RunOutcome, SetupError, StuckPacket, Unit,
    WaitingFor, Writer,
};
pub use self::memory::Word;
pub use self::registers::RegisterState;
pub use self::stats::Stats;
pub use crate::arch::INPUT_COUNTER;
pub use crate::fixed::AluError;

use self::memory::TileMemory;
use self::noc::Noc;
use self::registers::Registers;
use self::step::{CoreState, TileUnitState};
use crate::arch::{
    CORES_PER_TILE, FRAC_BITS, MVMUS_PER_CORE, MVMU_DIM, REGISTERS, TILE_MEMORY_WORDS,
};
use crate::model::{Model, Weights};

/// Largest `frac_bits`: products of two words stay exact in `i128`.
pub const MAX_FRAC_BITS: u32 = 32;

/// How a run is set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineOptions {
    /// Progressing steps (all units) after which the run stops with `OutOfSteps`.
    pub step_budget: u64,
    /// Fractional bits of the fixed-point grid: scales `alui` immediates and sets the rounding
    /// of `mul`, `sig` and `tanh` (`crate::fixed`). The simulator's is 12.
    pub frac_bits: u32,
    pub quirks: Quirks,
}

impl MachineOptions {
    /// 2^32 steps.
    pub const DEFAULT_STEP_BUDGET: u64 = 1 << 32;
}

impl Default for MachineOptions {
    fn default() -> MachineOptions {
        MachineOptions {
            step_budget: Self::DEFAULT_STEP_BUDGET,
            frac_bits: FRAC_BITS,
            quirks: Quirks::SIMULATOR,
        }
    }
}

/// The places where the simulator does something other than what the compiler's code
/// evidently means. Each is on in [`Quirks::SIMULATOR`] (the default: the machine is the
/// simulator) and off in [`Quirks::COMPILER`] (the compiler's reading); a mismatch that
/// disappears with one quirk off is a disagreement between the two tools, not a bug of the
/// compiled program alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quirks {
    /// A vector store reads chunk `k` from registers `r1 + 16·k`, the bus width, whatever its
    /// `store_width` (ima.py `st_data_addr`); off: `r1 + store_width·k`, contiguous.
    pub store_bus_stride: bool,
    /// Every `mvm` runs every MVMU of the core, whatever its mask (ima.py tests the mask's
    /// non-empty strings for truth); off: only the MVMUs the mask names.
    pub mvm_runs_every_mvmu: bool,
    /// The weights file's row meets the input: `out[c] = Σ_r in[r] · w[r][c]` (the simulator
    /// programs the file as read, populate.py, and computes `np.dot(inp, xbar_value)`); off:
    /// `out[r] = Σ_c w[r][c] · in[c]`, the compiler's `M · x` for a matrix of height × width
    /// written row by row (instance.cpp).
    pub weights_row_is_input: bool,
    /// An `alu`/`alui` result bound for a crossbar register is a fault (the simulator writes
    /// the first operand there, or stops); off: the result is written.
    pub alu_xbar_write_faults: bool,
}

impl Quirks {
    /// The simulator's behaviour everywhere.
    pub const SIMULATOR: Quirks = Quirks {
        store_bus_stride: true,
        mvm_runs_every_mvmu: true,
        weights_row_is_input: true,
        alu_xbar_write_faults: true,
    };
    /// The compiler's reading everywhere.
    pub const COMPILER: Quirks = Quirks {
        store_bus_stride: false,
        mvm_runs_every_mvmu: false,
        weights_row_is_input: false,
        alu_xbar_write_faults: false,
    };
}

/// Values the caller places in tile memory before the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Input<'a> {
    pub tile: u32,
    pub addr: u32,
    pub values: &'a [i64],
}

/// A range of tile memory the caller reads after the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Output {
    pub tile: u32,
    pub addr: u32,
    pub len: u32,
}

/// One MVMU's matrix in the machine's orientation: `cells[out · 128 + in]`.
pub(crate) struct Matrix {
    cells: Box<[i32]>,
    /// Inputs that meet a nonzero weight.
    live: Box<[bool]>,
    /// One past the last live input: the inputs beyond meet only zeros.
    inputs_used: usize,
    /// Outputs with a nonzero weight (the others are 0 whatever the inputs).
    live_outputs: Box<[bool]>,
}

impl Matrix {
    fn new(w: &Weights, row_is_input: bool) -> Matrix {
        let n = MVMU_DIM;
        let mut cells = vec![0; Weights::LEN];
        let mut live = vec![false; n as usize];
        let mut live_outputs = vec![false; n as usize];
        for out in 0..n {
            for inp in 0..n {
                let v = if row_is_input {
                    w.cell(inp, out)
                } else {
                    w.cell(out, inp)
                };
                cells[(out * n + inp) as usize] = v;
                live[inp as usize] |= v != 0;
                live_outputs[out as usize] |= v != 0;
            }
        }
        Matrix {
            cells: cells.into_boxed_slice(),
            inputs_used: live.iter().rposition(|&l| l).map_or(0, |i| i + 1),
            live: live.into_boxed_slice(),
            live_outputs: live_outputs.into_boxed_slice(),
        }
    }

    /// The weights of output `out` by input, up to the last live input; `None` for an
    /// output whose weights are all zero.
    pub(crate) fn output_row(&self, out: usize) -> Option<&[i32]> {
        let n = MVMU_DIM as usize;
        self.live_outputs[out].then(|| &self.cells[out * n..out * n + self.inputs_used])
    }

    pub(crate) fn input_is_live(&self, inp: usize) -> bool {
        self.live[inp]
    }
}

struct TileState {
    mem: TileMemory,
    unit: TileUnitState,
    cores: Vec<CoreState>,
    mvmus: Vec<Vec<Option<Matrix>>>,
}

/// A machine loaded with a model, ready to run (or having run).
pub struct Machine<'m> {
    model: &'m Model,
    options: MachineOptions,
    tiles: Vec<TileState>,
    noc: Noc,
    stats: Stats,
    outcome: Option<RunOutcome>,
}

impl<'m> Machine<'m> {
    /// Sets `model` up: programs at pc 0, MVMUs programmed with the model's weights in the
    /// orientation `options.quirks` says, memories empty.
    pub fn new(model: &'m Model, options: MachineOptions) -> Result<Machine<'m>, SetupError> {
        if options.frac_bits > MAX_FRAC_BITS {
            return Err(SetupError::FracBits {
                bits: options.frac_bits,
                max: MAX_FRAC_BITS,
            });
        }
        let mut tiles = Vec::with_capacity(model.tiles.len());
        for (t, tile) in model.tiles.iter().enumerate() {
            check_shape(t as u32, tile)?;
            let mvmus = tile
                .cores
                .iter()
                .map(|c| {
                    c.mvmus
                        .iter()
                        .map(|w| {
                            w.as_ref()
                                .map(|w| Matrix::new(w, options.quirks.weights_row_is_input))
                        })
                        .collect()
                })
                .collect();
            tiles.push(TileState {
                mem: TileMemory::default(),
                unit: TileUnitState {
                    pc: 0,
                    chunk: 0,
                    halted: false,
                    waiting: None,
                    latched: None,
                },
                cores: (0..CORES_PER_TILE).map(|_| new_core()).collect(),
                mvmus,
            });
        }
        Ok(Machine {
            model,
            options,
            tiles,
            noc: Noc::new(model.tiles.len() as u32),
            stats: Stats::new(),
            outcome: None,
        })
    }

    pub fn model(&self) -> &'m Model {
        self.model
    }

    pub fn options(&self) -> &MachineOptions {
        &self.options
    }

    fn tile_index(&self, tile: u32) -> Result<usize, SetupError> {
        let tiles = self.tiles.len() as u32;
        if tile >= tiles {
            return Err(SetupError::NoSuchTile { tile, tiles });
        }
        Ok(tile as usize)
    }

    fn check_range(&self, tile: u32, addr: u32, len: u64) -> Result<usize, SetupError> {
        let t = self.tile_index(tile)?;
        if addr as u64 + len > TILE_MEMORY_WORDS as u64 {
            return Err(SetupError::TileMemoryRange { tile, addr, len });
        }
        Ok(t)
    }

    /// Places input `values` in tile memory at `(tile, addr)`, each word valid with
    /// [`INPUT_COUNTER`] reads left, as the simulator's node loads `input.npy`.
    pub fn write_input(&mut self, tile: u32, addr: u32, values: &[i64]) -> Result<(), SetupError> {
        self.write_tile_memory(tile, addr, values, INPUT_COUNTER)
    }

    /// Places every input.
    pub fn write_inputs(&mut self, inputs: &[Input<'_>]) -> Result<(), SetupError> {
        for i in inputs {
            self.write_input(i.tile, i.addr, i.values)?;
        }
        Ok(())
    }

    /// Places `values` in tile memory at `(tile, addr)`, each word valid with `counter` reads
    /// left.
    pub fn write_tile_memory(
        &mut self,
        tile: u32,
        addr: u32,
        values: &[i64],
        counter: u32,
    ) -> Result<(), SetupError> {
        if self.outcome.is_some() {
            return Err(SetupError::AlreadyRan);
        }
        let t = self.check_range(tile, addr, values.len() as u64)?;
        let mem = &mut self.tiles[t].mem;
        for (i, &v) in values.iter().enumerate() {
            let a = addr + i as u32;
            mem.write(a, Some(v), counter as i64, Writer::Host, (Writer::Host, a));
        }
        Ok(())
    }

    /// The words at `(tile, addr .. addr + len)`.
    pub fn read(&self, tile: u32, addr: u32, len: u32) -> Result<Vec<Word>, SetupError> {
        let t = self.check_range(tile, addr, len as u64)?;
        Ok((addr..addr + len)
            .map(|a| self.tiles[t].mem.get(a))
            .collect())
    }

    /// The values at `(tile, addr .. addr + len)`, `None` where a word holds none.
    pub fn read_values(
        &self,
        tile: u32,
        addr: u32,
        len: u32,
    ) -> Result<Vec<Option<i64>>, SetupError> {
        Ok(self
            .read(tile, addr, len)?
            .iter()
            .map(|w| w.value)
            .collect())
    }

    /// The words of every output range.
    pub fn read_outputs(&self, outputs: &[Output]) -> Result<Vec<Vec<Word>>, SetupError> {
        outputs
            .iter()
            .map(|o| self.read(o.tile, o.addr, o.len))
            .collect()
    }

    /// Register `addr` of `core` on `tile`.
    pub fn register(&self, tile: u32, core: u32, addr: u32) -> Result<RegisterState, SetupError> {
        let t = self.tile_index(tile)?;
        if core >= CORES_PER_TILE {
            return Err(SetupError::NoSuchCore {
                core,
                cores: CORES_PER_TILE,
            });
        }
        if addr >= REGISTERS {
            return Err(SetupError::RegisterRange { addr });
        }
        Ok(self.tiles[t].cores[core as usize].regs.state(addr))
    }

    /// Whether tile `tile`'s controller halted.
    pub fn tile_halted(&self, tile: u32) -> bool {
        self.tiles.get(tile as usize).is_some_and(|t| t.unit.halted)
    }

    /// Whether every tile halted.
    pub fn all_halted(&self) -> bool {
        self.tiles.iter().all(|t| t.unit.halted)
    }

    /// The pc of a unit: the instruction it runs next, or its halt once it halted.
    pub fn pc(&self, tile: u32, unit: Unit) -> Option<u32> {
        let t = self.tiles.get(tile as usize)?;
        match unit {
            Unit::Tile => Some(t.unit.pc),
            Unit::Core(c) => t.cores.get(c as usize).map(|c| c.pc),
        }
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// How the run ended, once it ran.
    pub fn outcome(&self) -> Option<&RunOutcome> {
        self.outcome.as_ref()
    }

    /// Runs until every tile halted, a fault, a deadlock or the step budget. Running again
    /// returns the same outcome.
    pub fn run(&mut self) -> RunOutcome {
        if let Some(o) = &self.outcome {
            return o.clone();
        }
        let outcome = self.run_rounds();
        self.stats.packets_left = self.noc.packets_left();
        self.outcome = Some(outcome.clone());
        outcome
    }
}

/// A fresh core: pc 0, registers at their reset values.
fn new_core() -> CoreState {
    CoreState {
        pc: 0,
        chunk: 0,
        base: 0,
        halted: false,
        waiting: None,
        regs: Registers::new(),
    }
}

fn check_shape(t: u32, tile: &crate::model::Tile) -> Result<(), SetupError> {
    let bad = |core: u32, mvmus: usize| SetupError::Shape {
        tile: t,
        core,
        cores: tile.cores.len() as u32,
        mvmus: mvmus as u32,
        expected_cores: CORES_PER_TILE,
        expected_mvmus: MVMUS_PER_CORE,
    };
    if tile.cores.len() != CORES_PER_TILE as usize {
        return Err(bad(0, tile.cores.first().map_or(0, |c| c.mvmus.len())));
    }
    for (c, core) in tile.cores.iter().enumerate() {
        if core.mvmus.len() != MVMUS_PER_CORE as usize {
            return Err(bad(c as u32, core.mvmus.len()));
        }
    }
    Ok(())
}
