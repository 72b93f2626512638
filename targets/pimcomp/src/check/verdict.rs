//! Per node: what the run produced, where it was observed, and how it compares with the
//! reference, bit for bit.

use pimdiff_oracle::graph::{NodeOp, Value};
use serde::Serialize;

use super::align::Disagreement;
use super::model::{Mode, Model};
use super::rewrite::Layout;
use super::table::{Stage, TInst, TOp};

/// How a node's output was observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckKind {
    /// The program's own store to global memory (element mode's last node).
    EndToEnd,
    /// `VER` points turned into stores (element mode).
    Probe,
    /// The layer run on its own with reference inputs (batch mode).
    Isolated,
    None,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Exact,
    Mismatch,
    /// Every compared reference value is the same constant (e.g. after an average pool whose
    /// `1/k` truncates to 0): agreement says nothing.
    Degenerate,
    Unchecked,
}

/// An instruction as reports name it: core, index in PROGRAM, assembly text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InstRef {
    pub core: u32,
    pub index: u32,
    pub text: String,
}

/// One node's verdict, as `summary.json` spells it.
#[derive(Clone, Debug, Serialize)]
pub struct NodeVerdict {
    pub index: usize,
    pub name: String,
    pub op: String,
    pub check: CheckKind,
    pub status: Status,
    /// Why a node is unchecked or degenerate (in the report, not in `summary.json`).
    #[serde(skip)]
    pub reason: Option<String>,
    pub compared: u64,
    pub mismatches: u64,
    pub nonzero_reference: u64,
    pub windows_checked: u64,
    pub windows_wrong: u64,
    pub first_wrong_mvmul: Option<InstRef>,
    pub writers: Vec<InstRef>,
    /// The rows of the first wrong `mvmul` that did not come from where the table says.
    pub first_wrong_sources: Vec<SourceDiff>,
    pub disagreements: Vec<Disagreement>,
}

/// Where each node's elements were written in global memory: `(flat element, address)`
/// ranges of the node's HWC output.
pub struct Observation {
    pub kind: CheckKind,
    /// `(first element, global address, length)`.
    pub spans: Vec<(usize, u32, usize)>,
}

impl Observation {
    /// The address of element 0 when every span lies at `address + element`.
    pub fn base(&self) -> Option<u32> {
        let &(first, addr, _) = self.spans.first()?;
        let base = (addr as i64) - first as i64;
        self.spans
            .iter()
            .all(|&(f, a, _)| a as i64 - f as i64 == base)
            .then_some(base)
            .and_then(|b| u32::try_from(b).ok())
    }
}

/// The observations the run offers, per node.
pub fn observations(
    model: &Model,
    mode: Mode,
    table: &[Option<Vec<TInst>>],
    layout: &Layout,
) -> Vec<Option<Observation>> {
    let mut obs: Vec<Option<Observation>> = (0..model.nodes.len()).map(|_| None).collect();
    fn add(
        obs: &mut [Option<Observation>],
        node: usize,
        kind: CheckKind,
        span: (usize, u32, usize),
    ) {
        if let Some(slot) = obs.get_mut(node) {
            let o = slot.get_or_insert(Observation {
                kind,
                spans: Vec::new(),
            });
            if o.kind == kind {
                o.spans.push(span);
            }
        }
    }
    for t in table.iter().flatten().flatten() {
        let node = t.node.max(0) as usize;
        let len = t.len.max(0) as usize;
        match (mode, t.op) {
            (Mode::Element, TOp::St) if t.stage == Stage::Output => {
                let off = t.dst_off.max(0) as usize;
                let addr = (t.dst.max(0) + t.dst_off) as u32;
                add(&mut obs, node, CheckKind::EndToEnd, (off, addr, len));
            }
            (Mode::Batch, TOp::St) => {
                if let Some(&base) = layout.output_region.get(&node) {
                    let off = t.dst_off.max(0) as usize;
                    add(
                        &mut obs,
                        node,
                        CheckKind::Isolated,
                        (off, base + off as u32, len),
                    );
                }
            }
            _ => {}
        }
    }
    // Probes only where the program does not store the node itself.
    for t in table
        .iter()
        .flatten()
        .flatten()
        .filter(|t| t.op == TOp::Ver)
    {
        let node = t.node.max(0) as usize;
        if let (Some(&base), Some(n)) = (layout.probe.get(&node), model.nodes.get(node)) {
            if obs[node]
                .as_ref()
                .is_some_and(|o| o.kind != CheckKind::Probe)
            {
                continue;
            }
            let first = t.cycle.max(0) as usize * n.shape.c;
            let span = (first, base + first as u32, t.len.max(0) as usize);
            add(&mut obs, node, CheckKind::Probe, span);
        }
    }
    obs
}

