//! The two error types of the crate.
//!
//! [`CaseError`] is everything that can be wrong with a case, on disk or in memory; each
//! variant names the file (`case.json`, `input.npy`, ...) and, where there is one, the field.
//! [`OracleError`] is what the reference functions return: either their arguments do not
//! describe a valid operator (a [`CaseError`] inside), or the exact result does not fit int32.

use std::path::PathBuf;

/// `case.json`: the operator, shapes and architecture.
pub const CASE_JSON: &str = "case.json";
/// `input.npy`: the activation tensor.
pub const INPUT_NPY: &str = "input.npy";
/// `weight.npy`: the weight tensor.
pub const WEIGHT_NPY: &str = "weight.npy";
/// `bias.npy`: the bias vector, present exactly when `op.bias` is true.
pub const BIAS_NPY: &str = "bias.npy";
/// `expected.npy`: the expected output, optional.
pub const EXPECTED_NPY: &str = "expected.npy";

/// Why a case (a directory, or parts handed to [`Case::new`](crate::Case::new)) is not valid.
///
/// `file` is always one of the fixed names above ([`CASE_JSON`], [`INPUT_NPY`], ...), so a
/// message says which file to fix even when the case was built in memory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaseError {
    /// A required file is absent.
    #[error("{file}: missing ({why})")]
    MissingFile {
        file: &'static str,
        why: &'static str,
    },

    /// The file exists but is not a regular file (a directory, a FIFO, ...).
    #[error("{file}: not a regular file")]
    NotAFile { file: &'static str },

    /// An operating-system error while reading or writing `path`.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    /// `case.json` is not valid JSON.
    #[error("case.json: JSON syntax error at line {line}, column {column}: {message}")]
    Json {
        line: usize,
        column: usize,
        message: String,
    },

    /// A field of `case.json` has the wrong JSON type (e.g. a string or a float where an
    /// integer belongs, an array of the wrong length).
    #[error("case.json: field `{field}`: expected {expected}, found {found}")]
    FieldType {
        field: String,
        expected: &'static str,
        found: String,
    },

    /// A required field of `case.json` is absent.
    #[error("case.json: missing field `{field}`")]
    MissingField { field: String },

    /// `case.json` has a field this version does not know. Refused rather than ignored: a
    /// misspelt `"dilaton"` silently read as the default would test the wrong operator.
    #[error("case.json: unknown field `{field}`")]
    UnknownField { field: String },

    /// `op.kind` is neither `"conv2d"` nor `"mvm"`.
    #[error("case.json: field `op.kind`: unknown operator {found:?} (known: \"conv2d\", \"mvm\")")]
    UnknownOpKind { found: String },

    /// `format` is an integer other than 1.
    #[error(
        "case.json: field `format`: format {found} is not supported (this reader knows format 1)"
    )]
    UnsupportedFormat { found: String },

    /// A size, stride, dilation or count that must be at least 1 is 0.
    #[error("{file}: field `{field}` is 0; it must be at least 1")]
    ZeroSize { file: &'static str, field: String },

    /// A size that must be non-negative is negative.
    #[error("case.json: field `{field}` is {value}; it must not be negative")]
    Negative { field: String, value: i64 },

    /// `groups` does not divide `op.in_channels` or `op.out_channels`.
    #[error("case.json: field `op.groups` ({groups}) does not divide `{field}` ({value})")]
    GroupsDoNotDivide {
        field: &'static str,
        value: usize,
        groups: usize,
    },

    /// Two fields of `case.json` that must agree do not (e.g. `input_shape[1]` and
    /// `op.in_channels`).
    #[error(
        "case.json: field `{field}` is {value} but `{other}` is {other_value}; they must be equal"
    )]
    Inconsistent {
        field: &'static str,
        value: usize,
        other: &'static str,
        other_value: usize,
    },

    /// The output height or width would be below 1: the dilated kernel is larger than the
    /// padded input.
    #[error(
        "case.json: output {axis} would be below 1: the padded input {axis} is {padded} but the \
         dilated kernel spans {window}"
    )]
    EmptyOutput {
        axis: &'static str,
        padded: usize,
        window: usize,
    },

    /// A `.npy` file has a dtype other than the one the format requires.
    #[error("{file}: dtype {found} but the case format requires {expected}")]
    WrongDtype {
        file: &'static str,
        found: String,
        expected: &'static str,
    },

    /// A tensor's shape disagrees with what `case.json` implies.
    #[error("{file}: shape {found:?} disagrees with case.json, which implies {expected:?}")]
    ShapeMismatch {
        file: &'static str,
        expected: Vec<usize>,
        found: Vec<usize>,
    },

    /// A size is beyond the documented [`limits`](crate::limits).
    #[error("{file}: {what} is {value}, above the limit {limit} (pimdiff_oracle::limits::{name})")]
    BeyondLimit {
        file: &'static str,
        what: String,
        value: u128,
        limit: u128,
        name: &'static str,
    },

    /// The exact value before ReLU at `index` of the output does not fit int32: the input,
    /// weight and bias values are too large together for this operator. The value before
    /// ReLU is checked (not only the final one) because every lowering computes it in int32.
    #[error(
        "the exact result before ReLU at output index {index:?} is {value}, which does not \
         fit int32 (the case's values are too large for its operator)"
    )]
    ResultOverflow { index: Vec<usize>, value: i64 },

    /// `bias.npy` is present although `op.bias` is false, or a bias tensor was given for an
    /// operator without bias (the other direction is [`CaseError::MissingFile`] on disk, and
    /// this variant with `op_bias: true` in memory).
    #[error("bias.npy: {} but case.json says `op.bias` is {op_bias}", if *op_bias { "absent" } else { "present" })]
    BiasMismatch { op_bias: bool },

    /// A `.npy` file is malformed: bad magic, unreadable header, truncated or over-long data.
    #[error("{file}: not a valid .npy file: {reason}")]
    Npy { file: &'static str, reason: String },

    /// The bounded reader refused the file (empty, or another way its bytes cannot be read;
    /// see `pimdiff_input`).
    #[error("{file}: {source}")]
    Input {
        file: &'static str,
        source: pimdiff_input::InputError,
    },

    /// [`write_case`](crate::io::write_case) found a non-empty directory at the target.
    #[error("{}: already exists and is not empty (refusing to overwrite a case)", path.display())]
    AlreadyExists { path: PathBuf },

    /// An inconsistency inside this crate (a bug): reported instead of panicking.
    #[error("internal error in the oracle (a bug): {0}")]
    Internal(String),
}

