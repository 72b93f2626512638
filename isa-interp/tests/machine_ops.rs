//! One focused test per opcode, with exact expected bytes; offsets, widths, wrapping,
//! sign extension and little-endian layout.

mod machine_util;

use machine_util::*;
use ndarray::Array3;
use pimdiff_isa::inst::{BinVecOp, MemOp, ScalarImmOp, ScalarOp, UnVecOp};
use pimdiff_isa::machine::{CellFill, FaultKind, Machine, MachineOptions, RunOutcome};
use pimdiff_isa::xbar::{ArrayGroup, CoreCrossbars};
use pimdiff_isa::{CrossbarExport, GroupSpec, Inst, Opcode, Program};

fn regs_after(insts: Vec<Inst>) -> [i32; 32] {
    check_lmem(insts, &[], &[]).regs(0)
}

// ---- scalar ----------------------------------------------------------------------------

#[test]
fn nop_changes_nothing() {
    let m = check_lmem(vec![Inst::Nop, Inst::Nop], &[(0, &[1, 2])], &[]);
    assert_eq!(m.regs(0), [0; 32]);
    assert_eq!(m.stats().count(Opcode::Nop), 2);
}

#[test]
fn sldi_sets_a_register() {
    let regs = regs_after(vec![sldi(5, -7), sldi(31, i32::MAX)]);
    assert_eq!((regs[5], regs[31]), (-7, i32::MAX));
}

#[test]
fn sld_reads_32_bit_little_endian_with_its_offset() {
    let p = program(vec![vec![
        sldi(1, 100),
        Inst::Sld {
            rd: r(2),
            rs1: r(1),
            offset: -4,
        },
    ]]);
    let mut m = Machine::new(
        &p,
        &CrossbarExport::default(),
        small_arch(1),
        MachineOptions::default(),
    )
    .unwrap();
    m.write_gmem(96, &[0x78, 0x56, 0x34, 0xf2]).unwrap();
    assert_eq!(m.run(), RunOutcome::Finished);
    assert_eq!(m.regs(0)[2], 0xf2345678u32 as i32);
    assert_eq!(m.stats().gmem_touched_bytes, 100);
}

#[test]
fn scalar_ops_wrap() {
    let regs = regs_after(vec![
        sldi(1, i32::MAX),
        sldi(2, 3),
        scalar(ScalarOp::Add, 3, 1, 2),
        scalar(ScalarOp::Sub, 4, 2, 1),
        scalar(ScalarOp::Mul, 5, 1, 2),
        scalar_imm(ScalarImmOp::Add, 6, 1, 1),
        scalar_imm(ScalarImmOp::Mul, 7, 2, -5),
    ]);
    assert_eq!(regs[3], i32::MAX.wrapping_add(3));
    assert_eq!(regs[4], 3i32.wrapping_sub(i32::MAX));
    assert_eq!(regs[5], i32::MAX.wrapping_mul(3));
    assert_eq!(regs[6], i32::MIN);
    assert_eq!(regs[7], -15);
}

#[test]
fn setbw_sets_widths_which_reset_to_8() {
    let p = program(vec![vec![Inst::Nop]]);
    let m = Machine::new(
        &p,
        &CrossbarExport::default(),
        small_arch(1),
        MachineOptions::default(),
    )
    .unwrap();
    assert_eq!(m.widths(0), (w(8), w(8)));
    let m = check_lmem(vec![setbw(3, 17)], &[], &[]);
    assert_eq!(m.widths(0), (w(3), w(17)));
}

// ---- element widths, wrapping, sign extension, little-endian ---------------------------

/// `vvadd` of A at 0 and B at 16 into D at 32 with both widths `bits`.
fn check_vvadd(bits: u32, a: &[u8], b: &[u8], len: u32, d: &[u8], overflows: u64) {
    let mut insts = vec![setbw(bits, bits)];
    insts.extend(bases(0, 16, 32));
    insts.push(bin(BinVecOp::Vvadd, len, off(0, 0)));
    let m = check_lmem(insts, &[(0, a), (16, b)], &[(32, d)]);
    assert_eq!(m.stats().overflow_events, overflows);
}

