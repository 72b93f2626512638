//! A core's register file, the simulator's three memories behind one address map
//! (ima.py `getXbarAddr`, `datamem_off`):
//!
//! | addresses | what | at reset |
//! |---|---|---|
//! | `0 .. 256` | crossbar input registers, MVMU `a / 128`, row `a % 128` | empty |
//! | `256 .. 512` | crossbar output registers, MVMU `(a - 256) / 128` | zero (`xb_outMem`) |
//! | `512 .. 2560` | data memory | empty |
//!
//! A register holds a raw fixed-point word or nothing (the simulator's empty string: never
//! written, or copied from a word that held nothing), and the pc of the instruction that last
//! wrote it.

use super::fault::FaultKind;
use crate::arch::{MVMUS_PER_CORE, MVMU_DIM, REGISTERS, XBAR_OUT_START};

/// One register as the caller reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegisterState {
    pub value: Option<i64>,
    /// The pc (in the core's program) of the instruction that last wrote it.
    pub writer: Option<u32>,
}

/// The reset value of register `addr`: zero for crossbar outputs, nothing elsewhere.
fn reset_value(addr: u32) -> Option<i64> {
    let outputs = XBAR_OUT_START..XBAR_OUT_START + MVMUS_PER_CORE * MVMU_DIM;
    outputs.contains(&addr).then_some(0)
}

/// The registers, allocated at the first write (most cores of a compiled model only halt,
/// and a machine is set up for every run).
pub(crate) struct Registers {
    values: Vec<Option<i64>>,
    /// `pc + 1` of the last writer, 0 for none.
    writers: Vec<u32>,
}

impl Registers {
    pub fn new() -> Registers {
        Registers {
            values: Vec::new(),
            writers: Vec::new(),
        }
    }

    fn materialise(&mut self) {
        if self.values.is_empty() {
            self.values = (0..REGISTERS).map(reset_value).collect();
            self.writers = vec![0; REGISTERS as usize];
        }
    }

    /// `start` as a register address when registers `start .. start + len` are all on the map.
    pub fn check(operand: &'static str, start: u64, len: u32) -> Result<u32, FaultKind> {
        if start + len as u64 > REGISTERS as u64 {
            return Err(FaultKind::RegisterRange {
                operand,
                start,
                len: len as u64,
            });
        }
        Ok(start as u32)
    }

    /// The value of an on-map register (checked by [`Registers::check`]).
    pub fn get(&self, addr: u32) -> Option<i64> {
        match self.values.get(addr as usize) {
            Some(v) => *v,
            None => reset_value(addr),
        }
    }

    fn writer(&self, addr: u32) -> u32 {
        self.writers.get(addr as usize).copied().unwrap_or(0)
    }

    /// The value of an operand register, which must hold one.
    pub fn operand(&self, addr: u32) -> Result<i64, FaultKind> {
        self.get(addr).ok_or(FaultKind::UndefinedRegister {
            reg: addr,
            written: self.writer(addr) != 0,
        })
    }

    pub fn set(&mut self, addr: u32, value: Option<i64>, pc: u32) {
        self.materialise();
        self.values[addr as usize] = value;
        self.writers[addr as usize] = pc + 1;
    }

    pub fn state(&self, addr: u32) -> RegisterState {
        RegisterState {
            value: self.get(addr),
            writer: self.writer(addr).checked_sub(1),
        }
    }

    /// The values of registers `start .. start + len` (on the map), for `mvm`.
    pub fn slice(&self, start: u32, len: u32) -> Vec<Option<i64>> {
        match self.values.get(start as usize..(start + len) as usize) {
            Some(values) => values.to_vec(),
            None => (start..start + len).map(reset_value).collect(),
        }
    }
}
