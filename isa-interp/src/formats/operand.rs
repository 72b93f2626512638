//! The operands of each instruction as the formats spell them: the JSON fields ([`Field`]),
//! the operand kinds of the instruction table ([`Kind`]), and [`operands`], each opcode's
//! operand list derived from the table (`inst::for_each_inst!`).
//!
//! | kind | JSON | assembly |
//! |---|---|---|
//! | `reg(K)` | `"K": n` | positional `rN` |
//! | `event(K)` | `"K": n` | positional `eN` |
//! | `send_source()` | `"rs1": n` or `"rd": n` (both written; must agree) | positional `rN` |
//! | `imm32(K)` | `"K": i`, `-2^31..=2^32-1` kept as the 32-bit pattern | `imm=I` |
//! | `width(K)` | `"K": bits` | `K=bits` |
//! | `u32(K)`, `i32(K)` | `"K": n` | `K=n` (`wait_value` is `value=`) |
//! | `relu()` | `"relu": 0\|1\|false\|true` | `relu=0\|1` |
//! | `lldi_byte()` | `"imm": b` in `-128..=255`, or a float truncated toward zero | `imm=B` |
//! | `lldi_float()` | whether `imm` was a float (written `3.0`) | an `f` suffix: `imm=3f` |
//! | `bytes(K)` | `"len"` or `"size"` (must agree); `K` is written and named when missing | `size=N` |
//! | `offset()` | `"offset": {"offset_select": s, "offset_value": v}` | `off=V@S` |
//! | `offset_value()` | top-level and/or nested `offset_value` (must agree); written nested | `off=V` |
//! | `top_offset_value()` | as `offset_value()`, written top-level | `off=V` |
//!
//! A missing offset is zero; every other operand is required.

use crate::inst::{for_each_inst, Opcode};

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
    /// Top-level `offset_value`.
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

/// How an operand is spelled (the kinds of the instruction table, see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Reg,
    Event,
    SendSource,
    Imm32,
    Width,
    U32,
    I32,
    Relu,
    LldiByte,
    LldiFloat,
    Bytes,
    Offset,
    OffsetValue,
    TopOffsetValue,
}

/// One operand of an instruction: its kind and the JSON field it is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Operand {
    pub kind: Kind,
    pub field: Field,
}

/// Constructors named like the table's kinds, so that the table's rows expand to them.
impl Operand {
    const fn new(kind: Kind, field: Field) -> Operand {
        Operand { kind, field }
    }
    const fn reg(field: Field) -> Operand {
        Operand::new(Kind::Reg, field)
    }
    const fn event(field: Field) -> Operand {
        Operand::new(Kind::Event, field)
    }
    const fn send_source() -> Operand {
        Operand::new(Kind::SendSource, Field::Rs1)
    }
    const fn imm32(field: Field) -> Operand {
        Operand::new(Kind::Imm32, field)
    }
    const fn width(field: Field) -> Operand {
        Operand::new(Kind::Width, field)
    }
    const fn u32(field: Field) -> Operand {
        Operand::new(Kind::U32, field)
    }
    const fn i32(field: Field) -> Operand {
        Operand::new(Kind::I32, field)
    }
    const fn relu() -> Operand {
        Operand::new(Kind::Relu, Field::Relu)
    }
    const fn lldi_byte() -> Operand {
        Operand::new(Kind::LldiByte, Field::Imm)
    }
    const fn lldi_float() -> Operand {
        Operand::new(Kind::LldiFloat, Field::Imm)
    }
    const fn bytes(field: Field) -> Operand {
        Operand::new(Kind::Bytes, field)
    }
    const fn offset() -> Operand {
        Operand::new(Kind::Offset, Field::NestedValue)
    }
    const fn offset_value() -> Operand {
        Operand::new(Kind::OffsetValue, Field::NestedValue)
    }
    const fn top_offset_value() -> Operand {
        Operand::new(Kind::TopOffsetValue, Field::NestedValue)
    }

    /// The register prefix of a positional assembly operand (`r` or `e`), `None` for the
    /// `key=value` ones.
    pub(crate) fn register_prefix(self) -> Option<char> {
        match self.kind {
            Kind::Reg | Kind::SendSource => Some('r'),
            Kind::Event => Some('e'),
            _ => None,
        }
    }

    /// The key of a `key=value` assembly operand (`None` for registers and for the float
    /// marker, which is a suffix of the immediate).
    pub(crate) fn asm_key(self) -> Option<&'static str> {
        Some(match self.kind {
            Kind::Reg | Kind::Event | Kind::SendSource | Kind::LldiFloat => return None,
            Kind::Imm32 | Kind::LldiByte => "imm",
            Kind::Bytes => "size",
            Kind::Offset | Kind::OffsetValue | Kind::TopOffsetValue => "off",
            Kind::I32 if self.field == Field::WaitValue => "value",
            Kind::Width | Kind::U32 | Kind::I32 | Kind::Relu => self.field.name(),
        })
    }

    /// Whether the operand may be left out (offsets, which default to zero).
    pub(crate) fn optional(self) -> bool {
        matches!(
            self.kind,
            Kind::Offset | Kind::OffsetValue | Kind::TopOffsetValue
        )
    }
}

macro_rules! operand_lists {
    ($( $op:ident $mn:literal [$($alias:literal),*] $cat:ident $(($rank:literal))? $variant:ident
        [$($sub:ident : $subv:path)?] { $($field:ident : $kind:ident ($($key:ident)?)),* } ;)*) => {
        /// The operands of `op`, in the table's order.
        pub(crate) fn operands(op: Opcode) -> &'static [Operand] {
            match op {
                $(Opcode::$op => {
                    const OPERANDS: &[Operand] = &[$(Operand::$kind($(Field::$key)?)),*];
                    OPERANDS
                })*
            }
        }
    };
}
for_each_inst!(operand_lists);

/// The JSON key PIMSim's format gives `op`'s byte count (`size`, or `len` for `lldi` and
/// `lmv`), `None` for an opcode without one. Reports that name an operand use it.
pub fn size_key(op: Opcode) -> Option<&'static str> {
    operands(op)
        .iter()
        .find(|o| o.kind == Kind::Bytes)
        .map(|o| o.field.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_keys_are_the_json_keys_of_the_byte_counts() {
        let key = |op: &str| size_key(Opcode::from_mnemonic(op).unwrap());
        assert_eq!(key("ld"), Some("size"));
        assert_eq!(key("send"), Some("size"));
        assert_eq!(key("lmv"), Some("len"));
        assert_eq!(key("lldi"), Some("len"));
        // A vector length counts elements, not bytes.
        assert_eq!(key("vvadd"), None);
        assert_eq!(key("nop"), None);
    }
}
