//! What can stop a run: faults (the program did something isa.md calls an error or undefined),
//! deadlocks (every unfinished core blocked) and running out of steps, and the errors of setting
//! a machine up (the export or the architecture does not fit the program).
//!
//! A fault in the program under test is *data* (a [`RunOutcome`]), never a panic or an `Err` of
//! the interpreter: the harness reports it as a finding.

use std::fmt;

use crate::inst::Inst;

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// Every core's pc passed its last instruction.
    Finished,
    /// A core executed an instruction whose effect isa.md calls a fault.
    Fault(Fault),
    /// Every unfinished core is blocked and nothing can unblock it.
    Deadlock(DeadlockReport),
    /// The step budget ran out before every core finished.
    OutOfSteps { executed: u64 },
}

impl RunOutcome {
    /// A short name of the outcome kind: `finished`, `fault`, `deadlock`, `out-of-steps`.
    pub fn kind(&self) -> &'static str {
        match self {
            RunOutcome::Finished => "finished",
            RunOutcome::Fault(_) => "fault",
            RunOutcome::Deadlock(_) => "deadlock",
            RunOutcome::OutOfSteps { .. } => "out-of-steps",
        }
    }

    pub fn is_finished(&self) -> bool {
        matches!(self, RunOutcome::Finished)
    }
}

impl fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunOutcome::Finished => write!(f, "finished: every core ran to completion"),
            RunOutcome::Fault(fault) => write!(f, "{fault}"),
            RunOutcome::Deadlock(report) => write!(f, "{report}"),
            RunOutcome::OutOfSteps { executed } => write!(
                f,
                "out of steps: the step budget ran out after {executed} instructions, before every core finished"
            ),
        }
    }
}

/// The instruction as assembly text, for reports.
pub(crate) fn inst_text(inst: &Inst) -> String {
    inst.to_string()
}

/// A run-time fault: which core, where, which instruction, and why (with the offending values).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub core: u32,
    pub pc: u32,
    pub inst: Inst,
    pub kind: FaultKind,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "fault on core {} at pc {}: {}",
            self.core,
            self.pc,
            inst_text(&self.inst)
        )?;
        write!(f, "  {}", self.kind)
    }
}

impl std::error::Error for Fault {}

/// Which operand of an instruction a range belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    Rd,
    Rs1,
    Rs2,
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operand::Rd => "rd",
            Operand::Rs1 => "rs1",
            Operand::Rs2 => "rs2",
        })
    }
}

/// Why a run-time fault happened. Addresses are exact (`i64`, never wrapped), so a range that
/// starts below 0 or ends past the memory shows as such.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultKind {
    #[error("local memory range [{start}, {start} + {len}) of operand {operand} lies outside the {size}-byte local memory")]
    LmemRange {
        operand: Operand,
        start: i64,
        len: u64,
        size: u32,
    },
    #[error("global memory range [{start}, {start} + {len}) of operand {operand} lies outside the 4 GiB global memory")]
    GmemRange {
        operand: Operand,
        start: i64,
        len: u64,
    },
    #[error("unknown array group {group}: {reason}")]
    UnknownGroup { group: u32, reason: String },
    #[error("weight {value} at row {row}, column {col} of group {group} does not fit the instruction's mbiw = {mbiw} bits")]
    WeightTooWide {
        group: u32,
        row: u32,
        col: u32,
        value: i32,
        mbiw: u32,
    },
    #[error("vavg with len 0 (division by zero)")]
    VavgZeroLength,
    #[error("negative shift amount {amount} at element {index}")]
    NegativeShift { index: u32, amount: i64 },
    #[error("vmv source element {index} at [{src}, {src} + {width}) overlaps the destination [{dst}, {dst} + {dst_len}) (undefined behaviour)")]
    VmvOverlap {
        index: u32,
        src: i64,
        width: u32,
        dst: i64,
        dst_len: u64,
    },
    #[error("lmv source [{src}, {src} + {size}) overlaps destination [{dst}, {dst} + {size}) (undefined behaviour)")]
    LmvOverlap { src: i64, dst: i64, size: u32 },
    #[error("resize source [{src}, {src} + {src_len}) overlaps destination [{dst}, {dst} + {dst_len}) while the byte width grows from {ibyw} to {obyw} (undefined behaviour)")]
    ResizeOverlap {
        src: i64,
        src_len: u64,
        dst: i64,
        dst_len: u64,
        ibyw: u32,
        obyw: u32,
    },
    #[error("send/recv size mismatch: core {sender} at pc {sender_pc} ({sender_inst}) sends {send_size} bytes, core {receiver} at pc {receiver_pc} receives {recv_size} bytes", sender_inst = inst_text(sender_inst))]
    SizeMismatch {
        sender: u32,
        sender_pc: u32,
        sender_inst: Inst,
        send_size: u32,
        receiver: u32,
        receiver_pc: u32,
        recv_size: u32,
    },
    #[error("core {core} names itself as the peer of a send/recv")]
    MessageToSelf { core: u32 },
    #[error("core id {core} is out of range (the program has {cores} cores)")]
    BadCore { core: u32, cores: u32 },
}

