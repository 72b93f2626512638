//! The check of a compiled case: each granularity's flow run on the CIM-MLC machine
//! (`pimdiff-cim-mlc`, `docs/cim-mlc-isa.md`) with the case's input and weights placed where
//! CIM-MLC's `layout.json` says, every network output compared exactly with the reference, and
//! the first node whose value is wrong and the meta-operator that wrote it found by the
//! machine's localizer. Granularities that fail the same way are one finding.
//!
//! Two faults are systematic in CIM-MLC's lower levels (every wordline-level convolution
//! loads all its windows before the first activation; a crossbar-level `Gemm` names one
//! crossbar too many): a level that stops at one of them runs again past them, so that what
//! else is wrong there is a finding of its own (`… (looking past input-overrun, …)`). So is a
//! systematic difference: no meta-operator applies a bias (`docs/cim-mlc-isa.md`), so every
//! network with a biased layer is wrong at every level from that layer on; a level that is
//! wrong in such a network is compared again with the reference of the network without its
//! biases (`… (looking past bias)`), and what is still wrong there is a finding of its own.

use std::fmt::Write as _;
use std::path::Path;

use pimdiff_cim_mlc::machine::Writer;
use pimdiff_cim_mlc::{
    Chip, Divergence, Finished, Flow, Flows, InputQueue, Layout, Level as MLevel, MachineOptions,
    NodeWeights, RunOutcome, Tensor,
};
use serde::{Deserialize, Serialize};

use pimdiff_engine::finding::Kind;

use crate::arch::Level;
use crate::case::{CimCase, Files};
use crate::data::{bias_name, weight_name, INPUT};
use crate::driver::Output;
use crate::network::Op;
use crate::outcome::Outcome;
use crate::reference::reference;

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
    /// `None`: nothing wrote it.
    pub got: Option<i64>,
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
    /// The faults this run looks past (`input-overrun`, `crossbar-count`): empty for the strict
    /// run; a second, lenient run of a level whose strict run stopped at one of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub past: Vec<String>,
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
    let unjudged = |why: String| Check {
        levels: out
            .flows
            .keys()
            .map(|&level| LevelCheck {
                level,
                past: Vec::new(),
                verdict: Verdict::Unjudged { why: why.clone() },
                executed: 0,
            })
            .collect(),
    };
    let reference = match reference(&case.network, &files.data) {
        Ok(r) => r,
        Err(e) => return unjudged(format!("no reference: {e}")),
    };
    let layout = match Layout::parse(Path::new("layout.json"), out.layout.as_bytes()) {
        Ok(l) => l,
        Err(e) => return unjudged(format!("layout.json: {e}")),
    };
    let parsed: Result<Vec<Flow>, _> = out
        .flows
        .iter()
        .map(|(level, text)| Flow::parse(machine_level(*level), Path::new(level.file()), text))
        .collect();
    let flows = match parsed.and_then(Flows::from_flows) {
        Ok(f) => f,
        Err(e) => return unjudged(format!("a flow cannot be read: {e}")),
    };
    let chip = match setup(case, files, &layout, &flows, MachineOptions::default()) {
        Ok(c) => c,
        Err(e) => return unjudged(format!("the machine cannot set the chip up: {e}")),
    };
    let references = node_references(case, &reference);
    let unbiased = unbiased_reference(case, files);
    let mut levels = Vec::new();
    let mut lenient: Option<Result<Chip<'_>, String>> = None;
    for &level in out.flows.keys() {
        let strict = run_level(case, &reference, &references, &chip, level);
        // A fault the hardware model stops on, but a systematic one (one of CIM-MLC's, at every
        // such layer): the level runs again past it, so that what else is wrong there shows
        // as a finding of its own instead of hiding behind it.
        let stopped_at = match &strict.verdict {
            Verdict::Fault { kind, .. } if LOOKED_PAST.contains(&kind.as_str()) => {
                Some(kind.clone())
            }
            _ => None,
        };
        // The chip the last run of the level used (`None`: the strict one).
        let mut last_chip: Option<&Chip<'_>> = None;
        levels.push(strict);
        if let Some(kind) = stopped_at {
            let lenient =
                lenient.get_or_insert_with(|| setup(case, files, &layout, &flows, LENIENT));
            if let Ok(chip) = lenient {
                let mut again = run_level(case, &reference, &references, chip, level);
                again.past = LOOKED_PAST.iter().map(|s| s.to_string()).collect();
                if !matches!(again.verdict, Verdict::Fault { kind: ref k, .. } if *k == kind) {
                    levels.push(again);
                    last_chip = Some(chip);
                }
            }
        }
        // A wrong value in a network with a bias: again against the network without its
        // biases, which is what the flows compute when nothing else is wrong.
        let last = levels.last().expect("the level was pushed");
        if let (Verdict::Wrong { .. }, Some((reference, references))) = (&last.verdict, &unbiased) {
            let mut past = last.past.clone();
            let mut again = run_level(
                case,
                reference,
                references,
                last_chip.unwrap_or(&chip),
                level,
            );
            past.push(BIAS.to_string());
            again.past = past;
            if matches!(again.verdict, Verdict::Wrong { .. }) {
                levels.push(again);
            }
        }
    }
    Check { levels }
}

