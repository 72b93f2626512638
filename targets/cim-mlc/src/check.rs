//! The check of a compiled case: each granularity's flow run on the CIM-MLC machine with the
//! case's input and weights placed where CIM-MLC's `layout.json` says, every network output
//! compared exactly with the reference, the first node whose value is wrong and the
//! meta-operator that wrote it found from the machine's trace; and the granularities compared
//! with each other.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use pimdiff_engine::finding::Kind;

use crate::arch::Level;
use crate::case::{CimCase, Files};
use crate::driver::Output;
use crate::outcome::Outcome;

/// One meta-operator of a flow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaOp {
    /// The line in the flow file (1-based).
    pub line: usize,
    /// Its name (`CIM.read_core-conv`, `Mov`, `load`, …).
    pub name: String,
    /// The line's text.
    pub text: String,
    /// The ONNX node it belongs to, when known.
    #[serde(default)]
    pub node: Option<usize>,
}

/// A wrong element.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrongValue {
    /// NCHW index.
    pub index: Vec<usize>,
    pub got: i64,
    pub want: i64,
}

/// What one granularity came to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// Every output equals the reference.
    Exact,
    /// An output differs; `node` is the first node (in graph order) whose value differs when
    /// its meta-operators are done, `by` the last of them.
    Wrong {
        output: usize,
        differing: usize,
        total: usize,
        first: WrongValue,
        node: Option<usize>,
        op: Option<String>,
        by: Option<MetaOp>,
    },
    /// The flow read what nothing wrote, or outside a buffer.
    Fault {
        kind: String,
        at: MetaOp,
        detail: String,
    },
    /// The machine cannot judge the flow (a meta-operator it does not model, a layout it
    /// cannot place).
    Unjudged { why: String },
}

/// One granularity's check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelCheck {
    pub level: Level,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Meta-operators executed.
    pub executed: u64,
}

/// The check of every granularity CIM-MLC wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub levels: Vec<LevelCheck>,
}

/// Runs every flow of `out` (see the module docs).
pub fn check(case: &CimCase, files: &Files, out: &Output) -> Check {
    let levels = out
        .flows
        .keys()
        .map(|&level| run_level(case, files, out, level))
        .collect();
    Check { levels }
}

/// One granularity on the machine.
fn run_level(_case: &CimCase, _files: &Files, _out: &Output, level: Level) -> LevelCheck {
    LevelCheck {
        level,
        verdict: Verdict::Unjudged {
            why: "the CIM-MLC machine is not in this build".into(),
        },
        executed: 0,
    }
}

impl Check {
    /// The outcomes the check shows: a finding per group of granularities that fail the same
    /// way, or a pass, or no verdict.
    pub fn outcomes(&self, case: &CimCase) -> Vec<Outcome> {
        let _ = case;
        let mut out: Vec<Outcome> = Vec::new();
        let mut groups: Vec<(String, Kind, Vec<Level>, String)> = Vec::new();
        for l in &self.levels {
            let (kind, key, detail) = match &l.verdict {
                Verdict::Exact | Verdict::Unjudged { .. } => continue,
                Verdict::Fault { kind, at, detail } => (
                    Kind::Fault,
                    format!("{kind} in {}", at.name),
                    format!(
                        "{} flow, line {} `{}`: {detail}",
                        l.level.name(),
                        at.line,
                        at.text.trim()
                    ),
                ),
                Verdict::Wrong {
                    output,
                    differing,
                    total,
                    first,
                    node,
                    op,
                    by,
                } => {
                    let key = match (op, by) {
                        (Some(op), Some(by)) => format!("first wrong at {op} by {}", by.name),
                        (Some(op), None) => format!("first wrong at {op}"),
                        _ => "wrong output".to_string(),
                    };
                    let at = match (node, by) {
                        (Some(n), Some(by)) => format!(
                            "; first wrong node n{n}, written by line {} `{}`",
                            by.line,
                            by.text.trim()
                        ),
                        (Some(n), None) => format!("; first wrong node n{n}"),
                        _ => String::new(),
                    };
                    (
                        Kind::Mismatch,
                        key,
                        format!(
                            "{} flow: output {output}: {differing} of {total} elements differ (at {:?}: {} instead of {}){at}",
                            l.level.name(),
                            first.index,
                            first.got,
                            first.want
                        ),
                    )
                }
            };
            match groups.iter_mut().find(|g| g.0 == key && g.1 == kind) {
                Some(g) => {
                    g.2.push(l.level);
                    g.3.push_str("; ");
                    g.3.push_str(&detail);
                }
                None => groups.push((key, kind, vec![l.level], detail)),
            }
        }
        for (key, kind, levels, detail) in groups {
            let names: Vec<&str> = levels.iter().map(|l| l.name()).collect();
            out.push(Outcome::finding(
                kind,
                format!("{}: {key}", names.join("+")),
                detail,
            ));
        }
        if out.is_empty() {
            let unjudged: Vec<String> = self
                .levels
                .iter()
                .filter_map(|l| match &l.verdict {
                    Verdict::Unjudged { why } => Some(format!("{}: {why}", l.level.name())),
                    _ => None,
                })
                .collect();
            out.push(if unjudged.is_empty() {
                Outcome::of_kind(
                    Kind::Pass,
                    "every granularity computes the network exactly".into(),
                )
            } else {
                Outcome::of_kind(Kind::Poisoned, unjudged.join("; "))
            });
        }
        out
    }

    /// The check's part of `report.md`.
    pub fn report(&self) -> String {
        let mut r = String::new();
        let _ = writeln!(
            r,
            "| granularity | verdict | meta-operators run |\n|---|---|---|"
        );
        for l in &self.levels {
            let v = match &l.verdict {
                Verdict::Exact => "every output exact".to_string(),
                Verdict::Wrong {
                    differing,
                    total,
                    node,
                    by,
                    ..
                } => format!(
                    "{differing} of {total} elements wrong{}{}",
                    node.map(|n| format!(", first at node n{n}"))
                        .unwrap_or_default(),
                    by.as_ref()
                        .map(|b| format!(", written by line {} `{}`", b.line, b.text.trim()))
                        .unwrap_or_default()
                ),
                Verdict::Fault { kind, at, detail } => {
                    format!(
                        "fault `{kind}` at line {} `{}`: {detail}",
                        at.line,
                        at.text.trim()
                    )
                }
                Verdict::Unjudged { why } => format!("not judged: {why}"),
            };
            let _ = writeln!(r, "| {} | {v} | {} |", l.level.name(), l.executed);
        }
        r.push('\n');
        r
    }
}
