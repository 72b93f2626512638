//! How a run ends, what stops one, and the errors of setting a chip up.
//!
//! A fault of the flow under test is *data* (a [`RunOutcome`]), never a panic or an `Err`.

use std::fmt;

use super::buffer::GlobalBuffer;
use crate::flow::Level;

/// How a run of one level ended.
#[derive(Debug)]
pub enum RunOutcome {
    /// Every line ran.
    Finished(Box<Finished>),
    /// A meta-operator did something the machine stops on.
    Fault(Box<Fault>),
    /// A meta-operator the machine does not model (`Softmax`, `Sigmoid`, an ALU operation
    /// whose operands the flow gives only as differing lengths, ...): no verdict on the flow.
    Unsupported {
        line: u32,
        op: String,
        reason: String,
    },
    /// The run would exceed its work budget (`MachineOptions::work_budget`) at this line.
    OutOfBudget { line: u32, work: u64 },
}

impl RunOutcome {
    /// `finished`, `fault`, `unsupported` or `out-of-budget`.
    pub fn kind(&self) -> &'static str {
        match self {
            RunOutcome::Finished(_) => "finished",
            RunOutcome::Fault(_) => "fault",
            RunOutcome::Unsupported { .. } => "unsupported",
            RunOutcome::OutOfBudget { .. } => "out-of-budget",
        }
    }

    /// The finished run, if it finished.
    pub fn finished(&self) -> Option<&Finished> {
        match self {
            RunOutcome::Finished(f) => Some(f),
            _ => None,
        }
    }

    /// The fault, if one stopped the run.
    pub fn fault(&self) -> Option<&Fault> {
        match self {
            RunOutcome::Fault(f) => Some(f),
            _ => None,
        }
    }
}

impl fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunOutcome::Finished(r) => write!(f, "finished after {} meta-operators", r.ops),
            RunOutcome::Fault(x) => write!(f, "{x}"),
            RunOutcome::Unsupported { line, op, reason } => {
                write!(f, "line {line}: `{op}` is not modelled: {reason}")
            }
            RunOutcome::OutOfBudget { line, work } => {
                write!(f, "line {line}: the work budget ({work}) runs out")
            }
        }
    }
}

/// A finished run: the global buffer as the flow left it and the network's outputs read where
/// `layout.json` says they live.
#[derive(Debug)]
pub struct Finished {
    pub buffer: GlobalBuffer,
    pub outputs: Vec<OutputValue>,
    /// Meta-operators executed.
    pub ops: u64,
}

impl Finished {
    /// The output named `name`.
    pub fn output(&self, name: &str) -> Option<&OutputValue> {
        self.outputs.iter().find(|o| o.name == name)
    }
}

/// One network output after a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputValue {
    pub name: String,
    /// The producer's `ofmsize` (NCHW for a feature map).
    pub shape: Vec<usize>,
    /// The buffer address of its first element (`None`: layout.json does not say).
    pub addr: Option<u64>,
    /// The values in ONNX's order; `None` for an element nothing wrote (or that lies outside
    /// the buffer).
    pub values: Vec<Option<i64>>,
}

impl OutputValue {
    /// The values if every one was written.
    pub fn complete(&self) -> Option<Vec<i64>> {
        self.values.iter().copied().collect()
    }
}

/// The node a line belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRef {
    pub index: usize,
    pub name: String,
}