impl FaultKind {
    /// The kind's name, the variant's (`LmemRange`, `SizeMismatch`, ...): stable, for
    /// signatures that group faults by kind.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::LmemRange { .. } => "LmemRange",
            FaultKind::GmemRange { .. } => "GmemRange",
            FaultKind::UnknownGroup { .. } => "UnknownGroup",
            FaultKind::WeightTooWide { .. } => "WeightTooWide",
            FaultKind::VavgZeroLength => "VavgZeroLength",
            FaultKind::NegativeShift { .. } => "NegativeShift",
            FaultKind::VmvOverlap { .. } => "VmvOverlap",
            FaultKind::LmvOverlap { .. } => "LmvOverlap",
            FaultKind::ResizeOverlap { .. } => "ResizeOverlap",
            FaultKind::SizeMismatch { .. } => "SizeMismatch",
            FaultKind::MessageToSelf { .. } => "MessageToSelf",
            FaultKind::BadCore { .. } => "BadCore",
        }
    }
}

/// Every unfinished core and what it waits for, when none of them can move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlockReport {
    pub blocked: Vec<BlockedCore>,
}

impl fmt::Display for DeadlockReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "deadlock: {} unfinished core(s), all blocked",
            self.blocked.len()
        )?;
        for b in &self.blocked {
            write!(
                f,
                "\n  core {} at pc {}: {} — {}",
                b.core,
                b.pc,
                inst_text(&b.inst),
                b.waiting
            )?;
        }
        Ok(())
    }
}

/// One blocked core in a deadlock report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockedCore {
    pub core: u32,
    pub pc: u32,
    pub inst: Inst,
    pub waiting: WaitingFor,
}

/// What a blocked core waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitingFor {
    /// A `recv` with no matching message from `from` yet.
    Recv { from: u32, peer_finished: bool },
    /// A `send` whose message `to` has not received yet.
    Send { to: u32, peer_finished: bool },
    /// A `wait` whose event register does not equal the wanted value.
    Event { event: u32, want: i32, current: i32 },
}

impl fmt::Display for WaitingFor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fin = |done: bool| if done { " (which has finished)" } else { "" };
        match *self {
            WaitingFor::Recv {
                from,
                peer_finished,
            } => {
                write!(f, "waits to receive from core {from}{}", fin(peer_finished))
            }
            WaitingFor::Send { to, peer_finished } => {
                write!(
                    f,
                    "waits for core {to} to receive its message{}",
                    fin(peer_finished)
                )
            }
            WaitingFor::Event {
                event,
                want,
                current,
            } => {
                write!(
                    f,
                    "waits for event register {event} to equal {want} (it holds {current})"
                )
            }
        }
    }
}

