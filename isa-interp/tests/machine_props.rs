//! Properties: the mvmul kernel against a naive exact reference, schedule independence of
//! communicating multi-core programs, and "never panics, never hangs" on arbitrary programs.

mod machine_util;

use machine_util::*;
use ndarray::Array3;
use pimdiff_isa::inst::{BinVecOp, MemOp, Offset, ScalarImmOp, ScalarOp, UnVecOp};
use pimdiff_isa::machine::{CellFill, Machine, MachineOptions, RunOutcome, Schedule};
use pimdiff_isa::xbar::{ArrayGroup, CoreCrossbars};
use pimdiff_isa::{Arch, CrossbarExport, GroupSpec, Inst, Program, Reg, Width};
use proptest::prelude::*;

// ---- mvmul against a naive reference ---------------------------------------------------

/// Low `bits` bits of `v`, sign-extended, as `bytes` little-endian bytes.
fn encode(v: i128, bits: u32, bytes: usize) -> Vec<u8> {
    let shift = 128 - bits;
    let wrapped = (v << shift) >> shift;
    wrapped.to_le_bytes()[..bytes].to_vec()
}

fn mvmul_case() -> impl Strategy<Value = (u32, u32, u32, Vec<i32>, Vec<i64>, u32, u32, bool)> {
    // (rows, array_cols, arrays in group, cells, inputs, ibiw, obiw, relu)
    // Wide groups (up to 240 columns) exercise the 64- and 8-column SIMD blocks and the tail.
    (
        1u32..=9,
        prop_oneof![1u32..=5, 60u32..=80],
        1u32..=3,
        1u32..=32,
        1u32..=32,
        any::<bool>(),
        0u32..4,
    )
        .prop_flat_map(|(rows, ac, n, ibiw, obiw, relu, wscale)| {
            let cells = match wscale {
                0 => prop::collection::vec(-128i32..=127, (3 * rows * ac) as usize).boxed(),
                1 => prop::collection::vec(-40000i32..=40000, (3 * rows * ac) as usize).boxed(),
                2 => prop::collection::vec(any::<i32>(), (3 * rows * ac) as usize).boxed(),
                _ => prop::collection::vec(
                    prop_oneof![Just(i32::MIN), Just(i32::MAX), Just(0)],
                    (3 * rows * ac) as usize,
                )
                .boxed(),
            };
            let lo = -(1i64 << (ibiw - 1));
            let hi = (1i64 << (ibiw - 1)) - 1;
            let xs = prop::collection::vec(prop_oneof![Just(lo), Just(hi), lo..=hi], rows as usize);
            (
                Just(rows),
                Just(ac),
                Just(n),
                cells,
                xs,
                Just(ibiw),
                Just(obiw),
                Just(relu),
            )
        })
}

proptest! {
    #[test]
    fn mvmul_matches_a_naive_exact_product((rows, ac, n, cells, xs, ibiw, obiw, relu) in mvmul_case()) {
        let arch = Arch { cores: 1, arrays_per_core: 3, array_rows: rows, array_cols: ac, local_memory_bytes: 2048, mesh_rows: 1, mesh_cols: 1, frac_bits: 0 };
        let cells = Array3::from_shape_vec((3, rows as usize, ac as usize), cells).unwrap();
        let arrays: Vec<u32> = (0..n).map(|k| (k + 1) % 3).collect();
        let cols = n * ac;
        let mut x = CrossbarExport::default();
        x.cores.insert(0, CoreCrossbars { mbiw: 32, cells: cells.clone(), groups: vec![ArrayGroup { group: 9, arrays: arrays.clone(), rows, cols }] });
        let ib = Width::new(ibiw).unwrap().bytes() as usize;
        let ob = Width::new(obiw).unwrap().bytes() as usize;
        let input: Vec<u8> = xs.iter().flat_map(|&v| encode(v as i128, ibiw, ib)).collect();
        let insts = vec![setbw(ibiw, obiw), sldi(1, 0), sldi(3, 1024), Inst::Mvmul { rd: r(3), rs1: r(1), mbiw: w(32), relu, group: 9 }];
        let mut expect = Vec::new();
        for j in 0..cols as usize {
            let mut y: i128 = 0;
            for (i, &xi) in xs.iter().enumerate() {
                y += xi as i128 * cells[[arrays[j / ac as usize] as usize, i, j % ac as usize]] as i128;
            }
            if relu { y = y.max(0); }
            expect.extend(encode(y, obiw, ob));
        }
        check_lmem_arch(arch, insts, &x, &[(0, &input)], &[(1024, &expect)]);
    }
}

