//! Shared helpers for the machine tests: instruction builders, a small architecture, and
//! `check`-style runners that compare exact bytes.
#![allow(dead_code)]

use pimdiff_isa::inst::{BinVecOp, MemOp, Offset, ScalarImmOp, ScalarOp, UnVecOp};
use pimdiff_isa::machine::{Machine, MachineOptions, RunOutcome};
use pimdiff_isa::{Arch, CrossbarExport, GroupSpec, Inst, Program, Reg, Width};
use proptest::prelude::*;

pub fn r(i: u32) -> Reg {
    Reg::new(i).unwrap()
}

pub fn w(bits: u32) -> Width {
    Width::new(bits).unwrap()
}

pub fn off(select: u8, value: i32) -> Offset {
    Offset { select, value }
}

pub fn sldi(rd: u32, imm: i32) -> Inst {
    Inst::Sldi { rd: r(rd), imm }
}

pub fn setbw(i: u32, o: u32) -> Inst {
    Inst::Setbw {
        ibiw: w(i),
        obiw: w(o),
    }
}

pub fn scalar(op: ScalarOp, rd: u32, rs1: u32, rs2: u32) -> Inst {
    Inst::Scalar {
        op,
        rd: r(rd),
        rs1: r(rs1),
        rs2: r(rs2),
    }
}

pub fn scalar_imm(op: ScalarImmOp, rd: u32, rs1: u32, imm: i32) -> Inst {
    Inst::ScalarImm {
        op,
        rd: r(rd),
        rs1: r(rs1),
        imm,
    }
}

/// `op rd=r3, rs1=r1, rs2=r2, len, offset`.
pub fn bin(op: BinVecOp, len: u32, offset: Offset) -> Inst {
    Inst::BinVec {
        op,
        rd: r(3),
        rs1: r(1),
        rs2: r(2),
        len,
        offset,
    }
}

/// `op rd=r3, rs1=r1, len, offset`.
pub fn un(op: UnVecOp, len: u32, offset: Offset) -> Inst {
    Inst::UnVec {
        op,
        rd: r(3),
        rs1: r(1),
        len,
        offset,
    }
}

pub fn mem(op: MemOp, rd: u32, rs1: u32, size: u32, offset: Offset) -> Inst {
    Inst::Mem {
        op,
        rd: r(rd),
        rs1: r(rs1),
        size,
        offset,
    }
}

pub fn lldi(rd: u32, imm: u8, size: u32, offset: i32) -> Inst {
    Inst::Lldi {
        rd: r(rd),
        imm,
        size,
        offset,
        from_float: false,
    }
}

pub fn send(rs1: u32, core: u32, size: u32, offset: i32) -> Inst {
    Inst::Send {
        rs1: r(rs1),
        core,
        size,
        offset,
    }
}

pub fn recv(rd: u32, core: u32, size: u32, offset: i32) -> Inst {
    Inst::Recv {
        rd: r(rd),
        core,
        size,
        offset,
    }
}

pub fn wait(event: u32, value: i32) -> Inst {
    Inst::Wait {
        event: r(event),
        value,
    }
}

pub fn sync(event: u32, core: u32) -> Inst {
    Inst::Sync {
        event: r(event),
        core,
    }
}

/// The registers used as A (r1), B (r2) and D (r3) base addresses.
pub fn bases(a: i32, b: i32, d: i32) -> Vec<Inst> {
    vec![sldi(1, a), sldi(2, b), sldi(3, d)]
}

/// A program with one stream per core, groups from the export only.
pub fn program(cores: Vec<Vec<Inst>>) -> Program {
    Program {
        cores,
        groups: GroupSpec::ExportOnly,
        ..Default::default()
    }
}

/// A small architecture: 64 bytes of LMem, 2 arrays of 2 × 2 cells.
pub fn small_arch(cores: u32) -> Arch {
    Arch {
        cores,
        arrays_per_core: 2,
        array_rows: 2,
        array_cols: 2,
        local_memory_bytes: 64,
        mesh_rows: 1,
        mesh_cols: cores,
        frac_bits: 0,
    }
}

