//! Alignment of the program with its side table, core by core, instruction by instruction.
//!
//! Per core, the program without `sldi`/`setbw` and the table without `VER` match one to one
//! (`docs/pimcomp-numerics.md` §1). A different opcode means the table comes from another
//! compile: an error naming the first core, instruction index and both opcodes. Where the
//! opcodes agree but an operand does not (register value against address + offset, length,
//! peer core, `group` against the AG's crossbar count), PIMCOMP-NN's emitter disagrees with its
//! own IR: a [`Disagreement`], reported as a finding.
//!
//! Register values are followed through `sldi` and the scalar arithmetic ops; a register
//! loaded by `sld` is unknown and its operands are not compared.

use pimdiff_isa::formats::size_key;
use pimdiff_isa::inst::Offset;
use pimdiff_isa::{Inst, Program};

use super::error::PimcompError;
use super::table::{AgInfo, TInst, TOp};

/// Where every table instruction sits in the program.
#[derive(Debug, Default)]
pub struct Alignment {
    /// Per core: `(program index, table index)` of every aligned pair, in order.
    pub pairs: Vec<Vec<(u32, u32)>>,
    /// Per core: `(program index before which the VER applies, table index)`.
    pub vers: Vec<Vec<(u32, u32)>>,
    pub disagreements: Vec<Disagreement>,
}

/// An operand on which the program and the table disagree.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Disagreement {
    pub core: u32,
    /// Program instruction index.
    pub index: u32,
    pub text: String,
    pub field: String,
    pub program: i64,
    pub table: i64,
    /// The table's node for this instruction (for the per-node report).
    #[serde(skip)]
    pub node: i32,
}

/// Aligns every core of `program` with `table` (`core_list`).
pub fn align(
    program: &Program,
    table: &[Option<Vec<TInst>>],
    ags: &[AgInfo],
) -> Result<Alignment, PimcompError> {
    let mut a = Alignment::default();
    let empty = Vec::new();
    if let Some(c) = (program.cores.len()..table.len())
        .find(|&c| table[c].as_ref().is_some_and(|t| !t.is_empty()))
    {
        return Err(PimcompError::Misaligned {
            core: c as u32,
            index: 0,
            program: "(no such core)".into(),
            table: table[c]
                .as_ref()
                .map(|t| t[0].op.name())
                .unwrap_or("-")
                .into(),
            table_index: 0,
        });
    }
    for (c, insts) in program.cores.iter().enumerate() {
        let t = table.get(c).and_then(|t| t.as_ref()).unwrap_or(&empty);
        let (pairs, vers) = align_core(c as u32, insts, t, ags, &mut a.disagreements)?;
        a.pairs.push(pairs);
        a.vers.push(vers);
    }
    Ok(a)
}

type CorePairs = (Vec<(u32, u32)>, Vec<(u32, u32)>);

fn align_core(
    core: u32,
    insts: &[Inst],
    table: &[TInst],
    ags: &[AgInfo],
    out: &mut Vec<Disagreement>,
) -> Result<CorePairs, PimcompError> {
    let mut regs: [Option<i64>; 32] = [Some(0); 32];
    let (mut pairs, mut vers) = (Vec::new(), Vec::new());
    let mut j = 0usize;
    let misaligned = |i: usize, program: String, j: usize| PimcompError::Misaligned {
        core,
        index: i as u32,
        program,
        table: table
            .get(j)
            .map(|t| t.op.name().to_string())
            .unwrap_or_else(|| "nothing (the table's core ends)".into()),
        table_index: j as u32,
    };
    let mut last_end = 0u32;
    for (i, inst) in insts.iter().enumerate() {
        if track_scalar(inst, &mut regs) {
            continue;
        }
        while table.get(j).is_some_and(|t| t.op == TOp::Ver) {
            vers.push((last_end, j as u32));
            j += 1;
        }
        let Some(t) = table.get(j) else {
            return Err(misaligned(i, inst.to_string(), j));
        };
        let Some(checks) = operands(inst, t, &regs, ags) else {
            return Err(misaligned(i, inst.to_string(), j));
        };
        for (field, program, table_value) in checks {
            if let Some(p) = program {
                if p != table_value {
                    out.push(Disagreement {
                        core,
                        index: i as u32,
                        text: inst.to_string(),
                        field: field.into(),
                        program: p,
                        table: table_value,
                        node: t.node,
                    });
                }
            }
        }
        pairs.push((i as u32, j as u32));
        j += 1;
        last_end = i as u32 + 1;
    }
    while table.get(j).is_some_and(|t| t.op == TOp::Ver) {
        vers.push((last_end, j as u32));
        j += 1;
    }
    if j < table.len() {
        return Err(misaligned(
            insts.len(),
            "nothing (the program's core ends)".into(),
            j,
        ));
    }
    Ok((pairs, vers))
}

/// Follows register values; true for instructions that only set registers or widths.
fn track_scalar(inst: &Inst, regs: &mut [Option<i64>; 32]) -> bool {
    match *inst {
        Inst::Sldi { rd, imm } => regs[rd.index()] = Some(imm as i64),
        Inst::Sld { rd, .. } => regs[rd.index()] = None,
        Inst::Scalar { op, rd, rs1, rs2 } => {
            regs[rd.index()] = match (regs[rs1.index()], regs[rs2.index()]) {
                (Some(a), Some(b)) => Some(op.apply(a as i32, b as i32) as i64),
                _ => None,
            }
        }
        Inst::ScalarImm { op, rd, rs1, imm } => {
            regs[rd.index()] = regs[rs1.index()].map(|a| op.apply(a as i32, imm) as i64)
        }
        Inst::Setbw { .. } | Inst::Nop => {}
        _ => return false,
    }
    true
}

