//! Whose a fault is: the meta-operator that made the access, or the CIM-MLC state it obeyed.
//!
//! Why: the machine stops at the meta-operator that touched the wrong place, and by default a
//! fault is signed by the code generator line that printed it ([`crate::check`]). But a
//! meta-operator that did exactly what CIM-MLC's own state told it (`layout.json`: each node's
//! `memoryaddr`, `ofmsize`, `corestart`, `dup`, `core_num`) is not where the defect is, and
//! signing by it files one defect once per operator that happens to meet it: an allocator that
//! lets a tensor run past the global buffer's end shows as an out-of-bounds `Relu`, `Add`,
//! `Mov`, `CIM.read_xb`, … at every granularity. So the state decides:
//!
//! | fault | CIM-MLC's state says | the fault is signed by |
//! |---|---|---|
//! | a read of what nothing wrote, inside the output a source node of the reader was given | the reader read the right place | the source node: its last meta-operator before the read (signed as if that one had faulted); when it has none before, the level's schedule (it is computed after its reader) or, when it has none at all, its operator (never computed at this level) |
//! | an access past the buffer's end, inside a tensor CIM-MLC placed across that end | the meta-operator stayed in its tensor | the allocator, `codegen/Addr.py` (one cause for every operator and level) |
//! | a core or crossbar past the chip's, inside the cores CIM-MLC mapped a node's copies to | the meta-operator named its node's cores | the mapping, `optimization/CoreDup.py:get_corewise_dup` |
//!
//! Anything else stays the printing meta-operator's.

use pimdiff_cim_mlc::layout::Node;
use pimdiff_cim_mlc::{Chip, Fault, FaultKind};
use serde::{Deserialize, Serialize};

/// A fault's cause when it is not the meta-operator that faulted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blame {
    /// The signature detail (localized when it names a CIM-MLC function).
    pub cause: String,
    /// Why, for people: the state that says so.
    pub why: String,
}

/// The signature detail of a tensor CIM-MLC placed across the global buffer's end.
pub const ACROSS_BUFFER_END: &str =
    "out-of-bounds at a tensor placed across the global buffer's end of codegen/Addr.py:AddrGenerator";

/// The signature detail of weights mapped to cores the chip does not have.
pub const MAPPED_PAST_CHIP: &str =
    "weights mapped past the chip's cores of optimization/CoreDup.py:get_corewise_dup";

/// What the blame needs of a flow line's meta-operator (the check's `MetaOp`, which knows the
/// CIM-MLC line that made it).
pub struct Made {
    /// `Mov of codegen/CoreWise.py:process_conv_node_cm`: where it was made, when known.
    pub place: Option<String>,
    /// Its name (`Mov`).
    pub name: String,
    /// The line's text.
    pub text: String,
}

/// The signature detail of a fault of `kind` localized to `place` (`Mov of
/// codegen/CoreWise.py:process_conv_node_cm`): the one form of a fault at a meta-operator, of
/// one blamed on its source, and of an element no line wrote (`check`), so the three merge.
pub fn fault_at(kind: &str, place: &str) -> String {
    format!("{kind} at {place}")
}

/// The kind name of a read of what nothing wrote (`FaultKind::ReadNeverWritten`).
pub const READ_NEVER_WRITTEN: &str = "read-never-written";

/// The cause of `fault` when CIM-MLC's state puts it elsewhere than the faulting meta-operator
/// (see the module docs); `made_by(line, node)` describes the meta-operator of a flow line.
pub fn blame(
    chip: &Chip<'_>,
    fault: &Fault,
    made_by: impl Fn(u32, usize) -> Made,
) -> Option<Blame> {
    let layout = chip.layout();
    match &fault.kind {
        FaultKind::ReadNeverWritten { addr } => {
            let reader = layout.nodes.get(fault.node.as_ref()?.index)?;
            let addr = i64::try_from(*addr).ok()?;
            let source = layout
                .nodes
                .iter()
                .filter(|n| n.outputs.iter().any(|o| reader.inputs.contains(o)))
                .find(|n| region(n).is_some_and(|(s, e)| (s..e).contains(&addr)))?;
            Some(unwritten_source(chip, fault, reader, source, made_by))
        }
        FaultKind::OutOfBounds { addr, size } => {
            let size = i64::try_from(*size).ok()?;
            let (node, (start, end)) = layout.nodes.iter().find_map(|n| {
                let (s, e) = region(n)?;
                (s < size && e > size && (size..e).contains(addr)).then_some((n, (s, e)))
            })?;
            Some(Blame {
                cause: ACROSS_BUFFER_END.to_string(),
                why: format!(
                    "CIM-MLC placed the output of n{} ({}) at [{start}, {end}) in a buffer of \
                     {size}: its allocator wraps the address after a tensor, not the tensor \
                     (codegen/Addr.py)",
                    node.index, node.op_type
                ),
            })
        }
        FaultKind::CoreOutOfChip { core, cores } => mapped_past(chip, *core, *cores),
        FaultKind::CrossbarOutOfChip { xb, .. } => {
            let per_core = i64::try_from(layout.chip.crossbars_per_core.max(1)).ok()?;
            mapped_past(chip, xb / per_core, layout.chip.cores)
        }
        _ => None,
    }
}

