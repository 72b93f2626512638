//! `pimdiff run`: load a program, run it on the functional machine, print a summary.
//!
//! Exit codes (`pimdiff::cli::exit_codes`): 0 every core finished; 1 a fault or deadlock (the
//! report goes to stderr), a race (unless `--no-race-check`), and with `--strict` an
//! uninitialized read; 2 bad input (unreadable or invalid program, crossbar export or flags);
//! 4 the step budget ran out first, with no finding: no verdict (the program may just be long).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use crate::registry::flags::parse_schedule;
use anyhow::{bail, Context};
use pimdiff_isa::machine::{CellFill, Machine, MachineOptions, RunOutcome, Schedule, Stats, Trace};
use pimdiff_isa::xbar::read_export_dir;
use pimdiff_isa::{Arch, ArchHints, CrossbarExport};

use super::exit_codes::help;
use super::gmem::{parse_gmem_arg, GmemArg, Preloads};
use super::{exit, EXIT_FINDING, EXIT_NO_VERDICT, EXIT_OK};
use crate::check::concurrency::Checks;

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[
        (EXIT_OK, "every core finished"),
        (
            EXIT_FINDING,
            "a fault, a deadlock, a race, or (--strict) an uninitialized read",
        ),
        (
            EXIT_NO_VERDICT,
            "the step budget ran out before the program ended: no verdict (raise --step-budget)",
        ),
    ],
    "pimdiff run bundle/   # a bundle `pimdiff compile` wrote: program, xbars/, io.json",
))]
pub struct Args {
    /// The program: a pimsim-nn / PIMCOMP-NN JSON file (plain or .gz), a program directory
    /// (config.json + core_<i>.json), or our assembly text.
    pub program: PathBuf,
    /// Crossbar export directory (core_<i>.npy + core_<i>.json). Default: the program
    /// directory's `xbars/` if it has one; otherwise none, and groups come from the program's
    /// config (array_group_map or PIMCOMP-NN's array count) with --cells.
    #[arg(long, value_name = "DIR")]
    pub xbars: Option<PathBuf>,
    /// Write the final state (gmem.bin, core_<i>.lmem.bin, core_<i>.regs.json, stats.json,
    /// and trace.json with --trace) into DIR, also after a fault or deadlock.
    #[arg(long, value_name = "DIR")]
    pub dump: Option<PathBuf>,
    /// Core interleaving: `fixed` (round-robin, each core runs until it blocks) or
    /// `random:SEED` (seeded random order and slice lengths).
    #[arg(long, default_value = "fixed", value_parser = parse_schedule, value_name = "fixed|random:SEED|pct:SEED:D")]
    pub schedule: Schedule,
    /// Record and print every instruction's register and memory changes (slow).
    #[arg(long)]
    pub trace: bool,
    /// Cells of groups the program's config describes without a crossbar export:
    /// `zero` or `random:SEED` (signed 8-bit).
    #[arg(long, default_value = "zero", value_parser = parse_cells, value_name = "zero|random:SEED")]
    pub cells: CellFill,
    /// Local memory per core in bytes [default: the program's, else 1048576 — enough for every
    /// PIMCOMP-NN program in shared/external/pimcomp].
    #[arg(long, value_name = "N")]
    pub local_memory_bytes: Option<u32>,
    /// Crossbar arrays per core [default: the program's, else 64].
    #[arg(long, value_name = "N")]
    pub arrays_per_core: Option<u32>,
    /// Rows per crossbar array [default: the program's, else 128].
    #[arg(long, value_name = "N")]
    pub array_rows: Option<u32>,
    /// Columns per crossbar array [default: the program's, else 128].
    #[arg(long, value_name = "N")]
    pub array_cols: Option<u32>,
    /// NoC mesh as ROWSxCOLS, core i at row i / COLS, column i % COLS [default: the
    /// program's, else the most square mesh holding every core].
    #[arg(long, value_parser = parse_mesh, value_name = "RxC")]
    pub mesh: Option<[u32; 2]>,
    /// Fraction bits of vtanh / vsigm fixed-point values [default: the program's, else 0].
    #[arg(long, value_name = "F")]
    pub frac_bits: Option<u32>,
    /// Stop with "out of steps" after this many executed instructions.
    #[arg(long, default_value_t = MachineOptions::DEFAULT_STEP_BUDGET, value_name = "N")]
    pub step_budget: u64,
    /// Write an int8 .npy array, flattened row-major, into global memory at element (= byte)
    /// address ADDR (decimal or 0x hex) before the run. Repeatable; preloads must not overlap.
    #[arg(long, value_parser = parse_gmem_arg, value_name = "ADDR=FILE.npy")]
    pub gmem: Vec<GmemArg>,
    /// Do not check for races (two cores accessing the same global bytes, at least one
    /// writing, unordered by sync/wait or send/recv). A race is a finding (exit 1).
    #[arg(long)]
    pub no_race_check: bool,
    /// Make uninitialized reads (bytes neither the host nor an instruction wrote) a finding
    /// (exit 1); without it they are counted and listed only.
    #[arg(long)]
    pub strict: bool,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let t0 = Instant::now();
    let program = pimdiff_isa::formats::load_program(&args.program)
        .with_context(|| format!("cannot load program {}", args.program.display()))?;
    let preloads = Preloads::read(&args.gmem)?;
    let load_time = t0.elapsed();
    let xbar_dir = args.xbars.clone().or_else(|| default_xbars(&args.program));
    let export = match &xbar_dir {
        Some(dir) => read_export_dir(dir)
            .with_context(|| format!("cannot read crossbar export {}", dir.display()))?,
        None => CrossbarExport::default(),
    };
    let overrides = ArchHints {
        arrays_per_core: args.arrays_per_core,
        array_rows: args.array_rows,
        array_cols: args.array_cols,
        local_memory_bytes: args.local_memory_bytes,
        mesh: args.mesh,
        frac_bits: args.frac_bits,
        ..Default::default()
    };
    let arch = Arch::resolve(&program.arch, program.cores.len() as u32, &overrides);
    let options = MachineOptions {
        schedule: args.schedule,
        step_budget: args.step_budget,
        trace: args.trace,
        cell_fill: args.cells,
    };
    let mut machine =
        Machine::new(&program, &export, arch, options).context("cannot set up the machine")?;
    preloads.apply(&mut machine)?;
    if !preloads.is_empty() {
        println!("global memory preloaded: {} bytes", preloads.total_bytes());
    }
    let mut checks = Checks::new(!args.no_race_check, true, &program);
    let t1 = Instant::now();
    let outcome = machine.run_observed(&mut checks);
    let run_time = t1.elapsed();

