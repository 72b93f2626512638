//! The repair catalog: small, plausible edits of one instruction, each a guess at what the
//! compiler should have written.
//!
//! A [`Tweak`] changes one field of an instruction the way a lowering typically gets it wrong:
//! a ReLU flag, a size or length off by one element, another bit width, another array group,
//! another peer core, an offset off by one element, an address constant (`sldi`) off by one
//! element, an instruction too many (dropped) or too few (duplicated). Localization applies
//! each tweak to each instruction ([`single_edits`]) and to every instruction of one opcode at
//! once ([`class_edits`], for bugs that corrupt one kind of instruction everywhere), reruns
//! the edited bundle and keeps the edits that repair the output.
//!
//! "One element" is one byte or four (int8 data, int32 partial sums) for fields counted in
//! bytes (`ld`/`st`/`lmv`/`lldi`/`send`/`recv` sizes and offsets, `sldi` constants), and one
//! for fields counted in elements (vector lengths and offsets).

use pimdiff_isa::inst::{BinVecOp, MemOp, Offset, Reg, UnVecOp};
use pimdiff_isa::{Inst, Opcode, Width};

/// Deltas of a field counted in bytes: one int8 or one int32 element, either way.
const BYTE_DELTAS: [i32; 4] = [-1, 1, -4, 4];
/// Deltas of a field counted in elements.
const ELEMENT_DELTAS: [i32; 2] = [-1, 1];
/// Widths `setbw` and `mvmul` are retried with.
const WIDTHS: [u32; 3] = [8, 16, 32];
/// At most this many other array groups are tried per `mvmul` (the nearest numbers first).
const MAX_GROUPS: usize = 8;

/// One edit of one instruction's field (or of the instruction's presence).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Tweak {
    /// `mvmul`'s ReLU flag set to this value.
    Relu(bool),
    /// `mvmul`'s array group set to this number.
    Group(u32),
    /// `mvmul`'s weight width set to this many bits.
    Mbiw(u32),
    /// `setbw`'s widths set to these.
    Widths(u32, u32),
    /// `setbw`'s widths set to `to` where they are `from` (the opcode-wide form of
    /// [`Tweak::Widths`]: a compiler that writes one wrong pair everywhere).
    WidthsFrom { from: (u32, u32), to: (u32, u32) },
    /// A vector length changed by this many elements.
    Len(i32),
    /// A transfer size changed by this many bytes.
    Size(i32),
    /// The offset value changed by this much (elements for vector ops, bytes otherwise),
    /// for every operand it already applies to (or the unconditional offset).
    Offset(i32),
    /// An offset of this value applied to one operand (select bit `bit`) of an instruction
    /// that had none.
    OffsetOn { bit: u8, value: i32 },
    /// The peer core (`send`, `recv`, `sync`) set to this id.
    Core(u32),
    /// A scalar immediate (`sldi`, `saddi`, `smuli`) changed by this much.
    Imm(i32),
    /// `wait`'s value changed by this much.
    Value(i32),
    /// The instruction removed (replaced by `nop`, so later indices stay the same).
    Drop,
    /// The instruction executed twice.
    Duplicate,
    /// A dropped instruction restored: a `nop` becomes this instruction (see
    /// [`restorations`]).
    Restore(Inst),
    /// A missing activation: `vrelu` over what the next `st` stores (register `reg`, `len`
    /// elements, `offset` elements when `offset_on`), in place of a `nop` or inserted before
    /// an `st`.
    Activation {
        reg: u8,
        len: u32,
        offset: i32,
        offset_on: bool,
    },
}

impl Tweak {
    /// The field a tweak edits, as used in signatures (`st offset`, `mvmul relu`).
    pub(crate) fn field(self) -> &'static str {
        match self {
            Tweak::Relu(_) => "relu",
            Tweak::Group(_) => "group",
            Tweak::Mbiw(_) => "mbiw",
            Tweak::Widths(..) | Tweak::WidthsFrom { .. } => "width",
            Tweak::Len(_) => "len",
            Tweak::Size(_) => "size",
            Tweak::Offset(_) | Tweak::OffsetOn { .. } => "offset",
            Tweak::Core(_) => "core",
            Tweak::Imm(_) => "imm",
            Tweak::Value(_) => "value",
            Tweak::Drop => "drop",
            Tweak::Duplicate => "duplicate",
            Tweak::Activation { .. } => "missing vrelu",
            Tweak::Restore(_) => "missing",
        }
    }

    /// How direct the evidence of a repair by this tweak on `op` is; lower is better. A field
    /// of the instruction itself beats removing or repeating it, which beats an address
    /// constant that merely feeds it (an `sldi` repair often has a twin on its consumer).
    pub(crate) fn rank(self, op: Opcode) -> u8 {
        match (self, op) {
            (Tweak::Imm(_), Opcode::Sldi) => 3,
            (Tweak::Drop | Tweak::Activation { .. } | Tweak::Restore(_), _) => 1,
            (Tweak::Duplicate, _) => 2,
            _ => 0,
        }
    }

    /// Whether the tweak says how to change any instruction of an opcode (a relative
    /// change), so it can be applied to all of them at once.
    fn is_relative(self) -> bool {
        !matches!(
            self,
            Tweak::Group(_)
                | Tweak::Core(_)
                | Tweak::Duplicate
                | Tweak::Activation { .. }
                | Tweak::Restore(_)
        )
    }
}

