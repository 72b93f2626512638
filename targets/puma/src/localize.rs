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
//!
//! [`repair_sites`] widens the slice into the instructions a repair may edit
//! (`super::repair`): the *near* writers (an instruction whose destination range ends or starts
//! next to a register the slice needs: a `copy` one element short leaves the register to an
//! older writer, which the slice follows instead), the `set`s that give the slice's loads and
//! stores their addresses, and, through the machine's record of where every word of tile
//! memory came from, the slices of the stores on other cores whose words the slice's loads
//! read.

use std::collections::{BTreeMap, BTreeSet};

use pimdiff_puma::arch::{
    MVMUS_PER_CORE, MVMU_DIM, STORE_BUS_STRIDE, XBAR_IN_START, XBAR_OUT_START,
};
use pimdiff_puma::machine::{InstAt, Quirks, Unit, Word, Writer};
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

/// The core program a store at `origin` belongs to, with its tile, core and pc.
fn core_program(model: &Model, origin: Writer) -> Option<(u32, u32, usize, &[CoreInst])> {
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
    Some((tile, core, pc as usize, program))
}

/// What one backward walk from a store found (see [`walk`]).
struct Walk {
    /// The pcs of the slice, in program order, the store last.
    steps: Vec<usize>,
    /// The kind of the instruction that computed the value.
    computed_by: String,
    /// The near writers: for each register the slice needed, the instructions that wrote the
    /// register just before or just after it instead.
    near: Vec<usize>,
    /// The tile memory words the slice's loads read into the registers it needed.
    loaded: Vec<u32>,
}

/// The registers an instruction writes as one range, `(first, count)`: a `set`, `copy`,
/// `load`, `alu` or `alui` (an `mvm` writes its MVMUs' fixed outputs, a `store` none). A
/// range one short or one off leaves a register to an older writer: [`walk`] looks for ranges
/// that end, or start, next to a register it needs.
fn destination(inst: &CoreInst) -> Option<(u32, u32)> {
    match *inst {
        CoreInst::Set { d1, vec, .. }
        | CoreInst::Copy { d1, vec, .. }
        | CoreInst::Alu { d1, vec, .. }
        | CoreInst::Alui { d1, vec, .. } => Some((d1, vec)),
        CoreInst::Load {
            d1,
            load_width,
            vec,
            ..
        } => Some((d1, load_width.saturating_mul(vec))),
        _ => None,
    }
}

/// The tile memory address register `reg` holds at `pc`: the immediate of its last `set`.
fn address_at(program: &[CoreInst], pc: usize, reg: u32, quirks: Quirks) -> Option<u32> {
    program[..pc].iter().rev().find_map(|inst| match *inst {
        CoreInst::Set { d1, imm, vec } if d1 <= reg && reg < d1 + vec => u32::try_from(imm).ok(),
        _ if dataflow(inst, quirks).iter().any(|(d, _)| *d == reg) => Some(u32::MAX),
        _ => None,
    })
}

/// One backward walk from the store at `pc` (see [`Walk`]). A copy one element short, or a
/// destination one register off, leaves a needed register to an older writer, which the slice
/// follows; the near writer is the one at fault.
fn walk(program: &[CoreInst], pc: usize, origin_word: u32, quirks: Quirks) -> Walk {
    let mut w = Walk {
        steps: vec![pc],
        computed_by: "store".into(),
        near: Vec::new(),
        loaded: Vec::new(),
    };
    let mut needed: BTreeSet<u32> = match stored_register(program, pc, origin_word, quirks) {
        Some(r) => BTreeSet::from([r]),
        None => return w,
    };
    let mut computed_by: Option<String> = None;
    let mut moved_by: Option<String> = None;
    for at in (0..pc).rev() {
        if needed.is_empty() {
            break;
        }
        let inst = &program[at];
        let mut touched = false;
        let adjacent = destination(inst).is_some_and(|(d1, len)| {
            needed.contains(&(d1 + len))
                || d1.checked_sub(1).is_some_and(|p| needed.contains(&p))
                || (len == 0 && needed.contains(&d1))
        });
        for (d, reads) in dataflow(inst, quirks) {
            if needed.remove(&d) {
                touched = true;
                needed.extend(reads);
                if let CoreInst::Load { d1, r1, .. } = *inst {
                    let base = address_at(program, at, r1, quirks).filter(|&a| a != u32::MAX);
                    w.loaded.extend(base.map(|a| a + (d - d1)));
                }
            }
        }
        if touched {
            w.steps.push(at);
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
        } else if adjacent {
            w.near.push(at);
        }
    }
    w.steps.reverse();
    w.computed_by = computed_by.or(moved_by).unwrap_or_else(|| "store".into());
    w
}

/// The slice of the value the store at `origin` wrote at `origin_word` of its tile, or `None`
/// when the origin is not a core's store (the host, a tile instruction) or lies outside the
/// model.
pub fn slice(model: &Model, origin: Writer, origin_word: u32, quirks: Quirks) -> Option<Slice> {
    let (tile, core, pc, program) = core_program(model, origin)?;
    let Walk {
        steps, computed_by, ..
    } = walk(program, pc, origin_word, quirks);
    let steps = steps
        .into_iter()
        .map(|pc| SliceStep {
            tile,
            core,
            pc: pc as u32,
            text: program[pc].to_string(),
        })
        .collect();
    Some(Slice { steps, computed_by })
}

