//! Typed PIMSim instructions.
//!
//! One enum variant per instruction *shape*; the vector ops that share a shape share a
//! variant and are told apart by a small opcode enum. Every field is already validated
//! when an `Inst` exists (register < 32, widths 1..=32, offset select < 8), so the
//! interpreter never re-checks what the loader proved. Values that depend on run-time
//! state (addresses, ranges, groups, core ids) are checked by the machine and become faults.
//!
//! The layout is kept compact (at most 20 bytes) because real PIMCOMP-NN programs carry
//! several million instructions.

use std::fmt;

/// A general register index, `0..32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg(u8);

impl Reg {
    /// Number of general registers per core.
    pub const COUNT: usize = 32;

    /// `Some` when `index < 32`.
    pub fn new(index: u32) -> Option<Reg> {
        (index < Self::COUNT as u32).then_some(Reg(index as u8))
    }

    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

/// An element width in bits, `1..=32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Width(u8);

impl Width {
    pub const W8: Width = Width(8);
    pub const W16: Width = Width(16);
    pub const W32: Width = Width(32);

    /// `Some` when `1 <= bits <= 32`.
    pub fn new(bits: u32) -> Option<Width> {
        (1..=32).contains(&bits).then_some(Width(bits as u8))
    }

    pub fn bits(self) -> u32 {
        self.0 as u32
    }

    /// Bytes one element occupies: `ceil(bits / 8)`.
    pub fn bytes(self) -> u32 {
        (self.0 as u32).div_ceil(8)
    }
}

/// The `offset` operand: `select` bit 0 applies `value` to `rd`, bit 1 to `rs1`, bit 2 to `rs2`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Offset {
    /// Only the low three bits are meaningful; the loader rejects larger values.
    pub select: u8,
    pub value: i32,
}

impl Offset {
    pub const ZERO: Offset = Offset { select: 0, value: 0 };

    pub fn applies_to_rd(self) -> bool {
        self.select & 1 != 0
    }
    pub fn applies_to_rs1(self) -> bool {
        self.select & 2 != 0
    }
    pub fn applies_to_rs2(self) -> bool {
        self.select & 4 != 0
    }
}

/// Scalar register-register ops: `rd = rs1 op rs2`, wrapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarOp {
    Add,
    Sub,
    Mul,
}

/// Scalar register-immediate ops: `rd = rs1 op imm`, wrapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarImmOp {
    Add,
    Mul,
}

/// Vector ops with two vector sources (`rd, rs1, rs2, len, offset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinVecOp {
    Vvadd,
    Vvsub,
    Vvmul,
    Vvdmul,
    Vvmax,
    Vvsll,
    Vvsra,
    /// `rs2` holds the upper bound (a value, not an address).
    Vrsu,
    /// `rs2` holds the lower bound (a value, not an address).
    Vrsl,
}

/// Vector ops with one vector source (`rd, rs1, len, offset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnVecOp {
    Vrelu,
    Vtanh,
    Vsigm,
}

/// Local/global memory transfer ops (`rd, rs1, size, offset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemOp {
    /// GMem → LMem.
    Ld,
    /// LMem → GMem.
    St,
    /// LMem → LMem (overlap is a fault).
    Lmv,
}

