//! Every fault kind, the deadlock, the step budget and every set-up error, each on the
//! smallest program that shows it; and the texts a person reads (snapshots).

mod util;

use pimdiff_puma::fixed::AluError;
use pimdiff_puma::machine::{
    FaultKind, InstAt, Machine, MachineOptions, Quirks, RunOutcome, SetupError, Unit, WaitingFor,
};
use pimdiff_puma::{AluOp, Core, Model, Tile};
use util::*;

#[test]
fn registers_off_the_map() {
    assert_eq!(
        core_fault("copy(d1=2558, r1=600, vec=4)\nhlt()"),
        FaultKind::RegisterRange {
            operand: "d1",
            start: 2558,
            len: 4
        }
    );
    assert_eq!(
        core_fault("set(d1=520, imm=0)\nstore(d1=520, r1=2550, store_width=4)\nhlt()"),
        FaultKind::RegisterRange {
            operand: "r1",
            start: 2550,
            len: 16
        },
        "the simulator's store reads a whole bus of registers"
    );
    assert_eq!(
        core_fault("alu('add', d1=600, r1=601, r2=4000)\nhlt()"),
        FaultKind::RegisterRange {
            operand: "r2",
            start: 4000,
            len: 1
        }
    );
}

#[test]
fn operands_that_must_be_data_memory() {
    assert_eq!(
        core_fault("set(d1=5, imm=0)\nhlt()"),
        FaultKind::NotDataMemory {
            operand: "d1",
            reg: 5
        }
    );
    assert_eq!(
        core_fault("load(d1=600, r1=300)\nhlt()"),
        FaultKind::NotDataMemory {
            operand: "r1",
            reg: 300
        }
    );
    assert_eq!(
        core_fault("store(d1=7, r1=600)\nhlt()"),
        FaultKind::NotDataMemory {
            operand: "d1",
            reg: 7
        }
    );
    assert_eq!(
        core_fault("alu_int('add', d1=1, r1=600, r2=600)\nhlt()"),
        FaultKind::NotDataMemory {
            operand: "d1",
            reg: 1
        }
    );
    assert_eq!(
        core_fault("beq(r1=600, r2=2, imm=0)\nhlt()"),
        FaultKind::NotDataMemory {
            operand: "r2",
            reg: 2
        }
    );
}

#[test]
fn operands_that_hold_no_value() {
    assert_eq!(
        core_fault("alu('add', d1=600, r1=601, r2=602)\nhlt()"),
        FaultKind::UndefinedRegister {
            reg: 601,
            written: false
        }
    );
    assert_eq!(
        core_fault(
            "set(d1=601, imm=1)\ncopy(d1=602, r1=700)\nalu('sub', d1=600, r1=601, r2=602)\nhlt()"
        ),
        FaultKind::UndefinedRegister {
            reg: 602,
            written: true
        }
    );
    assert_eq!(
        core_fault("load(d1=600, r1=520)\nhlt()"),
        FaultKind::UndefinedRegister {
            reg: 520,
            written: false
        }
    );
    assert_eq!(
        core_fault("alui('mul', d1=600, r1=0, imm=2)\nhlt()"),
        FaultKind::UndefinedRegister {
            reg: 0,
            written: false
        }
    );
}

#[test]
fn tile_memory_addresses_out_of_range() {
    assert_eq!(
        core_fault("set(d1=520, imm=-1)\nload(d1=600, r1=520)\nhlt()"),
        FaultKind::BadAddress {
            reg: 520,
            value: -1
        }
    );
    assert_eq!(
        core_fault("set(d1=520, imm=32767)\nload(d1=600, r1=520, load_width=2)\nhlt()"),
        FaultKind::TileMemoryRange {
            start: 32767,
            len: 2
        }
    );
    assert_eq!(
        core_fault("set(d1=520, imm=32762)\nstore(d1=520, r1=600, store_width=4, vec=2)\nhlt()"),
        FaultKind::TileMemoryRange {
            start: 32766,
            len: 4
        },
        "the second chunk leaves the memory"
    );
    let f = run_fault(&model(&[(
        "send(mem_addr=32767, vtile_id=0, send_width=2, target_addr=0)\nhalt()",
        &[],
    )]));
    assert_eq!(
        f.kind,
        FaultKind::TileMemoryRange {
            start: 32767,
            len: 2
        }
    );
    assert_eq!(
        f.at,
        InstAt {
            tile: 0,
            unit: Unit::Tile,
            pc: 0
        }
    );
}

