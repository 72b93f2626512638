//! The functional multi-core machine: cores, memories, crossbars, the NoC, scheduling.
//!
//! [`Machine`] borrows a [`Program`] and runs it to one of four [`RunOutcome`]s. Every
//! instruction's effect is in `step/` (one handler per instruction class, following isa.md);
//! what a run does can be watched through [`observe`] (events for every memory access,
//! register access and synchronisation, delivered to [`Observer`]s, which keep per-byte state
//! in a [`ShadowMemory`]). This module holds the run loop: it picks cores (a fixed round-robin where each core runs
//! until it blocks, or a seeded random interleaving with random slices), retries blocked
//! instructions, and declares a deadlock when a full pass over the unfinished cores makes no
//! progress. Programs are straight-line, so every run ends; the step budget bounds it anyway.
//!
//! Construction is cheap (the hunt builds thousands of machines per second): local memories
//! are `vec![0; n]` (lazily zeroed pages), global memory is sparse, and only the crossbar
//! export's groups are materialised up front.

mod bytes;
mod core;
mod crossbar;
mod dump;
mod fault;
mod memory;
mod noc;
pub mod observe;
pub mod provenance;
mod race;
pub mod shadow;
mod stats;
mod step;
mod trace;
mod uninit;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use self::core::{Core, Shared, Step};
use self::crossbar::CoreXbars;
pub use self::fault::{
    BlockedCore, DeadlockReport, Fault, FaultKind, Operand, RunOutcome, SetupError, WaitingFor,
};
use self::memory::GMEM_BYTES;
pub use self::observe::{Bytes, Event, Lanes, Observer, RunStart, Site, Space, View};
use self::observe::{Fan, Quiet, Sink};
pub use self::provenance::{ByteOrigin, InstAt, Origin, Provenance};
pub use self::race::{Race, RaceAccess, RaceDetector, KEPT_RACES};
pub use self::shadow::ShadowMemory;
pub use self::stats::{
    mesh_hops, CoreStats, NocStats, OpcodeCounts, OverflowRecord, PairTraffic, Stats,
    OVERFLOW_RECORDS,
};
use self::step::step;
pub use self::trace::{EventChange, MemChange, RegChange, Trace, TraceEntry, TraceRecorder};
pub use self::uninit::{UninitCheck, UninitRead, KEPT_UNINIT};
use crate::inst::{Inst, Width};
use crate::program::{Arch, GroupSpec, Program};
use crate::xbar::CrossbarExport;

/// How a run is set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineOptions {
    pub schedule: Schedule,
    /// Instructions executed (all cores) after which the run stops with `OutOfSteps`.
    pub step_budget: u64,
    /// Record every instruction's changes (see [`Trace`]); slow, for small programs.
    pub trace: bool,
    /// Cells of groups known only from the program's config (no export).
    pub cell_fill: CellFill,
}

impl MachineOptions {
    /// 2^32 instructions: a thousand times the largest PIMCOMP-NN program (straight-line
    /// programs execute each instruction once), yet a bound on any run.
    pub const DEFAULT_STEP_BUDGET: u64 = 1 << 32;
}

impl Default for MachineOptions {
    fn default() -> Self {
        MachineOptions {
            schedule: Schedule::Fixed,
            step_budget: Self::DEFAULT_STEP_BUDGET,
            trace: false,
            cell_fill: CellFill::Zero,
        }
    }
}

/// The order in which cores run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Schedule {
    /// Round-robin in core order, each core running until it blocks or finishes.
    #[default]
    Fixed,
    /// Each pass visits the cores in a seeded random order and runs each for a random slice of
    /// 1..=32 instructions.
    Random(u64),
    /// Probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010): the cores get
    /// distinct random priorities and the highest-priority core that can run runs; at
    /// `depth - 1` random change points (instruction counts) the running core drops below
    /// every other. A bug that needs `depth` orderings to show is hit with probability at
    /// least 1/(cores · instructions^(depth-1)) per run.
    Pct { seed: u64, depth: u32 },
}

