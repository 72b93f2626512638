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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::case::{finding_pipelines, is_cross, pin_time, CaseContext};
use super::compile::{command_line, CompileRun, Pipeline};
use super::outcome::CaseOutcome;
use super::reductions::Shrunk;
use super::PimcompHuntConfig;
use crate::corpus::{self, CorpusError};
use crate::engine::{slug, HuntError, Limit, Sweep, SweepEnd, SUMMARY_JSON, SUMMARY_MD};
use crate::finding::Kind;
use crate::targets::pimcomp_nn::network::Network;
use pimdiff_atomic::AtomicDir;

/// Everything a finding directory is written from.
pub struct FindingRecord {
    pub signature: String,
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

/// One finding in `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct PimcompFinding {
    pub dir: String,
    pub signature: String,
    pub outcome: String,
    /// The pipeline the finding is filed under (`element` for a `cross-mode` finding).
    pub pipeline: Pipeline,
    /// Every pipeline whose compile the finding saves: `["batch", "element"]` for a
    /// `cross-mode` finding (under `compiler/batch/` and `compiler/element/`), else
    /// `[pipeline]` (under `compiler/`).
    pub pipelines: Vec<Pipeline>,
    pub case_index: u64,
    pub case_seed: u64,
    pub pin_time: u64,
    pub occurrences: u64,
    /// Whether the saved minimized network still shows the signature.
    pub reproduced: bool,
    pub minimization: Shrunk,
    pub detail: String,
}