pub fn run_with(
    p: &Program,
    x: &CrossbarExport,
    arch: Arch,
    opts: MachineOptions,
    lmem: &[(u32, &[u8])],
) -> (RunOutcome, Machine<'static>) {
    // Tests leak their small programs so the machine can be returned with them.
    let p: &'static Program = Box::leak(Box::new(p.clone()));
    let mut m = Machine::new(p, x, arch, opts).expect("setup");
    for &(addr, bytes) in lmem {
        m.write_lmem(0, addr, bytes).unwrap();
    }
    let outcome = m.run();
    (outcome, m)
}

/// Runs `insts` on one core of [`small_arch`] (with `frac_bits`) after writing `init` into its
/// LMem, expects it to finish, and compares the whole LMem with `init` overlaid by `expect`.
/// Returns the machine for further checks (registers, statistics).
pub fn check_lmem_arch(
    arch: Arch,
    insts: Vec<Inst>,
    x: &CrossbarExport,
    init: &[(u32, &[u8])],
    expect: &[(u32, &[u8])],
) -> Machine<'static> {
    let (outcome, m) = run_with(
        &program(vec![insts]),
        x,
        arch,
        MachineOptions::default(),
        init,
    );
    assert_eq!(outcome, RunOutcome::Finished, "{outcome}");
    let mut image = vec![0u8; arch.local_memory_bytes as usize];
    for &(addr, bytes) in init.iter().chain(expect) {
        image[addr as usize..addr as usize + bytes.len()].copy_from_slice(bytes);
    }
    assert_eq!(m.lmem(0), &image[..], "local memory differs");
    m
}

pub fn check_lmem(
    insts: Vec<Inst>,
    init: &[(u32, &[u8])],
    expect: &[(u32, &[u8])],
) -> Machine<'static> {
    check_lmem_arch(
        small_arch(1),
        insts,
        &CrossbarExport::default(),
        init,
        expect,
    )
}

/// Runs a program of several cores on [`small_arch`] and returns the outcome and machine.
pub fn run_cores(cores: Vec<Vec<Inst>>, opts: MachineOptions) -> (RunOutcome, Machine<'static>) {
    let n = cores.len() as u32;
    run_with(
        &program(cores),
        &CrossbarExport::default(),
        small_arch(n),
        opts,
        &[],
    )
}

/// Runs one core and expects a fault of exactly `kind` at `pc`.
pub fn check_fault(insts: Vec<Inst>, pc: u32, kind: pimdiff_isa::machine::FaultKind) {
    check_fault_with(
        &program(vec![insts]),
        &CrossbarExport::default(),
        small_arch(1),
        &[],
        0,
        pc,
        kind,
    )
}

pub fn check_fault_with(
    p: &Program,
    x: &CrossbarExport,
    arch: Arch,
    init: &[(u32, &[u8])],
    core: u32,
    pc: u32,
    kind: pimdiff_isa::machine::FaultKind,
) {
    let (outcome, _) = run_with(p, x, arch, MachineOptions::default(), init);
    match outcome {
        RunOutcome::Fault(f) => {
            assert_eq!((f.core, f.pc), (core, pc), "{f}");
            assert_eq!(f.inst, p.cores[core as usize][pc as usize]);
            assert_eq!(f.kind, kind, "{f}");
        }
        other => panic!("expected a fault, got {other}"),
    }
}

/// Programs that mostly run: `1..=max_cores` cores of up to `max_len` instructions on
/// [`small_arch`] (64 bytes of local memory) with an `array_group_map` of two 1-array groups,
/// local addresses and sizes kept inside the memory, global addresses in `0..64` (shared by
/// every core), and sends, receives, syncs and waits between the cores. Faults and deadlocks
/// still happen, but most instructions execute.
pub fn runnable_program(max_cores: u32, max_len: usize) -> impl Strategy<Value = Program> {
    (1..=max_cores).prop_flat_map(move |cores| {
        let stream = move |core: u32| {
            (
                proptest::collection::vec(0i32..=48, 4),
                0i32..=2,
                proptest::collection::vec(runnable_inst(core, cores), 0..=max_len),
            )
                .prop_map(|(bases, stride, body)| {
                    let mut insts: Vec<Inst> =
                        (1..=4).map(|i| sldi(i, bases[i as usize - 1])).collect();
                    insts.push(sldi(5, stride));
                    insts.extend(body);
                    insts
                })
        };
        let streams: Vec<_> = (0..cores).map(stream).collect();
        streams.prop_map(move |streams| Program {
            cores: streams,
            groups: GroupSpec::ArrayGroupMap(vec![vec![1, 1]; cores as usize]),
            ..Default::default()
        })
    })
}