/// What a program has around one instruction that the catalog needs.
pub(crate) struct Context<'a> {
    /// Cores of the program.
    pub cores: u32,
    /// Array group numbers the crossbar export defines on this instruction's core, ascending.
    pub groups: &'a [u32],
    /// The input width in force at this instruction (straight-line code: the last `setbw`
    /// before it, or the reset value).
    pub ibiw: Width,
    /// The next `st` of this core from this instruction on (itself included).
    pub next_store: Option<Inst>,
    /// For a `nop`, the instructions it may have replaced (see [`restorations`]).
    pub restorations: Vec<Inst>,
}

/// The tweaks tried on `inst`, in a fixed order (each applies: see [`apply`]).
pub(crate) fn tweaks(inst: &Inst, core: u32, ctx: &Context) -> Vec<Tweak> {
    let mut t = Vec::new();
    match *inst {
        Inst::Nop => {
            t.extend(relu_before_store(ctx));
            t.extend(ctx.restorations.iter().map(|&i| Tweak::Restore(i)));
            return t;
        }
        Inst::Sldi { .. } | Inst::ScalarImm { .. } => {
            t.extend(BYTE_DELTAS.map(Tweak::Imm));
        }
        Inst::Sld { .. } => t.extend(BYTE_DELTAS.map(Tweak::Offset)),
        Inst::Scalar { .. } => {}
        Inst::Setbw { ibiw, obiw } => {
            for i in WIDTHS {
                for o in WIDTHS {
                    if (i, o) != (ibiw.bits(), obiw.bits()) {
                        t.push(Tweak::Widths(i, o));
                    }
                }
            }
        }
        Inst::Mvmul {
            relu, group, mbiw, ..
        } => {
            t.push(Tweak::Relu(!relu));
            let mut others: Vec<u32> = ctx.groups.iter().copied().filter(|&g| g != group).collect();
            others.sort_by_key(|&g| (g.abs_diff(group), g));
            t.extend(others.into_iter().take(MAX_GROUPS).map(Tweak::Group));
            t.extend(
                WIDTHS
                    .into_iter()
                    .filter(|&w| w != mbiw.bits())
                    .map(Tweak::Mbiw),
            );
        }
        Inst::BinVec { op, offset, .. } => {
            t.extend(ELEMENT_DELTAS.map(Tweak::Len));
            // `vrsu`/`vrsl` read a bound from rs2, not an address: no rs2 offset.
            let bits: &[u8] = if op.reads_bound() {
                &[1, 2]
            } else {
                &[1, 2, 4]
            };
            offset_tweaks(&mut t, offset, bits, &ELEMENT_DELTAS);
        }
        Inst::UnVec { offset, .. } => {
            t.extend(ELEMENT_DELTAS.map(Tweak::Len));
            offset_tweaks(&mut t, offset, &[1, 2], &ELEMENT_DELTAS);
        }
        Inst::Vavg { .. } => {
            t.extend(ELEMENT_DELTAS.map(Tweak::Len));
            t.extend(ELEMENT_DELTAS.map(Tweak::Offset));
        }
        Inst::Vmv { .. } => t.extend(ELEMENT_DELTAS.map(Tweak::Len)),
        Inst::Mem { offset, .. } => {
            t.extend(BYTE_DELTAS.map(Tweak::Size));
            offset_tweaks(&mut t, offset, &[1, 2], &BYTE_DELTAS);
            if is_store(inst) {
                t.extend(relu_before_store(ctx));
            }
        }
        Inst::Lldi { .. } => {
            t.extend(BYTE_DELTAS.map(Tweak::Size));
            t.extend(BYTE_DELTAS.map(Tweak::Offset));
        }
        Inst::Send { core: peer, .. } | Inst::Recv { core: peer, .. } => {
            t.extend(BYTE_DELTAS.map(Tweak::Size));
            t.extend(BYTE_DELTAS.map(Tweak::Offset));
            other_cores(&mut t, peer, core, ctx.cores);
        }
        Inst::Wait { .. } => t.extend(ELEMENT_DELTAS.map(Tweak::Value)),
        Inst::Sync { core: peer, .. } => other_cores(&mut t, peer, u32::MAX, ctx.cores),
    }
    t.push(Tweak::Drop);
    // Repeating an instruction that only writes what it reads from elsewhere changes
    // nothing; repeating an accumulation or a message does.
    if matches!(
        inst,
        Inst::BinVec { .. } | Inst::Send { .. } | Inst::Recv { .. } | Inst::Sync { .. }
    ) {
        t.push(Tweak::Duplicate);
    }
    t.retain(|&tw| inserts(tw, inst) || tw == Tweak::Drop || apply(inst, tw).is_some());
    t
}

/// Whether `tweak` on `inst` inserts an instruction rather than changing `inst`: a repeat, or
/// an activation before a store.
fn inserts(tweak: Tweak, inst: &Inst) -> bool {
    match tweak {
        Tweak::Duplicate => true,
        Tweak::Activation { .. } => is_store(inst),
        _ => false,
    }
}

