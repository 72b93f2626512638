//! The program as our interpreter runs it: the group-index `mvmul`, probe stores at `VER`
//! points (element mode), relocated `ld`/`st` (batch mode), and the global-memory layout they
//! assume.
//!
//! Inserted instructions use two registers the program never names (PIMCOMP-NN uses r0–r2),
//! and every rewritten instruction remembers its index in the original program, so reports
//! always name the instruction as PROGRAM numbers it.

use std::collections::BTreeMap;

use pimdiff_isa::inst::{MemOp, Offset};
use pimdiff_isa::{GroupSpec, Inst, Program, Reg};

use super::align::Alignment;
use super::crossbars::GroupAssignment;
use super::error::PimcompError;
use super::model::{Mode, Model};
use super::table::{Stage, TInst, TOp};

/// Global memory regions, element (= byte) addresses. The image is always at 0: both modes
/// load it there, and every bias load reads `0..Cout`.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub image_len: u32,
    /// Element mode: where each probed node's `VER` vectors are stored (`+ pixel·C`).
    pub probe: BTreeMap<usize, u32>,
    /// Batch mode: a provider tensor, preloaded from the reference.
    pub input_region: BTreeMap<usize, u32>,
    /// Batch mode: where a layer's `st`s are relocated, apart from every preloaded region.
    pub output_region: BTreeMap<usize, u32>,
    /// First free address after every region.
    pub end: u32,
}

/// The rewritten program and, per core, each instruction's index in the original (`None`
/// for inserted ones).
pub struct Rewritten {
    pub program: Program,
    pub origin: Vec<Vec<Option<u32>>>,
    /// Per core, each instruction's table node: the aligned table instruction's, the `VER`'s
    /// for a probe store, the `ld`/`st`'s for its relocation; `-1` for `sldi`/`setbw` (which
    /// serve whatever follows them). Reduced programs keep one node's instructions by it.
    pub node_of: Vec<Vec<i32>>,
}

const ALIGN: u32 = 4096;

fn bump(end: &mut u32, len: usize) -> Result<u32, PimcompError> {
    let at = *end;
    let next = at as u64 + (len as u64).div_ceil(ALIGN as u64) * ALIGN as u64;
    *end = u32::try_from(next)
        .map_err(|_| PimcompError::Setup("the regions exceed the 4 GiB global memory".into()))?;
    Ok(at)
}

/// Lays out global memory for `mode`.
pub fn layout(
    model: &Model,
    mode: Mode,
    table: &[Option<Vec<TInst>>],
    probes: bool,
    image_len: usize,
) -> Result<Layout, PimcompError> {
    let mut l = Layout {
        image_len: image_len as u32,
        ..Layout::default()
    };
    // The element program stores its last node at 0 as well; keep regions clear of both.
    let last_len = model
        .last_node
        .map(|n| model.nodes[n].shape.len())
        .unwrap_or(0);
    let mut end = 0u32;
    bump(&mut end, image_len.max(last_len).max(1))?;
    let all = || table.iter().flatten().flatten();
    match mode {
        Mode::Element if probes => {
            let probed: std::collections::BTreeSet<usize> = all()
                .filter(|t| t.op == TOp::Ver)
                .map(|t| t.node as usize)
                .collect();
            for n in probed {
                let len = model
                    .nodes
                    .get(n)
                    .ok_or_else(|| PimcompError::Model(format!("VER names node {n}")))?
                    .shape
                    .len();
                l.probe.insert(n, bump(&mut end, len)?);
            }
        }
        Mode::Element => {}
        Mode::Batch => {
            for t in all().filter(|t| t.op == TOp::Ld && t.stage == Stage::Input) {
                let p = provider(t);
                if p != 0 && !l.input_region.contains_key(&p) {
                    let len = model
                        .nodes
                        .get(p)
                        .ok_or_else(|| PimcompError::Model(format!("LD names node {p}")))?
                        .shape
                        .len();
                    l.input_region.insert(p, bump(&mut end, len)?);
                }
            }
            for t in all().filter(|t| t.op == TOp::St) {
                let n = t.node as usize;
                if let std::collections::btree_map::Entry::Vacant(e) = l.output_region.entry(n) {
                    let len = model
                        .nodes
                        .get(n)
                        .ok_or_else(|| PimcompError::Model(format!("ST names node {n}")))?
                        .shape
                        .len();
                    e.insert(bump(&mut end, len)?);
                }
            }
        }
    }
    l.end = end;
    Ok(l)
}

