//! The functional multi-core machine: cores, memories, crossbars, the NoC, scheduling.
//!
//! [`Machine`] borrows a [`Program`] and runs it to one of four [`RunOutcome`]s. Every
//! instruction's effect is in [`core::step`] (one match arm per opcode, following isa.md);
//! this module holds the run loop: it picks cores (a fixed round-robin where each core runs
//! until it blocks, or a seeded random interleaving with random slices), retries blocked
//! instructions, and declares a deadlock when a full pass over the unfinished cores makes no
//! progress. Programs are straight-line, so every run ends; the step budget bounds it anyway.
//!
//! Construction is cheap (the hunt builds thousands of machines per second): local memories
//! are `vec![0; n]` (lazily zeroed pages), global memory is sparse, and only the crossbar
//! export's groups are materialised up front.

mod core;
mod crossbar;
mod dump;
mod fault;
mod memory;
mod noc;
mod stats;
mod trace;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use self::core::{step, Core, Shared, Step};
use self::crossbar::CoreXbars;
pub use self::fault::{
    BlockedCore, DeadlockReport, Fault, FaultKind, Operand, RunOutcome, SetupError, WaitingFor,
};
use self::memory::GMEM_BYTES;
pub use self::stats::{
    mesh_hops, CoreStats, NocStats, OpcodeCounts, OverflowRecord, PairTraffic, Stats,
    OVERFLOW_RECORDS,
};
pub use self::trace::{EventChange, MemChange, RegChange, Trace, TraceEntry};
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
    trace: Option<Trace>,
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
            cores: (0..cores)
                .map(|_| Core::new(arch.local_memory_bytes))
                .collect(),
            xbars,
            sh: Shared::new(arch, options.cell_fill, options.trace),
            blocked: vec![None; cores as usize],
            trace: options.trace.then(Trace::default),
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
        c.lmem[addr as usize..addr as usize + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    /// Core `core`'s whole local memory.
    pub fn lmem(&self, core: u32) -> &[u8] {
        &self.cores[core as usize].lmem
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
        if let Some(o) = &self.outcome {
            return o.clone();
        }
        let outcome = self.run_loop();
        self.sh.stats.gmem_touched_bytes = self.sh.gmem.touched_end;
        self.outcome = Some(outcome.clone());
        outcome
    }

    pub fn stats(&self) -> &Stats {
        &self.sh.stats
    }

    /// The recorded changes, when tracing was requested.
    pub fn trace(&self) -> Option<&Trace> {
        self.trace.as_ref()
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

    fn is_finished(&self, i: usize) -> bool {
        self.cores[i].pc as usize >= self.program.cores[i].len()
    }

    fn run_loop(&mut self) -> RunOutcome {
        let n = self.cores.len();
        let mut order: Vec<usize> = (0..n).collect();
        let mut rng = match self.options.schedule {
            Schedule::Fixed => None,
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
                match self.run_core(i, slice) {
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

    /// Runs core `i` for at most `slice` instructions or until it blocks or finishes; says
    /// whether it made progress, or stops the run.
    fn run_core(&mut self, i: usize, slice: u64) -> Result<bool, RunOutcome> {
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
            // Only copied when tracing: this is the interpreter's hot loop.
            let before = if self.trace.is_some() {
                Some((core.regs, core.ibiw, core.obiw))
            } else {
                None
            };
            match step(core, i as u32, inst, sh, xb) {
                Ok(Step::Done) => {
                    if let (Some(trace), Some(before)) = (self.trace.as_mut(), before) {
                        trace
                            .entries
                            .push(trace::entry(i as u32, inst, before, core, sh));
                    }
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
                    sh.rec.clear();
                    break;
                }
                Err(kind) => {
                    sh.rec.clear();
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
