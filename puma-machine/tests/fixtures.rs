//! Real compiler output (tests/fixtures/, see its README): every model loads, prints back,
//! and runs to completion with every tile halted under both readings; the two small
//! fully-connected ones also compute exactly the compiler's `sig(M · x)` in its reading, and
//! show where the simulator's reading departs from it.

mod util;

use std::path::{Path, PathBuf};

use pimdiff_puma::fixed;
use pimdiff_puma::formats::{load_model, model_names, parse_core_program, parse_tile_program};
use pimdiff_puma::machine::{Machine, MachineOptions, Quirks, RunOutcome};
use pimdiff_puma::{AluOp, CoreOpcode, Model, TileInst};
use util::*;

fn dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn load(name: &str) -> &'static Model {
    keep(load_model(&dir(name), name).expect("the fixture loads"))
}

const FIXTURES: [&str; 3] = ["fc", "mlp", "convmax"];

/// Integer input values, small enough that every sum stays on the simulator's 16-bit grid.
fn input(k: u32) -> i64 {
    (k % 5) as i64 - 2
}

/// Every word tile 0 (the compiler's input tile) sends, valid with the input counter.
fn place_all_sent_words(m: &mut Machine<'_>, model: &Model) {
    for inst in &model.tiles[0].program {
        if let TileInst::Send {
            mem_addr,
            send_width,
            vec,
            ..
        } = *inst
        {
            let values: Vec<i64> = (mem_addr..mem_addr + send_width * vec)
                .map(|a| fx(input(a)))
                .collect();
            m.write_input(0, mem_addr, &values).unwrap();
        }
    }
}

#[test]
fn the_fixture_directories_hold_one_model_each() {
    for name in FIXTURES {
        assert_eq!(model_names(&dir(name)).unwrap(), [name]);
    }
}

#[test]
fn every_fixture_runs_to_completion_with_every_tile_halted() {
    for name in FIXTURES {
        let model = load(name);
        assert_eq!(
            model.tiles.len(),
            3,
            "{name}: input tile, output tile, one compute tile"
        );
        assert!(model.instruction_memory_overflows().is_empty());
        for quirks in [Quirks::SIMULATOR, Quirks::COMPILER] {
            let mut m = machine(model, quirks);
            place_all_sent_words(&mut m, model);
            assert_eq!(m.run(), RunOutcome::Finished, "{name}");
            assert!((0..3).all(|t| m.tile_halted(t)));
            // Straight-line programs: every instruction ran exactly once.
            assert_eq!(
                m.stats().instructions(),
                model.instructions() as u64,
                "{name}"
            );
            assert_eq!(m.stats().packets_left, 0, "{name}");
        }
    }
}

#[test]
fn the_convolution_fixture_exercises_partial_sums_and_max_pooling() {
    let model = load("convmax");
    let mut m = machine(model, Quirks::COMPILER);
    place_all_sent_words(&mut m, model);
    assert!(m.run().is_finished());
    let s = m.stats();
    assert_eq!(s.core(CoreOpcode::Mvm), 28);
    assert_eq!(s.core(CoreOpcode::Store), 31);
    assert_eq!(s.alu(AluOp::Add), 144);
    assert_eq!(s.alu(AluOp::Max), 36);
    assert_eq!(s.alu(AluOp::Sig), 48);
    assert_eq!(s.undefined_words_stored, 0);
    assert_eq!(s.unwritten_mvm_inputs, 0);
    let out = m.read(1, 0, 12).unwrap();
    assert!(out.iter().all(|w| w.value.is_some() && w.valid));
}

fn sig(raw: i64) -> i64 {
    fixed::alu(AluOp::Sig, raw, 0, 0, 12).unwrap()
}

/// `sig(M · x)` on raw words with `M[r][c] = weight(r, c)`.
fn layer(x: &[i64], rows: usize, weight: impl Fn(usize, usize) -> i64) -> Vec<i64> {
    (0..rows)
        .map(|r| sig(x.iter().enumerate().map(|(c, v)| weight(r, c) * v).sum()))
        .collect()
}