/// The tensor a batch-mode `ld` of stage INPUT reads: its negative address names the node.
pub fn provider(t: &TInst) -> usize {
    (-(t.src1 as i64)).max(0) as usize
}

/// Two registers no instruction of `program` names.
fn scratch_registers(program: &Program) -> Result<(Reg, Reg), PimcompError> {
    let mut used = [false; 32];
    for inst in program.cores.iter().flatten() {
        for r in registers(inst) {
            used[r.index()] = true;
        }
    }
    let mut free = (0..32u32)
        .rev()
        .filter(|&r| !used[r as usize])
        .filter_map(Reg::new);
    match (free.next(), free.next()) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(PimcompError::Setup(
            "the program uses every register; none is left for probes and relocations".into(),
        )),
    }
}

fn registers(inst: &Inst) -> Vec<Reg> {
    match *inst {
        Inst::Sldi { rd, .. } => vec![rd],
        Inst::Sld { rd, rs1, .. } | Inst::ScalarImm { rd, rs1, .. } => vec![rd, rs1],
        Inst::Scalar { rd, rs1, rs2, .. }
        | Inst::BinVec { rd, rs1, rs2, .. }
        | Inst::Vavg { rd, rs1, rs2, .. }
        | Inst::Vmv { rd, rs1, rs2, .. } => vec![rd, rs1, rs2],
        Inst::Mvmul { rd, rs1, .. } | Inst::UnVec { rd, rs1, .. } | Inst::Mem { rd, rs1, .. } => {
            vec![rd, rs1]
        }
        Inst::Lldi { rd, .. } | Inst::Recv { rd, .. } => vec![rd],
        Inst::Send { rs1, .. } => vec![rs1],
        Inst::Wait { event, .. } | Inst::Sync { event, .. } => vec![event],
        Inst::Setbw { .. } | Inst::Nop => vec![],
    }
}

/// What to rewrite.
pub struct RewriteInput<'a> {
    pub program: &'a Program,
    pub table: &'a [Option<Vec<TInst>>],
    pub alignment: &'a Alignment,
    pub groups: &'a GroupAssignment,
    pub group_map: Vec<Vec<u32>>,
    pub model: &'a Model,
    pub layout: &'a Layout,
    pub mode: Mode,
}

pub fn rewrite(input: &RewriteInput) -> Result<Rewritten, PimcompError> {
    let (ra, rb) = scratch_registers(input.program)?;
    let mut cores = Vec::with_capacity(input.program.cores.len());
    let mut origin = Vec::with_capacity(input.program.cores.len());
    let mut node_of = Vec::with_capacity(input.program.cores.len());
    for (c, insts) in input.program.cores.iter().enumerate() {
        let table = input.table.get(c).and_then(|t| t.as_ref());
        let mut at_table: Vec<Option<&TInst>> = vec![None; insts.len()];
        for &(i, j) in &input.alignment.pairs[c] {
            at_table[i as usize] = table.and_then(|t| t.get(j as usize));
        }
        let mut probes = input.alignment.vers[c].iter().peekable();
        let (mut out, mut from) = (
            Vec::with_capacity(insts.len()),
            Vec::with_capacity(insts.len()),
        );
        let mut nodes: Vec<i32> = Vec::with_capacity(insts.len());
        for (i, inst) in insts.iter().enumerate() {
            while let Some(&&(at, j)) = probes.peek() {
                if at as usize > i {
                    break;
                }
                probes.next();
                if let Some(v) = table.and_then(|t| t.get(j as usize)) {
                    push_probe(v, input, ra, rb, &mut out, &mut from);
                    nodes.resize(out.len(), v.node);
                }
            }
            let t = at_table[i];
            let rewritten = rewrite_one(c as u32, inst, t, input, ra, &mut out, &mut from)?;
            out.push(rewritten);
            from.push(Some(i as u32));
            let node = t.map_or(-1, |t| t.node);
            nodes.resize(out.len(), node);
        }
        for &(_, j) in probes {
            if let Some(v) = table.and_then(|t| t.get(j as usize)) {
                push_probe(v, input, ra, rb, &mut out, &mut from);
                nodes.resize(out.len(), v.node);
            }
        }
        cores.push(out);
        origin.push(from);
        node_of.push(nodes);
    }
    Ok(Rewritten {
        program: Program {
            cores,
            groups: GroupSpec::ArrayGroupMap(input.group_map.clone()),
            arch: input.program.arch.clone(),
        },
        origin,
        node_of,
    })
}

