//! The first node whose result differs from the reference, and the meta-operator that wrote
//! the first wrong element.
//!
//! Comparing each write as it happens would blame correct flows: the core level's convolution
//! computes one row too many for each sub-IFM and lets the next sub-IFM or its `Mov` overwrite it
//! (codegen/CoreWise.py:67-98), and at the lower levels a node's instructions interleave with its
//! neighbours' (the pipeline). So a node's result region (`memoryaddr[-1]`, as long as its
//! reference) is compared once, right after the last line that belongs to the node has run; the
//! first node that differs is the divergence, and the buffer's record of who wrote each element
//! names the meta-operator.

use std::collections::BTreeMap;

use super::buffer::Writer;
use super::observe::{Observer, OpEvent};

/// Where a run first leaves the reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The node whose result differs.
    pub node: usize,
    /// The line after which its result was compared (the node's last line).
    pub after_line: u32,
    /// The first element that differs: its index in the node's result (buffer order) and address.
    pub index: usize,
    pub addr: u64,
    /// What the buffer holds (`None`: nothing wrote it) and what the reference has.
    pub got: Option<i64>,
    pub want: i64,
    /// Who last wrote the element.
    pub writer: Option<Writer>,
    /// How many elements of the node's result differ.
    pub wrong: usize,
}

/// An observer that compares each node's result with its reference once the node's last line
/// ran, and keeps the first that differs (see `Chip::localizer`).
#[derive(Clone, Debug)]
pub struct Localizer {
    /// Per node: its result's address, the reference in buffer order, its last line.
    pub(crate) checks: BTreeMap<usize, (u64, Vec<i64>, u32)>,
    /// The nodes whose last line ran and whose result agreed, in the order they were compared.
    pub agreed: Vec<usize>,
    pub divergence: Option<Divergence>,
}

impl Observer for Localizer {
    fn op(&mut self, e: &OpEvent<'_>) {
        if self.divergence.is_some() {
            return;
        }
        let Some(node) = e.node else { return };
        let Some((addr, want, last)) = self.checks.get(&node.index) else {
            return;
        };
        if *last != e.line {
            return;
        }
        let got = e.buffer.snapshot(*addr, want.len() as u64);
        let mut wrong = got
            .iter()
            .zip(want)
            .enumerate()
            .filter(|(_, (g, w))| **g != Some(**w));
        match wrong.next() {
            None => self.agreed.push(node.index),
            Some((index, (g, w))) => {
                let a = addr + index as u64;
                self.divergence = Some(Divergence {
                    node: node.index,
                    after_line: e.line,
                    index,
                    addr: a,
                    got: *g,
                    want: *w,
                    writer: e.buffer.writer(a),
                    wrong: 1 + wrong.count(),
                });
            }
        }
    }
}
