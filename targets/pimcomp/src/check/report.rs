//! What a check leaves behind: a table on stdout, and under `--out DIR` `summary.json`,
//! `report.md`, the run's inputs (`run/`: rewritten program, crossbar export, preloads, with
//! the `pimdiff run` command that replays it) and per mismatching node a directory with the
//! reference and actual tensors.
//!
//! The directory is written as a temporary sibling and renamed into place, so an interrupted
//! check leaves nothing half-written; an existing non-empty `DIR` is refused.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use ndarray::Array3;
use ndarray_npy::WriteNpyExt;
use pimdiff_isa::machine::Schedule;
use serde::Serialize;

use super::verdict::{NodeVerdict, Status};
use super::{Checked, Mode, PimcompError};

/// `summary.json`.
#[derive(Serialize)]
pub struct Summary<'a> {
    pub program: String,
    pub mode: Mode,
    pub seed: u64,
    pub schedule: String,
    pub nodes: &'a [NodeVerdict],
}

pub fn schedule_text(s: Schedule) -> String {
    s.to_string()
}

/// Counts per status.
pub fn counts(c: &Checked) -> [usize; 4] {
    let n = |s: Status| c.verdicts.iter().filter(|v| v.status == s).count();
    [
        n(Status::Exact),
        n(Status::Degenerate),
        n(Status::Unchecked),
        n(Status::Mismatch),
    ]
}

/// The table printed on stdout.
pub fn table(c: &Checked, program: &Path, seed: u64, schedule: Schedule) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "program: {} ({:?} mode), seed {seed}, schedule {}",
        program.display(),
        c.mode,
        schedule_text(schedule)
    );
    let _ = writeln!(
        s,
        "{:>4}  {:<32} {:<11} {:<10} {:<10} {:>9} {:>9} {:>9}",
        "node", "name", "op", "check", "status", "compared", "wrong", "nonzero"
    );
    for v in &c.verdicts {
        let check = serde_json::to_value(v.check)
            .ok()
            .and_then(|x| x.as_str().map(str::to_owned))
            .unwrap_or_default();
        let status = serde_json::to_value(v.status)
            .ok()
            .and_then(|x| x.as_str().map(str::to_owned))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "{:>4}  {:<32} {:<11} {:<10} {:<10} {:>9} {:>9} {:>9}{}",
            v.index,
            truncate(&v.name, 32),
            v.op.trim_start_matches("OP_"),
            check,
            status,
            v.compared,
            v.mismatches,
            v.nonzero_reference,
            if v.disagreements.is_empty() {
                String::new()
            } else {
                format!("  ({} operand disagreements)", v.disagreements.len())
            }
        );
    }
    for v in c.verdicts.iter().filter(|v| v.status == Status::Mismatch) {
        let _ = write!(
            s,
            "node {} {}: {} of {} mvmul windows gathered a wrong element",
            v.index, v.name, v.windows_wrong, v.windows_checked
        );
        match &v.first_wrong_mvmul {
            Some(m) => {
                let writers: Vec<String> = v
                    .writers
                    .iter()
                    .map(|w| format!("core {} #{} `{}`", w.core, w.index, w.text))
                    .collect();
                let _ = writeln!(
                    s,
                    "; first: core {} #{} `{}`, wrong elements written by {}",
                    m.core,
                    m.index,
                    m.text,
                    writers.join(", ")
                );
            }
            None => s.push('\n'),
        }
    }
    let [e, d, u, m] = counts(c);
    let dis: usize = c.verdicts.iter().map(|v| v.disagreements.len()).sum();
    let _ = writeln!(s, "nodes: {e} exact, {d} degenerate, {u} unchecked, {m} mismatch; {dis} operand disagreements; run: {}", c.outcome.kind());
    let _ = writeln!(
        s,
        "time: {} ({} instructions)",
        c.timings
            .iter()
            .map(|(n, t)| format!("{n} {t:.2} s"))
            .collect::<Vec<_>>()
            .join(", "),
        c.instructions
    );
    s
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(['…']).collect()
    }
}

