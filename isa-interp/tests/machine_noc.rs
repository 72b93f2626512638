//! send / recv matching, wait / sync, deadlock detection, NoC statistics, schedules.

mod machine_util;

use machine_util::*;
use pimdiff_isa::machine::{
    BlockedCore, DeadlockReport, FaultKind, MachineOptions, RunOutcome, Schedule, WaitingFor,
};
use pimdiff_isa::Inst;

fn both_schedules() -> [MachineOptions; 3] {
    [
        MachineOptions::default(),
        MachineOptions {
            schedule: Schedule::Random(1),
            ..Default::default()
        },
        MachineOptions {
            schedule: Schedule::Random(99),
            ..Default::default()
        },
    ]
}

/// Runs `cores` under the fixed and two random schedules and expects the same outcome each time.
fn check_outcome(cores: Vec<Vec<Inst>>, expect: RunOutcome) {
    for opts in both_schedules() {
        let (o, _) = run_cores(cores.clone(), opts);
        assert_eq!(o, expect, "{:?}: {o}", opts.schedule);
    }
}

#[test]
fn several_messages_between_one_pair_arrive_in_order() {
    let sender = vec![
        sldi(1, 0),
        lldi(1, 1, 2, 0),
        send(1, 1, 2, 0),
        lldi(1, 2, 2, 0),
        send(1, 1, 2, 0),
        lldi(1, 3, 3, 0),
        send(1, 1, 3, 0),
    ];
    let receiver = vec![
        sldi(1, 10),
        recv(1, 0, 2, 0),
        recv(1, 0, 2, 2),
        recv(1, 0, 3, 4),
    ];
    for opts in both_schedules() {
        let (o, m) = run_cores(vec![sender.clone(), receiver.clone()], opts);
        assert_eq!(o, RunOutcome::Finished);
        assert_eq!(&m.lmem(1)[10..17], &[1, 1, 2, 2, 3, 3, 3]);
        let noc = &m.stats().noc;
        assert_eq!((noc.messages, noc.bytes, noc.hop_bytes), (3, 7, 7));
        let pair = noc.pairs[&(0, 1)];
        assert_eq!((pair.messages, pair.bytes, pair.hops), (3, 7, 1));
    }
}

#[test]
fn send_reads_its_bytes_at_rs1_plus_offset() {
    let sender = vec![sldi(2, 4), lldi(2, 9, 1, 3), send(2, 1, 1, 3)];
    let receiver = vec![sldi(5, 0), recv(5, 0, 1, 20)];
    let (o, m) = run_cores(vec![sender, receiver], MachineOptions::default());
    assert_eq!(o, RunOutcome::Finished);
    assert_eq!(m.lmem(1)[20], 9);
}

#[test]
fn hop_weighted_traffic_uses_xy_distance_on_the_mesh() {
    // 4 cores on a 2 × 2 mesh: core 0 at (0, 0), core 3 at (1, 1): 2 hops.
    let cores = vec![
        vec![send(0, 3, 5, 0)],
        vec![],
        vec![],
        vec![recv(0, 0, 5, 0)],
    ];
    let p = program(cores);
    let mut arch = small_arch(4);
    arch.mesh_rows = 2;
    arch.mesh_cols = 2;
    let (o, m) = run_with(
        &p,
        &Default::default(),
        arch,
        MachineOptions::default(),
        &[],
    );
    assert_eq!(o, RunOutcome::Finished);
    assert_eq!(m.stats().noc.hop_bytes, 10);
    assert_eq!(pimdiff_isa::machine::mesh_hops(1, 2, 2), 2);
}

#[test]
fn wait_needs_equality_and_resets() {
    let a = vec![sync(5, 1), sync(5, 1), sync(7, 0)];
    let b = vec![wait(5, 2), sync(6, 1)];
    for opts in both_schedules() {
        let (o, m) = run_cores(vec![a.clone(), b.clone()], opts);
        assert_eq!(o, RunOutcome::Finished);
        let mut ev = [0; 32];
        ev[6] = 1;
        assert_eq!(m.events(1), ev);
        let mut ev0 = [0; 32];
        ev0[7] = 1;
        assert_eq!(m.events(0), ev0);
    }
}

#[test]
fn wait_for_zero_passes_at_once() {
    check_outcome(vec![vec![wait(3, 0)]], RunOutcome::Finished);
}

#[test]
fn sync_to_a_finished_core_is_fine() {
    check_outcome(vec![vec![], vec![sync(0, 0)]], RunOutcome::Finished);
}

#[test]
fn deadlock_on_a_cycle_of_receives() {
    let cores = vec![vec![Inst::Nop, recv(0, 1, 4, 0)], vec![recv(0, 0, 4, 0)]];
    let expect = RunOutcome::Deadlock(DeadlockReport {
        blocked: vec![
            BlockedCore {
                core: 0,
                pc: 1,
                inst: cores[0][1],
                waiting: WaitingFor::Recv {
                    from: 1,
                    peer_finished: false,
                },
            },
            BlockedCore {
                core: 1,
                pc: 0,
                inst: cores[1][0],
                waiting: WaitingFor::Recv {
                    from: 0,
                    peer_finished: false,
                },
            },
        ],
    });
    check_outcome(cores, expect);
}

