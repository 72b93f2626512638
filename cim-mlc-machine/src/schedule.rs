//! Which node each line of a flow belongs to.
//!
//! The flows do not say. At the two lower levels it matters for more than the trace: a
//! convolution's `CIM.read_xb` names no destination, so where its results go depends on whose
//! read it is. The code generators printed their tables `{cycle: {node: [instruction]}}`
//! (codegen/CrossbarWise.py:788-911), and `layout.json` holds those tables; printing them again
//! the way CIM-MLC does — cycles in the iteration order of CPython's `set(keys)`, categories in
//! a fixed order, `flow{`/`parallel{` where it puts them — must give the flow file line for
//! line, and then every instruction line has its node and cycle. A flow that does not print
//! back is refused (`SetupError::ScheduleMismatch`), never guessed at.
//!
//! The core-level flow is printed node by node (codegen/CoreWise.py:17-21), each node's
//! handler a fixed sequence of meta-operators; [`attribute_core`] walks the nodes along the
//! lines.

use std::collections::HashMap;

use crate::flow::{Flow, Item, Level, Op};
use crate::layout::{Layout, Node, Schedule};
use crate::machine::fault::SetupError;

/// Where one line comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Origin {
    /// The node's index in `layout.json`'s `nodes`.
    pub node: usize,
    /// The cycle the code generator scheduled it at (the two lower levels).
    pub cycle: Option<f64>,
}

/// The categories in the order the printers visit them (CrossbarWise.py:800-909).
pub const CATEGORIES: [&str; 11] = [
    "compute",
    "pooling",
    "alu",
    "activ",
    "mov",
    "softmax",
    "elementwise_op",
    "indexing",
    "reduction",
    "transform",
    "where",
];

/// The categories whose cycles are printed (CrossbarWise.py:789-796): an instruction of another
/// category is printed only at a cycle one of these has.
pub const KEYED: [&str; 6] = ["compute", "pooling", "alu", "activ", "mov", "softmax"];

/// A node's instructions at one cycle.
type Cell<'a> = (usize, &'a [Option<String>]);

/// One table: cycles in insertion order, each with its nodes in insertion order; and where
/// each cycle is.
struct Table<'a> {
    cycles: Vec<(f64, Vec<Cell<'a>>)>,
    index: HashMap<u64, usize>,
}

/// A cycle as a key: numbers equal as numbers are one key, as in a Python dict.
fn key(cycle: f64) -> u64 {
    (cycle + 0.0).to_bits()
}

fn table(entries: &[crate::layout::Entry]) -> Table<'_> {
    let mut t = Table {
        cycles: Vec::new(),
        index: HashMap::new(),
    };
    for e in entries {
        match t.index.get(&key(e.cycle)) {
            Some(&i) => t.cycles[i].1.push((e.node, &e.insts)),
            None => {
                t.index.insert(key(e.cycle), t.cycles.len());
                t.cycles.push((e.cycle, vec![(e.node, &e.insts)]));
            }
        }
    }
    t
}

/// The lines a schedule prints, each instruction line with its origin.
pub fn print(
    level: Level,
    schedule: &Schedule,
) -> Result<Vec<(String, Option<Origin>)>, SetupError> {
    let empty = Vec::new();
    let tables: Vec<Table<'_>> = CATEGORIES
        .iter()
        .map(|c| table(schedule.categories.get(*c).unwrap_or(&empty)))
        .collect();
    let mut keys = Vec::new();
    for (i, c) in CATEGORIES.iter().enumerate() {
        if KEYED.contains(c) {
            keys.extend(tables[i].cycles.iter().map(|(cycle, _)| *cycle));
        }
    }
    let mut counts: HashMap<u64, usize> = HashMap::new();
    for k in &keys {
        *counts.entry(key(*k)).or_default() += 1;
    }
    let order =
        python_set_order(&keys).map_err(|problem| SetupError::ScheduleOrder { level, problem })?;
    let mut out = Vec::new();
    for cycle in order {
        let several = counts.get(&key(cycle)).copied().unwrap_or(0) > 1;
        if several {
            out.push(("flow{".to_string(), None));
        }
        for t in &tables {
            let Some(&i) = t.index.get(&key(cycle)) else {
                continue;
            };
            for (node, insts) in &t.cycles[i].1 {
                let origin = Some(Origin {
                    node: *node,
                    cycle: Some(cycle),
                });
                let wrap = insts.len() > 1;
                if wrap {
                    out.push(("\tparallel{".to_string(), None));
                }
                for inst in insts.iter() {
                    let text = inst.as_deref().unwrap_or("None");
                    out.push((format!("\t\t {text}"), origin));
                }
                if wrap {
                    out.push(("\t}".to_string(), None));
                }
            }
        }
        if several {
            out.push(("}".to_string(), None));
        }
    }
    Ok(out)
}

