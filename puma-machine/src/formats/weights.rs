//! Weight files: the 128 × 128 values of one MVMU, separated by blanks (the compiler writes
//! them on one line, each followed by a space, padding with `0.0`; instance.cpp
//! `generateData`). The value at position `row · 128 + col` is the matrix tile's element
//! `(row, col)` (`row` below the tile's height, `col` below its width), zero elsewhere.
//!
//! Exact checking needs integers: a value with a fraction, or beyond ±2^31, is refused.

use std::path::Path;

use super::error::{LoadError, LoadErrorKind, WeightProblem};
use crate::arch::MVMU_DIM;
use crate::model::Weights;

/// The values of one `.weights` file; `path` names it in errors.
pub fn parse_weights(text: &str, path: &Path) -> Result<Weights, LoadError> {
    let error = |line: Option<u32>, kind| LoadError {
        file: path.to_path_buf(),
        line,
        kind,
    };
    let mut cells = Vec::with_capacity(Weights::LEN);
    let mut found = 0usize;
    for (n, line) in text.split('\n').enumerate() {
        for token in line.split_ascii_whitespace() {
            let index = found;
            found += 1;
            if index >= Weights::LEN {
                continue;
            }
            let value = weight(token).map_err(|problem| {
                error(
                    Some(n as u32 + 1),
                    LoadErrorKind::BadWeight {
                        index,
                        row: index as u32 / MVMU_DIM,
                        col: index as u32 % MVMU_DIM,
                        text: token.chars().take(40).collect(),
                        problem,
                    },
                )
            })?;
            cells.push(value);
        }
    }
    if found != Weights::LEN {
        return Err(error(
            None,
            LoadErrorKind::WeightCount {
                found,
                expected: Weights::LEN,
            },
        ));
    }
    Ok(Weights::new(cells).unwrap_or_else(Weights::zeros))
}

/// One value: a decimal number (as C++ streams print floats) that is a 32-bit integer.
fn weight(token: &str) -> Result<i32, WeightProblem> {
    let v: f64 = token.parse().map_err(|_| WeightProblem::NotANumber)?;
    if !v.is_finite() {
        return Err(WeightProblem::NotFinite);
    }
    if v.fract() != 0.0 {
        return Err(WeightProblem::NotInteger);
    }
    if v < i32::MIN as f64 || v > i32::MAX as f64 {
        return Err(WeightProblem::TooLarge);
    }
    Ok(v as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_the_compiler_prints_them() {
        assert_eq!(weight("0.0"), Ok(0));
        assert_eq!(weight("-2"), Ok(-2));
        assert_eq!(weight("3"), Ok(3));
        assert_eq!(weight("1e+06"), Ok(1_000_000));
        assert_eq!(weight("0.5"), Err(WeightProblem::NotInteger));
        assert_eq!(weight("4.56431e-41"), Err(WeightProblem::NotInteger));
        assert_eq!(weight("nan"), Err(WeightProblem::NotFinite));
        assert_eq!(weight("-nan"), Err(WeightProblem::NotFinite));
        assert_eq!(weight("inf"), Err(WeightProblem::NotFinite));
        assert_eq!(weight("3e9"), Err(WeightProblem::TooLarge));
        assert_eq!(weight("x"), Err(WeightProblem::NotANumber));
    }
}
