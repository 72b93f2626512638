//! Findings and the summary of a `--target pimcomp-nn` hunt on disk.
//!
//! A finding directory `findings/<nnn>-<slug>/` holds: `model.json` (the minimized network as
//! PIMCOMP-NN reads it), `original-model.json`, `network.json` (our form, for tools),
//! `outcome.json` (signature, pipeline, pinned time, seeds, frames, minimization), `compiler/`
//! (the compile's stdout, stderr, `SimulationInfo.gz`, `VerificationInfo.json` as written),
//! `check/` (`pimdiff pimcomp --out` of the program, when it was checked), `repro.sh` (one
//! command that recompiles and rechecks) and `report.md`. A `cross-mode` finding compiles the
//! model in both pipelines and saves both: `compiler/batch/` and `compiler/element/`, `check/`
//! = `pimdiff pimcomp BATCH --cross ELEMENT --out` (`batch/`, `element/`, `cross.json`), and a
//! `repro.sh` that recompiles both and runs that comparison. Every directory is written to a
//! temporary sibling and renamed into place.

use std::path::{Path, PathBuf};

use pimdiff_atomic::Error;

use super::case::{finding_pipelines, is_cross, pin_time, CaseContext};
use super::compile::{command_line, CompileRun, Pipeline};
use super::outcome::CaseOutcome;
use super::reductions::Shrunk;
use crate::network::Network;
use pimdiff_engine::finding::{to_json_text, write_new, FindingMeta, Kind, Signature};

/// Everything a finding directory is written from.
pub struct FindingRecord {
    pub signature: Signature,
    pub pipeline: Pipeline,
    pub case_seed: u64,
    pub original: Network,
    pub minimized: Network,
    pub stats: Shrunk,
    /// The minimized network's outcome (its signature is `signature` unless the compiler is
    /// not deterministic after all: then the report says so).
    pub outcome: CaseOutcome,
    /// The minimized network's compiles, in pipeline order: both for a `cross-mode` finding,
    /// else at most the one of `pipeline` (none when PIMCOMP-NN could not be run).
    pub runs: Vec<(Pipeline, CompileRun)>,
}

/// What `finding.json` records beside the common fields (its `details`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct PimcompDetails {
    /// The pipeline the finding is filed under (`element` for a `cross-mode` finding).
    pub pipeline: Pipeline,
    /// Every pipeline whose compile the finding saves: `["batch", "element"]` for a
    /// `cross-mode` finding (under `compiler/batch/` and `compiler/element/`), else
    /// `[pipeline]` (under `compiler/`).
    pub pipelines: Vec<Pipeline>,
    /// The value `time()` returned while the compiler ran.
    pub pin_time: u64,
    /// Whether the saved minimized network still shows the signature.
    pub reproduced: bool,
    /// Nodes, largest channel count and largest spatial size before and after minimization.
    pub minimization: Shrunk,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes the files of a finding into `root` (a directory under construction) and fills
/// the target's fields of `meta`: `model.json` (the minimized network as PIMCOMP-NN reads it),
/// `original-model.json`, `network.json` (our form, for tools), `outcome.json` (what the run
/// of the minimized network came to), `compiler/` (the compiles), `check/` (`pimdiff pimcomp
/// --out` of the program), `repro.sh` and `report.md`.
pub fn write_files(
    ctx: &CaseContext,
    root: &Path,
    r: &FindingRecord,
    meta: &mut FindingMeta,
) -> Result<(), Error> {
    let pin = pin_time(r.case_seed);
    let details = PimcompDetails {
        pipeline: r.pipeline,
        pipelines: finding_pipelines(&r.signature),
        pin_time: pin,
        reproduced: r.outcome.has(&r.signature),
        minimization: r.stats.clone(),
    };
    let model = r.minimized.to_model_json().unwrap_or_default();
    write_new(&root.join("model.json"), model.as_bytes())?;
    let original = r.original.to_model_json().unwrap_or_default();
    write_new(&root.join("original-model.json"), original.as_bytes())?;
    write_new(
        &root.join("network.json"),
        to_json_text(&r.minimized).as_bytes(),
    )?;
    write_new(
        &root.join("outcome.json"),
        to_json_text(&r.outcome).as_bytes(),
    )?;
    let checked = save_compiles(root, r)?;
    let repro = repro_script(ctx, &details.pipelines, pin, r.case_seed);
    write_new(&root.join("repro.sh"), repro.as_bytes())?;
    write_new(
        &root.join("report.md"),
        render_report(meta, &details, r, checked).as_bytes(),
    )?;
    if matches!(r.signature.kind, Kind::Crash | Kind::Abort | Kind::Rejected) {
        meta.message = Some(r.outcome.detail.clone());
    }
    meta.frames = r
        .outcome
        .frames
        .iter()
        .map(|f| format!("{} {}", f.function, f.location))
        .collect();
    meta.details = serde_json::to_value(&details).unwrap_or_default();
    Ok(())
}

