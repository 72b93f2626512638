//! Every run-time fault kind (each [UB → fault] of isa.md among them), set-up errors, the
//! trace and the dump.

mod machine_util;

use machine_util::*;
use ndarray::Array3;
use pimdiff_isa::inst::{BinVecOp, MemOp, UnVecOp};
use pimdiff_isa::machine::{FaultKind, Machine, MachineOptions, Operand, RunOutcome, SetupError};
use pimdiff_isa::xbar::{ArrayGroup, CoreCrossbars};
use pimdiff_isa::{Arch, CrossbarExport, GroupSpec, Inst, Program};

// ---- ranges ----------------------------------------------------------------------------

#[test]
fn lmem_range_past_the_end() {
    // 64-byte LMem: [60, 68) does not fit.
    check_fault(
        vec![sldi(3, 60), bin(BinVecOp::Vvadd, 8, off(0, 0))],
        1,
        FaultKind::LmemRange {
            operand: Operand::Rd,
            start: 60,
            len: 8,
            size: 64,
        },
    );
}

#[test]
fn lmem_range_below_zero_through_a_negative_offset() {
    check_fault(
        vec![setbw(16, 16), bin(BinVecOp::Vvadd, 1, off(2, -1))],
        1,
        FaultKind::LmemRange {
            operand: Operand::Rs1,
            start: -2,
            len: 2,
            size: 64,
        },
    );
}

#[test]
fn register_addresses_are_unsigned() {
    // r1 = -1 is address 4294967295, not -1.
    check_fault(
        vec![sldi(1, -1), un(UnVecOp::Vrelu, 1, off(0, 0))],
        1,
        FaultKind::LmemRange {
            operand: Operand::Rs1,
            start: u32::MAX as i64,
            len: 1,
            size: 64,
        },
    );
}

#[test]
fn gmem_range_past_4_gib() {
    check_fault(
        vec![sldi(2, -1), mem(MemOp::Ld, 0, 2, 2, off(0, 0))],
        1,
        FaultKind::GmemRange {
            operand: Operand::Rs1,
            start: u32::MAX as i64,
            len: 2,
        },
    );
    check_fault(
        vec![
            sldi(1, -2),
            Inst::Sld {
                rd: r(0),
                rs1: r(1),
                offset: 0,
            },
        ],
        1,
        FaultKind::GmemRange {
            operand: Operand::Rs1,
            start: u32::MAX as i64 - 1,
            len: 4,
        },
    );
    check_fault(
        vec![mem(MemOp::St, 0, 1, 1, off(1, -1))],
        0,
        FaultKind::GmemRange {
            operand: Operand::Rd,
            start: -1,
            len: 1,
        },
    );
}

#[test]
fn zero_length_ranges_touch_nothing() {
    check_lmem(
        vec![
            sldi(1, -1),
            lldi(1, 5, 0, 0),
            mem(MemOp::Ld, 1, 1, 0, off(0, 0)),
        ],
        &[],
        &[],
    );
}

#[test]
fn send_and_recv_ranges() {
    check_fault_with(
        &program(vec![vec![send(0, 1, 8, 60)], vec![]]),
        &CrossbarExport::default(),
        small_arch(2),
        &[],
        0,
        0,
        FaultKind::LmemRange {
            operand: Operand::Rs1,
            start: 60,
            len: 8,
            size: 64,
        },
    );
}

// ---- undefined behaviour ---------------------------------------------------------------

#[test]
fn vavg_with_len_zero() {
    check_fault(
        vec![Inst::Vavg {
            rd: r(0),
            rs1: r(0),
            rs2: r(0),
            len: 0,
            offset: 0,
        }],
        0,
        FaultKind::VavgZeroLength,
    );
}

#[test]
fn negative_shift() {
    for op in [BinVecOp::Vvsll, BinVecOp::Vvsra] {
        let mut insts = bases(0, 16, 32);
        insts.push(bin(op, 2, off(0, 0)));
        check_fault_with(
            &program(vec![insts]),
            &CrossbarExport::default(),
            small_arch(1),
            &[(16, &[0, 0xff])],
            0,
            3,
            FaultKind::NegativeShift {
                index: 1,
                amount: -1,
            },
        );
    }
}

