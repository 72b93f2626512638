//! The observer mechanism, from outside the crate: the exact event stream of a small two-core
//! program, observers built on the shadow memory (a last-writer slicer, provenance), and the
//! property that observing never changes what a run does.

mod machine_util;

use machine_util::*;
use ndarray::Array3;
use pimdiff_isa::inst::{BinVecOp, MemOp};
use pimdiff_isa::machine::{
    Bytes, Event, Machine, MachineOptions, Observer, RunOutcome, RunStart, ShadowMemory, Site,
    Space, View,
};
use pimdiff_isa::xbar::{ArrayGroup, CoreCrossbars};
use pimdiff_isa::{CrossbarExport, Inst, Program};
use proptest::prelude::*;

/// Writes every event as one line: `c<core> pc<pc> <inst> | <event>`.
#[derive(Default)]
struct Log {
    lines: Vec<String>,
}

impl Observer for Log {
    fn start(&mut self, run: &RunStart<'_>) {
        let host: Vec<String> = run.host_writes.iter().map(|b| b.to_string()).collect();
        self.lines.push(format!(
            "start: {} cores, host wrote {}",
            run.cores,
            host.join(" ")
        ));
    }

    fn event(&mut self, at: &Site, event: &Event<'_>, _: &View<'_>) {
        let what = match *event {
            Event::RegRead { reg, value } => format!("read {reg} = {value}"),
            Event::RegWrite { reg, old, new } => format!("write {reg}: {old} -> {new}"),
            Event::SetWidths { old, new } => format!(
                "widths {}/{} -> {}/{}",
                old.0.bits(),
                old.1.bits(),
                new.0.bits(),
                new.1.bits()
            ),
            Event::Read { src } => format!("read {src}"),
            Event::Copy { srcs, dst } => format!("copy {} -> {dst}", list(srcs)),
            Event::Fill { dst, value } => format!("fill {dst} with {value}"),
            Event::Compute { srcs, dst, lanes } => {
                format!("compute {dst} from {} ({lanes:?})", list(srcs))
            }
            Event::Receive {
                from,
                from_pc,
                src,
                dst,
            } => format!("receive {dst} <- {src} (core {from} pc {from_pc})"),
            Event::Sync { target, event, old } => {
                format!("sync event {event} of core {target}: {old} -> {}", old + 1)
            }
            Event::Wait { event, value } => format!("wait consumed event {event} = {value}"),
            Event::Retire => "retire".to_string(),
        };
        self.lines
            .push(format!("c{} pc{} {} | {what}", at.core, at.pc, at.inst));
    }
}

fn list(b: &[Bytes]) -> String {
    b.iter()
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(" + ")
}

/// One 2 × 2 group on core 0: `[[1, 2], [3, 4]]`.
fn export() -> CrossbarExport {
    let mut cells = Array3::zeros((2, 2, 2));
    cells[[0, 0, 0]] = 1;
    cells[[0, 0, 1]] = 2;
    cells[[0, 1, 0]] = 3;
    cells[[0, 1, 1]] = 4;
    let mut x = CrossbarExport::default();
    x.cores.insert(
        0,
        CoreCrossbars {
            mbiw: 8,
            cells,
            groups: vec![ArrayGroup {
                group: 0,
                arrays: vec![0],
                rows: 2,
                cols: 2,
            }],
        },
    );
    x
}

/// Core 0 loads two bytes, moves them, multiplies them by the group, adds, sends the result to
/// core 1, waits for core 1's `sync`, and stores the result; core 1 receives and syncs.
fn two_cores() -> Program {
    let c0 = vec![
        sldi(1, 0),
        sldi(2, 8),
        sldi(3, 16),
        mem(MemOp::Ld, 2, 1, 2, off(0, 0)),
        mem(MemOp::Lmv, 1, 2, 2, off(0, 0)),
        Inst::Mvmul {
            rd: r(3),
            rs1: r(1),
            mbiw: w(8),
            relu: false,
            group: 0,
        },
        bin(BinVecOp::Vvadd, 2, off(0, 0)),
        send(3, 1, 2, 0),
        wait(0, 1),
        mem(MemOp::St, 1, 3, 2, off(0, 0)),
    ];
    let c1 = vec![sldi(1, 32), recv(1, 0, 2, 0), sync(0, 0)];
    program(vec![c0, c1])
}