/// What the check looks past in a network with a biased layer (see the module docs).
const BIAS: &str = "bias";

/// Every node's reference value by the ONNX node name the machine knows it by.
fn node_references(case: &CimCase, reference: &[ndarray::ArrayD<i64>]) -> Vec<(String, Tensor)> {
    case.network
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| {
            let r = &reference[i];
            let t = Tensor::new(r.shape().to_vec(), r.iter().copied().collect()).ok()?;
            Some((node_name(i, &n.op), t))
        })
        .collect()
}

/// The reference of the network with every bias zero (both forms), when it has a bias.
#[allow(clippy::type_complexity)]
fn unbiased_reference(
    case: &CimCase,
    files: &Files,
) -> Option<(Vec<ndarray::ArrayD<i64>>, Vec<(String, Tensor)>)> {
    let mut data = files.data.clone();
    let mut any = false;
    for (i, node) in case.network.nodes.iter().enumerate() {
        let biased = match node.op {
            Op::Conv { bias, .. } | Op::Gemm { bias, .. } => bias,
            _ => false,
        };
        if let Some(b) = data.params.get_mut(&bias_name(i)).filter(|_| biased) {
            b.fill(0);
            any = true;
        }
    }
    if !any {
        return None;
    }
    let reference = reference(&case.network, &data).ok()?;
    let references = node_references(case, &reference);
    Some((reference, references))
}

/// The faults a second run looks past (see [`LevelCheck::past`]): the hardware holds one load
/// per crossbar (or per row slice) until an activation reads it, and a crossbar range names
/// exactly the node's crossbars.
const LOOKED_PAST: [&str; 2] = ["input-overrun", "crossbar-count"];

/// The machine's options of the run that looks past them.
const LENIENT: MachineOptions = MachineOptions {
    work_budget: 1 << 36,
    input_queue: InputQueue::Unbounded,
    exact_crossbar_ranges: false,
};

/// The machine's name of a granularity.
fn machine_level(level: Level) -> MLevel {
    match level {
        Level::Core => MLevel::Core,
        Level::Crossbar => MLevel::Crossbar,
        Level::Wordline => MLevel::Wordline,
    }
}

/// The chip with the case's input, weights and initializers placed where the layout says.
fn setup<'a>(
    case: &CimCase,
    files: &Files,
    layout: &'a Layout,
    flows: &'a Flows,
    options: MachineOptions,
) -> Result<Chip<'a>, String> {
    let tensor = |a: &ndarray::ArrayD<i64>| {
        Tensor::new(a.shape().to_vec(), a.iter().copied().collect()).map_err(|e| e.to_string())
    };
    let mut b = Chip::builder(layout, flows).input(INPUT, tensor(&files.data.input)?);
    for (i, node) in case.network.nodes.iter().enumerate() {
        let param = |name: String| -> Result<Tensor, String> {
            tensor(
                files
                    .data
                    .params
                    .get(&name)
                    .ok_or_else(|| format!("no {name}"))?,
            )
        };
        let weights = match &node.op {
            Op::Conv { bias, .. } => NodeWeights::conv(
                param(weight_name(i))?,
                if *bias {
                    Some(param(bias_name(i))?)
                } else {
                    None
                },
            ),
            Op::Gemm { bias, trans_b, .. } => NodeWeights::gemm(
                param(weight_name(i))?,
                *trans_b,
                if *bias {
                    Some(param(bias_name(i))?)
                } else {
                    None
                },
            ),
            Op::MatMul { .. } => NodeWeights::matmul(param(weight_name(i))?),
            _ => continue,
        };
        b = b.weights(&node_name(i, &node.op), weights);
    }
    // Every initializer CIM-MLC gave an address (a constant operand, a reshape's shape).
    for init in &layout.initializers {
        if init.addr.is_none() {
            continue;
        }
        let value = match files.data.params.get(&init.name) {
            Some(a) => tensor(a)?,
            None => Tensor::new(vec![2], vec![1, -1]).map_err(|e| e.to_string())?,
        };
        b = b.initializer(&init.name, value);
    }
    b.options(options).build().map_err(|e| e.to_string())
}

