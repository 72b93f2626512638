//! `layout.json`: CIM-MLC's own state after a compilation, as the driver reads it out
//! (`targets/cim-mlc/driver/LAYOUT.md` documents every field with the CIM-MLC line that sets
//! it). The machine reads the part it executes with: the chip's sizes, every node's mapping
//! attributes, where the network's input and outputs live, the flow segments, and the two lower
//! levels' schedules (which node each printed instruction belongs to).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pimdiff_input::Limit;
use serde::Deserialize;
use serde_json::Value as Json;

use crate::error::{LoadError, LoadErrorKind};

/// The largest `layout.json` read (a node's cycle records hold one number per output element).
pub const MAX_LAYOUT_BYTES: Limit = Limit {
    name: "MAX_CIM_MLC_LAYOUT_BYTES",
    bytes: 256 << 20,
};

/// The largest global buffer the machine models, in elements (`GBBuf[0]`): 16 Mi, twenty
/// times CIM-MLC's example architecture's 786 432. Reading back a whole buffer of them costs
/// 256 MiB.
pub const MAX_BUFFER_ELEMENTS: u64 = 1 << 24;

/// The most cores, and crossbars per core, the machine models.
pub const MAX_CORES: usize = 1 << 16;

/// The most crossbars on a chip the machine models.
pub const MAX_CROSSBARS: usize = 1 << 20;

/// `layout.json`, the part the machine uses.
#[derive(Clone, Debug)]
pub struct Layout {
    pub file: PathBuf,
    /// The architecture's `API`: `Core`, `Crossbar` or `Wordline`.
    pub api: String,
    pub chip: ChipShape,
    pub nodes: Vec<Node>,
    pub inputs: Vec<GraphInput>,
    pub outputs: Vec<GraphOutput>,
    pub initializers: Vec<Initializer>,
    pub constants: Vec<Constant>,
    /// `FlowSeg`: the nodes of each flow segment (optimization/CoreDup.py:16-64); a segment's
    /// weights share the chip, one segment after another (`corestart` restarts at 0).
    pub segments: Vec<Vec<usize>>,
    /// The crossbar-level code generator's schedule (API `Crossbar`, `Wordline`).
    pub crossbar_schedule: Option<Schedule>,
    /// The wordline-level code generator's schedule (API `Wordline`).
    pub wordline_schedule: Option<Schedule>,
}

/// The instantiated architecture (configs/architecture.py:56-75).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChipShape {
    /// `GBBuf[0]`: elements of the global buffer (codegen/Addr.py:15).
    pub buffer: u64,
    pub cores: usize,
    pub crossbars_per_core: usize,
    /// `XBSize`: rows (wordlines) and columns of a crossbar.
    pub xb_rows: u64,
    pub xb_cols: u64,
    /// `MaxRC`: the wordlines one activation may open (WordlineRemap.py:41).
    pub max_rows: u64,
}

impl ChipShape {
    /// Crossbars on the chip: the crossbar-level ids run over all of them.
    pub fn crossbars(&self) -> usize {
        self.cores * self.crossbars_per_core
    }
}

/// A node of the ONNX graph with CIM-MLC's attributes (`attrs`: the first of each name, which
/// is what CIM-MLC's `get_attribute` reads, utils/util.py:12-16).
#[derive(Clone, Debug)]
pub struct Node {
    pub index: usize,
    pub name: String,
    pub op_type: String,
    /// `GetOPtype` (utils/util.py:145-183): `Conv`, `Linear`, `Pool`, `ActivFunc`, `ALUop`, ...
    pub op_class: Option<String>,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub attrs: BTreeMap<String, Json>,
}

impl Node {
    /// An integer attribute (an integral float counts).
    pub fn int(&self, name: &str) -> Option<i64> {
        self.attrs.get(name).and_then(json_int)
    }

    /// A list-of-integers attribute.
    pub fn ints(&self, name: &str) -> Option<Vec<i64>> {
        match self.attrs.get(name)? {
            Json::Array(items) => items.iter().map(json_int).collect(),
            _ => None,
        }
    }

    /// Where the node's result lives: the last `memoryaddr` (codegen/Addr.py, every handler).
    pub fn output_addr(&self) -> Option<i64> {
        self.ints("memoryaddr")?.last().copied()
    }

    /// An ONNX tensor attribute as the driver writes it (`{"dims", "values"}`, values nested to
    /// the dims): its dims and its values flattened, when they are integers.
    pub fn tensor(&self, name: &str) -> Option<(Vec<usize>, Vec<i64>)> {
        let t = self.attrs.get(name)?;
        let dims: Vec<usize> = t
            .get("dims")?
            .as_array()?
            .iter()
            .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
            .collect::<Option<_>>()?;
        let mut values = Vec::new();
        flatten(t.get("values")?, &mut values)?;
        Some((dims, values))
    }

