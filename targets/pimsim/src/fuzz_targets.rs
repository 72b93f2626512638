//! The bodies of the cargo-fuzz targets in `fuzz/fuzz_targets/`.
//!
//! Each target there is one line calling a function here, so the same code runs three ways:
//! under libFuzzer (`cargo +nightly fuzz run conv_lowering`), under `cargo test` on stable
//! (`tests/fuzz_corpus.rs` replays the committed seeds in `fuzz/corpus/<target>/` and runs each
//! body for about a second over seeded random bytes), and in `pimdiff from-fuzz`, which rebuilds
//! the case a lowering target saw from a crash artifact with [`lowering_case`].
//!
//! What each target checks:
//!
//! - [`conv_lowering`], [`mvm_lowering`]: bytes → a valid case of that operator (the generator's
//!   one definition of a valid case, [`crate::generate::case_from_unstructured`]) → the in-repo
//!   compiler (or an injected bug, or a user's own compiler: [`lowering_run_config`]) → the
//!   interpreter → compared with the oracle. A finding panics with the rendered report, which
//!   libFuzzer records with the input.
//! - [`interp`]: an arbitrary program and crossbar contents ([`pimdiff_isa::gen`]) → the machine
//!   with a small step budget ends finished, faulted, deadlocked or out of steps — never a panic,
//!   never more steps than its budget.
//! - [`parse_program`]: bytes → every program reader (JSON, gzip JSON, assembly text, and the
//!   directory form) returns a value or an error, never a panic.
//! - [`parse_case`]: bytes split into `case.json` and `.npy` files → the case reader returns a
//!   value or an error, never a panic.
//!
//! Every body prints a line of statistics to stderr at 2^k executions (k ≥ 10): a campaign
//! that silently generates nothing useful (all inputs rejected, every case unsupported) shows.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use arbitrary::{Arbitrary, Unstructured};
use pimdiff_compiler::Lowering;
use pimdiff_isa::formats;
use pimdiff_isa::machine::{CellFill, Machine, MachineOptions, RunOutcome, Schedule};
use pimdiff_isa::{Arch, ArrayGroup, CoreCrossbars, CrossbarExport, Program};
use pimdiff_oracle::io::read_case;
use pimdiff_oracle::Case;

use crate::check::{check_case, RunConfig};
use crate::compilers::injected::BugClass;
use crate::compilers::CompilerUnderTest;
use crate::generate::{case_from_unstructured, GenConfig};
use crate::report::render_report;

/// The two targets whose input is a case, as `pimdiff from-fuzz --target` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[cfg_attr(feature = "cli", value(rename_all = "snake_case"))]
pub enum LoweringTarget {
    /// conv2d cases (`fuzz/fuzz_targets/conv_lowering.rs`).
    ConvLowering,
    /// MVM cases (`fuzz/fuzz_targets/mvm_lowering.rs`).
    MvmLowering,
}

impl LoweringTarget {
    /// The target's name, as in `cargo fuzz run <name>`.
    pub fn name(self) -> &'static str {
        match self {
            LoweringTarget::ConvLowering => "conv_lowering",
            LoweringTarget::MvmLowering => "mvm_lowering",
        }
    }
}

/// conv2d cases through the in-repo compiler; a finding panics with its report.
pub fn conv_lowering(data: &[u8]) {
    lowering(LoweringTarget::ConvLowering, data)
}

/// MVM cases through the in-repo compiler; a finding panics with its report.
pub fn mvm_lowering(data: &[u8]) {
    lowering(LoweringTarget::MvmLowering, data)
}

/// Largest step budget of the `interp` target. Generated programs have at most 8 × 64
/// instructions, so a budget drawn from `0..=INTERP_MAX_STEPS` ends some runs early and
/// lets others finish.
pub const INTERP_MAX_STEPS: u64 = 600;