/// The `vrelu` over what the next store stores, at the input width in force, when the store's
/// size and offset are whole elements of that width.
fn relu_before_store(ctx: &Context) -> Option<Tweak> {
    let Some(Inst::Mem {
        op: MemOp::St,
        rs1,
        size,
        offset,
        ..
    }) = ctx.next_store
    else {
        return None;
    };
    let w = ctx.ibiw.bytes();
    let offset_on = offset.applies_to_rs1();
    let off = if offset_on { offset.value } else { 0 };
    if size == 0 || size % w != 0 || off % w as i32 != 0 {
        return None;
    }
    Some(Tweak::Activation {
        reg: rs1.index() as u8,
        len: size / w,
        offset: off / w as i32,
        offset_on,
    })
}

/// The `vrelu` of a [`Tweak::Relu`].
fn relu_inst(reg: u8, len: u32, offset: i32, offset_on: bool) -> Option<Inst> {
    let r = Reg::new(reg as u32)?;
    Some(Inst::UnVec {
        op: UnVecOp::Vrelu,
        rd: r,
        rs1: r,
        len,
        offset: if offset_on {
            Offset {
                select: 0b011,
                value: offset,
            }
        } else {
            Offset::ZERO
        },
    })
}

/// Offset tweaks: the value moved by each delta (when some operand is selected), or, for an
/// instruction without an offset, each delta applied to one operand.
fn offset_tweaks(t: &mut Vec<Tweak>, offset: Offset, bits: &[u8], deltas: &[i32]) {
    if offset.select != 0 {
        t.extend(deltas.iter().map(|&d| Tweak::Offset(d)));
    } else {
        for &bit in bits {
            t.extend(deltas.iter().map(|&value| Tweak::OffsetOn { bit, value }));
        }
    }
}

/// Every core other than `peer` and `me`.
fn other_cores(t: &mut Vec<Tweak>, peer: u32, me: u32, cores: u32) {
    t.extend(
        (0..cores)
            .filter(|&c| c != peer && c != me)
            .map(Tweak::Core),
    );
}

/// `inst` with `tweak` applied, or `None` when the tweak does not apply to it, would not
/// change it, or would give an invalid field (a negative size). [`Tweak::Drop`] gives `nop`;
/// [`Tweak::Duplicate`] is not an edit of the instruction itself and gives `None`.
pub(crate) fn apply(inst: &Inst, tweak: Tweak) -> Option<Inst> {
    let mut new = *inst;
    let changed = match (&mut new, tweak) {
        (_, Tweak::Drop) => return (*inst != Inst::Nop).then_some(Inst::Nop),
        (_, Tweak::Duplicate) => return None,
        (Inst::Nop, Tweak::Restore(i)) => return Some(i),
        (
            Inst::Nop,
            Tweak::Activation {
                reg,
                len,
                offset,
                offset_on,
            },
        ) => return relu_inst(reg, len, offset, offset_on),
        (Inst::Mvmul { relu, .. }, Tweak::Relu(v)) => replace(relu, v),
        (Inst::Mvmul { group, .. }, Tweak::Group(g)) => replace(group, g),
        (Inst::Mvmul { mbiw, .. }, Tweak::Mbiw(w)) => replace(mbiw, Width::new(w)?),
        (Inst::Setbw { ibiw, obiw }, Tweak::Widths(i, o)) => {
            let a = replace(ibiw, Width::new(i)?);
            replace(obiw, Width::new(o)?) || a
        }
        (Inst::Setbw { ibiw, obiw }, Tweak::WidthsFrom { from, to }) => {
            if (ibiw.bits(), obiw.bits()) != from {
                return None;
            }
            let a = replace(ibiw, Width::new(to.0)?);
            replace(obiw, Width::new(to.1)?) || a
        }
        (
            Inst::BinVec { len, .. }
            | Inst::UnVec { len, .. }
            | Inst::Vavg { len, .. }
            | Inst::Vmv { len, .. },
            Tweak::Len(d),
        ) => replace(len, len.checked_add_signed(d)?),
        (
            Inst::Mem { size, .. }
            | Inst::Lldi { size, .. }
            | Inst::Send { size, .. }
            | Inst::Recv { size, .. },
            Tweak::Size(d),
        ) => replace(size, size.checked_add_signed(d)?),
        (
            Inst::BinVec { offset, .. } | Inst::UnVec { offset, .. } | Inst::Mem { offset, .. },
            tw @ (Tweak::Offset(_) | Tweak::OffsetOn { .. }),
        ) => shift_offset(offset, tw)?,
        (
            Inst::Sld { offset, .. }
            | Inst::Vavg { offset, .. }
            | Inst::Lldi { offset, .. }
            | Inst::Send { offset, .. }
            | Inst::Recv { offset, .. },
            Tweak::Offset(d),
        ) => replace(offset, offset.checked_add(d)?),
        (
            Inst::Send { core, .. } | Inst::Recv { core, .. } | Inst::Sync { core, .. },
            Tweak::Core(c),
        ) => replace(core, c),
        (Inst::Sldi { imm, .. } | Inst::ScalarImm { imm, .. }, Tweak::Imm(d)) => {
            replace(imm, imm.checked_add(d)?)
        }
        (Inst::Wait { value, .. }, Tweak::Value(d)) => replace(value, value.checked_add(d)?),
        _ => false,
    };
    changed.then_some(new)
}