#[test]
fn width_1() {
    // 0x01 reads as -1 (the low bit, sign-extended); -1 + -1 = -2 wraps to 0; 0 + -1 = -1 is
    // stored sign-extended into the byte as 0xff.
    check_vvadd(
        1,
        &[0x01, 0x00, 0xfe],
        &[0x01, 0x01, 0x00],
        3,
        &[0x00, 0xff, 0x00],
        1,
    );
}

#[test]
fn width_7() {
    // 63 + 1 = 64 wraps to -64 (0xc0); 0xc0 reads as -64 and 0x7f as -1: -65 wraps to 63.
    check_vvadd(7, &[0x3f, 0xc0], &[0x01, 0x7f], 2, &[0xc0, 0x3f], 2);
}

#[test]
fn width_8() {
    check_vvadd(
        8,
        &[1, 2, 127, 0x80],
        &[1, 0xfd, 1, 0xff],
        4,
        &[2, 0xff, 0x80, 0x7f],
        2,
    );
}

#[test]
fn width_9() {
    // 255 + 1 = 256 wraps to -256, stored as the 16-bit 0xff00; bits 9..15 of an input are ignored.
    check_vvadd(
        9,
        &[0xff, 0x00, 0x05, 0xfe],
        &[0x01, 0x00, 0x01, 0x00],
        2,
        &[0x00, 0xff, 0x06, 0x00],
        1,
    );
}

#[test]
fn width_16() {
    check_vvadd(
        16,
        &[0xff, 0x7f, 0xfe, 0xff],
        &[0x01, 0x00, 0x01, 0x00],
        2,
        &[0x00, 0x80, 0xff, 0xff],
        1,
    );
}

#[test]
fn width_32_is_little_endian() {
    check_vvadd(
        32,
        &[0x04, 0x03, 0x02, 0x01, 0xff, 0xff, 0xff, 0x7f],
        &[0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00],
        2,
        &[0x14, 0x03, 0x02, 0x01, 0x00, 0x00, 0x00, 0x80],
        1,
    );
}

#[test]
fn overflow_records_name_core_pc_and_value() {
    let mut insts = bases(0, 16, 32);
    insts.push(bin(BinVecOp::Vvadd, 1, off(0, 0)));
    let m = check_lmem(
        insts.clone(),
        &[(0, &[100]), (16, &[100])],
        &[(32, &[0xc8])],
    );
    let rec = &m.stats().overflows[0];
    assert_eq!(
        (rec.core, rec.pc, rec.inst, rec.value, rec.bits, rec.stored),
        (0, 3, insts[3], 200, 8, -56)
    );
}

// ---- offsets ---------------------------------------------------------------------------

/// `vvadd` 16-bit, two elements, with offset `(select, 1)`: each selected operand moves by one
/// element (2 bytes).
fn check_offset(select: u8, d_at: u32) {
    let mut insts = vec![setbw(16, 16)];
    insts.extend(bases(0, 16, 32));
    insts.push(bin(BinVecOp::Vvadd, 2, off(select, 1)));
    let a: &[u8] = &[1, 0, 2, 0, 3, 0];
    let b: &[u8] = &[10, 0, 20, 0, 30, 0];
    let a0 = if select & 2 != 0 { 1 } else { 0 };
    let b0 = if select & 4 != 0 { 1 } else { 0 };
    let av = [1u8, 2, 3];
    let bv = [10u8, 20, 30];
    let d = [av[a0] + bv[b0], 0, av[a0 + 1] + bv[b0 + 1], 0];
    check_lmem(insts, &[(0, a), (16, b)], &[(d_at, &d)]);
}

#[test]
fn offset_select_bit_0_moves_rd() {
    check_offset(1, 34);
}

#[test]
fn offset_select_bit_1_moves_rs1() {
    check_offset(2, 32);
}

#[test]
fn offset_select_bit_2_moves_rs2() {
    check_offset(4, 32);
}

#[test]
fn offset_select_all_bits() {
    check_offset(7, 34);
}

