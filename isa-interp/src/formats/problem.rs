//! What is wrong with one field of an instruction or a config: the vocabulary every reader
//! shares. It depends on nothing else in `formats`, so every other module may use it.

/// What is wrong with one field (or, for `NotAnObject` / `UnknownOp`, one instruction).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FieldProblem {
    /// A field the op needs is absent.
    #[error("missing")]
    Missing,
    /// The JSON value has the wrong type (`found` names the type, e.g. "a string").
    #[error("expected {expected}, found {found}")]
    WrongType {
        expected: &'static str,
        found: &'static str,
    },
    /// A number outside the field's range (`found` is the value as written).
    #[error("expected {expected}, found {found}")]
    OutOfRange {
        expected: &'static str,
        found: String,
    },
    /// A register index that is not `0..32`.
    #[error("register index {0} out of range (0..=31)")]
    RegisterOutOfRange(i64),
    /// An element width that is not `1..=32`.
    #[error("width {0} out of range (1..=32)")]
    WidthOutOfRange(i64),
    /// An `offset_select` that is not `0..8`.
    #[error("offset_select {0} out of range (0..=7)")]
    OffsetSelectOutOfRange(i64),
    /// Two spellings of one operand disagree (a transfer's source in `rd` and `rs1`,
    /// `len`/`size`, top-level and nested `offset_value`).
    #[error("{value} disagrees with \"{other}\" = {other_value}")]
    Disagree {
        other: &'static str,
        value: i64,
        other_value: i64,
    },
    /// An op this ISA does not have.
    #[error("unknown op \"{0}\"")]
    UnknownOp(String),
    /// An instruction that is not a JSON object.
    #[error("expected an instruction object, found {0}")]
    NotAnObject(&'static str),
}