/// One instruction. Sizes and lengths are `u32` (negative values are load errors);
/// immediates are the 32-bit two's-complement value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Inst {
    Nop,
    /// `rd = imm`.
    Sldi { rd: Reg, imm: i32 },
    /// `rd = GMem32[rs1 + offset]`; the offset is added unconditionally.
    Sld { rd: Reg, rs1: Reg, offset: i32 },
    /// `sadd` / `ssub` / `smul`.
    Scalar { op: ScalarOp, rd: Reg, rs1: Reg, rs2: Reg },
    /// `saddi` / `smuli`.
    ScalarImm { op: ScalarImmOp, rd: Reg, rs1: Reg, imm: i32 },
    Setbw { ibiw: Width, obiw: Width },
    /// Multiply the `rows` input elements at `rs1` by array group `group`.
    /// `group` is a group number, or (for PIMCOMP-NN's format without an
    /// `array_group_map`) the number of arrays used; the program's config says which.
    Mvmul { rd: Reg, rs1: Reg, mbiw: Width, relu: bool, group: u32 },
    BinVec { op: BinVecOp, rd: Reg, rs1: Reg, rs2: Reg, len: u32, offset: Offset },
    UnVec { op: UnVecOp, rd: Reg, rs1: Reg, len: u32, offset: Offset },
    /// Average of `len` elements at `rs1 + offset·ibyw` with a stride of `rs2` elements.
    Vavg { rd: Reg, rs1: Reg, rs2: Reg, len: u32, offset: i32 },
    /// Gather `len` elements at `rs1` with a stride of `rs2` elements into `rd`.
    Vmv { rd: Reg, rs1: Reg, rs2: Reg, len: u32 },
    /// `ld` / `st` / `lmv`; `size` is in bytes.
    Mem { op: MemOp, rd: Reg, rs1: Reg, size: u32, offset: Offset },
    /// memset `size` bytes at `rd + offset` to `imm`.
    /// `from_float` records that the file gave the immediate as a float (PIMCOMP-NN's
    /// average-pooling constants), truncated toward zero; the machine counts those.
    Lldi { rd: Reg, imm: u8, size: u32, offset: i32, from_float: bool },
    /// Synchronous send of `size` bytes at `rs1 + offset` to `core`.
    Send { rs1: Reg, core: u32, size: u32, offset: i32 },
    /// Receive `size` bytes from `core` into `rd + offset`.
    Recv { rd: Reg, core: u32, size: u32, offset: i32 },
    /// Block until event register `event` equals `value`, then reset it to 0.
    Wait { event: Reg, value: i32 },
    /// Add 1 to event register `event` of `core`.
    Sync { event: Reg, core: u32 },
}

/// The opcode of an instruction, for statistics and reports (31 of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Opcode {
    Nop,
    Sldi,
    Sld,
    Sadd,
    Ssub,
    Smul,
    Saddi,
    Smuli,
    Setbw,
    Mvmul,
    Vvadd,
    Vvsub,
    Vvmul,
    Vvdmul,
    Vvmax,
    Vvsll,
    Vvsra,
    Vavg,
    Vrelu,
    Vtanh,
    Vsigm,
    Vmv,
    Vrsu,
    Vrsl,
    Ld,
    St,
    Lldi,
    Lmv,
    Send,
    Recv,
    Wait,
    Sync,
}

impl Opcode {
    /// Every opcode, in a fixed order (usable as an index with `as usize`).
    pub const ALL: [Opcode; 32] = [
        Opcode::Nop,
        Opcode::Sldi,
        Opcode::Sld,
        Opcode::Sadd,
        Opcode::Ssub,
        Opcode::Smul,
        Opcode::Saddi,
        Opcode::Smuli,
        Opcode::Setbw,
        Opcode::Mvmul,
        Opcode::Vvadd,
        Opcode::Vvsub,
        Opcode::Vvmul,
        Opcode::Vvdmul,
        Opcode::Vvmax,
        Opcode::Vvsll,
        Opcode::Vvsra,
        Opcode::Vavg,
        Opcode::Vrelu,
        Opcode::Vtanh,
        Opcode::Vsigm,
        Opcode::Vmv,
        Opcode::Vrsu,
        Opcode::Vrsl,
        Opcode::Ld,
        Opcode::St,
        Opcode::Lldi,
        Opcode::Lmv,
        Opcode::Send,
        Opcode::Recv,
        Opcode::Wait,
        Opcode::Sync,
    ];

