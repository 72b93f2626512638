//! Turning the fields of one instruction, as a reader collected them, into a validated [`Inst`].
//!
//! Both readers feed this one decoder: the JSON reader stores each JSON field it meets in a
//! [`RawInst`], and the assembly parser stores its operands under the same JSON field names.
//! So the field rules of `isa.md` (which fields each op needs, the accepted ranges, the
//! spellings that must agree) live here once.
//!
//! Ranges accepted (documented in `formats`' module doc as well):
//! - registers `0..=31`, widths `1..=32`, `offset_select` `0..=7`;
//! - sizes, lengths, core ids and group numbers: `0..=2^32-1`;
//! - `offset_value`, `wait_value`: a signed 32-bit integer;
//! - `sldi` / `saddi` / `smuli` `imm`: `-2^31..=2^32-1`, stored as its 32-bit pattern (so both
//!   `-1` and `4294967295` mean all ones);
//! - `lldi` `imm`: an integer in `-128..=255`, stored as its byte, or a float, truncated toward
//!   zero and then in the same range (`from_float` is set);
//! - `relu`: `0`, `1`, `false` or `true`.

use crate::inst::{
    BinVecOp, Inst, MemOp, Offset, Opcode, Reg, ScalarImmOp, ScalarOp, UnVecOp, Width,
};

use super::error::FieldProblem;

/// One field value as a reader saw it, before its type is checked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Val {
    Int(i64),
    /// An unsigned integer above `i64::MAX`: always out of range here.
    Huge(u64),
    Float(f64),
    Bool(bool),
    /// Any other JSON type; the string names it ("a string", "an object", ...).
    Other(&'static str),
}

/// The fields an instruction may carry, by their JSON names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Field {
    Rd,
    Rs1,
    Rs2,
    Imm,
    Len,
    Size,
    /// Top-level `offset_value` (the form `sld` uses).
    OffsetValue,
    Core,
    Mbiw,
    Relu,
    Group,
    Ibiw,
    Obiw,
    EventRegister,
    WaitValue,
    /// `offset.offset_select`.
    NestedSelect,
    /// `offset.offset_value`.
    NestedValue,
    /// The `offset` object as a whole (named in errors only; never stored).
    Offset,
}

pub(crate) const FIELD_COUNT: usize = Field::Offset as usize + 1;

impl Field {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Field::Rd => "rd",
            Field::Rs1 => "rs1",
            Field::Rs2 => "rs2",
            Field::Imm => "imm",
            Field::Len => "len",
            Field::Size => "size",
            Field::OffsetValue => "offset_value",
            Field::Core => "core",
            Field::Mbiw => "mbiw",
            Field::Relu => "relu",
            Field::Group => "group",
            Field::Ibiw => "ibiw",
            Field::Obiw => "obiw",
            Field::EventRegister => "event_register",
            Field::WaitValue => "wait_value",
            Field::NestedSelect => "offset.offset_select",
            Field::NestedValue => "offset.offset_value",
            Field::Offset => "offset",
        }
    }

    /// The top-level JSON key for this field (`None` for the nested offset fields).
    pub(crate) fn from_key(key: &[u8]) -> Option<Field> {
        Some(match key {
            b"rd" => Field::Rd,
            b"rs1" => Field::Rs1,
            b"rs2" => Field::Rs2,
            b"imm" => Field::Imm,
            b"len" => Field::Len,
            b"size" => Field::Size,
            b"offset_value" => Field::OffsetValue,
            b"core" => Field::Core,
            b"mbiw" => Field::Mbiw,
            b"relu" => Field::Relu,
            b"group" => Field::Group,
            b"ibiw" => Field::Ibiw,
            b"obiw" => Field::Obiw,
            b"event_register" => Field::EventRegister,
            b"wait_value" => Field::WaitValue,
            _ => return None,
        })
    }
}

/// The `op` field as read.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RawOp {
    Known(Opcode),
    Unknown(String),
    WrongType(&'static str),
}

