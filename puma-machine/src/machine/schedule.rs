//! The run loop: rounds in the simulator's order (per tile: the controller, then cores 0..8;
//! then the network), one step per unit per round, and the diagnosis of a stall.

use super::fault::{
    Blocked, DeadlockReport, Fault, FaultKind, InstAt, RunOutcome, Unit, WaitingFor,
};
use super::step::{self, CoreCx, Step, TileCx};
use super::Machine;
use crate::arch::CORES_PER_TILE;
use crate::isa::TileInst;

/// What a unit's step means for the round: whether it progressed, or the run stops.
type Progress = Result<bool, RunOutcome>;

/// What applying a step to a unit did.
struct Applied {
    progressed: bool,
    completed: bool,
}

/// Applies `step` to a unit's pc, chunk and halt flag.
fn apply(pc: &mut u32, chunk: &mut u32, halted: &mut bool, step: &Step) -> Applied {
    let (progressed, completed) = match *step {
        Step::Done => {
            *pc += 1;
            *chunk = 0;
            (true, true)
        }
        Step::Jump(target) => {
            *pc = target;
            *chunk = 0;
            (true, true)
        }
        Step::Halt => {
            *halted = true;
            (true, true)
        }
        Step::Chunk => {
            *chunk += 1;
            (true, false)
        }
        Step::Progress => (true, false),
        Step::Blocked(_) => (false, false),
    };
    Applied {
        progressed,
        completed,
    }
}

fn fault(at: InstAt, text: String, kind: FaultKind) -> RunOutcome {
    RunOutcome::Fault(Box::new(Fault { at, text, kind }))
}