    /// The canonical mnemonic, as written in JSON `op` fields and in assembly text.
    pub fn mnemonic(self) -> &'static str {
        match self {
            Opcode::Nop => "nop",
            Opcode::Sldi => "sldi",
            Opcode::Sld => "sld",
            Opcode::Sadd => "sadd",
            Opcode::Ssub => "ssub",
            Opcode::Smul => "smul",
            Opcode::Saddi => "saddi",
            Opcode::Smuli => "smuli",
            Opcode::Setbw => "setbw",
            Opcode::Mvmul => "mvmul",
            Opcode::Vvadd => "vvadd",
            Opcode::Vvsub => "vvsub",
            Opcode::Vvmul => "vvmul",
            Opcode::Vvdmul => "vvdmul",
            Opcode::Vvmax => "vvmax",
            Opcode::Vvsll => "vvsll",
            Opcode::Vvsra => "vvsra",
            Opcode::Vavg => "vavg",
            Opcode::Vrelu => "vrelu",
            Opcode::Vtanh => "vtanh",
            Opcode::Vsigm => "vsigm",
            Opcode::Vmv => "vmv",
            Opcode::Vrsu => "vrsu",
            Opcode::Vrsl => "vrsl",
            Opcode::Ld => "ld",
            Opcode::St => "st",
            Opcode::Lldi => "lldi",
            Opcode::Lmv => "lmv",
            Opcode::Send => "send",
            Opcode::Recv => "recv",
            Opcode::Wait => "wait",
            Opcode::Sync => "sync",
        }
    }

    /// Parse a mnemonic, accepting PIMCOMP-NN's spellings `vsub` and `vsigmoid`.
    pub fn from_mnemonic(s: &str) -> Option<Opcode> {
        match s {
            "vsub" => return Some(Opcode::Vvsub),
            "vsigmoid" => return Some(Opcode::Vsigm),
            _ => {}
        }
        Opcode::ALL.iter().copied().find(|op| op.mnemonic() == s)
    }

    /// Memory-bound ops (transfers), as the thesis counts them.
    pub fn is_memory_bound(self) -> bool {
        matches!(
            self,
            Opcode::Ld | Opcode::St | Opcode::Lmv | Opcode::Lldi | Opcode::Send | Opcode::Recv
        )
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mnemonic())
    }
}

