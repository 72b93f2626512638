//! Hand-written compilations: a `layout.json` and the flows, written to a temporary directory
//! and loaded as the machine's callers load CIM-MLC's.
#![allow(dead_code)]

use std::path::Path;

use pimdiff_cim_mlc::layout::{Entry, Schedule};
use pimdiff_cim_mlc::schedule;
use pimdiff_cim_mlc::{Chip, ChipBuilder, Flows, Layout, Level, NodeWeights, RunOutcome, Tensor};
use serde_json::{json, Value};

/// A chip and network description for `layout.json`.
pub struct Spec {
    pub buffer: u64,
    pub cores: usize,
    pub xbs_per_core: usize,
    /// `XBSize` rows, columns.
    pub xb: (u64, u64),
    pub max_rows: u64,
    pub nodes: Vec<Value>,
    /// (name, NCHW shape, addresses its readers read it at).
    pub inputs: Vec<(String, Vec<i64>, Vec<i64>)>,
    /// (name, producer, address, shape).
    pub outputs: Vec<(String, usize, i64, Vec<i64>)>,
    /// (name, shape, address).
    pub initializers: Vec<(String, Vec<i64>, Option<i64>)>,
    pub segments: Vec<Vec<usize>>,
}

impl Default for Spec {
    fn default() -> Spec {
        Spec {
            buffer: 1024,
            cores: 4,
            xbs_per_core: 2,
            xb: (8, 8),
            max_rows: 4,
            nodes: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            initializers: Vec::new(),
            segments: Vec::new(),
        }
    }
}

/// A node of `layout.json` with CIM-MLC's attributes.
pub fn node(index: usize, name: &str, op_type: &str, op_class: &str, attrs: Value) -> Value {
    json!({
        "index": index, "name": name, "op_type": op_type, "domain": "",
        "op_class": op_class, "inputs": [], "outputs": [format!("{name}_out")],
        "op_src": [], "attributes": [], "attrs": attrs,
    })
}

/// One cell of a lower level's tables: (category, cycle, node, instructions).
pub type Cell<'a> = (&'a str, f64, usize, &'a [&'a str]);

