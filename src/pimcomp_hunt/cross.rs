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

use super::outcome::NodeSeen;
use crate::pimcomp::Status;

/// The first node (in the networks' topological order) the two pipelines disagree on where
/// the reference cannot say which is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    pub fn signature(&self) -> String {
        format!(
            "cross-mode/both/{}/batch-{}/element-{}{}",
            self.op,
            status_name(self.batch),
            status_name(self.element),
            if self.references_differ {
                "/references-differ"
            } else {
                ""
            }
        )
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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrossReport {
    /// Nodes both pipelines observed on at least one common element.
    pub nodes_compared: usize,
    /// Of those, nodes where they differ and one pipeline's mismatch explains it.
    pub explained: usize,
    pub disagreement: Option<CrossDisagreement>,
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
            d.signature(),
            "cross-mode/both/OP_POOL/batch-unchecked/element-degenerate"
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
            d.signature(),
            "cross-mode/both/OP_CONV/batch-exact/element-exact/references-differ"
        );
        assert!(d
            .detail()
            .ends_with("(batch exact, element exact; their references differ)"));
    }

    #[test]
    fn comparison_stops_where_the_node_lists_part() {
        let batch = [node("OP_CONV", Status::Unchecked, &[1], &[true])];
        let element = [node("OP_FC", Status::Unchecked, &[2], &[true])];
        assert_eq!(compare(&batch, &element), CrossReport::default());
    }
}
