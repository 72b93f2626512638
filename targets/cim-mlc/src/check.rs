//! The check of a compiled case: each granularity's flow run on the CIM-MLC machine
//! (`pimdiff-cim-mlc`, `docs/cim-mlc-isa.md`) with the case's input and weights placed where
//! CIM-MLC's `layout.json` says, every network output compared exactly with the reference, and
//! the first node whose value is wrong and the meta-operator that wrote it found by the
//! machine's localizer. Each granularity that fails is a finding, signed by the CIM-MLC source
//! line that made the culprit meta-operator when the driver recorded it ([`crate::origins`]):
//! one defect of the code generator is one finding.
//!
//! Two faults are systematic in CIM-MLC's lower levels (every wordline-level convolution
//! loads all its windows before the first activation; a crossbar-level `Gemm` names one
//! crossbar too many): a level that stops at one of them runs again past them, so that what
//! else is wrong there is a finding of its own instead of hiding behind them. So is a
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

use pimdiff_engine::finding::{Kind, Signature};

use crate::arch::Level;
use crate::blame::{blame, fault_at, Blame, Made, READ_NEVER_WRITTEN};
use crate::data::NetData;
use crate::data::{bias_name, weight_name, INPUT};
use crate::driver::Output;
use crate::network::{Network, Op};
use crate::origins::Origins;
use crate::outcome::Outcome;
use crate::reference::reference;

/// One meta-operator of a flow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaOp {
    /// The line in the flow file (1-based).
    pub line: usize,
    /// Its name (`CIM.read_core-conv`, `Mov`, `load`, …; `store` for a `load` into the buffer).
    pub name: String,
    /// The line's text.
    pub text: String,
    /// The ONNX node it belongs to, when known.
    #[serde(default)]
    pub node: Option<usize>,
    /// The CIM-MLC source line that printed it (`file:line (function)`, [`crate::origins`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

impl MetaOp {
    /// `Mov of codegen/CoreWise.py:process_conv_node_cm`, or `None` without an origin: the
    /// place a finding at this meta-operator is localized to (see [`is_localized`]), in the
    /// form of a crash's site. The line number is left out (a fix or a patch above it moves
    /// it; the report gives it): the meta-operator and the function that made it name the
    /// place.
    fn cause(&self) -> Option<String> {
        let origin = self.origin.as_ref()?;
        let (file, rest) = origin.split_once(':')?;
        let function = rest.split_once(" (")?.1.strip_suffix(')')?;
        Some(format!("{} of {file}:{function}", self.name))
    }
}

