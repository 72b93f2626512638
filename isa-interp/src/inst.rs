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
//!
//! # The instruction table
//!
//! [`for_each_inst!`] is the one definition of the instruction set: one row per opcode giving
//! its mnemonic and accepted aliases, its [`Category`] (for a memory-bound one, its place in
//! [`Opcode::MEMORY_BOUND`]), the [`Inst`] variant (and sub-op) it decodes to, and its operands
//! in order, each as `inst_field: kind(JSON key)`. Everything else that depends on the list of
//! instructions is generated from it: [`Opcode`] and its name table, [`Inst::opcode`], the JSON
//! decoder and encoder (`formats::decode`, `formats::json`), the assembler and disassembler
//! (`formats::asm`), the random program generator (`gen`) and [`Opcode::ALL`], which the tests
//! iterate. An operand kind (`reg`, `bytes`, `offset`, ...) says how the operand is spelled in
//! JSON and in assembly text; each consumer implements every kind once (`formats::operand`
//! lists them with their spellings). Code elsewhere asks the table (a category, a mnemonic, an
//! operand's key) rather than naming opcodes: the root crate's `tests/tidy.rs` fails when an
//! opcode is named in more than three source files (its row, its semantics, and one more).
//!
//! To add an instruction:
//! 1. add its row to [`for_each_inst!`] (and, if it shares a shape with others, a variant to
//!    that shape's sub-op enum below, or a new [`Inst`] variant);
//! 2. give it semantics in `machine/` (the compiler points at the missing match arm);
//! 3. test it: `tests/machine_ops.rs` for its effect; the round-trip properties and the
//!    format tests cover its JSON and assembly spellings through [`Opcode::ALL`], and the
//!    generator's properties its generation.
//!
//! A new operand *kind* (a new way of spelling an operand) also needs one method in each of
//! `formats::operand`, `formats::decode`, `formats::json` and `formats::asm`, and a draw in
//! `gen.rs` (as does a new JSON key of the `u32` and `i32` kinds, drawn by key).

use std::fmt;

/// A general register index, `0..32`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

/// 8 bits, the reset value of a core's widths.
impl Default for Width {
    fn default() -> Width {
        Width::W8
    }
}

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
    pub const ZERO: Offset = Offset {
        select: 0,
        value: 0,
    };

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

