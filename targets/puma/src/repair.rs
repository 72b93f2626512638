//! One cause per mismatch: the edit of the compiled program that makes it right.
//!
//! A mismatch is signed by the operation of the network's first wrong value (`conv`, `mvm`,
//! ...; [`super::outcome`]), so one systematic bug of the compiler that touches every operation
//! kind — weights written column by column, a `copy` one element short — files one finding per
//! kind. Its *cause* is what the kinds share: the instructions the compiler wrote wrong the same
//! way everywhere. As the tensor target localizes by repair, this module edits the compiled
//! program (never the compiler) and runs it again on the machine: an edit that makes the first
//! wrong output right without making any right element wrong names the cause, and buckets whose
//! first cases the same edit repairs are one finding (the engine's grouping, `Target::cause`).
//!
//! **The catalog.** An edit is a *tweak* of one field, by one, of every instruction in a
//! *scope*: a register operand (`d1`, `r1`, `r2`), a length (`vec`, a load's or store's width),
//! an immediate (`set imm`: values and addresses alike), a tile memory address (`send`,
//! `receive`); the two sources of a binary `alu` exchanged; and, for the crossbars, every
//! MVMU's weights transposed. Nothing here knows a bug of the snapshot: these are the ways a
//! code generator gets an instruction wrong, as `targets/pimsim/src/triage/repairs.rs` lists
//! them for the PIMSim ISA.
//!
//! **Scopes**, coarsest first: every instruction of an opcode (`alu`), every instruction of a
//! kind (`alu-add`), and the instructions of that kind that computed the wrong elements or
//! wrote next to the registers they needed ([`super::localize::repair_sites`]). A bug of every
//! `copy` is repaired by the coarsest scope; one that the compiler makes only for some adds
//! (those reading an MVMU's outputs) breaks the other adds at the class scopes and is repaired
//! at the sites. A network shows only the kinds it contains, so the same bug can be repaired at
//! the opcode scope in one network and only at the kind in another: a cause names the coarsest
//! scope that repairs (its signature) and lists the finer ones that do too (`Cause::also`), and
//! the engine joins causes that share a name.
//!
//! **Cost.** One machine run per candidate, at most [`MAX_RUNS`] and within the budget's
//! deadline; the candidates come from the instruction kinds that computed the first wrong
//! elements, so a search tries tens of edits, not hundreds.

use std::collections::{BTreeMap, BTreeSet};

use pimdiff_puma::machine::{Machine, Quirks, Word};
use pimdiff_puma::model::Weights;
use pimdiff_puma::{CoreInst, Model, TileInst};

use super::check::{run_and_read, wrong_words, CheckOptions};
use super::localize::{address_setters, inst_kind, repair_sites, Role, Site};
use super::network::PumaNetwork;
use super::placement::Placement;
use super::reference::Reference;
use super::tensors::NetworkData;

/// The most machine runs one search spends.
pub const MAX_RUNS: u64 = 400;
/// The runs a search makes whatever its deadline says (see [`Judge::search`]).
pub const MIN_RUNS: u64 = 16;
/// The most values of a `set` tried as classes of their own (`set[imm=1]`).
const MAX_VALUE_CLASSES: usize = 8;
/// The wrong elements of the first wrong output whose slices give the sites (an even sample of
/// them when there are more).
const SAMPLED_ELEMENTS: usize = 64;

/// The field a tweak changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    D1,
    R1,
    R2,
    Vec,
    Imm,
    Width,
    MemAddr,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::D1 => "d1",
            Field::R1 => "r1",
            Field::R2 => "r2",
            Field::Vec => "vec",
            Field::Imm => "imm",
            Field::Width => "width",
            Field::MemAddr => "mem_addr",
        }
    }
}

/// One edit of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tweak {
    /// A field changed by this much.
    By(Field, i8),
    /// The two source registers of a binary `alu` exchanged.
    Swap,
    /// Every programmed MVMU's weights transposed (a crossbar edit, not an instruction's).
    Transpose,
}

impl Tweak {
    fn name(self) -> String {
        match self {
            Tweak::By(f, d) => format!("{}{d:+}", f.name()),
            Tweak::Swap => "r1<->r2".into(),
            Tweak::Transpose => "transposed".into(),
        }
    }

