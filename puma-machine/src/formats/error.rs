//! Typed errors of loading a compiled model: every error names the file, and the line when
//! one line is at fault, e.g.
//! `out/fc-tile2-core0.puma:4: store: argument "vec": expected an integer, found a string`.

use std::fmt;
use std::io;
use std::path::PathBuf;

use pimdiff_input::InputError;

/// A model could not be loaded: the file (or directory) at fault, the 1-based line when one
/// line is, and what is wrong.
#[derive(Debug, thiserror::Error)]
pub struct LoadError {
    pub file: PathBuf,
    pub line: Option<u32>,
    pub kind: LoadErrorKind,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}", self.kind)
    }
}

/// What is wrong.
#[derive(Debug, thiserror::Error)]
pub enum LoadErrorKind {
    /// The operating system refused (absent file, no permission, unreadable directory).
    #[error("{0}")]
    Io(io::Error),
    /// The bounded reader refused the file (empty, too large, not a regular file).
    #[error("{0}")]
    Input(InputError),
    /// Bytes that are not UTF-8 text.
    #[error("not UTF-8 text (invalid byte at offset {offset})")]
    NotUtf8 { offset: usize },
    /// A blank line inside a program (the simulator's generator script turns every line into
    /// a call, and a blank one into a Python error).
    #[error("empty line")]
    EmptyLine,
    /// The line is not a Python call with literal arguments.
    #[error("column {col}: {problem}")]
    Syntax { col: u32, problem: SyntaxProblem },
    /// A call of a function that is not an instruction of this kind of program.
    #[error("`{name}` is not a {program} instruction{hint}")]
    UnknownInstruction {
        name: String,
        program: ProgramKind,
        hint: &'static str,
    },
    /// The arguments do not fit the instruction's parameters.
    #[error("{inst}: {problem}")]
    Argument {
        inst: &'static str,
        problem: ArgProblem,
    },
    /// A weights file without exactly 128 × 128 values.
    #[error("{found} values, expected {expected} (128 × 128)")]
    WeightCount { found: usize, expected: usize },
    /// One value of a weights file (row and column of the 128 × 128 matrix as the file
    /// orders them) that cannot be used.
    #[error("value {index} (row {row}, column {col}) `{text}`: {problem}")]
    BadWeight {
        index: usize,
        row: u32,
        col: u32,
        text: String,
        problem: WeightProblem,
    },
    /// The directory holds no `<model>-tile0.puma`.
    #[error("no `{model}-tile0.puma` here")]
    NoModel { model: String },
    /// Tiles are numbered from 0 without gaps; this one is missing.
    #[error("tile {tile} is missing (tiles up to {last} exist)")]
    MissingTile { tile: u32, last: u32 },
    /// Every tile has the programs of all its cores.
    #[error("`{file}` is missing (every tile has {cores} core programs)")]
    MissingCore { file: String, cores: u32 },
    /// A file name of the model that names a core, an MVMU or a tile beyond the architecture
    /// or the model, or that is spelled in a way the compiler never writes.
    #[error("`{file}`: {problem}")]
    BadFileName { file: String, problem: String },
    /// More tiles than [`super::MAX_TILES`].
    #[error("{found} tiles, above the limit of {max}")]
    TooManyTiles { found: u64, max: u32 },
}

impl From<InputError> for LoadErrorKind {
    fn from(e: InputError) -> LoadErrorKind {
        match e {
            InputError::Io(e) => LoadErrorKind::Io(e),
            other => LoadErrorKind::Input(other),
        }
    }
}

/// Tile or core program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgramKind {
    Tile,
    Core,
}

impl fmt::Display for ProgramKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProgramKind::Tile => "tile",
            ProgramKind::Core => "core",
        })
    }
}

/// Why a line is not a call with literal arguments.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxProblem {
    #[error("expected an instruction name")]
    ExpectedName,
    #[error("expected {0}")]
    Expected(&'static str),
    #[error("positional argument after a keyword argument")]
    PositionalAfterKeyword,
    #[error("not a literal (an integer, a float, a quoted string or a list)")]
    NotALiteral,
    #[error("unterminated string")]
    UnterminatedString,
    #[error("escape sequences are not supported")]
    Escape,
    #[error("lists nested too deep")]
    TooDeep,
    #[error("not a decimal number")]
    BadNumber,
    #[error("integer with a leading zero (Python 2 reads it as octal)")]
    LeadingZero,
    #[error("integer out of the 64-bit range")]
    IntegerTooLarge,
    #[error("text after the closing `)`")]
    TrailingText,
}

/// Why the arguments do not fit the parameters (Python's own rules of calls, then each
/// parameter's kind).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArgProblem {
    #[error("unknown argument `{0}`")]
    UnknownKeyword(String),
    #[error("argument \"{0}\" given twice")]
    Duplicate(&'static str),
    #[error("argument \"{0}\" is missing")]
    Missing(&'static str),
    #[error("{given} positional arguments, at most {max}")]
    TooManyPositional { given: usize, max: usize },
    #[error("argument \"{param}\": {problem}")]
    BadValue {
        param: &'static str,
        problem: ValueProblem,
    },
}

/// Why one argument's value does not fit its parameter.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValueProblem {
    #[error("expected {expected}, found {found}")]
    WrongType {
        expected: &'static str,
        found: &'static str,
    },
    #[error("{value} is out of range ({min}..={max})")]
    OutOfRange { value: i64, min: i64, max: i64 },
    #[error("{0} is not finite")]
    NotFinite(String),
    #[error("`{0}` is not an ALU operation of the compiler or the simulator")]
    UnknownAluOp(String),
    #[error("`{0}` is not an operation of the integer ALU (add, sub, mul, div, mod)")]
    UnknownIntOp(String),
    #[error("expected a list of one string of {mvmus} `0`/`1` characters, found {found}")]
    BadMask { mvmus: u32, found: String },
}

/// Why one value of a weights file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WeightProblem {
    #[error("not a number")]
    NotANumber,
    #[error("not finite")]
    NotFinite,
    #[error("not an integer (exact checking needs integer weights)")]
    NotInteger,
    #[error("beyond ±2^31 (weights are kept as 32-bit integers)")]
    TooLarge,
}