/// The origin of every line of a lower-level flow (by line index), from its schedule.
pub fn attribute_lower(
    flow: &Flow,
    schedule: &Schedule,
) -> Result<Vec<Option<Origin>>, SetupError> {
    let printed = print(flow.level, schedule)?;
    let mut origins = vec![None; flow.lines.len()];
    let mut next = printed.iter();
    let mismatch = |line: u32, expected: &str, found: &str| SetupError::ScheduleMismatch {
        level: flow.level,
        line,
        expected: expected.to_string(),
        found: found.to_string(),
    };
    for (i, line) in flow.lines.iter().enumerate() {
        if matches!(line.item, Item::Text | Item::Blank) {
            continue; // printed by CIM-MLC outside the tables
        }
        match next.next() {
            Some((text, origin)) if *text == line.text => origins[i] = *origin,
            Some((text, _)) => return Err(mismatch(line.number, text, &line.text)),
            None => {
                return Err(mismatch(
                    line.number,
                    "(the end of the schedule)",
                    &line.text,
                ))
            }
        }
    }
    if let Some((text, _)) = next.next() {
        let last = flow.lines.last().map_or(0, |l| l.number);
        return Err(mismatch(last + 1, text, "(the end of the file)"));
    }
    Ok(origins)
}

/// The meta-operators one node's core-level handler prints, in order (codegen/CoreWise.py).
fn core_sequence(node: &Node) -> Vec<&str> {
    let op = node.op_type.as_str();
    match node.op_class.as_deref() {
        Some("Conv") => {
            // `dup` sub-IFMs, then one Mov (CoreWise.py:67-97).
            let dup = node.int("dup").unwrap_or(1).clamp(1, 1 << 12) as usize;
            let mut s = vec!["CIM.read_core-conv"; dup];
            s.push("Mov");
            s
        }
        Some("Linear") => vec!["CIM.read_core-fc"], // :101-111
        Some("Pool") => vec![op, "Mov"],            // :113-134
        Some("Concat") => vec!["Mov", "Mov"],       // :179-198
        Some(_) => vec![op],
        None => vec![],
    }
}

/// The origin of every line of the core-level flow: the handlers print in node order, so each
/// line belongs to the current node while it matches the node's sequence, and otherwise to the
/// next node whose sequence starts with it (a node whose handler printed nothing is passed by).
pub fn attribute_core(flow: &Flow, layout: &Layout) -> Vec<Option<Origin>> {
    let sequences: Vec<Vec<&str>> = layout.nodes.iter().map(core_sequence).collect();
    let mut origins = vec![None; flow.lines.len()];
    let mut current: Option<(usize, usize)> = None; // (node, lines it printed)
    for (i, line) in flow.lines.iter().enumerate() {
        let Some(op) = line.op() else { continue };
        let name = match op {
            Op::Copy { .. } => "Mov",
            op => op.name(),
        };
        let continues = current.is_some_and(|(n, used)| sequences[n].get(used) == Some(&name));
        if continues {
            if let Some((_, used)) = current.as_mut() {
                *used += 1;
            }
        } else {
            let from = current.map_or(0, |(n, _)| n + 1);
            current = (from..sequences.len())
                .find(|&n| sequences[n].first() == Some(&name))
                .map(|n| (n, 1))
                .or(current);
            if current.is_none_or(|(n, used)| sequences[n].get(used - 1) != Some(&name)) {
                continue;
            }
        }
        origins[i] = current.map(|(node, _)| Origin { node, cycle: None });
    }
    origins
}