#[test]
fn vmv_overlap() {
    // Gather 3 elements from 0 with stride 2 into 4: element 2 (byte 4) is inside [4, 7).
    check_fault(
        vec![
            sldi(2, 2),
            sldi(3, 4),
            Inst::Vmv {
                rd: r(3),
                rs1: r(1),
                rs2: r(2),
                len: 3,
            },
        ],
        2,
        FaultKind::VmvOverlap {
            index: 2,
            src: 4,
            width: 1,
            dst: 4,
            dst_len: 3,
        },
    );
    // Elements skip over the destination: no overlap.
    check_lmem(
        vec![
            sldi(2, 4),
            sldi(3, 1),
            Inst::Vmv {
                rd: r(3),
                rs1: r(1),
                rs2: r(2),
                len: 2,
            },
        ],
        &[(0, &[7, 0, 0, 0, 8])],
        &[(1, &[7, 8])],
    );
}

#[test]
fn lmv_overlap() {
    check_fault(
        vec![sldi(1, 2), mem(MemOp::Lmv, 1, 0, 4, off(0, 0))],
        1,
        FaultKind::LmvOverlap {
            src: 0,
            dst: 2,
            size: 4,
        },
    );
}

#[test]
fn resize_overlap_only_when_the_byte_width_grows() {
    for op in [BinVecOp::Vrsu, BinVecOp::Vrsl] {
        check_fault(
            vec![
                setbw(8, 16),
                sldi(3, 1),
                Inst::BinVec {
                    op,
                    rd: r(3),
                    rs1: r(1),
                    rs2: r(2),
                    len: 2,
                    offset: off(0, 0),
                },
            ],
            2,
            FaultKind::ResizeOverlap {
                src: 0,
                src_len: 2,
                dst: 1,
                dst_len: 4,
                ibyw: 1,
                obyw: 2,
            },
        );
    }
    // In place while narrowing is defined: inputs are read before outputs are written.
    check_lmem(
        vec![
            setbw(16, 8),
            sldi(2, 127),
            Inst::BinVec {
                op: BinVecOp::Vrsu,
                rd: r(1),
                rs1: r(1),
                rs2: r(2),
                len: 2,
                offset: off(0, 0),
            },
        ],
        &[(0, &[5, 0, 6, 1])],
        &[(0, &[5, 127])],
    );
}

// ---- groups ----------------------------------------------------------------------------

fn mvmul(group: u32) -> Inst {
    Inst::Mvmul {
        rd: r(3),
        rs1: r(1),
        mbiw: w(8),
        relu: false,
        group,
    }
}

fn unknown(p: &Program, x: &CrossbarExport, group: u32, reason: &str) {
    check_fault_with(
        p,
        x,
        small_arch(1),
        &[],
        0,
        0,
        FaultKind::UnknownGroup {
            group,
            reason: reason.into(),
        },
    );
}

#[test]
fn unknown_groups() {
    let export_only = program(vec![vec![mvmul(0)]]);
    unknown(
        &export_only,
        &CrossbarExport::default(),
        0,
        "core 0 has no crossbar export and the program has no array group map",
    );
    let mut x = CrossbarExport::default();
    x.cores.insert(
        0,
        CoreCrossbars {
            mbiw: 8,
            cells: Array3::zeros((2, 2, 2)),
            groups: vec![ArrayGroup {
                group: 4,
                arrays: vec![0],
                rows: 2,
                cols: 2,
            }],
        },
    );
    unknown(
        &program(vec![vec![mvmul(3)]]),
        &x,
        3,
        "the crossbar export of core 0 does not list it",
    );
    let count = |g| Program {
        cores: vec![vec![mvmul(g)]],
        groups: GroupSpec::ArrayCount,
        ..Default::default()
    };
    unknown(
        &count(0),
        &CrossbarExport::default(),
        0,
        "as an array count it must be 1..=2 (arrays_per_core)",
    );
    unknown(
        &count(3),
        &CrossbarExport::default(),
        3,
        "as an array count it must be 1..=2 (arrays_per_core)",
    );
    let map = Program {
        cores: vec![vec![mvmul(1)]],
        groups: GroupSpec::ArrayGroupMap(vec![vec![2]]),
        ..Default::default()
    };
    unknown(
        &map,
        &CrossbarExport::default(),
        1,
        "core 0's array_group_map lists 1 groups",
    );
}

// ---- set-up errors ---------------------------------------------------------------------

fn setup(p: &Program, x: &CrossbarExport, arch: Arch) -> Option<SetupError> {
    Machine::new(p, x, arch, MachineOptions::default()).err()
}

fn one_group(cells: Array3<i32>, group: ArrayGroup) -> CrossbarExport {
    let mut x = CrossbarExport::default();
    x.cores.insert(
        0,
        CoreCrossbars {
            mbiw: 8,
            cells,
            groups: vec![group],
        },
    );
    x
}