impl Machine<'_> {
    pub(super) fn run_rounds(&mut self) -> RunOutcome {
        loop {
            self.stats.rounds += 1;
            let mut progressed = false;
            for t in 0..self.tiles.len() {
                match self.step_tile_unit(t) {
                    Ok(p) => progressed |= p,
                    Err(o) => return o,
                }
                for c in 0..CORES_PER_TILE as usize {
                    match self.step_core(t, c) {
                        Ok(p) => progressed |= p,
                        Err(o) => return o,
                    }
                }
            }
            progressed |= self.noc.deliver();
            if self.all_halted() {
                return RunOutcome::Finished;
            }
            if !progressed {
                return self.stall();
            }
        }
    }

    fn check_budget(&self) -> Result<(), RunOutcome> {
        if self.stats.steps >= self.options.step_budget {
            return Err(RunOutcome::OutOfSteps {
                steps: self.stats.steps,
            });
        }
        Ok(())
    }

    fn step_core(&mut self, t: usize, c: usize) -> Progress {
        let model = self.model;
        let program = &model.tiles[t].cores[c].program;
        if self.tiles[t].cores[c].halted {
            return Ok(false);
        }
        self.check_budget()?;
        let tile = &mut self.tiles[t];
        let state = &mut tile.cores[c];
        let at = InstAt {
            tile: t as u32,
            unit: Unit::Core(c as u32),
            pc: state.pc,
        };
        let Some(inst) = program.get(state.pc as usize) else {
            let len = program.len() as u32;
            return Err(fault(
                at,
                "(past the end)".into(),
                FaultKind::RanOffEnd { len },
            ));
        };
        let mut cx = CoreCx {
            at,
            state: &mut *state,
            mem: &mut tile.mem,
            mvmus: &tile.mvmus[c],
            options: &self.options,
            stats: &mut self.stats,
        };
        let step = step::core(&mut cx, inst).map_err(|kind| fault(at, inst.to_string(), kind))?;
        let applied = apply(&mut state.pc, &mut state.chunk, &mut state.halted, &step);
        if let Step::Blocked(w) = step {
            state.waiting = Some(w);
        }
        if applied.completed {
            self.stats.core_instructions[inst.opcode() as usize] += 1;
        }
        if applied.progressed {
            self.stats.steps += 1;
        }
        Ok(applied.progressed)
    }

    fn step_tile_unit(&mut self, t: usize) -> Progress {
        let model = self.model;
        let program = &model.tiles[t].program;
        if self.tiles[t].unit.halted {
            return Ok(false);
        }
        self.check_budget()?;
        let tiles = self.tiles.len() as u32;
        let tile = &mut self.tiles[t];
        let at = InstAt {
            tile: t as u32,
            unit: Unit::Tile,
            pc: tile.unit.pc,
        };
        let Some(inst) = program.get(tile.unit.pc as usize) else {
            let len = program.len() as u32;
            return Err(fault(
                at,
                "(past the end)".into(),
                FaultKind::RanOffEnd { len },
            ));
        };
        let cores_running = tile.cores.iter().filter(|c| !c.halted).count() as u32;
        let mut cx = TileCx {
            at,
            tiles,
            state: &mut tile.unit,
            mem: &mut tile.mem,
            noc: &mut self.noc,
            cores_running,
            stats: &mut self.stats,
        };
        let step = step::tile(&mut cx, inst).map_err(|kind| fault(at, inst.to_string(), kind))?;
        let unit = &mut tile.unit;
        let applied = apply(&mut unit.pc, &mut unit.chunk, &mut unit.halted, &step);
        if let Step::Blocked(w) = step {
            unit.waiting = Some(w);
        }
        if applied.completed {
            self.stats.tile_instructions[inst.opcode() as usize] += 1;
        }
        if applied.progressed {
            self.stats.steps += 1;
        }
        Ok(applied.progressed)
    }

    /// Every unhalted unit, in schedule order, with what it waits for.
    fn blocked_units(&self) -> Vec<Blocked> {
        let mut out = Vec::new();
        for (t, tile) in self.tiles.iter().enumerate() {
            let program = &self.model.tiles[t];
            let mut push = |unit, pc: u32, text: String, waiting: &Option<WaitingFor>| {
                if let Some(waiting) = waiting.clone() {
                    let at = InstAt {
                        tile: t as u32,
                        unit,
                        pc,
                    };
                    out.push(Blocked { at, text, waiting });
                }
            };
            if !tile.unit.halted {
                let text = program.program.get(tile.unit.pc as usize);
                let text = text.map_or_else(String::new, |i| i.to_string());
                push(Unit::Tile, tile.unit.pc, text, &tile.unit.waiting);
            }
            for (c, core) in tile.cores.iter().enumerate().filter(|(_, c)| !c.halted) {
                let text = program.cores[c].program.get(core.pc as usize);
                let text = text.map_or_else(String::new, |i| i.to_string());
                push(Unit::Core(c as u32), core.pc, text, &core.waiting);
            }
        }
        out
    }

    /// The outcome of a round without progress: the first blocked unit whose wait can be
    /// told to be a program error (a read of a word nothing wrote, a receive nothing will
    /// feed), else the deadlock with every blocked unit and stuck packet.
    pub(super) fn stall(&self) -> RunOutcome {
        let blocked = self.blocked_units();
        for b in &blocked {
            let mem = &self.tiles[b.at.tile as usize].mem;
            let kind = match b.waiting {
                WaitingFor::LoadWord { addr } | WaitingFor::SendWord { addr }
                    if !mem.get(addr).was_written() =>
                {
                    Some(FaultKind::ReadNeverWritten { addr })
                }
                WaitingFor::Packet { vtile } if !self.packet_will_come(b.at.tile, vtile) => {
                    Some(FaultKind::ReceiveWithoutSend { vtile })
                }
                _ => None,
            };
            if let Some(kind) = kind {
                return fault(b.at, b.text.clone(), kind);
            }
        }
        RunOutcome::Deadlock(DeadlockReport {
            blocked,
            stuck_packets: self.noc.stuck(),
        })
    }

    /// Whether a packet tagged `vtile` for `tile` is on its way or a tile will still send one
    /// (tile programs have no jumps, so what a tile will still do is the rest of its program).
    fn packet_will_come(&self, tile: u32, vtile: u32) -> bool {
        self.noc.has_packet_for(tile, vtile)
            || self.tiles.iter().enumerate().any(|(s, state)| {
                !state.unit.halted
                    && self.model.tiles[s]
                        .program
                        .iter()
                        .skip(state.unit.pc as usize)
                        .any(|i| {
                            matches!(*i, TileInst::Send { target_addr, vtile_id, .. }
                                if target_addr == tile && vtile_id == vtile)
                        })
            })
    }
}