/// Bytes → a machine set-up (step budget, schedule, cell fill, a little global memory) and an
/// arbitrary valid program with crossbar contents ([`pimdiff_isa::gen`]'s `Arbitrary` impl of
/// `Program`, plus an export drawn here) → [`Machine::run`]. The run must end finished,
/// faulted, deadlocked or out of steps without a panic, and never execute more instructions
/// than its budget (or than the program has: programs are straight-line). A set-up the
/// machine refuses (an export that does not fit) is an `Err`, also fine.
pub fn interp(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(setup) = interp_setup(&mut u) else {
        STATS.record("incomplete");
        return;
    };
    let mut machine = match Machine::new(&setup.program, &setup.xbars, setup.arch, setup.options) {
        Ok(m) => m,
        Err(_) => {
            STATS.record("setup-refused");
            return;
        }
    };
    for (addr, bytes) in &setup.gmem {
        machine
            .write_gmem(*addr, bytes)
            .expect("a write inside the first 4 KiB of global memory");
    }
    let outcome = machine.run();
    let budget = setup.options.step_budget;
    let total: u64 = setup.program.cores.iter().map(|c| c.len() as u64).sum();
    let executed = machine.stats().instructions;
    assert!(
        executed <= budget,
        "{executed} instructions executed on a step budget of {budget} ({outcome:?})"
    );
    assert!(
        executed <= total,
        "{executed} instructions executed in a straight-line program of {total}"
    );
    match &outcome {
        RunOutcome::OutOfSteps { executed: e } => {
            assert_eq!(*e, budget, "out of steps before the budget")
        }
        RunOutcome::Finished => assert_eq!(
            executed, total,
            "finished without executing every instruction"
        ),
        RunOutcome::Fault(_) | RunOutcome::Deadlock(_) => {}
    }
    let _ = outcome.to_string();
    STATS.record(outcome.kind());
}

/// Everything `interp` runs.
struct InterpSetup {
    program: Program,
    xbars: CrossbarExport,
    arch: Arch,
    options: MachineOptions,
    gmem: Vec<(u32, Vec<u8>)>,
}

fn interp_setup(u: &mut Unstructured) -> arbitrary::Result<InterpSetup> {
    let step_budget = u.int_in_range(0..=INTERP_MAX_STEPS)?;
    let schedule = if u.arbitrary()? {
        Schedule::Random(u.arbitrary()?)
    } else {
        Schedule::Fixed
    };
    let cell_fill = if u.arbitrary()? {
        CellFill::Random(u.arbitrary()?)
    } else {
        CellFill::Zero
    };
    let trace = u.ratio(1, 8)?;
    let frac_bits = u.int_in_range(0..=8)?;
    let gmem_addr = u.int_in_range(0..=4096u32)?;
    let gmem_len = u.int_in_range(0..=64usize)?;
    let gmem = vec![(gmem_addr, u.bytes(gmem_len.min(u.len()))?.to_vec())];
    let program = Program::arbitrary(u)?;
    let cores = program.cores.len() as u32;
    // Small defaults where the program states nothing: the machine zeroes every core's local
    // memory and crossbars per run, and the real defaults (1 MiB, 64 arrays of 128×128) would
    // make each execution milliseconds long.
    let hints = &program.arch;
    let arch = Arch {
        cores,
        arrays_per_core: hints.arrays_per_core.unwrap_or(4),
        array_rows: hints.array_rows.unwrap_or(8),
        array_cols: hints.array_cols.unwrap_or(8),
        local_memory_bytes: hints.local_memory_bytes.unwrap_or(4096),
        mesh_rows: hints.mesh.map_or(Arch::default_mesh(cores)[0], |m| m[0]),
        mesh_cols: hints.mesh.map_or(Arch::default_mesh(cores)[1], |m| m[1]),
        frac_bits: hints.frac_bits.unwrap_or(frac_bits),
    };
    let xbars = export_from(u, &arch)?;
    let options = MachineOptions {
        schedule,
        step_budget,
        trace,
        cell_fill,
    };
    Ok(InterpSetup {
        program,
        xbars,
        arch,
        options,
        gmem,
    })
}

