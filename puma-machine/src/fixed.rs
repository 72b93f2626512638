//! The simulator's ALU functions on fixed-point words, in integers.
//!
//! The simulator keeps a word as a 16-bit two's-complement string read as
//! `value = raw / 2^frac_bits` (`frac_bits = 12`, config.py; data_convert.py `fixed2float`),
//! computes each ALU operation on those values in Python floats and rounds the result back to
//! the grid with `int(round(value · 2^frac_bits))` (`float2fixed`), wrapping to 16 bits. The
//! machine keeps the raw integer in an `i64` without the wrap and computes:
//!
//! | op | raw result | simulator (ima_modules.py `alu`) |
//! |---|---|---|
//! | `add`, `sub` | `a ± b`, exact | `a + b`, `a - b` on values |
//! | `sna` | `a + b · 2^imm`, exact | `a + (b << imm)` on bit strings |
//! | `mul` | `a · b / 2^F` rounded half away from zero, exact in `i128` | value product, rounded |
//! | `max` | `max(a, b)` | `max` on values |
//! | `relu` | `a` if `a > 0`, else 0 | the same on values |
//! | `sig` | `round(2^F / (1 + e^(−a/2^F)))` in `f64` | `1 / (1 + math.exp(-a))` |
//! | `tanh` | `round(tanh(a/2^F) · 2^F)` in `f64` | `np.tanh(a)` |
//!
//! Rounding is half away from zero, as Python 2's `round` (and Rust's `f64::round`). Every
//! linear operation is exact; `mul` rounds only when the product leaves the grid (never for
//! integer values, which are multiples of `2^F`). `sig` and `tanh` go through `f64` exactly as
//! the simulator does; the two can differ only where the C library's `exp`/`tanh` differ by an
//! ulp at a rounding boundary. An operation the simulator's ALU lacks is
//! [`AluError::Unsupported`] (the simulator stops on an assertion).
//!
//! The integer ALU (`alu_int`, `beq`) works on plain integers with Python 2's semantics:
//! `div` floors, `mod` takes the divisor's sign.

use crate::values::{AluOp, IntOp};

/// Why an ALU operation has no result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AluError {
    #[error("the simulator's ALU has no `{0}` operation")]
    Unsupported(AluOp),
    #[error("the result does not fit in 64 bits")]
    Overflow,
    #[error("division by zero")]
    DivisionByZero,
    #[error("shift {0} is out of range (0..63)")]
    BadShift(i64),
}

/// `x / 2^shift` rounded half away from zero.
pub fn round_shift(x: i128, shift: u32) -> i128 {
    if shift == 0 {
        return x;
    }
    let half = 1i128 << (shift - 1);
    let magnitude = (x.unsigned_abs() + half as u128) >> shift;
    if x < 0 {
        -(magnitude as i128)
    } else {
        magnitude as i128
    }
}

/// The raw word of a real value: `int(round(v · 2^frac_bits))` (the simulator's `float2fixed`
/// without its 16-bit wrap); `None` when it does not fit an `i64`.
pub fn from_real(v: f64, frac_bits: u32) -> Option<i64> {
    let scaled = (v * 2f64.powi(frac_bits as i32)).round();
    // i64::MAX as f64 rounds up to 2^63, which does not fit.
    (scaled.is_finite() && scaled >= -(2f64.powi(63)) && scaled < 2f64.powi(63))
        .then_some(scaled as i64)
}

/// The real value of a raw word.
pub fn to_real(raw: i64, frac_bits: u32) -> f64 {
    raw as f64 / 2f64.powi(frac_bits as i32)
}

fn narrow(x: i128) -> Result<i64, AluError> {
    i64::try_from(x).map_err(|_| AluError::Overflow)
}

/// `op` on raw words `a` (first operand) and `b` (second; ignored by unary operations), with
/// `imm` the shift of `sna`, on a grid of `frac_bits` fractional bits.
pub fn alu(op: AluOp, a: i64, b: i64, imm: i64, frac_bits: u32) -> Result<i64, AluError> {
    let (a, b) = (a as i128, b as i128);
    let from_real = |v: f64| from_real(v, frac_bits).ok_or(AluError::Overflow);
    let x = a as f64 / 2f64.powi(frac_bits as i32);
    match op {
        AluOp::Add => narrow(a + b),
        AluOp::Sub => narrow(a - b),
        AluOp::Sna => {
            if !(0..63).contains(&imm) {
                return Err(AluError::BadShift(imm));
            }
            narrow(b.checked_shl(imm as u32).ok_or(AluError::Overflow)? + a)
        }
        AluOp::Mul => narrow(round_shift(a * b, frac_bits)),
        AluOp::Max => narrow(a.max(b)),
        AluOp::Relu => narrow(if a > 0 { a } else { 0 }),
        AluOp::Sig => from_real(1.0 / (1.0 + (-x).exp())),
        AluOp::Tanh => from_real(x.tanh()),
        other => Err(AluError::Unsupported(other)),
    }
}

/// `op` of the integer ALU, with Python 2's integer semantics.
pub fn int_alu(op: IntOp, a: i64, b: i64) -> Result<i64, AluError> {
    let overflow = AluError::Overflow;
    match op {
        IntOp::Add => a.checked_add(b).ok_or(overflow),
        IntOp::Sub => a.checked_sub(b).ok_or(overflow),
        IntOp::Mul => a.checked_mul(b).ok_or(overflow),
        IntOp::Div | IntOp::Mod if b == 0 => Err(AluError::DivisionByZero),
        IntOp::Div => {
            let q = a.checked_div(b).ok_or(overflow)?;
            let inexact = a.checked_rem(b).ok_or(overflow)? != 0;
            Ok(if inexact && ((a < 0) != (b < 0)) {
                q - 1
            } else {
                q
            })
        }
        IntOp::Mod => {
            let r = a.checked_rem(b).ok_or(overflow)?;
            Ok(if r != 0 && ((r < 0) != (b < 0)) {
                r + b
            } else {
                r
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_is_half_away_from_zero() {
        assert_eq!(round_shift(3, 1), 2);
        assert_eq!(round_shift(-3, 1), -2);
        assert_eq!(round_shift(5, 2), 1);
        assert_eq!(round_shift(-5, 2), -1);
        assert_eq!(round_shift(6, 2), 2);
        assert_eq!(from_real(0.5, 0), Some(1));
        assert_eq!(from_real(-0.5, 0), Some(-1));
        assert_eq!(from_real(1e300, 12), None);
    }

    #[test]
    fn python_integer_division() {
        assert_eq!(int_alu(IntOp::Div, 7, 2), Ok(3));
        assert_eq!(int_alu(IntOp::Div, -7, 2), Ok(-4));
        assert_eq!(int_alu(IntOp::Mod, -7, 2), Ok(1));
        assert_eq!(int_alu(IntOp::Mod, 7, -2), Ok(-1));
        assert_eq!(int_alu(IntOp::Div, i64::MIN, -1), Err(AluError::Overflow));
    }
}
