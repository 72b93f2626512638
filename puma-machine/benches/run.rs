//! Machine speed in instructions per second:
//!
//! - `fixture/<model>`: one whole run of each compiled fixture (tests/fixtures/): setting the
//!   machine up, placing the inputs, running to completion (the throughput counts the model's
//!   instructions, each run once);
//! - `loop`: one core counting to 10 000 with `alu_int`/`beq`/`jmp` and an `alu` and `mvm`
//!   in the loop body, the interpreter's steady state.
//!
//! `cargo bench -p pimdiff-puma --bench run [-- FILTER]`

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pimdiff_puma::formats::{load_model, parse_core_program};
use pimdiff_puma::machine::{Machine, MachineOptions, RunOutcome};
use pimdiff_puma::{Core, Model, Tile, TileInst};

fn fixture(name: &str) -> Model {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    load_model(&dir, name).expect("fixture loads")
}

fn run_fixture(model: &Model) -> RunOutcome {
    let mut m = Machine::new(model, MachineOptions::default()).expect("fits");
    for inst in &model.tiles[0].program {
        if let TileInst::Send {
            mem_addr,
            send_width,
            vec,
            ..
        } = *inst
        {
            let values: Vec<i64> = (0..send_width * vec)
                .map(|k| (k as i64 % 5) << 12)
                .collect();
            m.write_input(0, mem_addr, &values).expect("in range");
        }
    }
    m.run()
}

const LOOP: &str = "set(d1=600, imm=0)\nset(d1=601, imm=1)\nset(d1=602, imm=10000)\n\
                    set(d1=610, imm=4096, vec=16)\ncopy(d1=0, r1=610, vec=16)\n\
                    alu_int('add', d1=600, r1=600, r2=601)\nalu('add', d1=620, r1=610, r2=610, vec=16)\n\
                    mvm(['10'])\nbeq(r1=600, r2=602, imm=10)\njmp(imm=5)\nhlt()";

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("fixture");
    for name in ["fc", "mlp", "convmax"] {
        let model = fixture(name);
        assert!(run_fixture(&model).is_finished());
        group.throughput(Throughput::Elements(model.instructions() as u64));
        group.bench_function(name, |b| b.iter(|| run_fixture(&model)));
    }
    group.finish();

    let program = parse_core_program(LOOP, Path::new("loop")).expect("valid");
    let model = Model {
        name: "loop".into(),
        tiles: vec![Tile::new(vec![TileInst::Halt {}], vec![Core::new(program)])],
    };
    let run = || {
        let mut m = Machine::new(&model, MachineOptions::default()).expect("fits");
        let o = m.run();
        (o, m.stats().instructions())
    };
    let (outcome, instructions) = run();
    assert!(outcome.is_finished());
    let mut group = c.benchmark_group("loop");
    group.throughput(Throughput::Elements(instructions));
    group.bench_function("alu_int-alu-mvm-beq-jmp", |b| b.iter(run));
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