/// Crossbar contents for some cores: cells mostly in the int8 range (sometimes wider, which
/// `mvmul`'s `mbiw` must refuse), groups of arrays that mostly fit the architecture (and
/// sometimes not, which the machine must refuse at set-up).
fn export_from(u: &mut Unstructured, arch: &Arch) -> arbitrary::Result<CrossbarExport> {
    let mut export = CrossbarExport::default();
    let cells_per_core =
        arch.arrays_per_core as usize * arch.array_rows as usize * arch.array_cols as usize;
    if cells_per_core > 1 << 16 {
        return Ok(export);
    }
    for core in 0..arch.cores {
        if u.is_empty() || !u.ratio(1, 2)? {
            continue;
        }
        let wide = u.ratio(1, 16)?;
        let mut cells = Vec::with_capacity(cells_per_core);
        for _ in 0..cells_per_core {
            let byte: i8 = if u.is_empty() { 0 } else { u.arbitrary()? };
            cells.push(if wide {
                byte as i32 * 1021
            } else {
                byte as i32
            });
        }
        let shape = (
            arch.arrays_per_core as usize,
            arch.array_rows as usize,
            arch.array_cols as usize,
        );
        let cells = ndarray::Array3::from_shape_vec(shape, cells).expect("cells_per_core elements");
        let mut groups = Vec::new();
        for group in 0..u.int_in_range(0..=3u32)? {
            let n = u.int_in_range(1..=arch.arrays_per_core.clamp(1, 4))?;
            let arrays = (0..n)
                .map(|_| u.int_in_range(0..=arch.arrays_per_core))
                .collect::<arbitrary::Result<Vec<u32>>>()?;
            let rows = u.int_in_range(1..=arch.array_rows.saturating_add(1))?;
            let cols = u.int_in_range(1..=n.saturating_mul(arch.array_cols).saturating_add(1))?;
            groups.push(ArrayGroup {
                group,
                arrays,
                rows,
                cols,
            });
        }
        let mbiw = u.int_in_range(1..=32)?;
        export.cores.insert(
            core,
            CoreCrossbars {
                mbiw,
                cells,
                groups,
            },
        );
    }
    Ok(export)
}

/// The generator configuration of a lowering target: the defaults (tiny cases, so that one
/// execution takes well under a millisecond), with the operator forced.
pub fn lowering_gen_config(target: LoweringTarget) -> GenConfig {
    let mvm_ratio = match target {
        LoweringTarget::ConvLowering => 0.0,
        LoweringTarget::MvmLowering => 1.0,
    };
    GenConfig {
        mvm_ratio,
        ..GenConfig::default()
    }
}

/// The case a lowering target builds from `data`: exactly what the target checks, so that
/// `pimdiff from-fuzz` reproduces a crash artifact. `None` when the bytes run out before a
/// case is complete (the target then checks nothing).
pub fn lowering_case(target: LoweringTarget, data: &[u8]) -> Option<Case> {
    let config = lowering_gen_config(target);
    let mut u = Unstructured::new(data);
    case_from_unstructured(&config, &mut u).ok()
}

/// The environment variable that makes the lowering targets check the in-repo compiler with
/// an injected miscompilation ([`crate::compilers::injected::BugClass`] names, e.g. `missing-bias`): a
/// quick proof that a fuzzing set-up finds and records bugs. Convert its artifacts with
/// `pimdiff from-fuzz ... --inject-bug <the same name>`.
pub const INJECT_BUG_ENV: &str = "PIMDIFF_FUZZ_INJECT_BUG";

/// The environment variable that makes the lowering targets check an external compiler: a
/// command line exactly as `--compiler-cmd` takes it (`mycc {case} {out}`; see
/// [`crate::compilers::external`]). Convert its artifacts with `pimdiff from-fuzz ...
/// --compiler-cmd <the same command>`.
pub const COMPILER_CMD_ENV: &str = "PIMDIFF_FUZZ_COMPILER_CMD";

