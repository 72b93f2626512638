//! The happens-before race detector: an [`Observer`] that reports two accesses to the same
//! global-memory bytes from different cores, at least one a write, that no synchronisation
//! orders.
//!
//! Cores run asynchronously, so a program whose result depends on the interleaving is wrong
//! even when the schedule that ran happened to produce the right answer. A race is found from
//! one run, whatever its schedule: the detector tracks *which* orderings the program
//! guarantees, not which one occurred.
//!
//! # Model
//!
//! Vector clocks per core, after FastTrack (Flanagan & Freund, PLDI 2009): an access is
//! recorded as an *epoch* (its core and that core's clock), and access `a` happens before
//! core `d`'s current point iff `a.clock <= clock_d[a.core]`. The edges (see
//! [`observe`](super::observe)): program start (host writes are never recorded: they precede
//! everything), a `send` and its matching `recv` in both directions (the rendezvous joins both
//! clocks), and every `sync` before the `wait` that consumes its count (the event register
//! accumulates the syncing cores' clocks until a `wait` takes them).
//!
//! Only global memory is shadowed: a core's local memory is private (a `send` reads it while
//! its sender is stopped), and event registers change atomically.
//!
//! # Cost
//!
//! Per global byte, two `u32`s in a paged [`ShadowMemory`]: the last write and the last read
//! (or, after reads by concurrent cores, a shared *read set*, FastTrack's read vector). Both
//! index an access log holding one entry per global-memory event, so the state per byte stays
//! small however many cores there are.

use std::collections::{HashMap, HashSet};

use super::bytes::{Bytes, Space};
use super::observe::{Event, Observer, RunStart, Site, View};
use super::shadow::ShadowMemory;
use crate::inst::Inst;

/// One side of a race: which instruction accessed the bytes, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaceAccess {
    pub core: u32,
    pub pc: u32,
    pub inst: Inst,
    pub write: bool,
}

/// Two unordered accesses to overlapping global bytes, at least one a write. `first` is the
/// earlier in the run's interleaving; `bytes` the overlap the later access found racing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Race {
    pub first: RaceAccess,
    pub second: RaceAccess,
    pub bytes: Bytes,
}

impl Race {
    /// `write/read`, `write/write` or `read/write`: the two accesses' kinds in run order.
    pub fn kinds(&self) -> &'static str {
        match (self.first.write, self.second.write) {
            (true, true) => "write/write",
            (true, false) => "write/read",
            _ => "read/write",
        }
    }
}

impl std::fmt::Display for Race {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let side = |a: &RaceAccess| {
            format!(
                "core {} pc {} ({}, {})",
                a.core,
                a.pc,
                a.inst,
                if a.write { "write" } else { "read" }
            )
        };
        write!(
            f,
            "data race on {}: {} and {} are not ordered by sync/wait or send/recv",
            self.bytes,
            side(&self.first),
            side(&self.second)
        )
    }
}

/// A recorded access: its epoch and its instruction.
#[derive(Clone, Copy)]
struct Access {
    core: u32,
    clock: u32,
    pc: u32,
    inst: Inst,
    write: bool,
}

/// Shadow state of one global byte, packed into a `u64` (so shadow pages are zeroed memory
/// from the allocator, which costs nothing until touched): the low half `w` is the last
/// write (0: none since the host's), the high half `r` is 0, an access id, or [`SET`] | a
/// read-set index.
#[derive(Clone, Copy, Default)]
struct Cell {
    w: u32,
    r: u32,
}

impl Cell {
    fn load(v: u64) -> Cell {
        Cell {
            w: v as u32,
            r: (v >> 32) as u32,
        }
    }

    fn store(self) -> u64 {
        self.w as u64 | (self.r as u64) << 32
    }
}

const SET: u32 = 1 << 31;

/// How many races are kept in full (all are counted).
pub const KEPT_RACES: usize = 16;

/// The race detector. Lend it to [`Machine::run_observed`](super::Machine::run_observed),
/// then read [`races`](Self::races).
pub struct RaceDetector {
    shadow: ShadowMemory<u64>,
    st: State,
}