fn run_logged(p: &Program, x: &CrossbarExport, opts: MachineOptions) -> (RunOutcome, Log) {
    let mut m = Machine::new(p, x, small_arch(2), opts).unwrap();
    m.write_gmem(0, &[1, 2]).unwrap();
    let mut log = Log::default();
    let outcome = m.run_observed(&mut log);
    (outcome, log)
}

#[test]
fn the_event_stream_of_a_two_core_program() {
    let (outcome, log) = run_logged(&two_cores(), &export(), MachineOptions::default());
    assert_eq!(outcome, RunOutcome::Finished);
    insta::assert_snapshot!(log.lines.join("\n"));
}

#[test]
fn zero_byte_transfers_and_blocked_attempts_emit_nothing_but_their_registers_and_retire() {
    let p = program(vec![
        vec![sldi(1, 4), mem(MemOp::Ld, 1, 1, 0, off(0, 0)), wait(2, 1)],
        vec![sldi(1, 0), sync(2, 0)],
    ]);
    let (outcome, log) = run_logged(&p, &CrossbarExport::default(), MachineOptions::default());
    assert_eq!(outcome, RunOutcome::Finished);
    // Core 0 blocks at its wait first (fixed schedule): that attempt leaves no trace.
    assert_eq!(
        log.lines,
        vec![
            "start: 2 cores, host wrote gmem[0, 2)",
            "c0 pc0 sldi r1, imm=4 | write r1: 0 -> 4",
            "c0 pc0 sldi r1, imm=4 | retire",
            "c0 pc1 ld r1, r1, size=0 | read r1 = 4",
            "c0 pc1 ld r1, r1, size=0 | retire",
            "c1 pc0 sldi r1, imm=0 | write r1: 0 -> 0",
            "c1 pc0 sldi r1, imm=0 | retire",
            "c1 pc1 sync e2, core=0 | sync event 2 of core 0: 0 -> 1",
            "c1 pc1 sync e2, core=0 | retire",
            "c0 pc2 wait e2, value=1 | wait consumed event 2 = 1",
            "c0 pc2 wait e2, value=1 | retire",
        ]
    );
}

/// Which instruction last wrote each byte, and which instructions each instruction read
/// from: the dynamic data-flow slice a triage needs.
struct Slicer {
    last: ShadowMemory<Option<(u32, u32)>>,
    /// `(reader, writer)` pairs, in order.
    deps: Vec<((u32, u32), (u32, u32))>,
}

impl Observer for Slicer {
    fn start(&mut self, run: &RunStart<'_>) {
        self.last = ShadowMemory::new(run.cores, run.local_memory_bytes);
    }

    fn event(&mut self, at: &Site, event: &Event<'_>, _: &View<'_>) {
        let me = (at.core, at.pc);
        let mut from = Vec::new();
        let reads: Vec<Bytes> = match *event {
            // The message's bytes were written by whoever wrote the sender's range.
            Event::Receive { src, .. } => vec![src],
            _ => event.reads().to_vec(),
        };
        for src in reads {
            self.last
                .chunks(src, |_, s| from.extend(s.iter().flatten()));
        }
        from.sort_unstable();
        from.dedup();
        self.deps.extend(from.into_iter().map(|w| (me, w)));
        if let Some(dst) = event.writes() {
            self.last.fill(dst, Some(me));
        }
    }
}

