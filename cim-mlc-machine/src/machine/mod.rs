//! The machine: a chip set up from `layout.json` and the caller's data, running one level's
//! flow to a [`RunOutcome`].
//!
//! # Using it
//!
//! ```text
//! let flows = Flows::load(out_dir)?;
//! let layout = Layout::load(&out_dir.join("layout.json"))?;
//! let chip = Chip::builder(&layout, &flows)
//!     .input("input", image)                              // NCHW, as the graph declares it
//!     .weights("conv0", NodeWeights::conv(w, None))       // every Conv, Gemm, MatMul
//!     .build()?;
//! match chip.run(Level::Crossbar) { RunOutcome::Finished(f) => f.outputs, … }
//! ```
//!
//! Each run starts from the same state: the global buffer holds the input where the network's
//! first operators read it (`layout.json` `io.inputs`), every initializer and constant CIM-MLC
//! gave an address, and nothing else; every weighted node's weights are on the cores and
//! crossbars its mapping names. The flow's lines then run in file order, each meta-operator
//! completely before the next (a `parallel{` block's instructions are one node's at one cycle,
//! and none of them reads what another writes). `docs/cim-mlc-isa.md` gives every
//! meta-operator's meaning.

mod arith;
mod buffer;
// `crate::schedule`, which this file uses to set a chip up, takes `SetupError` from here.
pub(crate) mod fault;
mod geometry;
mod localize;
mod observe;
mod step;
mod weights;
mod xbar;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;

pub use self::buffer::{BufferError, GlobalBuffer, Writer};
pub use self::fault::{Fault, FaultKind, Finished, NodeRef, OutputValue, RunOutcome, SetupError};
pub use self::localize::{Divergence, Localizer};
pub use self::observe::{Access, Observer, OpEvent, Trace, TraceEntry};
pub use self::weights::NodeWeights;

use self::weights::Placed;
use crate::flow::{Flows, Level, Op};
use crate::layout::{Layout, Node};
use crate::schedule::{self, Origin};
use crate::tensor::{element_count, from_buffer_order, to_buffer_order, Tensor};

/// How runs are set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineOptions {
    /// Most work (multiply-accumulates and element operations) one run may do; beyond it the
    /// run ends `OutOfBudget`.
    pub work_budget: u64,
    /// How many loads a crossbar holds before an activation reads them.
    pub input_queue: InputQueue,
    /// A crossbar range must name exactly the node's `xb_num` crossbars (`true`), or may name
    /// more, the extra ones holding nothing of any node (`false`: the crossbar-level Gemm's
    /// `[dst, dst + xbr·xbc]`, CrossbarWise.py:331, runs).
    pub exact_crossbar_ranges: bool,
}

/// The inputs a crossbar holds at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputQueue {
    /// What the hardware can: one load at the crossbar level (it fills every wordline), one
    /// per `MaxRC`-row slice at the wordline level (`XBSize[0] / MaxRC` of them). A further
    /// load before an activation is `FaultKind::InputOverrun`.
    Hardware,
    /// Any number: each activation takes the oldest load (to look past an overrun).
    Unbounded,
}

impl Default for MachineOptions {
    fn default() -> MachineOptions {
        MachineOptions {
            work_budget: 1 << 36,
            input_queue: InputQueue::Hardware,
            exact_crossbar_ranges: true,
        }
    }
}

/// A chip ready to run any level of one compilation.
pub struct Chip<'a> {
    layout: &'a Layout,
    flows: &'a Flows,
    options: MachineOptions,
    /// What the host writes before a run: (address, values in buffer order).
    host: Vec<(i64, Vec<i64>)>,
    /// Per node, its weights (weighted nodes only).
    weights: Vec<Option<Placed>>,
    /// Per level, per line index, where the line comes from.
    origins: BTreeMap<Level, Vec<Option<Origin>>>,
    /// Per lower level, per node, the lowest crossbar its meta-operators name.
    bases: BTreeMap<Level, Vec<Option<usize>>>,
}

/// Sets a [`Chip`] up.
pub struct ChipBuilder<'a> {
    layout: &'a Layout,
    flows: &'a Flows,
    options: MachineOptions,
    inputs: Vec<(String, Tensor)>,
    weights: Vec<(String, NodeWeights)>,
    initializers: Vec<(String, Tensor)>,
}