// ---- schedule independence -------------------------------------------------------------

/// One step of a global, deadlock-free order from which every core's stream is cut.
#[derive(Clone, Debug)]
enum Action {
    /// Core `core` does some local arithmetic on its buffer.
    Local { core: usize, k: u8 },
    /// `from` sends `size` bytes of its buffer to `to`.
    Message {
        from: usize,
        to: usize,
        size: u32,
        at: u32,
    },
    /// `from` signals `to` on a fresh event register, `to` waits for it.
    Signal { from: usize, to: usize },
    /// Core `core` stores part of its buffer to its own GMem region.
    Store { core: usize },
}

fn action(cores: usize) -> impl Strategy<Value = Action> {
    let c = 0..cores;
    prop_oneof![
        (c.clone(), any::<u8>()).prop_map(|(core, k)| Action::Local { core, k }),
        (c.clone(), c.clone(), 1u32..=16, 0u32..32)
            .prop_filter_map("self", |(from, to, size, at)| (from != to)
                .then_some(Action::Message { from, to, size, at })),
        (c.clone(), c.clone()).prop_filter_map("self", |(from, to)| (from != to)
            .then_some(Action::Signal { from, to })),
        c.prop_map(|core| Action::Store { core }),
    ]
}

/// Cuts the global order into per-core streams. Following the global order is a valid
/// execution, so the program cannot deadlock; its result must not depend on the schedule.
fn build(cores: usize, actions: &[Action]) -> Vec<Vec<Inst>> {
    let mut s: Vec<Vec<Inst>> = (0..cores)
        .map(|c| {
            vec![
                sldi(1, 0),
                sldi(2, 16),
                sldi(3, 32),
                lldi(1, c as u8 + 1, 48, 0),
                sldi(9, 1000 * c as i32),
            ]
        })
        .collect();
    let mut next_event = vec![0u32; cores];
    for a in actions {
        match *a {
            Action::Local { core, k } => {
                let op = [
                    BinVecOp::Vvadd,
                    BinVecOp::Vvmul,
                    BinVecOp::Vvmax,
                    BinVecOp::Vvsub,
                ][k as usize % 4];
                s[core].push(Inst::BinVec {
                    op,
                    rd: r(1 + (k as u32 / 4) % 3),
                    rs1: r(1),
                    rs2: r(2),
                    len: 16,
                    offset: Offset::ZERO,
                });
            }
            Action::Message { from, to, size, at } => {
                s[from].push(send(1, to as u32, size, at as i32));
                s[to].push(recv(2, from as u32, size, at as i32 % 16));
            }
            Action::Signal { from, to } => {
                if next_event[to] < 32 {
                    s[from].push(sync(next_event[to], to as u32));
                    s[to].push(wait(next_event[to], 1));
                    next_event[to] += 1;
                }
            }
            Action::Store { core } => s[core].push(mem(MemOp::St, 9, 3, 16, Offset::ZERO)),
        }
    }
    s
}

/// Everything observable after a run: local memories, registers, events, global memory,
/// NoC bytes, overflow count.
type State = (
    Vec<Vec<u8>>,
    Vec<[i32; 32]>,
    Vec<[i32; 32]>,
    Vec<u8>,
    u64,
    u64,
);

/// Everything observable after a run.
fn final_state(m: &Machine<'_>) -> State {
    let n = m.cores();
    (
        (0..n).map(|c| m.lmem(c).to_vec()).collect(),
        (0..n).map(|c| m.regs(c)).collect(),
        (0..n).map(|c| m.events(c)).collect(),
        m.read_gmem(0, 5000).unwrap(),
        m.stats().noc.bytes,
        m.stats().overflow_events,
    )
}