#[test]
fn offset_counts_each_operands_own_width() {
    // vvmul: inputs 8-bit (offset 1 byte), output 16-bit (offset 2 bytes).
    let mut insts = vec![setbw(8, 16)];
    insts.extend(bases(0, 16, 32));
    insts.push(bin(BinVecOp::Vvmul, 2, off(7, 1)));
    check_lmem(
        insts,
        &[(0, &[9, 100, 0xfe]), (16, &[9, 100, 3])],
        &[(34, &[0x10, 0x27, 0xfa, 0xff])],
    );
}

#[test]
fn memory_offsets_count_bytes() {
    // ld with select 3: LMem rd + 5, GMem rs1 + 5.
    let p = program(vec![vec![
        sldi(1, 10),
        sldi(2, 100),
        mem(MemOp::Ld, 1, 2, 2, off(3, 5)),
    ]]);
    let mut m = Machine::new(
        &p,
        &CrossbarExport::default(),
        small_arch(1),
        MachineOptions::default(),
    )
    .unwrap();
    m.write_gmem(105, &[7, 8]).unwrap();
    assert_eq!(m.run(), RunOutcome::Finished);
    assert_eq!(&m.lmem(0)[15..17], &[7, 8]);
}

// ---- vector ops ------------------------------------------------------------------------

#[test]
fn vvsub() {
    let mut insts = bases(0, 16, 32);
    insts.push(bin(BinVecOp::Vvsub, 3, off(0, 0)));
    check_lmem(
        insts,
        &[(0, &[5, 0x80, 0]), (16, &[7, 1, 0x80])],
        &[(32, &[0xfe, 0x7f, 0x80])],
    );
}

#[test]
fn vvmul_writes_obiw() {
    let mut insts = vec![setbw(8, 16)];
    insts.extend(bases(0, 16, 32));
    insts.push(bin(BinVecOp::Vvmul, 2, off(0, 0)));
    // -128 · -128 = 16384 = 0x4000; 100 · -3 = -300 = 0xfed4.
    check_lmem(
        insts,
        &[(0, &[0x80, 100]), (16, &[0x80, 0xfd])],
        &[(32, &[0x00, 0x40, 0xd4, 0xfe])],
    );
}

#[test]
fn vvdmul_writes_one_element_without_offset() {
    let mut insts = vec![setbw(8, 16)];
    insts.extend(bases(0, 16, 32));
    // rd's select bit is set, but vvdmul's destination takes no offset; rs1 moves by one.
    insts.push(bin(BinVecOp::Vvdmul, 3, off(3, 1)));
    // A = [2, 3, 4] (from offset 1), B = [4, 5, 6]: 8 + 15 + 24 = 47.
    check_lmem(
        insts,
        &[(0, &[99, 2, 3, 4]), (16, &[4, 5, 6])],
        &[(32, &[47, 0])],
    );
}

#[test]
fn vvmax() {
    let mut insts = bases(0, 16, 32);
    insts.push(bin(BinVecOp::Vvmax, 3, off(0, 0)));
    check_lmem(
        insts,
        &[(0, &[0xff, 5, 0x80]), (16, &[0xfe, 9, 0x81])],
        &[(32, &[0xff, 9, 0x81])],
    );
}

#[test]
fn vvsll() {
    let mut insts = vec![setbw(8, 16)];
    insts.extend(bases(0, 16, 32));
    insts.push(bin(BinVecOp::Vvsll, 4, off(0, 0)));
    // 1<<2 = 4; -1<<0 = -1; 3<<64 = 0 (shifted out); 100<<9 = 51200 wraps to -14336 (0xc800).
    check_lmem(
        insts,
        &[(0, &[1, 0xff, 3, 100]), (16, &[2, 0, 64, 9])],
        &[(32, &[4, 0, 0xff, 0xff, 0, 0, 0x00, 0xc8])],
    );
}

