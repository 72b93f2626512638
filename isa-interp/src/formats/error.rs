//! Typed errors for loading a program in any of its forms.
//!
//! Every error says *where* (the file when known, then the core, the instruction index and the
//! field) and *what* (a [`FieldProblem`] kind that tests can match on), e.g.
//! `prog.json: core 3, instruction 17 (vvadd): field "len": expected a non-negative integer, found -1`.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::inst::Opcode;

use super::asm::AsmError;

/// A program could not be loaded. `file` is the file being read when it is known (for the
/// directory form, the `core_<id>.json` or `config.json` at fault).
#[derive(Debug, thiserror::Error)]
pub struct LoadError {
    pub file: Option<PathBuf>,
    pub kind: LoadErrorKind,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", file.display())?;
        }
        write!(f, "{}", self.kind)
    }
}

impl LoadError {
    /// An error not yet tied to a file.
    pub fn new(kind: LoadErrorKind) -> LoadError {
        LoadError { file: None, kind }
    }

    /// Name the file this error came from, unless a more precise file is already named.
    pub fn in_file(mut self, file: &Path) -> LoadError {
        if self.file.is_none() {
            self.file = Some(file.to_path_buf());
        }
        self
    }

    /// The instruction-level error, if this is one (convenient in tests and reports).
    pub fn inst(&self) -> Option<&InstError> {
        match &self.kind {
            LoadErrorKind::Inst(e) => Some(e),
            _ => None,
        }
    }
}

impl From<LoadErrorKind> for LoadError {
    fn from(kind: LoadErrorKind) -> LoadError {
        LoadError::new(kind)
    }
}

/// What went wrong while loading.
#[derive(Debug, thiserror::Error)]
pub enum LoadErrorKind {
    #[error("cannot read: {0}")]
    Io(io::Error),
    /// Not well-formed JSON, or JSON of the wrong shape outside an instruction.
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    /// One instruction is invalid.
    #[error("{0}")]
    Inst(InstError),
    /// A field of the `config` object (or `config.json`) is invalid.
    #[error("config: field \"{field}\": {problem}")]
    Config {
        field: String,
        problem: FieldProblem,
    },
    /// A top-level key (or a directory's file name) that is not `config` or a valid core key.
    #[error("key \"{key}\": {problem}")]
    CoreKey {
        key: String,
        problem: CoreKeyProblem,
    },
    /// Our assembly text did not parse.
    #[error("{0}")]
    Asm(AsmError),
    /// The path is neither a directory nor a readable program file.
    #[error("not a program: {0}")]
    NotAProgram(String),
}

/// Why a top-level key or core file name was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoreKeyProblem {
    /// Neither `config` nor `core<N>` with `N` in canonical decimal (no sign, no leading zero).
    #[error("not \"config\" nor a core key \"core<N>\"")]
    NotACoreKey,
    /// `N >= core_cnt`.
    #[error("core {core} is beyond core_cnt = {core_cnt}")]
    BeyondCoreCount { core: u32, core_cnt: u32 },
    /// The same core appears twice.
    #[error("core {0} appears twice")]
    Duplicate(u32),
}

/// An invalid instruction: where it is and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct InstError {
    pub core: u32,
    /// Index of the instruction in its core's stream (0-based, the pc it would have).
    pub index: usize,
    /// The instruction's op when it was recognised.
    pub op: Option<Opcode>,
    /// The field at fault (JSON field name, e.g. `"len"` or `"offset.offset_select"`), or
    /// `None` when the problem is the instruction as a whole.
    pub field: Option<&'static str>,
    pub problem: FieldProblem,
}

impl fmt::Display for InstError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "core {}, instruction {}", self.core, self.index)?;
        if let Some(op) = self.op {
            write!(f, " ({op})")?;
        }
        match self.field {
            Some(field) => write!(f, ": field \"{field}\": {}", self.problem),
            None => write!(f, ": {}", self.problem),
        }
    }
}

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
    /// Two spellings of one operand disagree (`send`'s `rd`/`rs1`, `len`/`size`, top-level and
    /// nested `offset_value`).
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
