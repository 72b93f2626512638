//! Tile memory's valid bits and counters between cores, and the network between tiles:
//! matching by tag, one buffer entry per tag, order, head-of-line blocking, provenance.

mod util;

use pimdiff_puma::machine::{
    FaultKind, InstAt, Output, Quirks, RunOutcome, StuckPacket, Unit, WaitingFor, Word, Writer,
    INPUT_COUNTER,
};
use util::*;

fn core_at(tile: u32, core: u32, pc: u32) -> Writer {
    Writer::Inst(InstAt {
        tile,
        unit: Unit::Core(core),
        pc,
    })
}

fn tile_at(tile: u32, pc: u32) -> Writer {
    Writer::Inst(InstAt {
        tile,
        unit: Unit::Tile,
        pc,
    })
}

#[test]
fn inputs_are_valid_with_the_simulators_input_counter() {
    let model = keep(one_tile(&["hlt()"]));
    let mut m = machine(model, Quirks::SIMULATOR);
    m.write_input(0, 10, &[fx(1), -3]).unwrap();
    let w = m.read(0, 9, 3).unwrap();
    assert_eq!(w[0], Word::UNWRITTEN);
    assert_eq!(
        w[1],
        Word {
            value: Some(4096),
            valid: true,
            counter: INPUT_COUNTER as i64,
            writer: Some(Writer::Host),
            origin: Some(Writer::Host),
            origin_word: Some(10),
        }
    );
    assert_eq!(w[2].value, Some(-3));
    assert_eq!(INPUT_COUNTER, 100);
}

#[test]
fn a_load_waits_for_another_cores_store() {
    // Core 1 loads word 50 at once; core 0 stores it after four other instructions.
    let m = run_finished(one_tile(&[
        "set(d1=600, imm=1)\nset(d1=600, imm=2)\nset(d1=600, imm=3)\nset(d1=520, imm=50)\n\
         store(d1=520, r1=600, counter=1)\nhlt()",
        "set(d1=520, imm=50)\nload(d1=600, r1=520)\nhlt()",
    ]));
    assert_eq!(reg(&m, 1, 600), Some(3));
    let w = m.read(0, 50, 1).unwrap()[0];
    assert_eq!((w.valid, w.counter), (false, 0), "its one read consumed it");
}

#[test]
fn a_store_waits_until_the_word_is_consumed() {
    // Core 0 stores 7 then 8 into word 50 (counter 1); the second store waits for core 1's
    // first load, which core 1 does only after a detour; core 1 loads both in order.
    let m = run_finished(one_tile(&[
        "set(d1=520, imm=50)\nset(d1=600, imm=7)\nstore(d1=520, r1=600)\nset(d1=600, imm=8)\n\
         store(d1=520, r1=600)\nhlt()",
        "set(d1=520, imm=50)\nset(d1=700, imm=0, vec=8)\nload(d1=600, r1=520)\nload(d1=601, r1=520)\nhlt()",
    ]));
    assert_eq!(regs(&m, 1, 600, 2), [Some(7), Some(8)]);
}

#[test]
fn counters_allow_exactly_their_reads() {
    // Stored with counter 2: two loads read it, and the third finds it invalid for good.
    let model = one_tile(&[
        "set(d1=520, imm=5)\nstore(d1=520, r1=520, counter=2)\nload(d1=600, r1=520)\n\
         load(d1=601, r1=520)\nload(d1=602, r1=520)\nhlt()",
    ]);
    let mut m = machine(keep(model), Quirks::SIMULATOR);
    let RunOutcome::Deadlock(report) = m.run() else {
        panic!("expected a deadlock");
    };
    assert_eq!(regs(&m, 0, 600, 3), [Some(5), Some(5), None]);
    assert_eq!(report.blocked.len(), 2);
    assert_eq!(
        report.blocked[0].waiting,
        WaitingFor::Halt {
            cores_running: 1,
            queued_packets: 0
        }
    );
    assert_eq!(
        report.blocked[1].at,
        InstAt {
            tile: 0,
            unit: Unit::Core(0),
            pc: 4
        }
    );
    assert_eq!(report.blocked[1].text, "load(d1=602, r1=520)");
    assert_eq!(report.blocked[1].waiting, WaitingFor::LoadWord { addr: 5 });
}

