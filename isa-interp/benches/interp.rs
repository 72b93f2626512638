//! Interpreter speed, a plain `main` that prints its figures:
//!
//! - `mvmul`: a 128 × 128 group, 8-bit inputs and weights, 32-bit outputs, on one core, in
//!   multiply-accumulates per second (the whole instruction: reading inputs, the product,
//!   writing and wrapping outputs);
//! - every PIMCOMP-NN program in `shared/external/pimcomp` (skipped when absent): load time,
//!   run time and instructions per second with zero cells and the default architecture,
//!   then the run again with an observer that does nothing (the cost of delivering events).
//!
//! `cargo bench -p pimdiff-isa --bench interp [-- FILTER]` (FILTER: `mvmul`, or part of a
//! program name).

use std::path::{Path, PathBuf};
use std::time::Instant;

use ndarray::Array3;
use pimdiff_isa::machine::{Event, Machine, MachineOptions, Observer, RunOutcome, Site, View};
use pimdiff_isa::xbar::{ArrayGroup, CoreCrossbars};
use pimdiff_isa::{Arch, CrossbarExport, GroupSpec, Inst, Program, Reg, Width};
use rand::{Rng, SeedableRng};

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let wants = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    if wants("mvmul") {
        bench_mvmul();
    }
    if wants("setup") {
        bench_setup();
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/external/pimcomp");
    if !dir.is_dir() {
        println!("PIMCOMP-NN programs: skipped ({} is absent)", dir.display());
        return;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read pimcomp dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.ends_with(".json.gz") && !n.contains("-verification") && !n.contains("-agmap")
        })
        .collect();
    files.sort();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if wants(&name) {
            bench_program(&f, &name);
        }
    }
}

fn r(i: u32) -> Reg {
    Reg::new(i).unwrap()
}

fn bench_mvmul() {
    let (rows, cols, n) = (128u32, 128u32, 4000usize);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let cells = Array3::from_shape_fn((1, rows as usize, cols as usize), |_| {
        rng.random_range(-128..=127)
    });
    let mut export = CrossbarExport::default();
    export.cores.insert(
        0,
        CoreCrossbars {
            mbiw: 8,
            cells,
            groups: vec![ArrayGroup {
                group: 0,
                arrays: vec![0],
                rows,
                cols,
            }],
        },
    );
    let mut insts = vec![
        Inst::Setbw {
            ibiw: Width::W8,
            obiw: Width::W32,
        },
        Inst::Sldi { rd: r(1), imm: 0 },
        Inst::Sldi {
            rd: r(3),
            imm: 1024,
        },
    ];
    insts.extend(std::iter::repeat_n(
        Inst::Mvmul {
            rd: r(3),
            rs1: r(1),
            mbiw: Width::W8,
            relu: false,
            group: 0,
        },
        n,
    ));
    let program = Program {
        cores: vec![insts],
        groups: GroupSpec::ExportOnly,
        ..Default::default()
    };
    let arch = Arch {
        cores: 1,
        arrays_per_core: 1,
        array_rows: rows,
        array_cols: cols,
        ..Arch::with_defaults(1)
    };
    let input: Vec<u8> = (0..rows).map(|_| rng.random::<u8>()).collect();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let mut m = Machine::new(&program, &export, arch, MachineOptions::default()).unwrap();
        m.write_lmem(0, 0, &input).unwrap();
        let t = Instant::now();
        assert_eq!(m.run(), RunOutcome::Finished);
        best = best.min(t.elapsed().as_secs_f64());
    }
    let macs = n as f64 * rows as f64 * cols as f64;
    println!(
        "mvmul 128x128, 8-bit in/weights, 32-bit out: {n} instructions in {:.4} s = {:.2} G MAC/s ({:.2} µs per mvmul; best of 5)",
        best,
        macs / best / 1e9,
        best / n as f64 * 1e6
    );
}

/// Machines built and run per second for a hunt-sized program: 4 cores, a 16 × 16 export
/// group each, the default 1 MiB local memories.
fn bench_setup() {
    let mut export = CrossbarExport::default();
    for c in 0..4 {
        export.cores.insert(
            c,
            CoreCrossbars {
                mbiw: 8,
                cells: Array3::from_elem((4, 16, 16), 3),
                groups: vec![ArrayGroup {
                    group: 0,
                    arrays: vec![0, 1],
                    rows: 16,
                    cols: 32,
                }],
            },
        );
    }
    let core = vec![
        Inst::Sldi { rd: r(1), imm: 0 },
        Inst::Sldi { rd: r(3), imm: 64 },
        Inst::Mvmul {
            rd: r(3),
            rs1: r(1),
            mbiw: Width::W8,
            relu: true,
            group: 0,
        },
    ];
    let program = Program {
        cores: vec![core; 4],
        groups: GroupSpec::ExportOnly,
        ..Default::default()
    };
    let arch = Arch {
        arrays_per_core: 4,
        array_rows: 16,
        array_cols: 16,
        ..Arch::with_defaults(4)
    };
    let n = 5000;
    let t = Instant::now();
    for _ in 0..n {
        let mut m = Machine::new(&program, &export, arch, MachineOptions::default()).unwrap();
        m.write_gmem(0, &[1; 64]).unwrap();
        assert_eq!(m.run(), RunOutcome::Finished);
    }
    let s = t.elapsed().as_secs_f64();
    println!("setup + run of a 4-core, 12-instruction program with an export: {:.0} machines/s ({:.1} µs each)", n as f64 / s, s / n as f64 * 1e6);
}

fn bench_program(path: &Path, name: &str) {
    let t = Instant::now();
    let program = match pimdiff_isa::formats::load_program(path) {
        Ok(p) => p,
        Err(e) => {
            println!("{name}: cannot load: {e}");
            return;
        }
    };
    let load = t.elapsed().as_secs_f64();
    let arch = Arch::resolve(
        &program.arch,
        program.cores.len() as u32,
        &Default::default(),
    );
    let (outcome, run, n) = timed_run(&program, arch, None);
    println!(
        "{name}: {} cores, {n} instructions, load {load:.2} s, run {run:.2} s ({:.1} M instructions/s), total {:.2} s, {}",
        program.cores.len(),
        n as f64 / run / 1e6,
        load + run,
        outcome.kind()
    );
    let (_, observed, _) = timed_run(&program, arch, Some(&mut Nothing));
    println!(
        "{name}: observed by an observer that does nothing: run {observed:.2} s ({:.2}x)",
        observed / run
    );
}

/// Runs `program` with zero cells, optionally observed: outcome, seconds, instructions.
fn timed_run(
    program: &Program,
    arch: Arch,
    observer: Option<&mut dyn Observer>,
) -> (RunOutcome, f64, u64) {
    let t = Instant::now();
    let mut m = Machine::new(
        program,
        &CrossbarExport::default(),
        arch,
        MachineOptions::default(),
    )
    .unwrap();
    let outcome = match observer {
        Some(o) => m.run_observed(o),
        None => m.run(),
    };
    (outcome, t.elapsed().as_secs_f64(), m.stats().instructions)
}

/// The cost of delivering events, without the cost of consuming them.
struct Nothing;

impl Observer for Nothing {
    fn event(&mut self, _: &Site, _: &Event<'_>, _: &View<'_>) {}
}
