//! Operand kinds: how each kind of instruction parameter is read from a literal of a program
//! line and written back. The instruction table (`isa.rs`) names a kind per parameter; every
//! kind is a module here with the same three items:
//!
//! - `parse(&Value) -> Result<T, ValueProblem>`: the literal, checked;
//! - `write(&T, &mut String)`: the literal the printer writes (Python reads it back);
//! - `POSITIONAL`: whether the printer writes it without its name when it leads the call (the
//!   compiler's style for the ALU operation and the MVM mask).
//!
//! | kind | Rust type | literal | range |
//! |---|---|---|---|
//! | `reg` | `u32` | integer | a register address, `0..2^32` (the machine checks the map) |
//! | `addr` | `u32` | integer | a tile-memory address, `0..2^32` (the machine checks it) |
//! | `count` | `u32` | integer | `0..2^32` |
//! | `count1` | `u32` | integer | `1..2^32` (the simulator never finishes a zero-length transfer) |
//! | `ldst` | `u32` | integer | `1..=16` (the load/store bus, asserted by `i_load`/`i_store`) |
//! | `sendw` | `u32` | integer | `1..=16` (the receive buffer's width, asserted by `send`) |
//! | `target` | `u32` | integer | an instruction index |
//! | `int` | `i64` | integer | any |
//! | `real` | [`Real`] | integer or float | finite |
//! | `mask` | [`Mask`] | `['10']` | one string of one `0`/`1` per MVMU |
//! | `aluop` | [`AluOp`] | `'add'` | a name of [`AluOp`] |
//! | `intop` | [`IntOp`] | `'add'` | a name of [`IntOp`] |

use std::fmt::Write;

use crate::arch::{MAX_LOAD_STORE_WIDTH, MAX_SEND_WIDTH, MVMUS_PER_CORE};
use crate::formats::call::Value;
use crate::formats::error::ValueProblem;
use crate::values::{AluOp, IntOp, Mask, Real};

fn integer(v: &Value, min: i64, max: i64) -> Result<i64, ValueProblem> {
    match *v {
        Value::Int(i) if (min..=max).contains(&i) => Ok(i),
        Value::Int(value) => Err(ValueProblem::OutOfRange { value, min, max }),
        ref other => Err(ValueProblem::WrongType {
            expected: "an integer",
            found: other.describe(),
        }),
    }
}

fn write_display(v: &impl std::fmt::Display, out: &mut String) {
    let _ = write!(out, "{v}");
}

/// Unsigned 32-bit kinds with a range.
macro_rules! u32_kind {
    ($($name:ident: $min:expr, $max:expr;)*) => {$(
        pub(crate) mod $name {
            use super::*;
            pub const POSITIONAL: bool = false;
            pub fn parse(v: &Value) -> Result<u32, ValueProblem> {
                integer(v, $min as i64, $max as i64).map(|i| i as u32)
            }
            pub fn write(v: &u32, out: &mut String) {
                write_display(v, out)
            }
        }
    )*};
}

u32_kind! {
    reg: 0, u32::MAX;
    addr: 0, u32::MAX;
    count: 0, u32::MAX;
    count1: 1, u32::MAX;
    ldst: 1, MAX_LOAD_STORE_WIDTH;
    sendw: 1, MAX_SEND_WIDTH;
    target: 0, u32::MAX;
}

pub(crate) mod int {
    use super::*;
    pub const POSITIONAL: bool = false;
    pub fn parse(v: &Value) -> Result<i64, ValueProblem> {
        integer(v, i64::MIN, i64::MAX)
    }
    pub fn write(v: &i64, out: &mut String) {
        write_display(v, out)
    }
}

pub(crate) mod real {
    use super::*;
    pub const POSITIONAL: bool = false;
    pub fn parse(v: &Value) -> Result<Real, ValueProblem> {
        match *v {
            Value::Real(r) if r.is_finite() => Ok(Real(r)),
            Value::Real(r) => Err(ValueProblem::NotFinite(r.to_string())),
            Value::Int(i) => Ok(Real(i as f64)),
            ref other => Err(ValueProblem::WrongType {
                expected: "a number",
                found: other.describe(),
            }),
        }
    }
    pub fn write(v: &Real, out: &mut String) {
        // `{:?}` keeps a decimal point or an exponent, so Python reads a float back.
        let _ = write!(out, "{:?}", v.0);
    }
}

pub(crate) mod mask {
    use super::*;
    pub const POSITIONAL: bool = true;
    pub fn parse(v: &Value) -> Result<Mask, ValueProblem> {
        let bad = || ValueProblem::BadMask {
            mvmus: MVMUS_PER_CORE,
            found: format!("{v:?}"),
        };
        let Value::List(items) = v else {
            return Err(bad());
        };
        let [Value::Str(s)] = items.as_slice() else {
            return Err(bad());
        };
        if s.len() != MVMUS_PER_CORE as usize {
            return Err(bad());
        }
        let mut bits = 0u8;
        for (i, c) in s.chars().enumerate() {
            match c {
                '0' => {}
                '1' => bits |= 1 << i,
                _ => return Err(bad()),
            }
        }
        Ok(Mask(bits))
    }
    pub fn write(v: &Mask, out: &mut String) {
        out.push_str("['");
        for i in 0..MVMUS_PER_CORE {
            out.push(if v.uses(i) { '1' } else { '0' });
        }
        out.push_str("']");
    }
}

fn string(v: &Value) -> Result<&str, ValueProblem> {
    match v {
        Value::Str(s) => Ok(s),
        other => Err(ValueProblem::WrongType {
            expected: "a quoted operation name",
            found: other.describe(),
        }),
    }
}

pub(crate) mod aluop {
    use super::*;
    pub const POSITIONAL: bool = true;
    pub fn parse(v: &Value) -> Result<AluOp, ValueProblem> {
        let s = string(v)?;
        AluOp::from_name(s).ok_or_else(|| ValueProblem::UnknownAluOp(s.to_string()))
    }
    pub fn write(v: &AluOp, out: &mut String) {
        let _ = write!(out, "'{}'", v.name());
    }
}

pub(crate) mod intop {
    use super::*;
    pub const POSITIONAL: bool = true;
    pub fn parse(v: &Value) -> Result<IntOp, ValueProblem> {
        let s = string(v)?;
        IntOp::from_name(s).ok_or_else(|| ValueProblem::UnknownIntOp(s.to_string()))
    }
    pub fn write(v: &IntOp, out: &mut String) {
        let _ = write!(out, "'{}'", v.name());
    }
}