/// The ONNX node name `model.onnx` gives node `i`.
fn node_name(i: usize, op: &Op) -> String {
    format!("n{i}_{}", op.onnx_type().to_ascii_lowercase())
}

/// One granularity on the machine, localized.
fn run_level(
    case: &CimCase,
    reference: &[ndarray::ArrayD<i64>],
    references: &[(String, Tensor)],
    chip: &Chip<'_>,
    level: Level,
) -> LevelCheck {
    let ml = machine_level(level);
    let refs: Vec<(&str, &Tensor)> = references.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let mut localizer = match chip.localizer(ml, &refs) {
        Ok(l) => l,
        Err(e) => {
            return LevelCheck {
                level,
                past: Vec::new(),
                verdict: Verdict::Unjudged { why: e.to_string() },
                executed: 0,
            }
        }
    };
    let outcome = chip.run_observed(ml, &mut localizer);
    let meta = |line: u32, node: Option<usize>| -> MetaOp {
        let found = chip
            .flows()
            .get(ml)
            .and_then(|f| f.lines.iter().find(|l| l.number == line));
        MetaOp {
            line: line as usize,
            name: found
                .and_then(|l| l.op())
                .map_or(String::new(), |op| op.name().to_string()),
            text: found.map_or(String::new(), |l| l.text.clone()),
            node,
        }
    };
    let (verdict, executed) = match outcome {
        RunOutcome::Finished(f) => {
            let verdict = compare_outputs(
                case,
                reference,
                &f,
                |d| {
                    let by = match d.writer {
                        Some(Writer::Line(line)) => Some(meta(line, Some(d.node))),
                        _ => None,
                    };
                    (d.node, by)
                },
                localizer.divergence.as_ref(),
            );
            (verdict, f.ops)
        }
        RunOutcome::Fault(f) => (
            Verdict::Fault {
                kind: fault_name(&f.kind),
                at: meta(f.line, f.node.as_ref().map(|n| n.index)),
                detail: f.kind.to_string(),
            },
            0,
        ),
        other => (
            Verdict::Unjudged {
                why: other.to_string(),
            },
            0,
        ),
    };
    LevelCheck {
        level,
        past: Vec::new(),
        verdict,
        executed,
    }
}

/// Every network output against the reference; the first wrong one with the localizer's
/// divergence (the first node whose value differs, and who wrote it).
fn compare_outputs(
    case: &CimCase,
    reference: &[ndarray::ArrayD<i64>],
    finished: &Finished,
    culprit: impl Fn(&Divergence) -> (usize, Option<MetaOp>),
    divergence: Option<&Divergence>,
) -> Verdict {
    for (k, &node) in case.network.outputs.iter().enumerate() {
        let name = crate::onnx::value_name(&case.network, crate::network::Src::Node(node));
        let want = &reference[node];
        let got: Vec<Option<i64>> = match finished.output(&name) {
            Some(o) => o.values.clone(),
            None => vec![None; want.len()],
        };
        let wrong: Vec<usize> = want
            .iter()
            .zip(got.iter().chain(std::iter::repeat(&None)))
            .enumerate()
            .filter(|(_, (w, g))| **g != Some(**w))
            .map(|(i, _)| i)
            .collect();
        if let Some(&first) = wrong.first() {
            let index = unravel(first, want.shape());
            let (node, by) = match divergence.map(&culprit) {
                Some((n, by)) => (Some(n), by),
                None => (None, None),
            };
            return Verdict::Wrong {
                output: k,
                differing: wrong.len(),
                total: want.len(),
                first: WrongValue {
                    index,
                    got: got.get(first).copied().flatten(),
                    want: want.iter().nth(first).copied().unwrap_or_default(),
                },
                op: node.map(|n| case.network.nodes[n].op.onnx_type().to_string()),
                node,
                by,
            };
        }
    }
    Verdict::Exact
}