#[test]
fn reads_of_words_never_written() {
    // A load stalls on a word nothing wrote: found when the machine stalls.
    let f = run_fault(&one_tile(&[
        "set(d1=520, imm=9)\nload(d1=600, r1=520)\nhlt()",
    ]));
    assert_eq!(f.kind, FaultKind::ReadNeverWritten { addr: 9 });
    assert_eq!(
        f.at,
        InstAt {
            tile: 0,
            unit: Unit::Core(0),
            pc: 1
        }
    );
    assert_eq!(f.text, "load(d1=600, r1=520)");
    // A later word of a load whose first word is valid: at once.
    let loads = keep(one_tile(&[
        "set(d1=520, imm=9)\nload(d1=600, r1=520, load_width=2)\nhlt()",
    ]));
    let mut m = machine(loads, Quirks::SIMULATOR);
    m.write_input(0, 9, &[1]).unwrap();
    assert_eq!(
        fault(&m.run()).kind,
        FaultKind::ReadNeverWritten { addr: 10 }
    );
    // A send stalls on one.
    let f = run_fault(&model(&[(
        "send(mem_addr=3, vtile_id=0, send_width=1, target_addr=0)\nhalt()",
        &[],
    )]));
    assert_eq!(f.kind, FaultKind::ReadNeverWritten { addr: 3 });
}

#[test]
fn a_load_over_a_consumed_word() {
    let model = keep(one_tile(&[
        "set(d1=520, imm=10)\nload(d1=600, r1=520)\nset(d1=520, imm=9)\nload(d1=600, r1=520, load_width=2)\nhlt()",
    ]));
    let mut m = machine(model, Quirks::SIMULATOR);
    m.write_tile_memory(0, 9, &[1, 2], 1).unwrap();
    assert_eq!(
        fault(&m.run()).kind,
        FaultKind::ReadInvalidWord { addr: 10 }
    );
}

#[test]
fn a_store_over_a_word_still_valid() {
    let model = keep(one_tile(&[
        "set(d1=520, imm=9)\nstore(d1=520, r1=520, store_width=2)\nhlt()",
    ]));
    let mut m = machine(model, Quirks::SIMULATOR);
    m.write_tile_memory(0, 10, &[1], 4).unwrap();
    assert_eq!(
        fault(&m.run()).kind,
        FaultKind::StoreOverValidWord {
            addr: 10,
            counter: 4
        }
    );
}

#[test]
fn a_send_of_a_word_with_no_reads_left() {
    let model = keep(model(&[(
        "send(mem_addr=0, vtile_id=0, send_width=1, target_addr=0)\nhalt()",
        &[],
    )]));
    let mut m = machine(model, Quirks::SIMULATOR);
    m.write_tile_memory(0, 0, &[1], 0).unwrap();
    assert_eq!(
        fault(&m.run()).kind,
        FaultKind::CounterUnderflow {
            addr: 0,
            counter: 0
        }
    );
}

#[test]
fn alu_operations_without_a_result() {
    let alu = |op: &'static str, error| FaultKind::Alu { op, error };
    assert_eq!(
        core_fault("set(d1=600, imm=1, vec=2)\nalu('div', d1=602, r1=600, r2=601)\nhlt()"),
        alu("div", AluError::Unsupported(AluOp::Div))
    );
    assert_eq!(
        core_fault(&format!(
            "set(d1=600, imm={})\nset(d1=601, imm=1)\nalu('add', d1=602, r1=600, r2=601)\nhlt()",
            i64::MAX
        )),
        alu("add", AluError::Overflow)
    );
    assert_eq!(
        core_fault("set(d1=600, imm=1)\nalui('mul', d1=602, r1=600, imm=1e300)\nhlt()"),
        alu("mul", AluError::Overflow)
    );
    assert_eq!(
        core_fault("set(d1=600, imm=1)\nalu('sna', d1=602, r1=600, r2=600, imm=64)\nhlt()"),
        alu("sna", AluError::BadShift(64))
    );
    assert_eq!(
        core_fault(
            "set(d1=600, imm=1)\nset(d1=601, imm=0)\nalu_int('mod', d1=602, r1=600, r2=601)\nhlt()"
        ),
        alu("mod", AluError::DivisionByZero)
    );
}