    /// The tweaks that apply to an instruction of `opcode`, in the order they are tried.
    fn of(opcode: &str) -> Vec<Tweak> {
        let fields: &[Field] = match opcode {
            "set" => &[Field::Imm, Field::Vec, Field::D1],
            "copy" => &[Field::Vec, Field::R1, Field::D1],
            "load" => &[Field::Vec, Field::Width, Field::D1],
            "store" => &[Field::Vec, Field::Width, Field::R1],
            "alu" => &[Field::R1, Field::R2, Field::Vec, Field::D1],
            "alui" => &[Field::R1, Field::Vec, Field::D1],
            "send" | "receive" => &[Field::MemAddr, Field::Vec],
            _ => &[],
        };
        let mut out = Vec::new();
        if opcode == "alu" {
            out.push(Tweak::Swap);
        }
        for &f in fields {
            out.extend([Tweak::By(f, 1), Tweak::By(f, -1)]);
        }
        out
    }
}

/// `value + delta`, `None` when it would leave `u32`.
fn nudge(value: u32, delta: i8) -> Option<u32> {
    u32::try_from(i64::from(value) + i64::from(delta)).ok()
}

/// Applies `tweak` to a core instruction; whether it applied (the field exists and stays in
/// range).
fn tweak_core(inst: &mut CoreInst, tweak: Tweak) -> bool {
    let field = |f: &mut u32, d: i8| nudge(*f, d).map(|v| *f = v).is_some();
    match (inst, tweak) {
        (CoreInst::Alu { aluop, r1, r2, .. }, Tweak::Swap) if aluop.is_binary() => {
            std::mem::swap(r1, r2);
            true
        }
        (CoreInst::Set { d1, imm, vec }, Tweak::By(f, d)) => match f {
            Field::Imm => {
                *imm += i64::from(d);
                true
            }
            Field::Vec => field(vec, d),
            Field::D1 => field(d1, d),
            _ => false,
        },
        (CoreInst::Copy { d1, r1, vec, .. }, Tweak::By(f, d)) => match f {
            Field::Vec => field(vec, d),
            Field::R1 => field(r1, d),
            Field::D1 => field(d1, d),
            _ => false,
        },
        (
            CoreInst::Load {
                d1,
                load_width,
                vec,
                ..
            },
            Tweak::By(f, d),
        ) => match f {
            Field::Vec => field(vec, d),
            Field::Width => field(load_width, d),
            Field::D1 => field(d1, d),
            _ => false,
        },
        (
            CoreInst::Store {
                r1,
                store_width,
                vec,
                ..
            },
            Tweak::By(f, d),
        ) => match f {
            Field::Vec => field(vec, d),
            Field::Width => field(store_width, d),
            Field::R1 => field(r1, d),
            _ => false,
        },
        (
            CoreInst::Alu {
                aluop,
                d1,
                r1,
                r2,
                vec,
                ..
            },
            Tweak::By(f, d),
        ) => match f {
            Field::R1 => field(r1, d),
            Field::R2 if aluop.is_binary() => field(r2, d),
            Field::Vec => field(vec, d),
            Field::D1 => field(d1, d),
            _ => false,
        },
        (CoreInst::Alui { d1, r1, vec, .. }, Tweak::By(f, d)) => match f {
            Field::R1 => field(r1, d),
            Field::Vec => field(vec, d),
            Field::D1 => field(d1, d),
            _ => false,
        },
        _ => false,
    }
}

/// Applies `tweak` to a tile instruction; whether it applied.
fn tweak_tile(inst: &mut TileInst, tweak: Tweak) -> bool {
    let field = |f: &mut u32, d: i8| nudge(*f, d).map(|v| *f = v).is_some();
    match (inst, tweak) {
        (TileInst::Send { mem_addr, vec, .. }, Tweak::By(f, d))
        | (TileInst::Receive { mem_addr, vec, .. }, Tweak::By(f, d)) => match f {
            Field::MemAddr => field(mem_addr, d),
            Field::Vec => field(vec, d),
            _ => false,
        },
        _ => false,
    }
}

/// The kind of a tile instruction as a scope names it (`send`, `receive`).
fn tile_kind(inst: &TileInst) -> &'static str {
    inst.opcode().mnemonic()
}

/// `kind`'s opcode: `alu-add` → `alu`.
fn opcode_of(kind: &str) -> &str {
    kind.split('-').next().unwrap_or(kind)
}

/// Which instructions an edit applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Scope {
    /// Every instruction of this opcode (`alu`), or of this kind (`alu-add`, `copy`), or of a
    /// class of the kind: `alu-add[r1:xbar-out]` (the field's register in that part of the
    /// register file: `xbar-in`, `xbar-out`, `data`), `set[imm=1]` (a `set` of that value that
    /// gives no address).
    Every(String),
    /// The instructions at these sites, labelled with this kind (see `Judge::sites_of`).
    Sites(String, Vec<Site>),
    /// The crossbars.
    Weights,
}

