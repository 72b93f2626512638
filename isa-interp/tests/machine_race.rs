//! The race detector and the uninitialized-read check on small two-core programs: each
//! happens-before edge ordered (clean) and missing (race), read/read, disjoint bytes, and the
//! three two-core programs that motivated the detector.

use pimdiff_isa::formats::asm;
use pimdiff_isa::machine::{
    Machine, MachineOptions, Observer, RaceDetector, RunOutcome, Schedule, UninitCheck,
};
use pimdiff_isa::{Arch, CrossbarExport, Program};

fn arch(cores: u32) -> Arch {
    Arch {
        cores,
        arrays_per_core: 1,
        array_rows: 2,
        array_cols: 2,
        local_memory_bytes: 64,
        mesh_rows: 1,
        mesh_cols: cores,
        frac_bits: 0,
    }
}

/// Runs `text` (assembly) with 16 bytes of host-written global memory at 0, under `schedule`,
/// with both checks; returns the race reports and the uninitialized-read reports as text.
fn check_with(text: &str, schedule: Schedule) -> (Vec<String>, Vec<String>) {
    let program: Program = asm::parse(text).unwrap_or_else(|e| panic!("{e}"));
    let cores = program.cores.len() as u32;
    let options = MachineOptions {
        schedule,
        ..MachineOptions::default()
    };
    let mut m = Machine::new(&program, &CrossbarExport::default(), arch(cores), options).unwrap();
    m.write_gmem(0, &[7; 16]).unwrap();
    let mut races = RaceDetector::default();
    let mut uninit = UninitCheck::default();
    struct Both<'a>(&'a mut RaceDetector, &'a mut UninitCheck);
    impl Observer for Both<'_> {
        fn start(&mut self, run: &pimdiff_isa::machine::RunStart<'_>) {
            self.0.start(run);
            self.1.start(run);
        }
        fn event(
            &mut self,
            at: &pimdiff_isa::machine::Site,
            e: &pimdiff_isa::machine::Event<'_>,
            v: &pimdiff_isa::machine::View<'_>,
        ) {
            self.0.event(at, e, v);
            self.1.event(at, e, v);
        }
    }
    let outcome = m.run_observed(&mut Both(&mut races, &mut uninit));
    assert_eq!(outcome, RunOutcome::Finished);
    assert_eq!(races.race_count(), races.races().len());
    (
        races.races().iter().map(|r| r.to_string()).collect(),
        uninit.reads().iter().map(|r| r.to_string()).collect(),
    )
}

fn races(text: &str) -> Vec<String> {
    let fixed = check_with(text, Schedule::Fixed).0;
    // The verdict does not depend on the interleaving that ran.
    for seed in 0..4 {
        let other = check_with(text, Schedule::Pct { seed, depth: 3 }).0;
        assert_eq!(other.is_empty(), fixed.is_empty(), "pct:{seed}:3");
    }
    fixed
}

/// Core 1 fills 8 bytes and stores them at 32; core 0 loads them (then `between` decides the
/// ordering). `core1_pre`/`core0_pre` are inserted before the store / the load.
fn handoff(core1: &str, core0: &str) -> String {
    format!(
        "core 0:\nsldi r1, imm=32\nsldi r2, imm=0\n{core0}\ncore 1:\nsldi r1, imm=32\nsldi r2, imm=0\n{core1}\n"
    )
}

const STORE: &str = "lldi r2, imm=5, size=8\nst r1, r2, size=8";
const LOAD: &str = "ld r2, r1, size=8";

#[test]
fn store_sync_wait_load_is_clean() {
    let text = handoff(
        &format!("{STORE}\nsync e0, core=0"),
        &format!("wait e0, value=1\n{LOAD}"),
    );
    assert_eq!(races(&text), Vec::<String>::new());
}

#[test]
fn store_then_load_without_wait_races() {
    let text = handoff(&format!("{STORE}\nsync e0, core=0"), LOAD);
    assert_eq!(
        races(&text),
        vec![
            // The fixed schedule runs core 0 first: its load reads the host's bytes.
            "data race on gmem[32, 40): core 0 pc 2 (ld r2, r1, size=8, read) and core 1 pc 3 \
             (st r1, r2, size=8, write) are not ordered by sync/wait or send/recv"
        ]
    );
}

#[test]
fn sync_before_store_races() {
    let text = handoff(
        &format!("sync e0, core=0\n{STORE}"),
        &format!("wait e0, value=1\n{LOAD}"),
    );
    let found = races(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("data race on gmem[32, 40): "),
        "{found:?}"
    );
}