/// An instruction of core `core` for [`runnable_program`]; messages are 2 bytes, so sizes
/// always match.
fn runnable_inst(core: u32, cores: u32) -> impl Strategy<Value = Inst> {
    use proptest::sample::select;
    let a = || (1u32..=4).prop_map(r);
    let bin = select(vec![
        BinVecOp::Vvadd,
        BinVecOp::Vvsub,
        BinVecOp::Vvmul,
        BinVecOp::Vvdmul,
        BinVecOp::Vvmax,
        BinVecOp::Vvsra,
        BinVecOp::Vrsu,
        BinVecOp::Vrsl,
    ]);
    let un = select(vec![UnVecOp::Vrelu, UnVecOp::Vtanh, UnVecOp::Vsigm]);
    let mem_op = select(vec![MemOp::Ld, MemOp::St, MemOp::Lmv]);
    // Another core; a core alone draws `nop`s instead of messages.
    let peer = (1..cores.max(2)).prop_map(move |d| (core + d) % cores);
    let alone = cores == 1;
    prop_oneof![
        1 => (1u32..=4, 0i32..=48).prop_map(|(rd, imm)| sldi(rd, imm)),
        1 => (a(), a(), 0i32..8).prop_map(|(rd, rs1, offset)| Inst::Sld { rd, rs1, offset }),
        1 => (select(vec![8u32, 16, 4, 12]), select(vec![8u32, 16, 4])).prop_map(|(i, o)| setbw(i, o)),
        1 => (a(), a(), 0u32..2, any::<bool>()).prop_map(|(rd, rs1, group, relu)| Inst::Mvmul {
            rd,
            rs1,
            mbiw: w(8),
            relu,
            group,
        }),
        1 => (bin, a(), a(), a(), 0u32..=6).prop_map(|(op, rd, rs1, rs2, len)| Inst::BinVec {
            op,
            rd,
            rs1,
            rs2,
            len,
            offset: Offset::ZERO,
        }),
        1 => (un, a(), a(), 0u32..=6).prop_map(|(op, rd, rs1, len)| Inst::UnVec {
            op,
            rd,
            rs1,
            len,
            offset: Offset::ZERO,
        }),
        1 => (a(), a(), 1u32..=4).prop_map(|(rd, rs1, len)| Inst::Vavg {
            rd,
            rs1,
            rs2: r(5),
            len,
            offset: 0,
        }),
        1 => (a(), a(), 0u32..=4).prop_map(|(rd, rs1, len)| Inst::Vmv {
            rd,
            rs1,
            rs2: r(5),
            len,
        }),
        1 => (mem_op, 1u32..=4, 1u32..=4, 0u32..=8).prop_map(|(op, rd, rs1, size)| mem(
            op,
            rd,
            rs1,
            size,
            Offset::ZERO
        )),
        1 => (1u32..=4, any::<u8>(), 0u32..=8, 0i32..4).prop_map(|(rd, imm, size, o)| lldi(rd, imm, size, o)),
        2 => (1u32..=4, peer.clone()).prop_map(move |(rs1, core)| match alone {
            true => Inst::Nop,
            false => send(rs1, core, 2, 0),
        }),
        2 => (1u32..=4, peer.clone()).prop_map(move |(rd, core)| match alone {
            true => Inst::Nop,
            false => recv(rd, core, 2, 0),
        }),
        1 => (0u32..2, 0..cores).prop_map(|(event, core)| sync(event, core)),
        1 => (0u32..2, 0i32..=2).prop_map(|(event, value)| wait(event, value)),
    ]
}