/// Saves the compiles' files under `compiler/` (a `cross-mode` finding: `compiler/batch/` and
/// `compiler/element/`) and the check's report under `check/`; returns whether the check's
/// report was written.
fn save_compiles(root: &Path, r: &FindingRecord) -> Result<bool, Error> {
    let compiler = root.join("compiler");
    if !is_cross(&r.signature) {
        let Some((_, run)) = r.runs.first() else {
            return Ok(false);
        };
        save_compile(&compiler, run)?;
        return Ok(match (run.checked_program(), run.table()) {
            (Some(p), Some(t)) => {
                let saved = Path::new("compiler").join(p.file_name().unwrap_or_default());
                write_check(&p, &t, &saved, r.case_seed, &root.join("check"))
            }
            _ => false,
        });
    }
    let mut inputs = Vec::new();
    for (pipeline, run) in &r.runs {
        let dir = compiler.join(pipeline.name());
        save_compile(&dir, run)?;
        if let (Some(p), Some(t)) = (run.checked_program(), run.table()) {
            let name = p.file_name().unwrap_or_default();
            let saved = Path::new("compiler").join(pipeline.name()).join(name);
            inputs.push((check_options(&p, &t, r.case_seed), saved));
        }
    }
    Ok(match inputs.as_slice() {
        [a, b] => write_cross_check(a, b, &root.join("check")),
        _ => false,
    })
}

/// One compile's stdout, stderr and output files (the program, the raised copy the check ran
/// when there is one, the side table) into `dir`.
fn save_compile(dir: &Path, run: &CompileRun) -> Result<(), Error> {
    write_new(&dir.join("stdout.txt"), run.stdout.as_bytes())?;
    write_new(&dir.join("stderr.txt"), run.stderr.as_bytes())?;
    let raised = run
        .checked_program()
        .filter(|p| Some(p) != run.program().as_ref());
    for f in [run.program(), raised, run.table()].into_iter().flatten() {
        if let Some(n) = f.file_name() {
            std::fs::copy(&f, dir.join(n)).map_err(io_err(&f))?;
        }
    }
    Ok(())
}

/// The options of the hunt's own check of a program (and of `repro.sh`'s).
fn check_options(program: &Path, table: &Path, seed: u64) -> crate::check::Options {
    crate::check::Options {
        program: program.to_path_buf(),
        table: table.to_path_buf(),
        seed,
        schedule: Default::default(),
        probes: true,
        control: crate::check::Control::None,
    }
}

/// `pimdiff pimcomp --out DIR` of the saved program (best effort: a report, not a verdict).
/// The report names `saved`, the program's copy in the finding (the compile's own tree is
/// removed after saving).
fn write_check(program: &Path, table: &Path, saved: &Path, seed: u64, out: &Path) -> bool {
    let opts = check_options(program, table, seed);
    match crate::check::check(&opts) {
        Ok(c) => crate::check::report::write(&c, out, saved, seed, opts.schedule).is_ok(),
        Err(_) => false,
    }
}

/// `pimdiff pimcomp BATCH --cross ELEMENT --out DIR` of the two programs (best effort), each
/// given with the path of its saved copy in the finding, which the reports name.
fn write_cross_check(
    (batch, batch_saved): &(crate::check::Options, PathBuf),
    (element, element_saved): &(crate::check::Options, PathBuf),
    out: &Path,
) -> bool {
    match super::cross::check_pair(batch, element) {
        Ok(mut pair) => {
            pair.batch.0.clone_from(batch_saved);
            pair.element.0.clone_from(element_saved);
            pair.write(out, batch.seed, batch.schedule).is_ok()
        }
        Err(_) => false,
    }
}

/// The script that recompiles the saved model in `pipelines` and rechecks it (run from the
/// finding's directory; `PIMCOMP_NN_BIN` may point at another build): one pipeline is
/// compiled in `$t` and checked; two are compiled in `$t/batch` and `$t/element` and compared
/// with `pimdiff pimcomp --cross`.
fn repro_script(ctx: &CaseContext, pipelines: &[Pipeline], pin: u64, seed: u64) -> String {
    let bin = ctx.setup.bin.display().to_string();
    let mut s = format!(
        "#!/bin/sh\n# Recompiles model.json with PIMCOMP-NN (time() pinned as in the hunt) and {}.\n\
         set -e\nbin=\"${{PIMCOMP_NN_BIN:-{bin}}}\"\nhere=\"$(cd \"$(dirname \"$0\")\" && pwd)\"\n\
         t=\"$(mktemp -d)\"\n",
        if pipelines.len() > 1 {
            "checks the batch and the element program against each other"
        } else {
            "checks it"
        }
    );
    let (program, table) = ("output/SimulationInfo.gz", "output/VerificationInfo.json");
    if let [pipeline] = pipelines {
        s.push_str(&compile_steps(ctx, *pipeline, pin, "$t", "PIMCOMP-NN"));
        s.push_str(&format!(
            "pimdiff pimcomp ../{program} --verification ../{table} --seed {seed}\n"
        ));
        return s;
    }
    for p in pipelines {
        let d = format!("$t/{}", p.name());
        s.push_str(&compile_steps(
            ctx,
            *p,
            pin,
            &d,
            &format!("PIMCOMP-NN -p={}", p.name()),
        ));
    }
    let (b, e) = ("\"$t/batch\"", "\"$t/element\"");
    s.push_str(&format!(
        "pimdiff pimcomp {b}/{program} --verification {b}/{table} --cross {e}/{program} \
         --cross-verification {e}/{table} --seed {seed}\n"
    ));
    s
}