impl<'a> ChipBuilder<'a> {
    /// The network input `name` (as `layout.json`'s graph declares it), in ONNX's order.
    pub fn input(mut self, name: &str, tensor: Tensor) -> Self {
        self.inputs.push((name.to_string(), tensor));
        self
    }

    /// The weights of the node named `node`.
    pub fn weights(mut self, node: &str, weights: NodeWeights) -> Self {
        self.weights.push((node.to_string(), weights));
        self
    }

    /// The value of an initializer CIM-MLC gave a buffer address (an `Add`'s constant operand).
    pub fn initializer(mut self, name: &str, tensor: Tensor) -> Self {
        self.initializers.push((name.to_string(), tensor));
        self
    }

    pub fn options(mut self, options: MachineOptions) -> Self {
        self.options = options;
        self
    }

    /// Check everything and place it.
    pub fn build(self) -> Result<Chip<'a>, SetupError> {
        let layout = self.layout;
        let mut host = Vec::new();
        place_inputs(layout, &self.inputs, &mut host)?;
        place_initializers(layout, &self.initializers, &mut host)?;
        place_constants(layout, &mut host)?;
        let buffer = GlobalBuffer::new(layout.chip.buffer);
        for (addr, values) in &host {
            if buffer.span(*addr, values.len() as u64).is_err() {
                return Err(SetupError::Placement {
                    what: "a host value",
                    name: String::new(),
                    addr: *addr,
                    problem: format!(
                        "{} elements do not fit the buffer of {}",
                        values.len(),
                        layout.chip.buffer
                    ),
                });
            }
        }
        let weights = place_weights(layout, &self.weights)?;
        let mut origins = BTreeMap::new();
        let mut bases = BTreeMap::new();
        for level in self.flows.levels() {
            let flow = self.flows.get(level).ok_or(SetupError::NoFlow(level))?;
            let o = match level {
                Level::Core => schedule::attribute_core(flow, layout),
                Level::Crossbar | Level::Wordline => {
                    let s = if level == Level::Crossbar {
                        &layout.crossbar_schedule
                    } else {
                        &layout.wordline_schedule
                    };
                    let s = s.as_ref().ok_or(SetupError::NoSchedule(level))?;
                    let o = schedule::attribute_lower(flow, s)?;
                    bases.insert(level, crossbar_bases(flow, &o, layout.nodes.len()));
                    o
                }
            };
            origins.insert(level, o);
        }
        Ok(Chip {
            layout,
            flows: self.flows,
            options: self.options,
            host,
            weights,
            origins,
            bases,
        })
    }
}

fn place_inputs(
    layout: &Layout,
    given: &[(String, Tensor)],
    host: &mut Vec<(i64, Vec<i64>)>,
) -> Result<(), SetupError> {
    for (name, _) in given {
        if !layout.inputs.iter().any(|i| &i.name == name) {
            return Err(SetupError::Unknown(name.clone(), "graph input"));
        }
    }
    for input in &layout.inputs {
        let Some((_, t)) = given.iter().find(|(n, _)| *n == input.name) else {
            let names = layout.inputs.iter().map(|i| i.name.clone()).collect();
            return Err(SetupError::MissingInput(input.name.clone(), names));
        };
        let fits = t.shape.len() == input.shape.len()
            && t.shape
                .iter()
                .zip(&input.shape)
                .all(|(g, d)| d.is_none_or(|d| d == *g as i64));
        if !fits || element_count(&t.shape) != Some(t.values.len()) {
            return Err(SetupError::InputShape {
                name: input.name.clone(),
                given: t.shape.clone(),
                declared: input.shape.clone(),
            });
        }
        for &addr in &input.addrs {
            host.push((addr, t.buffer_order()));
        }
    }
    Ok(())
}