    /// True for the operators whose weights sit in crossbars.
    pub fn is_weighted(&self) -> bool {
        matches!(self.op_type.as_str(), "Conv" | "Gemm" | "MatMul")
    }
}

fn json_int(v: &Json) -> Option<i64> {
    match v {
        Json::Number(n) => n.as_i64().or_else(|| {
            let f = n.as_f64()?;
            (f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i64)
        }),
        _ => None,
    }
}

fn flatten(v: &Json, out: &mut Vec<i64>) -> Option<()> {
    match v {
        Json::Array(items) => {
            for i in items {
                flatten(i, out)?;
            }
            Some(())
        }
        v => {
            out.push(json_int(v)?);
            Some(())
        }
    }
}

/// A graph input and the buffer addresses its readers read it at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphInput {
    pub name: String,
    /// The declared shape (`None` for a symbolic dimension).
    pub shape: Vec<Option<i64>>,
    /// `memoryaddr[0]` of every consumer with no source operator (codegen/Addr.py:87-93),
    /// each once, in node order.
    pub addrs: Vec<i64>,
}

/// A graph output and where its producer left it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphOutput {
    pub name: String,
    pub producer: Option<usize>,
    /// The producer's last `memoryaddr`.
    pub addr: Option<i64>,
    /// The producer's `ofmsize`: the shape ONNX Runtime computed.
    pub shape: Option<Vec<i64>>,
}

/// An initializer CIM-MLC gave a buffer address (every one that is no input of a Conv, MatMul
/// or Gemm, codegen/Addr.py:20-31; the others have none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Initializer {
    pub name: String,
    pub shape: Vec<i64>,
    pub addr: Option<i64>,
}

/// A `Constant` node's output with its address (codegen/Addr.py:33-38) and value.
#[derive(Clone, Debug, PartialEq)]
pub struct Constant {
    pub name: String,
    pub shape: Vec<i64>,
    pub addr: Option<i64>,
    pub value: Json,
}

/// The tables a lower-level code generator printed from: `{cycle: {node: [instruction]}}`
/// per category (codegen/CrossbarWise.py:101-115, WordlineWise.py:85-99), each a list of
/// entries in the table's order.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Schedule {
    pub categories: BTreeMap<String, Vec<Entry>>,
}

/// One `(cycle, node)` cell of a table.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub cycle: f64,
    pub node: usize,
    /// `None` where the code generator recorded no instruction (printed `None`).
    pub insts: Vec<Option<String>>,
}

// ---- the JSON as the driver writes it ----

#[derive(Deserialize)]
struct Raw {
    format: String,
    version: u64,
    api: Option<String>,
    arch: RawArch,
    graph: RawGraph,
    nodes: Vec<RawNode>,
    io: RawIo,
    #[serde(default)]
    segments: Option<RawSegments>,
    #[serde(default)]
    crossbarwise: Option<RawSchedule>,
    #[serde(default)]
    rcwise: Option<RawSchedule>,
}

#[derive(Deserialize)]
struct RawArch {
    chip: RawChip,
}

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct RawChip {
    GBBuf: Json,
    cores: Vec<RawCore>,
}

#[derive(Deserialize)]
struct RawCore {
    xb: Vec<RawXb>,
}

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct RawXb {
    Size: Json,
    MaxR: Json,
}

#[derive(Deserialize)]
struct RawGraph {
    inputs: Vec<RawValueInfo>,
    #[serde(default)]
    initializers: Vec<RawInitializer>,
    #[serde(default)]
    constants: Vec<RawConstant>,
}

#[derive(Deserialize)]
struct RawValueInfo {
    name: String,
    #[serde(default)]
    shape: Option<Vec<Json>>,
}

#[derive(Deserialize)]
struct RawInitializer {
    name: String,
    shape: Vec<i64>,
    addr: Option<i64>,
}

#[derive(Deserialize)]
struct RawConstant {
    name: String,
    shape: Vec<i64>,
    addr: Option<i64>,
    value: Json,
}

#[derive(Deserialize)]
struct RawNode {
    index: usize,
    name: String,
    op_type: String,
    op_class: Option<String>,
    inputs: Vec<String>,
    outputs: Vec<String>,
    attrs: BTreeMap<String, Json>,
}

#[derive(Deserialize)]
struct RawIo {
    inputs: Vec<RawIoInput>,
    outputs: Vec<RawIoOutput>,
}