/// Declares the sub-op enums ([`ScalarOp`], [`ScalarImmOp`], [`BinVecOp`], [`UnVecOp`],
/// [`MemOp`]): one variant per row of [`for_each_inst!`] that selects it (`[op: MemOp::Lmv]`),
/// in row order. An opcode that shares its `Inst` shape with others is then spelled in its row
/// and nowhere else in this file.
macro_rules! define_sub_ops {
    // Done: the five enums, each with the variants collected for it.
    (@rows [$($s:ident)*] [$($si:ident)*] [$($b:ident)*] [$($u:ident)*] [$($m:ident)*]) => {
        /// Scalar register-register ops: `rd = rs1 op rs2`, wrapping ([`ScalarOp::apply`], with
        /// the interpreter's semantics).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ScalarOp { $($s,)* }

        /// Scalar register-immediate ops: `rd = rs1 op imm`, wrapping ([`ScalarImmOp::apply`]).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ScalarImmOp { $($si,)* }

        /// Vector ops with two vector sources (`rd, rs1, rs2, len, offset`); `vrsu` and `vrsl`
        /// read a bound (a value, not an address) from `rs2`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum BinVecOp { $($b,)* }

        /// Vector ops with one vector source (`rd, rs1, len, offset`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum UnVecOp { $($u,)* }

        /// Memory transfer ops (`rd, rs1, size, offset`): `ld` GMem → LMem, `st` LMem → GMem,
        /// `lmv` LMem → LMem (overlap is a fault).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum MemOp { $($m,)* }
    };
    (@rows [$($s:ident)*] $si:tt $b:tt $u:tt $m:tt
        $op:ident $mn:literal [$($al:literal),*] $cat:ident $(($r:literal))? $var:ident
        [op: ScalarOp::$v:ident] {$($f:tt)*}; $($rest:tt)*) => {
        define_sub_ops!(@rows [$($s)* $v] $si $b $u $m $($rest)*);
    };
    (@rows $s:tt [$($si:ident)*] $b:tt $u:tt $m:tt
        $op:ident $mn:literal [$($al:literal),*] $cat:ident $(($r:literal))? $var:ident
        [op: ScalarImmOp::$v:ident] {$($f:tt)*}; $($rest:tt)*) => {
        define_sub_ops!(@rows $s [$($si)* $v] $b $u $m $($rest)*);
    };
    (@rows $s:tt $si:tt [$($b:ident)*] $u:tt $m:tt
        $op:ident $mn:literal [$($al:literal),*] $cat:ident $(($r:literal))? $var:ident
        [op: BinVecOp::$v:ident] {$($f:tt)*}; $($rest:tt)*) => {
        define_sub_ops!(@rows $s $si [$($b)* $v] $u $m $($rest)*);
    };
    (@rows $s:tt $si:tt $b:tt [$($u:ident)*] $m:tt
        $op:ident $mn:literal [$($al:literal),*] $cat:ident $(($r:literal))? $var:ident
        [op: UnVecOp::$v:ident] {$($f:tt)*}; $($rest:tt)*) => {
        define_sub_ops!(@rows $s $si $b [$($u)* $v] $m $($rest)*);
    };
    (@rows $s:tt $si:tt $b:tt $u:tt [$($m:ident)*]
        $op:ident $mn:literal [$($al:literal),*] $cat:ident $(($r:literal))? $var:ident
        [op: MemOp::$v:ident] {$($f:tt)*}; $($rest:tt)*) => {
        define_sub_ops!(@rows $s $si $b $u [$($m)* $v] $($rest)*);
    };
    // A row of a shape of its own.
    (@rows $s:tt $si:tt $b:tt $u:tt $m:tt
        $op:ident $mn:literal [$($al:literal),*] $cat:ident $(($r:literal))? $var:ident
        [] {$($f:tt)*}; $($rest:tt)*) => {
        define_sub_ops!(@rows $s $si $b $u $m $($rest)*);
    };
    ($($rows:tt)*) => {
        define_sub_ops!(@rows [] [] [] [] [] $($rows)*);
    };
}
for_each_inst!(define_sub_ops);

impl BinVecOp {
    /// Whether `rs2` holds a bound (a value), not the address of a second vector: `vrsu` and
    /// `vrsl`, whose offset therefore has no `rs2` select bit to apply.
    pub fn reads_bound(self) -> bool {
        matches!(self, BinVecOp::Vrsu | BinVecOp::Vrsl)
    }
}

/// The global-memory side of an `ld` or `st` ([`Inst::gmem_transfer`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GmemTransfer {
    /// The register holding the global address.
    pub base: Reg,
    /// What the instruction adds to `base` (0 when its offset does not select that operand).
    pub offset: i32,
    pub size: u32,
    /// An `st` (writes global memory) rather than an `ld` (reads it).
    pub store: bool,
}