/// CPython's hash of a number equal to an integer (`hash(12) == hash(12.0)`), as the unsigned
/// word its set implementation masks.
fn python_hash(x: f64) -> Result<u64, String> {
    if x.fract() != 0.0 || !x.is_finite() || x.abs() >= 9.0e15 {
        return Err(format!("cycle {x} is not an integer"));
    }
    const MODULUS: i64 = (1 << 61) - 1;
    let n = x as i64;
    let h = if n >= 0 {
        n % MODULUS
    } else {
        let h = -((-n) % MODULUS);
        if h == -1 {
            -2
        } else {
            h
        }
    };
    Ok(h as u64)
}

/// The iteration order of `set(keys)` in CPython 3.11 (Objects/setobject.c: `set_add_entry`
/// with nine linear probes, then perturbation; a table of 8 slots, resized to the smallest
/// power of two above four times the used count when it is three-fifths full, re-inserted in
/// slot order). Keys equal as numbers are one key.
pub fn python_set_order(keys: &[f64]) -> Result<Vec<f64>, String> {
    const LINEAR_PROBES: usize = 9;
    const PERTURB_SHIFT: u32 = 5;
    let mut table: Vec<Option<(f64, u64)>> = vec![None; 8];
    let mut used = 0usize;
    let insert_clean = |table: &mut Vec<Option<(f64, u64)>>, key: f64, hash: u64| {
        let mask = table.len() - 1;
        let mut perturb = hash;
        let mut i = (hash as usize) & mask;
        loop {
            if table[i].is_none() {
                table[i] = Some((key, hash));
                return;
            }
            if i + LINEAR_PROBES <= mask {
                for j in 1..=LINEAR_PROBES {
                    if table[i + j].is_none() {
                        table[i + j] = Some((key, hash));
                        return;
                    }
                }
            }
            perturb >>= PERTURB_SHIFT;
            i = (i
                .wrapping_mul(5)
                .wrapping_add(1)
                .wrapping_add(perturb as usize))
                & mask;
        }
    };
    for &key in keys {
        let hash = python_hash(key)?;
        let mask = table.len() - 1;
        let mut perturb = hash;
        let mut i = (hash as usize) & mask;
        let slot = 'search: loop {
            let probes = if i + LINEAR_PROBES <= mask {
                LINEAR_PROBES
            } else {
                0
            };
            for j in 0..=probes {
                match table[i + j] {
                    None => break 'search Some(i + j),
                    Some((k, _)) if k == key => break 'search None,
                    Some(_) => {}
                }
            }
            perturb >>= PERTURB_SHIFT;
            i = (i
                .wrapping_mul(5)
                .wrapping_add(1)
                .wrapping_add(perturb as usize))
                & mask;
        };
        let Some(slot) = slot else { continue };
        table[slot] = Some((key, hash));
        used += 1; // no deletions: fill == used
        if used * 5 >= mask * 3 {
            let minused = if used > 50_000 { used * 2 } else { used * 4 };
            let mut size = 8;
            while size <= minused {
                size <<= 1;
            }
            let old = std::mem::replace(&mut table, vec![None; size]);
            for (k, h) in old.into_iter().flatten() {
                insert_clean(&mut table, k, h);
            }
        }
    }
    Ok(table.into_iter().flatten().map(|(k, _)| k).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_order_is_cpythons() {
        // Each expected order printed by CPython 3.11: `list(set(xs))`.
        let order = |xs: &[f64]| python_set_order(xs).unwrap();
        assert_eq!(order(&[1.0, 2.0, 3.0, 40.0]), vec![40.0, 1.0, 2.0, 3.0]);
        assert_eq!(order(&[5.0, 3.0, 5.0, 1.0]), vec![1.0, 3.0, 5.0]);
        assert_eq!(order(&[12.0, 12.0, 7.0]), vec![12.0, 7.0]);
        assert_eq!(order(&[100.0, 8.0, 16.0, 0.0]), vec![8.0, 16.0, 100.0, 0.0]);
        let dense: Vec<f64> = (0..200).map(|i| (199 - i) as f64).collect();
        let sorted: Vec<f64> = (0..200).map(|i| i as f64).collect();
        assert_eq!(order(&dense), sorted);
        assert_eq!(
            order(&[1000.0, 33.0, 65.0, 1.0, 2.0]),
            vec![33.0, 2.0, 65.0, 1.0, 1000.0]
        );
        assert!(python_set_order(&[1.5]).is_err());
    }
}
