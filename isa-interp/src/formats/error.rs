//! Typed errors for loading a program in any of its forms.
//!
//! Every error says *where* (the file when known, then the core, the instruction index and the
//! field) and *what* (a [`FieldProblem`] kind that tests can match on), e.g.
//! `prog.json: core 3, instruction 17 (vvadd): field "len": expected a non-negative integer, found -1`.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::inst::Opcode;

pub use super::problem::FieldProblem;
use pimdiff_input::InputError;

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

/// An operating-system error stays [`LoadErrorKind::Io`]; every other refusal of the bounded
/// reader is [`LoadErrorKind::Input`].
impl From<InputError> for LoadErrorKind {
    fn from(e: InputError) -> LoadErrorKind {
        match e {
            InputError::Io(e) => LoadErrorKind::Io(e),
            other => LoadErrorKind::Input(other),
        }
    }
}

impl From<InputError> for LoadError {
    fn from(e: InputError) -> LoadError {
        LoadError::new(e.into())
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
    /// The bounded reader refused the file: empty, above its size limit, or a gzip stream
    /// that is truncated, corrupt or inflates beyond the limit (`pimdiff_input`).
    #[error("{0}")]
    Input(InputError),
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

/// A parse error in assembly text, at a 1-based line and column.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}, column {column}: {kind}")]
pub struct AsmError {
    pub line: usize,
    pub column: usize,
    pub kind: AsmErrorKind,
}

/// What is wrong at that position.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AsmErrorKind {
    /// Malformed text; the string says what was expected.
    #[error("{0}")]
    Syntax(String),
    #[error("unknown op \"{0}\"")]
    UnknownOp(String),
    /// A `key=` the op does not take.
    #[error("{op} has no operand \"{key}\"")]
    UnknownKey { op: Opcode, key: String },
    #[error("operand \"{0}\" given twice")]
    DuplicateKey(String),
    #[error("{op} takes {expected} register operand(s), found {found}")]
    RegisterCount {
        op: Opcode,
        expected: usize,
        found: usize,
    },
    /// An operand's value is invalid (the same kinds the JSON reader reports).
    #[error("{op}: field \"{field}\": {problem}")]
    Field {
        op: Opcode,
        field: &'static str,
        problem: FieldProblem,
    },
    #[error("instruction outside a `core N:` section")]
    OutsideSection,
    #[error("core {0} has two sections")]
    DuplicateCore(u32),
    #[error("core {core} is beyond the {cores} cores of `.cores`")]
    CoreBeyondCount { core: u32, cores: u32 },
    /// A directive given twice, or a `.map` without `.groups map`.
    #[error("{0}")]
    Directive(String),
}