/// The fields of one instruction, collected in any order. `present` has bit `f` set when
/// `vals[f]` was given, so that clearing between instructions is one store, not a memset.
#[derive(Clone, Debug)]
pub(crate) struct RawInst {
    pub op: Option<RawOp>,
    present: u32,
    vals: [Val; FIELD_COUNT],
    /// `Some(type name)` when `offset` was present but not an object.
    pub offset_wrong_type: Option<&'static str>,
}

impl Default for RawInst {
    fn default() -> RawInst {
        RawInst {
            op: None,
            present: 0,
            vals: [Val::Int(0); FIELD_COUNT],
            offset_wrong_type: None,
        }
    }
}

impl RawInst {
    pub(crate) fn clear(&mut self) {
        self.op = None;
        self.present = 0;
        self.offset_wrong_type = None;
    }

    pub(crate) fn set(&mut self, field: Field, val: Val) {
        self.vals[field as usize] = val;
        self.present |= 1 << field as u32;
    }

    fn get(&self, field: Field) -> Option<Val> {
        (self.present & (1 << field as u32) != 0).then(|| self.vals[field as usize])
    }
}

/// A decoding failure: the op when known, the field at fault (`None`: the whole instruction).
pub(crate) type DecodeError = (Option<Opcode>, Option<&'static str>, FieldProblem);

type R<T> = Result<T, (Field, FieldProblem)>;

const NON_NEG: &str = "a non-negative integer";
const U32_RANGE: &str = "an integer in 0..=4294967295";
const I32_RANGE: &str = "an integer in -2147483648..=2147483647";
const IMM32_RANGE: &str = "an integer in -2147483648..=4294967295";
const BYTE_RANGE: &str = "an integer in -128..=255";

/// Validate `raw` into an instruction.
pub(crate) fn decode(raw: &RawInst) -> Result<Inst, DecodeError> {
    let op = match &raw.op {
        None => return Err((None, Some("op"), FieldProblem::Missing)),
        Some(RawOp::Unknown(s)) => {
            return Err((None, Some("op"), FieldProblem::UnknownOp(s.clone())))
        }
        Some(RawOp::WrongType(t)) => {
            return Err((
                None,
                Some("op"),
                FieldProblem::WrongType {
                    expected: "a string",
                    found: t,
                },
            ))
        }
        Some(RawOp::Known(op)) => *op,
    };
    decode_op(op, raw).map_err(|(field, problem)| (Some(op), Some(field.name()), problem))
}

fn decode_op(op: Opcode, raw: &RawInst) -> R<Inst> {
    use Field::*;
    let f = Fields(raw);
    Ok(match op {
        Opcode::Nop => Inst::Nop,
        Opcode::Sldi => Inst::Sldi {
            rd: f.reg(Rd)?,
            imm: f.imm32(Imm)?,
        },
        Opcode::Sld => Inst::Sld {
            rd: f.reg(Rd)?,
            rs1: f.reg(Rs1)?,
            offset: f.offset_value()?,
        },
        Opcode::Sadd | Opcode::Ssub | Opcode::Smul => {
            Inst::Scalar {
                op: ScalarOp::from_opcode(op).expect("a scalar opcode"),
                rd: f.reg(Rd)?,
                rs1: f.reg(Rs1)?,
                rs2: f.reg(Rs2)?,
            }
        }
        Opcode::Saddi | Opcode::Smuli => {
            Inst::ScalarImm {
                op: ScalarImmOp::from_opcode(op).expect("a scalar-immediate opcode"),
                rd: f.reg(Rd)?,
                rs1: f.reg(Rs1)?,
                imm: f.imm32(Imm)?,
            }
        }
        Opcode::Setbw => Inst::Setbw {
            ibiw: f.width(Ibiw)?,
            obiw: f.width(Obiw)?,
        },
        Opcode::Mvmul => Inst::Mvmul {
            rd: f.reg(Rd)?,
            rs1: f.reg(Rs1)?,
            mbiw: f.width(Mbiw)?,
            relu: f.relu()?,
            group: f.u32(Group)?,
        },
        Opcode::Vvadd
        | Opcode::Vvsub
        | Opcode::Vvmul
        | Opcode::Vvdmul
        | Opcode::Vvmax
        | Opcode::Vvsll
        | Opcode::Vvsra
        | Opcode::Vrsu
        | Opcode::Vrsl => Inst::BinVec {
            op: BinVecOp::from_opcode(op).expect("a binary vector opcode"),
            rd: f.reg(Rd)?,
            rs1: f.reg(Rs1)?,
            rs2: f.reg(Rs2)?,
            len: f.u32(Len)?,
            offset: f.offset()?,
        },
        Opcode::Vrelu | Opcode::Vtanh | Opcode::Vsigm => Inst::UnVec {
            op: UnVecOp::from_opcode(op).expect("a unary vector opcode"),
            rd: f.reg(Rd)?,
            rs1: f.reg(Rs1)?,
            len: f.u32(Len)?,
            offset: f.offset()?,
        },
        Opcode::Vavg => Inst::Vavg {
            rd: f.reg(Rd)?,
            rs1: f.reg(Rs1)?,
            rs2: f.reg(Rs2)?,
            len: f.u32(Len)?,
            offset: f.offset_value()?,
        },
        Opcode::Vmv => Inst::Vmv {
            rd: f.reg(Rd)?,
            rs1: f.reg(Rs1)?,
            rs2: f.reg(Rs2)?,
            len: f.u32(Len)?,
        },
        Opcode::Ld | Opcode::St | Opcode::Lmv => {
            let mem_op = MemOp::from_opcode(op).expect("a memory opcode");
            // `lmv` spells its byte count `len`, `ld`/`st` spell it `size`.
            let canonical = if mem_op == MemOp::Lmv { Len } else { Size };
            Inst::Mem {
                op: mem_op,
                rd: f.reg(Rd)?,
                rs1: f.reg(Rs1)?,
                size: f.byte_size(canonical)?,
                offset: f.offset()?,
            }
        }
        Opcode::Lldi => {
            let rd = f.reg(Rd)?;
            let (imm, from_float) = f.lldi_imm()?;
            Inst::Lldi {
                rd,
                imm,
                size: f.byte_size(Len)?,
                offset: f.offset_value()?,
                from_float,
            }
        }
        Opcode::Send => Inst::Send {
            rs1: f.send_source()?,
            core: f.u32(Core)?,
            size: f.byte_size(Size)?,
            offset: f.offset_value()?,
        },
        Opcode::Recv => Inst::Recv {
            rd: f.reg(Rd)?,
            core: f.u32(Core)?,
            size: f.byte_size(Size)?,
            offset: f.offset_value()?,
        },
        Opcode::Wait => Inst::Wait {
            event: f.reg(EventRegister)?,
            value: f.i32(WaitValue)?,
        },
        Opcode::Sync => Inst::Sync {
            event: f.reg(EventRegister)?,
            core: f.u32(Core)?,
        },
    })
}

/// Typed accessors over a [`RawInst`]; each names its field in errors.
struct Fields<'a>(&'a RawInst);