impl std::fmt::Display for Schedule {
    /// `fixed`, `random:SEED`, `pct:SEED:DEPTH` (what `--schedule` parses).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Schedule::Fixed => f.write_str("fixed"),
            Schedule::Random(seed) => write!(f, "random:{seed}"),
            Schedule::Pct { seed, depth } => write!(f, "pct:{seed}:{depth}"),
        }
    }
}

impl std::str::FromStr for Schedule {
    type Err = String;

    fn from_str(s: &str) -> Result<Schedule, String> {
        let bad = || format!("`{s}` is not a schedule (fixed, random:SEED or pct:SEED:DEPTH)");
        let parts: Vec<&str> = s.split(':').collect();
        match parts[..] {
            ["fixed"] => Ok(Schedule::Fixed),
            ["random", seed] => seed.parse().map(Schedule::Random).map_err(|_| bad()),
            ["pct", seed, depth] => match (seed.parse(), depth.parse()) {
                (Ok(seed), Ok(depth)) if depth >= 1 => Ok(Schedule::Pct { seed, depth }),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }
}

/// Cells of array groups that the program's config describes but no export fills.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CellFill {
    #[default]
    Zero,
    /// Signed 8-bit cells from ChaCha8 with this seed (stream = core id).
    Random(u64),
}

/// A machine loaded with a program, ready to run (or having run).
pub struct Machine<'p> {
    program: &'p Program,
    options: MachineOptions,
    cores: Vec<Core>,
    xbars: Vec<CoreXbars>,
    sh: Shared,
    /// What each core was last blocked on (meaningful only for blocked cores).
    blocked: Vec<Option<WaitingFor>>,
    /// Everything the host wrote before the run, for observers.
    host_writes: Vec<Bytes>,
    trace: Option<TraceRecorder>,
    outcome: Option<RunOutcome>,
}

/// Largest `frac_bits` accepted: `2^F` must be exact in an `f64` and leave room for the value.
const MAX_FRAC_BITS: u32 = 62;