/// One instruction. Sizes and lengths are `u32` (negative values are load errors);
/// immediates are the 32-bit two's-complement value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Inst {
    Nop,
    /// `rd = imm`.
    Sldi {
        rd: Reg,
        imm: i32,
    },
    /// `rd = GMem32[rs1 + offset]`; the offset is added unconditionally.
    Sld {
        rd: Reg,
        rs1: Reg,
        offset: i32,
    },
    /// Register-register arithmetic.
    Scalar {
        op: ScalarOp,
        rd: Reg,
        rs1: Reg,
        rs2: Reg,
    },
    /// Register-immediate arithmetic.
    ScalarImm {
        op: ScalarImmOp,
        rd: Reg,
        rs1: Reg,
        imm: i32,
    },
    Setbw {
        ibiw: Width,
        obiw: Width,
    },
    /// Multiply the `rows` input elements at `rs1` by array group `group`.
    /// `group` is a group number, or (for PIMCOMP-NN's format without an
    /// `array_group_map`) the number of arrays used; the program's config says which.
    Mvmul {
        rd: Reg,
        rs1: Reg,
        mbiw: Width,
        relu: bool,
        group: u32,
    },
    BinVec {
        op: BinVecOp,
        rd: Reg,
        rs1: Reg,
        rs2: Reg,
        len: u32,
        offset: Offset,
    },
    UnVec {
        op: UnVecOp,
        rd: Reg,
        rs1: Reg,
        len: u32,
        offset: Offset,
    },
    /// Average of `len` elements at `rs1 + offset·ibyw` with a stride of `rs2` elements.
    Vavg {
        rd: Reg,
        rs1: Reg,
        rs2: Reg,
        len: u32,
        offset: i32,
    },
    /// Gather `len` elements at `rs1` with a stride of `rs2` elements into `rd`.
    Vmv {
        rd: Reg,
        rs1: Reg,
        rs2: Reg,
        len: u32,
    },
    /// Transfers between or within memories; `size` is in bytes.
    Mem {
        op: MemOp,
        rd: Reg,
        rs1: Reg,
        size: u32,
        offset: Offset,
    },
    /// memset `size` bytes at `rd + offset` to `imm`.
    /// `from_float` records that the file gave the immediate as a float (PIMCOMP-NN's
    /// average-pooling constants), truncated toward zero; the machine counts those.
    Lldi {
        rd: Reg,
        imm: u8,
        size: u32,
        offset: i32,
        from_float: bool,
    },
    /// Synchronous send of `size` bytes at `rs1 + offset` to `core`.
    Send {
        rs1: Reg,
        core: u32,
        size: u32,
        offset: i32,
    },
    /// Receive `size` bytes from `core` into `rd + offset`.
    Recv {
        rd: Reg,
        core: u32,
        size: u32,
        offset: i32,
    },
    /// Block until event register `event` equals `value`, then reset it to 0.
    Wait {
        event: Reg,
        value: i32,
    },
    /// Add 1 to event register `event` of `core`.
    Sync {
        event: Reg,
        core: u32,
    },
}