fn place_initializers(
    layout: &Layout,
    given: &[(String, Tensor)],
    host: &mut Vec<(i64, Vec<i64>)>,
) -> Result<(), SetupError> {
    for (name, t) in given {
        let Some(init) = layout.initializers.iter().find(|i| &i.name == name) else {
            return Err(SetupError::Unknown(name.clone(), "initializer"));
        };
        let declared: Vec<usize> = init.shape.iter().map(|d| (*d).max(0) as usize).collect();
        if declared != t.shape || element_count(&t.shape) != Some(t.values.len()) {
            return Err(SetupError::Placement {
                what: "initializer",
                name: name.clone(),
                addr: init.addr.unwrap_or(-1),
                problem: format!("shape {:?}, the graph declares {:?}", t.shape, init.shape),
            });
        }
    }
    for init in layout.initializers.iter().filter(|i| i.addr.is_some()) {
        let Some((_, t)) = given.iter().find(|(n, _)| *n == init.name) else {
            return Err(SetupError::MissingInitializer(init.name.clone()));
        };
        host.push((init.addr.unwrap_or_default(), t.buffer_order()));
    }
    Ok(())
}

fn place_constants(layout: &Layout, host: &mut Vec<(i64, Vec<i64>)>) -> Result<(), SetupError> {
    for c in layout.constants.iter() {
        let Some(addr) = c.addr else { continue };
        let mut values = Vec::new();
        let ok = json_integers(&c.value, &mut values);
        let shape: Vec<usize> = c.shape.iter().map(|d| (*d).max(0) as usize).collect();
        if !ok || element_count(&shape) != Some(values.len()) {
            return Err(SetupError::Placement {
                what: "constant",
                name: c.name.clone(),
                addr,
                problem: format!("its value is not {:?} integers", c.shape),
            });
        }
        host.push((addr, to_buffer_order(&shape, &values)));
    }
    Ok(())
}

fn json_integers(v: &serde_json::Value, out: &mut Vec<i64>) -> bool {
    match v {
        serde_json::Value::Array(items) => items.iter().all(|i| json_integers(i, out)),
        serde_json::Value::Number(n) => match n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| f as i64)
        }) {
            Some(i) => {
                out.push(i);
                true
            }
            None => false,
        },
        _ => false,
    }
}

fn place_weights(
    layout: &Layout,
    given: &[(String, NodeWeights)],
) -> Result<Vec<Option<Placed>>, SetupError> {
    let mut placed = vec![None; layout.nodes.len()];
    for (name, w) in given {
        let Some(node) = layout.node(name) else {
            return Err(SetupError::Unknown(name.clone(), "node"));
        };
        let err = |problem: String| SetupError::Weights {
            node: name.clone(),
            problem,
        };
        let dim = |attr: &str, i: isize| {
            let v = node.ints(attr)?;
            let i = if i < 0 {
                v.len().checked_sub(i.unsigned_abs())?
            } else {
                i as usize
            };
            v.get(i).and_then(|d| usize::try_from(*d).ok())
        };
        let p = match (node.op_type.as_str(), w) {
            ("Conv", NodeWeights::Conv { weights, .. }) => {
                let cin = dim("ifmsize", 1)
                    .ok_or_else(|| err("layout.json gives the node no ifmsize".into()))?;
                Placed::conv(weights, cin, dim("ofmsize", 1)).map_err(err)?
            }
            ("Gemm" | "MatMul", NodeWeights::Linear { matrix, .. }) => {
                Placed::linear(matrix, dim("ifmsize", -1), dim("ofmsize", -1)).map_err(err)?
            }
            (op, _) => {
                return Err(err(format!("weights of the wrong kind for a `{op}` node")));
            }
        };
        placed[node.index] = Some(p);
    }
    for node in layout.nodes.iter().filter(|n| n.is_weighted()) {
        if placed[node.index].is_none() {
            return Err(SetupError::MissingWeights(node.name.clone()));
        }
    }
    Ok(placed)
}

/// Per node, the lowest crossbar any of its lines names: where its first copy starts.
fn crossbar_bases(
    flow: &crate::flow::Flow,
    origins: &[Option<Origin>],
    nodes: usize,
) -> Vec<Option<usize>> {
    let mut bases: Vec<Option<usize>> = vec![None; nodes];
    for (line, origin) in flow.lines.iter().zip(origins) {
        let (Some(op), Some(o)) = (line.op(), origin) else {
            continue;
        };
        let first = match *op {
            Op::LoadWindow { xbs, .. } | Op::LoadVector { xbs, .. } | Op::ReadXb { xbs } => xbs.0,
            Op::ReadWl { xbs, .. } | Op::SumXb { xbs, .. } => xbs.0,
            Op::Store { xb, .. } => xb,
            _ => continue,
        };
        if let Ok(first) = usize::try_from(first) {
            let b = &mut bases[o.node];
            *b = Some(b.map_or(first, |b| b.min(first)));
        }
    }
    bases
}