/// A selected offset moved, or an offset given to one operand of an instruction without one.
fn shift_offset(offset: &mut Offset, tweak: Tweak) -> Option<bool> {
    match tweak {
        Tweak::Offset(d) if offset.select != 0 => {
            let value = offset.value.checked_add(d)?;
            Some(replace(&mut offset.value, value))
        }
        Tweak::OffsetOn { bit, value } if offset.select == 0 => {
            *offset = Offset { select: bit, value };
            Some(value != 0)
        }
        _ => None,
    }
}

/// Sets `*slot = value`; whether that changed it.
fn replace<T: PartialEq>(slot: &mut T, value: T) -> bool {
    let changed = *slot != value;
    *slot = value;
    changed
}

/// The operand text of the field `tweak` changes in `new` (assembly syntax, as in
/// `Suspect::fix`): `relu=0`, `size=16`, `off=4@0b001`, `drop`, `duplicate`.
pub(crate) fn fix_text(new: &Inst, tweak: Tweak) -> String {
    match (*new, tweak) {
        (_, Tweak::Drop) => "drop".into(),
        (_, Tweak::Duplicate) => "duplicate".into(),
        (
            Inst::Mem { op: MemOp::St, .. },
            Tweak::Activation {
                reg,
                len,
                offset,
                offset_on,
            },
        ) => match relu_inst(reg, len, offset, offset_on) {
            Some(relu) => format!("insert `{relu}` before"),
            None => "insert vrelu before".into(),
        },
        (relu @ Inst::UnVec { .. }, Tweak::Activation { .. }) => relu.to_string(),
        (restored, Tweak::Restore(_)) => restored.to_string(),
        (Inst::Mvmul { relu, .. }, Tweak::Relu(_)) => format!("relu={}", relu as u8),
        (Inst::Mvmul { group, .. }, Tweak::Group(_)) => format!("group={group}"),
        (Inst::Mvmul { mbiw, .. }, Tweak::Mbiw(_)) => format!("mbiw={}", mbiw.bits()),
        (Inst::Setbw { ibiw, obiw }, _) => format!("ibiw={}, obiw={}", ibiw.bits(), obiw.bits()),
        (
            Inst::BinVec { len, .. }
            | Inst::UnVec { len, .. }
            | Inst::Vavg { len, .. }
            | Inst::Vmv { len, .. },
            Tweak::Len(_),
        ) => format!("len={len}"),
        (
            Inst::Mem { size, .. }
            | Inst::Lldi { size, .. }
            | Inst::Send { size, .. }
            | Inst::Recv { size, .. },
            Tweak::Size(_),
        ) => format!("size={size}"),
        (
            Inst::BinVec { offset, .. } | Inst::UnVec { offset, .. } | Inst::Mem { offset, .. },
            _,
        ) => format!("off={}@0b{:03b}", offset.value, offset.select),
        (
            Inst::Sld { offset, .. }
            | Inst::Vavg { offset, .. }
            | Inst::Lldi { offset, .. }
            | Inst::Send { offset, .. }
            | Inst::Recv { offset, .. },
            Tweak::Offset(_),
        ) => format!("off={offset}"),
        (Inst::Send { core, .. } | Inst::Recv { core, .. } | Inst::Sync { core, .. }, _) => {
            format!("core={core}")
        }
        (Inst::Sldi { imm, .. } | Inst::ScalarImm { imm, .. }, _) => format!("imm={imm}"),
        (Inst::Wait { value, .. }, _) => format!("value={value}"),
        (inst, _) => inst.to_string(),
    }
}

/// One candidate repair of a program: a tweak at one site, or at every instruction of one
/// opcode that it applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Edit {
    pub opcode: Opcode,
    pub tweak: Tweak,
    /// Whether the tweak is applied to every instruction of the opcode.
    pub every: bool,
    /// `(core, pc)` of each instruction it changes, in program order.
    pub sites: Vec<(u32, u32)>,
    /// The tweak at each site when it differs between sites (an opcode-wide missing
    /// activation covers what each site's own next store stores); empty: `tweak` everywhere.
    pub per_site: Vec<Tweak>,
}

impl Edit {
    /// The tweak at the `i`-th site.
    pub(crate) fn tweak_at(&self, i: usize) -> Tweak {
        self.per_site.get(i).copied().unwrap_or(self.tweak)
    }
}

/// The single-site edits of a program, core by core, in program order.
pub(crate) fn single_edits(cores: &[Vec<Inst>], groups: &[Vec<u32>]) -> Vec<Edit> {
    let n = cores.len() as u32;
    let mut out = Vec::new();
    for (c, insts) in cores.iter().enumerate() {
        let mut ctx = Context {
            cores: n,
            groups: groups.get(c).map_or(&[], Vec::as_slice),
            ibiw: Width::W8,
            next_store: None,
            restorations: Vec::new(),
        };
        let stores = next_stores(insts);
        let waits = wait_restorations(cores, c as u32);
        for (pc, inst) in insts.iter().enumerate() {
            ctx.next_store = stores[pc];
            ctx.restorations = if *inst == Inst::Nop {
                let mut r = restorations(insts, pc, ctx.ibiw, stores[pc]);
                r.extend(waits.iter().copied());
                r
            } else {
                Vec::new()
            };
            if let Inst::Setbw { ibiw, .. } = *inst {
                // The width in force *at* a `setbw` is the old one; it applies after it.
                for tweak in tweaks(inst, c as u32, &ctx) {
                    out.push(Edit {
                        opcode: inst.opcode(),
                        tweak,
                        every: false,
                        sites: vec![(c as u32, pc as u32)],
                        per_site: Vec::new(),
                    });
                }
                ctx.ibiw = ibiw;
                continue;
            }
            for tweak in tweaks(inst, c as u32, &ctx) {
                out.push(Edit {
                    opcode: inst.opcode(),
                    tweak,
                    every: false,
                    sites: vec![(c as u32, pc as u32)],
                    per_site: Vec::new(),
                });
            }
        }
    }
    out
}

