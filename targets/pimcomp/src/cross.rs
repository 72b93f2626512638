//! The second oracle of `--mode both`: the same network compiled by the batch and the element
//! pipeline must compute the same layer outputs.
//!
//! Both checks synthesise the same image and weights from the case seed, but each compares a
//! node with its own pipeline's reference: the element check models that PIMCOMP-NN skips the
//! activation of the node it stores (`pimcomp::model`), the batch check does not. So where the
//! two references of a node are equal and both outputs are `exact`, they agree by
//! construction, and a `mismatch` in either explains a difference (that pipeline is wrong; the
//! mismatch is its own finding). Everything else on the elements both pipelines observed must
//! agree too, and a difference is a `cross-mode` finding: a node the reference does not judge
//! in one pipeline (`unchecked`, `degenerate`), or a node whose two references differ, i.e.
//! where the pipelines' conventions make the same network compute different outputs (the
//! signature then ends in `/references-differ`). Observed elements only: batch programs
//! isolate each layer with reference inputs, element programs chain them, and both leave some
//! elements unobserved.
//!
//! [`check_pair`] runs the comparison on two program files: `pimdiff pimcomp --cross`, and
//! the `check/` of a saved `cross-mode` finding ([`CrossChecked::write`]).

use std::path::{Path, PathBuf};

use pimdiff_isa::machine::Schedule;
use serde::Serialize;

use super::outcome::{nodes_seen, NodeSeen};
use crate::check::{self as pimcomp, report, Checked, Mode, Options, PimcompError, Status};
use pimdiff_engine::finding::{Kind, Signature};

/// The first node (in the networks' topological order) the two pipelines disagree on where
/// the reference cannot say which is wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CrossDisagreement {
    pub index: usize,
    pub name: String,
    pub op: String,
    pub batch: Status,
    pub element: Status,
    /// The two checks' references of the node differ (or one has none).
    pub references_differ: bool,
    /// Elements both pipelines observed, and how many of them differ.
    pub compared: u64,
    pub differ: u64,
}

impl CrossDisagreement {
    /// The deduplication key: the operator and how each pipeline's check judged the node.
    pub fn signature(&self) -> Signature {
        let detail = format!(
            "both/{}/batch-{}/element-{}{}",
            self.op,
            status_name(self.batch),
            status_name(self.element),
            if self.references_differ {
                "/references-differ"
            } else {
                ""
            }
        );
        Signature::new(Kind::CrossMode, detail)
    }

    /// One line for people.
    pub fn detail(&self) -> String {
        format!(
            "node {} ({}, {}): {} of {} elements both pipelines observed differ (batch {}, \
             element {}{})",
            self.index,
            self.name,
            self.op,
            self.differ,
            self.compared,
            status_name(self.batch),
            status_name(self.element),
            if self.references_differ {
                "; their references differ"
            } else {
                ""
            }
        )
    }
}

/// What the comparison of one network's two checks found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CrossReport {
    /// Nodes both pipelines observed on at least one common element.
    pub nodes_compared: usize,
    /// Of those, nodes where they differ and one pipeline's mismatch explains it.
    pub explained: usize,
    pub disagreement: Option<CrossDisagreement>,
}

impl CrossReport {
    /// One line for people: the agreement and its extent, or the disagreement's signature
    /// (`cross-mode: …`) and detail.
    pub fn line(&self) -> String {
        match &self.disagreement {
            Some(d) => format!("{}: {}", d.signature(), d.detail()),
            None => format!(
                "cross-mode: the pipelines agree on {} compared nodes ({} differences explained \
                 by a mismatch)",
                self.nodes_compared, self.explained
            ),
        }
    }
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Exact => "exact",
        Status::Mismatch => "mismatch",
        Status::Degenerate => "degenerate",
        Status::Unchecked => "unchecked",
    }
}

/// Compares the nodes of a batch and an element check of the same network. Networks whose
/// checks saw a different number of nodes or a different operator at some index are compared
/// up to the first such node only.
pub fn compare(batch: &[NodeSeen], element: &[NodeSeen]) -> CrossReport {
    let mut report = CrossReport::default();
    for (i, (b, e)) in batch.iter().zip(element).enumerate() {
        if b.op != e.op {
            break;
        }
        let (Some((bv, bm)), Some((ev, em))) = (&b.values, &e.values) else {
            continue;
        };
        let mut compared = 0u64;
        let mut differ = 0u64;
        for ((x, y), (p, q)) in bv.iter().zip(ev).zip(bm.iter().zip(em)) {
            if *p && *q {
                compared += 1;
                differ += u64::from(x != y);
            }
        }
        if compared == 0 {
            continue;
        }
        report.nodes_compared += 1;
        if differ == 0 {
            continue;
        }
        let references_differ = b.reference.is_none() || b.reference != e.reference;
        if b.status == Status::Mismatch || e.status == Status::Mismatch {
            report.explained += 1;
            continue;
        }
        if report.disagreement.is_none() {
            report.disagreement = Some(CrossDisagreement {
                index: i,
                name: e.name.clone(),
                op: e.op.clone(),
                batch: b.status,
                element: e.status,
                references_differ,
                compared,
                differ,
            });
        }
    }
    report
}