/// The instruction set, one row per opcode (see the module doc for what is derived from it):
///
/// ```text
/// Opcode  "mnemonic" ["alias", ...]  Category  Inst-variant [sub-op]  { inst_field: kind(JSON key), ... };
/// ```
///
/// The category of a memory-bound instruction is `Transfer(n)`: it is the `n`-th of
/// [`Opcode::MEMORY_BOUND`], the order in which the thesis lists them (and reports count them).
///
/// Operand kinds (their spellings are in `formats::operand`): `reg` / `event` (a register,
/// positional `rN` / `eN` in assembly), `send_source` (`rs1`, or `rd` as PIMCOMP-NN writes
/// it), `imm32`, `width`, `u32`, `i32`, `relu`, `lldi_byte` + `lldi_float` (a byte immediate
/// and whether the file wrote it as a float), `bytes` (a byte count, `len` or `size`; the key
/// given is the canonical one), `offset` (select bits and value), `offset_value` (a value
/// added unconditionally, written nested in `offset`) and `top_offset_value` (the same,
/// written as a top-level `offset_value`). The row order is the [`Opcode`] order.
///
/// A consumer is a `macro_rules!` that takes the rows with this pattern:
///
/// ```text
/// $( $op:ident $mn:literal [$($alias:literal),*] $cat:ident $(($rank:literal))? $variant:ident
///    [$($sub:ident : $subv:path)?] { $($field:ident : $kind:ident ($($key:ident)?)),* } ;)*
/// ```
macro_rules! for_each_inst {
    ($m:ident) => {
        $m! {
            Nop    "nop"    []            Control      Nop       []                        {};
            Sldi   "sldi"   []            Scalar       Sldi      []                        { rd: reg(Rd), imm: imm32(Imm) };
            Sld    "sld"    []            Transfer(4)  Sld       []                        { rd: reg(Rd), rs1: reg(Rs1), offset: top_offset_value() };
            Sadd   "sadd"   []            Scalar       Scalar    [op: ScalarOp::Add]       { rd: reg(Rd), rs1: reg(Rs1), rs2: reg(Rs2) };
            Ssub   "ssub"   []            Scalar       Scalar    [op: ScalarOp::Sub]       { rd: reg(Rd), rs1: reg(Rs1), rs2: reg(Rs2) };
            Smul   "smul"   []            Scalar       Scalar    [op: ScalarOp::Mul]       { rd: reg(Rd), rs1: reg(Rs1), rs2: reg(Rs2) };
            Saddi  "saddi"  []            Scalar       ScalarImm [op: ScalarImmOp::Add]    { rd: reg(Rd), rs1: reg(Rs1), imm: imm32(Imm) };
            Smuli  "smuli"  []            Scalar       ScalarImm [op: ScalarImmOp::Mul]    { rd: reg(Rd), rs1: reg(Rs1), imm: imm32(Imm) };
            Setbw  "setbw"  []            Control      Setbw     []                        { ibiw: width(Ibiw), obiw: width(Obiw) };
            Mvmul  "mvmul"  []            Matrix       Mvmul     []                        { rd: reg(Rd), rs1: reg(Rs1), mbiw: width(Mbiw), relu: relu(), group: u32(Group) };
            Vvadd  "vvadd"  []            Vector       BinVec    [op: BinVecOp::Vvadd]     { rd: reg(Rd), rs1: reg(Rs1), rs2: reg(Rs2), len: u32(Len), offset: offset() };
            Vvsub  "vvsub"  ["vsub"]      Vector       BinVec    [op: BinVecOp::Vvsub]     { rd: reg(Rd), rs1: reg(Rs1), rs2: reg(Rs2), len: u32(Len), offset: offset() };
            Vvmul  "vvmul"  []            Vector       BinVec    [op: BinVecOp::Vvmul]     { rd: reg(Rd), rs1: reg(Rs1), rs2: reg(Rs2), len: u32(Len), offset: offset() };
            Vvdmul "vvdmul" []            Vector       BinVec    [op: BinVecOp::Vvdmul]    { rd: reg(Rd), rs1: reg(Rs1), rs2: reg(Rs2), len: u32(Len), offset: offset() };
            Vvmax  "vvmax"  []            Vector       BinVec    [op: BinVecOp::Vvmax]     { rd: reg(Rd), rs1: reg(Rs1), rs2: reg(Rs2), len: u32(Len), offset: offset() };
            Vvsll  "vvsll"  []            Vector       BinVec    [op: BinVecOp::Vvsll]     { rd: reg(Rd), rs1: reg(Rs1), rs2: reg(Rs2), len: u32(Len), offset: offset() };
            Vvsra  "vvsra"  []            Vector       BinVec    [op: BinVecOp::Vvsra]     { rd: reg(Rd), rs1: reg(Rs1), rs2: reg(Rs2), len: u32(Len), offset: offset() };
            Vavg   "vavg"   []            Vector       Vavg      []                        { rd: reg(Rd), rs1: reg(Rs1), rs2: reg(Rs2), len: u32(Len), offset: offset_value() };
            Vrelu  "vrelu"  []            Vector       UnVec     [op: UnVecOp::Vrelu]      { rd: reg(Rd), rs1: reg(Rs1), len: u32(Len), offset: offset() };
            Vtanh  "vtanh"  []            Vector       UnVec     [op: UnVecOp::Vtanh]      { rd: reg(Rd), rs1: reg(Rs1), len: u32(Len), offset: offset() };
            Vsigm  "vsigm"  ["vsigmoid"]  Vector       UnVec     [op: UnVecOp::Vsigm]      { rd: reg(Rd), rs1: reg(Rs1), len: u32(Len), offset: offset() };
            Vmv    "vmv"    []            Vector       Vmv       []                        { rd: reg(Rd), rs1: reg(Rs1), rs2: reg(Rs2), len: u32(Len) };
            Vrsu   "vrsu"   []            Vector       BinVec    [op: BinVecOp::Vrsu]      { rd: reg(Rd), rs1: reg(Rs1), rs2: reg(Rs2), len: u32(Len), offset: offset() };
            Vrsl   "vrsl"   []            Vector       BinVec    [op: BinVecOp::Vrsl]      { rd: reg(Rd), rs1: reg(Rs1), rs2: reg(Rs2), len: u32(Len), offset: offset() };
            Ld     "ld"     []            Transfer(0)  Mem       [op: MemOp::Ld]           { rd: reg(Rd), rs1: reg(Rs1), size: bytes(Size), offset: offset() };
            St     "st"     []            Transfer(1)  Mem       [op: MemOp::St]           { rd: reg(Rd), rs1: reg(Rs1), size: bytes(Size), offset: offset() };
            Lldi   "lldi"   []            Transfer(2)  Lldi      []                        { rd: reg(Rd), imm: lldi_byte(), from_float: lldi_float(), size: bytes(Len), offset: offset_value() };
            Lmv    "lmv"    []            Transfer(3)  Mem       [op: MemOp::Lmv]          { rd: reg(Rd), rs1: reg(Rs1), size: bytes(Len), offset: offset() };
            Send   "send"   []            Transfer(5)  Send      []                        { rs1: send_source(), core: u32(Core), size: bytes(Size), offset: offset_value() };
            Recv   "recv"   []            Transfer(6)  Recv      []                        { rd: reg(Rd), core: u32(Core), size: bytes(Size), offset: offset_value() };
            Wait   "wait"   []            Control      Wait      []                        { event: event(EventRegister), value: i32(WaitValue) };
            Sync   "sync"   []            Control      Sync      []                        { event: event(EventRegister), core: u32(Core) };
        }
    };
}
pub(crate) use for_each_inst;

