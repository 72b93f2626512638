//! CIM-MLC's meta-operator flows and an exact interpreter of each of their three granularities
//! (`docs/cim-mlc-isa.md`).
//!
//! CIM-MLC (ASPLOS'24) compiles an ONNX network for a computing-in-memory chip described by
//! `ArchTem` and prints *meta-operator flows*: core-wise (`CIM.read_core-conv`, `Mov`, pooling,
//! activations, ALU operations), crossbar-wise (`load` windows into crossbars, `CIM.read_xb`) and
//! wordline-wise (`CIM.read_wl` of `MaxRC`-row slices). Nothing in CIM-MLC executes them (its
//! simulator estimates latency); this crate does, on exact integers, so that a flow can be
//! compared with its network's exact result.
//!
//! - [`flow`]: the three flow files, read into typed meta-operators line by line
//!   ([`Flows::load`]); malformed input is a [`LoadError`] naming the file and line.
//! - [`layout`]: `layout.json`, CIM-MLC's own state the pimdiff driver reads out: the chip, every
//!   node's mapping attributes, where the input and outputs live, the schedules
//!   ([`Layout::load`]).
//! - [`machine`]: a [`Chip`] built from the layout and the caller's input, weights and
//!   initializers, placed where CIM-MLC's mapping says, then [`Chip::run`] per [`Level`] to a
//!   [`RunOutcome`]: finished (the global buffer, each output read where the layout says it
//!   lives), a [`Fault`] naming the line and its node, `Unsupported`, or out of budget. An
//!   [`Observer`] sees every executed meta-operator with what it read and wrote; a
//!   [`Localizer`] (`Chip::localizer`) finds the first node whose result leaves the reference
//!   and the meta-operator that wrote its first wrong element.
//! - [`schedule`]: which node each line belongs to.
//!
//! What it is not: a model of timing, energy or bit-level precision (weights and inputs are
//! whole integers, crossbar cells are not bit-sliced); nor does it know ONNX or the harness:
//! the caller hands over tensors by node and input name.

pub mod error;
pub mod flow;
pub mod layout;
pub mod machine;
pub mod schedule;
pub mod tensor;

pub use error::{LoadError, LoadErrorKind};
pub use flow::{Flow, Flows, Level, Op};
pub use layout::Layout;
pub use machine::{
    Access, Chip, ChipBuilder, Divergence, Fault, FaultKind, Finished, InputQueue, Localizer,
    MachineOptions, NodeWeights, Observer, OpEvent, OutputValue, RunOutcome, SetupError, Trace,
};
pub use tensor::Tensor;