proptest! {
    #[test]
    fn results_do_not_depend_on_the_schedule(
        (cores, actions) in (2usize..=4).prop_flat_map(|n| (Just(n), prop::collection::vec(action(n), 0..40))),
        seeds in prop::collection::vec(any::<u64>(), 3),
    ) {
        let p = program(build(cores, &actions));
        let arch = small_arch(cores as u32);
        let mut fixed = Machine::new(&p, &CrossbarExport::default(), arch, MachineOptions::default()).unwrap();
        prop_assert_eq!(fixed.run(), RunOutcome::Finished);
        let want = final_state(&fixed);
        for seed in seeds {
            let opts = MachineOptions { schedule: Schedule::Random(seed), ..Default::default() };
            let mut m = Machine::new(&p, &CrossbarExport::default(), arch, opts).unwrap();
            prop_assert_eq!(m.run(), RunOutcome::Finished);
            prop_assert_eq!(&final_state(&m), &want);
        }
    }
}

// ---- never panics ----------------------------------------------------------------------

fn reg() -> impl Strategy<Value = Reg> {
    (0u32..6).prop_map(|i| Reg::new(i).unwrap())
}

fn width() -> impl Strategy<Value = Width> {
    prop_oneof![Just(8u32), Just(16), Just(32), 1u32..=32].prop_map(|b| Width::new(b).unwrap())
}

fn imm() -> impl Strategy<Value = i32> {
    prop_oneof![0i32..80, -8i32..8, any::<i32>()]
}

fn offset() -> impl Strategy<Value = Offset> {
    (0u8..8, -4i32..8).prop_map(|(select, value)| Offset { select, value })
}

fn inst(cores: u32) -> impl Strategy<Value = Inst> {
    let binop = prop::sample::select(vec![
        BinVecOp::Vvadd,
        BinVecOp::Vvsub,
        BinVecOp::Vvmul,
        BinVecOp::Vvdmul,
        BinVecOp::Vvmax,
        BinVecOp::Vvsll,
        BinVecOp::Vvsra,
        BinVecOp::Vrsu,
        BinVecOp::Vrsl,
    ]);
    let unop = prop::sample::select(vec![UnVecOp::Vrelu, UnVecOp::Vtanh, UnVecOp::Vsigm]);
    let memop = prop::sample::select(vec![MemOp::Ld, MemOp::St, MemOp::Lmv]);
    let core = 0..cores + 1;
    prop_oneof![
        Just(Inst::Nop),
        (reg(), imm()).prop_map(|(rd, imm)| Inst::Sldi { rd, imm }),
        (reg(), reg(), imm()).prop_map(|(rd, rs1, offset)| Inst::Sld { rd, rs1, offset }),
        (reg(), reg(), reg()).prop_map(|(rd, rs1, rs2)| Inst::Scalar {
            op: ScalarOp::Add,
            rd,
            rs1,
            rs2
        }),
        (reg(), reg(), imm()).prop_map(|(rd, rs1, imm)| Inst::ScalarImm {
            op: ScalarImmOp::Mul,
            rd,
            rs1,
            imm
        }),
        (width(), width()).prop_map(|(ibiw, obiw)| Inst::Setbw { ibiw, obiw }),
        (reg(), reg(), width(), any::<bool>(), 0u32..4).prop_map(|(rd, rs1, mbiw, relu, group)| {
            Inst::Mvmul {
                rd,
                rs1,
                mbiw,
                relu,
                group,
            }
        }),
        (binop, reg(), reg(), reg(), 0u32..20, offset()).prop_map(
            |(op, rd, rs1, rs2, len, offset)| Inst::BinVec {
                op,
                rd,
                rs1,
                rs2,
                len,
                offset
            }
        ),
        (unop, reg(), reg(), 0u32..20, offset()).prop_map(|(op, rd, rs1, len, offset)| {
            Inst::UnVec {
                op,
                rd,
                rs1,
                len,
                offset,
            }
        }),
        (reg(), reg(), reg(), 0u32..6, -3i32..5).prop_map(|(rd, rs1, rs2, len, offset)| {
            Inst::Vavg {
                rd,
                rs1,
                rs2,
                len,
                offset,
            }
        }),
        (reg(), reg(), reg(), 0u32..10).prop_map(|(rd, rs1, rs2, len)| Inst::Vmv {
            rd,
            rs1,
            rs2,
            len
        }),
        (memop, reg(), reg(), 0u32..40, offset()).prop_map(|(op, rd, rs1, size, offset)| {
            Inst::Mem {
                op,
                rd,
                rs1,
                size,
                offset,
            }
        }),
        (reg(), any::<u8>(), 0u32..40, -3i32..5, any::<bool>()).prop_map(
            |(rd, imm, size, offset, from_float)| Inst::Lldi {
                rd,
                imm,
                size,
                offset,
                from_float
            }
        ),
        (reg(), core.clone(), 0u32..8, -2i32..4).prop_map(|(rs1, core, size, offset)| Inst::Send {
            rs1,
            core,
            size,
            offset
        }),
        (reg(), core.clone(), 0u32..8, -2i32..4).prop_map(|(rd, core, size, offset)| Inst::Recv {
            rd,
            core,
            size,
            offset
        }),
        (0u32..3, -1i32..3).prop_map(|(e, value)| Inst::Wait {
            event: Reg::new(e).unwrap(),
            value
        }),
        (0u32..3, core).prop_map(|(e, core)| Inst::Sync {
            event: Reg::new(e).unwrap(),
            core
        }),
    ]
}

