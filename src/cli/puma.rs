//! `pimdiff puma MODEL.cpp`: compile a network written against the PUMA compiler's
//! `include/puma.h` with a tree's compiler and check every output exactly against the model
//! the compiler itself dumped (`pimdiff::targets::puma::user_model`).
//!
//! Exit codes (`pimdiff::cli::exit_codes`): 0 every known output element of every model the
//! program compiled agrees (at least one); 1 the compiler crashed or failed an assertion, or
//! its programs compute a wrong output, fault, deadlock or cannot be loaded; 2 bad input (the
//! file, the tree, a program that does not compile with g++'s message, a program failing in
//! its own code or exiting non-zero); 4 no verdict, with the reason (every output unknown, an
//! operation the reference does not model, a compile or run past its limits).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use pimdiff_puma::machine::Quirks;
use pimdiff_target_puma::check::CheckOptions;
use pimdiff_target_puma::compile::PumaSetup;
use pimdiff_target_puma::user_model::{
    check_model_cpp, source_file, UserOptions, UserReport, UserVerdict,
};

use super::exit_codes::help;
use super::{exit_with, EXIT_FINDING, EXIT_NO_VERDICT, EXIT_OK};
use crate::registry::flags::parse_positive_duration;
use crate::registry::puma::QuirksChoice;

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[
        (
            EXIT_OK,
            "every known output element of every model the program compiled agrees",
        ),
        (
            EXIT_FINDING,
            "the compiler crashed or failed an assertion, or its programs compute a wrong \
             output, fault or deadlock",
        ),
        (
            EXIT_NO_VERDICT,
            "no verdict, with the reason: every output unknown, an operation the reference \
             does not model, a compile past --timeout",
        ),
    ],
    "pimdiff puma test/conv-layer.cpp --puma-dir TREE -- 9 9 128 256 3 3 1 1 x",
))]
pub struct Args {
    /// The network: a C++ program using include/puma.h that calls Model::compile (headers
    /// next to it are found).
    pub model: PathBuf,
    /// Arguments of the program.
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<OsString>,
    /// A tree of scripts/build-puma.sh, plain or sanitizer (default: $PUMA_DIR).
    #[arg(long, value_name = "DIR")]
    pub puma_dir: Option<PathBuf>,
    /// Seed of the inputs and weights.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Deadline of g++ and of the program's run (the compile); past it, no verdict.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, default_value = "120s")]
    pub timeout: Duration,
    /// Resident-memory limit of the program's run, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 4096)]
    pub max_rss_mib: u64,
    /// The machine's semantics where the simulator contradicts the compiler's output.
    #[arg(long, value_enum, default_value = "compiler")]
    pub quirks: QuirksChoice,
    /// Steps of the machine before a run is cut (no verdict).
    #[arg(long, value_name = "N", default_value_t = 1 << 28)]
    pub max_steps: u64,
    /// Keep everything the compiler wrote, the weights checked with and report.json in DIR
    /// (which must not exist or be empty).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    // The file first: a missing model is named before a missing tree.
    source_file(&args.model).map_err(|e| anyhow::anyhow!("{e}"))?;
    let setup = PumaSetup::locate(
        args.puma_dir.as_deref(),
        None,
        args.timeout,
        args.max_rss_mib.saturating_mul(1 << 20),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let opts = UserOptions {
        model_cpp: args.model.clone(),
        args: args.args.clone(),
        tree: setup.plain.clone(),
        seed: args.seed,
        timeout: args.timeout,
        max_rss_bytes: setup.max_rss_bytes,
        check: CheckOptions {
            quirks: match args.quirks {
                QuirksChoice::Compiler => Quirks::COMPILER,
                QuirksChoice::Simulator => Quirks::SIMULATOR,
            },
            step_budget: args.max_steps,
        },
        write_weights: args.out.is_some(),
    };
    let report = check_model_cpp(&opts).map_err(|e| anyhow::anyhow!("{e}"))?;
    print!("{}", text(&report));
    if let Some(out) = &args.out {
        write_out(&report, out).with_context(|| format!("cannot write {}", out.display()))?;
        println!("kept: {}", out.display());
    }
    Ok(exit_with(report.verdict.engine()))
}

/// The report for people.
fn text(r: &UserReport) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "pimdiff puma: {} (seed {}, quirks {})\ntree: {}\nbuilt in {:.1} s; the program ran in {:.1} s: {}",
        r.model_cpp.display(),
        r.seed,
        r.quirks,
        r.tree.display(),
        r.build_seconds,
        r.run_seconds,
        r.run_status
    );
    if let Some(c) = &r.compile {
        let _ = writeln!(t, "compile: {}", c.detail);
        for f in c.frames.iter().filter(|f| f.own).take(8) {
            let _ = writeln!(t, "  at {}", f.text());
        }
    }
    for m in &r.models {
        let ops: Vec<String> = m
            .operations
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        let _ = writeln!(
            t,
            "model `{}`: {} operations ({}); {} matrices in {} MVMUs ({} weights); {} input and {} output elements; {} tiles",
            m.model,
            m.operations.iter().map(|(_, n)| n).sum::<u64>(),
            ops.join(", "),
            m.matrices,
            m.matrix_tiles,
            m.weights,
            m.input_elements,
            m.output_elements,
            m.tiles
        );
        let _ = writeln!(t, "  {}", m.detail);
        let _ = match &m.api {
            Ok(a) => writeln!(
                t,
                "  against what the API calls ask: {} elements compared, {} unknown",
                a.compared, a.unknown
            ),
            Err(e) => writeln!(t, "  against what the API calls ask: {e}"),
        };
        if let Some(s) = m
            .outcome
            .as_ref()
            .and_then(|o| o.checked.as_ref())
            .and_then(|c| match &c.verdict {
                pimdiff_target_puma::check::Verdict::Mismatch(m) => m.slice.clone(),
                _ => None,
            })
        {
            for step in &s.steps {
                let _ = writeln!(
                    t,
                    "    tile {} core {} pc {}: {}",
                    step.tile, step.core, step.pc, step.text
                );
            }
        }
        for n in &m.notes {
            let _ = writeln!(t, "  note: {n}");
        }
    }
    let word = match r.verdict {
        UserVerdict::Agree => "agree",
        UserVerdict::Finding => "FINDING",
        UserVerdict::NoVerdict => "no verdict",
    };
    let _ = writeln!(t, "verdict: {word}: {}", r.reason);
    t
}

/// `--out`: the run directory's files and `report.json`, written atomically.
fn write_out(r: &UserReport, out: &Path) -> anyhow::Result<()> {
    let dir = pimdiff_atomic::AtomicDir::create(out)?;
    if let Some(run) = &r.dir {
        for entry in std::fs::read_dir(run.path())? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                std::fs::copy(entry.path(), dir.path().join(entry.file_name()))?;
            }
        }
    }
    std::fs::write(
        dir.path().join("report.json"),
        serde_json::to_string_pretty(r)?,
    )?;
    std::fs::write(dir.path().join("report.txt"), text(r))?;
    dir.commit()?;
    Ok(())
}