impl CaseError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        CaseError::Io {
            path: path.into(),
            source,
        }
    }

    /// A refusal of the bounded reader for `path` (named `file`): an operating-system error
    /// as [`CaseError::Io`], a size above its limit as [`CaseError::BeyondLimit`], anything
    /// else as [`CaseError::Input`].
    pub(crate) fn input(
        path: &std::path::Path,
        file: &'static str,
        e: pimdiff_input::InputError,
    ) -> Self {
        use pimdiff_input::InputError;
        match e {
            InputError::Io(source) => CaseError::io(path, source),
            InputError::NotAFile => CaseError::NotAFile { file },
            InputError::TooLarge { size, limit } => CaseError::BeyondLimit {
                file,
                what: "the file size".into(),
                value: size as u128,
                limit: limit.bytes as u128,
                name: limit.name,
            },
            source => CaseError::Input { file, source },
        }
    }
}

/// Why a reference computation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OracleError {
    /// The operator parameters or tensor shapes are not a valid case (zero sizes, groups
    /// that do not divide, shapes that disagree, sizes beyond the limits, ...).
    #[error("invalid operator: {0}")]
    Invalid(#[from] CaseError),

    /// The exact value before ReLU at output `index` (`[n, k, oh, ow]` or `[n, o]`) does not
    /// fit int32. The first such index in row-major order is reported.
    #[error("the exact result at output index {index:?} is {value}, which does not fit int32")]
    Overflow { index: Vec<usize>, value: i64 },

    /// An inconsistency inside this crate (a bug): reported instead of panicking.
    #[error("internal error in the oracle (a bug): {0}")]
    Internal(String),
}