impl<'a> Chip<'a> {
    /// Start setting up a chip for the compilation `layout` and `flows` describe.
    pub fn builder(layout: &'a Layout, flows: &'a Flows) -> ChipBuilder<'a> {
        ChipBuilder {
            layout,
            flows,
            options: MachineOptions::default(),
            inputs: Vec::new(),
            weights: Vec::new(),
            initializers: Vec::new(),
        }
    }

    pub fn layout(&self) -> &Layout {
        self.layout
    }

    /// The flows the chip runs.
    pub fn flows(&self) -> &Flows {
        self.flows
    }

    /// Where the line with index `index` (0-based, as in `Flow::lines`) of `level` comes from.
    pub fn origin(&self, level: Level, index: usize) -> Option<Origin> {
        self.origins.get(&level)?.get(index).copied().flatten()
    }

    /// Every meta-operator line of `level` that belongs to a node, in flow order: its 1-based
    /// line number and the node's index (empty without that level's flow).
    pub fn node_lines(&self, level: Level) -> impl Iterator<Item = (u32, usize)> + '_ {
        self.flows
            .get(level)
            .zip(self.origins.get(&level))
            .into_iter()
            .flat_map(|(flow, origins)| flow.lines.iter().zip(origins))
            .filter_map(|(line, origin)| {
                line.op()?;
                Some((line.number, origin.as_ref()?.node))
            })
    }

    /// An observer that finds where a run of `level` first leaves the reference: `references`
    /// are nodes' results in ONNX's order (a node's first output), by node name; each is
    /// compared at the node's result address once the node's last line of `level` ran. Nodes
    /// with no line there, or no address, are not compared.
    pub fn localizer(
        &self,
        level: Level,
        references: &[(&str, &Tensor)],
    ) -> Result<Localizer, SetupError> {
        if !self.origins.contains_key(&level) || self.flows.get(level).is_none() {
            return Err(SetupError::NoFlow(level));
        }
        let mut last: BTreeMap<usize, u32> = BTreeMap::new();
        for (line, node) in self.node_lines(level) {
            last.insert(node, line);
        }
        let mut checks = BTreeMap::new();
        for (name, tensor) in references {
            let node = self
                .layout
                .node(name)
                .ok_or_else(|| SetupError::Unknown(name.to_string(), "node"))?;
            let addr = node.output_addr().and_then(|a| u64::try_from(a).ok());
            if let (Some(addr), Some(&line)) = (addr, last.get(&node.index)) {
                checks.insert(node.index, (addr, tensor.buffer_order(), line));
            }
        }
        Ok(Localizer {
            checks,
            agreed: Vec::new(),
            divergence: None,
        })
    }

    /// Run the flow of `level` from the initial state.
    pub fn run(&self, level: Level) -> RunOutcome {
        self.run_observed(level, &mut ())
    }

    /// [`Chip::run`], reporting every executed meta-operator to `observer`.
    pub fn run_observed(&self, level: Level, observer: &mut dyn Observer) -> RunOutcome {
        let (Some(flow), Some(origins)) = (self.flows.get(level), self.origins.get(&level)) else {
            return RunOutcome::Unsupported {
                line: 0,
                op: String::new(),
                reason: format!("no {level}-level flow was loaded"),
            };
        };
        let mut exec = Exec::new(self, level);
        let mut ops = 0u64;
        for (index, line) in flow.lines.iter().enumerate() {
            let Some(op) = line.op() else { continue };
            let origin = origins[index];
            exec.line = line.number;
            exec.reads.clear();
            exec.writes.clear();
            let node = origin.map(|o| &self.layout.nodes[o.node]);
            if let Err(stop) = exec.step(op, node) {
                return match stop {
                    Stop::Fault(kind) => RunOutcome::Fault(Box::new(Fault {
                        level,
                        line: line.number,
                        text: line.text.clone(),
                        node: node.map(|n| NodeRef {
                            index: n.index,
                            name: n.name.clone(),
                        }),
                        kind,
                    })),
                    Stop::Unsupported(reason) => RunOutcome::Unsupported {
                        line: line.number,
                        op: op.name().to_string(),
                        reason,
                    },
                    Stop::Budget => RunOutcome::OutOfBudget {
                        line: line.number,
                        work: self.options.work_budget,
                    },
                };
            }
            ops += 1;
            observer.op(&OpEvent {
                level,
                line: line.number,
                text: &line.text,
                node,
                cycle: origin.and_then(|o| o.cycle),
                reads: &exec.reads,
                writes: &exec.writes,
                buffer: &exec.buffer,
            });
        }
        let outputs = self.read_outputs(&exec.buffer);
        RunOutcome::Finished(Box::new(Finished {
            buffer: exec.buffer,
            outputs,
            ops,
        }))
    }

    fn read_outputs(&self, buffer: &GlobalBuffer) -> Vec<OutputValue> {
        self.layout
            .outputs
            .iter()
            .map(|o| {
                let shape: Vec<usize> = o
                    .shape
                    .iter()
                    .flatten()
                    .map(|d| usize::try_from(*d).unwrap_or(0))
                    .collect();
                let n = element_count(&shape).filter(|n| *n as u64 <= buffer.size());
                let addr = o.addr.and_then(|a| u64::try_from(a).ok());
                let values = match (addr, n) {
                    (Some(a), Some(n)) => from_buffer_order(&shape, &buffer.snapshot(a, n as u64)),
                    _ => Vec::new(),
                };
                OutputValue {
                    name: o.name.clone(),
                    shape,
                    addr,
                    values,
                }
            })
            .collect()
    }
}