impl Scope {
    /// The name a cause gives the scope: sites are named by their kind, so a bug repaired at
    /// the sites in one network and at the whole kind in another has one name.
    fn name(&self) -> &str {
        match self {
            Scope::Every(k) | Scope::Sites(k, _) => k,
            Scope::Weights => "weights",
        }
    }

    /// Whether the scope takes instruction `inst` (of kind `kind`; `gives_address`: a `set`
    /// that gives a load or store its address).
    fn covers(&self, kind: &str, inst: Option<&CoreInst>, gives_address: bool) -> bool {
        let Scope::Every(k) = self else {
            return false;
        };
        let (base, filter) = match k.split_once('[') {
            Some((b, f)) => (b, Some(f.trim_end_matches(']'))),
            None => (k.as_str(), None),
        };
        let kind_ok = base == kind || base == opcode_of(kind) && !base.contains('-');
        match (filter, inst) {
            (None, _) => kind_ok,
            (Some(f), Some(inst)) => kind_ok && class_holds(f, inst, gives_address),
            (Some(_), None) => false,
        }
    }
}

/// The part of the register file register `r` lies in.
fn register_class(r: i64) -> &'static str {
    use pimdiff_puma::arch::{DATA_MEM_START, XBAR_OUT_START};
    if r < i64::from(XBAR_OUT_START) {
        "xbar-in"
    } else if r < i64::from(DATA_MEM_START) {
        "xbar-out"
    } else {
        "data"
    }
}

/// A field's value in `inst`, when it has it.
fn field_value(inst: &CoreInst, field: Field) -> Option<i64> {
    let v = match (*inst, field) {
        (CoreInst::Set { imm, .. }, Field::Imm) => return Some(imm),
        (CoreInst::Set { d1, .. }, Field::D1)
        | (CoreInst::Copy { d1, .. }, Field::D1)
        | (CoreInst::Load { d1, .. }, Field::D1)
        | (CoreInst::Alu { d1, .. }, Field::D1)
        | (CoreInst::Alui { d1, .. }, Field::D1) => d1,
        (CoreInst::Copy { r1, .. }, Field::R1)
        | (CoreInst::Store { r1, .. }, Field::R1)
        | (CoreInst::Alu { r1, .. }, Field::R1)
        | (CoreInst::Alui { r1, .. }, Field::R1) => r1,
        (CoreInst::Alu { r2, .. }, Field::R2) => r2,
        _ => return None,
    };
    Some(i64::from(v))
}

/// Whether `inst` is in the class a scope's filter (`r1:xbar-out`, `imm=1`) names.
fn class_holds(filter: &str, inst: &CoreInst, gives_address: bool) -> bool {
    if let Some(v) = filter.strip_prefix("imm=") {
        return !gives_address && v.parse::<i64>().ok() == field_value(inst, Field::Imm);
    }
    let Some((field, class)) = filter.split_once(':') else {
        return false;
    };
    let field = match field {
        "d1" => Field::D1,
        "r1" => Field::R1,
        "r2" => Field::R2,
        _ => return false,
    };
    field_value(inst, field).is_some_and(|v| register_class(v) == class)
}

/// One candidate: a tweak over a scope.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Candidate {
    scope: Scope,
    tweak: Tweak,
}

impl Candidate {
    /// `copy vec+1`, `alu r1<->r2`, `weights transposed`: what a cause is called.
    fn name(&self) -> String {
        format!("{} {}", self.scope.name(), self.tweak.name())
    }