#[test]
fn vvsra() {
    let mut insts = bases(0, 16, 32);
    insts.push(bin(BinVecOp::Vvsra, 4, off(0, 0)));
    // -8>>1 = -4; 8>>2 = 2; -1>>70 = -1 (the sign); 100>>0 = 100.
    check_lmem(
        insts,
        &[(0, &[0xf8, 8, 0xff, 100]), (16, &[1, 2, 70, 0])],
        &[(32, &[0xfc, 2, 0xff, 100])],
    );
}

#[test]
fn vavg_truncates_toward_zero_with_stride_and_offset() {
    let mut insts = vec![sldi(1, 0), sldi(2, 2), sldi(3, 32)];
    // Elements at 0 + 1 (offset), stride 2: bytes 1, 3, 5.
    insts.push(Inst::Vavg {
        rd: r(3),
        rs1: r(1),
        rs2: r(2),
        len: 3,
        offset: 1,
    });
    // (-10 + -20 + 5) / 3 = -25 / 3 = -8 (toward zero).
    check_lmem(
        insts.clone(),
        &[(0, &[0, 0xf6, 0, 0xec, 0, 5])],
        &[(32, &[0xf8])],
    );
    check_lmem(insts, &[(0, &[0, 10, 0, 20, 0, 5])], &[(32, &[11])]);
}

#[test]
fn vavg_negative_stride() {
    let insts = vec![
        sldi(1, 4),
        sldi(2, -2),
        sldi(3, 32),
        Inst::Vavg {
            rd: r(3),
            rs1: r(1),
            rs2: r(2),
            len: 3,
            offset: 0,
        },
    ];
    check_lmem(insts, &[(0, &[3, 0, 6, 0, 9])], &[(32, &[6])]);
}

#[test]
fn vrelu() {
    let mut insts = bases(0, 16, 32);
    insts.push(un(UnVecOp::Vrelu, 4, off(0, 0)));
    check_lmem(insts, &[(0, &[0xff, 0, 5, 0x80])], &[(32, &[0, 0, 5, 0])]);
}

#[test]
fn vtanh_fixed_point() {
    let mut arch = small_arch(1);
    arch.frac_bits = 4;
    let mut insts = bases(0, 16, 32);
    insts.push(un(UnVecOp::Vtanh, 4, off(0, 0)));
    // x/16 = 0.5 → tanh 0.4621 · 16 = 7.39 → 7; 0 → 0; -16 → -12.19 → -12; 127 → 15.99 → 16.
    check_lmem_arch(
        arch,
        insts,
        &CrossbarExport::default(),
        &[(0, &[8, 0, 0xf0, 127])],
        &[(32, &[7, 0, 0xf4, 16])],
    );
    let mut insts = bases(0, 16, 32);
    insts.push(un(UnVecOp::Vtanh, 3, off(0, 0)));
    // F = 0: tanh(1) = 0.76 → 1, tanh(-1) → -1, tanh(0) = 0.
    check_lmem(insts, &[(0, &[1, 0xff, 0])], &[(32, &[1, 0xff, 0])]);
}

#[test]
fn vsigm_rounds_half_away_from_zero() {
    let mut insts = bases(0, 16, 32);
    insts.push(un(UnVecOp::Vsigm, 3, off(0, 0)));
    // F = 0: σ(0) = 0.5 → 1 (half away from zero); σ(-1) = 0.27 → 0; σ(100) → 1.
    check_lmem(insts, &[(0, &[0, 0xff, 100])], &[(32, &[1, 0, 1])]);
    let mut arch = small_arch(1);
    arch.frac_bits = 4;
    let mut insts = bases(0, 16, 32);
    insts.push(un(UnVecOp::Vsigm, 2, off(0, 0)));
    // F = 4: σ(0)·16 = 8; σ(1)·16 = 11.70 → 12.
    check_lmem_arch(
        arch,
        insts,
        &CrossbarExport::default(),
        &[(0, &[0, 16])],
        &[(32, &[8, 12])],
    );
}

#[test]
fn vmv_gathers_with_stride() {
    let insts = vec![
        setbw(16, 16),
        sldi(1, 0),
        sldi(2, 2),
        sldi(3, 32),
        Inst::Vmv {
            rd: r(3),
            rs1: r(1),
            rs2: r(2),
            len: 3,
        },
    ];
    check_lmem(
        insts,
        &[(0, &[1, 0, 9, 9, 2, 0, 9, 9, 3, 0x80])],
        &[(32, &[1, 0, 2, 0, 3, 0x80])],
    );
}