type Check = (&'static str, Option<i64>, i64);

/// The operand pairs to compare, or `None` when the opcodes do not correspond (the table's
/// op is not emitted as the instruction's opcode, or is one whose operands are not compared).
fn operands(
    inst: &Inst,
    t: &TInst,
    regs: &[Option<i64>; 32],
    ags: &[AgInfo],
) -> Option<Vec<Check>> {
    if t.opcode != Some(inst.opcode()) {
        return None;
    }
    let o = Operands { t, regs };
    match *inst {
        Inst::Mem { .. } => o.memory(inst),
        Inst::Mvmul { rd, rs1, group, .. } => {
            let ag = ags.get(usize::try_from(t.peer).ok()?)?;
            Some(vec![
                ("destination", o.reg(rd, 0), o.dst()),
                ("source", o.reg(rs1, 0), o.src1()),
                ("group", Some(group as i64), ag.crossbar_num as i64),
            ])
        }
        Inst::BinVec { .. } | Inst::UnVec { .. } => o.vector(inst),
        Inst::Lldi { .. } | Inst::Send { .. } | Inst::Recv { .. } => o.immediate_or_message(inst),
        _ => None,
    }
}

/// One table entry and the register values before its instruction: the two sides of every
/// operand comparison.
struct Operands<'a> {
    t: &'a TInst,
    regs: &'a [Option<i64>; 32],
}

impl Operands<'_> {
    /// A register's value plus `off`, when the value is known.
    fn reg(&self, reg: pimdiff_isa::Reg, off: i64) -> Option<i64> {
        self.regs[reg.index()].map(|v| v + off)
    }

    /// The offset an instruction adds to the operand selected by `bit`.
    fn sel(o: Offset, bit: u8) -> i64 {
        if o.select & bit != 0 {
            o.value as i64
        } else {
            0
        }
    }

    fn dst(&self) -> i64 {
        self.t.dst as i64 + self.t.dst_off as i64
    }

    fn src1(&self) -> i64 {
        self.t.src1 as i64 + self.t.src1_off as i64
    }

    /// A global-memory address: the table records negative bases as 0.
    fn clamped(a: i32, o: i32) -> i64 {
        a.max(0) as i64 + o as i64
    }

    /// `ld`, `st` and `lmv`: the global side of a load or a store is clamped.
    fn memory(&self, inst: &Inst) -> Option<Vec<Check>> {
        let Inst::Mem {
            rd,
            rs1,
            size,
            offset,
            ..
        } = *inst
        else {
            return None;
        };
        let t = self.t;
        let store = inst.gmem_transfer().map(|g| g.store);
        let dst = match store {
            Some(true) => Self::clamped(t.dst, t.dst_off),
            _ => self.dst(),
        };
        let src = match store {
            Some(false) => Self::clamped(t.src1, t.src1_off),
            _ => self.src1(),
        };
        let size_name = size_key(inst.opcode())?;
        Some(vec![
            ("destination", self.reg(rd, Self::sel(offset, 1)), dst),
            ("source", self.reg(rs1, Self::sel(offset, 2)), src),
            (size_name, Some(size as i64), t.len as i64),
        ])
    }

    /// The binary and unary vector instructions.
    fn vector(&self, inst: &Inst) -> Option<Vec<Check>> {
        let t = self.t;
        let len = t.len as i64;
        match *inst {
            Inst::BinVec {
                rd,
                rs1,
                rs2,
                len: l,
                offset,
                ..
            } => Some(vec![
                (
                    "destination",
                    self.reg(rd, Self::sel(offset, 1)),
                    self.dst(),
                ),
                ("source 1", self.reg(rs1, Self::sel(offset, 2)), self.src1()),
                (
                    "source 2",
                    self.reg(rs2, Self::sel(offset, 4)),
                    t.src2 as i64 + t.src2_off as i64,
                ),
                ("len", Some(l as i64), len),
            ]),
            Inst::UnVec {
                rd,
                rs1,
                len: l,
                offset,
                ..
            } => Some(vec![
                (
                    "destination",
                    self.reg(rd, Self::sel(offset, 1)),
                    self.dst(),
                ),
                ("source", self.reg(rs1, Self::sel(offset, 2)), self.src1()),
                ("len", Some(l as i64), len),
            ]),
            _ => None,
        }
    }

    /// `lldi`, `send` and `recv`.
    fn immediate_or_message(&self, inst: &Inst) -> Option<Vec<Check>> {
        let t = self.t;
        let len = t.len as i64;
        Some(match *inst {
            Inst::Lldi {
                rd,
                imm,
                size,
                offset,
                ..
            } => vec![
                ("destination", self.reg(rd, offset as i64), self.dst()),
                ("len", Some(size as i64), len),
                (
                    "imm",
                    Some(imm as i8 as i64),
                    t.imm.trunc().clamp(-128.0, 255.0) as i64 as i8 as i64,
                ),
            ],
            Inst::Send {
                rs1,
                core,
                size,
                offset,
            } => vec![
                ("source", self.reg(rs1, offset as i64), t.src1 as i64),
                ("core", Some(core as i64), t.peer as i64),
                ("size", Some(size as i64), len),
            ],
            Inst::Recv {
                rd,
                core,
                size,
                offset,
            } => vec![
                ("destination", self.reg(rd, offset as i64), t.dst as i64),
                ("core", Some(core as i64), t.peer as i64),
                ("size", Some(size as i64), len),
            ],
            _ => return None,
        })
    }
}
