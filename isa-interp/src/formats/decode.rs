//! Turning the fields of one instruction, as a reader collected them, into a validated [`Inst`].
//!
//! Both readers feed this one decoder: the JSON reader stores each JSON field it meets in a
//! [`RawInst`], and the assembly parser stores its operands under the same JSON field names.
//! Which fields each op needs comes from the instruction table (`inst::for_each_inst!`): one
//! [`Fields`] method per operand kind, named after it, checks the accepted ranges and the
//! spellings that must agree, so those rules live here once.
//!
//! Ranges accepted (documented in `formats`' module doc as well):
//! - registers `0..=31`, widths `1..=32`, `offset_select` `0..=7`;
//! - sizes, lengths, core ids and group numbers: `0..=2^32-1`;
//! - `offset_value`, `wait_value`: a signed 32-bit integer;
//! - 32-bit immediates (`imm32`): `-2^31..=2^32-1`, stored as their 32-bit pattern (so both
//!   `-1` and `4294967295` mean all ones);
//! - byte immediates (`lldi_byte`): an integer in `-128..=255`, stored as its byte, or a float,
//!   truncated toward zero and then in the same range (`lldi_float` is then true);
//! - `relu`: `0`, `1`, `false` or `true`.

use crate::inst::{
    for_each_inst, BinVecOp, Inst, MemOp, Offset, Opcode, Reg, ScalarImmOp, ScalarOp, UnVecOp,
    Width,
};

use super::operand::{Field, FIELD_COUNT};
use super::problem::FieldProblem;

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

macro_rules! decode_ops {
    ($( $op:ident $mn:literal [$($alias:literal),*] $cat:ident $(($rank:literal))? $variant:ident
        [$($sub:ident : $subv:path)?] { $($field:ident : $kind:ident ($($key:ident)?)),* } ;)*) => {
        /// The instruction `op` with its operands read from `raw`, in the table's order (so the
        /// first bad operand in that order is the one reported).
        fn decode_op(op: Opcode, raw: &RawInst) -> R<Inst> {
            let f = Fields(raw);
            Ok(match op {
                $(Opcode::$op => Inst::$variant { $($sub: $subv,)? $($field: f.$kind($(Field::$key)?)?,)* },)*
            })
        }
    };
}
for_each_inst!(decode_ops);

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

    /// An event register: read as a general register.
    fn event(&self, field: Field) -> R<Reg> {
        self.reg(field)
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
        imm32_from(v).ok_or_else(|| (field, out_of_range(IMM32_RANGE, v)))
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

    /// A byte immediate: an integer, or a float truncated toward zero.
    fn lldi_byte(&self) -> R<u8> {
        match self.0.get(Field::Imm) {
            Some(Val::Float(x)) => lldi_imm_from_float(x).ok_or_else(|| {
                (
                    Field::Imm,
                    FieldProblem::OutOfRange {
                        expected: BYTE_RANGE,
                        found: x.to_string(),
                    },
                )
            }),
            _ => {
                let v = self.required(Field::Imm, BYTE_RANGE)?;
                lldi_imm_from_int(v).ok_or_else(|| (Field::Imm, out_of_range(BYTE_RANGE, v)))
            }
        }
    }

    /// Whether the byte immediate was given as a float.
    fn lldi_float(&self) -> R<bool> {
        Ok(matches!(self.0.get(Field::Imm), Some(Val::Float(_))))
    }

    /// A byte count spelled `len` or `size` (`canonical` is the spelling isa.md gives the op;
    /// it is the one named when both are missing).
    fn bytes(&self, canonical: Field) -> R<u32> {
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

    /// A transfer's source register, in `rs1` or `rd` (both must agree).
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

    /// [`Fields::offset_value`], which the writer puts at top level instead of nested.
    fn top_offset_value(&self) -> R<i32> {
        self.offset_value()
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
