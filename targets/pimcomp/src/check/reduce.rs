//! Reduced programs: one mismatching node's instructions, alone, as a `pimdiff run` input.
//!
//! A million-instruction program is a poor bug report. The rewritten program already says,
//! instruction by instruction, which table node each one serves ([`Checked::node_of`]); the
//! reduced program keeps a node's instructions on every core, the `sldi`/`setbw` runs right
//! before each of them (the registers they read), and nothing else. In batch mode a layer reads
//! only preloaded tensors, so the reduced program computes exactly what the full one computed
//! for that node; in element mode that holds for a layer reading the image (a later layer's
//! inputs are other nodes' outputs, which the reduced program no longer computes).
//! The crossbar export and group map are unchanged: unused groups cost nothing.

use pimdiff_isa::{Inst, Program};

use super::model::Model;
use super::rewrite::{provider, Layout, Rewritten};
use super::table::{Stage, TInst, TOp};
use super::{Checked, Mode};

/// The reduced program of `node`.
pub fn reduced(c: &Checked, node: usize) -> Program {
    let node = node as i32;
    let cores = c
        .rewritten
        .cores
        .iter()
        .zip(&c.node_of)
        .map(|(insts, nodes)| {
            let mut keep = vec![false; insts.len()];
            // Walking backwards: a register-setting run is kept when what follows it is.
            let mut next_kept = false;
            for i in (0..insts.len()).rev() {
                let scalar = nodes[i] == -1 && sets_registers(&insts[i]);
                keep[i] = nodes[i] == node || (scalar && next_kept);
                if !scalar {
                    next_kept = keep[i];
                }
                if matches!(insts[i], Inst::Setbw { .. }) {
                    keep[i] = true;
                }
            }
            insts
                .iter()
                .zip(keep)
                .filter_map(|(inst, k)| k.then_some(*inst))
                .collect()
        })
        .collect();
    Program {
        cores,
        groups: c.rewritten.groups.clone(),
        arch: c.rewritten.arch.clone(),
    }
}

/// Batch mode labels a layer's activation with another layer's index (squeezenet-batch
/// conv1_1's `VRELU`s name nodes 35 and 38), and batch programs compute nothing but CONV/FC
/// layers, each with its `vrelu` right after its own partial sums: a `vrelu` belongs to the
/// layer whose instructions precede it on its core, and so does an instruction labelled with a
/// node that is not a layer.
pub fn attribute_post_ops(model: &Model, rewritten: &mut Rewritten) {
    let weighted: Vec<bool> = model.nodes.iter().map(|n| n.weighted).collect();
    for (insts, nodes) in rewritten.program.cores.iter().zip(&mut rewritten.node_of) {
        let mut current = -1;
        for (inst, n) in insts.iter().zip(nodes.iter_mut()).filter(|(_, n)| **n >= 0) {
            let activation = matches!(inst, Inst::UnVec { .. });
            if weighted.get(*n as usize).copied().unwrap_or(false) && !activation {
                current = *n;
            } else {
                *n = current;
            }
        }
    }
}

fn sets_registers(inst: &Inst) -> bool {
    matches!(
        inst,
        Inst::Sldi { .. }
            | Inst::Sld { .. }
            | Inst::Scalar { .. }
            | Inst::ScalarImm { .. }
            | Inst::Setbw { .. }
    )
}

/// Per node, the global addresses of the preloads it reads: the image (0) and, in batch mode,
/// the regions of its providers' tensors.
pub fn preloads(
    mode: Mode,
    layout: &Layout,
    table: &[Option<Vec<TInst>>],
    nodes: usize,
) -> Vec<Vec<u32>> {
    let mut reads = vec![vec![0u32]; nodes];
    if mode == Mode::Batch {
        for t in table.iter().flatten().flatten() {
            if t.op == TOp::Ld && t.stage == Stage::Input {
                let a = layout.input_region.get(&provider(t));
                if let (Some(&a), Some(r)) = (a, reads.get_mut(t.node.max(0) as usize)) {
                    r.push(a);
                }
            }
        }
    }
    for r in &mut reads {
        r.sort_unstable();
        r.dedup();
    }
    reads
}
