//! From a wrong output word back to the instructions that computed it.
//!
//! The machine records, for every word of tile memory, the store that produced its value and
//! the word that store wrote in its own tile (`Word::origin`, `Word::origin_word`), through any
//! sends and receives. The compiler's core programs are straight-line code (no `jmp` or `beq`
//! is ever emitted, snapshot `src/codegen.cpp`), so the registers a stored element came from
//! can be followed backwards through the core's program statically, element by element: a
//! `copy`, `alu` or `alui` element reads the same element of its operands, an MVMU output reads
//! every input of its MVMU, a `set` reads nothing and a `load` reads tile memory (where the
//! slice ends: the value came from another store, on this core or another). The slice is the
//! chain the report prints; its first computing instruction (an `mvm`, `alu` or `alui`, else
//! the `load` that brought the value in) is the instruction kind a mismatch is signed with.

use std::collections::BTreeSet;

use pimdiff_puma::arch::{
    MVMUS_PER_CORE, MVMU_DIM, STORE_BUS_STRIDE, XBAR_IN_START, XBAR_OUT_START,
};
use pimdiff_puma::machine::{InstAt, Quirks, Unit, Writer};
use pimdiff_puma::{CoreInst, Model};
use serde::Serialize;

/// One instruction of a slice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SliceStep {
    pub tile: u32,
    pub core: u32,
    pub pc: u32,
    /// The instruction as its program spells it.
    pub text: String,
}

/// The instructions a stored value came from, in program order (the store last).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Slice {
    pub steps: Vec<SliceStep>,
    /// The kind of the instruction that computed the value: `mvm`, `alu-add`, `alui-mul`,
    /// `load` (the value only moved on this core), `set`, or `store` when nothing before the
    /// store wrote its registers.
    pub computed_by: String,
}

/// The kind of a core instruction as a signature spells it (`alu-add`, `mvm`, `load`).
pub fn inst_kind(inst: &CoreInst) -> String {
    match inst {
        CoreInst::Alu { aluop, .. } => format!("alu-{}", aluop.name()),
        CoreInst::Alui { aluop, .. } => format!("alui-{}", aluop.name()),
        other => other.opcode().mnemonic().to_string(),
    }
}

/// For each register an instruction writes, the registers its value is read from (tile
/// memory reads and immediates are no registers).
fn dataflow(inst: &CoreInst, quirks: Quirks) -> Vec<(u32, Vec<u32>)> {
    let range = |start: u32, len: u32| start..start.saturating_add(len);
    match *inst {
        CoreInst::Set { d1, vec, .. } => range(d1, vec).map(|d| (d, vec![])).collect(),
        CoreInst::Copy { d1, r1, vec, .. } => {
            range(0, vec).map(|i| (d1 + i, vec![r1 + i])).collect()
        }
        CoreInst::Load {
            d1,
            load_width,
            vec,
            ..
        } => range(d1, load_width.saturating_mul(vec))
            .map(|d| (d, vec![]))
            .collect(),
        CoreInst::Alu {
            aluop,
            d1,
            r1,
            r2,
            vec,
            ..
        } => range(0, vec)
            .map(|i| {
                let reads = if aluop.is_binary() {
                    vec![r1 + i, r2 + i]
                } else {
                    vec![r1 + i]
                };
                (d1 + i, reads)
            })
            .collect(),
        CoreInst::Alui { d1, r1, vec, .. } => {
            range(0, vec).map(|i| (d1 + i, vec![r1 + i])).collect()
        }
        CoreInst::Mvm { xb_nma, .. } => (0..MVMUS_PER_CORE)
            .filter(|&m| quirks.mvm_runs_every_mvmu || xb_nma.uses(m))
            .flat_map(|m| {
                let inputs: Vec<u32> = range(XBAR_IN_START + m * MVMU_DIM, MVMU_DIM).collect();
                range(XBAR_OUT_START + m * MVMU_DIM, MVMU_DIM).map(move |d| (d, inputs.clone()))
            })
            .collect(),
        CoreInst::AluInt { d1, r1, r2, .. } => vec![(d1, vec![r1, r2])],
        CoreInst::Store { .. } | CoreInst::Jmp { .. } | CoreInst::Beq { .. } | CoreInst::Hlt {} => {
            vec![]
        }
    }
}