    if let Some(trace) = machine.trace() {
        print_trace(trace);
    }
    print_summary(&args.program, &arch, machine.stats(), load_time, run_time);
    if let Some(dir) = &args.dump {
        machine
            .dump(dir)
            .with_context(|| format!("cannot write the dump to {}", dir.display()))?;
        if let Some(trace) = machine.trace() {
            let text = serde_json::to_string(trace)?;
            std::fs::write(dir.join("trace.json"), text).context("cannot write trace.json")?;
        }
        println!("state dumped to {}", dir.display());
    }
    let flagged = print_checks(&checks, args.strict);
    match outcome {
        RunOutcome::Finished if flagged => {
            println!("outcome: finished, with findings of the checks");
            Ok(exit(EXIT_FINDING))
        }
        RunOutcome::Finished => {
            println!("outcome: finished");
            Ok(exit(EXIT_OK))
        }
        RunOutcome::OutOfSteps { .. } if !flagged => {
            println!("outcome: out-of-steps (no verdict: raise --step-budget)");
            Ok(exit(EXIT_NO_VERDICT))
        }
        other => {
            println!("outcome: {}", other.kind());
            eprintln!("{other}");
            Ok(exit(EXIT_FINDING))
        }
    }
}

/// Prints the race and uninitialized-read counts with their first sites; says whether they
/// make the run a finding (any race; uninitialized reads with `strict`).
fn print_checks(checks: &Checks, strict: bool) -> bool {
    const SHOWN: usize = 5;
    let mut flagged = false;
    match &checks.race {
        None => println!("races: not checked"),
        Some(r) => {
            println!("races: {}", r.race_count());
            for race in r.races().iter().take(SHOWN) {
                println!("  {race}");
            }
            flagged |= r.race_count() > 0;
        }
    }
    if let Some(u) = &checks.uninit {
        println!("uninitialized reads: {}", u.count());
        for read in u.reads().iter().take(SHOWN) {
            println!("  {read}");
        }
        flagged |= strict && u.count() > 0;
    }
    flagged
}