#[derive(Deserialize)]
struct RawIoInput {
    name: String,
    consumers: Vec<RawConsumer>,
}

#[derive(Deserialize)]
struct RawConsumer {
    op_src: Vec<usize>,
    memoryaddr: Option<Vec<Json>>,
}

#[derive(Deserialize)]
struct RawIoOutput {
    name: String,
    producer: Option<usize>,
    memoryaddr: Option<Vec<Json>>,
    ofmsize: Option<Vec<Json>>,
}

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct RawSegments {
    FlowSeg: Vec<Vec<usize>>,
}

#[derive(Deserialize)]
struct RawSchedule {
    categories: BTreeMap<String, Vec<RawEntry>>,
}

#[derive(Deserialize)]
struct RawEntry {
    cycle: f64,
    node: usize,
    insts: Vec<Option<String>>,
}

impl Layout {
    /// Read `layout.json` at `path`.
    pub fn load(path: &Path) -> Result<Layout, LoadError> {
        let bytes = pimdiff_input::read(path, MAX_LAYOUT_BYTES)
            .map_err(|e| LoadError::new(path, None, LoadErrorKind::Input(e)))?;
        Layout::parse(path, &bytes)
    }

    /// Read a layout from its bytes; `file` names it in errors.
    pub fn parse(file: &Path, bytes: &[u8]) -> Result<Layout, LoadError> {
        let raw: Raw = serde_json::from_slice(bytes).map_err(|e| {
            let line = u32::try_from(e.line()).ok().filter(|l| *l > 0);
            LoadError::new(file, line, LoadErrorKind::Json(e.to_string()))
        })?;
        let field = |field: &str, problem: String| {
            LoadError::new(
                file,
                None,
                LoadErrorKind::Field {
                    field: field.to_string(),
                    problem,
                },
            )
        };
        if raw.format != "pimdiff-cim-mlc-layout" || raw.version != 1 {
            return Err(field(
                "format",
                format!(
                    "`{}` version {}, expected `pimdiff-cim-mlc-layout` version 1",
                    raw.format, raw.version
                ),
            ));
        }
        let chip = chip_shape(&raw.arch.chip).map_err(|(f, p)| field(&f, p))?;
        let nodes: Vec<Node> = raw
            .nodes
            .into_iter()
            .map(|n| Node {
                index: n.index,
                name: n.name,
                op_type: n.op_type,
                op_class: n.op_class,
                inputs: n.inputs,
                outputs: n.outputs,
                attrs: n.attrs,
            })
            .collect();
        for (i, n) in nodes.iter().enumerate() {
            if n.index != i {
                return Err(field(
                    &format!("nodes[{i}].index"),
                    format!("{} (nodes are listed in graph order)", n.index),
                ));
            }
        }
        let node_ok = |f: &str, i: usize| {
            if i < nodes.len() {
                Ok(())
            } else {
                Err(field(
                    f,
                    format!("node {i} does not exist ({} nodes)", nodes.len()),
                ))
            }
        };
        let segments = raw.segments.map(|s| s.FlowSeg).unwrap_or_default();
        for (s, seg) in segments.iter().enumerate() {
            for &i in seg {
                node_ok(&format!("segments.FlowSeg[{s}]"), i)?;
            }
        }
        let inputs = graph_inputs(&raw.graph.inputs, &raw.io.inputs);
        let outputs = graph_outputs(&raw.io.outputs);
        for (i, o) in outputs.iter().enumerate() {
            if let Some(p) = o.producer {
                node_ok(&format!("io.outputs[{i}].producer"), p)?;
            }
        }
        let schedule = |raw: Option<RawSchedule>, name: &str| {
            convert_schedule(raw, name, nodes.len()).map_err(|(f, p)| field(&f, p))
        };
        Ok(Layout {
            file: file.to_path_buf(),
            api: raw.api.unwrap_or_default(),
            chip,
            crossbar_schedule: schedule(raw.crossbarwise, "crossbarwise")?,
            wordline_schedule: schedule(raw.rcwise, "rcwise")?,
            nodes,
            inputs,
            outputs,
            initializers: raw
                .graph
                .initializers
                .into_iter()
                .map(|i| Initializer {
                    name: i.name,
                    shape: i.shape,
                    addr: i.addr,
                })
                .collect(),
            constants: raw
                .graph
                .constants
                .into_iter()
                .map(|c| Constant {
                    name: c.name,
                    shape: c.shape,
                    addr: c.addr,
                    value: c.value,
                })
                .collect(),
            segments,
        })
    }