/// A store to global memory (`st`): where a missing activation goes before.
fn is_store(inst: &Inst) -> bool {
    matches!(inst, Inst::Mem { op: MemOp::St, .. })
}

/// The opcode-wide missing activations: every `nop` replaced by, and every `st` preceded by,
/// the `vrelu` of what its next store stores (when there are two or more of them).
pub(crate) fn activation_edits(cores: &[Vec<Inst>]) -> Vec<Edit> {
    let mut out = Vec::new();
    let is_nop = |i: &Inst| *i == Inst::Nop;
    for is_site in [is_nop, is_store] {
        let mut sites = Vec::new();
        let mut per_site = Vec::new();
        let mut op = None;
        for (c, insts) in cores.iter().enumerate() {
            let stores = next_stores(insts);
            let mut ibiw = Width::W8;
            for (pc, inst) in insts.iter().enumerate() {
                if is_site(inst) {
                    op = Some(inst.opcode());
                    let ctx = Context {
                        cores: 0,
                        groups: &[],
                        ibiw,
                        next_store: stores[pc],
                        restorations: Vec::new(),
                    };
                    if let Some(t) = relu_before_store(&ctx) {
                        sites.push((c as u32, pc as u32));
                        per_site.push(t);
                    }
                }
                if let Inst::Setbw { ibiw: w, .. } = *inst {
                    ibiw = w;
                }
            }
        }
        if let (true, Some(opcode)) = (sites.len() > 1, op) {
            out.push(Edit {
                opcode,
                tweak: per_site[0],
                every: true,
                sites,
                per_site,
            });
        }
    }
    out
}

/// Two-source vector instructions of the core nearest to a `nop` (before and after it) serve
/// as templates of what the `nop` may have replaced.
const TEMPLATES: usize = 2;
/// With at most this many registers in play, every operand triple is tried; with more, only
/// in-place accumulations (`rd = rs1`).
const ALL_TRIPLES: usize = 8;

/// What a `nop` at `pc` may have replaced, when a compiler dropped an instruction and left a
/// `nop` in its place (keeping later indices): a two-source vector instruction shaped like
/// the nearest ones of the core (same op, length and offset; without any, a `vvadd` over what
/// the next store stores, at the input width `ibiw`), over registers written before the
/// `nop`. A dropped addition of a partial sum is one of these.
pub(crate) fn restorations(
    insts: &[Inst],
    pc: usize,
    ibiw: Width,
    next_store: Option<Inst>,
) -> Vec<Inst> {
    let mut written: Vec<Reg> = Vec::new();
    for inst in &insts[..pc] {
        if let Inst::Sldi { rd, .. }
        | Inst::Scalar { rd, .. }
        | Inst::ScalarImm { rd, .. }
        | Inst::Sld { rd, .. } = *inst
        {
            if !written.contains(&rd) {
                written.push(rd);
            }
        }
    }
    written.sort();
    let is_template = |i: &&Inst| matches!(i, Inst::BinVec { .. });
    let nearest = insts[..pc]
        .iter()
        .rev()
        .filter(is_template)
        .take(1)
        .chain(insts[pc + 1..].iter().filter(is_template).take(1))
        .chain(insts[..pc].iter().rev().filter(is_template).skip(1));
    let mut templates: Vec<(BinVecOp, u32, Offset)> = Vec::new();
    for t in nearest {
        if let Inst::BinVec {
            op, len, offset, ..
        } = *t
        {
            if templates.len() < TEMPLATES && !templates.contains(&(op, len, offset)) {
                templates.push((op, len, offset));
            }
        }
    }
    if templates.is_empty() {
        if let Some(Inst::Mem { size, .. }) = next_store {
            if size > 0 && size % ibiw.bytes() == 0 {
                templates.push((BinVecOp::Vvadd, size / ibiw.bytes(), Offset::ZERO));
            }
        }
    }
    let mut out = Vec::new();
    for (op, len, offset) in templates {
        for &d in &written {
            for &a in &written {
                if written.len() > ALL_TRIPLES && a != d {
                    continue;
                }
                for &b in &written {
                    if b != d && b != a {
                        out.push(Inst::BinVec {
                            op,
                            rd: d,
                            rs1: a,
                            rs2: b,
                            len,
                            offset,
                        });
                    }
                }
            }
        }
    }
    out
}

/// Most `wait` values tried per event register (a reducer waits for its contributors).
const MAX_WAIT_VALUE: usize = 8;

