//! Readable reports of findings (markdown, saved as `report.md` beside a finding).
//!
//! A report has the case summary (with the tensors as tables when they are small), the
//! outcome and its signature, then what helps most for that kind: for a mismatch the count of
//! differing elements, the first ones (index, oracle, machine) and the output — as tables,
//! oracle against machine, when it is small, else the differing rows; for a fault or deadlock
//! the interpreter's report. Then the pictures a saved finding holds, and for the in-repo
//! compiler the failing program's assembly against the same case compiled with optimizations
//! off (or, for an injected bug, against the correct compilation).
//!
//! Reports stay fast and small for any program: a passing case gets no program diff at all,
//! and every diff is bounded ([`crate::report::diff`]). They are deterministic — no timings,
//! no temporary paths — so they can be snapshot-tested and diffed between runs.

pub mod chipmap;
pub mod diff;
pub mod listing;
pub mod pictures;
mod suspects;
pub mod tables;

use std::fmt::Write as _;

use ndarray::ArrayD;
use pimdiff_isa::bundle::{Bundle, IoManifest};
use pimdiff_isa::formats::asm;
use pimdiff_oracle::{Case, Op};

use crate::check::outcome::{Mismatch, Outcome};
use crate::check::{CaseResult, RunConfig};
use crate::generate::describe_case;
use crate::report::diff::{write_bounded_diff, write_fenced, MAX_DIFF_LINES};
use crate::triage::{judge, Dossier, SuspectSource, Suspects};

/// Values of one output row a report prints before cutting the row short.
const MAX_ROW_VALUES: usize = 64;

/// The markdown report of one checked case, judged now (suspects localized within a budget):
/// what `repro`, `from-fuzz` and the fuzz targets write. A hunt renders the dossier its triage
/// made instead ([`render`]).
pub fn render_report(case: &Case, result: &CaseResult, cfg: &RunConfig) -> String {
    render(&judge(case, result, cfg, SuspectSource::Localize))
}

/// The markdown report of a judged finding: a rendering, nothing in it runs or compiles.
pub fn render(d: &Dossier) -> String {
    render_filed(d, None)
}

/// [`render`] for a finding filed under `filed_as`, its `finding.json` signature: the cause
/// triage named (say `mismatch: ld of uninitialised global memory`), which can differ from the
/// signature of the saved case's own outcome (the shape of the wrong output, what `repro` and
/// `replay` confirm). The title is the name the finding is filed under; both are listed.
pub fn render_filed(d: &Dossier, filed_as: Option<&str>) -> String {
    let (case, result) = (&d.case, &d.result);
    let mut r = String::new();
    header_section(&mut r, d, filed_as);
    case_section(&mut r, case);
    outcome_section(&mut r, case, result);
    if d.suspects != Suspects::NotYet {
        explanation_section(&mut r, d);
    }
    r.push_str(&suspects_section(d));
    pictures_section(&mut r, case, result);
    program_section(&mut r, d);
    r
}

/// The `## Suspects` section of a judged finding: each suspect with why, its fix and the
/// assembly around it (empty when the dossier has no suspects to show).
pub fn suspects_section(d: &Dossier) -> String {
    match (&d.suspects, &d.result.bundle) {
        (Suspects::Found(list), Some(bundle)) => suspects::render(list, &bundle.program.cores),
        _ => String::new(),
    }
}

/// The files saved beside a finding besides its case and report: the pictures of
/// [`pictures::planned`] and the exports for the user's toolchain ([`crate::interop`]). A
/// picture that cannot be drawn is left out (the report says which pictures to expect).
pub fn attachments(case: &Case, result: &CaseResult) -> Vec<crate::corpus::Attachment> {
    let pictures = pictures::render_pictures(case, result).unwrap_or_default();
    let pictures = pictures.into_iter().map(|p| crate::corpus::Attachment {
        name: p.name.file,
        bytes: p.svg.into_bytes(),
    });
    let exports = crate::interop::export_files(case)
        .into_iter()
        .map(|(name, bytes)| crate::corpus::Attachment { name, bytes });
    pictures.chain(exports).collect()
}

/// `## What the program computed`: the nearby specification whose oracle output the wrong
/// output is, when there is one.
fn explanation_section(r: &mut String, d: &Dossier) {
    if let Some(e) = &d.explanation {
        let _ = write!(
            r,
            "## What the program computed\n\nThe machine's output is exactly the oracle's \
             output of this case {}, on this input and on every probe input: the program \
             {}.\n\n",
            e.description, e.label
        );
    }
}