#[test]
fn setup_rejects_exports_that_do_not_fit() {
    let p = program(vec![vec![]]);
    let a = small_arch(1);
    let g = |arrays: Vec<u32>, rows, cols| ArrayGroup {
        group: 0,
        arrays,
        rows,
        cols,
    };
    assert_eq!(
        setup(
            &p,
            &one_group(Array3::zeros((2, 2, 3)), g(vec![0], 2, 2)),
            a
        ),
        Some(SetupError::CellsShape {
            core: 0,
            found: [2, 2, 3],
            expected: [2, 2, 2]
        })
    );
    assert_eq!(
        setup(
            &p,
            &one_group(Array3::zeros((2, 2, 2)), g(vec![0, 2], 2, 2)),
            a
        ),
        Some(SetupError::ArrayIndex {
            core: 0,
            group: 0,
            array: 2,
            arrays_per_core: 2
        })
    );
    assert_eq!(
        setup(
            &p,
            &one_group(Array3::zeros((2, 2, 2)), g(vec![0], 3, 2)),
            a
        ),
        Some(SetupError::GroupRows {
            core: 0,
            group: 0,
            rows: 3,
            array_rows: 2
        })
    );
    assert_eq!(
        setup(
            &p,
            &one_group(Array3::zeros((2, 2, 2)), g(vec![0], 2, 3)),
            a
        ),
        Some(SetupError::GroupCols {
            core: 0,
            group: 0,
            cols: 3,
            arrays: 1,
            limit: 2
        })
    );
    let mut dup = one_group(Array3::zeros((2, 2, 2)), g(vec![0], 2, 2));
    dup.cores.get_mut(&0).unwrap().groups.push(g(vec![1], 1, 1));
    assert_eq!(
        setup(&p, &dup, a),
        Some(SetupError::DuplicateGroup { core: 0, group: 0 })
    );
    let mut far = CrossbarExport::default();
    far.cores.insert(
        5,
        CoreCrossbars {
            mbiw: 8,
            cells: Array3::zeros((2, 2, 2)),
            groups: vec![],
        },
    );
    assert_eq!(
        setup(&p, &far, a),
        Some(SetupError::ExportCore { core: 5, cores: 1 })
    );
}

#[test]
fn setup_rejects_bad_architectures() {
    let p = program(vec![vec![], vec![]]);
    let x = CrossbarExport::default();
    assert_eq!(
        setup(&p, &x, small_arch(3)),
        Some(SetupError::CoreCount {
            program: 2,
            arch: 3
        })
    );
    let mut a = small_arch(2);
    a.mesh_cols = 1;
    assert_eq!(
        setup(&p, &x, a),
        Some(SetupError::BadArch {
            field: "mesh",
            value: 1,
            reason: "rows × cols must hold every core"
        })
    );
    let mut a = small_arch(2);
    a.frac_bits = 63;
    assert_eq!(
        setup(&p, &x, a),
        Some(SetupError::BadArch {
            field: "frac_bits",
            value: 63,
            reason: "must be at most 62"
        })
    );
    let map = Program {
        cores: vec![vec![]],
        groups: GroupSpec::ArrayGroupMap(vec![vec![2, 1]]),
        ..Default::default()
    };
    assert_eq!(
        setup(&map, &x, small_arch(1)),
        Some(SetupError::GroupMapTooLarge {
            core: 0,
            used: 3,
            arrays_per_core: 2
        })
    );
}

#[test]
fn host_access_errors() {
    let p = program(vec![vec![]]);
    let mut m = Machine::new(
        &p,
        &CrossbarExport::default(),
        small_arch(1),
        MachineOptions::default(),
    )
    .unwrap();
    assert_eq!(
        m.write_gmem(u32::MAX, &[1, 2]),
        Err(SetupError::GmemRange {
            addr: u32::MAX,
            len: 2
        })
    );
    assert_eq!(m.read_gmem(u32::MAX, 1).unwrap(), vec![0]);
    assert_eq!(
        m.write_lmem(0, 63, &[1, 2]),
        Err(SetupError::LmemRange {
            core: 0,
            addr: 63,
            len: 2,
            size: 64
        })
    );
    assert_eq!(
        m.write_lmem(1, 0, &[1]),
        Err(SetupError::NoSuchCore { core: 1, cores: 1 })
    );
}