/// The `wait`s a `nop` of core `core` may have replaced, when a compiler dropped a wait (an
/// unordered hand-off through global memory): for each event register that other cores
/// `sync` on this core, a `wait` for each count from 1 to the number of such `sync`s.
fn wait_restorations(cores: &[Vec<Inst>], core: u32) -> Vec<Inst> {
    let mut syncs: Vec<(Reg, usize)> = Vec::new();
    for (c, insts) in cores.iter().enumerate() {
        if c as u32 == core {
            continue;
        }
        for inst in insts {
            if let Inst::Sync { event, core: to } = *inst {
                if to == core {
                    match syncs.iter_mut().find(|(e, _)| *e == event) {
                        Some((_, n)) => *n += 1,
                        None => syncs.push((event, 1)),
                    }
                }
            }
        }
    }
    syncs.sort();
    syncs
        .into_iter()
        .flat_map(|(event, n)| {
            (1..=n.min(MAX_WAIT_VALUE)).map(move |v| Inst::Wait {
                event,
                value: v as i32,
            })
        })
        .collect()
}

/// For each instruction, the first `st` at or after it.
fn next_stores(insts: &[Inst]) -> Vec<Option<Inst>> {
    let mut out = vec![None; insts.len()];
    let mut next = None;
    for (pc, inst) in insts.iter().enumerate().rev() {
        if is_store(inst) {
            next = Some(*inst);
        }
        out[pc] = next;
    }
    out
}

/// The opcode-wide edits of a program: each relative tweak of the catalog applied to every
/// instruction of one opcode that it changes, when that is more than one instruction (one is
/// a single edit). Opcodes in the order they first appear; `sldi` constants are left out
/// (moving every address at once repairs nothing a compiler plausibly got wrong).
pub(crate) fn class_edits(cores: &[Vec<Inst>]) -> Vec<Edit> {
    let mut order: Vec<Opcode> = Vec::new();
    for inst in cores.iter().flatten() {
        let op = inst.opcode();
        if !order.contains(&op) && !matches!(inst, Inst::Sldi { .. } | Inst::Nop) {
            order.push(op);
        }
    }
    let no_groups = Context {
        cores: cores.len() as u32,
        groups: &[],
        ibiw: Width::W8,
        next_store: None,
        restorations: Vec::new(),
    };
    let mut out = Vec::new();
    for op in order {
        let mut seen: Vec<Tweak> = Vec::new();
        for (c, insts) in cores.iter().enumerate() {
            for inst in insts.iter().filter(|i| i.opcode() == op) {
                for tw in tweaks(inst, c as u32, &no_groups) {
                    if tw.is_relative() && !seen.contains(&tw) {
                        seen.push(tw);
                    }
                }
            }
        }
        for tweak in seen.into_iter().flat_map(|t| widths_from(t, cores)) {
            let sites: Vec<(u32, u32)> = sites_of(cores, op)
                .filter(|&(c, pc)| apply(&cores[c as usize][pc as usize], tweak).is_some())
                .collect();
            if sites.len() > 1 {
                out.push(Edit {
                    opcode: op,
                    tweak,
                    every: true,
                    sites,
                    per_site: Vec::new(),
                });
            }
        }
    }
    out.extend(activation_edits(cores));
    out.extend(wait_edits(cores));
    out
}

/// The core-wide missing waits: every `nop` of a core with two or more replaced by the same
/// `wait` (see [`wait_restorations`]), as a compiler that drops the wait of every round of a
/// reduction leaves them.
fn wait_edits(cores: &[Vec<Inst>]) -> Vec<Edit> {
    let mut out = Vec::new();
    for (c, insts) in cores.iter().enumerate() {
        let sites: Vec<(u32, u32)> = insts
            .iter()
            .enumerate()
            .filter(|(_, i)| **i == Inst::Nop)
            .map(|(pc, _)| (c as u32, pc as u32))
            .collect();
        if sites.len() < 2 {
            continue;
        }
        for wait in wait_restorations(cores, c as u32) {
            out.push(Edit {
                opcode: Inst::Nop.opcode(),
                tweak: Tweak::Restore(wait),
                every: true,
                sites: sites.clone(),
                per_site: Vec::new(),
            });
        }
    }
    out
}

/// The opcode-wide forms of a tweak: itself, except that setting `setbw`'s widths
/// everywhere becomes, for each pair of widths the program sets, setting them where they are
/// that pair (one `setbw` kind wrong everywhere, the others right).
fn widths_from(tweak: Tweak, cores: &[Vec<Inst>]) -> Vec<Tweak> {
    let Tweak::Widths(i, o) = tweak else {
        return vec![tweak];
    };
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    for inst in cores.iter().flatten() {
        if let Inst::Setbw { ibiw, obiw } = *inst {
            let p = (ibiw.bits(), obiw.bits());
            if p != (i, o) && !pairs.contains(&p) {
                pairs.push(p);
            }
        }
    }
    pairs
        .into_iter()
        .map(|from| Tweak::WidthsFrom { from, to: (i, o) })
        .collect()
}

/// `(core, pc)` of every instruction with opcode `op`.
pub(crate) fn sites_of(cores: &[Vec<Inst>], op: Opcode) -> impl Iterator<Item = (u32, u32)> + '_ {
    cores.iter().enumerate().flat_map(move |(c, insts)| {
        insts
            .iter()
            .enumerate()
            .filter(move |(_, i)| i.opcode() == op)
            .map(move |(pc, _)| (c as u32, pc as u32))
    })
}

