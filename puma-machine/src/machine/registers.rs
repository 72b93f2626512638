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

pub(crate) struct Registers {
    values: Vec<Option<i64>>,
    /// `pc + 1` of the last writer, 0 for none.
    writers: Vec<u32>,
}

impl Registers {
    pub fn new() -> Registers {
        let mut values = vec![None; REGISTERS as usize];
        let outputs =
            XBAR_OUT_START as usize..(XBAR_OUT_START + MVMUS_PER_CORE * MVMU_DIM) as usize;
        values[outputs].fill(Some(0));
        Registers {
            values,
            writers: vec![0; REGISTERS as usize],
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
        self.values[addr as usize]
    }

    /// The value of an operand register, which must hold one.
    pub fn operand(&self, addr: u32) -> Result<i64, FaultKind> {
        self.get(addr).ok_or(FaultKind::UndefinedRegister {
            reg: addr,
            written: self.writers[addr as usize] != 0,
        })
    }

    pub fn set(&mut self, addr: u32, value: Option<i64>, pc: u32) {
        self.values[addr as usize] = value;
        self.writers[addr as usize] = pc + 1;
    }

    pub fn state(&self, addr: u32) -> RegisterState {
        let w = self.writers[addr as usize];
        RegisterState {
            value: self.values[addr as usize],
            writer: w.checked_sub(1),
        }
    }

    /// The raw values of registers `start .. start + len` (on the map), for `mvm`.
    pub fn slice(&self, start: u32, len: u32) -> &[Option<i64>] {
        &self.values[start as usize..(start + len) as usize]
    }
}