#[test]
fn deadlock_on_a_receive_from_a_finished_core() {
    let cores = vec![vec![Inst::Nop], vec![recv(0, 0, 4, 0)]];
    let expect = RunOutcome::Deadlock(DeadlockReport {
        blocked: vec![BlockedCore {
            core: 1,
            pc: 0,
            inst: cores[1][0],
            waiting: WaitingFor::Recv {
                from: 0,
                peer_finished: true,
            },
        }],
    });
    check_outcome(cores, expect);
}

#[test]
fn deadlock_on_a_send_nobody_receives() {
    let cores = vec![vec![send(0, 1, 4, 0)], vec![]];
    let expect = RunOutcome::Deadlock(DeadlockReport {
        blocked: vec![BlockedCore {
            core: 0,
            pc: 0,
            inst: cores[0][0],
            waiting: WaitingFor::Send {
                to: 1,
                peer_finished: true,
            },
        }],
    });
    check_outcome(cores, expect);
}

#[test]
fn deadlock_on_a_wait_that_never_fires() {
    // The register goes past the wanted value: 2 ≠ 1 forever.
    let cores = vec![vec![sync(0, 0), sync(0, 0), wait(0, 1)]];
    let expect = RunOutcome::Deadlock(DeadlockReport {
        blocked: vec![BlockedCore {
            core: 0,
            pc: 2,
            inst: cores[0][2],
            waiting: WaitingFor::Event {
                event: 0,
                want: 1,
                current: 2,
            },
        }],
    });
    check_outcome(cores, expect);
    let (o, _) = run_cores(
        vec![vec![sync(0, 0), sync(0, 0), wait(0, 1)]],
        MachineOptions::default(),
    );
    let text = o.to_string();
    assert!(
        text.contains("core 0 at pc 2")
            && text.contains("event register 0 to equal 1 (it holds 2)"),
        "{text}"
    );
}

#[test]
fn size_mismatch_is_reported_with_both_sides() {
    let cores = vec![vec![Inst::Nop, send(0, 1, 4, 0)], vec![recv(0, 0, 2, 0)]];
    let expect_kind = FaultKind::SizeMismatch {
        sender: 0,
        sender_pc: 1,
        sender_inst: cores[0][1],
        send_size: 4,
        receiver: 1,
        receiver_pc: 0,
        recv_size: 2,
    };
    for opts in both_schedules() {
        match run_cores(cores.clone(), opts).0 {
            RunOutcome::Fault(f) => {
                assert_eq!((f.core, f.pc, f.inst), (1, 0, cores[1][0]));
                assert_eq!(f.kind, expect_kind);
            }
            other => panic!("{other}"),
        }
    }
}

#[test]
fn send_to_self_bad_core_and_recv_from_self_fault() {
    let fault = |cores: Vec<Vec<Inst>>| match run_cores(cores, MachineOptions::default()).0 {
        RunOutcome::Fault(f) => (f.core, f.pc, f.kind),
        other => panic!("{other}"),
    };
    assert_eq!(
        fault(vec![vec![send(0, 0, 1, 0)]]),
        (0, 0, FaultKind::MessageToSelf { core: 0 })
    );
    assert_eq!(
        fault(vec![vec![], vec![recv(0, 1, 1, 0)]]),
        (1, 0, FaultKind::MessageToSelf { core: 1 })
    );
    assert_eq!(
        fault(vec![vec![send(0, 2, 1, 0)], vec![]]),
        (0, 0, FaultKind::BadCore { core: 2, cores: 2 })
    );
    assert_eq!(
        fault(vec![vec![recv(0, 7, 1, 0)]]),
        (0, 0, FaultKind::BadCore { core: 7, cores: 1 })
    );
    assert_eq!(
        fault(vec![vec![sync(0, 3)]]),
        (0, 0, FaultKind::BadCore { core: 3, cores: 1 })
    );
}

#[test]
fn out_of_steps() {
    let opts = MachineOptions {
        step_budget: 2,
        ..Default::default()
    };
    let (o, m) = run_cores(vec![vec![Inst::Nop; 3]], opts);
    assert_eq!(o, RunOutcome::OutOfSteps { executed: 2 });
    assert_eq!(m.pc(0), 2);
}

#[test]
fn per_core_opcode_counts() {
    let (o, m) = run_cores(
        vec![vec![Inst::Nop, sldi(0, 1)], vec![sldi(0, 2)]],
        MachineOptions::default(),
    );
    assert_eq!(o, RunOutcome::Finished);
    let s = m.stats();
    assert_eq!(s.instructions, 3);
    assert_eq!(s.cores[0].by_opcode.get(pimdiff_isa::Opcode::Nop), 1);
    assert_eq!(s.cores[1].by_opcode.get(pimdiff_isa::Opcode::Sldi), 1);
    assert_eq!(s.count(pimdiff_isa::Opcode::Sldi), 2);
}

#[test]
fn running_again_returns_the_same_outcome() {
    let p = program(vec![vec![recv(0, 1, 1, 0)], vec![]]);
    let mut m = pimdiff_isa::machine::Machine::new(
        &p,
        &Default::default(),
        small_arch(2),
        MachineOptions::default(),
    )
    .unwrap();
    let first = m.run();
    assert_eq!(m.run(), first);
}