/// Why a step stops the run.
pub(crate) enum Stop {
    Fault(FaultKind),
    Unsupported(String),
    Budget,
}

impl From<FaultKind> for Stop {
    fn from(k: FaultKind) -> Stop {
        Stop::Fault(k)
    }
}

/// One load into crossbars: the values, the line, and which load it was.
#[derive(Clone, Debug)]
pub(crate) struct Loaded {
    pub line: u32,
    pub id: u64,
    pub values: Rc<Vec<i64>>,
    /// The buffer address each value came from (`None`: padding).
    pub addrs: Rc<Vec<Option<u64>>>,
}

/// A crossbar's accumulated results (wordline level).
#[derive(Clone, Debug)]
pub(crate) struct XbResult {
    pub values: Vec<i64>,
    /// Read out by a `load - [x]` since the last activation: the next one starts afresh.
    pub read_out: bool,
}

/// One output unit of a wordline-level convolution being summed up: its channels, which
/// `(column block, row block)` partial sums arrived, and which row blocks hold any input of
/// the pixel (the others meet only padding).
#[derive(Clone, Debug)]
pub(crate) struct PixelSum {
    pub values: Vec<i64>,
    pub got: Vec<Vec<bool>>,
    pub needed: Vec<bool>,
}

/// The state of one run.
pub(crate) struct Exec<'c, 'a> {
    pub chip: &'c Chip<'a>,
    pub level: Level,
    pub buffer: GlobalBuffer,
    pub line: u32,
    pub reads: Vec<Access>,
    pub writes: Vec<Access>,
    pub work: u64,
    pub queues: HashMap<usize, VecDeque<Loaded>>,
    pub results: HashMap<usize, XbResult>,
    /// `(segment key, crossbar) → node` for the crossbars named so far.
    pub claims: HashMap<(usize, usize), usize>,
    /// Activations so far of each (node, crossbar offset from its first, wordline slice).
    pub units: HashMap<(usize, usize, usize), usize>,
    pub pixels: HashMap<(usize, usize), PixelSum>,
    pub next_load: u64,
}

impl<'c, 'a> Exec<'c, 'a> {
    fn new(chip: &'c Chip<'a>, level: Level) -> Self {
        let mut buffer = GlobalBuffer::new(chip.layout.chip.buffer);
        for (addr, values) in &chip.host {
            // Checked by `build`.
            let _ = buffer.write(*addr, values, Writer::Host);
        }
        Exec {
            chip,
            level,
            buffer,
            line: 0,
            reads: Vec::new(),
            writes: Vec::new(),
            work: 0,
            queues: HashMap::new(),
            results: HashMap::new(),
            claims: HashMap::new(),
            units: HashMap::new(),
            pixels: HashMap::new(),
            next_load: 0,
        }
    }

