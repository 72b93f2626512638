//! Checking PIMCOMP-NN's programs bit for bit (`pimdiff pimcomp`).
//!
//! What is verified: a program PIMCOMP-NN wrote (`-s=YES`) and the side table of the same
//! compile (`-v=YES`) are read and aligned instruction by instruction; an int8 image and int8
//! weights are synthesised from a seed; the program is rewritten to run on our interpreter
//! (crossbar export per AG, group-index `mvmul`, probe stores at `VER` points in element mode,
//! every layer isolated with reference inputs in batch mode); it runs under the requested
//! schedule; and every node's observed output is compared, bit for bit, with the oracle's
//! wrap-8 graph reference over `node_list` (`pimdiff_oracle::graph`). The conventions the
//! tables do not state, and why wrap-8 arithmetic makes an exact reference possible, are in
//! `docs/pimcomp-numerics.md`.
//!
//! A verdict per node says how it was checked and whether it is `exact`, a `mismatch`,
//! `degenerate` (a constant reference: agreement says nothing) or `unchecked` (and why).
//! Operand disagreements between the program and its own table are findings too.
//!
//! Modules, in the order the check uses them: [`table`] (reading the side table), [`model`]
//! (`node_list` → graph), [`align`], [`synth`], [`crossbars`] (export and group indices),
//! [`rewrite`] (probes, relocations, memory layout), [`verdict`] (comparison), [`report`]
//! (summary, report, artifacts).

pub mod align;
pub mod crossbars;
pub mod error;
pub mod localize;
pub mod model;
pub mod reduce;
pub mod report;
pub mod rewrite;
pub mod synth;
pub mod table;
pub mod verdict;

use std::borrow::Cow;
use std::path::PathBuf;
use std::time::Instant;

use ndarray::Array2;
use pimdiff_isa::machine::{CellFill, Machine, MachineOptions, RunOutcome, Schedule};
use pimdiff_isa::{Arch, ArchHints, CrossbarExport, Program};
use pimdiff_oracle::graph::{evaluate, NodeOp, NodeParams, Value};

pub use error::PimcompError;
pub use model::Mode;
pub use verdict::{CheckKind, InstRef, NodeVerdict, Status};

use self::model::Model;
use self::rewrite::{Layout, RewriteInput};
use self::synth::BiasRule;
use self::table::TOp;

/// What to check and how.
#[derive(Clone, Debug)]
pub struct Options {
    pub program: PathBuf,
    pub table: PathBuf,
    pub seed: u64,
    pub schedule: Schedule,
    /// Turn `VER` points into probe stores (element mode).
    pub probes: bool,
    /// A deliberately wrong reference, to show that the check can fail (tests only).
    pub control: Control,
}

/// Negative controls: references that ignore one convention and must mismatch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Control {
    #[default]
    None,
    /// The reference reads GEMM rows as `(cin, kh, kw)` instead of `(kh, kw, cin)`.
    ChwRows,
    /// The reference adds no bias instead of the image prefix.
    NoBiasAlias,
}