/// Everything but the shadow (so a shadow walk can update it).
struct State {
    clocks: Vec<Vec<u32>>,
    /// Per (core, event register): the join of the clocks of the `sync`s not yet consumed.
    pending: HashMap<(u32, u8), Vec<u32>>,
    /// Access ids index this; entry 0 is a placeholder ("no access").
    log: Vec<Access>,
    read_sets: Vec<Vec<u32>>,
    races: Vec<Race>,
    /// Distinct racing instruction pairs `((core, pc), (core, pc))`.
    pairs: HashSet<((u32, u32), (u32, u32))>,
    /// Per event: racing prior access → the racing range found so far.
    found: Vec<(u32, u32, u64)>,
    /// Bytes found racing so far (see `RaceDetector::access`).
    notes: u64,
    /// Per event: old read state → new read state, so bytes that shared a read set share
    /// the new one too (keeps the read sets bounded by the events, not the bytes).
    memo: Vec<(u32, u32)>,
}

impl Default for RaceDetector {
    fn default() -> Self {
        RaceDetector {
            shadow: ShadowMemory::new(0, 0),
            st: State {
                clocks: Vec::new(),
                pending: HashMap::new(),
                log: vec![Access {
                    core: 0,
                    clock: 0,
                    pc: 0,
                    inst: Inst::Nop,
                    write: false,
                }],
                read_sets: Vec::new(),
                races: Vec::new(),
                pairs: HashSet::new(),
                found: Vec::new(),
                notes: 0,
                memo: Vec::new(),
            },
        }
    }
}

impl RaceDetector {
    /// The first [`KEPT_RACES`] races, in the order they were found (one per distinct pair
    /// of instructions).
    pub fn races(&self) -> &[Race] {
        &self.st.races
    }

    /// How many distinct pairs of racing instructions the run had.
    pub fn race_count(&self) -> usize {
        self.st.pairs.len()
    }

    fn access(&mut self, at: &Site, bytes: Bytes, write: bool) {
        let st = &mut self.st;
        let id = st.begin(at, write);
        // Neighbouring bytes mostly share their state (one store wrote them all): a byte whose
        // state equals the previous byte's, when that one found no race, gets the same new
        // state without being checked again (the check is a function of the state alone).
        let mut last: Option<(u64, u64)> = None;
        self.shadow.chunks_mut(bytes, |addr, cells| {
            for (i, v) in cells.iter_mut().enumerate() {
                if let Some((before, after)) = last {
                    if *v == before {
                        *v = after;
                        continue;
                    }
                }
                let before = *v;
                let notes = st.notes;
                let mut cell = Cell::load(before);
                st.update(&mut cell, addr as u64 + i as u64, id, at.core, write);
                *v = cell.store();
                // Only a byte that found no race may stand for the next (a race's byte range
                // grows byte by byte).
                last = (st.notes == notes).then_some((before, *v));
            }
        });
        st.finish(at, write);
    }
}

impl State {
    /// Whether access `a` happens before core `d`'s current point.
    fn ordered(&self, a: u32, d: u32) -> bool {
        let a = &self.log[a as usize];
        a.core == d || a.clock <= self.clocks[d as usize][a.core as usize]
    }

    fn tick(&mut self, core: u32) {
        let c = &mut self.clocks[core as usize][core as usize];
        *c = c.wrapping_add(1);
    }

    /// Logs the access of `at` and returns its id.
    fn begin(&mut self, at: &Site, write: bool) -> u32 {
        let id = self.log.len() as u32;
        self.log.push(Access {
            core: at.core,
            clock: self.clocks[at.core as usize][at.core as usize],
            pc: at.pc,
            inst: at.inst,
            write,
        });
        self.found.clear();
        self.memo.clear();
        id
    }