/// Where an instruction of a core lies: tile, core, pc.
pub type Site = (u32, u32, u32);

/// What a site of [`repair_sites`] is to the value: on its way (the slice, a near writer), or
/// the `set` that gives one of its loads or stores an address (a repair of a value's `set`
/// and of an address's are different edits: the same opcode does both).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Value,
    Address,
}

/// For each `load` and `store` of `program`, by its pc, the pc of the instruction that wrote
/// its address register last (a `set`): those instructions give addresses, whatever else a
/// walk finds them next to.
pub(crate) fn address_setters(program: &[CoreInst], quirks: Quirks) -> BTreeMap<usize, usize> {
    let mut last_writer: BTreeMap<u32, usize> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for (pc, inst) in program.iter().enumerate() {
        let address = match *inst {
            CoreInst::Load { r1, .. } => Some(r1),
            CoreInst::Store { d1, .. } => Some(d1),
            _ => None,
        };
        if let Some(&w) = address.and_then(|r| last_writer.get(&r)) {
            out.insert(pc, w);
        }
        for (d, _) in dataflow(inst, quirks) {
            last_writer.insert(d, pc);
        }
    }
    out
}

/// The most stores [`repair_sites`] follows back through tile memory (each a core's walk).
const MAX_STORES_FOLLOWED: usize = 32;

/// The instructions a repair of a stored word may edit (`super::repair`): the slice's and its
/// near writers (see [`walk`]), the `set` that gives each of its `load`s and `store`s its
/// address (an address one word off is a wrong immediate of that `set`), and the same again
/// for the stores whose words its loads read (`memory` gives a word of a tile's memory after
/// the run, with the store it came from, through any sends and receives), so that a value
/// computed wrong on one core and loaded by another is followed to where it was computed. At
/// most [`MAX_STORES_FOLLOWED`] stores; empty when the origin is not a core's store.
pub fn repair_sites(
    model: &Model,
    origin: Writer,
    origin_word: u32,
    quirks: Quirks,
    memory: &dyn Fn(u32, u32) -> Option<Word>,
) -> Vec<(Site, Role)> {
    let mut sites: BTreeMap<Site, Role> = BTreeMap::new();
    let mut queue = vec![(origin, origin_word)];
    let mut seen: BTreeSet<(String, u32)> = BTreeSet::new();
    while let Some((origin, word)) = queue.pop() {
        if seen.len() >= MAX_STORES_FOLLOWED || !seen.insert((origin.to_string(), word)) {
            continue;
        }
        let Some((tile, core, pc, program)) = core_program(model, origin) else {
            continue;
        };
        let w = walk(program, pc, word, quirks);
        let setters = address_setters(program, quirks);
        for &at in &w.steps {
            if let Some(&s) = setters.get(&at) {
                sites.insert((tile, core, s as u32), Role::Address);
            }
        }
        let on_the_way = w.steps.iter().chain(&w.near);
        for &p in on_the_way.filter(|p| !setters.values().any(|s| s == *p)) {
            sites.insert((tile, core, p as u32), Role::Value);
        }
        for address in w.loaded {
            if let Some(Word {
                origin: Some(o),
                origin_word: Some(at),
                ..
            }) = memory(tile, address)
            {
                queue.push((o, at));
            }
        }
    }
    sites.into_iter().collect()
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

    /// A copy one element short leaves the last register to the `set` before it: the slice
    /// follows the `set`, and the copy is a near writer, one of the sites a repair may edit,
    /// with the `set` that gives the store its address.
    #[test]
    fn a_short_copy_is_a_near_writer_of_the_slice() {
        let m = model(
            "set(d1=520, imm=0, vec=4)\n\
             set(d1=513, imm=4, vec=1)\n\
             load(d1=513, r1=513, load_width=4, vec=1)\n\
             copy(d1=520, r1=513, vec=3, src_type=1)\n\
             set(d1=530, imm=8, vec=1)\n\
             store(d1=530, r1=520, counter=1, store_width=4, vec=1)\n\
             hlt()",
        );
        let at = Writer::Inst(InstAt {
            tile: 0,
            unit: Unit::Core(0),
            pc: 5,
        });
        // Word 11 is the store's fourth, register 523, which the copy did not reach.
        let s = slice(&m, at, 11, Quirks::COMPILER).unwrap();
        let pcs: Vec<u32> = s.steps.iter().map(|s| s.pc).collect();
        assert_eq!(pcs, vec![0, 5]);
        let none = |_: u32, _: u32| None;
        let sites = repair_sites(&m, at, 11, Quirks::COMPILER, &none);
        assert_eq!(
            sites,
            vec![
                ((0, 0, 0), Role::Value),
                ((0, 0, 3), Role::Value),
                ((0, 0, 4), Role::Address),
                ((0, 0, 5), Role::Value)
            ]
        );
        // Word 9 (register 521) the copy wrote: the slice goes through it to the load.
        let s = slice(&m, at, 9, Quirks::COMPILER).unwrap();
        let pcs: Vec<u32> = s.steps.iter().map(|s| s.pc).collect();
        assert_eq!(pcs, vec![2, 3, 5]);
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
