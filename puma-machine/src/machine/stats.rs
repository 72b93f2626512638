//! What a run did: instructions per opcode and per ALU operation, transfers, and the counts
//! that flag values the simulator would have treated differently (results beyond its 16-bit
//! word, crossbar inputs it read as zero).

use crate::isa::{CoreOpcode, TileOpcode};
use crate::values::AluOp;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Scheduling steps that made progress (an instruction, or one chunk of a vector
    /// transfer); the step budget counts these.
    pub steps: u64,
    /// Rounds of the schedule (every unit once, then the network).
    pub rounds: u64,
    /// Completed core instructions, indexed by `CoreOpcode as usize`.
    pub core_instructions: Vec<u64>,
    /// Completed tile instructions, indexed by `TileOpcode as usize`.
    pub tile_instructions: Vec<u64>,
    /// ALU element operations (`alu`, `alui`), indexed by position in `AluOp::ALL`.
    pub alu_operations: Vec<u64>,
    /// MVMU multiplications (an `mvm` on two MVMUs counts two).
    pub mvmu_runs: u64,
    pub words_loaded: u64,
    pub words_stored: u64,
    pub packets_sent: u64,
    pub packets_received: u64,
    /// Packets never received: left in a queue or a buffer when the run stopped.
    pub packets_left: u64,
    /// Words a store wrote from registers that held no value.
    pub undefined_words_stored: u64,
    /// Crossbar inputs an `mvm` read as zero because they held no value, on rows with a
    /// nonzero weight (the simulator reads an empty input register as 0).
    pub unwritten_mvm_inputs: u64,
    /// Results (ALU, MVMU) outside the simulator's 16-bit word, where it would have wrapped.
    pub beyond_word: u64,
}

impl Stats {
    pub(crate) fn new() -> Stats {
        Stats {
            core_instructions: vec![0; CoreOpcode::COUNT],
            tile_instructions: vec![0; TileOpcode::COUNT],
            alu_operations: vec![0; AluOp::ALL.len()],
            ..Stats::default()
        }
    }

    pub fn core(&self, op: CoreOpcode) -> u64 {
        self.core_instructions[op as usize]
    }

    pub fn tile(&self, op: TileOpcode) -> u64 {
        self.tile_instructions[op as usize]
    }

    pub fn alu(&self, op: AluOp) -> u64 {
        AluOp::ALL
            .iter()
            .position(|o| *o == op)
            .map_or(0, |i| self.alu_operations[i])
    }

    /// Completed instructions of every unit.
    pub fn instructions(&self) -> u64 {
        self.core_instructions.iter().sum::<u64>() + self.tile_instructions.iter().sum::<u64>()
    }

    pub(crate) fn count_alu(&mut self, op: AluOp) {
        if let Some(i) = AluOp::ALL.iter().position(|o| *o == op) {
            self.alu_operations[i] += 1;
        }
    }

    /// Counts `v` if the simulator's 16-bit word cannot hold it.
    pub(crate) fn note_result(&mut self, v: i64) {
        if !(i16::MIN as i64..=i16::MAX as i64).contains(&v) {
            self.beyond_word += 1;
        }
    }
}