/// `summary.json` of a `--target pimcomp-nn` hunt.
#[derive(Clone, Debug, Serialize)]
pub struct PimcompHuntSummary {
    pub pimdiff_version: String,
    pub target: &'static str,
    pub mode: String,
    pub seed: u64,
    pub shard: crate::engine::Shard,
    pub cases_requested: Option<u64>,
    pub duration_requested_s: Option<f64>,
    pub end: SweepEnd,
    pub interrupted: bool,
    pub cases_run: u64,
    /// Cases per outcome kind (with `--mode both`, a case counts under its most severe
    /// pipeline outcome).
    pub outcomes: BTreeMap<Kind, u64>,
    /// Declined (unsupported) cases per abstracted reason.
    pub unsupported_reasons: BTreeMap<String, u64>,
    pub findings: Vec<PimcompFinding>,
    pub jobs: usize,
    pub cases_per_second: f64,
    pub sweep_time_s: f64,
    pub wall_time_s: f64,
    pub compiler: String,
    pub generator: crate::targets::pimcomp_nn::network::NetConfig,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> HuntError + '_ {
    move |source| {
        HuntError::Corpus(CorpusError::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// Creates `out/findings`, removes leftovers of interrupted writes, refuses old findings.
pub fn prepare_out(out: &Path, findings: &Path) -> Result<(), HuntError> {
    std::fs::create_dir_all(findings).map_err(io_err(findings))?;
    pimdiff_atomic::clean_temp(out)?;
    pimdiff_atomic::clean_temp(findings)?;
    let mut entries = std::fs::read_dir(findings).map_err(io_err(findings))?;
    if entries.any(|e| e.is_ok_and(|e| !e.file_name().to_string_lossy().starts_with('.'))) {
        return Err(HuntError::OutNotEmpty {
            path: findings.to_path_buf(),
        });
    }
    Ok(())
}

/// Saves a signature's first network the moment the sweep meets it (no recompile).
pub fn save_early(
    findings: &Path,
    index: u64,
    signature: &str,
    network: &Network,
) -> Result<(), HuntError> {
    let dest = findings.join(format!("k{index}-{}", slug(signature)));
    if dest.exists() {
        return Ok(());
    }
    let dir = AtomicDir::create(&dest)?;
    let json = network.to_model_json().unwrap_or_default();
    write(&dir.path().join("model.json"), json.as_bytes())?;
    write(
        &dir.path().join("outcome.json"),
        corpus::to_json_text(&serde_json::json!({
            "signature": signature,
            "case_index": index,
            "minimized": false,
        }))
        .as_bytes(),
    )?;
    dir.commit()?;
    Ok(())
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), HuntError> {
    std::fs::write(path, bytes).map_err(io_err(path))
}

/// Removes the `k<index>-…` directories saved during the sweep.
pub fn remove_early_dirs(findings: &Path) -> Result<(), HuntError> {
    for entry in std::fs::read_dir(findings).map_err(io_err(findings))? {
        let entry = entry.map_err(io_err(findings))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('k') && entry.path().is_dir() {
            pimdiff_atomic::remove_dir(&entry.path())?;
        }
    }
    Ok(())
}

/// Writes finding number `number` and returns its summary entry.
pub fn save_final(
    ctx: &CaseContext,
    findings: &Path,
    number: usize,
    index: u64,
    occurrences: u64,
    r: &FindingRecord,
) -> Result<PimcompFinding, HuntError> {
    let name = format!("{number:03}-{}", slug(&r.signature));
    let dest = findings.join(&name);
    let dir = AtomicDir::create(&dest)?;
    let root = dir.path().to_path_buf();
    let pin = pin_time(r.case_seed);
    let reproduced = r.outcome.has(&r.signature);
    let model = r.minimized.to_model_json().unwrap_or_default();
    write(&root.join("model.json"), model.as_bytes())?;
    let original = r.original.to_model_json().unwrap_or_default();
    write(&root.join("original-model.json"), original.as_bytes())?;
    write(
        &root.join("network.json"),
        corpus::to_json_text(&r.minimized).as_bytes(),
    )?;
    let summary = PimcompFinding {
        dir: format!("findings/{name}"),
        signature: r.signature.clone(),
        outcome: r.signature.split('/').next().unwrap_or("").to_string(),
        pipeline: r.pipeline,
        pipelines: finding_pipelines(&r.signature),
        case_index: index,
        case_seed: r.case_seed,
        pin_time: pin,
        occurrences,
        reproduced,
        minimization: r.stats.clone(),
        detail: r.outcome.detail.clone(),
    };
    let mut record = serde_json::to_value(&summary).unwrap_or_default();
    record["frames"] = serde_json::to_value(&r.outcome.frames).unwrap_or_default();
    record["minimized_outcome"] = serde_json::to_value(&r.outcome).unwrap_or_default();
    write(
        &root.join("outcome.json"),
        corpus::to_json_text(&record).as_bytes(),
    )?;
    let checked = save_compiles(&root, r)?;
    let repro = repro_script(ctx, &summary.pipelines, pin, r.case_seed);
    write(&root.join("repro.sh"), repro.as_bytes())?;
    write(
        &root.join("report.md"),
        render_report(&summary, r, checked).as_bytes(),
    )?;
    dir.commit()?;
    Ok(summary)
}

/// Saves the compiles' files under `compiler/` (a `cross-mode` finding: `compiler/batch/` and
/// `compiler/element/`) and the check's report under `check/`; returns whether the check's
/// report was written.
fn save_compiles(root: &Path, r: &FindingRecord) -> Result<bool, HuntError> {
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
fn save_compile(dir: &Path, run: &CompileRun) -> Result<(), HuntError> {
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    write(&dir.join("stdout.txt"), run.stdout.as_bytes())?;
    write(&dir.join("stderr.txt"), run.stderr.as_bytes())?;
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
fn check_options(
    program: &Path,
    table: &Path,
    seed: u64,
) -> crate::targets::pimcomp_nn::check::Options {
    crate::targets::pimcomp_nn::check::Options {
        program: program.to_path_buf(),
        table: table.to_path_buf(),
        seed,
        schedule: Default::default(),
        probes: true,
        control: crate::targets::pimcomp_nn::check::Control::None,
    }
}

/// `pimdiff pimcomp --out DIR` of the saved program (best effort: a report, not a verdict).
/// The report names `saved`, the program's copy in the finding (the compile's own tree is
/// removed after saving).
fn write_check(program: &Path, table: &Path, saved: &Path, seed: u64, out: &Path) -> bool {
    let opts = check_options(program, table, seed);
    match crate::targets::pimcomp_nn::check::check(&opts) {
        Ok(c) => {
            crate::targets::pimcomp_nn::check::report::write(&c, out, saved, seed, opts.schedule)
                .is_ok()
        }
        Err(_) => false,
    }
}

/// `pimdiff pimcomp BATCH --cross ELEMENT --out DIR` of the two programs (best effort), each
/// given with the path of its saved copy in the finding, which the reports name.
fn write_cross_check(
    (batch, batch_saved): &(crate::targets::pimcomp_nn::check::Options, PathBuf),
    (element, element_saved): &(crate::targets::pimcomp_nn::check::Options, PathBuf),
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

fn render_report(f: &PimcompFinding, r: &FindingRecord, checked: bool) -> String {
    let mut s = format!(
        "# PIMCOMP-NN finding: `{}`\n\n- outcome: **{}** ({} pipeline)\n- first seen: case {} \
         (case seed {}), {} case(s) of the hunt\n- `time()` pinned to {}\n- {}\n- minimized: \
         {} → {} nodes, largest channel count {} → {}, largest spatial size {} → {} ({} \
         candidates tried, {} kept{})\n",
        f.signature,
        f.outcome,
        f.pipeline.name(),
        f.case_index,
        f.case_seed,
        f.occurrences,
        f.pin_time,
        if f.detail.is_empty() {
            "no detail"
        } else {
            &f.detail
        },
        r.stats.before.0,
        r.stats.after.0,
        r.stats.before.1,
        r.stats.after.1,
        r.stats.before.2,
        r.stats.after.2,
        r.stats.tried,
        r.stats.kept,
        if r.stats.cut_short { ", cut short" } else { "" },
    );
    if !f.reproduced {
        s.push_str(&format!(
            "\n**The minimized network did not show the signature again** (it gave `{}`).\n",
            r.outcome
                .signature
                .as_deref()
                .unwrap_or(r.outcome.kind.as_str())
        ));
    }
    s.push_str("\n## Reproduce\n\n```sh\nsh repro.sh\n```\n");
    let cross = is_cross(&f.signature);
    if r.outcome.signatures().any(|g| g.starts_with("core-count/")) {
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

/// The summary of a finished hunt.
pub fn summarize(
    cfg: &PimcompHuntConfig,
    jobs: usize,
    swept: &Sweep<Vec<String>>,
    findings: Vec<PimcompFinding>,
    wall: Duration,
) -> PimcompHuntSummary {
    let secs = swept.elapsed.as_secs_f64();
    PimcompHuntSummary {
        pimdiff_version: env!("CARGO_PKG_VERSION").to_string(),
        target: "pimcomp-nn",
        mode: cfg.mode.clone(),
        seed: cfg.cases.seed,
        shard: cfg.shard,
        cases_requested: match cfg.limit {
            Limit::Cases(n) => Some(n),
            Limit::Duration(_) => None,
        },
        duration_requested_s: match cfg.limit {
            Limit::Duration(d) => Some(d.as_secs_f64()),
            Limit::Cases(_) => None,
        },
        end: swept.end,
        interrupted: swept.end == SweepEnd::Interrupted,
        cases_run: swept.cases_run,
        outcomes: swept.counts.clone(),
        unsupported_reasons: swept.decline_reasons.clone(),
        findings,
        jobs,
        cases_per_second: if secs > 0.0 {
            swept.cases_run as f64 / secs
        } else {
            0.0
        },
        sweep_time_s: secs,
        wall_time_s: wall.as_secs_f64(),
        compiler: cfg.cases.setup.bin.display().to_string(),
        generator: cfg.cases.net.clone(),
    }
}

/// Writes `summary.json` and `summary.md`.
pub fn write_summary(out: &Path, s: &PimcompHuntSummary) -> Result<(), HuntError> {
    pimdiff_atomic::write_file(&out.join(SUMMARY_JSON), corpus::to_json_text(s).as_bytes())?;
    pimdiff_atomic::write_file(&out.join(SUMMARY_MD), render_summary(s).as_bytes())?;
    Ok(())
}

/// `summary.md`.
pub fn render_summary(s: &PimcompHuntSummary) -> String {
    let mut md = format!(
        "# pimdiff hunt --target pimcomp-nn --mode {} --seed {}\n\n{} cases in {:.1} s ({:.2} \
         networks/s, {} jobs), sweep ended: {:?}\n\n| outcome | cases |\n|---|---|\n",
        s.mode, s.seed, s.cases_run, s.sweep_time_s, s.cases_per_second, s.jobs, s.end
    );
    for (k, v) in &s.outcomes {
        md.push_str(&format!("| {k} | {v} |\n"));
    }
    md.push_str(&format!("\n{} distinct finding(s)\n\n", s.findings.len()));
    if !s.findings.is_empty() {
        md.push_str(
            "| dir | signature | cases | nodes | channels | spatial |\n|---|---|---|---|---|---|\n",
        );
        for f in &s.findings {
            let m = &f.minimization;
            md.push_str(&format!(
                "| {} | `{}` | {} | {} → {} | {} → {} | {} → {} |\n",
                f.dir,
                f.signature,
                f.occurrences,
                m.before.0,
                m.after.0,
                m.before.1,
                m.after.1,
                m.before.2,
                m.after.2
            ));
        }
    }
    if !s.unsupported_reasons.is_empty() {
        md.push_str("\n## Unsupported (not checked)\n\n");
        for (k, v) in &s.unsupported_reasons {
            md.push_str(&format!("- {v}× {k}\n"));
        }
    }
    md
}

/// Where a finding's saved files are, for tests.
pub fn finding_dir(out: &Path, f: &PimcompFinding) -> PathBuf {
    out.join(&f.dir)
}
