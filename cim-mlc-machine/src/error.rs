//! Typed errors of reading CIM-MLC's output: every error names the file, and the line when one
//! line is at fault, e.g. `out/corewise_codegen_output.txt:4: `Mov` takes 3 operands, found 2`.

use std::fmt;
use std::path::PathBuf;

use pimdiff_input::InputError;

/// A flow file or `layout.json` could not be read: the file, the 1-based line when one line
/// is at fault, and what is wrong.
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
    /// The bounded reader refused the file (absent, empty, too large, not a regular file).
    #[error("{0}")]
    Input(InputError),
    /// Bytes that are not UTF-8 text.
    #[error("not UTF-8 text (invalid byte at offset {offset})")]
    NotUtf8 { offset: usize },
    /// A line of a known meta-operator that is not a name followed by ` - `-separated
    /// Python literals.
    #[error("column {col}: {problem}")]
    Syntax { col: usize, problem: String },
    /// A known meta-operator whose operands do not fit its template.
    #[error("{0}")]
    Operand(OperandError),
    /// `flow{`, `parallel{` and `}` that do not nest.
    #[error("{0}")]
    Structure(String),
    /// The directory holds none of the three flow files.
    #[error(
        "no flow here: none of corewise_codegen_output.txt, crossbarwise_codegen_output.txt, \
         rcwise_codegen_output.txt"
    )]
    NoFlow,
    /// `layout.json` is not JSON of the driver's schema (serde's message, with its line and
    /// column).
    #[error("{0}")]
    Json(String),
    /// A field of `layout.json` holds a value the machine cannot use.
    #[error("{field}: {problem}")]
    Field { field: String, problem: String },
}

impl LoadError {
    pub(crate) fn new(file: impl Into<PathBuf>, line: Option<u32>, kind: LoadErrorKind) -> Self {
        LoadError {
            file: file.into(),
            line,
            kind,
        }
    }
}

/// An operand that does not fit its place in the template (made by the flow reader,
/// `flow/op.rs`; here, below it, because a [`LoadErrorKind::Operand`] carries it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OperandError {
    #[error("`{op}` takes {expected} operands, found {found}")]
    Arity {
        op: String,
        expected: String,
        found: usize,
    },
    #[error("`{op}` operand {index} ({field}): expected {expected}, found {found}")]
    Kind {
        op: String,
        index: usize,
        field: &'static str,
        expected: &'static str,
        found: String,
    },
}