/// Everything a check produced: the verdicts and what reports and reproductions need.
pub struct Checked {
    pub mode: Mode,
    pub verdicts: Vec<NodeVerdict>,
    /// How the run ended (a fault or deadlock of the rewritten program is a finding).
    pub outcome: RunOutcome,
    pub rewritten: Program,
    /// Per core, each rewritten instruction's index in PROGRAM (`None`: inserted).
    pub origin: Vec<Vec<Option<u32>>>,
    /// Per core, each rewritten instruction's table node (`-1`: none, e.g. `sldi`).
    pub node_of: Vec<Vec<i32>>,
    pub layout: Layout,
    /// Per node, the addresses of the preloads its instructions read (reduced programs).
    pub node_preloads: Vec<Vec<u32>>,
    /// Per node, the global address its observed output starts at, when the observed
    /// elements lie at `address + element` (every probe, isolated and end-to-end region).
    pub regions: Vec<Option<u32>>,
    pub export: CrossbarExport,
    /// `(address, bytes, what)` written into global memory before the run.
    pub preload: Vec<(u32, Vec<i8>, String)>,
    pub reference: Vec<Value>,
    /// Per node, the observed output and which elements were observed.
    pub observed: Vec<Option<(Vec<i8>, Vec<bool>)>>,
    pub arch: Arch,
    pub timings: Vec<(&'static str, f64)>,
    pub instructions: u64,
}

impl Checked {
    /// Exit status: a mismatch, a disagreement or a run that did not finish is a finding.
    pub fn is_finding(&self) -> bool {
        !self.outcome.is_finished()
            || self
                .verdicts
                .iter()
                .any(|v| v.status == Status::Mismatch || !v.disagreements.is_empty())
    }
}

/// Phase timings: each lap is the wall time since the previous one.
struct Clock {
    at: Instant,
    laps: Vec<(&'static str, f64)>,
}

impl Clock {
    fn lap(&mut self, name: &'static str) {
        self.laps.push((name, self.at.elapsed().as_secs_f64()));
        self.at = Instant::now();
    }
}

/// What the reference thread returns: every node's value and its own time.
type Timed<T> = (Result<T, PimcompError>, f64);

/// Runs the whole check.
pub fn check(opts: &Options) -> Result<Checked, PimcompError> {
    let mut clock = Clock {
        at: Instant::now(),
        laps: Vec::new(),
    };
    let (program, table) = load(opts)?;
    clock.lap("load program and side table");
    let cores = &table.instruction.core_list;
    let alignment = align::align(&program, cores, &table.ags)?;
    let mode = if cores.iter().flatten().flatten().any(|t| t.op == TOp::Ver) {
        Mode::Element
    } else {
        Mode::Batch
    };
    let all: Vec<_> = cores.iter().flatten().flatten().collect();
    let model = Model::new(&table.node_list, mode, &all)?;
    drop(all);
    let synthesis = synth::synthesise(&model, opts.seed, BiasRule::ImagePrefix);
    clock.lap("synthesise");
    let reference_params = control_params(&model, &synthesis.params, opts.control);
    let input = Input {
        opts,
        program: &program,
        table: &table,
        alignment: &alignment,
        mode,
        model: &model,
        synthesis: &synthesis,
    };
    // The reference and the rewritten program's machine do not depend on each other: the
    // reference is evaluated on its own thread (its layers use the rayon pool) while this one
    // builds the export, the rewrite and the machine's crossbars.
    std::thread::scope(|s| {
        let reference = s.spawn(|| -> Timed<Vec<Value>> {
            let start = Instant::now();
            let r = evaluate(&model.graph, synthesis.image.view(), &reference_params)
                .map_err(|e| PimcompError::Setup(format!("reference: {e}")));
            (r, start.elapsed().as_secs_f64())
        });
        let reference = move || match reference.join() {
            Ok(timed) => timed,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        run_and_judge(&input, clock, reference)
    })
}

/// What the check has read and synthesised before the run.
struct Input<'a> {
    opts: &'a Options,
    program: &'a Program,
    table: &'a table::SideTable,
    alignment: &'a align::Alignment,
    mode: Mode,
    model: &'a Model,
    synthesis: &'a synth::Synthesis,
}

/// The rewrite, the run (once `reference` has arrived: batch mode preloads from it), the
/// verdicts and, where a node mismatches, the localization.
fn run_and_judge(
    input: &Input,
    mut clock: Clock,
    reference: impl FnOnce() -> Timed<Vec<Value>>,
) -> Result<Checked, PimcompError> {
    let (opts, program, mode, model) = (input.opts, input.program, input.mode, input.model);
    let (cores, ags) = (&input.table.instruction.core_list, &input.table.ags);
    let groups = crossbars::GroupAssignment::new(cores, program.cores.len(), ags)?;
    let hints = ArchHints {
        arrays_per_core: Some(groups.arrays_per_core),
        ..ArchHints::default()
    };
    let arch = Arch::resolve(&program.arch, program.cores.len() as u32, &hints);
    let export = export(&groups, ags, arch, model, &input.synthesis.params)?;
    let image = &input.synthesis.image;
    let layout = rewrite::layout(model, mode, cores, opts.probes, image.len())?;
    let mut rewritten = rewrite::rewrite(&RewriteInput {
        program,
        table: cores,
        alignment: input.alignment,
        groups: &groups,
        group_map: groups.group_map(ags),
        model,
        layout: &layout,
        mode,
    })?;
    if mode == Mode::Batch {
        reduce::attribute_post_ops(model, &mut rewritten);
    }
    let options = MachineOptions {
        schedule: opts.schedule,
        cell_fill: CellFill::Zero,
        ..MachineOptions::default()
    };
    let mut machine = new_machine(&rewritten.program, &export, arch, options)?;
    clock.lap("rewrite");
    let (reference, reference_secs) = reference();
    let reference = reference?;
    clock.lap("wait for the reference");
    clock
        .laps
        .push(("reference (beside the rewrite)", reference_secs));
    let preload = preload(model, &layout, image, &reference)?;
    write_preload(&mut machine, &preload)?;
    let outcome = machine.run();
    let instructions = machine.stats().instructions;
    clock.lap("run");

    let read = |addr: u32, len: usize| {
        machine
            .read_gmem(addr, len as u32)
            .unwrap_or_else(|_| vec![0; len])
    };
    let observations = verdict::observations(model, mode, cores, &layout);
    let regions = observations
        .iter()
        .map(|o| o.as_ref().and_then(verdict::Observation::base))
        .collect();
    let (mut verdicts, observed) = judge_nodes(
        model,
        mode,
        &reference,
        &observations,
        &input.alignment.disagreements,
        &read,
    );
    drop(machine);
    clock.lap("compare");
    if verdicts.iter().any(|v| v.status == Status::Mismatch) {
        let ctx = localize::Context {
            program,
            table: cores,
            alignment: input.alignment,
            origin: &rewritten.origin,
            ags,
            model,
            layout: &layout,
            mode,
        };
        let mut again = new_machine(&rewritten.program, &export, arch, options)?;
        write_preload(&mut again, &preload)?;
        localize::localize(&ctx, again, &mut verdicts);
        clock.lap("localize");
    }
    Ok(Checked {
        mode,
        verdicts,
        outcome,
        rewritten: rewritten.program,
        origin: rewritten.origin,
        node_of: rewritten.node_of,
        regions,
        node_preloads: reduce::preloads(mode, &layout, cores, model.nodes.len()),
        layout,
        export,
        preload,
        reference,
        observed,
        arch,
        timings: clock.laps,
        instructions,
    })
}

/// Every node's verdict from what the run left in global memory (`read`), and what was
/// observed of each node's output.
#[allow(clippy::type_complexity)]
fn judge_nodes(
    model: &Model,
    mode: Mode,
    reference: &[Value],
    observations: &[Option<verdict::Observation>],
    disagreements: &[align::Disagreement],
    read: &dyn Fn(u32, usize) -> Vec<u8>,
) -> (Vec<NodeVerdict>, Vec<Option<(Vec<i8>, Vec<bool>)>>) {
    let mut by_node: Vec<Vec<align::Disagreement>> = vec![Vec::new(); model.nodes.len()];
    for d in disagreements {
        if let Some(slot) = by_node.get_mut(d.node.max(0) as usize) {
            slot.push(d.clone());
        }
    }
    let mut verdicts = Vec::with_capacity(model.nodes.len());
    let mut observed = Vec::with_capacity(model.nodes.len());
    for (i, o) in observations.iter().enumerate() {
        let seen = o
            .as_ref()
            .map(|o| verdict::gather(o, model.nodes[i].shape.len(), read));
        let view = match (o, &seen) {
            (Some(o), Some((a, c))) => Some((o.kind, a.as_slice(), c.as_slice())),
            _ => None,
        };
        verdicts.push(verdict::judge(
            i,
            model,
            mode,
            &reference[i],
            view,
            std::mem::take(&mut by_node[i]),
        ));
        observed.push(seen);
    }
    (verdicts, observed)
}

/// The program and the side table. They are independent and each takes about a second: read
/// side by side.
fn load(opts: &Options) -> Result<(Program, table::SideTable), PimcompError> {
    let (program, table) = rayon::join(
        || {
            pimdiff_isa::formats::load_program(&opts.program).map_err(|e| PimcompError::Program {
                path: opts.program.clone(),
                message: e.to_string(),
            })
        },
        || table::read_table(&opts.table),
    );
    Ok((program?, table?))
}

/// The crossbar export: every AG's rows and columns of its node's synthesised matrix.
fn export(
    groups: &crossbars::GroupAssignment,
    ags: &[table::AgInfo],
    arch: Arch,
    model: &Model,
    params: &[NodeParams],
) -> Result<CrossbarExport, PimcompError> {
    let matrix_of = |name: &str| -> Option<&Array2<i8>> {
        let i = model
            .nodes
            .iter()
            .position(|n| n.weighted && n.name == name)?;
        params[i].matrix.as_ref()
    };
    crossbars::export(groups, ags, arch.array_rows, arch.array_cols, matrix_of)
}

/// A machine for the rewritten program.
fn new_machine<'p>(
    program: &'p Program,
    export: &'p CrossbarExport,
    arch: Arch,
    options: MachineOptions,
) -> Result<Machine<'p>, PimcompError> {
    Machine::new(program, export, arch, options)
        .map_err(|e| PimcompError::Setup(format!("machine: {e}")))
}