/// Why a machine could not be set up for a program: the crossbar export, the architecture or
/// a host access does not fit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("architecture parameter {field} = {value} is invalid: {reason}")]
    BadArch {
        field: &'static str,
        value: u64,
        reason: &'static str,
    },
    #[error("program has {program} cores but the architecture says {arch}")]
    CoreCount { program: u32, arch: u32 },
    #[error("crossbar export names core {core}, beyond the program's {cores} cores")]
    ExportCore { core: u32, cores: u32 },
    #[error("crossbar export of core {core}: cells have shape {found:?}, the architecture needs {expected:?}")]
    CellsShape {
        core: u32,
        found: [usize; 3],
        expected: [usize; 3],
    },
    #[error("crossbar export of core {core}, group {group}: array index {array} is not below arrays_per_core = {arrays_per_core}")]
    ArrayIndex {
        core: u32,
        group: u32,
        array: u32,
        arrays_per_core: u32,
    },
    #[error("crossbar export of core {core}, group {group}: rows = {rows} exceeds array_rows = {array_rows}")]
    GroupRows {
        core: u32,
        group: u32,
        rows: u32,
        array_rows: u32,
    },
    #[error("crossbar export of core {core}, group {group}: cols = {cols} exceeds {arrays} arrays × array_cols = {limit}")]
    GroupCols {
        core: u32,
        group: u32,
        cols: u32,
        arrays: u32,
        limit: u64,
    },
    #[error("crossbar export of core {core}: group number {group} appears twice")]
    DuplicateGroup { core: u32, group: u32 },
    #[error("array_group_map of core {core} uses {used} arrays, more than arrays_per_core = {arrays_per_core}")]
    GroupMapTooLarge {
        core: u32,
        used: u64,
        arrays_per_core: u32,
    },
    #[error("array_group_map lists {map} cores, the program has {cores}")]
    GroupMapCores { map: u32, cores: u32 },
    #[error("core {core} does not exist (the program has {cores} cores)")]
    NoSuchCore { core: u32, cores: u32 },
    #[error(
        "local memory range [{addr}, {addr} + {len}) of core {core} runs past its {size} bytes"
    )]
    LmemRange {
        core: u32,
        addr: u32,
        len: u64,
        size: u32,
    },
    #[error("global memory range [{addr}, {addr} + {len}) runs past 4 GiB")]
    GmemRange { addr: u32, len: u64 },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `name()` is the variant's name, as its `Debug` form starts.
    #[test]
    fn fault_kind_names_are_the_variant_names() {
        let inst = Inst::Nop;
        let kinds = [
            FaultKind::LmemRange {
                operand: Operand::Rd,
                start: 0,
                len: 1,
                size: 0,
            },
            FaultKind::GmemRange {
                operand: Operand::Rs1,
                start: -1,
                len: 1,
            },
            FaultKind::UnknownGroup {
                group: 3,
                reason: String::new(),
            },
            FaultKind::WeightTooWide {
                group: 0,
                row: 0,
                col: 0,
                value: 300,
                mbiw: 8,
            },
            FaultKind::VavgZeroLength,
            FaultKind::NegativeShift {
                index: 0,
                amount: -1,
            },
            FaultKind::VmvOverlap {
                index: 0,
                src: 0,
                width: 1,
                dst: 0,
                dst_len: 1,
            },
            FaultKind::LmvOverlap {
                src: 0,
                dst: 0,
                size: 1,
            },
            FaultKind::ResizeOverlap {
                src: 0,
                src_len: 1,
                dst: 0,
                dst_len: 1,
                ibyw: 1,
                obyw: 4,
            },
            FaultKind::SizeMismatch {
                sender: 0,
                sender_pc: 0,
                sender_inst: inst,
                send_size: 4,
                receiver: 1,
                receiver_pc: 0,
                recv_size: 8,
            },
            FaultKind::MessageToSelf { core: 0 },
            FaultKind::BadCore { core: 9, cores: 2 },
        ];
        for kind in kinds {
            let debug = format!("{kind:?}");
            let variant = debug.split([' ', '{', '(']).next().unwrap();
            assert_eq!(kind.name(), variant);
        }
    }
}