/// Whether a CIM-MLC signature names the code generator function that made its meta-operator
/// (a fault or a first wrong value at a meta-operator whose origin is known): such findings
/// merge by it, whatever their outcome kind.
pub fn is_localized(signature: &Signature) -> bool {
    matches!(signature.kind, Kind::Fault | Kind::Mismatch)
        && signature
            .detail
            .rsplit_once(" of ")
            .is_some_and(|(_, site)| site.contains(".py:"))
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
    /// its meta-operators are done, `by` the meta-operator that wrote its first wrong element —
    /// or, when nothing wrote it (`unwritten`), the node's last meta-operator, which should have.
    Wrong {
        output: usize,
        differing: usize,
        total: usize,
        first: WrongValue,
        node: Option<usize>,
        op: Option<String>,
        by: Option<MetaOp>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        unwritten: bool,
    },
    /// The flow read what nothing wrote, or outside a buffer.
    Fault {
        kind: String,
        at: MetaOp,
        detail: String,
        /// The cause when CIM-MLC's own state puts it elsewhere than `at` ([`crate::blame`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blame: Option<Blame>,
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
pub fn check(network: &Network, data: &NetData, out: &Output) -> Check {
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
    let reference = match reference(network, data) {
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
    let chip = match setup(network, data, &layout, &flows, MachineOptions::default()) {
        Ok(c) => c,
        Err(e) => return unjudged(format!("the machine cannot set the chip up: {e}")),
    };
    let references = node_references(network, &reference);
    let unbiased = unbiased_reference(network, data);
    let origins = Origins::parse(&out.origins).unwrap_or_default();
    let mut levels = Vec::new();
    let mut lenient: Option<Result<Chip<'_>, String>> = None;
    for &level in out.flows.keys() {
        let strict = run_level(network, &reference, &references, &chip, &origins, level);
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
                lenient.get_or_insert_with(|| setup(network, data, &layout, &flows, LENIENT));
            if let Ok(chip) = lenient {
                let mut again = run_level(network, &reference, &references, chip, &origins, level);
                again.past = LOOKED_PAST.iter().map(|s| s.to_string()).collect();
                if !matches!(again.verdict, Verdict::Fault { kind: ref k, .. } if *k == kind) {
                    levels.push(again);
                    last_chip = Some(chip);
                }
            }
        }
        // A wrong value in a network with a bias: again against the network without its
        // biases, which is what the flows compute when nothing else is wrong.
        // Kept whatever it comes to: an exact run says the bias was all that was wrong.
        let last = levels.last().expect("the level was pushed");
        if let (Verdict::Wrong { .. }, Some((reference, references))) = (&last.verdict, &unbiased) {
            let mut past = last.past.clone();
            let mut again = run_level(
                network,
                reference,
                references,
                last_chip.unwrap_or(&chip),
                &origins,
                level,
            );
            past.push(BIAS.to_string());
            again.past = past;
            levels.push(again);
        }
    }
    Check { levels }
}

/// What the check looks past in a network with a biased layer (see the module docs).
const BIAS: &str = "bias";

/// The signature of a network whose outputs are wrong by its biases: no meta-operator of any
/// granularity applies one (`docs/cim-mlc-isa.md`), one cause whatever layer or line.
const BIAS_LEFT_OUT: &str = "biases left out";

/// Every node's reference value by the ONNX node name the machine knows it by.
fn node_references(network: &Network, reference: &[ndarray::ArrayD<i64>]) -> Vec<(String, Tensor)> {
    network
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
    network: &Network,
    data: &NetData,
) -> Option<(Vec<ndarray::ArrayD<i64>>, Vec<(String, Tensor)>)> {
    let mut data = data.clone();
    let mut any = false;
    for (i, node) in network.nodes.iter().enumerate() {
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
    let reference = reference(network, &data).ok()?;
    let references = node_references(network, &reference);
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
    network: &Network,
    data: &NetData,
    layout: &'a Layout,
    flows: &'a Flows,
    options: MachineOptions,
) -> Result<Chip<'a>, String> {
    let tensor = |a: &ndarray::ArrayD<i64>| {
        Tensor::new(a.shape().to_vec(), a.iter().copied().collect()).map_err(|e| e.to_string())
    };
    let mut b = Chip::builder(layout, flows).input(INPUT, tensor(&data.input)?);
    for (i, node) in network.nodes.iter().enumerate() {
        let param = |name: String| -> Result<Tensor, String> {
            tensor(data.params.get(&name).ok_or_else(|| format!("no {name}"))?)
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
        let value = match data.params.get(&init.name) {
            Some(a) => tensor(a)?,
            None => Tensor::new(vec![2], vec![1, -1]).map_err(|e| e.to_string())?,
        };
        b = b.initializer(&init.name, value);
    }
    b.options(options).build().map_err(|e| e.to_string())
}

/// A meta-operator's name in a signature: its name, except that a `load` into the buffer (a
/// crossbar's results, `WordlineWise.py:388`) is a `store` — CIM-MLC prints both directions
/// as `load`, and a defect of one is not one of the other.
fn signed_name(op: &pimdiff_cim_mlc::Op) -> String {
    match op {
        pimdiff_cim_mlc::Op::Store { .. } => "store".to_string(),
        other => other.name().to_string(),
    }
}

/// The ONNX node name `model.onnx` gives node `i`.
fn node_name(i: usize, op: &Op) -> String {
    format!("n{i}_{}", op.onnx_type().to_ascii_lowercase())
}

/// One granularity on the machine, localized.
fn run_level(
    network: &Network,
    reference: &[ndarray::ArrayD<i64>],
    references: &[(String, Tensor)],
    chip: &Chip<'_>,
    origins: &Origins,
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
                .map_or(String::new(), signed_name),
            text: found.map_or(String::new(), |l| l.text.clone()),
            node,
            origin: origins.site(level, line as usize).map(str::to_string),
        }
    };
    let (verdict, executed) = match outcome {
        RunOutcome::Finished(f) => {
            let verdict = compare_outputs(
                network,
                reference,
                &f,
                |d| match d.writer {
                    Some(Writer::Line(line)) => (d.node, Some(meta(line, Some(d.node))), false),
                    // No line of the flow wrote it (nothing did, or only the host before the
                    // run, where CIM-MLC let the node's result overlap the input): the node's
                    // own meta-operators left it out.
                    None | Some(Writer::Host) => {
                        (d.node, Some(meta(d.after_line, Some(d.node))), true)
                    }
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
                blame: blame(chip, &f, |line, node| {
                    let m = meta(line, Some(node));
                    Made {
                        place: m.cause(),
                        name: m.name,
                        text: m.text,
                    }
                }),
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
    network: &Network,
    reference: &[ndarray::ArrayD<i64>],
    finished: &Finished,
    culprit: impl Fn(&Divergence) -> (usize, Option<MetaOp>, bool),
    divergence: Option<&Divergence>,
) -> Verdict {
    for (k, &node) in network.outputs.iter().enumerate() {
        let name = crate::onnx::value_name(network, crate::network::Src::Node(node));
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
            let (node, by, unwritten) = match divergence.map(&culprit) {
                Some((n, by, unwritten)) => (Some(n), by, unwritten),
                None => (None, None, false),
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
                op: node.map(|n| network.nodes[n].op.onnx_type().to_string()),
                node,
                by,
                unwritten,
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
/// A failing level's outcome kind, signature detail and description.
fn level_failure(l: &LevelCheck) -> (Kind, String, String) {
    let level = l.level.name();
    let past = if l.past.is_empty() {
        String::new()
    } else {
        format!(" (looking past {})", l.past.join(", "))
    };
    match &l.verdict {
        Verdict::Fault {
            kind,
            at,
            detail,
            blame,
        } => (
            Kind::Fault,
            match blame {
                Some(b) => b.cause.clone(),
                None => at
                    .cause()
                    .map(|place| fault_at(kind, &place))
                    .unwrap_or_else(|| format!("{level}: {kind} in {}", at.name)),
            },
            format!(
                "{level} flow{past}, line {} `{}`{}: {detail}{}",
                at.line,
                at.text.trim(),
                printed_by(at),
                blame
                    .as_ref()
                    .map(|b| format!("; {}", b.why))
                    .unwrap_or_default()
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
            unwritten,
        } => {
            let sig = match (op, by) {
                // An element its node never wrote: the place a read of it faults at.
                (_, Some(by)) if by.origin.is_some() && *unwritten => by
                    .cause()
                    .map(|place| fault_at(READ_NEVER_WRITTEN, &place))
                    .unwrap_or_default(),
                (_, Some(by)) if by.origin.is_some() => by.cause().unwrap_or_default(),
                (Some(op), Some(_)) if *unwritten => {
                    format!("{level}: {op} leaves an element unwritten")
                }
                (Some(op), Some(by)) => format!("{level}: first wrong at {op} by {}", by.name),
                (Some(op), None) => format!("{level}: first wrong at {op}"),
                _ => format!("{level}: wrong output"),
            };
            let at = match (node, by) {
                (Some(n), Some(by)) => format!(
                    "; first wrong node n{n}{}, {} line {} `{}`{}",
                    op.as_ref().map(|o| format!(" ({o})")).unwrap_or_default(),
                    if *unwritten {
                        "whose element no line of the flow wrote, its last meta-operator"
                    } else {
                        "written by"
                    },
                    by.line,
                    by.text.trim(),
                    printed_by(by)
                ),
                (Some(n), None) => format!("; first wrong node n{n}"),
                _ => String::new(),
            };
            (
                Kind::Mismatch,
                sig,
                format!(
                    "{level} flow{past}: output {output}: {differing} of {total} elements differ (at {:?}: {} instead of {}){at}",
                    first.index,
                    first.got.map_or("nothing written".to_string(), |g| g.to_string()),
                    first.want
                ),
            )
        }
        Verdict::Exact | Verdict::Unjudged { .. } => (Kind::Pass, String::new(), String::new()),
    }
}

/// ` (printed by codegen/CoreWise.py:96 (…))`, or nothing without an origin.
fn printed_by(op: &MetaOp) -> String {
    op.origin
        .as_ref()
        .map(|o| format!(" (printed by {o})"))
        .unwrap_or_default()
}

fn fault_name(kind: &pimdiff_cim_mlc::FaultKind) -> String {
    kind.name().to_string()
}

impl Check {
    /// The outcomes the check shows: each granularity that fails is judged on its own (a lower
    /// level's code generator is other code, and a defect there must not hide behind the core
    /// level's); a level that stopped at a fault looked past ([`LOOKED_PAST`]) and fails again
    /// beyond it adds that second failure; a wrong value in a biased network is the bias's own
    /// finding (`biases left out`) when the network without its biases is exact there, else
    /// both. A failure at a meta-operator whose making line is known is signed by that line
    /// (`fault: Mov in codegen/CoreWise.py:process_conv_node_cm`), so one defect of the
    /// code generator is one finding whatever network or outcome kind shows it, and outcomes
    /// of one signature at several levels are one.
    pub fn outcomes(&self) -> Vec<Outcome> {
        let failing =
            |l: &LevelCheck| matches!(l.verdict, Verdict::Fault { .. } | Verdict::Wrong { .. });
        let mut out: Vec<Outcome> = Vec::new();
        let mut push = |o: Outcome| {
            if !out.iter().any(|x| x.signature == o.signature) {
                out.push(o);
            }
        };
        for first in self
            .levels
            .iter()
            .filter(|l| l.past.is_empty() && failing(l))
        {
            // The runs of this level, strict first, the most looked-past last.
            let runs: Vec<&LevelCheck> = self
                .levels
                .iter()
                .filter(|l| l.level == first.level)
                .collect();
            let bias = runs.iter().find(|l| l.past.iter().any(|p| p == BIAS));
            if let Some(bias) = bias {
                // A wrong value in a biased network, judged again without the biases: the bias
                // is a cause of its own, and what is still wrong without it another.
                let judged = runs
                    .iter()
                    .rev()
                    .find(|l| !l.past.iter().any(|p| p == BIAS))
                    .copied()
                    .unwrap_or(first);
                if !std::ptr::eq(judged, first) {
                    let (kind, sig, detail) = level_failure(first);
                    push(Outcome::finding(kind, sig, detail));
                }
                let (_, _, wrong) = level_failure(judged);
                let without = match &bias.verdict {
                    Verdict::Exact => "without its biases every output is exact",
                    Verdict::Unjudged { .. } => "without its biases it could not be judged",
                    _ => "without its biases it is still wrong (a finding of its own)",
                };
                push(Outcome::finding(
                    Kind::Mismatch,
                    BIAS_LEFT_OUT.to_string(),
                    format!("{wrong}; {without}"),
                ));
                if failing(bias) {
                    let (kind, sig, detail) = level_failure(bias);
                    push(Outcome::finding(kind, sig, detail));
                }
            } else {
                let (kind, sig, detail) = level_failure(first);
                push(Outcome::finding(kind, sig, detail));
                if let Some(beyond) = runs.iter().skip(1).rev().copied().find(|l| failing(l)) {
                    let (kind, sig, detail) = level_failure(beyond);
                    push(Outcome::finding(kind, sig, detail));
                }
            }
        }
        if out.is_empty() {
            out.push(self.no_finding());
        }
        out
    }

    /// A pass when every level is exact, else no verdict with the reasons.
    fn no_finding(&self) -> Outcome {
        let unjudged: Vec<String> = self
            .levels
            .iter()
            .filter_map(|l| match &l.verdict {
                Verdict::Unjudged { why } => Some(format!("{}: {why}", l.level.name())),
                _ => None,
            })
            .collect();
        if unjudged.is_empty() {
            Outcome::of_kind(
                Kind::Pass,
                "every granularity computes the network exactly".into(),
            )
        } else {
            Outcome::of_kind(Kind::Poisoned, unjudged.join("; "))
        }
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
                        .map(|b| format!(
                            ", written by line {} `{}`{}",
                            b.line,
                            b.text.trim(),
                            printed_by(b)
                        ))
                        .unwrap_or_default()
                ),
                Verdict::Fault {
                    kind,
                    at,
                    detail,
                    blame,
                } => {
                    format!(
                        "fault `{kind}` at line {} `{}`{}: {detail}{}",
                        at.line,
                        at.text.trim(),
                        printed_by(at),
                        blame
                            .as_ref()
                            .map(|b| format!("; {}", b.why))
                            .unwrap_or_default()
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

    fn op(line: usize, name: &str, origin: Option<&str>) -> MetaOp {
        MetaOp {
            line,
            name: name.into(),
            text: format!("{name} - 0 - 4 - 8"),
            node: Some(0),
            origin: origin.map(str::to_string),
        }
    }

    fn level(level: Level, past: &[&str], verdict: Verdict) -> LevelCheck {
        LevelCheck {
            level,
            past: past.iter().map(|s| s.to_string()).collect(),
            verdict,
            executed: 3,
        }
    }

    /// The first finding's signature of a check of one strict level.
    fn signed(l: Level, verdict: Verdict) -> Signature {
        Check {
            levels: vec![level(l, &[], verdict)],
        }
        .outcomes()[0]
            .signature
            .clone()
            .unwrap()
    }

    fn fault(at: MetaOp) -> Verdict {
        Verdict::Fault {
            kind: "read-never-written".into(),
            at,
            detail: "reads 4 never-written elements".into(),
            blame: None,
        }
    }

    fn wrong(by: Option<MetaOp>) -> Verdict {
        Verdict::Wrong {
            output: 0,
            differing: 2,
            total: 8,
            first: WrongValue {
                index: vec![0, 1],
                got: Some(3),
                want: 5,
            },
            node: Some(0),
            op: Some("conv".into()),
            by,
            unwritten: false,
        }
    }

    const SITE: &str = "codegen/CoreWise.py:97 (process_conv_node_cm)";

    #[test]
    fn each_failing_level_is_a_finding_signed_by_the_line_that_made_its_culprit() {
        let check = Check {
            levels: vec![
                level(Level::Core, &[], Verdict::Exact),
                level(Level::Crossbar, &[], fault(op(7, "Mov", Some(SITE)))),
                level(Level::Wordline, &[], wrong(Some(op(3, "load", None)))),
            ],
        };
        let out = check.outcomes();
        let sigs: Vec<String> = out
            .iter()
            .map(|o| o.signature.clone().unwrap().to_string())
            .collect();
        assert_eq!(
            sigs,
            [
                "fault: read-never-written at Mov of codegen/CoreWise.py:process_conv_node_cm"
                    .to_string(),
                "mismatch: wordline: first wrong at conv by load".to_string()
            ]
        );
        assert!(is_localized(out[0].signature.as_ref().unwrap()));
        assert!(!is_localized(out[1].signature.as_ref().unwrap()));
        assert_eq!(
            out[0].detail,
            format!(
                "crossbar flow, line 7 `Mov - 0 - 4 - 8` (printed by {SITE}): reads 4 never-written \
                 elements"
            )
        );
        // One line failing the same way at two levels is one outcome.
        let twice = Check {
            levels: vec![
                level(Level::Core, &[], fault(op(7, "Mov", Some(SITE)))),
                level(Level::Crossbar, &[], fault(op(3, "Mov", Some(SITE)))),
            ],
        }
        .outcomes();
        assert_eq!(twice.len(), 1);
    }

    #[test]
    fn a_wrong_value_and_a_fault_of_one_place_name_it_alike_and_a_moved_line_changes_nothing() {
        let a = signed(Level::Core, wrong(Some(op(2, "Mov", Some(SITE)))));
        let b = signed(Level::Core, fault(op(9, "Mov", Some(SITE))));
        assert_eq!((a.kind, b.kind), (Kind::Mismatch, Kind::Fault));
        assert_eq!(a.detail, "Mov of codegen/CoreWise.py:process_conv_node_cm");
        assert!(b.detail.ends_with(&a.detail));
        assert!(is_localized(&a) && is_localized(&b));
        // The same meta-operator made one line lower (a patch above it) signs alike.
        let moved = signed(
            Level::Core,
            wrong(Some(op(
                2,
                "Mov",
                Some("codegen/CoreWise.py:98 (process_conv_node_cm)"),
            ))),
        );
        assert_eq!(moved, a);
    }

    #[test]
    fn an_element_its_node_never_wrote_is_signed_as_the_read_of_it_faults() {
        // A Relu that drops its last element: a network ending at it is wrong by an element
        // nothing wrote, a network reading it faults; both at the Relu's meta-operator.
        let mut never = wrong(Some(op(6, "Relu", Some(SITE))));
        if let Verdict::Wrong {
            unwritten, first, ..
        } = &mut never
        {
            *unwritten = true;
            first.got = None;
        }
        let out = Check {
            levels: vec![level(Level::Core, &[], never)],
        }
        .outcomes();
        let read = signed(Level::Core, fault(op(9, "Relu", Some(SITE))));
        let sig = out[0].signature.clone().unwrap();
        assert_eq!(
            sig.to_string(),
            "mismatch: read-never-written at Relu of codegen/CoreWise.py:process_conv_node_cm"
        );
        assert_eq!(sig.detail, read.detail);
        assert!(is_localized(&sig));
        assert!(
            out[0]
                .detail
                .contains("nothing written instead of 5); first wrong node n0 (conv), whose element no line of the flow wrote, its last meta-operator line 6 `Relu - 0 - 4 - 8`"),
            "{}",
            out[0].detail
        );
    }

    #[test]
    fn without_an_origin_a_failure_is_signed_by_level_and_meta_operator() {
        let sig = signed(Level::Wordline, fault(op(4, "load", None)));
        assert_eq!(
            sig.to_string(),
            "fault: wordline: read-never-written in load"
        );
        assert!(!is_localized(&sig));
        let crash = Signature::new(Kind::Crash, "TypeError of codegen/X.py:f: boom");
        assert!(!is_localized(&crash));
    }

    #[test]
    fn a_level_that_fails_again_past_a_systematic_fault_adds_that_failure() {
        let overrun = Verdict::Fault {
            kind: "input-overrun".into(),
            at: op(
                5,
                "load",
                Some("codegen/WordlineWise.py:516 (process_conv_node_wlm)"),
            ),
            detail: "a second load before an activation".into(),
            blame: None,
        };
        let out = Check {
            levels: vec![
                level(Level::Wordline, &[], overrun),
                level(
                    Level::Wordline,
                    &["input-overrun", "crossbar-count"],
                    wrong(Some(op(8, "CIM.read_wl", Some(SITE)))),
                ),
            ],
        }
        .outcomes();
        let sigs: Vec<String> = out
            .iter()
            .map(|o| o.signature.clone().unwrap().to_string())
            .collect();
        assert_eq!(
            sigs,
            [
                "fault: input-overrun at load of codegen/WordlineWise.py:process_conv_node_wlm"
                    .to_string(),
                "mismatch: CIM.read_wl of codegen/CoreWise.py:process_conv_node_cm".to_string()
            ]
        );
        assert!(out[1]
            .detail
            .starts_with("wordline flow (looking past input-overrun, crossbar-count): output 0"));
    }

    #[test]
    fn a_network_wrong_only_by_its_biases_is_one_bias_finding() {
        let out = Check {
            levels: vec![
                level(
                    Level::Core,
                    &[],
                    wrong(Some(op(1, "CIM.read_core-conv", Some(SITE)))),
                ),
                level(Level::Core, &["bias"], Verdict::Exact),
            ],
        }
        .outcomes();
        let sigs: Vec<String> = out
            .iter()
            .map(|o| o.signature.clone().unwrap().to_string())
            .collect();
        assert_eq!(sigs, ["mismatch: biases left out"]);
        assert!(out[0]
            .detail
            .ends_with("; without its biases every output is exact"));
        assert!(!is_localized(out[0].signature.as_ref().unwrap()));
    }

    #[test]
    fn what_is_still_wrong_without_the_biases_is_a_finding_of_its_own() {
        let out = Check {
            levels: vec![
                level(Level::Core, &[], wrong(Some(op(1, "Mov", Some(SITE))))),
                level(Level::Core, &["bias"], fault(op(2, "Mov", Some(SITE)))),
            ],
        }
        .outcomes();
        let sigs: Vec<String> = out
            .iter()
            .map(|o| o.signature.clone().unwrap().to_string())
            .collect();
        assert_eq!(
            sigs,
            [
                "mismatch: biases left out".to_string(),
                "fault: read-never-written at Mov of codegen/CoreWise.py:process_conv_node_cm"
                    .to_string()
            ]
        );
        assert!(out[1]
            .detail
            .starts_with("core flow (looking past bias), line 2"));
    }

    #[test]
    fn exact_levels_pass_and_unjudged_ones_are_no_verdict() {
        let pass = Check {
            levels: vec![level(Level::Core, &[], Verdict::Exact)],
        }
        .outcomes();
        assert_eq!(pass[0].kind, Kind::Pass);
        let none = Check {
            levels: vec![
                level(Level::Core, &[], Verdict::Exact),
                level(
                    Level::Crossbar,
                    &[],
                    Verdict::Unjudged {
                        why: "no model of pad".into(),
                    },
                ),
            ],
        }
        .outcomes();
        assert_eq!(none[0].kind, Kind::Poisoned);
        assert_eq!(none[0].detail, "crossbar: no model of pad");
    }

    use crate::arch::{Api, Arch};
    use crate::case::CimCase;
    use crate::data::bias_name;
    use crate::generate::Setting;
    use crate::network::{Node, Spelling, Src};

    fn biased_case(bias: bool) -> CimCase {
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
        assert!(unbiased_reference(
            &biased_case(false).network,
            &biased_case(false).files().unwrap().data
        )
        .is_none());
        let biased = biased_case(true);
        let files = biased.files().unwrap();
        let (without, named) =
            unbiased_reference(&biased.network, &files.data).expect("a biased layer");
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