fn header_section(r: &mut String, d: &Dossier, filed_as: Option<&str>) {
    let (result, outcome) = (&d.result, &d.result.outcome);
    let own = result.signature().map(|s| s.to_string());
    let filed_apart = filed_as.filter(|f| Some(*f) != own.as_deref());
    let title = match (filed_apart, &own) {
        (Some(filed), _) => filed.to_string(),
        (None, Some(sig)) => sig.clone(),
        (None, None) => outcome.kind().to_string(),
    };
    let _ = writeln!(r, "# pimdiff: {title}\n");
    let _ = writeln!(r, "- outcome: {}", outcome.summary());
    if let Some(filed) = filed_apart {
        let _ = writeln!(r, "- filed as: `{filed}` (the cause triage found)");
    }
    if let Some(sig) = &own {
        let _ = writeln!(r, "- signature: `{sig}`");
    }
    let _ = writeln!(r, "- compiler: {}", d.compiler);
    let _ = writeln!(
        r,
        "- schedule: {}, step budget {}",
        d.schedule, d.step_budget
    );
    let _ = writeln!(r);
}

fn outcome_section(r: &mut String, case: &Case, result: &CaseResult) {
    if let Some(a) = &result.attribution {
        r.push_str(&crate::check::n_version::report_section(a));
    }
    match &result.outcome {
        Outcome::Mismatch(m) => mismatch_section(r, case, result, m),
        Outcome::Fault { report, .. } | Outcome::Deadlock { report, .. } => {
            let _ = writeln!(
                r,
                "## Interpreter report\n\n```text\n{}\n```\n",
                report.trim_end()
            );
        }
        Outcome::CompileError { message } => {
            let _ = writeln!(
                r,
                "## Compiler message\n\n```text\n{}\n```\n",
                message.trim_end()
            );
        }
        Outcome::Unsupported { reason } => {
            let _ = writeln!(r, "## Reason\n\n{reason}\n");
        }
        Outcome::Poisoned { reason } => {
            let _ = writeln!(r, "## Tooling limit\n\n{reason}\n");
        }
        Outcome::Timeout {
            stage,
            limit,
            overrun: Some(o),
        } => {
            let _ = writeln!(
                r,
                "## Timeout\n\nThe compiler of the {stage} stage was killed: {}.\n",
                o.describe(*limit)
            );
        }
        Outcome::Timeout { stage, limit, .. } => {
            let _ = writeln!(
                r,
                "## Timeout\n\nThe {stage} stage did not finish within {:.1} s: it hangs (or is far slower than any case should be).\n",
                limit.as_secs_f64()
            );
        }
        Outcome::Crash {
            stage,
            message,
            location,
        } => {
            let _ = writeln!(
                r,
                "## Crash\n\nIn-process code of the {stage} stage panicked{}.\n\n```text\n{}\n```\n",
                location.as_deref().map_or(String::new(), |l| format!(" at `{l}`")),
                message.trim_end()
            );
        }
        Outcome::InterpreterPanic { message } => {
            let _ = writeln!(
                r,
                "## Interpreter panic\n\nThe interpreter panicked: a bug in pimdiff itself, not in the compiler under test.\n\n```text\n{}\n```\n",
                message.trim_end()
            );
        }
        Outcome::BogusUnsupported { reason, problem } => {
            let _ = writeln!(
                r,
                "## Bogus unsupported\n\nThe compiler declined the case: {reason}\n\nThe claim does not hold: {problem}\n"
            );
        }
        Outcome::OutOfSteps { executed } => {
            let _ = writeln!(
                r,
                "## Step budget\n\nThe run stopped after {executed} instructions.\n"
            );
        }
        Outcome::Race { report, .. } => {
            let _ = writeln!(
                r,
                "## Race\n\nTwo cores access the same global bytes, at least one writing, and no `sync`/`wait` or message orders them: the result depends on the interleaving.\n\n```text\n{}\n```\n",
                report.trim_end()
            );
        }
        Outcome::UninitializedRead { report, .. } => {
            let _ = writeln!(
                r,
                "## Uninitialized read\n\nAn instruction reads bytes that neither the host (input, constants) nor an instruction wrote.\n\n```text\n{}\n```\n",
                report.trim_end()
            );
        }
        Outcome::ScheduleDependent {
            schedule, report, ..
        } => {
            let _ = writeln!(
                r,
                "## Schedule-dependent\n\nThe result changes with the core interleaving (replay: `--schedule {schedule}`).\n\n```text\n{}\n```\n",
                report.trim_end()
            );
        }
        Outcome::Pass => {}
    }
}