/// A batch and an element compile of the same network, each checked, and their comparison:
/// what `pimdiff pimcomp --cross` prints and a `cross-mode` finding's `check/` holds.
pub struct CrossChecked {
    /// The batch program and its check.
    pub batch: (PathBuf, Checked),
    /// The element program and its check.
    pub element: (PathBuf, Checked),
    pub report: CrossReport,
}

/// `cross.json`: the comparison, with the programs it compared.
#[derive(Serialize)]
struct CrossJson<'a> {
    batch: String,
    element: String,
    seed: u64,
    schedule: String,
    /// A disagreement, or either check a finding: `pimdiff pimcomp --cross` exits 1.
    finding: bool,
    nodes_compared: usize,
    explained: usize,
    signature: Option<String>,
    detail: Option<String>,
    disagreement: &'a Option<CrossDisagreement>,
}

/// Why two programs cannot be compared (bad input).
#[derive(Debug, thiserror::Error)]
pub enum CrossError {
    #[error(transparent)]
    Check(#[from] PimcompError),
    /// Both programs come from the same pipeline.
    #[error(
        "{} and {} are both {mode} programs: --cross compares a batch and an element compile \
         of the same model",
        first.display(),
        second.display()
    )]
    SameMode {
        first: PathBuf,
        second: PathBuf,
        mode: &'static str,
    },
}

/// Checks two programs of one network with the same options (only the program and table
/// differ) and compares them. One must be a batch and the other an element compile, in
/// either order; two of the same mode are bad input.
pub fn check_pair(first: &Options, second: &Options) -> Result<CrossChecked, CrossError> {
    let a = pimcomp::check(first)?;
    let b = pimcomp::check(second)?;
    let (batch, element) = match (a.mode, b.mode) {
        (Mode::Batch, Mode::Element) => ((first.program.clone(), a), (second.program.clone(), b)),
        (Mode::Element, Mode::Batch) => ((second.program.clone(), b), (first.program.clone(), a)),
        (mode, _) => {
            return Err(CrossError::SameMode {
                first: first.program.clone(),
                second: second.program.clone(),
                mode: match mode {
                    Mode::Batch => "batch",
                    Mode::Element => "element",
                },
            })
        }
    };
    let report = compare(&nodes_seen(&batch.1), &nodes_seen(&element.1));
    Ok(CrossChecked {
        batch,
        element,
        report,
    })
}

impl CrossChecked {
    /// Either check is a finding, or the comparison found a disagreement.
    pub fn is_finding(&self) -> bool {
        self.batch.1.is_finding()
            || self.element.1.is_finding()
            || self.report.disagreement.is_some()
    }

    /// Both checks' tables and the comparison's line, as `pimdiff pimcomp --cross` prints them.
    pub fn text(&self, seed: u64, schedule: Schedule) -> String {
        let (b, e) = (&self.batch, &self.element);
        format!(
            "{}\n{}\n{}\n",
            report::table(&b.1, &b.0, seed, schedule),
            report::table(&e.1, &e.0, seed, schedule),
            self.report.line()
        )
    }

    /// Writes each check's report into `out/batch/` and `out/element/` and the comparison
    /// into `out/cross.json`. `out` must not exist or be empty; it is written as a temporary
    /// sibling and renamed into place.
    pub fn write(&self, out: &Path, seed: u64, schedule: Schedule) -> Result<(), PimcompError> {
        report::write_atomically(out, |tmp| self.fill(tmp, seed, schedule))
    }