/// Writes the preloads into global memory.
fn write_preload(
    machine: &mut Machine,
    preload: &[(u32, Vec<i8>, String)],
) -> Result<(), PimcompError> {
    for (addr, bytes, what) in preload {
        let raw: Vec<u8> = bytes.iter().map(|&b| b as u8).collect();
        machine
            .write_gmem(*addr, &raw)
            .map_err(|e| PimcompError::Setup(format!("preload {what}: {e}")))?;
    }
    Ok(())
}

/// The reference's parameters under a negative control (borrowed as they are without one).
fn control_params<'p>(
    model: &Model,
    params: &'p [NodeParams],
    control: Control,
) -> Cow<'p, [NodeParams]> {
    if control == Control::None {
        return Cow::Borrowed(params);
    }
    Cow::Owned(
        params
            .iter()
            .zip(&model.graph.nodes)
            .map(|(p, n)| {
                let mut p = p.clone();
                match (control, &n.op) {
                    (Control::NoBiasAlias, _) => p.bias = p.bias.map(|b| b.mapv(|_| 0)),
                    (Control::ChwRows, NodeOp::Conv(c)) => {
                        if let Some(m) = &p.matrix {
                            let (kh, kw, cin) = (c.kernel[0], c.kernel[1], c.in_channels);
                            p.matrix = Some(Array2::from_shape_fn(m.dim(), |(r, k)| {
                                let (i, j, ch) = (r / (kw * cin), (r / cin) % kw, r % cin);
                                m[[(ch * kh + i) * kw + j, k]]
                            }));
                        }
                    }
                    _ => {}
                }
                p
            })
            .collect(),
    )
}

/// The image at 0 and, in batch mode, every provider tensor from the reference.
fn preload(
    model: &Model,
    layout: &Layout,
    image: &ndarray::Array3<i8>,
    reference: &[Value],
) -> Result<Vec<(u32, Vec<i8>, String)>, PimcompError> {
    let mut out = vec![(
        0u32,
        image.iter().copied().collect::<Vec<i8>>(),
        "image".to_string(),
    )];
    for (&node, &addr) in &layout.input_region {
        let Value::Tensor(t) = &reference[node] else {
            return Err(PimcompError::Setup(format!(
                "batch mode needs node {node} ({}) as an input, but it has no reference value",
                model.nodes[node].name
            )));
        };
        out.push((
            addr,
            t.iter().copied().collect(),
            format!("node {node} ({})", model.nodes[node].name),
        ));
    }
    Ok(out)
}
