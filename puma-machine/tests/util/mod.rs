//! Helpers of the machine tests: models from program text, machines, short reads.

#![allow(dead_code)]

use std::path::Path;

use pimdiff_puma::formats::{parse_core_program, parse_tile_program};
use pimdiff_puma::machine::{Fault, FaultKind, Machine, MachineOptions, Quirks, RunOutcome};
use pimdiff_puma::{Core, CoreInst, Model, Tile, TileInst, Weights};

/// A core program from its text (one instruction per line).
pub fn core(text: &str) -> Vec<CoreInst> {
    parse_core_program(text, Path::new("test.puma")).expect("a valid core program")
}

/// A tile program from its text.
pub fn tile(text: &str) -> Vec<TileInst> {
    parse_tile_program(text, Path::new("test.puma")).expect("a valid tile program")
}

/// Tiles given as (tile program, core programs from core 0 on); the other cores are idle.
pub fn model(tiles: &[(&str, &[&str])]) -> Model {
    Model {
        name: "test".into(),
        tiles: tiles
            .iter()
            .map(|(t, cores)| {
                Tile::new(tile(t), cores.iter().map(|c| Core::new(core(c))).collect())
            })
            .collect(),
    }
}

/// One tile that halts, whose cores run `cores`.
pub fn one_tile(cores: &[&str]) -> Model {
    model(&[("halt()", cores)])
}

/// Programs MVMU `mvmu` of core `core` on tile `tile` with `cell(row, col)` (file order).
pub fn set_weights(m: &mut Model, tile: u32, core: u32, mvmu: u32, cell: impl Fn(u32, u32) -> i32) {
    let mut w = Weights::zeros();
    for r in 0..128 {
        for c in 0..128 {
            w.set(r, c, cell(r, c));
        }
    }
    m.tiles[tile as usize].cores[core as usize].mvmus[mvmu as usize] = Some(w);
}

pub fn machine(model: &Model, quirks: Quirks) -> Machine<'_> {
    Machine::new(
        model,
        MachineOptions {
            quirks,
            ..MachineOptions::default()
        },
    )
    .expect("the model fits the machine")
}

/// A model that lives as long as the test (the machine borrows it).
pub fn keep(model: Model) -> &'static Model {
    Box::leak(Box::new(model))
}

/// Runs `model` with the simulator's quirks and no inputs; panics unless it finished.
pub fn run_finished(model: Model) -> Machine<'static> {
    run_finished_with(model, Quirks::SIMULATOR)
}

pub fn run_finished_with(model: Model, quirks: Quirks) -> Machine<'static> {
    let mut m = machine(keep(model), quirks);
    let o = m.run();
    assert_eq!(o, RunOutcome::Finished, "{o}");
    m
}

/// The value of register `addr` of core `core` on tile 0.
pub fn reg(m: &Machine<'_>, core: u32, addr: u32) -> Option<i64> {
    m.register(0, core, addr).unwrap().value
}

/// The values of registers `start .. start + len` of core `core` on tile 0.
pub fn regs(m: &Machine<'_>, core: u32, start: u32, len: u32) -> Vec<Option<i64>> {
    (start..start + len).map(|a| reg(m, core, a)).collect()
}

/// The fault of a run that must have faulted.
pub fn fault(o: &RunOutcome) -> &Fault {
    match o {
        RunOutcome::Fault(f) => f,
        other => panic!("expected a fault, got {other}"),
    }
}

/// Runs `model` (simulator quirks) and returns the fault it must stop with.
pub fn run_fault(model: &Model) -> Fault {
    let mut m = machine(model, Quirks::SIMULATOR);
    fault(&m.run()).clone()
}

/// The fault kind of a one-tile model whose core 0 runs `program`.
pub fn core_fault(program: &str) -> FaultKind {
    run_fault(&one_tile(&[program])).kind
}

/// Raw fixed-point words of integer values (12 fractional bits).
pub fn fx(v: i64) -> i64 {
    v << 12
}