/// The register the store at `pc` of `program` read for the word it wrote at `word`: the
/// store's address comes from the last `set` of its address register before it.
fn stored_register(program: &[CoreInst], pc: usize, word: u32, quirks: Quirks) -> Option<u32> {
    let CoreInst::Store {
        d1,
        r1,
        store_width,
        vec,
        ..
    } = *program.get(pc)?
    else {
        return None;
    };
    let base = program[..pc].iter().rev().find_map(|inst| match *inst {
        CoreInst::Set { d1: d, imm, vec } if d <= d1 && d1 < d + vec => u32::try_from(imm).ok(),
        _ if dataflow(inst, quirks).iter().any(|(d, _)| *d == d1) => Some(u32::MAX),
        _ => None,
    })?;
    let offset = word.checked_sub(base)?;
    let width = store_width.max(1);
    if offset >= width.saturating_mul(vec) {
        return None;
    }
    let (chunk, within) = (offset / width, offset % width);
    let stride = if quirks.store_bus_stride {
        STORE_BUS_STRIDE
    } else {
        width
    };
    Some(r1 + chunk * stride + within)
}

/// The slice of the value the store at `origin` wrote at `origin_word` of its tile, or `None`
/// when the origin is not a core's store (the host, a tile instruction) or lies outside the
/// model.
pub fn slice(model: &Model, origin: Writer, origin_word: u32, quirks: Quirks) -> Option<Slice> {
    let Writer::Inst(InstAt {
        tile,
        unit: Unit::Core(core),
        pc,
    }) = origin
    else {
        return None;
    };
    let program = &model
        .tiles
        .get(tile as usize)?
        .cores
        .get(core as usize)?
        .program;
    let pc = pc as usize;
    let step = |pc: usize| SliceStep {
        tile,
        core,
        pc: pc as u32,
        text: program[pc].to_string(),
    };
    let mut steps = vec![step(pc)];
    let mut needed: BTreeSet<u32> = match stored_register(program, pc, origin_word, quirks) {
        Some(r) => BTreeSet::from([r]),
        None => {
            return Some(Slice {
                steps,
                computed_by: "store".into(),
            })
        }
    };
    let mut computed_by: Option<String> = None;
    let mut moved_by: Option<String> = None;
    for at in (0..pc).rev() {
        if needed.is_empty() {
            break;
        }
        let inst = &program[at];
        let mut touched = false;
        for (d, reads) in dataflow(inst, quirks) {
            if needed.remove(&d) {
                touched = true;
                needed.extend(reads);
            }
        }
        if touched {
            steps.push(step(at));
            let kind = inst_kind(inst);
            match inst {
                CoreInst::Mvm { .. } | CoreInst::Alu { .. } | CoreInst::Alui { .. } => {
                    computed_by.get_or_insert(kind);
                }
                CoreInst::Load { .. } | CoreInst::Set { .. } => {
                    moved_by.get_or_insert(kind);
                }
                _ => {}
            }
        }
    }
    steps.reverse();
    Some(Slice {
        steps,
        computed_by: computed_by.or(moved_by).unwrap_or_else(|| "store".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pimdiff_puma::model::{Core, Tile};

    fn model(lines: &str) -> Model {
        let program = pimdiff_puma::formats::parse_core_program(lines, "core.puma".as_ref())
            .expect("a valid program");
        let mut cores = vec![Core::new(program)];
        cores.extend((1..8).map(|_| Core::idle()));
        Model {
            name: "net".into(),
            tiles: vec![Tile::new(vec![], cores)],
        }
    }

    #[test]
    fn a_stored_element_leads_back_through_alu_and_mvm_to_its_loads() {
        let m = model(
            "set(d1=513, imm=4, vec=1)\n\
             load(d1=513, r1=513, load_width=5, vec=1)\n\
             copy(d1=0, r1=513, vec=5, src_type=1)\n\
             mvm(['10'])\n\
             alu('relu', d1=513, r1=256, vec=4)\n\
             set(d1=517, imm=0, vec=1)\n\
             store(d1=517, r1=513, counter=1, store_width=4, vec=1)\n\
             hlt()",
        );
        let at = Writer::Inst(InstAt {
            tile: 0,
            unit: Unit::Core(0),
            pc: 6,
        });
        let s = slice(&m, at, 2, Quirks::COMPILER).unwrap();
        let pcs: Vec<u32> = s.steps.iter().map(|s| s.pc).collect();
        assert_eq!(pcs, vec![1, 2, 3, 4, 6]);
        assert_eq!(s.computed_by, "alu-relu");
        assert_eq!(s.steps[0].text, "load(d1=513, r1=513, load_width=5)");
        // A word outside the store's range: the store alone.
        let s = slice(&m, at, 9, Quirks::COMPILER).unwrap();
        assert_eq!((s.steps.len(), s.computed_by.as_str()), (1, "store"));
        assert!(slice(&m, Writer::Host, 0, Quirks::COMPILER).is_none());
    }
}