#[test]
fn vrsu_clamps_at_the_upper_bound_then_wraps() {
    let insts = vec![
        setbw(16, 8),
        sldi(1, 0),
        sldi(2, 100),
        sldi(3, 32),
        bin(BinVecOp::Vrsu, 3, off(0, 0)),
    ];
    // min(200, 100) = 100; min(-300, 100) = -300 wraps to -44 (0xd4); 50.
    let m = check_lmem(
        insts,
        &[(0, &[200, 0, 0xd4, 0xfe, 50, 0])],
        &[(32, &[100, 0xd4, 50])],
    );
    assert_eq!(m.stats().overflow_events, 1);
}

#[test]
fn vrsl_clamps_at_the_lower_bound_then_wraps() {
    let insts = vec![
        setbw(16, 8),
        sldi(1, 0),
        sldi(2, -10),
        sldi(3, 32),
        bin(BinVecOp::Vrsl, 3, off(0, 0)),
    ];
    // max(200, -10) = 200 wraps to -56 (0xc8); max(-300, -10) = -10; 50.
    check_lmem(
        insts,
        &[(0, &[200, 0, 0xd4, 0xfe, 50, 0])],
        &[(32, &[0xc8, 0xf6, 50])],
    );
}

#[test]
fn vrsu_widening_sign_extends() {
    let insts = vec![
        setbw(8, 32),
        sldi(1, 0),
        sldi(2, 1000),
        sldi(3, 32),
        bin(BinVecOp::Vrsu, 2, off(0, 0)),
    ];
    check_lmem(
        insts,
        &[(0, &[0xfe, 7])],
        &[(32, &[0xfe, 0xff, 0xff, 0xff, 7, 0, 0, 0])],
    );
}

// ---- transfers -------------------------------------------------------------------------

#[test]
fn ld_and_st_copy_bytes() {
    let p = program(vec![vec![
        sldi(1, 8),
        sldi(2, 1000),
        mem(MemOp::Ld, 1, 2, 3, off(0, 0)),
        sldi(3, 2000),
        mem(MemOp::St, 3, 1, 3, off(1, 4)),
    ]]);
    let mut m = Machine::new(
        &p,
        &CrossbarExport::default(),
        small_arch(1),
        MachineOptions::default(),
    )
    .unwrap();
    m.write_gmem(1000, &[0xaa, 0xbb, 0xcc]).unwrap();
    assert_eq!(m.run(), RunOutcome::Finished);
    assert_eq!(&m.lmem(0)[8..11], &[0xaa, 0xbb, 0xcc]);
    assert_eq!(
        m.read_gmem(2000, 8).unwrap(),
        vec![0, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0]
    );
    assert_eq!(m.stats().gmem_touched_bytes, 2007);
}

#[test]
fn lldi_sets_bytes_with_unconditional_offset() {
    check_lmem(
        vec![sldi(1, 4), lldi(1, 0xab, 3, 2)],
        &[],
        &[(6, &[0xab; 3])],
    );
}

#[test]
fn lldi_counts_float_immediates() {
    let m = check_lmem(
        vec![Inst::Lldi {
            rd: r(0),
            imm: 0,
            size: 1,
            offset: 0,
            from_float: true,
        }],
        &[],
        &[],
    );
    assert_eq!(m.stats().float_lldi, 1);
}

#[test]
fn lmv_copies_with_offsets() {
    check_lmem(
        vec![sldi(1, 20), sldi(2, 0), mem(MemOp::Lmv, 1, 2, 3, off(2, 1))],
        &[(0, &[1, 2, 3, 4])],
        &[(20, &[2, 3, 4])],
    );
}

// ---- mvmul -----------------------------------------------------------------------------