/// Writes `summary.json`, `report.md`, `run/` and the per-node directories into `out`.
pub fn write(
    c: &Checked,
    out: &Path,
    program: &Path,
    seed: u64,
    schedule: Schedule,
) -> Result<(), PimcompError> {
    write_atomically(out, |tmp| fill(c, tmp, program, seed, schedule))
}

/// Writes a report directory `out` (which must not exist, or be empty) atomically: `fill`
/// writes into a hidden sibling that is renamed into place (`pimdiff_atomic`).
pub fn write_atomically(
    out: &Path,
    fill: impl FnOnce(&Path) -> Result<(), PimcompError>,
) -> Result<(), PimcompError> {
    let atomic = |e: pimdiff_atomic::Error| match e {
        pimdiff_atomic::Error::Io { path, source } => PimcompError::Io { path, source },
        pimdiff_atomic::Error::Exists { path } => {
            PimcompError::Setup(format!("{} exists and is not empty", path.display()))
        }
    };
    let dir = pimdiff_atomic::AtomicDir::create(out).map_err(atomic)?;
    fill(dir.path())?;
    dir.commit().map_err(atomic)?;
    Ok(())
}

/// The contents of [`write`]'s directory, into `tmp`.
fn fill(
    c: &Checked,
    tmp: &Path,
    program: &Path,
    seed: u64,
    schedule: Schedule,
) -> Result<(), PimcompError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PimcompError::Io { path, source }
    };
    let summary = Summary {
        program: program.display().to_string(),
        mode: c.mode,
        seed,
        schedule: schedule_text(schedule),
        nodes: &c.verdicts,
    };
    let json =
        serde_json::to_string_pretty(&summary).map_err(|e| PimcompError::Setup(e.to_string()))?;
    std::fs::write(tmp.join("summary.json"), json + "\n").map_err(io(tmp))?;
    let run_cmd = write_run(c, &tmp.join("run"))?;
    let mut node_cmds = Vec::new();
    for v in c.verdicts.iter().filter(|v| v.status == Status::Mismatch) {
        let cmd = write_node(c, v, tmp, &Path::new("nodes").join(node_dir(v)))?;
        node_cmds.push((v.index, cmd));
    }
    let report = markdown(c, program, seed, schedule, &run_cmd, &node_cmds);
    std::fs::write(tmp.join("report.md"), report).map_err(io(tmp))
}

fn node_dir(v: &NodeVerdict) -> String {
    let name: String = v
        .name
        .chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || ch == '_' || ch == '-' {
                ch
            } else {
                '_'
            }
        })
        .collect();
    format!("{:03}-{name}", v.index)
}

