//! A compiled model as the machine runs it: its tiles, each with its tile program and the
//! programs and crossbar contents of its cores. Built by `formats::load_model` from the
//! compiler's files, or by hand (tests).

use crate::arch::{
    CORES_PER_TILE, CORE_INSTRUCTION_MEMORY, MVMUS_PER_CORE, MVMU_DIM, TILE_INSTRUCTION_MEMORY,
};
use crate::isa::{CoreInst, TileInst};

/// A compiled model: `tiles[t]` is tile `t`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model {
    pub name: String,
    pub tiles: Vec<Tile>,
}

/// One tile: its program and its [`CORES_PER_TILE`] cores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tile {
    pub program: Vec<TileInst>,
    pub cores: Vec<Core>,
}

/// One core: its program and the contents of its [`MVMUS_PER_CORE`] MVMUs (`None`: never
/// programmed, all zeros as in the simulator).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Core {
    pub program: Vec<CoreInst>,
    pub mvmus: Vec<Option<Weights>>,
}

impl Core {
    /// A core with `program` and unprogrammed MVMUs.
    pub fn new(program: Vec<CoreInst>) -> Core {
        Core {
            program,
            mvmus: vec![None; MVMUS_PER_CORE as usize],
        }
    }

    /// A core that only halts (what the compiler writes for a core it does not use).
    pub fn idle() -> Core {
        Core::new(vec![CoreInst::Hlt {}])
    }
}

impl Tile {
    /// A tile with `program` and `cores`, the rest of its [`CORES_PER_TILE`] cores idle.
    pub fn new(program: Vec<TileInst>, mut cores: Vec<Core>) -> Tile {
        cores.resize_with(CORES_PER_TILE as usize, Core::idle);
        Tile { program, cores }
    }

    /// A tile that only halts, with idle cores.
    pub fn idle() -> Tile {
        Tile::new(vec![TileInst::Halt {}], Vec::new())
    }
}

/// Which program of a model: a tile's (`core: None`) or a core's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ProgramId {
    pub tile: u32,
    pub core: Option<u32>,
}

impl Model {
    /// Programs longer than the simulator's instruction memory (512 core, 2048 tile entries):
    /// the simulator refuses to load them (ima_modules.py `instrn_memory.load`); the machine
    /// runs them. Each with its length.
    pub fn instruction_memory_overflows(&self) -> Vec<(ProgramId, usize)> {
        let mut out = Vec::new();
        for (t, tile) in self.tiles.iter().enumerate() {
            let id = |core| ProgramId {
                tile: t as u32,
                core,
            };
            if tile.program.len() > TILE_INSTRUCTION_MEMORY as usize {
                out.push((id(None), tile.program.len()));
            }
            for (c, core) in tile.cores.iter().enumerate() {
                if core.program.len() > CORE_INSTRUCTION_MEMORY as usize {
                    out.push((id(Some(c as u32)), core.program.len()));
                }
            }
        }
        out
    }

    /// Instructions over all programs.
    pub fn instructions(&self) -> usize {
        self.tiles
            .iter()
            .map(|t| t.program.len() + t.cores.iter().map(|c| c.program.len()).sum::<usize>())
            .sum()
    }
}

/// The contents of one MVMU as the compiler's `.weights` file lists them: 128 × 128 integer
/// values in file order, `cell(row, col)` the value at position `row · 128 + col`. Which
/// index meets the input is the machine's business (`Quirks::weights_row_is_input`).
#[derive(Clone, PartialEq, Eq)]
pub struct Weights {
    cells: Box<[i32]>,
}

impl Weights {
    /// Values per MVMU.
    pub const LEN: usize = (MVMU_DIM * MVMU_DIM) as usize;

    /// `Some` when `cells` holds exactly [`Weights::LEN`] values.
    pub fn new(cells: Vec<i32>) -> Option<Weights> {
        (cells.len() == Self::LEN).then(|| Weights {
            cells: cells.into_boxed_slice(),
        })
    }

    /// All zeros.
    pub fn zeros() -> Weights {
        Weights {
            cells: vec![0; Self::LEN].into_boxed_slice(),
        }
    }

    /// The value at file position `row · 128 + col`.
    pub fn cell(&self, row: u32, col: u32) -> i32 {
        self.cells[(row * MVMU_DIM + col) as usize]
    }

    pub fn set(&mut self, row: u32, col: u32, value: i32) {
        self.cells[(row * MVMU_DIM + col) as usize] = value;
    }

    /// The values in file order.
    pub fn cells(&self) -> &[i32] {
        &self.cells
    }
}

impl std::fmt::Debug for Weights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nonzero = self.cells.iter().filter(|&&c| c != 0).count();
        write!(f, "Weights({nonzero} nonzero of {})", Self::LEN)
    }
}