    /// `model` with the edit applied; `None` when it changes nothing.
    fn apply(&self, model: &Model) -> Option<Model> {
        let mut edited = model.clone();
        let mut changed = 0usize;
        match &self.scope {
            Scope::Weights => {
                for core in edited.tiles.iter_mut().flat_map(|t| t.cores.iter_mut()) {
                    for w in core.mvmus.iter_mut().flatten() {
                        *w = transposed(w);
                        changed += 1;
                    }
                }
            }
            Scope::Every(_) => {
                for tile in &mut edited.tiles {
                    for inst in &mut tile.program {
                        if self.scope.covers(tile_kind(inst), None, false)
                            && tweak_tile(inst, self.tweak)
                        {
                            changed += 1;
                        }
                    }
                    for core in &mut tile.cores {
                        let setters: BTreeSet<usize> =
                            address_setters(&core.program, Quirks::COMPILER)
                                .into_values()
                                .collect();
                        for (pc, inst) in core.program.iter_mut().enumerate() {
                            let kind = inst_kind(inst);
                            let covered =
                                self.scope.covers(&kind, Some(inst), setters.contains(&pc));
                            if covered && tweak_core(inst, self.tweak) {
                                changed += 1;
                            }
                        }
                    }
                }
            }
            Scope::Sites(_, sites) => {
                for &(t, c, pc) in sites {
                    let inst = edited
                        .tiles
                        .get_mut(t as usize)
                        .and_then(|t| t.cores.get_mut(c as usize))
                        .and_then(|c| c.program.get_mut(pc as usize));
                    // The sites are those labelled `kind` (`Judge::sites_of`).
                    if let Some(inst) = inst {
                        if tweak_core(inst, self.tweak) {
                            changed += 1;
                        }
                    }
                }
            }
        }
        (changed > 0).then_some(edited)
    }
}

/// The 128 × 128 weights with rows and columns exchanged.
fn transposed(w: &Weights) -> Weights {
    let n = pimdiff_puma::arch::MVMU_DIM;
    let mut t = Weights::zeros();
    for r in 0..n {
        for c in 0..n {
            t.set(c, r, w.cell(r, c));
        }
    }
    t
}

/// What a repair is judged against: one compile, its data and reference, and its run's
/// wrong elements.
pub struct Judge<'a> {
    pub model: &'a Model,
    pub placement: &'a Placement,
    pub net: &'a PumaNetwork,
    pub data: &'a NetworkData,
    pub reference: &'a Reference,
    pub options: CheckOptions,
    /// Per output, the flat indices of its wrong elements and their words.
    wrong: Vec<Vec<(usize, Word)>>,
    /// The machine after the compile's own run (where every word of tile memory came from).
    machine: Machine<'a>,
    /// The first wrong output (by its value's index, then output order).
    root: usize,
    /// The wrong elements of the root whose sites a site-scoped edit changes (an even sample).
    sampled: BTreeSet<usize>,
    /// The sites of the sampled elements, each with its label: its kind (`alu-add`, `copy`),
    /// or `set-address` for the `set` that gives a load or store its address.
    sites: Vec<(Site, String)>,
    runs: u64,
}

/// A search's result: the cause's name (the coarsest scope of the first edit that repairs) and
/// the other names of the same repair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repair {
    pub name: String,
    pub also: Vec<String>,
    /// How many instructions (or MVMUs) the preferred edit changed.
    pub edited: usize,
}

/// The label of a site: the `set` that gives an address is not a value's `set`.
const SET_ADDRESS: &str = "set-address";