/// Two tiles: tile 0 sends `sends`, tile 1 receives `receives`; cores idle.
fn network(sends: &str, receives: &str) -> pimdiff_puma::Model {
    model(&[(sends, &[]), (receives, &[])])
}

#[test]
fn a_send_and_its_receive_move_words_with_their_counters_and_origins() {
    let model = keep(network(
        "send(mem_addr=4, vtile_id=0, send_width=2, target_addr=1, vec=2)\nhalt()",
        "receive(mem_addr=100, vtile_id=0, receive_width=2, counter=3, vec=2)\nhalt()",
    ));
    let mut m = machine(model, Quirks::SIMULATOR);
    m.write_tile_memory(0, 4, &[1, 2, 3, 4], 1).unwrap();
    assert!(m.run().is_finished());
    let out = m
        .read_outputs(&[Output {
            tile: 1,
            addr: 100,
            len: 4,
        }])
        .unwrap();
    for (i, w) in out[0].iter().enumerate() {
        assert_eq!((w.value, w.valid, w.counter), (Some(i as i64 + 1), true, 3));
        assert_eq!(
            (w.writer, w.origin, w.origin_word),
            (Some(tile_at(1, 0)), Some(Writer::Host), Some(4 + i as u32))
        );
    }
    let sent = m.read(0, 4, 4).unwrap();
    assert!(
        sent.iter().all(|w| !w.valid && w.counter == 0),
        "each read once"
    );
    assert_eq!(m.stats().packets_sent, 2);
    assert_eq!(m.stats().packets_received, 2);
    assert_eq!(m.stats().packets_left, 0);
}

#[test]
fn packets_with_one_tag_arrive_in_order_and_tags_select_packets() {
    // Tile 0 sends A (tag 0), C (tag 7), B (tag 0); tile 1 takes C first, then A and B.
    let model = keep(network(
        "send(mem_addr=0, vtile_id=0, send_width=1, target_addr=1)\n\
         send(mem_addr=2, vtile_id=7, send_width=1, target_addr=1)\n\
         send(mem_addr=1, vtile_id=0, send_width=1, target_addr=1)\nhalt()",
        "receive(mem_addr=10, vtile_id=7, receive_width=1, counter=1)\n\
         receive(mem_addr=11, vtile_id=0, receive_width=1, counter=1)\n\
         receive(mem_addr=12, vtile_id=0, receive_width=1, counter=1)\nhalt()",
    ));
    let mut m = machine(model, Quirks::SIMULATOR);
    m.write_input(0, 0, &[100, 200, 300]).unwrap();
    assert!(m.run().is_finished());
    assert_eq!(
        m.read_values(1, 10, 3).unwrap(),
        [Some(300), Some(100), Some(200)]
    );
}

#[test]
fn a_full_buffer_entry_blocks_the_senders_queue() {
    // Tile 0's queue: A→1 (tag 0), B→1 (tag 0), C→2. Tile 1 first waits for tile 2's packet,
    // so B stays at the head of tile 0's queue (A holds the entry) and C never reaches tile 2,
    // which therefore never sends: a deadlock with B stuck.
    let model = keep(model(&[
        (
            "send(mem_addr=0, vtile_id=0, send_width=1, target_addr=1)\n\
             send(mem_addr=0, vtile_id=0, send_width=1, target_addr=1)\n\
             send(mem_addr=0, vtile_id=0, send_width=1, target_addr=2)\nhalt()",
            &[],
        ),
        (
            "receive(mem_addr=0, vtile_id=2, receive_width=1, counter=1)\n\
             receive(mem_addr=1, vtile_id=0, receive_width=1, counter=1)\n\
             receive(mem_addr=2, vtile_id=0, receive_width=1, counter=1)\nhalt()",
            &[],
        ),
        (
            "receive(mem_addr=0, vtile_id=0, receive_width=1, counter=1)\n\
             send(mem_addr=0, vtile_id=2, send_width=1, target_addr=1)\nhalt()",
            &[],
        ),
    ]));
    let mut m = machine(model, Quirks::SIMULATOR);
    m.write_input(0, 0, &[1]).unwrap();
    let RunOutcome::Deadlock(report) = m.run() else {
        panic!("expected a deadlock");
    };
    assert_eq!(
        report.stuck_packets,
        [StuckPacket {
            from: 0,
            to: 1,
            vtile: 0,
            words: 1
        }]
    );
    let waits: Vec<_> = report
        .blocked
        .iter()
        .map(|b| (b.at.tile, b.waiting.clone()))
        .collect();
    assert_eq!(
        waits,
        [
            (
                0,
                WaitingFor::Halt {
                    cores_running: 0,
                    queued_packets: 2
                }
            ),
            (1, WaitingFor::Packet { vtile: 2 }),
            (2, WaitingFor::Packet { vtile: 0 }),
        ]
    );
    assert_eq!(m.stats().packets_left, 3);
}

