//! Run statistics (written as `stats.json` by a dump).

use std::collections::BTreeMap;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use super::fault::inst_text;
use crate::inst::{Inst, Opcode};

/// How many overflow events are recorded in full (the rest are only counted).
pub const OVERFLOW_RECORDS: usize = 16;

/// Everything counted during a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    /// Instructions executed (completed), all cores.
    pub instructions: u64,
    /// Per core, in core order.
    pub cores: Vec<CoreStats>,
    /// Network traffic per ordered core pair and in total.
    pub noc: NocStats,
    /// Element writes that wrapped (isa.md "Data in memory").
    pub overflow_events: u64,
    /// The first [`OVERFLOW_RECORDS`] overflow events.
    pub overflows: Vec<OverflowRecord>,
    /// `lldi` instructions whose immediate was a float in the file (truncated to a byte).
    pub float_lldi: u64,
    /// One past the highest global memory byte any instruction touched.
    pub gmem_touched_bytes: u64,
}

impl Stats {
    /// Executed instructions with this opcode, over all cores.
    pub fn count(&self, op: Opcode) -> u64 {
        self.cores.iter().map(|c| c.by_opcode.get(op)).sum()
    }

    /// Executed instructions by opcode over all cores (zero counts left out).
    pub fn by_opcode(&self) -> Vec<(Opcode, u64)> {
        Opcode::ALL
            .iter()
            .map(|&op| (op, self.count(op)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }
}

/// One core's counters.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CoreStats {
    pub instructions: u64,
    pub by_opcode: OpcodeCounts,
    /// One past the highest local memory byte any instruction touched.
    pub lmem_high_water: u64,
}

/// A counter per opcode; serialised as a map from mnemonic to count, zeros left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpcodeCounts(pub [u64; Opcode::ALL.len()]);

impl Default for OpcodeCounts {
    fn default() -> Self {
        OpcodeCounts([0; Opcode::ALL.len()])
    }
}

impl OpcodeCounts {
    pub fn get(&self, op: Opcode) -> u64 {
        self.0[op as usize]
    }
}

impl Serialize for OpcodeCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for op in Opcode::ALL {
            if self.0[op as usize] > 0 {
                m.serialize_entry(op.mnemonic(), &self.0[op as usize])?;
            }
        }
        m.end()
    }
}

/// Traffic between cores. Hops are counted on the configured mesh with XY routing.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NocStats {
    pub messages: u64,
    pub bytes: u64,
    /// Σ bytes × hops over all messages.
    pub hop_bytes: u64,
    /// Per ordered pair `(from, to)`; serialised as a list sorted by pair.
    #[serde(serialize_with = "serialize_pairs")]
    pub pairs: BTreeMap<(u32, u32), PairTraffic>,
}

/// Traffic of one ordered core pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PairTraffic {
    pub messages: u64,
    pub bytes: u64,
    /// Mesh distance between the two cores.
    pub hops: u32,
}

fn serialize_pairs<S: Serializer>(
    pairs: &BTreeMap<(u32, u32), PairTraffic>,
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Row {
        from: u32,
        to: u32,
        messages: u64,
        bytes: u64,
        hops: u32,
    }
    let mut seq = s.serialize_seq(Some(pairs.len()))?;
    for (&(from, to), t) in pairs {
        seq.serialize_element(&Row {
            from,
            to,
            messages: t.messages,
            bytes: t.bytes,
            hops: t.hops,
        })?;
    }
    seq.end()
}

/// One recorded overflow: where, and the exact value that did not fit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OverflowRecord {
    pub core: u32,
    pub pc: u32,
    #[serde(serialize_with = "serialize_inst")]
    pub inst: Inst,
    /// The exact value, as a decimal string (it may exceed 64 bits).
    #[serde(serialize_with = "serialize_i128")]
    pub value: i128,
    pub bits: u32,
    /// What was stored instead.
    pub stored: i64,
}

fn serialize_inst<S: Serializer>(inst: &Inst, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&inst_text(inst))
}

fn serialize_i128<S: Serializer>(v: &i128, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string())
}

/// XY-routing distance between cores `a` and `b` on a mesh with `cols` columns
/// (core `i` sits at row `i / cols`, column `i % cols`).
pub fn mesh_hops(a: u32, b: u32, cols: u32) -> u32 {
    let (ra, ca) = (a / cols, a % cols);
    let (rb, cb) = (b / cols, b % cols);
    ra.abs_diff(rb) + ca.abs_diff(cb)
}