fn mismatch_section(r: &mut String, case: &Case, result: &CaseResult, m: &Mismatch) {
    let _ = writeln!(r, "## Mismatch\n");
    let _ = writeln!(
        r,
        "{} of {} output elements differ ({}).\n",
        m.differing, m.total, m.class
    );
    if !m.first.is_empty() {
        let _ = writeln!(r, "| index | oracle | machine | machine − oracle |");
        let _ = writeln!(r, "|---|---:|---:|---:|");
        for (idx, o, mach) in &m.first {
            let _ = writeln!(
                r,
                "| {idx:?} | {o} | {mach} | {} |",
                *mach as i64 - *o as i64
            );
        }
        let _ = writeln!(r);
    }
    let oracle = pictures::oracle_output(case, result);
    let (Some(o), Some(mach)) = (oracle, &result.machine_output) else {
        return;
    };
    if o.shape() != mach.shape() {
        let _ = writeln!(
            r,
            "The machine's output has shape {:?}, the oracle's {:?}.\n",
            mach.shape(),
            o.shape()
        );
    } else if !tables::write_output_comparison(r, &case.spec.op, o, mach) {
        differing_rows(r, o, mach, &case.spec.op);
    }
}

fn pictures_section(r: &mut String, case: &Case, result: &CaseResult) {
    let planned = pictures::planned(case, result);
    if planned.is_empty() {
        return;
    }
    let _ = writeln!(r, "## Pictures\n\nBeside this report in a saved finding:\n");
    for p in planned {
        let _ = writeln!(r, "![{}]({})\n", p.what, p.file);
    }
}

fn case_section(r: &mut String, case: &Case) {
    let s = &case.spec;
    let _ = writeln!(r, "## Case\n");
    let _ = writeln!(r, "`{}`\n", describe_case(case));
    let _ = writeln!(r, "| field | value |");
    let _ = writeln!(r, "|---|---|");
    match &s.op {
        Op::Conv2d(c) => {
            let _ = writeln!(r, "| op | conv2d |");
            let _ = writeln!(
                r,
                "| channels | {} → {} (groups {}) |",
                c.in_channels, c.out_channels, c.groups
            );
            let _ = writeln!(r, "| kernel | {:?} |", c.kernel);
            let _ = writeln!(r, "| stride | {:?} |", c.stride);
            let _ = writeln!(r, "| padding [t, l, b, r] | {:?} |", c.padding);
            let _ = writeln!(r, "| dilation | {:?} |", c.dilation);
            let _ = writeln!(r, "| bias, relu | {}, {} |", c.bias, c.relu);
        }
        Op::Mvm(m) => {
            let _ = writeln!(r, "| op | mvm |");
            let _ = writeln!(r, "| features | {} → {} |", m.in_features, m.out_features);
            let _ = writeln!(r, "| bias, relu | {}, {} |", m.bias, m.relu);
        }
    }
    let _ = writeln!(r, "| input shape | {:?} |", s.input_shape);
    let _ = writeln!(r, "| output shape | {:?} |", s.output_shape());
    let a = &s.arch;
    let _ = writeln!(
        r,
        "| arch | {} core(s) × {} arrays of {}×{}, {} B local memory |\n",
        a.cores, a.arrays_per_core, a.array_rows, a.array_cols, a.local_memory_bytes
    );
    tables::write_case_tensors(r, case);
}

