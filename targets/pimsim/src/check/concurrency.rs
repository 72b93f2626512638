//! The concurrency checks of a check: the race detector and the uninitialized-read check
//! observing the run (see `pimdiff_isa::machine::{RaceDetector, UninitCheck}`), and schedule
//! exploration (the same bundle under more schedules: a result that changes is a
//! `schedule-dependent` finding).
//!
//! Both are judged after the output is compared with the oracle's. A wrong output stays a
//! `mismatch` — triage then names its cause (an `st` offset behind two cores' overlapping
//! stores, `ld of uninitialised global memory` for a missing hand-off) — so every earlier
//! finding keeps its signature. A race or an uninitialized read with a *right* output is a
//! latent bug that only these checks reveal: the output is right on this schedule, with
//! these reset zeros, by luck.

use pimdiff_isa::machine::{
    Event, Observer, RaceDetector, RunStart, Schedule, Site, Space, UninitCheck, View,
};

use pimdiff_isa::{Inst, Program};

use super::outcome::Outcome;

/// The checks that observe one run, as configured.
#[derive(Default)]
pub struct Checks {
    pub race: Option<RaceDetector>,
    pub uninit: Option<UninitCheck>,
}

impl Checks {
    /// The checks for `program`. The race detector is left out when fewer than two cores
    /// touch global memory at all (no `ld`/`st`): then nothing is shared and nothing can race.
    pub fn new(race: bool, uninit: bool, program: &Program) -> Checks {
        Checks {
            race: (race && gmem_cores(program) >= 2).then(RaceDetector::default),
            uninit: uninit.then(UninitCheck::default),
        }
    }

    /// Whether any check is on (otherwise the run needs no observer at all).
    pub fn any(&self) -> bool {
        self.race.is_some() || self.uninit.is_some()
    }

    /// The race finding: the first race, if any.
    pub fn race_finding(&self) -> Option<Outcome> {
        if let Some(race) = self.race.as_ref().and_then(|r| r.races().first()) {
            let detail = format!(
                "{} / {}: {}",
                race.first.inst.opcode().mnemonic(),
                race.second.inst.opcode().mnemonic(),
                race.kinds()
            );
            let count = self.race.as_ref().map_or(0, RaceDetector::race_count);
            return Some(Outcome::Race {
                report: format!("{race} ({count} racing instruction pair(s) in all)"),
                detail,
            });
        }
        None
    }

    /// The uninitialized-read finding: the first read of bytes nothing wrote, if any.
    pub fn uninit_finding(&self) -> Option<Outcome> {
        let uninit = self.uninit.as_ref()?;
        let first = uninit.reads().first()?;
        let space = match first.bytes.space {
            Space::Gmem => "gmem",
            Space::Lmem(_) => "lmem",
        };
        Some(Outcome::UninitializedRead {
            report: format!(
                "{first} ({} instruction(s) read uninitialized bytes in all)",
                uninit.count()
            ),
            detail: format!("{}: {space}", first.inst.opcode().mnemonic()),
        })
    }
}

impl Observer for Checks {
    fn start(&mut self, run: &RunStart<'_>) {
        if let Some(r) = &mut self.race {
            r.start(run);
        }
        if let Some(u) = &mut self.uninit {
            u.start(run);
        }
    }

    fn event(&mut self, at: &Site, event: &Event<'_>, view: &View<'_>) {
        if let Some(r) = &mut self.race {
            r.event(at, event, view);
        }
        if let Some(u) = &mut self.uninit {
            u.event(at, event, view);
        }
    }
}

/// How many cores touch global memory (`ld`/`st`).
fn gmem_cores(program: &Program) -> usize {
    program
        .cores
        .iter()
        .filter(|insts| insts.iter().any(|i| matches!(i, Inst::Mem { .. })))
        .count()
}

/// Whether the interleaving can change what `program` does. Not when at most one core
/// touches global memory and no core uses event registers: then cores share nothing but
/// `send`/`recv` channels, which are deterministic (each receive names its sender, and a
/// channel holds one message), so every schedule computes the same (Kahn's argument).
pub fn schedule_sensitive(program: &Program) -> bool {
    gmem_cores(program) >= 2
        || program
            .cores
            .iter()
            .flatten()
            .any(|i| matches!(i, Inst::Sync { .. } | Inst::Wait { .. }))
}

/// The `k`-th exploration schedule of a check: PCT with depth 3, seeded from `seed` and `k`
/// only, so every case of a hunt (on any thread) explores the same schedules and a finding's
/// schedule replays exactly.
pub fn pct_schedule(seed: u64, k: u32) -> Schedule {
    Schedule::Pct {
        seed: seed
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .wrapping_add(k as u64 + 1),
        depth: 3,
    }
}

/// How one schedule's run ended, abstractly: `finished`, or the run outcome's kind.
pub fn ending(kind: &str, output: Option<&[u8]>, reference: Option<&[u8]>) -> String {
    match (output, reference) {
        (Some(a), Some(b)) if a != b => "different output".into(),
        (Some(_), _) => "finished".into(),
        _ => kind.into(),
    }
}