fn schedule(cells: &[Cell<'_>]) -> Schedule {
    let mut s = Schedule::default();
    for (cat, cycle, node, insts) in cells {
        s.categories
            .entry(cat.to_string())
            .or_default()
            .push(Entry {
                cycle: *cycle,
                node: *node,
                insts: insts.iter().map(|i| Some(i.to_string())).collect(),
            });
    }
    s
}

fn schedule_json(cells: &[Cell<'_>]) -> Value {
    let mut cats = serde_json::Map::new();
    for c in schedule::CATEGORIES {
        cats.insert(c.to_string(), json!([]));
    }
    for (cat, cycle, node, insts) in cells {
        cats.get_mut(*cat)
            .and_then(|v| v.as_array_mut())
            .expect("a category")
            .push(json!({"cycle": cycle, "node": node, "insts": insts}));
    }
    json!({"categories": cats})
}

/// The text CIM-MLC prints for `cells` (as its printer would).
pub fn printed(level: Level, cells: &[Cell<'_>]) -> String {
    let lines = schedule::print(level, &schedule(cells)).expect("integral cycles");
    let mut text: String = lines.into_iter().map(|(l, _)| l + "\n").collect();
    if text.is_empty() {
        text.push('\n');
    }
    text
}

impl Spec {
    pub fn layout(&self, xb: Option<&[Cell<'_>]>, wl: Option<&[Cell<'_>]>) -> Value {
        let xbs: Vec<Value> = (0..self.xbs_per_core)
            .map(|a| json!({"Addr": a, "Size": [self.xb.0, self.xb.1], "MaxR": self.max_rows}))
            .collect();
        let cores: Vec<Value> = (0..self.cores)
            .map(|a| json!({"Addr": a, "xb": xbs}))
            .collect();
        let consumers = |addrs: &[i64]| -> Vec<Value> {
            addrs
                .iter()
                .map(|a| json!({"node": 0, "op_src": [], "memoryaddr": [a, 0]}))
                .collect()
        };
        let mut v = json!({
            "format": "pimdiff-cim-mlc-layout", "version": 1, "api": "Wordline",
            "arch": {"chip": {"GBBuf": [self.buffer, 16], "cores": cores}},
            "graph": {
                "inputs": self.inputs.iter().map(|(n, s, _)| json!({"name": n, "shape": s})).collect::<Vec<_>>(),
                "initializers": self.initializers.iter()
                    .map(|(n, s, a)| json!({"name": n, "shape": s, "addr": a})).collect::<Vec<_>>(),
                "constants": [],
            },
            "nodes": self.nodes,
            "io": {
                "inputs": self.inputs.iter()
                    .map(|(n, _, a)| json!({"name": n, "consumers": consumers(a)})).collect::<Vec<_>>(),
                "outputs": self.outputs.iter()
                    .map(|(n, p, a, s)| json!({"name": n, "producer": p, "memoryaddr": [0, a], "ofmsize": s}))
                    .collect::<Vec<_>>(),
            },
            "segments": {"FlowSeg": self.segments},
        });
        if let Some(cells) = xb {
            v["crossbarwise"] = schedule_json(cells);
        }
        if let Some(cells) = wl {
            v["rcwise"] = schedule_json(cells);
        }
        v
    }
}

/// A compilation on disk.
pub struct Compiled {
    pub dir: tempfile::TempDir,
    pub flows: Flows,
    pub layout: Layout,
}

/// Write the layout and the flows (the core level's text as given, the lower levels printed
/// from their cells) and load them.
pub fn compile(
    spec: &Spec,
    core: Option<&str>,
    xb: Option<&[Cell<'_>]>,
    wl: Option<&[Cell<'_>]>,
) -> Compiled {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write(dir.path(), spec, core, xb, wl);
    let flows = Flows::load(dir.path()).expect("flows load");
    let layout = Layout::load(&dir.path().join("layout.json")).expect("layout loads");
    Compiled { dir, flows, layout }
}

pub fn write(
    dir: &Path,
    spec: &Spec,
    core: Option<&str>,
    xb: Option<&[Cell<'_>]>,
    wl: Option<&[Cell<'_>]>,
) {
    let layout = spec.layout(xb, wl);
    std::fs::write(
        dir.join("layout.json"),
        serde_json::to_vec(&layout).unwrap(),
    )
    .unwrap();
    if let Some(text) = core {
        std::fs::write(dir.join(Level::Core.file_name()), text).unwrap();
    }
    if let Some(cells) = xb {
        std::fs::write(
            dir.join(Level::Crossbar.file_name()),
            printed(Level::Crossbar, cells),
        )
        .unwrap();
    }
    if let Some(cells) = wl {
        std::fs::write(
            dir.join(Level::Wordline.file_name()),
            printed(Level::Wordline, cells),
        )
        .unwrap();
    }
}

impl Compiled {
    pub fn chip(&self) -> ChipBuilder<'_> {
        Chip::builder(&self.layout, &self.flows)
    }
}

pub fn t(shape: &[usize], values: &[i64]) -> Tensor {
    Tensor::new(shape.to_vec(), values.to_vec()).expect("the values fill the shape")
}

pub fn conv_w(shape: &[usize], values: &[i64]) -> NodeWeights {
    NodeWeights::conv(t(shape, values), None)
}

/// The outputs of a finished run, every element written.
pub fn outputs(outcome: &RunOutcome) -> Vec<Vec<i64>> {
    let f = outcome
        .finished()
        .unwrap_or_else(|| panic!("the run did not finish: {outcome}"));
    f.outputs
        .iter()
        .map(|o| {
            o.complete()
                .unwrap_or_else(|| panic!("output {} not all written: {:?}", o.name, o.values))
        })
        .collect()
}

/// The fault of a run, as text.
pub fn fault(outcome: &RunOutcome) -> String {
    outcome
        .fault()
        .unwrap_or_else(|| panic!("the run did not fault: {outcome}"))
        .to_string()
}

/// The global buffer after a finished run, `len` elements at `addr`.
pub fn buffer(outcome: &RunOutcome, addr: u64, len: u64) -> Vec<Option<i64>> {
    outcome
        .finished()
        .expect("finished")
        .buffer
        .snapshot(addr, len)
}