impl Fields<'_> {
    /// The integer in `field`, `None` when absent; `expected` describes the field's range.
    fn int(&self, field: Field, expected: &'static str) -> R<Option<i64>> {
        match self.0.get(field) {
            None => Ok(None),
            Some(Val::Int(v)) => Ok(Some(v)),
            Some(Val::Huge(v)) => Err((
                field,
                FieldProblem::OutOfRange {
                    expected,
                    found: v.to_string(),
                },
            )),
            Some(other) => Err((
                field,
                FieldProblem::WrongType {
                    expected,
                    found: type_name(other),
                },
            )),
        }
    }

    fn required(&self, field: Field, expected: &'static str) -> R<i64> {
        self.int(field, expected)?
            .ok_or((field, FieldProblem::Missing))
    }

    fn reg(&self, field: Field) -> R<Reg> {
        let v = self.required(field, "a register index")?;
        reg_from(v).ok_or((field, FieldProblem::RegisterOutOfRange(v)))
    }

    fn width(&self, field: Field) -> R<Width> {
        let v = self.required(field, "a width in bits")?;
        width_from(v).ok_or((field, FieldProblem::WidthOutOfRange(v)))
    }

    fn u32(&self, field: Field) -> R<u32> {
        let v = self.required(field, NON_NEG)?;
        u32_from(field, v)
    }

    fn i32(&self, field: Field) -> R<i32> {
        let v = self.required(field, I32_RANGE)?;
        i32::try_from(v).map_err(|_| (field, out_of_range(I32_RANGE, v)))
    }

    fn imm32(&self, field: Field) -> R<i32> {
        let v = self.required(field, IMM32_RANGE)?;
        imm32_from(v).ok_or((field, out_of_range(IMM32_RANGE, v)))
    }

    fn relu(&self) -> R<bool> {
        match self.0.get(Field::Relu) {
            None => Err((Field::Relu, FieldProblem::Missing)),
            Some(Val::Bool(b)) => Ok(b),
            Some(Val::Int(0)) => Ok(false),
            Some(Val::Int(1)) => Ok(true),
            Some(Val::Int(v)) => Err((Field::Relu, out_of_range("0 or 1", v))),
            Some(Val::Huge(v)) => Err((
                Field::Relu,
                FieldProblem::OutOfRange {
                    expected: "0 or 1",
                    found: v.to_string(),
                },
            )),
            Some(other) => Err((
                Field::Relu,
                FieldProblem::WrongType {
                    expected: "0 or 1",
                    found: type_name(other),
                },
            )),
        }
    }

    /// `lldi`'s immediate: an integer byte, or a float truncated toward zero.
    fn lldi_imm(&self) -> R<(u8, bool)> {
        match self.0.get(Field::Imm) {
            Some(Val::Float(x)) => lldi_imm_from_float(x).map(|b| (b, true)).ok_or((
                Field::Imm,
                FieldProblem::OutOfRange {
                    expected: BYTE_RANGE,
                    found: x.to_string(),
                },
            )),
            _ => {
                let v = self.required(Field::Imm, BYTE_RANGE)?;
                lldi_imm_from_int(v)
                    .map(|b| (b, false))
                    .ok_or((Field::Imm, out_of_range(BYTE_RANGE, v)))
            }
        }
    }

    /// A byte count spelled `len` or `size` (`canonical` is the spelling isa.md gives the op;
    /// it is the one named when both are missing).
    fn byte_size(&self, canonical: Field) -> R<u32> {
        let len = self.int(Field::Len, NON_NEG)?;
        let size = self.int(Field::Size, NON_NEG)?;
        let v = match (len, size) {
            (Some(l), Some(s)) if l != s => {
                return Err((
                    Field::Size,
                    FieldProblem::Disagree {
                        other: "len",
                        value: s,
                        other_value: l,
                    },
                ))
            }
            (Some(v), _) | (None, Some(v)) => v,
            (None, None) => return Err((canonical, FieldProblem::Missing)),
        };
        let field = if len.is_some() {
            Field::Len
        } else {
            Field::Size
        };
        u32_from(field, v)
    }

    /// `send`'s source register, in `rs1` or `rd` (both must agree).
    fn send_source(&self) -> R<Reg> {
        let rd = self.int(Field::Rd, "a register index")?;
        let rs1 = self.int(Field::Rs1, "a register index")?;
        let (field, v) = match (rd, rs1) {
            (Some(a), Some(b)) if a != b => {
                return Err((
                    Field::Rs1,
                    FieldProblem::Disagree {
                        other: "rd",
                        value: b,
                        other_value: a,
                    },
                ))
            }
            (_, Some(v)) => (Field::Rs1, v),
            (Some(v), None) => (Field::Rd, v),
            (None, None) => return Err((Field::Rs1, FieldProblem::Missing)),
        };
        reg_from(v).ok_or((field, FieldProblem::RegisterOutOfRange(v)))
    }

    fn check_offset_object(&self) -> R<()> {
        match self.0.offset_wrong_type {
            Some(found) => Err((
                Field::Offset,
                FieldProblem::WrongType {
                    expected: "an offset object",
                    found,
                },
            )),
            None => Ok(()),
        }
    }

    /// The offset value of the ops that add it unconditionally: top-level `offset_value`
    /// and/or `offset.offset_value` (which must agree); absent means 0.
    fn offset_value(&self) -> R<i32> {
        self.check_offset_object()?;
        let top = self.int(Field::OffsetValue, I32_RANGE)?;
        let nested = self.int(Field::NestedValue, I32_RANGE)?;
        let (field, v) = match (top, nested) {
            (Some(t), Some(n)) if t != n => {
                return Err((
                    Field::OffsetValue,
                    FieldProblem::Disagree {
                        other: "offset.offset_value",
                        value: t,
                        other_value: n,
                    },
                ))
            }
            (Some(v), _) => (Field::OffsetValue, v),
            (None, Some(v)) => (Field::NestedValue, v),
            (None, None) => return Ok(0),
        };
        i32::try_from(v).map_err(|_| (field, out_of_range(I32_RANGE, v)))
    }

    /// A full offset (select bits and value); absent parts are 0.
    fn offset(&self) -> R<Offset> {
        let value = self.offset_value()?;
        let select = match self.int(Field::NestedSelect, "an integer in 0..=7")? {
            None => 0,
            Some(s) => select_from(s)
                .ok_or((Field::NestedSelect, FieldProblem::OffsetSelectOutOfRange(s)))?,
        };
        Ok(Offset { select, value })
    }
}