    /// Count `work` against the budget.
    pub fn charge(&mut self, work: u64) -> Result<(), Stop> {
        self.work = self.work.saturating_add(work);
        if self.work > self.chip.options.work_budget {
            Err(Stop::Budget)
        } else {
            Ok(())
        }
    }

    /// Read `len` buffer elements at `addr`.
    pub fn read(&mut self, addr: i64, len: i64) -> Result<Vec<i64>, Stop> {
        let len = u64::try_from(len).map_err(|_| FaultKind::Negative {
            what: "length",
            value: len,
        })?;
        self.charge(len)?;
        let values = self
            .buffer
            .read(addr, len)
            .map_err(|e| self.buffer_fault(e))?;
        if len > 0 {
            self.reads.push(Access::Global {
                start: addr as u64,
                len,
            });
        }
        Ok(values)
    }

    /// A write of `len` elements at `addr` would land inside the buffer (checked before a
    /// meta-operator computes them, so a result that cannot be written is never built).
    pub fn fits(&self, addr: i64, len: u64) -> Result<(), Stop> {
        self.buffer
            .span(addr, len)
            .map(|_| ())
            .map_err(|e| self.buffer_fault(e))
    }

    /// Write `values` at `addr`.
    pub fn write(&mut self, addr: i64, values: &[i64]) -> Result<(), Stop> {
        self.buffer
            .write(addr, values, Writer::Line(self.line))
            .map_err(|e| self.buffer_fault(e))?;
        if !values.is_empty() {
            self.writes.push(Access::Global {
                start: addr as u64,
                len: values.len() as u64,
            });
        }
        Ok(())
    }

    fn buffer_fault(&self, e: BufferError) -> Stop {
        Stop::Fault(match e {
            BufferError::OutOfBounds { addr } => FaultKind::OutOfBounds {
                addr,
                size: self.buffer.size(),
            },
            BufferError::NeverWritten { addr } => FaultKind::ReadNeverWritten { addr },
        })
    }

    /// The weights of `node`, which a line of a weighted meta-operator must belong to.
    pub fn weights_of(&self, node: Option<&Node>) -> Result<&'c Placed, Stop> {
        let node = node.ok_or(FaultKind::NoWeights)?;
        self.chip.weights[node.index]
            .as_ref()
            .ok_or(Stop::Fault(FaultKind::NoWeights))
    }

    /// Where the node's result lives (`memoryaddr[-1]`).
    pub fn output_addr(node: &Node) -> Result<i64, Stop> {
        node.output_addr()
            .ok_or(Stop::Fault(FaultKind::MissingAttribute {
                attr: "memoryaddr",
            }))
    }

    fn step(&mut self, op: &Op, node: Option<&'c Node>) -> Result<(), Stop> {
        match op {
            Op::ConvCore(c) => self.conv_core(c, node),
            Op::FcCore(f) => self.fc_core(f, node),
            Op::Copy { src, dst, len } => {
                let v = self.read(*src, *len)?;
                self.write(*dst, &v)
            }
            Op::Pool(p) => self.pool(p),
            Op::Activation {
                func,
                len,
                src,
                dst,
            } => self.activation(*func, *len, *src, *dst),
            Op::Alu(a) => self.alu(a, node),
            Op::Relayout(r) => self.relayout(r),
            Op::LoadWindow { pieces, xbs } => self.load_window(pieces, *xbs, node),
            Op::LoadVector { src, xbs, len } => self.load_vector(*src, *xbs, *len, node),
            Op::ReadXb { xbs } => self.read_xb(*xbs, node),
            Op::ReadWl { rows, xbs } => self.read_wl(*rows, *xbs, node),
            Op::Store { xb, dst, len } => self.store(*xb, *dst, *len, node),
            Op::SumXb { xbs, dst, len } => self.sum_xb(*xbs, *dst, *len, node),
            Op::Missing => Ok(()),
            Op::Other { name } => Err(Stop::Unsupported(format!(
                "`{name}` is not a meta-operator this machine models"
            ))),
        }
    }
}