    /// The node named `name`.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The flow segment holding node `index`.
    pub fn segment_of(&self, index: usize) -> Option<usize> {
        self.segments.iter().position(|s| s.contains(&index))
    }
}

fn graph_outputs(outputs: &[RawIoOutput]) -> Vec<GraphOutput> {
    outputs
        .iter()
        .map(|o| GraphOutput {
            name: o.name.clone(),
            producer: o.producer,
            addr: o
                .memoryaddr
                .as_ref()
                .and_then(|m| m.last())
                .and_then(json_int),
            shape: o
                .ofmsize
                .as_ref()
                .and_then(|s| s.iter().map(json_int).collect()),
        })
        .collect()
}

/// A schedule's tables, every entry's node checked against the `nodes` there are.
fn convert_schedule(
    raw: Option<RawSchedule>,
    name: &str,
    nodes: usize,
) -> Result<Option<Schedule>, (String, String)> {
    let Some(raw) = raw else { return Ok(None) };
    let mut categories = BTreeMap::new();
    for (cat, entries) in raw.categories {
        let mut out = Vec::with_capacity(entries.len());
        for (k, e) in entries.into_iter().enumerate() {
            if e.node >= nodes {
                return Err((
                    format!("{name}.categories.{cat}[{k}].node"),
                    format!("node {} does not exist ({nodes} nodes)", e.node),
                ));
            }
            out.push(Entry {
                cycle: e.cycle,
                node: e.node,
                insts: e.insts,
            });
        }
        categories.insert(cat, out);
    }
    Ok(Some(Schedule { categories }))
}

fn chip_shape(chip: &RawChip) -> Result<ChipShape, (String, String)> {
    let positive = |v: Option<i64>, f: &str| match v {
        Some(x) if x > 0 => Ok(x as u64),
        _ => Err((f.to_string(), "expected a positive integer".to_string())),
    };
    let first = |v: &Json, i: usize| v.as_array().and_then(|a| a.get(i)).and_then(json_int);
    let buffer = positive(first(&chip.GBBuf, 0), "arch.chip.GBBuf[0]")?;
    if buffer > MAX_BUFFER_ELEMENTS {
        return Err((
            "arch.chip.GBBuf[0]".into(),
            format!("{buffer} elements, more than the machine models ({MAX_BUFFER_ELEMENTS})"),
        ));
    }
    let cores = chip.cores.len();
    let Some(core0) = chip.cores.first() else {
        return Err(("arch.chip.cores".into(), "no cores".into()));
    };
    let xbs = core0.xb.len();
    if cores > MAX_CORES || xbs == 0 || xbs > MAX_CORES || cores * xbs > MAX_CROSSBARS {
        return Err((
            "arch.chip.cores".into(),
            format!(
                "{cores} cores of {xbs} crossbars: the machine models 1 to {MAX_CORES} of each, \
                 at most {MAX_CROSSBARS} crossbars"
            ),
        ));
    }
    if let Some(i) = chip.cores.iter().position(|c| c.xb.len() != xbs) {
        return Err((
            format!("arch.chip.cores[{i}].xb"),
            format!(
                "{} crossbars where core 0 has {xbs}",
                chip.cores[i].xb.len()
            ),
        ));
    }
    let xb = &core0.xb[0];
    Ok(ChipShape {
        buffer,
        cores,
        crossbars_per_core: xbs,
        xb_rows: positive(first(&xb.Size, 0), "arch.chip.cores[0].xb[0].Size[0]")?,
        xb_cols: positive(first(&xb.Size, 1), "arch.chip.cores[0].xb[0].Size[1]")?,
        max_rows: positive(json_int(&xb.MaxR), "arch.chip.cores[0].xb[0].MaxR")?,
    })
}

fn graph_inputs(declared: &[RawValueInfo], io: &[RawIoInput]) -> Vec<GraphInput> {
    declared
        .iter()
        .map(|d| {
            let mut addrs = Vec::new();
            for c in io
                .iter()
                .filter(|i| i.name == d.name)
                .flat_map(|i| &i.consumers)
            {
                let addr = c
                    .memoryaddr
                    .as_ref()
                    .and_then(|m| m.first())
                    .and_then(json_int);
                if let (true, Some(a)) = (c.op_src.is_empty(), addr) {
                    if !addrs.contains(&a) {
                        addrs.push(a);
                    }
                }
            }
            GraphInput {
                name: d.name.clone(),
                shape: d
                    .shape
                    .as_deref()
                    .unwrap_or(&[])
                    .iter()
                    .map(json_int)
                    .collect(),
                addrs,
            }
        })
        .collect()
}