#[test]
fn a_slicer_outside_the_crate_finds_the_last_writer_of_every_byte() {
    let p = two_cores();
    let mut m = Machine::new(&p, &export(), small_arch(2), MachineOptions::default()).unwrap();
    m.write_gmem(0, &[1, 2]).unwrap();
    let mut s = Slicer {
        last: ShadowMemory::new(0, 0),
        deps: Vec::new(),
    };
    assert_eq!(m.run_observed(&mut s), RunOutcome::Finished);
    assert_eq!(*s.last.get(Space::Gmem, 1), Some((0, 9)), "the st");
    assert_eq!(*s.last.get(Space::Gmem, 2), None);
    assert_eq!(*s.last.get(Space::Lmem(1), 33), Some((1, 1)), "the recv");
    assert_eq!(
        s.deps,
        vec![
            ((0, 4), (0, 3)), // lmv reads what ld wrote
            ((0, 5), (0, 4)), // mvmul reads the lmv's bytes
            ((0, 6), (0, 3)), // vvadd: B at 8 (ld)
            ((0, 6), (0, 4)), //        A at 0 (lmv)
            ((0, 7), (0, 6)), // send posts vvadd's result
            ((1, 1), (0, 6)), // recv gets vvadd's result through the message
            ((0, 9), (0, 6)), // st stores vvadd's result
        ]
    );
}

/// Where each byte came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Origin {
    #[default]
    Reset,
    Host,
    Gmem(u32),
    Imm(u8),
    Inst(u32, u32),
}

struct Provenance {
    origin: ShadowMemory<Origin>,
}

impl Observer for Provenance {
    fn start(&mut self, run: &RunStart<'_>) {
        self.origin = ShadowMemory::new(run.cores, run.local_memory_bytes);
        for &b in run.host_writes {
            self.origin.fill(b, Origin::Host);
        }
    }

    fn event(&mut self, at: &Site, event: &Event<'_>, _: &View<'_>) {
        match *event {
            // A global byte that nothing else set stands for its own address.
            Event::Copy { srcs, dst } if srcs[0].space == Space::Gmem => {
                let s = srcs[0];
                let mut o = Vec::new();
                self.origin.chunks(s, |a, st| {
                    o.extend(st.iter().zip(a..).map(|(&v, addr)| match v {
                        Origin::Host | Origin::Reset => Origin::Gmem(addr),
                        v => v,
                    }))
                });
                let mut it = o.into_iter();
                self.origin.chunks_mut(dst, |_, d| {
                    d.iter_mut().zip(&mut it).for_each(|(d, v)| *d = v)
                });
            }
            Event::Copy { srcs, dst } => self.origin.copy(srcs, dst),
            Event::Receive { src, dst, .. } => self.origin.copy(&[src], dst),
            Event::Fill { dst, value } => self.origin.fill(dst, Origin::Imm(value)),
            Event::Compute { dst, .. } => self.origin.fill(dst, Origin::Inst(at.core, at.pc)),
            _ => {}
        }
    }
}

#[test]
fn provenance_outside_the_crate_follows_bytes_through_moves_and_messages() {
    let p = program(vec![
        vec![
            sldi(1, 10),
            sldi(2, 0),
            mem(MemOp::Ld, 2, 1, 2, off(0, 0)), // lmem[0..2] <- gmem[10..12]
            lldi(2, 9, 1, 2),                   // lmem[2] = 9
            mem(MemOp::Lmv, 1, 2, 3, off(0, 0)), // lmem[10..13] <- lmem[0..3]
            send(1, 1, 3, 0),
        ],
        vec![sldi(1, 5), recv(1, 0, 3, 0)],
    ]);
    let mut m = Machine::new(
        &p,
        &CrossbarExport::default(),
        small_arch(2),
        MachineOptions::default(),
    )
    .unwrap();
    let mut prov = Provenance {
        origin: ShadowMemory::new(0, 0),
    };
    assert_eq!(m.run_observed(&mut prov), RunOutcome::Finished);
    let got: Vec<Origin> = (5..9)
        .map(|a| *prov.origin.get(Space::Lmem(1), a))
        .collect();
    assert_eq!(
        got,
        vec![
            Origin::Gmem(10),
            Origin::Gmem(11),
            Origin::Imm(9),
            Origin::Reset
        ]
    );
}