/// A fault: where, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub level: Level,
    /// The 1-based line of the flow file.
    pub line: u32,
    /// The line as the file holds it.
    pub text: String,
    pub node: Option<NodeRef>,
    pub kind: FaultKind,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} line {} `{}`",
            self.level,
            self.line,
            self.text.trim()
        )?;
        if let Some(n) = &self.node {
            write!(f, " (node {} `{}`)", n.index, n.name)?;
        }
        write!(f, ": {}", self.kind)
    }
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// A read of a buffer element that nothing (not the host, no earlier line) wrote.
    ReadNeverWritten { addr: u64 },
    /// An access at or beyond the buffer's end, or at a negative address.
    OutOfBounds { addr: i64, size: u64 },
    /// A length or count below zero.
    Negative { what: &'static str, value: i64 },
    /// An operand the meta-operator cannot use (an empty range, a zero stride, a shape of the
    /// wrong rank, a missing kernel, ...).
    BadOperand { what: String },
    /// Operand sizes that disagree with each other or with the node's weights.
    ShapeMismatch { what: String },
    /// A value leaves the 64-bit integers.
    Overflow,
    /// A division or average whose result is not an integer.
    Inexact { what: String },
    /// A division by zero.
    DivideByZero,
    /// A core index beyond the chip's cores.
    CoreOutOfChip { core: i64, cores: usize },
    /// A crossbar index beyond the chip's crossbars.
    CrossbarOutOfChip { xb: i64, crossbars: usize },
    /// The cores named hold no copy of the node's weights.
    NotACopy {
        named: (i64, i64),
        copies: Vec<(i64, i64)>,
    },
    /// A core or crossbar that two nodes of one flow segment both claim.
    Conflict { resource: String, other: NodeRef },
    /// A crossbar range of another size than the node's weight blocks (`xb_num`).
    CrossbarCount { named: i64, expected: i64 },
    /// The kernel a core-level convolution names is not the shape of the node's weights.
    KernelShape {
        printed: Vec<i64>,
        placed: Vec<usize>,
    },
    /// A meta-operator that needs a node's weights on a line no node's weights explain.
    NoWeights,
    /// A crossbar read with no input loaded into the crossbar.
    InputNotLoaded { xb: usize },
    /// A load into a crossbar whose inputs are all still unread (`pending` loads, the first
    /// from this line).
    InputOverrun {
        xb: usize,
        pending: usize,
        first: u32,
    },
    /// Crossbars read together that hold inputs of different loads.
    InputsDiffer { xb: usize, lines: (u32, u32) },
    /// An input vector of another length than the wordlines the weights occupy.
    LoadLength { loaded: usize, expected: usize },
    /// A crossbar's results read out before any activation computed them.
    OutputNotComputed { xb: usize },
    /// More wordlines opened at once than `MaxRC`, or outside the crossbar.
    Wordlines { what: String },
    /// A weight block `weight_reorder` names that the weight matrix does not have, or one
    /// computed twice for one output.
    Block { what: String },
    /// A crossbar range or crossbar `offset` crossbars past the node's first that is not inside
    /// one of its `copies` copies of `per_copy` crossbars.
    NoCopy {
        offset: usize,
        copies: usize,
        per_copy: usize,
    },
    /// A load's addresses that are no input window of one output pixel of the node.
    Window { what: String },
    /// A node computes more outputs than it has (its `k`-th activation, `units` outputs).
    ExtraCompute { unit: usize, units: usize },
    /// `layout.json` lacks an attribute this line needs (`memoryaddr`, `xb_num`, ...).
    MissingAttribute { attr: &'static str },
}

impl FaultKind {
    /// A stable kebab-case name of the kind, for signatures (`read-never-written`, …).
    pub fn name(&self) -> &'static str {
        use FaultKind::*;
        match self {
            ReadNeverWritten { .. } => "read-never-written",
            OutOfBounds { .. } => "out-of-bounds",
            Negative { .. } => "negative",
            BadOperand { .. } => "bad-operand",
            ShapeMismatch { .. } => "shape-mismatch",
            Overflow => "overflow",
            Inexact { .. } => "inexact",
            DivideByZero => "divide-by-zero",
            CoreOutOfChip { .. } => "core-out-of-chip",
            CrossbarOutOfChip { .. } => "crossbar-out-of-chip",
            NotACopy { .. } => "not-a-copy",
            Conflict { .. } => "conflict",
            CrossbarCount { .. } => "crossbar-count",
            KernelShape { .. } => "kernel-shape",
            NoWeights => "no-weights",
            InputNotLoaded { .. } => "input-not-loaded",
            InputOverrun { .. } => "input-overrun",
            InputsDiffer { .. } => "inputs-differ",
            LoadLength { .. } => "load-length",
            OutputNotComputed { .. } => "output-not-computed",
            Wordlines { .. } => "wordlines",
            Block { .. } => "block",
            NoCopy { .. } => "no-copy",
            Window { .. } => "window",
            ExtraCompute { .. } => "extra-compute",
            MissingAttribute { .. } => "missing-attribute",
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use FaultKind::*;
        match self {
            ReadNeverWritten { addr } => {
                write!(f, "reads global buffer address {addr}, which nothing wrote")
            }
            OutOfBounds { addr, size } => write!(
                f,
                "accesses global buffer address {addr}, outside the buffer of {size} elements"
            ),
            Negative { what, value } => write!(f, "negative {what}: {value}"),
            BadOperand { what } => write!(f, "{what}"),
            ShapeMismatch { what } => write!(f, "{what}"),
            Overflow => f.write_str("a value leaves the 64-bit integers"),
            Inexact { what } => write!(f, "{what} is not an integer"),
            DivideByZero => f.write_str("divides by zero"),
            CoreOutOfChip { core, cores } => {
                write!(f, "names core {core}; the chip has {cores} cores")
            }
            CrossbarOutOfChip { xb, crossbars } => {
                write!(f, "names crossbar {xb}; the chip has {crossbars} crossbars")
            }
            NotACopy { named, copies } => write!(
                f,
                "cores [{}, {}] hold no copy of the node's weights (its copies: {copies:?})",
                named.0, named.1
            ),
            Conflict { resource, other } => write!(
                f,
                "{resource} also holds node {} `{}` in the same flow segment",
                other.index, other.name
            ),
            CrossbarCount { named, expected } => write!(
                f,
                "names {named} crossbars; the node's weights occupy {expected} (xb_num)"
            ),
            KernelShape { printed, placed } => write!(
                f,
                "kernel {printed:?}, but the node's weights are {placed:?} (dense-equivalent)"
            ),
            NoWeights => f.write_str("no node's weights are known for this line"),
            InputNotLoaded { xb } => {
                write!(f, "reads crossbar {xb}, into which nothing was loaded")
            }
            InputOverrun { xb, pending, first } => write!(
                f,
                "loads crossbar {xb} while {pending} earlier load(s) (the first at line {first}) \
                 wait unread: the crossbar cannot hold them"
            ),
            InputsDiffer { xb, lines } => write!(
                f,
                "crossbar {xb} holds the input of line {}, its neighbours that of line {}",
                lines.1, lines.0
            ),
            LoadLength { loaded, expected } => write!(
                f,
                "the input holds {loaded} values; the weights it meets occupy {expected} wordlines"
            ),
            OutputNotComputed { xb } => {
                write!(f, "reads the results of crossbar {xb}, which computed none")
            }
            Wordlines { what } => write!(f, "{what}"),
            Block { what } => write!(f, "{what}"),
            NoCopy {
                offset,
                copies,
                per_copy,
            } => write!(
                f,
                "reaches {offset} crossbars past the node's first, not the start of (or inside) \
                 one of its {copies} copies of {per_copy} crossbars"
            ),
            Window { what } => write!(f, "{what}"),
            ExtraCompute { unit, units } => write!(
                f,
                "computes output unit {unit} of the node, which has {units}"
            ),
            MissingAttribute { attr } => {
                write!(f, "layout.json gives the node no `{attr}`")
            }
        }
    }
}

/// Why a chip could not be set up (bad input from the caller or a layout the machine cannot
/// use); no run was attempted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("no input `{0}` was given (layout.json's graph inputs: {1:?})")]
    MissingInput(String, Vec<String>),
    #[error("input `{name}`: shape {given:?}, but the graph declares {declared:?}")]
    InputShape {
        name: String,
        given: Vec<usize>,
        declared: Vec<Option<i64>>,
    },
    #[error("`{0}` is not a {1} of layout.json")]
    Unknown(String, &'static str),
    #[error("no weights were given for node `{0}`")]
    MissingWeights(String),
    #[error("weights of node `{node}`: {problem}")]
    Weights { node: String, problem: String },
    #[error("initializer `{0}` has a buffer address but no value was given")]
    MissingInitializer(String),
    #[error("{what} `{name}` at {addr}: {problem}")]
    Placement {
        what: &'static str,
        name: String,
        addr: i64,
        problem: String,
    },
    #[error("no {0} flow was loaded")]
    NoFlow(Level),
    #[error("layout.json has no {0}-level schedule to say which node each line belongs to")]
    NoSchedule(Level),
    #[error(
        "the {level}-level flow is not what layout.json's schedule prints: line {line} is \
         `{found}`, the schedule prints `{expected}`"
    )]
    ScheduleMismatch {
        level: Level,
        line: u32,
        expected: String,
        found: String,
    },
    #[error("the {level}-level schedule cannot be ordered as CIM-MLC prints it: {problem}")]
    ScheduleOrder { level: Level, problem: String },
}