impl<'p> Machine<'p> {
    /// Sets up `program` on `arch` with the crossbar export `xbars` (empty when the program's
    /// groups come from its config). Rejects an export or architecture that does not fit.
    pub fn new(
        program: &'p Program,
        xbars: &CrossbarExport,
        arch: Arch,
        options: MachineOptions,
    ) -> Result<Machine<'p>, SetupError> {
        let cores = program.cores.len() as u32;
        if arch.cores != cores {
            return Err(SetupError::CoreCount {
                program: cores,
                arch: arch.cores,
            });
        }
        for (field, value, ok, reason) in [
            (
                "array_rows",
                arch.array_rows as u64,
                arch.array_rows > 0,
                "must be at least 1",
            ),
            (
                "array_cols",
                arch.array_cols as u64,
                arch.array_cols > 0,
                "must be at least 1",
            ),
            (
                "mesh_rows",
                arch.mesh_rows as u64,
                arch.mesh_rows > 0,
                "must be at least 1",
            ),
            (
                "mesh_cols",
                arch.mesh_cols as u64,
                arch.mesh_cols > 0,
                "must be at least 1",
            ),
            (
                "mesh",
                arch.mesh_rows as u64 * arch.mesh_cols as u64,
                arch.mesh_rows as u64 * arch.mesh_cols as u64 >= cores as u64,
                "rows × cols must hold every core",
            ),
            (
                "frac_bits",
                arch.frac_bits as u64,
                arch.frac_bits <= MAX_FRAC_BITS,
                "must be at most 62",
            ),
        ] {
            if !ok {
                return Err(SetupError::BadArch {
                    field,
                    value,
                    reason,
                });
            }
        }
        if let GroupSpec::ArrayGroupMap(map) = &program.groups {
            if map.len() as u32 > cores {
                return Err(SetupError::GroupMapCores {
                    map: map.len() as u32,
                    cores,
                });
            }
        }
        if let Some((&core, _)) = xbars.cores.range(cores..).next() {
            return Err(SetupError::ExportCore { core, cores });
        }
        let xbars = (0..cores)
            .map(|c| CoreXbars::new(c, xbars.cores.get(&c), &program.groups, &arch))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Machine {
            program,
            options,
            cores: (0..cores).map(|_| Core::new()).collect(),
            xbars,
            sh: Shared::new(arch, options.cell_fill),
            blocked: vec![None; cores as usize],
            host_writes: Vec::new(),
            trace: options.trace.then(TraceRecorder::default),
            outcome: None,
        })
    }

    pub fn arch(&self) -> &Arch {
        &self.sh.arch
    }

    /// Host write into global memory (inputs, constants) before the run; not "touched".
    pub fn write_gmem(&mut self, addr: u32, bytes: &[u8]) -> Result<(), SetupError> {
        check_gmem(addr, bytes.len() as u64)?;
        self.sh.gmem.write(addr, bytes);
        self.note_host_write(Space::Gmem, addr, bytes.len());
        Ok(())
    }

    /// Host read of global memory (outputs) after the run.
    pub fn read_gmem(&self, addr: u32, len: u32) -> Result<Vec<u8>, SetupError> {
        check_gmem(addr, len as u64)?;
        let mut out = vec![0; len as usize];
        self.sh.gmem.read(addr, &mut out);
        Ok(out)
    }

    /// Host write into a core's local memory (tests and tools set up state this way).
    pub fn write_lmem(&mut self, core: u32, addr: u32, bytes: &[u8]) -> Result<(), SetupError> {
        let size = self.sh.arch.local_memory_bytes;
        let c = self.core_mut(core)?;
        if addr as u64 + bytes.len() as u64 > size as u64 {
            return Err(SetupError::LmemRange {
                core,
                addr,
                len: bytes.len() as u64,
                size,
            });
        }
        c.grow_lmem(addr as usize + bytes.len());
        c.lmem[addr as usize..addr as usize + bytes.len()].copy_from_slice(bytes);
        self.note_host_write(Space::Lmem(core), addr, bytes.len());
        Ok(())
    }

    /// Core `core`'s whole local memory (`local_memory_bytes` bytes; borrowed when the run
    /// touched all of it, else copied and padded with the zeros nothing wrote).
    pub fn lmem(&self, core: u32) -> std::borrow::Cow<'_, [u8]> {
        let touched = &self.cores[core as usize].lmem;
        let size = self.sh.arch.local_memory_bytes as usize;
        if touched.len() >= size {
            std::borrow::Cow::Borrowed(touched)
        } else {
            let mut all = touched.clone();
            all.resize(size, 0);
            std::borrow::Cow::Owned(all)
        }
    }

    /// Core `core`'s general registers.
    pub fn regs(&self, core: u32) -> [i32; 32] {
        self.cores[core as usize].regs
    }

    /// Core `core`'s event registers.
    pub fn events(&self, core: u32) -> [i32; 32] {
        self.sh.events[core as usize]
    }

    /// Core `core`'s `(ibiw, obiw)`.
    pub fn widths(&self, core: u32) -> (Width, Width) {
        let c = &self.cores[core as usize];
        (c.ibiw, c.obiw)
    }

    /// Core `core`'s program counter (its instruction count once it finished).
    pub fn pc(&self, core: u32) -> u32 {
        self.cores[core as usize].pc
    }

    /// Whether core `core` ran past its last instruction.
    pub fn finished(&self, core: u32) -> bool {
        self.is_finished(core as usize)
    }

    pub fn cores(&self) -> u32 {
        self.cores.len() as u32
    }

    /// Runs until every core finished, a fault, a deadlock, or the step budget. Running a
    /// machine that already stopped returns the same outcome again.
    pub fn run(&mut self) -> RunOutcome {
        self.run_with(None)
    }

    /// [`run`](Self::run), delivering every event of the run to `observer` (see
    /// [`observe`]). Observing costs only while an observer is attached.
    pub fn run_observed(&mut self, observer: &mut dyn Observer) -> RunOutcome {
        self.run_with(Some(observer))
    }

    fn run_with(&mut self, external: Option<&mut dyn Observer>) -> RunOutcome {
        if let Some(o) = &self.outcome {
            return o.clone();
        }
        let mut trace = self.trace.take();
        let mut observers: Vec<&mut dyn Observer> = Vec::new();
        if let Some(t) = trace.as_mut() {
            observers.push(t);
        }
        if let Some(o) = external {
            observers.push(o);
        }
        let outcome = if observers.is_empty() {
            self.run_loop(&mut Quiet)
        } else {
            let start = RunStart {
                cores: self.cores.len() as u32,
                local_memory_bytes: self.sh.arch.local_memory_bytes,
                host_writes: &self.host_writes,
            };
            for o in observers.iter_mut() {
                o.start(&start);
            }
            self.run_loop(&mut Fan { observers })
        };
        self.trace = trace;
        self.sh.stats.gmem_touched_bytes = self.sh.gmem.touched_end;
        self.outcome = Some(outcome.clone());
        outcome
    }

    pub fn stats(&self) -> &Stats {
        &self.sh.stats
    }

    /// The recorded changes, when tracing was requested.
    pub fn trace(&self) -> Option<&Trace> {
        self.trace.as_ref().map(TraceRecorder::trace)
    }

    /// Writes the machine's state to `dir` (see [`dump`](self::dump)): `gmem.bin`,
    /// `core_<i>.lmem.bin`, `core_<i>.regs.json`, `stats.json`.
    pub fn dump(&self, dir: &std::path::Path) -> std::io::Result<()> {
        dump::write(self, dir)
    }

    fn core_mut(&mut self, core: u32) -> Result<&mut Core, SetupError> {
        let cores = self.cores.len() as u32;
        self.cores
            .get_mut(core as usize)
            .ok_or(SetupError::NoSuchCore { core, cores })
    }

    fn note_host_write(&mut self, space: Space, start: u32, len: usize) {
        if len > 0 {
            self.host_writes.push(Bytes {
                space,
                start,
                len: len as u32,
            });
        }
    }

    fn is_finished(&self, i: usize) -> bool {
        self.cores[i].pc as usize >= self.program.cores[i].len()
    }

    fn run_loop<O: Sink>(&mut self, obs: &mut O) -> RunOutcome {
        if let Schedule::Pct { seed, depth } = self.options.schedule {
            return self.run_pct(seed, depth, obs);
        }
        let n = self.cores.len();
        let mut order: Vec<usize> = (0..n).collect();
        let mut rng = match self.options.schedule {
            Schedule::Fixed | Schedule::Pct { .. } => None,
            Schedule::Random(seed) => Some(ChaCha8Rng::seed_from_u64(seed)),
        };
        loop {
            let mut progressed = false;
            if let Some(rng) = rng.as_mut() {
                order.shuffle(rng);
            }
            for &i in &order {
                if self.is_finished(i) {
                    continue;
                }
                let slice = match rng.as_mut() {
                    Some(rng) => rng.random_range(1..=32),
                    None => u64::MAX,
                };
                match self.run_core(i, slice, obs) {
                    Ok(p) => progressed |= p,
                    Err(outcome) => return outcome,
                }
            }
            if (0..n).all(|i| self.is_finished(i)) {
                return RunOutcome::Finished;
            }
            if !progressed {
                return RunOutcome::Deadlock(self.deadlock_report());
            }
        }
    }

    /// The PCT schedule (see [`Schedule::Pct`]): always the highest-priority core that can
    /// make progress, for as long as it can or until the next change point.
    fn run_pct<O: Sink>(&mut self, seed: u64, depth: u32, obs: &mut O) -> RunOutcome {
        let n = self.cores.len();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // Priorities: depth.. for the cores (shuffled), 1..depth for the change points, so a
        // core that passes a change point drops below every initial priority.
        let mut prio: Vec<u64> = (0..n as u64).map(|p| p + depth as u64).collect();
        prio.shuffle(&mut rng);
        let total: u64 = self.program.cores.iter().map(|c| c.len() as u64).sum();
        let mut changes: Vec<(u64, u64)> = (1..depth as u64)
            .map(|k| (rng.random_range(0..total.max(1)), depth as u64 - k))
            .collect();
        changes.sort_unstable();
        let mut next = 0;
        let mut order: Vec<usize> = (0..n).collect();
        loop {
            order.sort_by_key(|&i| std::cmp::Reverse(prio[i]));
            let mut ran = None;
            for &i in &order {
                if self.is_finished(i) {
                    continue;
                }
                let done = self.sh.stats.instructions;
                let slice = match changes.get(next) {
                    Some(&(at, _)) => at.saturating_sub(done).max(1),
                    None => u64::MAX,
                };
                match self.run_core(i, slice, obs) {
                    Ok(true) => {
                        ran = Some(i);
                        break;
                    }
                    Ok(false) => {}
                    Err(outcome) => return outcome,
                }
            }
            let Some(i) = ran else {
                if (0..n).all(|i| self.is_finished(i)) {
                    return RunOutcome::Finished;
                }
                return RunOutcome::Deadlock(self.deadlock_report());
            };
            while let Some(&(at, low)) = changes.get(next) {
                if self.sh.stats.instructions < at {
                    break;
                }
                prio[i] = low;
                next += 1;
            }
        }
    }

    /// Runs core `i` for at most `slice` instructions or until it blocks or finishes; says
    /// whether it made progress, or stops the run.
    fn run_core<O: Sink>(&mut self, i: usize, slice: u64, obs: &mut O) -> Result<bool, RunOutcome> {
        let insts = &self.program.cores[i][..];
        let core = &mut self.cores[i];
        let sh = &mut self.sh;
        let xb = &mut self.xbars[i];
        let budget = self.options.step_budget;
        let mut progressed = false;
        let mut left = slice;
        while let Some(inst) = insts.get(core.pc as usize) {
            if sh.stats.instructions >= budget {
                return Err(RunOutcome::OutOfSteps {
                    executed: sh.stats.instructions,
                });
            }
            let step = step(core, i as u32, inst, sh, xb, obs);
            if let Some(fault) = obs.stop() {
                return Err(RunOutcome::Fault(fault));
            }
            match step {
                Ok(Step::Done) => {
                    core.pc += 1;
                    sh.stats.instructions += 1;
                    let cs = &mut sh.stats.cores[i];
                    cs.instructions += 1;
                    cs.by_opcode.0[inst.opcode() as usize] += 1;
                    progressed = true;
                    left -= 1;
                    if left == 0 {
                        break;
                    }
                }
                Ok(Step::Posted) => progressed = true,
                Ok(Step::Blocked(w)) => {
                    self.blocked[i] = Some(w);
                    break;
                }
                Err(kind) => {
                    return Err(RunOutcome::Fault(Fault {
                        core: i as u32,
                        pc: core.pc,
                        inst: *inst,
                        kind,
                    }));
                }
            }
        }
        Ok(progressed)
    }

    fn deadlock_report(&self) -> DeadlockReport {
        let blocked = (0..self.cores.len())
            .filter(|&i| !self.is_finished(i))
            .map(|i| {
                let pc = self.cores[i].pc;
                let inst: Inst = self.program.cores[i][pc as usize];
                let waiting = match self.blocked[i].clone() {
                    Some(WaitingFor::Recv { from, .. }) => WaitingFor::Recv {
                        from,
                        peer_finished: self.is_finished(from as usize),
                    },
                    Some(WaitingFor::Send { to, .. }) => WaitingFor::Send {
                        to,
                        peer_finished: self.is_finished(to as usize),
                    },
                    Some(w) => w,
                    // Unreachable in practice: a core that made no progress in a full pass
                    // recorded what it blocked on. Report it conservatively.
                    None => WaitingFor::Event {
                        event: 0,
                        want: 0,
                        current: 0,
                    },
                };
                BlockedCore {
                    core: i as u32,
                    pc,
                    inst,
                    waiting,
                }
            })
            .collect();
        DeadlockReport { blocked }
    }
}

fn check_gmem(addr: u32, len: u64) -> Result<(), SetupError> {
    if addr as u64 + len > GMEM_BYTES {
        return Err(SetupError::GmemRange { addr, len });
    }
    Ok(())
}
