//! Watching a run: every executed meta-operator with its line, its node, what it read and
//! what it wrote, for localization (the first meta-operator whose written values differ from
//! the reference's tensor of its node).

use super::buffer::GlobalBuffer;
use crate::flow::Level;
use crate::layout::Node;

/// A place a meta-operator read or wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Global buffer elements `[start, start + len)`.
    Global { start: u64, len: u64 },
    /// The inputs loaded into a crossbar (a `load` writes them, an activation reads them).
    CrossbarInput { xb: usize },
    /// A crossbar's accumulated results (an activation writes them, `load - [x]` reads them).
    CrossbarOutput { xb: usize },
    /// The weights on cores `[first, last]`.
    Cores { first: usize, last: usize },
    /// The weights of crossbars `[first, last]`.
    Crossbars { first: usize, last: usize },
}

/// One executed meta-operator, after it ran.
#[derive(Clone, Copy, Debug)]
pub struct OpEvent<'a> {
    pub level: Level,
    /// The 1-based line of the flow file.
    pub line: u32,
    /// The line as the file holds it.
    pub text: &'a str,
    /// The node the line belongs to (`layout.json`'s schedule; core level: the handler order).
    pub node: Option<&'a Node>,
    /// The cycle the code generator scheduled it at (lower levels).
    pub cycle: Option<f64>,
    pub reads: &'a [Access],
    pub writes: &'a [Access],
    /// The global buffer after the meta-operator (read what it wrote here).
    pub buffer: &'a GlobalBuffer,
}

/// Something that watches a run.
pub trait Observer {
    fn op(&mut self, event: &OpEvent<'_>);
}

/// Watches nothing.
impl Observer for () {
    fn op(&mut self, _: &OpEvent<'_>) {}
}

/// One recorded meta-operator of a [`Trace`].
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEntry {
    pub line: u32,
    pub text: String,
    pub node: Option<usize>,
    pub cycle: Option<f64>,
    pub reads: Vec<Access>,
    pub writes: Vec<Access>,
    /// The values of every global-buffer range it wrote, in order.
    pub written: Vec<Vec<i64>>,
}

/// An observer that records every meta-operator with the values it wrote to the buffer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub entries: Vec<TraceEntry>,
}

impl Observer for Trace {
    fn op(&mut self, e: &OpEvent<'_>) {
        let written = e
            .writes
            .iter()
            .filter_map(|w| match *w {
                Access::Global { start, len } => Some(
                    e.buffer
                        .snapshot(start, len)
                        .into_iter()
                        .map(|v| v.unwrap_or_default())
                        .collect(),
                ),
                _ => None,
            })
            .collect();
        self.entries.push(TraceEntry {
            line: e.line,
            text: e.text.to_string(),
            node: e.node.map(|n| n.index),
            cycle: e.cycle,
            reads: e.reads.to_vec(),
            writes: e.writes.to_vec(),
            written,
        });
    }
}