/// What an instruction does. The classes follow isa.md's sections, except that the scalar load
/// `sld` is counted with the transfers (it reads global memory) and the width setting with the
/// instructions that only change a core's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// Register arithmetic.
    Scalar,
    /// Crossbar matrix-vector multiplication.
    Matrix,
    /// Vector operations on local memory.
    Vector,
    /// Moves bytes between or within memories, or between cores: the memory-bound class the
    /// thesis counts ([`Opcode::MEMORY_BOUND`]).
    Transfer,
    /// Changes a core's state or orders cores: the width setting, the event registers, and the
    /// empty instruction.
    Control,
}

/// `Some(rank)` for a row that gives one, `None` otherwise.
macro_rules! optional_rank {
    () => {
        None
    };
    ($rank:literal) => {
        Some($rank)
    };
}

/// Generates [`Opcode`], its name table and category, and [`Inst::opcode`] from the rows.
macro_rules! define_opcodes {
    ($( $op:ident $mn:literal [$($alias:literal),*] $cat:ident $(($rank:literal))? $variant:ident
        [$($sub:ident : $subv:path)?] { $($field:ident : $kind:ident ($($key:ident)?)),* } ;)*) => {
        /// The opcode of an instruction, one per row of [`for_each_inst!`], in its order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Opcode {
            $($op,)*
        }

        impl Opcode {
            /// Every opcode, in a fixed order (usable as an index with `as usize`).
            pub const ALL: [Opcode; [$($mn),*].len()] = [$(Opcode::$op),*];

            /// The canonical mnemonic, as written in JSON `op` fields and in assembly text.
            pub fn mnemonic(self) -> &'static str {
                match self {
                    $(Opcode::$op => $mn,)*
                }
            }

            /// Other spellings accepted when reading (PIMCOMP-NN's).
            pub fn aliases(self) -> &'static [&'static str] {
                match self {
                    $(Opcode::$op => &[$($alias),*],)*
                }
            }

            /// Parse a mnemonic or an alias.
            pub fn from_mnemonic(s: &str) -> Option<Opcode> {
                match s {
                    $($mn $(| $alias)* => Some(Opcode::$op),)*
                    _ => None,
                }
            }

            pub fn category(self) -> Category {
                match self {
                    $(Opcode::$op => Category::$cat,)*
                }
            }

            /// The position of a memory-bound opcode in [`Opcode::MEMORY_BOUND`].
            pub const fn memory_bound_rank(self) -> Option<usize> {
                match self {
                    $(Opcode::$op => optional_rank!($($rank)?),)*
                }
            }

            /// The instruction of this opcode with every operand zero (`r0`, width 8).
            pub fn template(self) -> Inst {
                match self {
                    $(Opcode::$op => Inst::$variant { $($sub: $subv,)? $($field: Default::default(),)* },)*
                }
            }
        }

        impl Inst {
            pub fn opcode(&self) -> Opcode {
                match *self {
                    $(Inst::$variant { $($sub: $subv,)? .. } => Opcode::$op,)*
                }
            }
        }

        /// How many rows give a memory-bound rank.
        const MEMORY_BOUND_COUNT: usize = <[&str]>::len(&[$($(stringify!($rank),)?)*]);
    };
}
for_each_inst!(define_opcodes);