impl<'a> Judge<'a> {
    /// The judge of a compile: runs it once; `None` when it does not mismatch (or its run
    /// cannot be judged).
    pub fn new(
        model: &'a Model,
        placement: &'a Placement,
        net: &'a PumaNetwork,
        data: &'a NetworkData,
        reference: &'a Reference,
        options: CheckOptions,
    ) -> Option<Judge<'a>> {
        let (machine, wrong) =
            run_and_read(model, placement, net, data, reference, options).ok()?;
        let root = (0..wrong.len())
            .filter(|&o| !wrong[o].is_empty())
            .min_by_key(|&o| (net.outputs[o].value(), o))?;
        let mut j = Judge {
            model,
            placement,
            net,
            data,
            reference,
            options,
            wrong,
            machine,
            root,
            sampled: BTreeSet::new(),
            sites: Vec::new(),
            runs: 1,
        };
        j.find_sites();
        Some(j)
    }

    /// Machine runs so far (the first included).
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// Whether `edited` repairs the compile: the run finishes, no element that was right is
    /// wrong, and every wrong element of the first wrong output is right — of those sampled,
    /// for an edit of the sampled elements' sites (the others' sites were not edited).
    fn repairs(&mut self, edited: &Model, sites_only: bool) -> bool {
        self.runs += 1;
        let Ok(now) = wrong_words(
            edited,
            self.placement,
            self.net,
            self.data,
            self.reference,
            self.options,
        ) else {
            return false;
        };
        let root_right = if sites_only {
            now[self.root]
                .iter()
                .all(|(f, _)| !self.sampled.contains(f))
        } else {
            now[self.root].is_empty()
        };
        root_right
            && now.iter().zip(&self.wrong).all(|(after, before)| {
                let was: BTreeSet<usize> = before.iter().map(|(f, _)| *f).collect();
                after.iter().all(|(f, _)| was.contains(f))
            })
    }

    /// The sites of the first wrong output's wrong elements (an even sample of them), each
    /// labelled with its kind.
    fn find_sites(&mut self) {
        let wrong = &self.wrong[self.root];
        let step = wrong.len().div_ceil(SAMPLED_ELEMENTS).max(1);
        let memory = |tile: u32, address: u32| {
            self.machine
                .read(tile, address, 1)
                .ok()
                .and_then(|w| w.first().copied())
        };
        let mut sites: BTreeMap<Site, String> = BTreeMap::new();
        for (flat, word) in wrong.iter().step_by(step) {
            self.sampled.insert(*flat);
            let (Some(origin), Some(at)) = (word.origin, word.origin_word) else {
                continue;
            };
            for (site, role) in repair_sites(self.model, origin, at, self.options.quirks, &memory) {
                let (t, c, pc) = site;
                let Some(inst) = self.model.tiles[t as usize].cores[c as usize]
                    .program
                    .get(pc as usize)
                else {
                    continue;
                };
                let label = match role {
                    Role::Address => SET_ADDRESS.to_string(),
                    Role::Value => inst_kind(inst),
                };
                sites.entry(site).or_insert(label);
            }
        }
        self.sites = sites.into_iter().collect();
    }

    /// The sites labelled `label`.
    fn sites_of(&self, label: &str) -> Vec<Site> {
        self.sites
            .iter()
            .filter(|(_, l)| l == label)
            .map(|(s, _)| *s)
            .collect()
    }

    /// The classes of `kind` a tweak of `field` is also tried over (see [`Scope::Every`]): the
    /// parts of the register file its instructions' `field` lies in, or for a `set`'s
    /// immediate, the values (at most [`MAX_VALUE_CLASSES`], smallest first) its value-giving
    /// instructions set. A single register class is the kind itself: not a candidate of its
    /// own, but a name the kind's repair also has (a network whose adds all read MVMU outputs
    /// shows a bug of those adds as a bug of every add; another network tells them apart).
    fn classes(&self, kind: &str, field: Field) -> Vec<String> {
        let mut registers: BTreeSet<&'static str> = BTreeSet::new();
        let mut values: BTreeSet<i64> = BTreeSet::new();
        for core in self.model.tiles.iter().flat_map(|t| &t.cores) {
            let setters: BTreeSet<usize> = address_setters(&core.program, Quirks::COMPILER)
                .into_values()
                .collect();
            for (pc, inst) in core.program.iter().enumerate() {
                if inst_kind(inst) != kind {
                    continue;
                }
                match field_value(inst, field) {
                    Some(v) if field == Field::Imm && !setters.contains(&pc) => {
                        values.insert(v);
                    }
                    Some(v) if field != Field::Imm => {
                        registers.insert(register_class(v));
                    }
                    _ => {}
                }
            }
        }
        if field == Field::Imm {
            let mut values: Vec<i64> = values.into_iter().collect();
            values.sort_by_key(|v| (v.unsigned_abs(), *v));
            values.truncate(MAX_VALUE_CLASSES);
            return values
                .into_iter()
                .map(|v| format!("{kind}[imm={v}]"))
                .collect();
        }
        registers
            .into_iter()
            .map(|c| format!("{kind}[{}:{c}]", field.name()))
            .collect()
    }

    /// The candidates in the order they are tried, each with the finer names of the same
    /// tweak (tried when it repairs, for [`Repair::also`]): first every opcode of the sites
    /// (the crossbars' weights first when an `mvm` computed a wrong element), each tweak over
    /// the whole opcode; then each kind over the whole kind (`alu-add`) and over its classes
    /// (`alu-add[r1:xbar-out]`, `set[imm=1]`); then each label over its sites. A bug of every
    /// instruction of an opcode is found in the first round, one of a kind or of a class in
    /// the second, one of some instructions in the third.
    fn candidates(&self) -> Vec<(Candidate, Vec<Candidate>)> {
        let labels: BTreeSet<&str> = self.sites.iter().map(|(_, l)| l.as_str()).collect();
        let order = |k: &str| {
            let op = opcode_of(k);
            (KIND_ORDER.iter().position(|o| *o == op), k.to_string())
        };
        let mut kinds: Vec<&str> = labels
            .iter()
            .copied()
            .filter(|l| *l != SET_ADDRESS && *l != "mvm")
            .collect();
        kinds.sort_by_key(|k| order(k));
        let mut opcodes: Vec<&str> = kinds.iter().map(|k| opcode_of(k)).collect();
        opcodes.extend(["send", "receive"]);
        opcodes.sort_by_key(|o| order(o));
        opcodes.dedup();
        let every = |k: &str, tweak| Candidate {
            scope: Scope::Every(k.to_string()),
            tweak,
        };
        let at = |k: &str, tweak| Candidate {
            scope: Scope::Sites(k.to_string(), self.sites_of(k)),
            tweak,
        };
        let field_of = |t: Tweak| match t {
            Tweak::By(f, _) => Some(f),
            _ => None,
        };
        let class_scopes = |k: &str, tweak: Tweak| -> Vec<Candidate> {
            field_of(tweak)
                .filter(|f| matches!(f, Field::R1 | Field::R2 | Field::D1 | Field::Imm))
                .map(|f| self.classes(k, f))
                .unwrap_or_default()
                .into_iter()
                .map(|c| every(&c, tweak))
                .collect()
        };
        let mut out = Vec::new();
        if labels.contains("mvm") {
            let c = Candidate {
                scope: Scope::Weights,
                tweak: Tweak::Transpose,
            };
            out.push((c, Vec::new()));
        }
        for &op in &opcodes {
            let of_op: Vec<&str> = kinds
                .iter()
                .copied()
                .filter(|k| opcode_of(k) == op)
                .collect();
            for tweak in Tweak::of(op) {
                let mut finer: Vec<Candidate> = Vec::new();
                for &k in &of_op {
                    if k != op {
                        finer.push(every(k, tweak));
                    }
                    finer.extend(class_scopes(k, tweak));
                    finer.push(at(k, tweak));
                }
                out.push((every(op, tweak), finer));
            }
        }
        for &k in &kinds {
            for tweak in Tweak::of(opcode_of(k)) {
                if k != opcode_of(k) {
                    let mut finer = class_scopes(k, tweak);
                    finer.push(at(k, tweak));
                    out.push((every(k, tweak), finer));
                }
                let classes = class_scopes(k, tweak);
                let splits = classes.len() > 1 || matches!(field_of(tweak), Some(Field::Imm));
                for c in classes.into_iter().filter(|_| splits) {
                    out.push((c, vec![at(k, tweak)]));
                }
            }
        }
        let mut labelled: Vec<&str> = kinds.clone();
        if labels.contains(SET_ADDRESS) {
            labelled.push(SET_ADDRESS);
        }
        for &k in &labelled {
            for tweak in Tweak::of(opcode_of(k)) {
                out.push((at(k, tweak), Vec::new()));
            }
        }
        out
    }

    /// Whether `c` repairs the compile (one machine run; `false` when it changes nothing).
    fn try_candidate(&mut self, c: &Candidate) -> Option<usize> {
        let edited = c.apply(self.model)?;
        let sites_only = matches!(c.scope, Scope::Sites(..));
        self.repairs(&edited, sites_only)
            .then(|| edits(self.model, &edited))
    }

    /// Searches the catalog (see the module docs) until an edit repairs the compile, the runs
    /// run out, or `stop` says the budget is spent (checked only after the first [`MIN_RUNS`]
    /// runs: on a loaded machine the compile before the search can take the whole budget,
    /// and a search that tries nothing finds nothing).
    pub fn search(&mut self, stop: &dyn Fn() -> bool) -> Option<Repair> {
        let mut tried: BTreeSet<String> = BTreeSet::new();
        for (c, finer) in self.candidates() {
            if self.runs >= MAX_RUNS || (self.runs >= MIN_RUNS && stop()) {
                return None;
            }
            let key = format!("{c:?}");
            if !tried.insert(key) {
                continue;
            }
            let Some(edited) = self.try_candidate(&c) else {
                continue;
            };
            let mut also: Vec<String> = Vec::new();
            for f in finer {
                if f.name() != c.name()
                    && !also.contains(&f.name())
                    && self.try_candidate(&f).is_some()
                {
                    also.push(f.name());
                }
            }
            return Some(repair(&c, edited, also));
        }
        None
    }

    /// Whether the edit a cause named `name` stands for repairs this compile, at any scope of
    /// that name: the whole opcode or kind, then (for a kind) the sites of this compile's
    /// wrong elements. `false` for a name that is none of this module's.
    pub fn confirms(&mut self, name: &str) -> bool {
        let Some((scope, tweak)) = parse_name(name) else {
            return false;
        };
        let scopes = if scope == "weights" {
            vec![Scope::Weights]
        } else {
            vec![
                Scope::Every(scope.to_string()),
                Scope::Sites(scope.to_string(), self.sites_of(scope)),
            ]
        };
        scopes
            .into_iter()
            .any(|scope| self.try_candidate(&Candidate { scope, tweak }).is_some())
    }
}