#[test]
fn arch_resolution_prefers_flags_then_program_then_defaults() {
    let hints = pimdiff_isa::ArchHints {
        array_rows: Some(64),
        local_memory_bytes: Some(4096),
        ..Default::default()
    };
    let flags = pimdiff_isa::ArchHints {
        local_memory_bytes: Some(128),
        ..Default::default()
    };
    let a = Arch::resolve(&hints, 84, &flags);
    assert_eq!(
        (a.array_rows, a.array_cols, a.local_memory_bytes),
        (64, Arch::DEFAULT_ARRAY_COLS, 128)
    );
    assert_eq!((a.mesh_rows, a.mesh_cols), (9, 10));
    assert_eq!(Arch::default_mesh(1), [1, 1]);
    assert_eq!(Arch::default_mesh(4), [2, 2]);
}

// ---- trace and dump --------------------------------------------------------------------

#[test]
fn trace_records_changed_registers_and_bytes() {
    let p = program(vec![vec![
        sldi(1, 4),
        lldi(1, 7, 2, 0),
        lldi(1, 7, 2, 0),
        mem(MemOp::St, 0, 1, 3, off(0, 0)),
        sync(2, 0),
    ]]);
    let opts = MachineOptions {
        trace: true,
        ..Default::default()
    };
    let mut m = Machine::new(&p, &CrossbarExport::default(), small_arch(1), opts).unwrap();
    assert_eq!(m.run(), RunOutcome::Finished);
    let t = m.trace().unwrap();
    assert_eq!(t.entries.len(), 5);
    let e = &t.entries[0];
    assert_eq!(
        (
            e.pc,
            e.regs.len(),
            e.regs[0].reg,
            e.regs[0].old,
            e.regs[0].new
        ),
        (0, 1, 1, 0, 4)
    );
    assert_eq!(
        t.entries[1].lmem,
        vec![pimdiff_isa::machine::MemChange {
            addr: 4,
            old: vec![0, 0],
            new: vec![7, 7]
        }]
    );
    assert!(
        t.entries[2].lmem.is_empty(),
        "rewriting the same bytes changes nothing"
    );
    assert_eq!(
        t.entries[3].gmem,
        vec![pimdiff_isa::machine::MemChange {
            addr: 0,
            old: vec![0, 0],
            new: vec![7, 7]
        }]
    );
    assert_eq!(
        t.entries[4].events,
        vec![pimdiff_isa::machine::EventChange {
            core: 0,
            event: 2,
            old: 0,
            new: 1
        }]
    );
}

#[test]
fn dump_writes_the_final_state_even_after_a_fault() {
    let p = program(vec![
        vec![
            sldi(1, -3),
            lldi(0, 9, 1, 0),
            mem(MemOp::St, 0, 0, 1, off(1, 5)),
            Inst::Vavg {
                rd: r(0),
                rs1: r(0),
                rs2: r(0),
                len: 0,
                offset: 0,
            },
        ],
        vec![],
    ]);
    let mut m = Machine::new(
        &p,
        &CrossbarExport::default(),
        small_arch(2),
        MachineOptions::default(),
    )
    .unwrap();
    assert!(matches!(m.run(), RunOutcome::Fault(_)));
    let dir = tempfile::tempdir().unwrap();
    m.dump(dir.path()).unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("gmem.bin")).unwrap(),
        vec![0, 0, 0, 0, 0, 9]
    );
    let lmem = std::fs::read(dir.path().join("core_0.lmem.bin")).unwrap();
    assert_eq!((lmem.len(), lmem[0]), (64, 9));
    let regs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("core_0.regs.json")).unwrap())
            .unwrap();
    assert_eq!(regs["r"][1], -3);
    assert_eq!(
        (
            regs["pc"].as_u64(),
            regs["finished"].as_bool(),
            regs["ibiw"].as_u64()
        ),
        (Some(3), Some(false), Some(8))
    );
    let regs1: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("core_1.regs.json")).unwrap())
            .unwrap();
    assert_eq!(regs1["finished"].as_bool(), Some(true));
    let stats: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("stats.json")).unwrap()).unwrap();
    assert_eq!(stats["instructions"], 3);
    assert_eq!(stats["cores"][0]["by_opcode"]["lldi"], 1);
    assert_eq!(stats["gmem_touched_bytes"], 6);
}

#[test]
fn fault_report_is_readable() {
    let (o, _) = run_cores(
        vec![vec![Inst::Vavg {
            rd: r(0),
            rs1: r(0),
            rs2: r(0),
            len: 0,
            offset: 0,
        }]],
        MachineOptions::default(),
    );
    let text = o.to_string();
    assert!(text.starts_with("fault on core 0 at pc 0: "), "{text}");
    assert!(
        text.ends_with("vavg with len 0 (division by zero)"),
        "{text}"
    );
}