/// The lines of `repro.sh` that compile `model.json` with `pipeline` in the tree `dir` (a
/// shell word) and leave the shell in `dir/work`; a failed compile names `what` and exits 1.
fn compile_steps(ctx: &CaseContext, pipeline: Pipeline, pin: u64, dir: &str, what: &str) -> String {
    let line = command_line(&ctx.setup, pipeline, pin);
    let bin = ctx.setup.bin.display().to_string();
    let line = line.replace(&bin, "\"$bin\"");
    let shim = ctx
        .setup
        .shim
        .as_ref()
        .map(|s| s.display().to_string())
        .unwrap_or_default();
    let line = if shim.is_empty() {
        line
    } else {
        line.replace(
            &format!("LD_PRELOAD={shim}"),
            "LD_PRELOAD=\"$(dirname \"$bin\")/libpimdiff-shim.so\"",
        )
    };
    let d = format!("\"{dir}");
    format!(
        "mkdir -p {d}/models/JSON\" {d}/output\" {d}/work\"\ncp \"$here/model.json\" {d}/models/JSON/net.json\"\n\
         cp \"$(dirname \"$bin\")/config.json\" {d}/config.json\"\ncd {d}/work\"\n\
         {line} > ../output/log.txt 2>&1 || {{ echo \"{what} failed (exit $?): $(tail -3 ../output/log.txt)\"; exit 1; }}\n"
    )
}

fn render_report(
    meta: &FindingMeta,
    f: &PimcompDetails,
    r: &FindingRecord,
    checked: bool,
) -> String {
    let origin = meta.origin.as_ref().map_or(String::new(), |o| {
        format!(
            "- from case {} of the hunt with seed {} (case seed {})\n",
            o.case_index, o.hunt_seed, o.case_seed
        )
    });
    let detail = if r.outcome.detail.is_empty() {
        "no detail"
    } else {
        r.outcome.detail.as_str()
    };
    let m = &r.stats;
    let mut s = format!(
        "# PIMCOMP-NN finding: `{}`\n\n- outcome: **{}** ({} pipeline)\n{origin}- `time()` \
         pinned to {}\n- {detail}\n- minimized: {} → {} nodes, largest channel count {} → {}, \
         largest spatial size {} → {} ({} candidates tried, {} kept{})\n",
        r.signature,
        r.signature.kind,
        f.pipeline.name(),
        f.pin_time,
        m.before.0,
        m.after.0,
        m.before.1,
        m.after.1,
        m.before.2,
        m.after.2,
        m.tried,
        m.kept,
        if m.cut_short { ", cut short" } else { "" },
    );
    if !f.reproduced {
        s.push_str(&format!(
            "\n**The minimized network did not show the signature again** (it gave `{}`).\n",
            r.outcome
                .signature
                .as_ref()
                .map_or_else(|| r.outcome.kind.to_string(), |g| g.to_string())
        ));
    }
    s.push_str("\n## Reproduce\n\n```sh\nsh repro.sh\n```\n");
    let cross = is_cross(&r.signature);
    if r.outcome.signatures().any(|g| g.kind == Kind::CoreCount) {
        s.push_str(&format!(
            "\nThe program names a core beyond its `core_cnt`, so `pimdiff pimcomp` refuses it \
             (that refusal reproduces the finding); the hunt checked the numerics on \
             `compiler/{}SimulationInfo-core_cnt.gz`, the same program with `core_cnt` raised.\n",
            if cross { "<pipeline>/" } else { "" }
        ));
    }
    if cross {
        s.push_str(
            "\n`repro.sh` recompiles the model in both pipelines (same pinned time) and runs \
             `pimdiff pimcomp BATCH --cross ELEMENT`, which checks both programs and compares \
             them node by node: it prints this signature and exits 1. `compiler/batch/` and \
             `compiler/element/` hold the two compiles.\n",
        );
    }
    s.push_str("\n## Minimized network\n\n```\n");
    s.push_str(&r.minimized.to_string());
    s.push_str("```\n");
    if !r.outcome.frames.is_empty() {
        s.push_str("\n## Backtrace\n\n```\n");
        for fr in &r.outcome.frames {
            s.push_str(&format!("{} {}\n", fr.function, fr.location));
        }
        s.push_str("```\n");
    }
    if checked && cross {
        s.push_str(
            "\n`check/` holds `pimdiff pimcomp --cross --out` of the two programs: each check's \
             report in `check/batch/report.md` and `check/element/report.md`, the comparison in \
             `check/cross.json`.\n",
        );
    } else if checked {
        s.push_str("\nThe check's report is in `check/report.md`.\n");
    }
    s
}