/// The multi-index of element `flat` of an array of `shape` (row-major).
fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (d, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            index[d] = flat % n;
            flat /= n;
        }
    }
    index
}

/// A fault kind's stable name (`read-never-written`).
fn fault_name(kind: &pimdiff_cim_mlc::FaultKind) -> String {
    kind.name().to_string()
}

impl Check {
    /// The outcomes the check shows: a finding per group of granularities that fail the same
    /// way, or a pass, or no verdict.
    pub fn outcomes(&self, case: &CimCase) -> Vec<Outcome> {
        let _ = case;
        let mut out: Vec<Outcome> = Vec::new();
        let mut groups: Vec<(String, Kind, Vec<String>, String)> = Vec::new();
        for l in &self.levels {
            let label = if l.past.is_empty() {
                l.level.name().to_string()
            } else {
                format!("{} (looking past {})", l.level.name(), l.past.join(", "))
            };
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
                            first.got.map_or("nothing written".to_string(), |g| g.to_string()),
                            first.want
                        ),
                    )
                }
            };
            match groups.iter_mut().find(|g| g.0 == key && g.1 == kind) {
                Some(g) => {
                    g.2.push(label);
                    g.3.push_str("; ");
                    g.3.push_str(&detail);
                }
                None => groups.push((key, kind, vec![label], detail)),
            }
        }
        for (key, kind, labels, detail) in groups {
            out.push(Outcome::finding(
                kind,
                format!("{}: {key}", labels.join("+")),
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
            let past = if l.past.is_empty() {
                String::new()
            } else {
                format!(" (again, looking past {})", l.past.join(", "))
            };
            let _ = writeln!(r, "| {}{past} | {v} | {} |", l.level.name(), l.executed);
        }
        r.push('\n');
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{Api, Arch};
    use crate::generate::Setting;
    use crate::network::{Network, Node, Spelling, Src};

    fn case(bias: bool) -> CimCase {
        let spelling = Spelling {
            defaults: true,
            kernel_shape: true,
        };
        CimCase {
            network: Network {
                input: vec![1, 3],
                nodes: vec![
                    Node {
                        op: Op::Gemm {
                            out: 2,
                            bias,
                            trans_b: false,
                        },
                        inputs: vec![Src::Input],
                        spelling,
                    },
                    Node {
                        op: Op::Relu,
                        inputs: vec![Src::Node(0)],
                        spelling,
                    },
                ],
                outputs: vec![1],
            },
            setting: Setting {
                arch: Arch::example(Api::Core),
                input_precision: 8,
                weight_precision: 8,
            },
            seed: 5,
        }
    }

    #[test]
    fn the_reference_without_biases_is_the_network_less_its_biases() {
        assert!(unbiased_reference(&case(false), &case(false).files().unwrap()).is_none());
        let biased = case(true);
        let files = biased.files().unwrap();
        let (without, named) = unbiased_reference(&biased, &files).expect("a biased layer");
        let with = reference(&biased.network, &files.data).unwrap();
        let bias = &files.data.params[&bias_name(0)];
        // The layer itself: exactly its bias apart.
        assert_eq!(
            &with[0] - &without[0],
            bias.view().into_shape_with_order(vec![1, 2]).unwrap()
        );
        assert!(
            bias.iter().any(|&b| b != 0),
            "seed 5 draws a bias that is not all zero"
        );
        // The reference of the same network without the bias.
        let mut data = files.data.clone();
        data.params.get_mut(&bias_name(0)).unwrap().fill(0);
        assert_eq!(without, reference(&biased.network, &data).unwrap());
        // By the names the machine knows the nodes by.
        let names: Vec<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["n0_gemm", "n1_relu"]);
    }
}