/// A program directory's `xbars/` subdirectory, when it has one.
fn default_xbars(program: &Path) -> Option<PathBuf> {
    let dir = program.join("xbars");
    (program.is_dir() && dir.is_dir()).then_some(dir)
}

fn print_summary(
    path: &Path,
    arch: &Arch,
    stats: &Stats,
    load: std::time::Duration,
    run: std::time::Duration,
) {
    println!("program: {} ({} cores)", path.display(), arch.cores);
    println!(
        "arch: {} arrays/core of {}x{}, local memory {} bytes, mesh {}x{}, frac_bits {}",
        arch.arrays_per_core,
        arch.array_rows,
        arch.array_cols,
        arch.local_memory_bytes,
        arch.mesh_rows,
        arch.mesh_cols,
        arch.frac_bits
    );
    println!("instructions executed: {}", stats.instructions);
    let by_op: Vec<String> = stats
        .by_opcode()
        .iter()
        .map(|(op, n)| format!("{op} {n}"))
        .collect();
    println!("by opcode: {}", by_op.join(", "));
    println!(
        "noc: {} messages, {} bytes, {} hop-weighted bytes, {} core pairs",
        stats.noc.messages,
        stats.noc.bytes,
        stats.noc.hop_bytes,
        stats.noc.pairs.len()
    );
    println!("overflow events: {}", stats.overflow_events);
    for o in &stats.overflows {
        println!(
            "  core {} pc {}: value {} wrapped to {} bits as {}",
            o.core, o.pc, o.value, o.bits, o.stored
        );
    }
    println!("float lldi immediates: {}", stats.float_lldi);
    println!("global memory touched: {} bytes", stats.gmem_touched_bytes);
    let max_lmem = stats
        .cores
        .iter()
        .map(|c| c.lmem_high_water)
        .max()
        .unwrap_or(0);
    println!("largest local memory address touched: {max_lmem} bytes");
    let secs = run.as_secs_f64();
    let rate = if secs > 0.0 {
        stats.instructions as f64 / secs
    } else {
        0.0
    };
    println!(
        "wall time: load {:.3} s, run {:.3} s ({:.1} M instructions/s)",
        load.as_secs_f64(),
        secs,
        rate / 1e6
    );
}

fn print_trace(trace: &Trace) {
    for e in &trace.entries {
        let mut parts = Vec::new();
        for r in &e.regs {
            parts.push(format!("r{} {} -> {}", r.reg, r.old, r.new));
        }
        if let Some((i, o)) = e.widths {
            parts.push(format!("ibiw/obiw -> {i}/{o}"));
        }
        for ev in &e.events {
            parts.push(format!(
                "core {} event {} {} -> {}",
                ev.core, ev.event, ev.old, ev.new
            ));
        }
        for (space, changes) in [("lmem", &e.lmem), ("gmem", &e.gmem)] {
            for c in changes {
                parts.push(format!(
                    "{space}[{}..{}] {} -> {}",
                    c.addr,
                    c.addr as u64 + c.old.len() as u64,
                    hex(&c.old),
                    hex(&c.new)
                ));
            }
        }
        if parts.is_empty() {
            parts.push("no change".to_string());
        }
        println!(
            "trace core {} pc {}: {}: {}",
            e.core,
            e.pc,
            e.inst,
            parts.join("; ")
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn parse_seeded(s: &str, what: &str) -> anyhow::Result<u64> {
    let Some(seed) = s.strip_prefix("random:") else {
        bail!("expected {what} or random:SEED, got `{s}`")
    };
    seed.parse().with_context(|| format!("bad seed `{seed}`"))
}

fn parse_cells(s: &str) -> anyhow::Result<CellFill> {
    if s == "zero" {
        return Ok(CellFill::Zero);
    }
    Ok(CellFill::Random(parse_seeded(s, "zero")?))
}

fn parse_mesh(s: &str) -> anyhow::Result<[u32; 2]> {
    let Some((r, c)) = s.split_once(['x', 'X']) else {
        bail!("expected ROWSxCOLS, got `{s}`")
    };
    let (r, c): (u32, u32) = (
        r.parse().context("bad mesh rows")?,
        c.parse().context("bad mesh cols")?,
    );
    if r == 0 || c == 0 {
        bail!("mesh dimensions must be at least 1, got `{s}`");
    }
    Ok([r, c])
}