/// The observed tensor of a node: `(actual, covered)` over its HWC output.
pub fn gather(
    o: &Observation,
    len: usize,
    read: &dyn Fn(u32, usize) -> Vec<u8>,
) -> (Vec<i8>, Vec<bool>) {
    let mut actual = vec![0i8; len];
    let mut covered = vec![false; len];
    for &(first, addr, n) in &o.spans {
        let n = n.min(len.saturating_sub(first));
        let bytes = read(addr, n);
        for (k, &b) in bytes.iter().enumerate() {
            actual[first + k] = b as i8;
            covered[first + k] = true;
        }
    }
    (actual, covered)
}

/// Compares one node. `observed` is `(actual, covered)` when the run observed it.
pub fn judge(
    index: usize,
    model: &Model,
    mode: Mode,
    reference: &Value,
    observed: Option<(CheckKind, &[i8], &[bool])>,
    disagreements: Vec<Disagreement>,
) -> NodeVerdict {
    let node = &model.nodes[index];
    let mut v = NodeVerdict {
        index,
        name: node.name.clone(),
        op: node.op.clone(),
        check: CheckKind::None,
        status: Status::Unchecked,
        reason: None,
        compared: 0,
        mismatches: 0,
        nonzero_reference: 0,
        windows_checked: 0,
        windows_wrong: 0,
        first_wrong_mvmul: None,
        writers: Vec::new(),
        first_wrong_sources: Vec::new(),
        disagreements,
    };
    let Some((kind, actual, covered)) = observed else {
        v.reason = Some(unobserved_reason(index, model, mode));
        return v;
    };
    v.check = kind;
    let reference = match reference {
        Value::Tensor(t) => t,
        Value::Unavailable(why) => {
            v.reason = Some(format!("no reference: {why}"));
            return v;
        }
    };
    if reference.len() != actual.len() {
        v.reason = Some(format!(
            "the reference has shape {:?}, node_list says {:?}",
            reference.dim(),
            (node.shape.h, node.shape.w, node.shape.c)
        ));
        return v;
    }
    let mut first: Option<i8> = None;
    let mut constant = true;
    for ((&r, &a), &c) in reference.iter().zip(actual).zip(covered) {
        if !c {
            continue;
        }
        v.compared += 1;
        v.mismatches += (r != a) as u64;
        v.nonzero_reference += (r != 0) as u64;
        match first {
            None => first = Some(r),
            Some(f) => constant &= f == r,
        }
    }
    v.status = if v.compared == 0 {
        v.reason = Some("the program's observation points cover no element".into());
        Status::Unchecked
    } else if v.mismatches > 0 {
        Status::Mismatch
    } else if constant {
        v.reason = Some(format!(
            "every compared reference value is {}",
            first.unwrap_or(0)
        ));
        Status::Degenerate
    } else {
        Status::Exact
    };
    v
}

fn unobserved_reason(index: usize, model: &Model, mode: Mode) -> String {
    match &model.graph.nodes[index].op {
        NodeOp::Input(_) => "the input image".into(),
        NodeOp::Identity | NodeOp::Flatten => {
            "not computed by PIMCOMP-NN (placement only; identity in the reference)".into()
        }
        NodeOp::Unsupported(why) => why.clone(),
        _ if mode == Mode::Batch => {
            "batch mode emits CONV/FC layers only (post-operations are not emitted)".into()
        }
        _ => "no VER point or store observes it".into(),
    }
}

/// One row of a wrong window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SourceDiff {
    /// Position in the `mvmul`'s input vector.
    pub element: u32,
    pub expected: String,
    pub actual: String,
    /// The instruction that last wrote the element (`None`: nothing did).
    pub writer: Option<InstRef>,
}