/// A `VER` as a store of its LMem vector to the node's probe region at `pixel · C`.
fn push_probe(
    v: &TInst,
    input: &RewriteInput,
    ra: Reg,
    rb: Reg,
    out: &mut Vec<Inst>,
    from: &mut Vec<Option<u32>>,
) {
    let node = v.node as usize;
    let Some(&base) = input.layout.probe.get(&node) else {
        return;
    };
    let c = input.model.nodes[node].shape.c as i64;
    let dst = base as i64 + v.cycle as i64 * c;
    let src = v.src1 as i64 + v.src1_off as i64;
    out.push(Inst::Sldi {
        rd: ra,
        imm: dst as i32,
    });
    out.push(Inst::Sldi {
        rd: rb,
        imm: src as i32,
    });
    out.push(Inst::Mem {
        op: MemOp::St,
        rd: ra,
        rs1: rb,
        size: v.len.max(0) as u32,
        offset: Offset::ZERO,
    });
    from.extend([None, None, None]);
}

fn rewrite_one(
    core: u32,
    inst: &Inst,
    t: Option<&TInst>,
    input: &RewriteInput,
    ra: Reg,
    out: &mut Vec<Inst>,
    from: &mut Vec<Option<u32>>,
) -> Result<Inst, PimcompError> {
    let Some(t) = t else { return Ok(*inst) };
    let l = input.layout;
    Ok(match *inst {
        Inst::Mvmul {
            rd,
            rs1,
            mbiw,
            relu,
            ..
        } => {
            let group = *input
                .groups
                .local
                .get(&(core, t.peer as u32))
                .ok_or_else(|| {
                    PimcompError::Setup(format!("core {core}: AG {} has no local group", t.peer))
                })?;
            Inst::Mvmul {
                rd,
                rs1,
                mbiw,
                relu,
                group,
            }
        }
        Inst::Mem {
            op: MemOp::Ld,
            rd,
            size,
            offset,
            ..
        } if input.mode == Mode::Batch && t.stage == Stage::Input => {
            let p = provider(t);
            let base = if p == 0 { 0 } else { l.input_region[&p] as i64 };
            let value = base + t.src1_off as i64
                - if offset.applies_to_rs1() {
                    offset.value as i64
                } else {
                    0
                };
            out.push(Inst::Sldi {
                rd: ra,
                imm: value as i32,
            });
            from.push(None);
            Inst::Mem {
                op: MemOp::Ld,
                rd,
                rs1: ra,
                size,
                offset,
            }
        }
        Inst::Mem {
            op: MemOp::St,
            rs1,
            size,
            offset,
            ..
        } if input.mode == Mode::Batch => {
            let base = l
                .output_region
                .get(&(t.node as usize))
                .copied()
                .unwrap_or(0) as i64;
            let value = base + t.dst_off as i64
                - if offset.applies_to_rd() {
                    offset.value as i64
                } else {
                    0
                };
            out.push(Inst::Sldi {
                rd: ra,
                imm: value as i32,
            });
            from.push(None);
            Inst::Mem {
                op: MemOp::St,
                rd: ra,
                rs1,
                size,
                offset,
            }
        }
        other => other,
    })
}