/// The file beside a fuzz target's executable that holds the external compiler's command when
/// [`COMPILER_CMD_ENV`] is unset: ClusterFuzzLite runs the fuzzers without the workflow's
/// environment, so `.clusterfuzzlite/build.sh` puts the command here. `{here}` in it stands
/// for the directory of the executable (where the build also put the compiler).
pub const COMPILER_CMD_FILE: &str = "pimdiff-compiler-cmd";

/// Largest [`COMPILER_CMD_FILE`].
const MAX_COMPILER_CMD_BYTES: pimdiff_input::Limit = pimdiff_input::Limit {
    name: "MAX_COMPILER_CMD_BYTES",
    bytes: 64 << 10,
};

/// The external compiler command of the lowering targets: `from_env` (the value of
/// [`COMPILER_CMD_ENV`]) when set and not blank, else the first line of [`COMPILER_CMD_FILE`]
/// in `exe_dir`, with `{here}` replaced by `exe_dir` (quoted for the shell). `None`: the
/// in-repo compiler. A file that is there but unreadable is an error.
pub fn compiler_command(
    from_env: Option<String>,
    exe_dir: Option<&Path>,
) -> Result<Option<String>, String> {
    if let Some(command) = from_env.filter(|c| !c.trim().is_empty()) {
        return Ok(Some(command));
    }
    let Some(dir) = exe_dir else {
        return Ok(None);
    };
    let path = dir.join(COMPILER_CMD_FILE);
    if !path.exists() {
        return Ok(None);
    }
    let bytes = pimdiff_input::read(&path, MAX_COMPILER_CMD_BYTES)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    let here = crate::compilers::external::shell_quote(&dir.to_string_lossy());
    Ok(Some(line.replace("{here}", &here)))
}

/// The run configuration of the lowering targets for an injected bug name and an external
/// command (each `None` when not asked for): the in-repo compiler with its default options and
/// the default step budget when neither (`pimdiff from-fuzz` without compiler flags uses the
/// same). Both at once, or an unknown bug class, is an error: a misconfigured campaign must
/// stop rather than fuzz the wrong compiler.
pub fn lowering_run_config_for(
    inject_bug: Option<&str>,
    command: Option<String>,
) -> Result<RunConfig, String> {
    let bug = inject_bug.filter(|b| !b.is_empty());
    match (bug, command) {
        (Some(_), Some(_)) => Err(format!(
            "{INJECT_BUG_ENV} and an external compiler ({COMPILER_CMD_ENV} or {COMPILER_CMD_FILE}) \
             are both set: fuzz one compiler at a time"
        )),
        (None, Some(command)) => Ok(RunConfig::with_compiler(CompilerUnderTest::External {
            command,
        })),
        (Some(name), None) => match BugClass::from_name(name) {
            Some(bug) => Ok(RunConfig::with_compiler(CompilerUnderTest::Mutated(
                bug,
                Lowering::Channel,
            ))),
            None => {
                let known: Vec<&str> = BugClass::ALL.iter().map(|b| b.name()).collect();
                Err(format!(
                    "{INJECT_BUG_ENV}={name:?} names no bug class (known: {})",
                    known.join(", ")
                ))
            }
        },
        (None, None) => Ok(RunConfig::default()),
    }
}

/// The run configuration of the lowering targets ([`lowering_run_config_for`] of
/// [`INJECT_BUG_ENV`] and [`compiler_command`]), read once per process.
///
/// # Panics
/// On a misconfiguration ([`lowering_run_config_for`]'s errors, an unreadable
/// [`COMPILER_CMD_FILE`]): the campaign stops at once rather than fuzz the wrong compiler.
pub fn lowering_run_config() -> &'static RunConfig {
    static CONFIG: OnceLock<RunConfig> = OnceLock::new();
    CONFIG.get_or_init(|| {
        let exe = std::env::current_exe().ok();
        let config = compiler_command(
            std::env::var(COMPILER_CMD_ENV).ok(),
            exe.as_deref().and_then(Path::parent),
        )
        .and_then(|command| {
            lowering_run_config_for(std::env::var(INJECT_BUG_ENV).ok().as_deref(), command)
        });
        match config {
            Ok(config) => config,
            Err(why) => panic!("{why}"),
        }
    })
}