#[test]
fn a_receive_takes_its_packet_before_its_destination_is_free() {
    // Tile 1's word 0 is an input nobody reads until core 0 loads it; the receive into it
    // takes the first packet at once, which lets the second packet into the buffer.
    let model = keep(model(&[
        (
            "send(mem_addr=0, vtile_id=0, send_width=1, target_addr=1)\n\
             send(mem_addr=1, vtile_id=0, send_width=1, target_addr=1)\nhalt()",
            &[],
        ),
        (
            "receive(mem_addr=0, vtile_id=0, receive_width=1, counter=1)\n\
             receive(mem_addr=1, vtile_id=0, receive_width=1, counter=1)\nhalt()",
            &["set(d1=520, imm=0, vec=20)\nload(d1=600, r1=520)\nhlt()"],
        ),
    ]));
    let mut m = machine(model, Quirks::SIMULATOR);
    m.write_input(0, 0, &[5, 6]).unwrap();
    m.write_tile_memory(1, 0, &[9], 1).unwrap();
    assert!(m.run().is_finished());
    assert_eq!(m.register(1, 0, 600).unwrap().value, Some(9));
    assert_eq!(m.read_values(1, 0, 2).unwrap(), [Some(5), Some(6)]);
}

#[test]
fn an_output_word_leads_back_to_the_store_that_computed_it() {
    // Tile 1's core 2 computes 2 + 2 and stores it; tile 1 sends it to tile 0.
    let model = keep(model(&[
        (
            "receive(mem_addr=7, vtile_id=1, receive_width=1, counter=1)\nhalt()",
            &[],
        ),
        (
            "send(mem_addr=30, vtile_id=1, send_width=1, target_addr=0)\nhalt()",
            &[
                "hlt()",
                "hlt()",
                "set(d1=600, imm=2)\nalu_int('add', d1=601, r1=600, r2=600)\nset(d1=520, imm=30)\n\
                 store(d1=520, r1=601)\nhlt()",
            ],
        ),
    ]));
    let mut m = machine(model, Quirks::SIMULATOR);
    assert!(m.run().is_finished());
    let w = m.read(0, 7, 1).unwrap()[0];
    assert_eq!(w.value, Some(4));
    assert_eq!(w.writer, Some(tile_at(0, 0)));
    assert_eq!(w.origin, Some(core_at(1, 2, 3)));
    // The word the store wrote in its own tile, before the send carried it to tile 0.
    assert_eq!(w.origin_word, Some(30));
    assert_eq!(m.register(1, 2, 601).unwrap().writer, Some(1));
}

#[test]
fn a_word_read_too_often_is_a_counter_underflow_not_a_stale_read() {
    // Stored with counter 0 (valid, no reads announced): its first read underflows.
    let kind = core_fault(
        "set(d1=520, imm=5)\nstore(d1=520, r1=520, counter=0)\nload(d1=600, r1=520)\nhlt()",
    );
    assert_eq!(
        kind,
        FaultKind::CounterUnderflow {
            addr: 5,
            counter: 0
        }
    );
}