#[test]
fn an_mvm_output_beyond_64_bits() {
    let program = format!(
        "set(d1=600, imm={}, vec=2)\ncopy(d1=0, r1=600, vec=2)\nmvm(['10'])\nhlt()",
        i64::MAX / 2
    );
    let mut m = one_tile(&[&program]);
    set_weights(&mut m, 0, 0, 0, |r, c| 2 * i32::from(r < 2 && c == 1));
    assert_eq!(
        run_fault(&m).kind,
        FaultKind::MvmOverflow { mvmu: 0, output: 1 }
    );
}

#[test]
fn an_alu_result_bound_for_a_crossbar_register_in_the_simulator() {
    assert_eq!(
        core_fault("set(d1=600, imm=2)\nalu('add', d1=3, r1=600, r2=600)\nhlt()"),
        FaultKind::AluToXbarRegister { reg: 3 }
    );
    assert_eq!(
        core_fault("set(d1=600, imm=2)\nalui('mul', d1=300, r1=600, imm=2)\nhlt()"),
        FaultKind::AluToXbarRegister { reg: 300 }
    );
}

#[test]
fn sends_to_tiles_and_tags_that_do_not_exist() {
    let send = |line: &str| run_fault(&model(&[(&format!("{line}\nhalt()"), &[])])).kind;
    assert_eq!(
        send("send(mem_addr=0, vtile_id=0, send_width=1, target_addr=1)"),
        FaultKind::NoSuchTile {
            target: 1,
            tiles: 1
        }
    );
    assert_eq!(
        send("send(mem_addr=0, vtile_id=150, send_width=1, target_addr=0)"),
        FaultKind::VtileRange {
            vtile: 150,
            depth: 150
        }
    );
    assert_eq!(
        send("receive(mem_addr=0, vtile_id=200, receive_width=1, counter=1)"),
        FaultKind::VtileRange {
            vtile: 200,
            depth: 150
        }
    );
}

#[test]
fn a_packet_of_the_wrong_width() {
    let model = keep(model(&[(
        "send(mem_addr=0, vtile_id=0, send_width=2, target_addr=0)\n\
         receive(mem_addr=10, vtile_id=0, receive_width=3, counter=1)\nhalt()",
        &[],
    )]));
    let mut m = machine(model, Quirks::SIMULATOR);
    m.write_input(0, 0, &[1, 2]).unwrap();
    assert_eq!(
        fault(&m.run()).kind,
        FaultKind::WidthMismatch {
            receive_width: 3,
            sent: 2
        }
    );
}

#[test]
fn a_receive_that_no_send_will_feed() {
    // Tile 1 sends with tag 4; tile 0 waits for tag 5.
    let f = run_fault(&model(&[
        (
            "receive(mem_addr=0, vtile_id=5, receive_width=1, counter=1)\nhalt()",
            &[],
        ),
        ("halt()", &[]),
    ]));
    assert_eq!(f.kind, FaultKind::ReceiveWithoutSend { vtile: 5 });
    assert_eq!(
        f.at,
        InstAt {
            tile: 0,
            unit: Unit::Tile,
            pc: 0
        }
    );
}

#[test]
fn programs_that_end_without_halting() {
    let f = run_fault(&one_tile(&["set(d1=600, imm=1)"]));
    assert_eq!(f.kind, FaultKind::RanOffEnd { len: 1 });
    assert_eq!(
        f.at,
        InstAt {
            tile: 0,
            unit: Unit::Core(0),
            pc: 1
        }
    );
    let f = run_fault(&Model {
        name: "t".into(),
        tiles: vec![Tile::new(Vec::new(), Vec::new())],
    });
    assert_eq!(f.kind, FaultKind::RanOffEnd { len: 0 });
    // A jump past the end runs off it too.
    assert_eq!(core_fault("jmp(imm=9)"), FaultKind::RanOffEnd { len: 1 });
}

fn crossed_receives() -> Model {
    // Each tile receives from the other before sending.
    model(&[
        (
            "receive(mem_addr=0, vtile_id=1, receive_width=1, counter=1)\n\
             send(mem_addr=5, vtile_id=0, send_width=1, target_addr=1)\nhalt()",
            &[],
        ),
        (
            "receive(mem_addr=0, vtile_id=0, receive_width=1, counter=1)\n\
             send(mem_addr=5, vtile_id=1, send_width=1, target_addr=0)\nhalt()",
            &[],
        ),
    ])
}