fn lowering(target: LoweringTarget, data: &[u8]) {
    let Some(case) = lowering_case(target, data) else {
        STATS.record("incomplete");
        return;
    };
    let cfg = lowering_run_config();
    let result = check_case(&case, cfg);
    STATS.record(result.outcome.kind().as_str());
    if result.outcome.is_finding() {
        panic!(
            "{} found a miscompilation (turn this artifact into a case with `pimdiff from-fuzz ARTIFACT --target {} OUT_DIR`):\n{}",
            target.name(),
            target.name(),
            render_report(&case, &result, cfg)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// parse_case: the framing of several files in one input.

/// The files of a case directory, in the order of [`encode_case_files`]'s presence bits.
pub const CASE_FILES: [&str; 5] = [
    "case.json",
    "input.npy",
    "weight.npy",
    "bias.npy",
    "expected.npy",
];

/// Packs case files into one `parse_case` input: a presence byte (bit `i` set when
/// `CASE_FILES[i]` is present), then for each present file in order its length (u16,
/// little-endian) and its bytes. This is how the committed seeds were made from case
/// directories; files longer than 65 535 bytes do not fit.
pub fn encode_case_files(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut mask = 0u8;
    let mut body = Vec::new();
    for (i, name) in CASE_FILES.iter().enumerate() {
        if let Some((_, bytes)) = files.iter().find(|(n, _)| n == name) {
            let len =
                u16::try_from(bytes.len()).expect("encode_case_files: a file over 65535 bytes");
            mask |= 1 << i;
            body.extend_from_slice(&len.to_le_bytes());
            body.extend_from_slice(bytes);
        }
    }
    let mut out = vec![mask];
    out.extend(body);
    out
}

/// The inverse of [`encode_case_files`], total over any bytes: a length past the end takes
/// what remains, a missing length byte ends the list.
pub fn decode_case_files(data: &[u8]) -> Vec<(&'static str, &[u8])> {
    let Some((&mask, mut rest)) = data.split_first() else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for (i, name) in CASE_FILES.iter().enumerate() {
        if mask & (1 << i) == 0 {
            continue;
        }
        let [lo, hi, tail @ ..] = rest else { break };
        let len = (u16::from_le_bytes([*lo, *hi]) as usize).min(tail.len());
        files.push((*name, &tail[..len]));
        rest = &tail[len..];
    }
    files
}

/// Bytes split into case files (see [`encode_case_files`]) written to a scratch directory →
/// [`read_case`] returns a case or an error, never panics.
pub fn parse_case(data: &[u8]) {
    let files = decode_case_files(data);
    let result = with_scratch_dir(|dir| {
        for (name, bytes) in &files {
            std::fs::write(dir.join(name), bytes)
                .expect("parse_case: writing the scratch directory");
        }
        read_case(dir)
    });
    STATS.record(if result.is_ok() { "valid" } else { "refused" });
}

// ---------------------------------------------------------------------------------------------
// A scratch directory per thread, emptied between uses.

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Option<Scratch>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` on an empty directory private to this thread. The directory is created on first
/// use (under the system temp dir), emptied after each use and removed when the thread ends.
fn with_scratch_dir<R>(f: impl FnOnce(&Path) -> R) -> R {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    SCRATCH.with(|cell| {
        let mut slot = cell.borrow_mut();
        let scratch = slot.get_or_insert_with(|| {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("pimdiff-fuzz-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir)
                .expect("fuzz_targets: creating a scratch directory in the temp dir");
            Scratch(dir)
        });
        let out = f(&scratch.0);
        for entry in std::fs::read_dir(&scratch.0)
            .expect("fuzz_targets: listing the scratch directory")
            .flatten()
        {
            let _ = std::fs::remove_file(entry.path());
        }
        out
    })
}

// ---------------------------------------------------------------------------------------------
// Statistics.

/// Outcome counts of one target, printed at 2^k executions.
struct Stats {
    execs: AtomicU64,
    kinds: Mutex<Vec<(&'static str, u64)>>,
}

static STATS: Stats = Stats {
    execs: AtomicU64::new(0),
    kinds: Mutex::new(Vec::new()),
};

impl Stats {
    fn record(&self, kind: &'static str) {
        let n = self.execs.fetch_add(1, Ordering::Relaxed) + 1;
        let Ok(mut kinds) = self.kinds.lock() else {
            return;
        };
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, c)) => *c += 1,
            None => kinds.push((kind, 1)),
        }
        if n >= 1024 && n.is_power_of_two() {
            let hist: Vec<String> = kinds.iter().map(|(k, c)| format!("{k} {c}")).collect();
            eprintln!("pimdiff fuzz stats after {n} inputs: {}", hist.join(", "));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// parse_program

/// Bytes → every program reader: JSON ([`formats::json::read_json`]), the format detection of
/// [`formats::load_bytes`] (gzip by magic bytes, then JSON or assembly), assembly text
/// ([`formats::asm::parse`], on the bytes as UTF-8, lossily), and — when the bytes contain a NUL
/// byte — the directory form, with the part before the first NUL as `config.json` and the rest
/// as `core_0.json`. Each returns a program or an error; a panic is a bug.
///
/// A program that loads must also round-trip: printed as assembly and parsed again, and
/// written as JSON and read again, it is the same program (isa.md: the assembly text
/// "round-trips with the JSON").
pub fn parse_program(data: &[u8]) {
    let json = formats::json::read_json(data);
    if let Ok(p) = &json {
        check_round_trips(p);
    }
    let detected = formats::load_bytes(data);
    if let Ok(p) = &detected {
        check_round_trips(p);
    }
    let text = String::from_utf8_lossy(data);
    let asm = formats::asm::parse(&text);
    if let Ok(p) = &asm {
        check_round_trips(p);
    }
    let mut valid = json.is_ok() || detected.is_ok() || asm.is_ok();
    if let Some(nul) = data.iter().position(|&b| b == 0) {
        let dir = with_scratch_dir(|dir| {
            std::fs::write(dir.join("config.json"), &data[..nul])
                .expect("parse_program: writing the scratch directory");
            std::fs::write(dir.join("core_0.json"), &data[nul + 1..])
                .expect("parse_program: writing the scratch directory");
            formats::read_program_dir(dir)
        });
        if let Ok(p) = &dir {
            check_round_trips(p);
        }
        valid |= dir.is_ok();
    }
    STATS.record(if valid { "valid" } else { "refused" });
}

/// Panics unless `p` survives assembly text and JSON unchanged.
fn check_round_trips(p: &pimdiff_isa::Program) {
    let text = formats::asm::print(p);
    match formats::asm::parse(&text) {
        Ok(back) => assert_eq!(&back, p, "the assembly text does not round-trip:\n{text}"),
        Err(e) => panic!("printed assembly does not parse again: {e}\n{text}"),
    }
    let mut json = Vec::new();
    formats::json::write_json(p, &mut json).expect("writing JSON to memory");
    match formats::json::read_json(json.as_slice()) {
        Ok(back) => assert_eq!(
            &back,
            p,
            "the JSON does not round-trip:\n{}",
            String::from_utf8_lossy(&json)
        ),
        Err(e) => panic!(
            "written JSON does not read again: {e}\n{}",
            String::from_utf8_lossy(&json)
        ),
    }
}