/// `[start, end)` of the output CIM-MLC gave `node`: its `memoryaddr`'s last address and
/// `ofmsize`'s element count.
fn region(node: &Node) -> Option<(i64, i64)> {
    let start = node.output_addr()?;
    let len = node
        .ints("ofmsize")?
        .iter()
        .try_fold(1i64, |a, &d| a.checked_mul(d))?;
    Some((start, start.checked_add(len)?))
}

/// A read of `source`'s output that nothing wrote: the blame of `source`'s meta-operators.
fn unwritten_source(
    chip: &Chip<'_>,
    fault: &Fault,
    reader: &Node,
    source: &Node,
    made_by: impl Fn(u32, usize) -> Made,
) -> Blame {
    let level = fault.level;
    let lines: Vec<u32> = chip
        .node_lines(level)
        .filter(|&(_, node)| node == source.index)
        .map(|(line, _)| line)
        .collect();
    let what = format!(
        "n{} ({}) reads the output CIM-MLC gave n{} ({})",
        reader.index, reader.op_type, source.index, source.op_type
    );
    if let Some(&last) = lines.iter().rev().find(|&&l| l < fault.line) {
        let by = made_by(last, source.index);
        let why = format!(
            "{what}, which n{}'s meta-operators up to line {last} `{}` left unwritten there",
            source.index,
            by.text.trim()
        );
        // Signed as if the meta-operator had faulted itself: the place to fix is the same
        // (a conv's trailing `Mov` that moves its result off shows both ways).
        let cause = match by.place {
            Some(place) => fault_at(READ_NEVER_WRITTEN, &place),
            None => format!("{level}: read-never-written in {}", by.name),
        };
        return Blame { cause, why };
    }
    if lines.is_empty() {
        Blame {
            cause: format!("{level}: the output of {} never computed", source.op_type),
            why: format!(
                "{what}; no meta-operator of n{} is in the {level} flow",
                source.index
            ),
        }
    } else {
        // The order is the level's schedule (each code generator times its node from its
        // sources' ready times; the printer sorts by them): one mechanism, whichever pair of
        // operators it puts out of order.
        Blame {
            cause: format!("{level}: an operator's source read before it is computed"),
            why: format!(
                "{what}; n{}'s meta-operators come later in the {level} flow (from line {})",
                source.index, lines[0]
            ),
        }
    }
}

/// A core `core` past the chip's `cores` that CIM-MLC's mapping gave a node's copies.
fn mapped_past(chip: &Chip<'_>, core: i64, cores: usize) -> Option<Blame> {
    let cores = i64::try_from(cores).ok()?;
    chip.layout()
        .nodes
        .iter()
        .filter(|n| n.is_weighted())
        .find_map(|n| {
            let start = n.int("corestart")?;
            let end = start.checked_add(n.int("core_num")?.checked_mul(n.int("dup")?)?)?;
            (end > cores && (start..end).contains(&core)).then(|| Blame {
                cause: MAPPED_PAST_CHIP.to_string(),
                why: format!(
                    "CIM-MLC mapped n{} ({})'s {} copies to cores [{start}, {end}) of a chip of \
                     {cores} (corestart, dup, core_num)",
                    n.index,
                    n.op_type,
                    n.int("dup").unwrap_or(0)
                ),
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_name_is_the_machines() {
        assert_eq!(
            READ_NEVER_WRITTEN,
            FaultKind::ReadNeverWritten { addr: 0 }.name()
        );
        assert_eq!(
            fault_at(READ_NEVER_WRITTEN, "Mov of codegen/CoreWise.py:f"),
            "read-never-written at Mov of codegen/CoreWise.py:f"
        );
    }
}