/// Opcode → sub-op for the variants that group several opcodes. One mapping, used by every
/// reader and generator, so a new opcode cannot be mapped differently in two places.
macro_rules! sub_op_from_opcode {
    ($ty:ident { $($opcode:ident => $variant:ident),+ $(,)? }) => {
        impl $ty {
            /// The sub-op an opcode selects, `None` for opcodes of another shape.
            pub fn from_opcode(op: Opcode) -> Option<$ty> {
                match op {
                    $(Opcode::$opcode => Some($ty::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

sub_op_from_opcode!(ScalarOp { Sadd => Add, Ssub => Sub, Smul => Mul });
sub_op_from_opcode!(ScalarImmOp { Saddi => Add, Smuli => Mul });
sub_op_from_opcode!(BinVecOp {
    Vvadd => Vvadd, Vvsub => Vvsub, Vvmul => Vvmul, Vvdmul => Vvdmul, Vvmax => Vvmax,
    Vvsll => Vvsll, Vvsra => Vvsra, Vrsu => Vrsu, Vrsl => Vrsl,
});
sub_op_from_opcode!(UnVecOp { Vrelu => Vrelu, Vtanh => Vtanh, Vsigm => Vsigm });
sub_op_from_opcode!(MemOp { Ld => Ld, St => St, Lmv => Lmv });

impl Inst {
    pub fn opcode(&self) -> Opcode {
        match *self {
            Inst::Nop => Opcode::Nop,
            Inst::Sldi { .. } => Opcode::Sldi,
            Inst::Sld { .. } => Opcode::Sld,
            Inst::Scalar { op, .. } => match op {
                ScalarOp::Add => Opcode::Sadd,
                ScalarOp::Sub => Opcode::Ssub,
                ScalarOp::Mul => Opcode::Smul,
            },
            Inst::ScalarImm { op, .. } => match op {
                ScalarImmOp::Add => Opcode::Saddi,
                ScalarImmOp::Mul => Opcode::Smuli,
            },
            Inst::Setbw { .. } => Opcode::Setbw,
            Inst::Mvmul { .. } => Opcode::Mvmul,
            Inst::BinVec { op, .. } => match op {
                BinVecOp::Vvadd => Opcode::Vvadd,
                BinVecOp::Vvsub => Opcode::Vvsub,
                BinVecOp::Vvmul => Opcode::Vvmul,
                BinVecOp::Vvdmul => Opcode::Vvdmul,
                BinVecOp::Vvmax => Opcode::Vvmax,
                BinVecOp::Vvsll => Opcode::Vvsll,
                BinVecOp::Vvsra => Opcode::Vvsra,
                BinVecOp::Vrsu => Opcode::Vrsu,
                BinVecOp::Vrsl => Opcode::Vrsl,
            },
            Inst::UnVec { op, .. } => match op {
                UnVecOp::Vrelu => Opcode::Vrelu,
                UnVecOp::Vtanh => Opcode::Vtanh,
                UnVecOp::Vsigm => Opcode::Vsigm,
            },
            Inst::Vavg { .. } => Opcode::Vavg,
            Inst::Vmv { .. } => Opcode::Vmv,
            Inst::Mem { op, .. } => match op {
                MemOp::Ld => Opcode::Ld,
                MemOp::St => Opcode::St,
                MemOp::Lmv => Opcode::Lmv,
            },
            Inst::Lldi { .. } => Opcode::Lldi,
            Inst::Send { .. } => Opcode::Send,
            Inst::Recv { .. } => Opcode::Recv,
            Inst::Wait { .. } => Opcode::Wait,
            Inst::Sync { .. } => Opcode::Sync,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inst_is_compact() {
        assert!(std::mem::size_of::<Inst>() <= 20, "{}", std::mem::size_of::<Inst>());
    }

    #[test]
    fn sub_ops_map_back_to_their_opcodes() {
        let r = Reg::new(0).unwrap();
        for op in Opcode::ALL {
            if let Some(o) = ScalarOp::from_opcode(op) {
                assert_eq!(Inst::Scalar { op: o, rd: r, rs1: r, rs2: r }.opcode(), op);
            }
            if let Some(o) = ScalarImmOp::from_opcode(op) {
                assert_eq!(Inst::ScalarImm { op: o, rd: r, rs1: r, imm: 0 }.opcode(), op);
            }
            if let Some(o) = BinVecOp::from_opcode(op) {
                let i = Inst::BinVec { op: o, rd: r, rs1: r, rs2: r, len: 0, offset: Offset::ZERO };
                assert_eq!(i.opcode(), op);
            }
            if let Some(o) = UnVecOp::from_opcode(op) {
                let i = Inst::UnVec { op: o, rd: r, rs1: r, len: 0, offset: Offset::ZERO };
                assert_eq!(i.opcode(), op);
            }
            if let Some(o) = MemOp::from_opcode(op) {
                let i = Inst::Mem { op: o, rd: r, rs1: r, size: 0, offset: Offset::ZERO };
                assert_eq!(i.opcode(), op);
            }
        }
    }

    #[test]
    fn mnemonics_round_trip() {
        for op in Opcode::ALL {
            assert_eq!(Opcode::from_mnemonic(op.mnemonic()), Some(op));
        }
        assert_eq!(Opcode::from_mnemonic("vsub"), Some(Opcode::Vvsub));
        assert_eq!(Opcode::from_mnemonic("vsigmoid"), Some(Opcode::Vsigm));
        assert_eq!(Opcode::from_mnemonic("jmp"), None);
    }
}