#[test]
fn two_stores_to_the_same_bytes_race() {
    let text = handoff(STORE, "lldi r2, imm=6, size=4\nst r1, r2, size=4");
    assert_eq!(
        races(&text),
        vec![
            "data race on gmem[32, 36): core 0 pc 3 (st r1, r2, size=4, write) and core 1 pc 3 \
             (st r1, r2, size=8, write) are not ordered by sync/wait or send/recv"
        ]
    );
}

#[test]
fn disjoint_bytes_and_read_read_do_not_race() {
    // Core 0 stores to 40..48 while core 1 stores to 32..40; both read the host's 0..16.
    let text = "core 0:\nsldi r1, imm=40\nsldi r2, imm=0\nsldi r3, imm=0\nld r2, r3, size=8\nst r1, r2, size=8\n\
                core 1:\nsldi r1, imm=32\nsldi r2, imm=0\nsldi r3, imm=0\nld r2, r3, size=8\nst r1, r2, size=8\n";
    assert_eq!(races(text), Vec::<String>::new());
}

#[test]
fn read_then_unordered_write_races() {
    // Core 0 reads the host's bytes; core 1 overwrites them with nothing in between.
    let text = "core 0:\nsldi r1, imm=0\nsldi r2, imm=0\nld r2, r1, size=4\n\
                core 1:\nsldi r1, imm=0\nsldi r2, imm=0\nlldi r2, imm=1, size=4\nst r1, r2, size=4\n";
    let found = races(text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("(ld r2, r1, size=4, read)"), "{found:?}");
}

#[test]
fn send_recv_orders_both_directions() {
    // Forward: core 1 stores, then sends; core 0 receives, then loads.
    let forward = handoff(
        &format!("{STORE}\nsend r2, core=0, size=1"),
        &format!("recv r2, core=1, size=1\n{LOAD}"),
    );
    assert_eq!(races(&forward), Vec::<String>::new());
    // Backward (the send returns after the recv): core 0 loads, then receives; core 1 sends,
    // then stores over the bytes core 0 read.
    let backward = handoff(
        &format!("send r2, core=0, size=1\n{STORE}"),
        &format!("{LOAD}\nrecv r2, core=1, size=1"),
    );
    assert_eq!(races(&backward), Vec::<String>::new());
    // Without the message both race.
    assert_eq!(races(&handoff(STORE, LOAD)).len(), 1);
}

#[test]
fn a_zero_byte_message_is_a_rendezvous_too() {
    // A message of no bytes still blocks the receiver until the send and the sender until the
    // receive: a barrier some compilers use. It orders like any other message.
    let forward = handoff(
        &format!("{STORE}\nsend r2, core=0, size=0"),
        &format!("recv r2, core=1, size=0\n{LOAD}"),
    );
    assert_eq!(races(&forward), Vec::<String>::new());
    let backward = handoff(
        &format!("send r2, core=0, size=0\n{STORE}"),
        &format!("{LOAD}\nrecv r2, core=1, size=0"),
    );
    assert_eq!(races(&backward), Vec::<String>::new());
}

#[test]
fn a_wait_orders_only_the_syncs_it_consumed() {
    // Core 1 syncs e0, stores, syncs e1; core 0 waits on e0 only before its load, so the
    // store (after the e0 sync) is not ordered before the load.
    let text = handoff(
        &format!("sync e0, core=0\n{STORE}\nsync e1, core=0"),
        &format!("wait e0, value=1\n{LOAD}\nwait e1, value=1"),
    );
    assert_eq!(races(&text).len(), 1);
}

#[test]
fn uninitialized_reads_are_reported_once_per_instruction() {
    // Core 0 loads 8 bytes from 12: 12..16 the host wrote, 16..20 nothing did. It then
    // computes from local bytes it never wrote.
    let text = "core 0:\nsldi r1, imm=12\nsldi r2, imm=0\nld r2, r1, size=8\nsldi r3, imm=40\n\
                vvadd r3, r2, r3, len=4\n";
    let (_, uninit) = check_with(text, Schedule::Fixed);
    assert_eq!(
        uninit,
        vec![
            "uninitialized read of gmem[16, 20): core 0 pc 2 (ld r2, r1, size=8) reads bytes \
             nothing wrote",
            "uninitialized read of lmem0[40, 44): core 0 pc 4 (vvadd r3, r2, r3, len=4) reads \
             bytes nothing wrote",
        ]
    );
    // Reading back what an instruction wrote is fine.
    let clean = "core 0:\nsldi r1, imm=0\nlldi r1, imm=1, size=4\nsld r2, r1\n";
    assert_eq!(check_with(clean, Schedule::Fixed).1, Vec::<String>::new());
}