fn npy(path: &Path, a: &Array3<i8>) -> Result<(), PimcompError> {
    let mut bytes = Vec::new();
    a.write_npy(&mut bytes)
        .map_err(|e| PimcompError::Setup(e.to_string()))?;
    std::fs::write(path, bytes).map_err(|source| PimcompError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// `run/`: the rewritten program, its export and preloads, and the command that replays them
/// (paths relative to the output directory, which is renamed into place at the end).
fn write_run(c: &Checked, dir: &Path) -> Result<String, PimcompError> {
    let io = |source| PimcompError::Io {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    write_program(&c.rewritten, &dir.join("program.json.gz"))?;
    pimdiff_isa::xbar::write_export_dir(&c.export, &dir.join("xbars")).map_err(io)?;
    let mut cmd = format!(
        "pimdiff run run/program.json.gz --xbars run/xbars --arrays-per-core {}",
        c.arch.arrays_per_core
    );
    for (addr, bytes, _) in &c.preload {
        write_gmem_npy(&dir.join(format!("gmem_{addr}.npy")), bytes)?;
        let _ = write!(cmd, " --gmem {addr}=run/gmem_{addr}.npy");
    }
    Ok(cmd)
}

fn write_program(p: &pimdiff_isa::Program, path: &Path) -> Result<(), PimcompError> {
    let io = |source| PimcompError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::create(path).map_err(io)?;
    let mut gz =
        flate2::write::GzEncoder::new(std::io::BufWriter::new(file), flate2::Compression::fast());
    pimdiff_isa::formats::write_json(p, &mut gz).map_err(io)?;
    gz.finish().and_then(|mut w| w.flush()).map_err(io)
}

fn write_gmem_npy(path: &Path, bytes: &[i8]) -> Result<(), PimcompError> {
    let a = ndarray::ArrayView1::from(bytes);
    let mut raw = Vec::new();
    a.write_npy(&mut raw)
        .map_err(|e| PimcompError::Setup(e.to_string()))?;
    std::fs::write(path, raw).map_err(|source| PimcompError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// A mismatching node's directory `rel` (under `root`): its tensors, its reduced program with
/// the preloads it reads, and `expected.bin`. Returns the command that reproduces the mismatch.
fn write_node(
    c: &Checked,
    v: &NodeVerdict,
    root: &Path,
    rel: &Path,
) -> Result<Option<String>, PimcompError> {
    let dir = root.join(rel);
    std::fs::create_dir_all(&dir).map_err(|source| PimcompError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let reference = c.reference[v.index].tensor();
    if let Some(t) = reference {
        npy(&dir.join("reference.npy"), t)?;
    }
    let Some((actual, covered)) = &c.observed[v.index] else {
        return Ok(None);
    };
    npy(&dir.join("actual.npy"), &as_tensor_of(c, v.index, actual))?;
    let mask: Vec<i8> = covered.iter().map(|&b| b as i8).collect();
    npy(&dir.join("observed.npy"), &as_tensor_of(c, v.index, &mask))?;
    let (Some(base), Some(reference)) = (c.regions[v.index], reference) else {
        return Ok(None);
    };
    write_program(
        &super::reduce::reduced(c, v.index),
        &dir.join("reduced.json.gz"),
    )?;
    // What the node's region must hold: the reference where the run observes it, 0 (an
    // untouched region) elsewhere.
    let expected: Vec<u8> = reference
        .iter()
        .zip(covered)
        .map(|(&r, &cv)| if cv { r as u8 } else { 0 })
        .collect();
    std::fs::write(dir.join("expected.bin"), &expected).map_err(|source| PimcompError::Io {
        path: dir.join("expected.bin"),
        source,
    })?;
    let r = rel.display();
    let mut cmd = format!(
        "pimdiff run {r}/reduced.json.gz --xbars run/xbars --arrays-per-core {}",
        c.arch.arrays_per_core
    );
    for (addr, bytes, _) in c
        .preload
        .iter()
        .filter(|p| c.node_preloads[v.index].contains(&p.0))
    {
        write_gmem_npy(&dir.join(format!("gmem_{addr}.npy")), bytes)?;
        let _ = write!(cmd, " --gmem {addr}={r}/gmem_{addr}.npy");
    }
    // Up to the last observed element: a node computed only in part (a cut-down program)
    // leaves the rest of its region, and the end of the dump, untouched.
    let n = covered.iter().rposition(|&cv| cv).map_or(0, |i| i + 1);
    let _ = write!(
        cmd,
        " --dump {r}/state\ncmp -l -i {base}:0 -n {n} {r}/state/gmem.bin {r}/expected.bin | wc -l"
    );
    Ok(Some(cmd))
}

fn as_tensor_of(c: &Checked, index: usize, data: &[i8]) -> Array3<i8> {
    let shape = c.reference[index].tensor().map(|t| t.dim());
    match shape {
        Some((h, w, ch)) if h * w * ch == data.len() => {
            Array3::from_shape_vec((h, w, ch), data.to_vec()).expect("length checked")
        }
        _ => Array3::from_shape_vec((1, 1, data.len()), data.to_vec()).expect("one row"),
    }
}

fn markdown(
    c: &Checked,
    program: &Path,
    seed: u64,
    schedule: Schedule,
    run_cmd: &str,
    node_cmds: &[(usize, Option<String>)],
) -> String {
    let mut s = String::new();
    let [e, d, u, m] = counts(c);
    let _ = writeln!(s, "# pimdiff pimcomp: {}\n", program.display());
    let _ = writeln!(
        s,
        "Mode {:?}, seed {seed}, schedule `{}`; run: {}.\n",
        c.mode,
        schedule_text(schedule),
        c.outcome.kind()
    );
    let _ = writeln!(
        s,
        "**{e} exact, {d} degenerate, {u} unchecked, {m} mismatch.**\n"
    );
    if !c.outcome.is_finished() {
        let _ = writeln!(
            s,
            "The rewritten program did not finish:\n\n```\n{}\n```\n",
            c.outcome
        );
    }
    let _ = writeln!(s, "| node | name | op | check | status | compared | mismatches | nonzero reference | note |\n|---|---|---|---|---|---|---|---|---|");
    for v in &c.verdicts {
        let _ = writeln!(
            s,
            "| {} | `{}` | {} | {:?} | {:?} | {} | {} | {} | {} |",
            v.index,
            v.name,
            v.op,
            v.check,
            v.status,
            v.compared,
            v.mismatches,
            v.nonzero_reference,
            v.reason.clone().unwrap_or_default()
        );
    }
    for v in c
        .verdicts
        .iter()
        .filter(|v| v.status == Status::Mismatch || !v.disagreements.is_empty())
    {
        let _ = writeln!(s, "\n## Node {} `{}` ({})\n", v.index, v.name, v.op);
        if v.status == Status::Mismatch {
            let _ = writeln!(s, "{} of {} compared elements differ; `nodes/{}/` holds `reference.npy`, `actual.npy` and `observed.npy` (1 where the run observed the element), all `[H, W, C]`.\n", v.mismatches, v.compared, node_dir(v));
            if let Some((actual, covered)) = &c.observed[v.index] {
                if let Some(r) = c.reference[v.index].tensor() {
                    let channels = r.dim().2.max(1);
                    let first: Vec<String> = r
                        .iter()
                        .zip(actual)
                        .zip(covered)
                        .enumerate()
                        .filter(|(_, ((&r, &a), &cv))| cv && r != a)
                        .take(8)
                        .map(|(k, ((&r, &a), _))| {
                            format!(
                                "element {k} (pixel {}, channel {}): reference {r}, actual {a}",
                                k / channels,
                                k % channels
                            )
                        })
                        .collect();
                    let _ = writeln!(s, "First differences:\n\n- {}\n", first.join("\n- "));
                }
            }
        }
        if v.status == Status::Mismatch {
            localization(&mut s, v);
            if let Some((_, Some(cmd))) = node_cmds.iter().find(|(i, _)| *i == v.index) {
                let _ = writeln!(s, "Reproduce with the reduced program (this node's instructions and the `sldi`s feeding them; run from this directory). The last line counts the elements of the node's region that differ from the reference; it prints {}:\n\n```sh\n{cmd}\n```\n", v.mismatches);
            }
        }
        for dg in v.disagreements.iter().take(20) {
            let _ = writeln!(s, "- operand disagreement: core {}, instruction {} `{}`: {} is {} in the program, {} in the table", dg.core, dg.index, dg.text, dg.field, dg.program, dg.table);
        }
    }
    let _ = writeln!(s, "\n## Replaying the run\n\n`run/` holds the rewritten program, its crossbar export and the global-memory preloads:\n\n```sh\n{run_cmd} --dump state/\n```\n\nAll paths are relative to this report's directory.");
    s
}

/// The localization of one mismatching node, in words.
fn localization(s: &mut String, v: &NodeVerdict) {
    let _ = writeln!(
        s,
        "Localization: {} of {} `mvmul` input windows whose sources are known gathered a wrong element.\n",
        v.windows_wrong, v.windows_checked
    );
    let Some(m) = &v.first_wrong_mvmul else {
        return;
    };
    let _ = writeln!(
        s,
        "First wrong `mvmul`: core {}, instruction {} `{}`.\n\n| input element | expected | actual | last written by |\n|---|---|---|---|",
        m.core, m.index, m.text
    );
    for d in v.first_wrong_sources.iter().take(32) {
        let w = d
            .writer
            .as_ref()
            .map(|w| format!("core {}, instruction {} `{}`", w.core, w.index, w.text))
            .unwrap_or_else(|| "nothing".into());
        let _ = writeln!(s, "| {} | {} | {} | {w} |", d.element, d.expected, d.actual);
    }
    let _ = writeln!(s);
}

/// The path of a node's directory under `out`, for messages.
pub fn node_path(out: &Path, v: &NodeVerdict) -> PathBuf {
    out.join("nodes").join(node_dir(v))
}
