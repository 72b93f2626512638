//! The three flow files of one compilation, read into lines of typed meta-operators.
//!
//! `main.py` points `sys.stdout` at each file in turn and lets the code generators print
//! (main.py:69-94): the core-level flow is one instruction per line in node order
//! (codegen/CoreWise.py:384-386); the two lower levels print, cycle after cycle, an optional
//! `flow{`, each node's instructions (more than one wrapped in `\tparallel{` … `\t}`), every
//! instruction as `\t\t` + a space + its text, and `}` (CrossbarWise.py:788-911). Anything else
//! CIM-MLC printed while a file was open (`Exception: 'memoryaddr' attribute is missing ...`,
//! CrossbarWise.py:303) is kept as [`Item::Text`]: a line that is no meta-operator.

mod op;
mod value;

use std::path::{Path, PathBuf};

use pimdiff_input::Limit;

pub use self::op::{
    Alu, AluOp, ConvCore, Extent, FcCore, Func, Op, Pair, Piece, Pool, PoolKind, Relayout, ShapeOp,
};
pub use self::value::{name_of, parse_line, Parsed, SyntaxError, Value};
pub use crate::error::OperandError;
use crate::error::{LoadError, LoadErrorKind};

/// The largest flow file read (a network's wordline-level flow is about 100 bytes per
/// crossbar activation; this is some two million of them).
pub const MAX_FLOW_BYTES: Limit = Limit {
    name: "MAX_CIM_MLC_FLOW_BYTES",
    bytes: 256 << 20,
};

/// A granularity of CIM-MLC's code generation, and its flow file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// Core-wise: `corewise_codegen_output.txt` (every API level).
    Core,
    /// Crossbar-wise: `crossbarwise_codegen_output.txt` (API `Crossbar` and `Wordline`).
    Crossbar,
    /// Wordline-wise: `rcwise_codegen_output.txt` (API `Wordline`).
    Wordline,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::Core, Level::Crossbar, Level::Wordline];

    /// The file main.py writes (main.py:71, :82, :90).
    pub fn file_name(self) -> &'static str {
        match self {
            Level::Core => "corewise_codegen_output.txt",
            Level::Crossbar => "crossbarwise_codegen_output.txt",
            Level::Wordline => "rcwise_codegen_output.txt",
        }
    }

    /// `core`, `crossbar` or `wordline`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Core => "core",
            Level::Crossbar => "crossbar",
            Level::Wordline => "wordline",
        }
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What one line of a flow file is.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Op(Op),
    /// `flow{`: instructions of more than one kind at one cycle follow.
    FlowOpen,
    /// `\tparallel{`: more than one instruction of one node at one cycle follow.
    ParallelOpen,
    /// `}` or `\t}`.
    Close,
    /// An empty line.
    Blank,
    /// Text that is no meta-operator (a message CIM-MLC printed into the file).
    Text,
}

/// One line of a flow file: its 1-based number, its text without the line break, and what it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub number: u32,
    pub text: String,
    pub item: Item,
}

impl Line {
    /// The meta-operator on this line, if any.
    pub fn op(&self) -> Option<&Op> {
        match &self.item {
            Item::Op(op) => Some(op),
            _ => None,
        }
    }
}

/// One flow file.
#[derive(Clone, Debug, PartialEq)]
pub struct Flow {
    pub level: Level,
    pub file: PathBuf,
    pub lines: Vec<Line>,
}

impl Flow {
    /// Read the flow of `level` from `path`.
    pub fn load(level: Level, path: &Path) -> Result<Flow, LoadError> {
        let bytes = pimdiff_input::read_maybe_empty(path, MAX_FLOW_BYTES)
            .map_err(|e| LoadError::new(path, None, LoadErrorKind::Input(e)))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let offset = e.utf8_error().valid_up_to();
            LoadError::new(path, None, LoadErrorKind::NotUtf8 { offset })
        })?;
        Flow::parse(level, path, &text)
    }

    /// Read a flow from its text; `file` names it in errors.
    pub fn parse(level: Level, file: &Path, text: &str) -> Result<Flow, LoadError> {
        let mut lines = Vec::new();
        let mut open: Vec<(u32, bool)> = Vec::new(); // (line, is_parallel)
        let body = text.strip_suffix('\n').unwrap_or(text);
        let raw_lines = (!text.is_empty()).then(|| body.split('\n'));
        for (i, raw) in raw_lines.into_iter().flatten().enumerate() {
            let number = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let raw = raw.strip_suffix('\r').unwrap_or(raw);
            let err = |kind| LoadError::new(file, Some(number), kind);
            let item = if level == Level::Core {
                core_item(raw).map_err(err)?
            } else {
                lower_item(raw).map_err(err)?
            };
            nest(&item, number, &mut open).map_err(|m| err(LoadErrorKind::Structure(m)))?;
            lines.push(Line {
                number,
                text: raw.to_string(),
                item,
            });
        }
        if let Some(&(line, parallel)) = open.last() {
            let what = if parallel { "parallel{" } else { "flow{" };
            return Err(LoadError::new(
                file,
                Some(line),
                LoadErrorKind::Structure(format!("`{what}` is never closed")),
            ));
        }
        Ok(Flow {
            level,
            file: file.to_path_buf(),
            lines,
        })
    }

    /// The number of meta-operators (lines that are instructions).
    pub fn op_count(&self) -> usize {
        self.lines.iter().filter(|l| l.op().is_some()).count()
    }
}