    /// The contents of [`write`](Self::write)'s directory, into `tmp`.
    fn fill(&self, tmp: &Path, seed: u64, schedule: Schedule) -> Result<(), PimcompError> {
        let (b, e) = (&self.batch, &self.element);
        report::write(&b.1, &tmp.join("batch"), &b.0, seed, schedule)?;
        report::write(&e.1, &tmp.join("element"), &e.0, seed, schedule)?;
        let r = &self.report;
        let json = CrossJson {
            batch: b.0.display().to_string(),
            element: e.0.display().to_string(),
            seed,
            schedule: report::schedule_text(schedule),
            finding: self.is_finding(),
            nodes_compared: r.nodes_compared,
            explained: r.explained,
            signature: r.disagreement.as_ref().map(|d| d.signature().to_string()),
            detail: r.disagreement.as_ref().map(CrossDisagreement::detail),
            disagreement: &r.disagreement,
        };
        let text =
            serde_json::to_string_pretty(&json).map_err(|e| PimcompError::Setup(e.to_string()))?;
        let path = tmp.join("cross.json");
        std::fs::write(&path, text + "\n").map_err(|source| PimcompError::Io { path, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(op: &str, status: Status, values: &[i8], seen: &[bool]) -> NodeSeen {
        NodeSeen {
            name: format!("n-{op}"),
            op: op.into(),
            status,
            values: Some((values.to_vec(), seen.to_vec())),
            reference: Some(vec![0; values.len()]),
        }
    }

    #[test]
    fn unexplained_difference_on_common_elements_is_a_disagreement() {
        let batch = [
            node("OP_CONV", Status::Exact, &[1, 2, 3], &[true; 3]),
            node(
                "OP_POOL",
                Status::Unchecked,
                &[5, 6, 7],
                &[true, true, false],
            ),
        ];
        let element = [
            node("OP_CONV", Status::Exact, &[1, 2, 3], &[true; 3]),
            node(
                "OP_POOL",
                Status::Degenerate,
                &[5, 9, 8],
                &[true, true, true],
            ),
        ];
        let r = compare(&batch, &element);
        assert_eq!(r.nodes_compared, 2);
        assert_eq!(r.explained, 0);
        let d = r.disagreement.unwrap();
        assert_eq!((d.index, d.compared, d.differ), (1, 2, 1));
        assert_eq!(
            d.signature().to_string(),
            "cross-mode: both/OP_POOL/batch-unchecked/element-degenerate"
        );
        assert_eq!(
            d.detail(),
            "node 1 (n-OP_POOL, OP_POOL): 1 of 2 elements both pipelines observed differ \
             (batch unchecked, element degenerate)"
        );
    }

    #[test]
    fn a_mismatch_explains_the_difference_and_unobserved_elements_do_not_count() {
        let batch = [
            node("OP_CONV", Status::Mismatch, &[1, 2], &[true; 2]),
            node("OP_RELU", Status::Unchecked, &[0, 4], &[false, true]),
        ];
        let element = [
            node("OP_CONV", Status::Exact, &[1, 3], &[true; 2]),
            node("OP_RELU", Status::Exact, &[9, 4], &[true, true]),
        ];
        let r = compare(&batch, &element);
        assert_eq!(
            r,
            CrossReport {
                nodes_compared: 2,
                explained: 1,
                disagreement: None
            }
        );
    }

    #[test]
    fn outputs_exact_against_different_references_disagree() {
        let batch = [node("OP_CONV", Status::Exact, &[-3, 2], &[true; 2])];
        let mut element = [node("OP_CONV", Status::Exact, &[0, 2], &[true; 2])];
        element[0].reference = Some(vec![1, 1]);
        let d = compare(&batch, &element).disagreement.unwrap();
        assert!(d.references_differ);
        assert_eq!(
            d.signature().to_string(),
            "cross-mode: both/OP_CONV/batch-exact/element-exact/references-differ"
        );
        assert!(d
            .detail()
            .ends_with("(batch exact, element exact; their references differ)"));
    }

    #[test]
    fn the_line_names_the_agreement_or_the_disagreement() {
        let agree = CrossReport {
            nodes_compared: 8,
            explained: 1,
            disagreement: None,
        };
        assert_eq!(
            agree.line(),
            "cross-mode: the pipelines agree on 8 compared nodes (1 differences explained by a \
             mismatch)"
        );
        let batch = [node("OP_CONV", Status::Exact, &[-3, 2], &[true; 2])];
        let mut element = [node("OP_CONV", Status::Exact, &[0, 2], &[true; 2])];
        element[0].reference = Some(vec![1, 1]);
        assert_eq!(
            compare(&batch, &element).line(),
            "cross-mode: both/OP_CONV/batch-exact/element-exact/references-differ: node 0 \
             (n-OP_CONV, OP_CONV): 1 of 2 elements both pipelines observed differ (batch exact, \
             element exact; their references differ)"
        );
    }

    #[test]
    fn comparison_stops_where_the_node_lists_part() {
        let batch = [node("OP_CONV", Status::Unchecked, &[1], &[true])];
        let element = [node("OP_FC", Status::Unchecked, &[2], &[true])];
        assert_eq!(compare(&batch, &element), CrossReport::default());
    }
}