impl Opcode {
    /// The memory-bound opcodes (the [`Category::Transfer`] class), in the order the thesis
    /// lists them: `ld`, `st`, `lldi`, `lmv`, `sld`, `send`, `recv`.
    pub const MEMORY_BOUND: [Opcode; MEMORY_BOUND_COUNT] = {
        let mut out = [Opcode::ALL[0]; MEMORY_BOUND_COUNT];
        let mut i = 0;
        while i < Opcode::ALL.len() {
            if let Some(rank) = Opcode::ALL[i].memory_bound_rank() {
                out[rank] = Opcode::ALL[i];
            }
            i += 1;
        }
        out
    };

    /// Memory-bound ops (the [`Category::Transfer`] class), as the thesis counts them.
    pub fn is_memory_bound(self) -> bool {
        self.category() == Category::Transfer
    }
}

impl Inst {
    /// Where an `ld` reads or an `st` writes global memory (isa.md: `rs1` of a load, `rd` of a
    /// store, each plus the offset when its select bit is set); `None` for every other
    /// instruction (`lmv` stays in local memory). For the analyses that follow global ranges
    /// without running the program.
    pub fn gmem_transfer(&self) -> Option<GmemTransfer> {
        let Inst::Mem {
            op,
            rd,
            rs1,
            size,
            offset,
        } = *self
        else {
            return None;
        };
        let (base, applies, store) = match op {
            MemOp::Ld => (rs1, offset.applies_to_rs1(), false),
            MemOp::St => (rd, offset.applies_to_rd(), true),
            MemOp::Lmv => return None,
        };
        Some(GmemTransfer {
            base,
            offset: if applies { offset.value } else { 0 },
            size,
            store,
        })
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mnemonic())
    }
}

/// Opcode → sub-op for the variants that group several opcodes, read off the opcode's
/// [`Opcode::template`], so that the mapping is the table's.
macro_rules! sub_op_from_opcode {
    ($($ty:ident in $variant:ident),+ $(,)?) => {
        $(impl $ty {
            /// The sub-op an opcode selects, `None` for opcodes of another shape.
            pub fn from_opcode(op: Opcode) -> Option<$ty> {
                match op.template() {
                    Inst::$variant { op, .. } => Some(op),
                    _ => None,
                }
            }
        })+
    };
}