/// Blocks nest as the printers open them: `parallel{` at the top or inside `flow{`, never in
/// another `parallel{`; `flow{` only at the top.
fn nest(item: &Item, number: u32, open: &mut Vec<(u32, bool)>) -> Result<(), String> {
    match item {
        Item::FlowOpen if !open.is_empty() => Err("`flow{` inside another block".into()),
        Item::FlowOpen => {
            open.push((number, false));
            Ok(())
        }
        Item::ParallelOpen if open.last().is_some_and(|o| o.1) => {
            Err("`parallel{` inside another `parallel{`".into())
        }
        Item::ParallelOpen => {
            open.push((number, true));
            Ok(())
        }
        Item::Close => open
            .pop()
            .map(|_| ())
            .ok_or_else(|| "`}` closes no block".to_string()),
        _ => Ok(()),
    }
}

/// A line of the core-level flow: an instruction, or text.
fn core_item(raw: &str) -> Result<Item, LoadErrorKind> {
    if raw.trim().is_empty() {
        return Ok(Item::Blank);
    }
    instruction(raw.trim())
}

/// A line of a crossbar- or wordline-level flow.
fn lower_item(raw: &str) -> Result<Item, LoadErrorKind> {
    Ok(match raw {
        "flow{" => Item::FlowOpen,
        "\tparallel{" => Item::ParallelOpen,
        "}" | "\t}" => Item::Close,
        _ if raw.trim().is_empty() => Item::Blank,
        _ => match raw.strip_prefix("\t\t ") {
            Some(inst) => instruction(inst)?,
            None => Item::Text,
        },
    })
}

/// An instruction's text: a known meta-operator must parse; a line of another name is a
/// meta-operator this machine does not model when it reads as one, and text otherwise.
fn instruction(text: &str) -> Result<Item, LoadErrorKind> {
    match parse_line(text) {
        Ok(p) => op::from_parsed(&p.name, &p.operands)
            .map(Item::Op)
            .map_err(LoadErrorKind::Operand),
        Err(e) => {
            let known = value::name_of(text).is_some_and(|n| KNOWN.contains(&n.as_str()));
            if known {
                Err(LoadErrorKind::Syntax {
                    col: e.col,
                    problem: e.problem,
                })
            } else {
                Ok(Item::Text)
            }
        }
    }
}

/// The names whose operands the machine reads (a malformed one is an error, not text).
const KNOWN: [&str; 20] = [
    "CIM.read_core-conv",
    "CIM.read_core-fc",
    "Mov",
    "MaxPool",
    "AveragePool",
    "Relu",
    "Sigmoid",
    "Tanh",
    "Erf",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Equal",
    "Flatten",
    "Reshape",
    "load",
    "CIM.read_xb",
    "CIM.read_wl",
];

/// The flows of one compilation, one per level CIM-MLC wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct Flows {
    pub core: Option<Flow>,
    pub crossbar: Option<Flow>,
    pub wordline: Option<Flow>,
}

impl Flows {
    /// Read every flow file present in `dir` (the driver's output directory); a level whose
    /// file is absent was not generated (the architecture's `API`). At least one must exist.
    pub fn load(dir: &Path) -> Result<Flows, LoadError> {
        let mut flows = Flows {
            core: None,
            crossbar: None,
            wordline: None,
        };
        for level in Level::ALL {
            let path = dir.join(level.file_name());
            if path.symlink_metadata().is_err() {
                continue;
            }
            *flows.slot(level) = Some(Flow::load(level, &path)?);
        }
        if flows.core.is_none() && flows.crossbar.is_none() && flows.wordline.is_none() {
            return Err(LoadError::new(dir, None, LoadErrorKind::NoFlow));
        }
        Ok(flows)
    }

    /// The flows already read (a caller that holds the files' text, like a hunt whose compiler
    /// wrote them into a directory it empties after each case); at least one, one per level.
    pub fn from_flows(flows: Vec<Flow>) -> Result<Flows, LoadError> {
        let mut out = Flows {
            core: None,
            crossbar: None,
            wordline: None,
        };
        let mut first = None;
        for flow in flows {
            first.get_or_insert_with(|| flow.file.clone());
            let slot = out.slot(flow.level);
            if slot.is_some() {
                return Err(LoadError::new(&flow.file, None, LoadErrorKind::NoFlow));
            }
            *slot = Some(flow);
        }
        match first {
            Some(_) => Ok(out),
            None => Err(LoadError::new(Path::new("."), None, LoadErrorKind::NoFlow)),
        }
    }

    /// The flow of `level`, if CIM-MLC wrote it.
    pub fn get(&self, level: Level) -> Option<&Flow> {
        match level {
            Level::Core => self.core.as_ref(),
            Level::Crossbar => self.crossbar.as_ref(),
            Level::Wordline => self.wordline.as_ref(),
        }
    }

    fn slot(&mut self, level: Level) -> &mut Option<Flow> {
        match level {
            Level::Core => &mut self.core,
            Level::Crossbar => &mut self.crossbar,
            Level::Wordline => &mut self.wordline,
        }
    }

    /// The levels present, coarsest first.
    pub fn levels(&self) -> Vec<Level> {
        Level::ALL
            .into_iter()
            .filter(|l| self.get(*l).is_some())
            .collect()
    }
}
