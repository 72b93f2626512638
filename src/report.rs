//! Readable reports of findings (markdown, saved as `report.md` beside a finding).
//!
//! A report has the case summary, the outcome and its signature, then what helps most for
//! that kind: for a mismatch the count of differing elements, the first ones (index, oracle,
//! machine) and the output rows side by side as a diff (oracle vs machine); for a fault or
//! deadlock the interpreter's report; for the in-repo compiler the failing program's
//! assembly against the same case compiled with optimizations off (or, for an injected bug,
//! against the correct compilation). Reports are deterministic — no timings, no temporary
//! paths — so they can be snapshot-tested and diffed between runs.

use std::fmt::Write as _;

use ndarray::ArrayD;
use pimdiff_compiler::{compile, CompileOptions};
use pimdiff_isa::formats::asm;
use pimdiff_oracle::{Case, Op};
use similar::TextDiff;

use crate::driver::{CaseResult, CompilerUnderTest, RunConfig};
use crate::generate::describe_case;
use crate::outcome::Outcome;

/// Lines of a diff (or of a listing) a report shows before cutting it short.
const MAX_DIFF_LINES: usize = 200;

/// The markdown report of one checked case.
pub fn render_report(case: &Case, result: &CaseResult, cfg: &RunConfig) -> String {
    let mut r = String::new();
    let outcome = &result.outcome;
    let title = match outcome.signature() {
        Some(sig) => sig.to_string(),
        None => outcome.kind().to_string(),
    };
    let _ = writeln!(r, "# pimdiff: {title}\n");
    let _ = writeln!(r, "- outcome: {}", outcome.summary());
    if let Some(sig) = outcome.signature() {
        let _ = writeln!(r, "- signature: `{sig}`");
    }
    let _ = writeln!(r, "- compiler: {}", cfg.compiler.describe());
    let _ = writeln!(
        r,
        "- schedule: {:?}, step budget {}",
        cfg.schedule, cfg.step_budget
    );
    let _ = writeln!(r);
    case_section(&mut r, case);
    match outcome {
        Outcome::Mismatch(m) => {
            let _ = writeln!(r, "## Mismatch\n");
            let _ = writeln!(
                r,
                "{} of {} output elements differ ({}).\n",
                m.differing,
                m.total,
                m.class
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
            if let (Some(o), Some(mach)) = (&result.oracle, &result.machine_output) {
                if o.shape() == mach.shape() {
                    let _ = writeln!(r, "### Output rows, oracle (−) vs machine (+)\n");
                    fenced_diff(
                        &mut r,
                        &rows_text(o, &case.spec.op),
                        &rows_text(mach, &case.spec.op),
                        "oracle",
                        "machine",
                    );
                } else {
                    let _ = writeln!(
                        r,
                        "The machine's output has shape {:?}, the oracle's {:?}.\n",
                        mach.shape(),
                        o.shape()
                    );
                }
            }
        }
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
        Outcome::OutOfSteps { executed } => {
            let _ = writeln!(
                r,
                "## Step budget\n\nThe run stopped after {executed} instructions.\n"
            );
        }
        Outcome::Pass => {}
    }
    program_section(&mut r, case, result, cfg);
    r
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
}

/// One line per output row: conv2d `n0 k1 h2: v v v`, MVM `n0: v v v`.
fn rows_text(t: &ArrayD<i32>, op: &Op) -> String {
    let mut s = String::new();
    let shape = t.shape();
    match op {
        Op::Conv2d(_) if shape.len() == 4 => {
            for n in 0..shape[0] {
                for k in 0..shape[1] {
                    for h in 0..shape[2] {
                        let row: Vec<String> =
                            (0..shape[3]).map(|w| t[[n, k, h, w]].to_string()).collect();
                        let _ = writeln!(s, "n{n} k{k} h{h}: {}", row.join(" "));
                    }
                }
            }
        }
        _ if shape.len() == 2 => {
            for n in 0..shape[0] {
                let row: Vec<String> = (0..shape[1]).map(|f| t[[n, f]].to_string()).collect();
                let _ = writeln!(s, "n{n}: {}", row.join(" "));
            }
        }
        _ => {
            let _ = writeln!(s, "{t:?}");
        }
    }
    s
}

/// A unified diff in a ```diff fence, cut after [`MAX_DIFF_LINES`] lines.
fn fenced_diff(r: &mut String, old: &str, new: &str, old_name: &str, new_name: &str) {
    let diff = TextDiff::from_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(2)
        .header(old_name, new_name)
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    let _ = writeln!(r, "```diff");
    for l in lines.iter().take(MAX_DIFF_LINES) {
        let _ = writeln!(r, "{l}");
    }
    let _ = writeln!(r, "```");
    if lines.len() > MAX_DIFF_LINES {
        let _ = writeln!(
            r,
            "\n({} more diff lines not shown)",
            lines.len() - MAX_DIFF_LINES
        );
    }
    let _ = writeln!(r);
}

fn program_section(r: &mut String, case: &Case, result: &CaseResult, cfg: &RunConfig) {
    let Some(bundle) = &result.bundle else { return };
    let failing = asm::print(&bundle.program);
    let count: usize = bundle.program.cores.iter().map(Vec::len).sum();
    let _ = writeln!(r, "## Program\n");
    let _ = writeln!(
        r,
        "{} instructions on {} core(s).\n",
        count,
        bundle.program.cores.len()
    );
    let reference = match &cfg.compiler {
        CompilerUnderTest::InRepo(o) if o.skip_padding || o.weight_skipping => {
            let off = CompileOptions {
                skip_padding: false,
                weight_skipping: false,
            };
            compile(case, &off)
                .ok()
                .map(|b| ("the same case compiled with optimizations off", b))
        }
        CompilerUnderTest::Mutated(_) => compile(case, &CompileOptions::default())
            .ok()
            .map(|b| ("the correct compilation (no injected bug)", b)),
        _ => None,
    };
    match reference {
        Some((what, other)) => {
            let reference = asm::print(&other.program);
            if reference == failing {
                let _ = writeln!(r, "The assembly is identical to {what}.\n");
            } else {
                let _ = writeln!(r, "### Assembly: {what} (−) vs the failing program (+)\n");
                fenced_diff(r, &reference, &failing, "reference", "failing");
            }
            if other.manifest != bundle.manifest {
                let json = |m: &pimdiff_isa::bundle::IoManifest| {
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
                };
                let _ = writeln!(r, "### io manifest: {what} (−) vs the failing bundle (+)\n");
                fenced_diff(
                    r,
                    &json(&other.manifest),
                    &json(&bundle.manifest),
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
                                let _ = writeln!(
                                    r,
                                    "- core {core}: {cells} cells differ{}",
                                    if o.groups != x.groups {
                                        ", groups differ"
                                    } else {
                                        ""
                                    }
                                );
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
        None => {
            let _ = writeln!(r, "### Assembly\n");
            let lines: Vec<&str> = failing.lines().collect();
            let _ = writeln!(r, "```text");
            for l in lines.iter().take(MAX_DIFF_LINES) {
                let _ = writeln!(r, "{l}");
            }
            let _ = writeln!(r, "```");
            if lines.len() > MAX_DIFF_LINES {
                let _ = writeln!(
                    r,
                    "\n({} more lines not shown)",
                    lines.len() - MAX_DIFF_LINES
                );
            }
        }
    }
}