sub_op_from_opcode!(
    ScalarOp in Scalar,
    ScalarImmOp in ScalarImm,
    BinVecOp in BinVec,
    UnVecOp in UnVec,
    MemOp in Mem,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inst_is_compact() {
        assert!(
            std::mem::size_of::<Inst>() <= 20,
            "{}",
            std::mem::size_of::<Inst>()
        );
    }

    #[test]
    fn sub_ops_map_back_to_their_opcodes() {
        let r = Reg::new(0).unwrap();
        for op in Opcode::ALL {
            if let Some(o) = ScalarOp::from_opcode(op) {
                assert_eq!(
                    Inst::Scalar {
                        op: o,
                        rd: r,
                        rs1: r,
                        rs2: r
                    }
                    .opcode(),
                    op
                );
            }
            if let Some(o) = ScalarImmOp::from_opcode(op) {
                assert_eq!(
                    Inst::ScalarImm {
                        op: o,
                        rd: r,
                        rs1: r,
                        imm: 0
                    }
                    .opcode(),
                    op
                );
            }
            if let Some(o) = BinVecOp::from_opcode(op) {
                let i = Inst::BinVec {
                    op: o,
                    rd: r,
                    rs1: r,
                    rs2: r,
                    len: 0,
                    offset: Offset::ZERO,
                };
                assert_eq!(i.opcode(), op);
            }
            if let Some(o) = UnVecOp::from_opcode(op) {
                let i = Inst::UnVec {
                    op: o,
                    rd: r,
                    rs1: r,
                    len: 0,
                    offset: Offset::ZERO,
                };
                assert_eq!(i.opcode(), op);
            }
            if let Some(o) = MemOp::from_opcode(op) {
                let i = Inst::Mem {
                    op: o,
                    rd: r,
                    rs1: r,
                    size: 0,
                    offset: Offset::ZERO,
                };
                assert_eq!(i.opcode(), op);
            }
        }
    }

    #[test]
    fn templates_have_their_opcode() {
        for op in Opcode::ALL {
            assert_eq!(op.template().opcode(), op);
        }
        assert!(Opcode::Lmv.is_memory_bound() && Opcode::Sld.is_memory_bound());
        assert!(!Opcode::Vvadd.is_memory_bound() && !Opcode::Wait.is_memory_bound());
    }

    #[test]
    fn gmem_transfers_are_the_global_side_of_ld_and_st() {
        let r = |i| Reg::new(i).unwrap();
        let mem = |op, select| Inst::Mem {
            op,
            rd: r(1),
            rs1: r(2),
            size: 16,
            offset: Offset { select, value: 8 },
        };
        let side = |base, offset, store| {
            Some(GmemTransfer {
                base: r(base),
                offset,
                size: 16,
                store,
            })
        };
        assert_eq!(mem(MemOp::Ld, 0b011).gmem_transfer(), side(2, 8, false));
        assert_eq!(mem(MemOp::Ld, 0b001).gmem_transfer(), side(2, 0, false));
        assert_eq!(mem(MemOp::St, 0b011).gmem_transfer(), side(1, 8, true));
        assert_eq!(mem(MemOp::St, 0b010).gmem_transfer(), side(1, 0, true));
        assert_eq!(mem(MemOp::Lmv, 0b011).gmem_transfer(), None);
        assert_eq!(Opcode::Sld.template().gmem_transfer(), None);
    }

    #[test]
    fn memory_bound_ranks_order_the_transfers() {
        for op in Opcode::ALL {
            assert_eq!(
                op.memory_bound_rank().is_some(),
                op.is_memory_bound(),
                "{op}"
            );
            if let Some(rank) = op.memory_bound_rank() {
                assert_eq!(Opcode::MEMORY_BOUND[rank], op, "two rows share rank {rank}");
            }
        }
        let names = Opcode::MEMORY_BOUND.map(Opcode::mnemonic);
        assert_eq!(names, ["ld", "st", "lldi", "lmv", "sld", "send", "recv"]);
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