/// Applies `edit` to `cores` in place and returns what [`undo`] needs to restore them.
pub(crate) fn apply_edit(cores: &mut [Vec<Inst>], edit: &Edit) -> Vec<(u32, u32, Inst)> {
    let mut saved = Vec::with_capacity(edit.sites.len());
    if matches!(edit.tweak, Tweak::Activation { .. }) {
        // Later sites first, so that earlier indices stay valid.
        for (i, &(c, pc)) in edit.sites.iter().enumerate().rev() {
            let Tweak::Activation {
                reg,
                len,
                offset,
                offset_on,
            } = edit.tweak_at(i)
            else {
                continue;
            };
            let insts = &mut cores[c as usize];
            if is_store(&insts[pc as usize]) {
                if let Some(relu) = relu_inst(reg, len, offset, offset_on) {
                    insts.insert(pc as usize, relu);
                    saved.push((c, pc, relu));
                }
            } else if let Some(new) = apply(&insts[pc as usize], edit.tweak_at(i)) {
                saved.push((c, pc, insts[pc as usize]));
                insts[pc as usize] = new;
            }
        }
        return saved;
    }
    if edit.tweak == Tweak::Duplicate {
        // Later sites first, so that earlier indices stay valid.
        for &(c, pc) in edit.sites.iter().rev() {
            let insts = &mut cores[c as usize];
            let inst = insts[pc as usize];
            insts.insert(pc as usize + 1, inst);
            saved.push((c, pc, inst));
        }
        return saved;
    }
    for (i, &(c, pc)) in edit.sites.iter().enumerate() {
        let slot = &mut cores[c as usize][pc as usize];
        if let Some(new) = apply(slot, edit.tweak_at(i)) {
            saved.push((c, pc, *slot));
            *slot = new;
        }
    }
    saved
}

/// Restores what [`apply_edit`] changed.
pub(crate) fn undo(cores: &mut [Vec<Inst>], edit: &Edit, saved: Vec<(u32, u32, Inst)>) {
    if matches!(edit.tweak, Tweak::Activation { .. }) {
        for (c, pc, old) in saved.into_iter().rev() {
            let insts = &mut cores[c as usize];
            if matches!(old, Inst::UnVec { .. }) {
                insts.remove(pc as usize);
            } else {
                insts[pc as usize] = old;
            }
        }
        return;
    }
    if edit.tweak == Tweak::Duplicate {
        for (c, pc, _) in saved.into_iter().rev() {
            cores[c as usize].remove(pc as usize + 1);
        }
        return;
    }
    for (c, pc, inst) in saved {
        cores[c as usize][pc as usize] = inst;
    }
}

#[cfg(test)]
mod tests {
    use pimdiff_isa::formats::asm::parse_inst;

    use super::*;

    fn inst(text: &str) -> Inst {
        parse_inst(text).unwrap()
    }

