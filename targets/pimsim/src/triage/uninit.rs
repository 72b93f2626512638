//! Loads of global memory that nothing initialises: the evidence for data a compiler forgot
//! to hand over (a constant segment missing from the io manifest, a tensor slot at the wrong
//! address), where no instruction edit repairs anything.
//!
//! Programs are straight-line, so the address registers' values are known wherever they come
//! from immediates (`sldi`, then `sadd`/`ssub`/`smul`/`saddi`/`smuli` of known values); an
//! `sld` makes its register unknown. An `ld` whose whole global range is known and overlaps
//! no byte of the input slot, of a constant segment or of any `st` of the program (on any
//! core: their order is not known statically, so every store counts) reads memory that only
//! ever holds zeros.

use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::Inst;

/// A `[start, end)` global memory range.
type Range = (u64, u64);

/// `(core, pc, range)` of every `ld` that reads global memory nothing initialises, in program
/// order.
pub(crate) fn uninitialised_loads(bundle: &Bundle) -> Vec<(u32, u32, Range)> {
    let m = &bundle.manifest;
    let mut written: Vec<Range> = vec![(
        m.input.addr as u64,
        m.input.addr as u64 + m.input.byte_len() as u64,
    )];
    written.extend(
        m.constants
            .iter()
            .map(|c| (c.addr as u64, c.addr as u64 + c.data.len() as u64)),
    );
    let mut loads = Vec::new();
    for (c, insts) in bundle.program.cores.iter().enumerate() {
        for (pc, store, range) in transfers(insts) {
            if store {
                written.push(range);
            } else {
                loads.push((c as u32, pc as u32, range));
            }
        }
    }
    loads
        .into_iter()
        .filter(|&(_, _, (lo, hi))| !written.iter().any(|&(a, b)| lo < b && a < hi))
        .collect()
}

/// The `ld`s and `st`s of one core whose global range is known: `(pc, is a store, range)`.
fn transfers(insts: &[Inst]) -> Vec<(usize, bool, Range)> {
    let mut regs: [Option<i64>; 32] = [None; 32];
    let mut out = Vec::new();
    for (pc, inst) in insts.iter().enumerate() {
        match *inst {
            Inst::Sldi { rd, imm } => regs[rd.index()] = Some(imm as i64),
            Inst::Scalar { op, rd, rs1, rs2 } => {
                regs[rd.index()] = match (regs[rs1.index()], regs[rs2.index()]) {
                    (Some(a), Some(b)) => Some(op.apply(a as i32, b as i32) as i64),
                    _ => None,
                }
            }
            Inst::ScalarImm { op, rd, rs1, imm } => {
                regs[rd.index()] = regs[rs1.index()].map(|a| op.apply(a as i32, imm) as i64)
            }
            Inst::Sld { rd, .. } => regs[rd.index()] = None,
            _ => {
                let Some(t) = inst.gmem_transfer().filter(|t| t.size > 0) else {
                    continue;
                };
                if let Some(v) = regs[t.base.index()] {
                    let start = (v as u32) as i64 + t.offset as i64;
                    if start >= 0 {
                        out.push((pc, t.store, (start as u64, start as u64 + t.size as u64)));
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use pimdiff_isa::bundle::{ConstSegment, Dtype, IoManifest, Layout, TensorSlot};
    use pimdiff_isa::formats::asm::parse;

    use super::*;

    fn bundle(asm: &str, constants: Vec<ConstSegment>) -> Bundle {
        let slot = |addr| TensorSlot {
            addr,
            shape: vec![1, 4],
            layout: Layout::Nc,
            dtype: Dtype::Int8,
        };
        Bundle {
            program: parse(asm).unwrap(),
            xbars: Default::default(),
            manifest: IoManifest {
                input: slot(0),
                output: slot(64),
                constants,
            },
        }
    }

    #[test]
    fn a_load_of_a_missing_constant_is_found() {
        let asm = "core 0:\n sldi r0, imm=0\n ld r0, r0, size=4\n sldi r1, imm=128\n \
                   sldi r2, imm=16\n ld r2, r1, size=4\n saddi r3, r1, imm=8\n \
                   ld r2, r3, size=4\n st r1, r2, size=4, off=4@0b001\n";
        // The input at 0, a store to [132, 136): the load at 128 reads nothing initialised,
        // the one at 136 neither; the input load is fine.
        assert_eq!(
            uninitialised_loads(&bundle(asm, Vec::new())),
            [(0, 4, (128, 132)), (0, 6, (136, 140))]
        );
        let bias = ConstSegment {
            name: "bias".into(),
            addr: 128,
            file: "bias.bin".into(),
            data: vec![0; 4],
        };
        assert_eq!(
            uninitialised_loads(&bundle(asm, vec![bias])),
            [(0, 6, (136, 140))]
        );
    }

    #[test]
    fn unknown_addresses_are_not_guessed() {
        let asm = "core 0:\n sldi r0, imm=0\n sld r1, r0\n ld r0, r1, size=4\n";
        assert!(uninitialised_loads(&bundle(asm, Vec::new())).is_empty());
    }
}