/// The output rows that differ, oracle (−) above machine (+): conv2d rows `n0 k1 h2`, MVM rows
/// `n0`. Linear in the output's size; at most [`MAX_DIFF_LINES`] lines.
fn differing_rows(r: &mut String, oracle: &ArrayD<i32>, machine: &ArrayD<i32>, op: &Op) {
    let shape = oracle.shape();
    let (width, name): (usize, Box<dyn Fn(usize) -> String>) = match (op, shape) {
        (Op::Conv2d(_), &[_, k, h, w]) => (
            w,
            Box::new(move |row| format!("n{} k{} h{}", row / (k * h), row / h % k, row % h)),
        ),
        (_, &[_, f]) => (f, Box::new(|row| format!("n{row}"))),
        _ => return,
    };
    let (Some(o), Some(m)) = (oracle.as_slice(), machine.as_slice()) else {
        return;
    };
    let row_text = |values: &[i32]| {
        let mut s: Vec<String> = values
            .iter()
            .take(MAX_ROW_VALUES)
            .map(i32::to_string)
            .collect();
        if values.len() > MAX_ROW_VALUES {
            s.push(format!("… ({} more)", values.len() - MAX_ROW_VALUES));
        }
        s.join(" ")
    };
    let rows = o.len() / width.max(1);
    let mut differing = 0usize;
    let mut text = String::from("--- oracle\n+++ machine\n");
    for (row, (a, b)) in o
        .chunks(width.max(1))
        .zip(m.chunks(width.max(1)))
        .enumerate()
    {
        if a == b {
            continue;
        }
        differing += 1;
        if differing * 2 <= MAX_DIFF_LINES {
            let _ = writeln!(text, "-{}: {}", name(row), row_text(a));
            let _ = writeln!(text, "+{}: {}", name(row), row_text(b));
        }
    }
    let _ = writeln!(
        r,
        "### Differing output rows, oracle (−) vs machine (+)\n\n{differing} of {rows} rows differ.\n"
    );
    write_fenced(r, "diff", &text, "diff");
    if differing * 2 > MAX_DIFF_LINES {
        let _ = writeln!(
            r,
            "({} more differing rows not shown)\n",
            differing - MAX_DIFF_LINES / 2
        );
    }
}

fn program_section(r: &mut String, d: &Dossier) {
    let result = &d.result;
    let Some(bundle) = &result.bundle else { return };
    let count: usize = bundle.program.cores.iter().map(Vec::len).sum();
    let _ = writeln!(r, "## Program\n");
    let _ = writeln!(
        r,
        "{} instructions on {} core(s).\n",
        count,
        bundle.program.cores.len()
    );
    // A passing program needs no explanation, and a diff of a large one costs a minute.
    if matches!(result.outcome, Outcome::Pass) {
        return;
    }
    let failing = asm::print(&bundle.program);
    match &d.reference {
        Some((what, other)) => compare_with_reference(r, what, other, bundle, &failing),
        None => {
            let _ = writeln!(r, "### Assembly\n");
            write_fenced(r, "text", &failing, "assembly");
        }
    }
}

fn compare_with_reference(
    r: &mut String,
    what: &str,
    other: &Bundle,
    bundle: &Bundle,
    failing: &str,
) {
    let reference = asm::print(&other.program);
    if reference == failing {
        let _ = writeln!(r, "The assembly is identical to {what}.\n");
    } else {
        let _ = writeln!(r, "### Assembly: {what} (−) vs the failing program (+)\n");
        write_bounded_diff(r, &reference, failing, "reference", "failing");
    }
    if other.manifest != bundle.manifest {
        let _ = writeln!(r, "### io manifest: {what} (−) vs the failing bundle (+)\n");
        write_bounded_diff(
            r,
            &manifest_text(&other.manifest),
            &manifest_text(&bundle.manifest),
            "reference",
            "failing",
        );
    }
    if other.xbars != bundle.xbars {
        let _ = writeln!(r, "### Crossbars\n");
        let _ = writeln!(r, "The crossbar export differs from {what}:\n");
        for (core, x) in &bundle.xbars.cores {
            match other.xbars.cores.get(core) {
                Some(o) if o.cells.shape() == x.cells.shape() => {
                    let cells = o
                        .cells
                        .iter()
                        .zip(x.cells.iter())
                        .filter(|(a, b)| a != b)
                        .count();
                    if cells > 0 || o.groups != x.groups {
                        let groups = if o.groups != x.groups {
                            ", groups differ"
                        } else {
                            ""
                        };
                        let _ = writeln!(r, "- core {core}: {cells} cells differ{groups}");
                    }
                }
                _ => {
                    let _ = writeln!(r, "- core {core}: not comparable");
                }
            }
        }
        let _ = writeln!(r);
    }
}

/// The manifest as pretty JSON, plus one line per constant segment (its bytes are not JSON).
fn manifest_text(m: &IoManifest) -> String {
    let mut text = serde_json::to_string_pretty(m).unwrap_or_default();
    for c in &m.constants {
        let _ = write!(
            text,
            "\nconstant {:?}: {} bytes at {}",
            c.name,
            c.data.len(),
            c.addr
        );
    }
    text + "\n"
}