    /// Records the races the access of `at` found.
    fn finish(&mut self, at: &Site, write: bool) {
        let second = RaceAccess {
            core: at.core,
            pc: at.pc,
            inst: at.inst,
            write,
        };
        for &(prior, start, end) in &self.found {
            let p = self.log[prior as usize];
            if !self.pairs.insert(((p.core, p.pc), (at.core, at.pc))) {
                continue;
            }
            if self.races.len() < KEPT_RACES {
                self.races.push(Race {
                    first: RaceAccess {
                        core: p.core,
                        pc: p.pc,
                        inst: p.inst,
                        write: p.write,
                    },
                    second,
                    bytes: Bytes {
                        space: Space::Gmem,
                        start,
                        len: (end - start as u64) as u32,
                    },
                });
            }
        }
    }

    /// Checks one byte's state against the access `id` of core `d`, then records it.
    fn update(&mut self, cell: &mut Cell, addr: u64, id: u32, d: u32, write: bool) {
        if cell.w != 0 && !self.ordered(cell.w, d) {
            self.note(cell.w, addr);
        }
        if write {
            self.for_reads(cell.r, |me, r| {
                if !me.ordered(r, d) {
                    me.note(r, addr);
                }
            });
            *cell = Cell { w: id, r: 0 };
            return;
        }
        let old = cell.r;
        if let Some(&(_, new)) = self.memo.iter().find(|&&(o, _)| o == old) {
            cell.r = new;
            return;
        }
        let mut keep = Vec::new();
        self.for_reads(old, |me, r| {
            if !me.ordered(r, d) {
                keep.push(r);
            }
        });
        let new = if keep.is_empty() {
            id
        } else {
            keep.push(id);
            self.read_sets.push(keep);
            SET | (self.read_sets.len() as u32 - 1)
        };
        self.memo.push((old, new));
        cell.r = new;
    }

    fn for_reads(&mut self, r: u32, mut f: impl FnMut(&mut Self, u32)) {
        if r == 0 {
        } else if r & SET == 0 {
            f(self, r)
        } else {
            let set = std::mem::take(&mut self.read_sets[(r & !SET) as usize]);
            for &x in &set {
                f(self, x);
            }
            self.read_sets[(r & !SET) as usize] = set;
        }
    }

    /// Byte `addr` races with the prior access `prior`.
    fn note(&mut self, prior: u32, addr: u64) {
        self.notes += 1;
        match self.found.iter_mut().find(|f| f.0 == prior) {
            Some(f) => f.2 = f.2.max(addr + 1),
            None => self.found.push((prior, addr as u32, addr + 1)),
        }
    }
}

impl Observer for RaceDetector {
    fn start(&mut self, run: &RunStart<'_>) {
        let n = run.cores as usize;
        self.st.clocks = (0..n)
            .map(|c| {
                let mut v = vec![0; n];
                v[c] = 1;
                v
            })
            .collect();
        self.shadow = ShadowMemory::new(0, 0);
    }

    fn event(&mut self, at: &Site, event: &Event<'_>, _: &View<'_>) {
        match *event {
            Event::Sync { target, event, .. } => {
                let st = &mut self.st;
                let mine = &st.clocks[at.core as usize];
                let acc = st
                    .pending
                    .entry((target, event))
                    .or_insert_with(|| vec![0; mine.len()]);
                join(acc, mine);
                st.tick(at.core);
            }
            Event::Wait { event, .. } => {
                let st = &mut self.st;
                if let Some(acc) = st.pending.remove(&(at.core, event)) {
                    join(&mut st.clocks[at.core as usize], &acc);
                }
            }
            Event::Receive { from, .. } => {
                let st = &mut self.st;
                let (s, r) = (from as usize, at.core as usize);
                let sender = std::mem::take(&mut st.clocks[s]);
                join(&mut st.clocks[r], &sender);
                st.clocks[s] = st.clocks[r].clone();
                st.tick(from);
                st.tick(at.core);
            }
            _ => {
                for &src in event.reads() {
                    if src.space == Space::Gmem {
                        self.access(at, src, false);
                    }
                }
                if let Some(dst) = event.writes() {
                    if dst.space == Space::Gmem {
                        self.access(at, dst, true);
                    }
                }
            }
        }
    }
}

fn join(into: &mut [u32], from: &[u32]) {
    for (a, b) in into.iter_mut().zip(from) {
        *a = (*a).max(*b);
    }
}