#[test]
fn tracing_and_an_observer_together_see_the_same_run() {
    let opts = MachineOptions {
        trace: true,
        ..Default::default()
    };
    let p = two_cores();
    let mut plain = Machine::new(&p, &export(), small_arch(2), opts).unwrap();
    plain.write_gmem(0, &[1, 2]).unwrap();
    assert_eq!(plain.run(), RunOutcome::Finished);
    let mut observed = Machine::new(&p, &export(), small_arch(2), opts).unwrap();
    observed.write_gmem(0, &[1, 2]).unwrap();
    let mut log = Log::default();
    assert_eq!(observed.run_observed(&mut log), RunOutcome::Finished);
    assert_eq!(plain.trace(), observed.trace());
    let retired = log.lines.iter().filter(|l| l.ends_with("| retire")).count();
    assert_eq!(retired, plain.trace().unwrap().entries.len());
}

/// Counts events and checks what every event promises: ranges inside their memory, reads
/// before the retire of their instruction.
struct Auditor {
    lmem: u32,
    cores: u32,
    retired: u64,
    problems: Vec<String>,
}

impl Observer for Auditor {
    fn start(&mut self, run: &RunStart<'_>) {
        (self.lmem, self.cores) = (run.local_memory_bytes, run.cores);
    }

    fn event(&mut self, at: &Site, event: &Event<'_>, view: &View<'_>) {
        if matches!(event, Event::Retire) {
            self.retired += 1;
        }
        let mut ranges = event.reads().to_vec();
        ranges.extend(event.writes());
        if let Event::Receive { src, .. } = event {
            ranges.push(*src);
        }
        for b in ranges {
            let ok = b.len > 0
                && match b.space {
                    Space::Lmem(c) => c < self.cores && b.end() <= self.lmem as u64,
                    Space::Gmem => b.end() <= 1 << 32,
                };
            if !ok {
                self.problems.push(format!("{}: {b} ({event:?})", at.inst));
            }
        }
        if view.core() != at.core {
            self.problems.push(format!("view of core {}", view.core()));
        }
    }
}

/// Local memories, registers, pcs, the instruction count and the low global memory.
#[derive(Debug, PartialEq)]
struct State {
    lmem: Vec<Vec<u8>>,
    regs: Vec<[i32; 32]>,
    pcs: Vec<u32>,
    instructions: u64,
    gmem: Vec<u8>,
}

fn final_state(m: &Machine<'_>) -> State {
    let n = m.cores();
    State {
        lmem: (0..n).map(|c| m.lmem(c).to_vec()).collect(),
        regs: (0..n).map(|c| m.regs(c)).collect(),
        pcs: (0..n).map(|c| m.pc(c)).collect(),
        instructions: m.stats().instructions,
        gmem: m.read_gmem(0, 4096).unwrap(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    /// Observing a run changes nothing about it, and every event keeps its promises.
    #[test]
    fn observing_changes_nothing(p in runnable_program(3, 24), seed in any::<u64>()) {
        let arch = small_arch(p.cores.len() as u32);
        let opts = MachineOptions {
            schedule: pimdiff_isa::machine::Schedule::Random(seed),
            cell_fill: pimdiff_isa::machine::CellFill::Random(seed),
            ..Default::default()
        };
        let mut plain = Machine::new(&p, &CrossbarExport::default(), arch, opts).unwrap();
        let mut observed = Machine::new(&p, &CrossbarExport::default(), arch, opts).unwrap();
        let expected = plain.run();
        let mut audit = Auditor { lmem: 0, cores: 0, retired: 0, problems: Vec::new() };
        prop_assert_eq!(observed.run_observed(&mut audit), expected);
        prop_assert_eq!(final_state(&observed), final_state(&plain));
        prop_assert_eq!(audit.retired, plain.stats().instructions);
        prop_assert!(audit.problems.is_empty(), "{:?}", audit.problems);
    }
}