fn run_with(model: &'static Model, quirks: Quirks, inputs: &[(u32, Vec<i64>)]) -> Machine<'static> {
    let mut m = Machine::new(
        model,
        MachineOptions {
            quirks,
            ..MachineOptions::default()
        },
    )
    .unwrap();
    for (addr, values) in inputs {
        m.write_input(0, *addr, values).unwrap();
    }
    assert!(m.run().is_finished());
    m
}

#[test]
fn the_fully_connected_fixture_computes_sig_of_m_x_in_the_compilers_reading() {
    // 136 inputs: the compiler keeps x[0..128] at tile 0's words 8.. and x[128..136] at 0..
    // (the order its sends and the compute tile's receives pair them in).
    let model = load("fc");
    let x: Vec<i64> = (0..136).map(|k| fx(input(k))).collect();
    let inputs = [(8, x[..128].to_vec()), (0, x[128..].to_vec())];
    let weight = |r: usize, c: usize| ((((r * 136 + c) * 7 + 3) % 5) as i64) - 2;
    let want: Vec<Option<i64>> = layer(&x, 12, weight).into_iter().map(Some).collect();
    let m = run_with(model, Quirks::COMPILER, &inputs);
    assert_eq!(m.read_values(1, 0, 12).unwrap(), want);
    // In the simulator's reading the file's rows meet the inputs: another result.
    let m = run_with(model, Quirks::SIMULATOR, &inputs);
    let got = m.read_values(1, 0, 12).unwrap();
    assert!(got.iter().all(Option::is_some));
    assert_ne!(got, want);
}

#[test]
fn the_two_layer_fixture_computes_in_the_compilers_reading_and_not_in_the_simulators() {
    let model = load("mlp");
    let x: Vec<i64> = (0..8).map(|k| fx(input(k))).collect();
    let hidden = layer(&x, 6, |r, c| ((r * 8 + c) % 3) as i64 - 1);
    let y = layer(&hidden, 24, |r, c| (((r * 6 + c) * 2) % 5) as i64 - 2);
    let want: Vec<Option<i64>> = y.into_iter().map(Some).collect();
    let inputs = [(0, x.clone())];
    assert_eq!(
        run_with(model, Quirks::COMPILER, &inputs)
            .read_values(1, 0, 24)
            .unwrap(),
        want
    );
    // Only the store stride differs: the second chunk of 12 outputs comes from registers
    // 529.. instead of 525.., reaching past the 24 results into the address register (537,
    // holding 8) and three registers never written.
    let stride_only = Quirks {
        store_bus_stride: true,
        ..Quirks::COMPILER
    };
    let m = run_with(model, stride_only, &inputs);
    let got = m.read_values(1, 0, 24).unwrap();
    assert_eq!(got[..12], want[..12]);
    assert_eq!(got[12..20], want[16..24]);
    assert_eq!(got[20..], [Some(8), None, None, None]);
    assert_eq!(m.stats().undefined_words_stored, 3);
    let w = m.read(1, 21, 1).unwrap()[0];
    assert!(w.was_written() && w.value.is_none());
}

#[test]
fn every_fixture_program_prints_back_to_itself() {
    for name in FIXTURES {
        let model = load(name);
        for (t, tile) in model.tiles.iter().enumerate() {
            let text: String = tile.program.iter().map(|i| format!("{i}\n")).collect();
            let again = parse_tile_program(&text, Path::new("printed")).unwrap();
            assert_eq!(again, tile.program, "{name} tile {t}");
            for core in &tile.cores {
                let text: String = core.program.iter().map(|i| format!("{i}\n")).collect();
                assert_eq!(
                    parse_core_program(&text, Path::new("printed")).unwrap(),
                    core.program
                );
            }
        }
    }
    let mlp = load("mlp");
    let printed: String = mlp.tiles[2].cores[0]
        .program
        .iter()
        .map(|i| format!("{i}\n"))
        .collect();
    insta::assert_snapshot!(printed, @r"
    set(d1=513, imm=0)
    load(d1=513, r1=513, load_width=8)
    copy(d1=0, r1=513, vec=8, src_type=1)
    mvm(['10'])
    alu('sig', d1=513, r1=256, vec=6)
    copy(d1=128, r1=513, vec=6, src_type=1)
    mvm(['01'])
    alu('sig', d1=513, r1=384, vec=24)
    set(d1=537, imm=8)
    store(d1=537, r1=513, store_width=12, vec=2)
    hlt()
    ");
}
