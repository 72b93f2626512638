//! Provenance: which stage and function of the compiler emitted each instruction, so that a
//! finding's wrong instruction can be traced to the code that made it.
//!
//! Labels are static `stage::function` names (`codegen::transfers`,
//! `pixel::codegen::load_patches`, ...). They are stored as runs: one entry per change of
//! label, which makes recording them nearly free (see [`crate::emitter`]).

use std::collections::BTreeMap;
use std::ops::Range;

/// The label of every instruction of a compiled program, core by core.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Provenance {
    cores: Vec<CoreProvenance>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct CoreProvenance {
    /// `(first instruction, label)`, ascending and non-empty.
    spans: Vec<(u32, &'static str)>,
    /// Instructions on the core.
    len: u32,
}

impl Provenance {
    /// From every core's spans and instruction count.
    pub(crate) fn new(cores: Vec<(Vec<(u32, &'static str)>, usize)>) -> Provenance {
        Provenance {
            cores: cores
                .into_iter()
                .map(|(spans, len)| CoreProvenance {
                    spans,
                    len: len as u32,
                })
                .collect(),
        }
    }

    /// Cores described.
    pub fn cores(&self) -> usize {
        self.cores.len()
    }

    /// The label of instruction `index` of `core`; `None` past the end.
    pub fn label(&self, core: usize, index: usize) -> Option<&'static str> {
        let c = self.cores.get(core)?;
        if index >= c.len as usize {
            return None;
        }
        let at = c
            .spans
            .partition_point(|&(start, _)| start as usize <= index);
        at.checked_sub(1).map(|i| c.spans[i].1)
    }

    /// The runs of instructions of `core` with one label each, in program order.
    pub fn spans(&self, core: usize) -> impl Iterator<Item = (Range<usize>, &'static str)> + '_ {
        let c = self.cores.get(core);
        let spans = c.map_or(&[][..], |c| &c.spans[..]);
        let len = c.map_or(0, |c| c.len as usize);
        spans.iter().enumerate().map(move |(i, &(start, label))| {
            let end = spans.get(i + 1).map_or(len, |s| s.0 as usize);
            (start as usize..end, label)
        })
    }

    /// Instructions per label over all cores.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        let mut out = BTreeMap::new();
        for core in 0..self.cores.len() {
            for (range, label) in self.spans(core) {
                *out.entry(label).or_insert(0) += range.len();
            }
        }
        out
    }
}