/// The order kinds are tried in, by opcode: the instructions that compute before those that
/// move values, and addresses last (a `set` also gives every address: its edits break most).
const KIND_ORDER: [&str; 8] = [
    "alu", "alui", "copy", "load", "store", "send", "receive", "set",
];

fn repair(c: &Candidate, edited: usize, also: Vec<String>) -> Repair {
    Repair {
        name: c.name(),
        also,
        edited,
    }
}

/// How many instructions and MVMUs differ between two models of the same shape.
fn edits(a: &Model, b: &Model) -> usize {
    a.tiles
        .iter()
        .zip(&b.tiles)
        .map(|(x, y)| {
            let tile = x
                .program
                .iter()
                .zip(&y.program)
                .filter(|(i, j)| i != j)
                .count();
            let cores: usize = x
                .cores
                .iter()
                .zip(&y.cores)
                .map(|(c, d)| {
                    c.program
                        .iter()
                        .zip(&d.program)
                        .filter(|(i, j)| i != j)
                        .count()
                        + c.mvmus.iter().zip(&d.mvmus).filter(|(i, j)| i != j).count()
                })
                .sum();
            tile + cores
        })
        .sum()
}

/// `(scope name, tweak)` of a cause's name, as [`Candidate::name`] writes it.
fn parse_name(name: &str) -> Option<(&str, Tweak)> {
    let (scope, tweak) = name.rsplit_once(' ')?;
    let tweak = match tweak {
        "transposed" => Tweak::Transpose,
        "r1<->r2" => Tweak::Swap,
        t => {
            let at = t.find(['+', '-'])?;
            let (field, delta) = t.split_at(at);
            let field = [
                Field::D1,
                Field::R1,
                Field::R2,
                Field::Vec,
                Field::Imm,
                Field::Width,
                Field::MemAddr,
            ]
            .into_iter()
            .find(|f| f.name() == field)?;
            Tweak::By(field, delta.parse().ok()?)
        }
    };
    Some((scope, tweak))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{Input, Matrix, Op, Output};
    use crate::{network_data, reference, NumericRange};
    use pimdiff_puma::model::{Core, Tile};

    /// `y = M x − x` for a 4 × 4 matrix: one core loads `x` into its MVMU's inputs, multiplies,
    /// copies the product out, loads `x` again and subtracts; the store puts `y` at word 100.
    /// (The registers the product is copied to are zeroed first, as an earlier value would
    /// have left them: a copy one short then leaves a stale zero, not a register never written,
    /// which the machine would fault on.)
    const PROGRAM: &str = "set(d1=520, imm=0, vec=4)\n\
        set(d1=512, imm=0, vec=1)\n\
        load(d1=0, r1=512, load_width=4, vec=1)\n\
        mvm(['10'])\n\
        copy(d1=520, r1=256, vec=4, src_type=1)\n\
        load(d1=530, r1=512, load_width=4, vec=1)\n\
        alu('sub', d1=540, r1=520, r2=530, vec=4)\n\
        set(d1=513, imm=100, vec=1)\n\
        store(d1=513, r1=540, counter=1, store_width=4, vec=1)\n\
        hlt()";

    const PLACEMENT: &str = r#"{"format": "pimdiff-puma-placement", "version": 1,
        "model": "net", "tiles": 1, "cores_per_tile": 8, "mvmus_per_core": 2, "mvmu_dim": 128,
        "tensors": [
          {"name": "x", "role": "input", "kind": "vector", "length": 4,
           "pieces": [{"first": 0, "length": 4, "tile": 0, "address": 0, "counter": 2}]},
          {"name": "y", "role": "output", "kind": "vector", "length": 4,
           "pieces": [{"first": 0, "length": 4, "tile": 0, "address": 100, "counter": 1}]}]}"#;

    fn network() -> PumaNetwork {
        PumaNetwork {
            model: "net".into(),
            options: Default::default(),
            inputs: vec![Input::Vector {
                name: "x".into(),
                length: 4,
            }],
            matrices: vec![Matrix::Dense {
                name: "m".into(),
                width: 4,
                height: 4,
            }],
            values: vec![
                Op::Input { input: 0 },
                Op::Mvm { matrix: 0, x: 0 },
                Op::Sub { a: 1, b: 0 },
            ],
            outputs: vec![Output::Vector {
                name: "y".into(),
                length: 4,
                value: 2,
            }],
        }
    }

    /// The model of `program` with `M` (row = output, the compiler's reading) in MVMU 0.
    fn model(program: &str, data: &NetworkData) -> Model {
        let program = pimdiff_puma::formats::parse_core_program(program, "core.puma".as_ref())
            .expect("a valid program");
        let mut core = Core::new(program);
        let mut w = Weights::zeros();
        let m = &data.weights[0];
        for r in 0..4u32 {
            for c in 0..4u32 {
                let v = m[[r as usize, c as usize]];
                w.set(r, c, i32::try_from(v).unwrap());
            }
        }
        core.mvmus[0] = Some(w);
        Model {
            name: "net".into(),
            tiles: vec![Tile::new(vec![TileInst::Halt {}], vec![core])],
        }
    }

    /// The search's cause for `program` (edited from [`PROGRAM`] by `edit`), with the weights
    /// transposed when asked; `None` when the program checks.
    fn cause(edit: impl Fn(&str) -> String, transpose: bool) -> Option<Repair> {
        let net = network();
        let range = NumericRange::PUMA_WORD;
        let data = network_data(&net, 7, range).unwrap();
        let reference = reference(&net, &data, range).unwrap();
        let placement = Placement::from_json(PLACEMENT).unwrap();
        let mut m = model(&edit(PROGRAM), &data);
        if transpose {
            for w in m.tiles[0].cores[0].mvmus.iter_mut().flatten() {
                *w = transposed(w);
            }
        }
        let options = CheckOptions::default();
        let mut judge = Judge::new(&m, &placement, &net, &data, &reference, options)?;
        let found = judge.search(&|| false);
        assert!(judge.runs() <= MAX_RUNS);
        found
    }

    #[test]
    fn a_right_program_has_no_cause() {
        assert_eq!(cause(|p| p.to_string(), false), None);
    }

    /// Three bugs of three kinds, each named by the edit that undoes it: a copy one element
    /// short (its dropped register is found as a near writer of the slice), a subtraction's
    /// operands exchanged (every `alu` of the program: the opcode; the kind repairs too), the
    /// weights transposed.
    #[test]
    fn each_systematic_bug_is_named_by_the_edit_that_undoes_it() {
        let short = cause(|p| p.replace("r1=256, vec=4", "r1=256, vec=3"), false).unwrap();
        assert_eq!((short.name.as_str(), short.edited), ("copy vec+1", 1));
        let swapped = cause(|p| p.replace("r1=520, r2=530", "r1=530, r2=520"), false).unwrap();
        assert_eq!(swapped.name, "alu r1<->r2");
        assert_eq!(swapped.also, vec!["alu-sub r1<->r2".to_string()]);
        let t = cause(|p| p.to_string(), true).unwrap();
        assert_eq!((t.name.as_str(), t.edited), ("weights transposed", 1));
    }

    /// An edit that would repair the first wrong output but break a right one is no repair,
    /// and a cause's name is read back and confirmed on another compile of the same bug.
    #[test]
    fn names_round_trip_and_confirm() {
        for name in [
            "copy vec+1",
            "alu-add r1-1",
            "alu r1<->r2",
            "weights transposed",
            "receive mem_addr+1",
        ] {
            let (scope, tweak) = parse_name(name).unwrap();
            assert_eq!(format!("{scope} {}", tweak.name()), name);
        }
        assert_eq!(parse_name("copy vec*2"), None);
        let net = network();
        let range = NumericRange::PUMA_WORD;
        let data = network_data(&net, 7, range).unwrap();
        let reference = reference(&net, &data, range).unwrap();
        let placement = Placement::from_json(PLACEMENT).unwrap();
        let m = model(&PROGRAM.replace("r1=256, vec=4", "r1=256, vec=3"), &data);
        let mut judge = Judge::new(
            &m,
            &placement,
            &net,
            &data,
            &reference,
            CheckOptions::default(),
        )
        .unwrap();
        assert!(judge.confirms("copy vec+1"));
        assert!(!judge.confirms("alu r1<->r2"));
        assert!(!judge.confirms("weights transposed"));
        assert!(!judge.confirms("not a repair"));
    }
}