    fn ctx() -> Context<'static> {
        Context {
            cores: 3,
            groups: &[0, 1, 4],
            ibiw: Width::W32,
            next_store: None,
            restorations: Vec::new(),
        }
    }

    /// Every tweak of one instruction, as the fix text it would print.
    fn fixes(text: &str, core: u32) -> Vec<String> {
        let i = inst(text);
        tweaks(&i, core, &ctx())
            .into_iter()
            .map(|t| match apply(&i, t) {
                Some(new) => fix_text(&new, t),
                None => fix_text(&i, t),
            })
            .collect()
    }

    #[test]
    fn the_catalog_of_each_shape() {
        assert_eq!(
            fixes("mvmul r1, r2, mbiw=8, relu=0, group=1", 0),
            ["relu=1", "group=0", "group=4", "mbiw=16", "mbiw=32", "drop"]
        );
        assert_eq!(
            fixes("st r7, r20, size=4", 0),
            [
                "size=3",
                "size=5",
                "size=0",
                "size=8",
                "off=-1@0b001",
                "off=1@0b001",
                "off=-4@0b001",
                "off=4@0b001",
                "off=-1@0b010",
                "off=1@0b010",
                "off=-4@0b010",
                "off=4@0b010",
                "drop"
            ]
        );
        // With the store known as the next one (the catalog sees it so), a missing
        // activation before it, in 32-bit elements.
        let st = inst("st r7, r20, size=8, off=4@0b010");
        let ctx = Context {
            next_store: Some(st),
            ..ctx()
        };
        let t = tweaks(&st, 0, &ctx);
        let activation = t.iter().find(|t| matches!(t, Tweak::Activation { .. }));
        assert_eq!(
            fix_text(&st, *activation.unwrap()),
            "insert `vrelu r20, r20, len=2, off=1@0b011` before"
        );
        let relu = tweaks(&Inst::Nop, 0, &ctx);
        assert_eq!(relu.len(), 1);
        assert_eq!(
            apply(&Inst::Nop, relu[0]),
            Some(inst("vrelu r20, r20, len=2, off=1@0b011"))
        );
        assert_eq!(
            fixes("vvadd r1, r1, r2, len=12, off=2@0b100", 0),
            [
                "len=11",
                "len=13",
                "off=1@0b100",
                "off=3@0b100",
                "drop",
                "duplicate"
            ]
        );
        assert_eq!(
            fixes("recv r2, core=1, size=4", 0),
            [
                "size=3",
                "size=5",
                "size=0",
                "size=8",
                "off=-1",
                "off=1",
                "off=-4",
                "off=4",
                "core=2",
                "drop",
                "duplicate"
            ]
        );
        assert_eq!(
            fixes("setbw ibiw=8, obiw=32", 0).len(),
            9,
            "eight other width pairs and drop"
        );
        assert_eq!(
            fixes("sldi r3, imm=0", 0),
            ["imm=-1", "imm=1", "imm=-4", "imm=4", "drop"]
        );
        assert!(fixes("nop", 0).is_empty());
    }

    #[test]
    fn tweaks_that_do_not_apply_give_none() {
        // A size cannot go below zero; a flag cannot be set to what it is.
        assert_eq!(apply(&inst("ld r0, r1, size=0"), Tweak::Size(-1)), None);
        assert_eq!(
            apply(
                &inst("mvmul r0, r1, mbiw=8, relu=1, group=0"),
                Tweak::Relu(true)
            ),
            None
        );
        // An offset is moved only where one is selected, and given only where none is.
        assert_eq!(apply(&inst("st r0, r1, size=4"), Tweak::Offset(4)), None);
        assert_eq!(
            apply(
                &inst("st r0, r1, size=4, off=4@0b001"),
                Tweak::OffsetOn { bit: 1, value: 4 }
            ),
            None
        );
        assert_eq!(
            apply(&inst("st r0, r1, size=4, off=4@0b001"), Tweak::Offset(-4)),
            Some(inst("st r0, r1, size=4, off=0@0b001"))
        );
        assert_eq!(apply(&inst("sldi r0, imm=2147483647"), Tweak::Imm(1)), None);
        assert_eq!(apply(&inst("nop"), Tweak::Drop), None);
        assert_eq!(apply(&inst("vrelu r0, r0, len=4"), Tweak::Duplicate), None);
    }

    #[test]
    fn a_nop_may_be_a_dropped_accumulation() {
        let core = [
            inst("sldi r0, imm=8"),
            inst("sldi r1, imm=16"),
            inst("vvadd r3, r3, r4, len=2"),
            inst("nop"),
            inst("vvadd r5, r5, r6, len=2"),
        ];
        let r = restorations(&core, 3, Width::W32, None);
        // The two neighbours have one shape: one template, over r0 and r1 (written before).
        assert_eq!(
            r,
            [
                inst("vvadd r0, r0, r1, len=2"),
                inst("vvadd r1, r1, r0, len=2")
            ]
        );
        // Without a template: a `vvadd` as long as the next store, in elements of the width.
        let core = [
            inst("sldi r0, imm=8"),
            inst("sldi r1, imm=16"),
            inst("nop"),
            inst("st r0, r1, size=8"),
        ];
        let r = restorations(&core, 2, Width::W32, Some(core[3]));
        assert_eq!(r[0], inst("vvadd r0, r0, r1, len=2"));
    }

    #[test]
    fn opcode_wide_edits_cover_every_instance_and_skip_address_constants() {
        let core = vec![
            inst("sldi r0, imm=0"),
            inst("sldi r1, imm=8"),
            inst("mvmul r1, r0, mbiw=8, relu=1, group=0"),
            inst("mvmul r1, r0, mbiw=8, relu=1, group=1"),
            inst("st r0, r1, size=4"),
        ];
        let edits = class_edits(&[core]);
        assert!(edits.iter().all(|e| e.every && e.opcode != Opcode::Sldi));
        let relu = edits
            .iter()
            .find(|e| e.tweak == Tweak::Relu(false))
            .unwrap();
        assert_eq!(relu.sites, [(0, 2), (0, 3)]);
        // One `st`: no opcode-wide edit for it (that is a single edit).
        assert!(edits.iter().all(|e| e.opcode != Opcode::St));
        // One kind of `setbw` wrong everywhere: its pair mapped to another, the others left.
        let core = vec![
            inst("setbw ibiw=8, obiw=16"),
            inst("setbw ibiw=32, obiw=32"),
            inst("setbw ibiw=8, obiw=16"),
        ];
        let edits = class_edits(&[core]);
        let widen = edits
            .iter()
            .find(|e| {
                e.tweak
                    == Tweak::WidthsFrom {
                        from: (8, 16),
                        to: (8, 32),
                    }
            })
            .unwrap();
        assert_eq!(widen.sites, [(0, 0), (0, 2)]);
        // Groups and cores name absolute values: not opcode-wide.
        assert!(edits
            .iter()
            .all(|e| !matches!(e.tweak, Tweak::Group(_) | Tweak::Core(_))));
    }

    #[test]
    fn edits_are_undone_exactly() {
        let original = vec![
            vec![
                inst("nop"),
                inst("vvadd r1, r1, r2, len=4"),
                inst("st r0, r1, size=4"),
            ],
            vec![inst("vvadd r1, r1, r2, len=4")],
        ];
        let mut cores = original.clone();
        for edit in class_edits(&cores)
            .into_iter()
            .chain(single_edits(&cores, &[vec![], vec![]]))
        {
            let saved = apply_edit(&mut cores, &edit);
            assert_ne!(cores, original, "{edit:?} changes the program");
            undo(&mut cores, &edit, saved);
            assert_eq!(cores, original, "{edit:?} is undone");
        }
    }
}