fn out_of_range(expected: &'static str, v: i64) -> FieldProblem {
    FieldProblem::OutOfRange {
        expected,
        found: v.to_string(),
    }
}

fn u32_from(field: Field, v: i64) -> R<u32> {
    if v < 0 {
        return Err((field, out_of_range(NON_NEG, v)));
    }
    u32::try_from(v).map_err(|_| (field, out_of_range(U32_RANGE, v)))
}

fn type_name(v: Val) -> &'static str {
    match v {
        Val::Int(_) | Val::Huge(_) => "an integer",
        Val::Float(_) => "a float",
        Val::Bool(_) => "a boolean",
        Val::Other(t) => t,
    }
}

pub(crate) fn reg_from(v: i64) -> Option<Reg> {
    u32::try_from(v).ok().and_then(Reg::new)
}

pub(crate) fn width_from(v: i64) -> Option<Width> {
    u32::try_from(v).ok().and_then(Width::new)
}

pub(crate) fn select_from(v: i64) -> Option<u8> {
    (0..8).contains(&v).then_some(v as u8)
}

/// `sldi`/`saddi`/`smuli` immediates: `-2^31..=2^32-1`, kept as the 32-bit pattern.
pub(crate) fn imm32_from(v: i64) -> Option<i32> {
    (i32::MIN as i64..=u32::MAX as i64)
        .contains(&v)
        .then_some(v as u32 as i32)
}

/// `lldi` integer immediates: `-128..=255`, kept as the byte.
pub(crate) fn lldi_imm_from_int(v: i64) -> Option<u8> {
    (-128..=255).contains(&v).then_some(v as u8)
}

/// `lldi` float immediates (PIMCOMP-NN's pooling constants): truncated toward zero, then as
/// for integers.
pub(crate) fn lldi_imm_from_float(x: f64) -> Option<u8> {
    let t = x.trunc();
    (t.is_finite() && (-128.0..=255.0).contains(&t)).then_some((t as i64) as u8)
}