#[test]
fn a_deadlock_names_every_waiting_unit() {
    let mut m = machine(keep(crossed_receives()), Quirks::SIMULATOR);
    let RunOutcome::Deadlock(report) = m.run() else {
        panic!("expected a deadlock");
    };
    let waits: Vec<_> = report
        .blocked
        .iter()
        .map(|b| (b.at, b.waiting.clone()))
        .collect();
    assert_eq!(
        waits,
        [
            (
                InstAt {
                    tile: 0,
                    unit: Unit::Tile,
                    pc: 0
                },
                WaitingFor::Packet { vtile: 1 }
            ),
            (
                InstAt {
                    tile: 1,
                    unit: Unit::Tile,
                    pc: 0
                },
                WaitingFor::Packet { vtile: 0 }
            ),
        ]
    );
    assert!(report.stuck_packets.is_empty());
    insta::assert_snapshot!(RunOutcome::Deadlock(report).to_string(), @r"
    deadlock: 2 units wait
      tile 0 pc 0: receive(mem_addr=0, vtile_id=1, receive_width=1, counter=1) waits for a packet tagged vtile_id 1
      tile 1 pc 0: receive(mem_addr=0, vtile_id=0, receive_width=1, counter=1) waits for a packet tagged vtile_id 0
    ");
}

#[test]
fn the_step_budget_stops_an_endless_loop() {
    let model = keep(one_tile(&["jmp(imm=0)"]));
    let options = MachineOptions {
        step_budget: 100,
        ..MachineOptions::default()
    };
    let mut m = Machine::new(model, options).unwrap();
    assert_eq!(m.run(), RunOutcome::OutOfSteps { steps: 100 });
    assert_eq!(
        m.run(),
        RunOutcome::OutOfSteps { steps: 100 },
        "the same outcome again"
    );
}

#[test]
fn a_fault_reads_as_where_what_and_why() {
    let o = {
        let mut m = machine(
            keep(one_tile(&[
                "hlt()",
                "set(d1=520, imm=9)\nload(d1=600, r1=520)\nhlt()",
            ])),
            Quirks::SIMULATOR,
        );
        m.run()
    };
    insta::assert_snapshot!(o.to_string(), @r"
    fault at tile 0 core 1 pc 1: load(d1=600, r1=520)
      tile memory word 9 is read but was never written
    ");
    assert_eq!(o.kind(), "fault");
}

#[test]
fn set_up_errors() {
    let model = keep(one_tile(&["hlt()"]));
    let mut m = machine(model, Quirks::SIMULATOR);
    assert_eq!(
        m.write_input(1, 0, &[1]),
        Err(SetupError::NoSuchTile { tile: 1, tiles: 1 })
    );
    assert_eq!(
        m.write_input(0, 32767, &[1, 2]),
        Err(SetupError::TileMemoryRange {
            tile: 0,
            addr: 32767,
            len: 2
        })
    );
    assert_eq!(
        m.read(0, 32760, 9).unwrap_err(),
        SetupError::TileMemoryRange {
            tile: 0,
            addr: 32760,
            len: 9
        }
    );
    assert_eq!(
        m.register(0, 8, 0).unwrap_err(),
        SetupError::NoSuchCore { core: 8, cores: 8 }
    );
    assert_eq!(
        m.register(0, 0, 2560).unwrap_err(),
        SetupError::RegisterRange { addr: 2560 }
    );
    assert!(m.run().is_finished());
    assert_eq!(m.write_input(0, 0, &[1]), Err(SetupError::AlreadyRan));
    let options = MachineOptions {
        frac_bits: 33,
        ..MachineOptions::default()
    };
    assert_eq!(
        Machine::new(model, options).err(),
        Some(SetupError::FracBits { bits: 33, max: 32 })
    );
    let bad = keep(Model {
        name: "t".into(),
        tiles: vec![Tile {
            program: tile("halt()"),
            cores: vec![Core::idle(); 3],
        }],
    });
    assert!(matches!(
        Machine::new(bad, MachineOptions::default()).err(),
        Some(SetupError::Shape {
            tile: 0,
            cores: 3,
            ..
        })
    ));
}