/// One core, arrays [[1,2],[3,4]] and [[5,6],[7,8]]; group 0 = arrays [1, 0], 2 rows, 3 cols:
/// W = [[5, 6, 1], [7, 8, 3]].
fn mv_export() -> CrossbarExport {
    let cells = Array3::from_shape_vec((2, 2, 2), vec![1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    let mut x = CrossbarExport::default();
    x.cores.insert(
        0,
        CoreCrossbars {
            mbiw: 8,
            cells,
            groups: vec![ArrayGroup {
                group: 0,
                arrays: vec![1, 0],
                rows: 2,
                cols: 3,
            }],
        },
    );
    x
}

fn mvmul(relu: bool, mbiw: u32, group: u32) -> Inst {
    Inst::Mvmul {
        rd: r(3),
        rs1: r(1),
        mbiw: w(mbiw),
        relu,
        group,
    }
}

#[test]
fn mvmul_uses_the_export_group() {
    let mut insts = vec![setbw(8, 16)];
    insts.extend(bases(0, 0, 32));
    insts.push(mvmul(false, 8, 0));
    // x = [1, -2]: y = [5 - 14, 6 - 16, 1 - 6] = [-9, -10, -5].
    check_lmem_arch(
        small_arch(1),
        insts,
        &mv_export(),
        &[(0, &[1, 0xfe])],
        &[(32, &[0xf7, 0xff, 0xf6, 0xff, 0xfb, 0xff])],
    );
}

#[test]
fn mvmul_relu_and_wrapping() {
    let mut insts = bases(0, 0, 32);
    insts.push(mvmul(true, 8, 0));
    check_lmem_arch(
        small_arch(1),
        insts,
        &mv_export(),
        &[(0, &[1, 0xfe])],
        &[(32, &[0, 0, 0])],
    );
    let mut insts = bases(0, 0, 32);
    insts.push(mvmul(false, 5, 0));
    // x = [100, 100]: y = [1200, 1400, 400] wrap in 8 bits to [-80, 120, -112].
    let m = check_lmem_arch(
        small_arch(1),
        insts,
        &mv_export(),
        &[(0, &[100, 100])],
        &[(32, &[0xb0, 0x78, 0x90])],
    );
    assert_eq!(m.stats().overflow_events, 3);
}

#[test]
fn mvmul_exact_in_i64_and_i128() {
    for rows in [1u32, 2] {
        let big = i32::MAX;
        let mut arch = small_arch(1);
        arch.array_rows = 2;
        let cells = Array3::from_elem((2, 2, 2), big);
        let mut x = CrossbarExport::default();
        x.cores.insert(
            0,
            CoreCrossbars {
                mbiw: 32,
                cells,
                groups: vec![ArrayGroup {
                    group: 0,
                    arrays: vec![0],
                    rows,
                    cols: 1,
                }],
            },
        );
        let mut insts = vec![setbw(32, 32)];
        insts.extend(bases(0, 0, 32));
        insts.push(mvmul(false, 32, 0));
        let xin: Vec<u8> = [big, big].iter().flat_map(|v| v.to_le_bytes()).collect();
        let exact = big as i128 * big as i128 * rows as i128;
        let stored = (exact as i64 as i32).to_le_bytes();
        check_lmem_arch(arch, insts, &x, &[(0, &xin)], &[(32, &stored)]);
    }
    // i128: x = i32::MIN in 4 rows of i32::MIN weights overflows i64.
    let mut arch = small_arch(1);
    arch.array_rows = 4;
    let cells = Array3::from_elem((2, 4, 2), i32::MIN);
    let mut x = CrossbarExport::default();
    x.cores.insert(
        0,
        CoreCrossbars {
            mbiw: 32,
            cells,
            groups: vec![ArrayGroup {
                group: 0,
                arrays: vec![0],
                rows: 4,
                cols: 1,
            }],
        },
    );
    let mut insts = vec![setbw(32, 32)];
    insts.extend(bases(0, 0, 32));
    insts.push(mvmul(false, 32, 0));
    let xin: Vec<u8> = [i32::MIN; 4].iter().flat_map(|v| v.to_le_bytes()).collect();
    let m = check_lmem_arch(arch, insts, &x, &[(0, &xin)], &[(32, &[0, 0, 0, 0])]);
    assert_eq!(m.stats().overflows[0].value, 4 * (1i128 << 62));
}

#[test]
fn mvmul_array_count_zero_and_random_cells() {
    let arch = small_arch(1);
    let p = Program {
        cores: vec![vec![
            sldi(1, 0),
            sldi(3, 16),
            mvmul(false, 8, 2),
            sldi(3, 32),
            mvmul(false, 8, 1),
        ]],
        groups: GroupSpec::ArrayCount,
        ..Default::default()
    };
    // Zero cells: both outputs zero.
    let (o, m) = run_with(
        &p,
        &CrossbarExport::default(),
        arch,
        MachineOptions::default(),
        &[(0, &[3, 0xfd])],
    );
    assert_eq!(o, RunOutcome::Finished);
    assert_eq!(&m.lmem(0)[16..20], &[0; 4]);
    // Random cells: deterministic per seed, and group 1 (one array) is the first columns of group 2.
    let opts = MachineOptions {
        cell_fill: CellFill::Random(7),
        ..Default::default()
    };
    let (o, m1) = run_with(
        &p,
        &CrossbarExport::default(),
        arch,
        opts,
        &[(0, &[3, 0xfd])],
    );
    assert_eq!(o, RunOutcome::Finished);
    let (_, m2) = run_with(
        &p,
        &CrossbarExport::default(),
        arch,
        opts,
        &[(0, &[3, 0xfd])],
    );
    assert_eq!(m1.lmem(0), m2.lmem(0));
    assert_eq!(&m1.lmem(0)[16..18], &m1.lmem(0)[32..34]);
    assert_ne!(
        &m1.lmem(0)[16..20],
        &[0; 4],
        "random cells should not all vanish"
    );
}

#[test]
fn mvmul_array_group_map_groups_are_consecutive_arrays() {
    let arch = small_arch(1);
    let p = Program {
        cores: vec![vec![
            sldi(1, 0),
            sldi(3, 16),
            mvmul(false, 8, 0),
            sldi(3, 32),
            mvmul(false, 8, 1),
        ]],
        groups: GroupSpec::ArrayGroupMap(vec![vec![1, 1]]),
        ..Default::default()
    };
    let opts = MachineOptions {
        cell_fill: CellFill::Random(3),
        ..Default::default()
    };
    let (o, m) = run_with(&p, &CrossbarExport::default(), arch, opts, &[(0, &[1, 0])]);
    assert_eq!(o, RunOutcome::Finished);
    // Same cells as ArrayCount group 2 (arrays 0 and 1 side by side).
    let q = Program {
        cores: vec![vec![sldi(1, 0), sldi(3, 16), mvmul(false, 8, 2)]],
        groups: GroupSpec::ArrayCount,
        ..Default::default()
    };
    let (_, n) = run_with(&q, &CrossbarExport::default(), arch, opts, &[(0, &[1, 0])]);
    assert_eq!(&m.lmem(0)[16..18], &n.lmem(0)[16..18]);
    assert_eq!(&m.lmem(0)[32..34], &n.lmem(0)[18..20]);
}

#[test]
fn mvmul_weight_must_fit_mbiw() {
    let mut insts = bases(0, 0, 32);
    insts.push(mvmul(false, 3, 0));
    check_fault_with(
        &program(vec![insts]),
        &mv_export(),
        small_arch(1),
        &[],
        0,
        3,
        FaultKind::WeightTooWide {
            group: 0,
            row: 0,
            col: 0,
            value: 5,
            mbiw: 3,
        },
    );
}

#[test]
fn vavg_zero_stride_with_a_huge_len_is_exact_and_quick() {
    let insts = vec![
        sldi(1, 0),
        sldi(2, 0),
        sldi(3, 32),
        Inst::Vavg {
            rd: r(3),
            rs1: r(1),
            rs2: r(2),
            len: u32::MAX,
            offset: 0,
        },
    ];
    check_lmem(insts, &[(0, &[0xf9])], &[(32, &[0xf9])]);
}