fn arb_program() -> impl Strategy<Value = Program> {
    (1u32..=3, 0u8..3).prop_flat_map(|(cores, groups)| {
        let groups = match groups {
            0 => GroupSpec::ExportOnly,
            1 => GroupSpec::ArrayCount,
            _ => GroupSpec::ArrayGroupMap(vec![vec![1, 1]; cores as usize]),
        };
        prop::collection::vec(prop::collection::vec(inst(cores), 0..14), cores as usize).prop_map(
            move |streams| Program {
                cores: streams,
                groups: groups.clone(),
                ..Default::default()
            },
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn arbitrary_programs_end_without_panicking(p in arb_program(), seed in any::<u64>(), budget in prop_oneof![Just(u64::MAX), 0u64..20]) {
        let mut arch = small_arch(p.cores.len() as u32);
        arch.frac_bits = (seed % 8) as u32;
        let schedule = if seed % 2 == 0 { Schedule::Fixed } else { Schedule::Random(seed) };
        let cell_fill = if seed % 3 == 0 { CellFill::Zero } else { CellFill::Random(seed) };
        let opts = MachineOptions { schedule, step_budget: budget, trace: seed % 5 == 0, cell_fill };
        let mut m = Machine::new(&p, &CrossbarExport::default(), arch, opts).unwrap();
        let outcome = m.run();
        let total: u64 = p.cores.iter().map(|c| c.len() as u64).sum();
        prop_assert!(m.stats().instructions <= total);
        if let RunOutcome::OutOfSteps { executed } = outcome {
            prop_assert_eq!(executed, budget);
        }
        let _ = outcome.to_string();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    /// The shared generator's valid programs (formats' `gen`), on their own architecture hints
    /// shrunk to a small machine so debug-mode tests stay fast.
    #[test]
    fn generated_programs_end_without_panicking(p in pimdiff_isa::gen::arb_program(4, 32), seed in any::<u64>()) {
        let small = pimdiff_isa::ArchHints {
            arrays_per_core: Some(4),
            array_rows: Some(16),
            array_cols: Some(16),
            local_memory_bytes: Some(4096),
            ..Default::default()
        };
        let arch = Arch::resolve(&p.arch, p.cores.len() as u32, &small);
        let schedule = if seed % 2 == 0 { Schedule::Fixed } else { Schedule::Random(seed) };
        let cell_fill = if seed % 3 == 0 { CellFill::Zero } else { CellFill::Random(seed) };
        let opts = MachineOptions { schedule, step_budget: 10_000, trace: seed % 4 == 0, cell_fill };
        // An architecture the hints make invalid (e.g. a mesh too small) is a typed set-up error.
        if let Ok(mut m) = Machine::new(&p, &CrossbarExport::default(), arch, opts) {
            let outcome = m.run();
            let _ = outcome.to_string();
            let total: u64 = p.cores.iter().map(|c| c.len() as u64).sum();
            prop_assert!(m.stats().instructions <= total);
        }
    }
}
