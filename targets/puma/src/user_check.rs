//! The check of a model the compiler dumped ([`super::graph`]): seeded data, the exact
//! reference computed from the dumped graph operation by operation, and the compile's
//! programs run on the PUMA machine with every output compared exactly.
//!
//! **Data.** Every input element is drawn from `[-3, 3]`; every matrix's weights from
//! `[-2, 2]` (a third of them zero), each output row (a dense matrix's row, all taps of a
//! convolution's output channel) thinned just before the first operation using the matrix
//! until `Σ|w|` times its operand's largest magnitude fits a target — the same draw as a hunt's
//! ([`super::data`]). A draw whose reference leaves the machine's range is repeated with a
//! target four times smaller, up to [`super::data::ATTEMPTS`] times, then weights are zero.
//! The weights go into the MVMUs the compiler chose for each matrix tile, in the layout
//! `ModelInstance::generateData` writes (row = output, snapshot `src/instance.cpp:55-75`);
//! the weight files the program wrote, if any, are removed first (the snapshot's tests bind
//! uninitialized arrays), and [`write_weight_files`] writes ours for a person who keeps the
//! directory.
//!
//! **Reference.** Every operation of the dump computes one vector: an input piece's data; a
//! matrix tile times its operand; an ALU operation element-wise; a vector of an immediate.
//! As in [`super::reference`], every element is an exact integer, known or not, with a bound
//! on its magnitude, and every matrix operation's partial sums are bounded by `Σ|w|·|x|`.
//! The ALU operations are the ones the simulator's ALU has (add, sub, mul, max, relu, sig,
//! tanh; simulator `src/ima_modules.py:388-389`) and `muli`; any other operation, or a
//! training matrix, leaves the model without a verdict ([`CheckError::Unmodelled`]).
//! Numbers are integers (`frac_bits = 0`, `docs/puma.md`), in which the machine rounds `sig`
//! and `tanh` to the nearest integer as the simulator converts every ALU result back to a
//! word (`int(round(v · 2^frac_bits))`, simulator `src/data_convert.py:18-21`, under Python
//! 2, whose `round` takes ties away from zero). For an integer operand their real values lie
//! at least 0.23 from a rounding boundary, except `sig(0) = 1/2`, exact in floating point,
//! which is a tie. So `tanh(x)` is the sign of `x` and `sig(x)` is 1 for `x ≥ 0` and 0 for
//! `x < 0`, whatever the C library's `exp` and `tanh` (checked against the machine's own ALU
//! in this module's tests). (A hunt's reference keeps every `sig` and `tanh` result unknown;
//! its generator makes them rare. Nearly every network of the compiler's `test/` folder
//! applies `sig` to every layer: this rounding is what lets them be checked at all.) A
//! `muli` whose immediate is not an integer has no exact integer result: unknown.
//!
//! **Check.** The inputs are written where the dump places their pieces, the machine runs,
//! and every output piece assigned exactly once and placed exactly once is read back and its
//! known elements compared. The first wrong element is traced to the instructions that
//! computed it ([`super::localize`]). When the programs compute their graph exactly, the same
//! words are compared with what the API calls ask ([`super::api`], given by the caller): a
//! difference there is a defect in how a call built its operations.

use std::collections::BTreeMap;
use std::path::Path;

use pimdiff_puma::formats::load_model;
use pimdiff_puma::machine::{Machine, MachineOptions, Quirks, RunOutcome, Word};
use pimdiff_puma::{Model, Weights};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::api::ApiOutput;
use super::check::{mnemonic, unflatten, variant_name, CheckOptions, Checked, Mismatch, Verdict};
use super::data::{draw_weight_cells, ATTEMPTS};
pub use super::graph::GraphData;
use super::graph::{GraphOp, MatrixShape, ModelGraph, OpKind};
use super::localize::slice;
use super::reference::NumericRange;

/// The most weights a model may have to be checked: 2^28 (their MVMUs take 1 GiB in the
/// machine, as 32-bit cells of 128 × 128). The snapshot's `nmt_l5` has 219 million; its
/// `wlm_*` networks have over a billion and are refused with this reason rather than
/// exhausting the memory of a shared machine.
pub const MAX_WEIGHTS: u64 = 1 << 28;

/// Mixed into the seed so that the data's stream is not the generator's (as in `data.rs`).
const DATA_SALT: u64 = 0x5553_4552_4441_5441;

/// Why a dumped model cannot be checked (a verdict of "could not judge", with the reason).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("{0}")]
    Unmodelled(String),
    #[error("the model has {weights} weights, more than the {MAX_WEIGHTS} the check holds")]
    TooLarge { weights: u64 },
}

/// One operation's vector: elements, which are known, and magnitude bounds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Value {
    pub value: Vec<i64>,
    pub known: Vec<bool>,
    pub magnitude: Vec<i64>,
}

/// The reference of every operation (in the graph's order) and the largest bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evaluation {
    pub values: Vec<Value>,
    pub peak: i64,
    /// Why some elements are unknown (each reason once).
    pub notes: Vec<String>,
}

/// An intermediate left the machine's range: another draw is needed.
struct OutOfRange;

/// Draws weights of a matrix at its first use.
struct Drawer {
    rng: ChaCha8Rng,
    target: i64,
    drawn: Vec<bool>,
}

/// The data of `graph` for `seed` and its reference, inside `range` (module docs).
pub fn data_and_reference(
    graph: &ModelGraph,
    seed: u64,
    range: NumericRange,
) -> Result<(GraphData, Evaluation), CheckError> {
    refuse_unmodelled(graph)?;
    for attempt in 0..ATTEMPTS {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ DATA_SALT ^ u64::from(attempt));
        let mut data = GraphData {
            inputs: draw_inputs(graph, &mut rng),
            weights: zero_weights(graph),
        };
        let mut drawer = Drawer {
            rng,
            target: (range.max_magnitude() >> (2 * attempt + 2)).max(1),
            drawn: vec![false; graph.matrices.len()],
        };
        if let Ok(eval) = evaluate(graph, &mut data, Some(&mut drawer), range) {
            // Matrices no operation uses still get weights (the compiler programs them all).
            for (m, done) in drawer.drawn.iter().enumerate() {
                if !done {
                    let dims = graph.matrices[m].shape.dims();
                    data.weights[m] = draw_weight_cells(&mut drawer.rng, &dims, 1, drawer.target);
                }
            }
            return Ok((data, eval));
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ DATA_SALT ^ u64::from(ATTEMPTS));
    let mut data = GraphData {
        inputs: draw_inputs(graph, &mut rng),
        weights: zero_weights(graph),
    };
    if let Ok(eval) = evaluate(graph, &mut data, None, range) {
        return Ok((data, eval));
    }
    for input in &mut data.inputs {
        input.fill(0);
    }
    match evaluate(graph, &mut data, None, range) {
        Ok(eval) => Ok((data, eval)),
        Err(OutOfRange) => Err(CheckError::Unmodelled(
            "the model leaves the machine's range even with zero data (an immediate too large)"
                .into(),
        )),
    }
}

/// The reference of `graph` on `data` as it is (no weights drawn).
pub fn reference(
    graph: &ModelGraph,
    data: &GraphData,
    range: NumericRange,
) -> Result<Evaluation, CheckError> {
    refuse_unmodelled(graph)?;
    let mut data = data.clone();
    match evaluate(graph, &mut data, None, range) {
        Ok(e) => Ok(e),
        Err(OutOfRange) => Err(CheckError::Unmodelled(format!(
            "the data leaves the machine's range ±{}",
            range.max_magnitude()
        ))),
    }
}

/// Training matrices, other operations, ALU operations the simulator lacks, and models too
/// large to hold: refused before anything is drawn.
fn refuse_unmodelled(graph: &ModelGraph) -> Result<(), CheckError> {
    if let Some(m) = graph
        .matrices
        .iter()
        .find(|m| matches!(m.shape, MatrixShape::Training { .. }))
    {
        return Err(CheckError::Unmodelled(format!(
            "training matrix `{}`: the check models inference only",
            m.name
        )));
    }
    for op in &graph.ops {
        match &op.kind {
            OpKind::Other { type_name, .. } => {
                return Err(CheckError::Unmodelled(format!(
                    "operation {} of type `{type_name}` is not modelled",
                    op.id
                )))
            }
            OpKind::Alu { alu, operands, .. } => {
                let arity = match alu.as_str() {
                    "add" | "sub" | "mul" | "max" => 2,
                    "relu" | "sig" | "tanh" | "muli" => 1,
                    _ => {
                        return Err(CheckError::Unmodelled(format!(
                            "ALU operation `{alu}` (operation {}): the PUMA simulator's ALU has \
                             no such operation (simulator src/ima_modules.py:388-389), so its \
                             result has no meaning to check",
                            op.id
                        )))
                    }
                };
                if operands.len() != arity {
                    return Err(CheckError::Unmodelled(format!(
                        "ALU operation `{alu}` (operation {}) has {} operands",
                        op.id,
                        operands.len()
                    )));
                }
            }
            _ => {}
        }
    }
    let weights: u64 = graph
        .matrices
        .iter()
        .map(|m| m.shape.dims().iter().map(|&d| d as u64).product::<u64>())
        .sum();
    if weights > MAX_WEIGHTS {
        return Err(CheckError::TooLarge { weights });
    }
    Ok(())
}

fn draw_inputs(graph: &ModelGraph, rng: &mut ChaCha8Rng) -> Vec<Vec<i64>> {
    graph
        .inputs
        .iter()
        .map(|t| {
            (0..t.shape.elements())
                .map(|_| rng.random_range(-3..=3))
                .collect()
        })
        .collect()
}

fn zero_weights(graph: &ModelGraph) -> Vec<Vec<i8>> {
    graph
        .matrices
        .iter()
        .map(|m| vec![0; m.shape.dims().iter().product()])
        .collect()
}

/// The flat index of element `(r, c)` of tile `tile` of matrix `matrix` in its weights.
fn weight_index(graph: &ModelGraph, matrix: usize, tile: usize, r: u32, c: u32) -> usize {
    let m = &graph.matrices[matrix];
    let t = &m.tiles[tile];
    let (row, col) = ((t.row + r) as usize, (t.column + c) as usize);
    match (m.shape, t.kernel) {
        (
            MatrixShape::Conv {
                kernel_width,
                in_channels,
                out_channels,
                ..
            },
            Some((kh, kw)),
        ) => {
            let tap = (kh * kernel_width + kw) as usize;
            (tap * out_channels as usize + row) * in_channels as usize + col
        }
        (MatrixShape::Dense { width, .. }, _) => row * width as usize + col,
        _ => unreachable!("checked by the graph: a conv tile has a kernel position"),
    }
}

/// Every operation's value in order; weights drawn at first use when `drawer` is given.
fn evaluate(
    graph: &ModelGraph,
    data: &mut GraphData,
    mut drawer: Option<&mut Drawer>,
    range: NumericRange,
) -> Result<Evaluation, OutOfRange> {
    let mut values: Vec<Value> = Vec::with_capacity(graph.ops.len());
    let mut notes: BTreeMap<String, ()> = BTreeMap::new();
    let mut peak = 0;
    for op in &graph.ops {
        if let (OpKind::Mvm { matrix, x, .. }, Some(d)) = (&op.kind, drawer.as_deref_mut()) {
            if !d.drawn[*matrix] {
                let operand = values[*x].magnitude.iter().copied().max().unwrap_or(0);
                let dims = graph.matrices[*matrix].shape.dims();
                data.weights[*matrix] = draw_weight_cells(&mut d.rng, &dims, operand, d.target);
                d.drawn[*matrix] = true;
            }
        }
        let (value, bound) = step(graph, data, op, &values, &mut notes);
        if bound > range.max_magnitude() {
            return Err(OutOfRange);
        }
        peak = peak.max(bound);
        values.push(value);
    }
    Ok(Evaluation {
        values,
        peak,
        notes: notes.into_keys().collect(),
    })
}

/// One operation's value and the largest magnitude its computation reaches.
fn step(
    graph: &ModelGraph,
    data: &GraphData,
    op: &GraphOp,
    values: &[Value],
    notes: &mut BTreeMap<String, ()>,
) -> (Value, i64) {
    let n = op.length as usize;
    match &op.kind {
        OpKind::Input { input, piece } => {
            let p = &graph.inputs[*input].pieces[*piece];
            let first = p.first as usize;
            let v: Vec<i64> = data.inputs[*input][first..first + n].to_vec();
            known(v)
        }
        OpKind::Mvm { matrix, tile, x } => mvm(graph, data, *matrix, *tile, &values[*x]),
        OpKind::Set { imm } => {
            if imm.fract() != 0.0 || imm.abs() > 1e15 {
                notes.insert(format!("set {imm}: not an integer"), ());
                unknown(n, imm.abs().ceil() as i64)
            } else {
                known(vec![*imm as i64; n])
            }
        }
        OpKind::Output { x, .. } => {
            let v = values[*x].clone();
            let peak = v.magnitude.iter().copied().max().unwrap_or(0);
            (v, peak)
        }
        OpKind::Alu { alu, operands, imm } => {
            let a = &values[operands[0]];
            let b = operands.get(1).map(|&o| &values[o]);
            alu_value(alu, a, b, *imm, notes)
        }
        OpKind::Other { .. } => unreachable!("refused before evaluation"),
    }
}

fn known(v: Vec<i64>) -> (Value, i64) {
    let magnitude: Vec<i64> = v.iter().map(|x| x.saturating_abs()).collect();
    let peak = magnitude.iter().copied().max().unwrap_or(0);
    (
        Value {
            known: vec![true; v.len()],
            value: v,
            magnitude,
        },
        peak,
    )
}

fn unknown(n: usize, bound: i64) -> (Value, i64) {
    (
        Value {
            value: vec![0; n],
            known: vec![false; n],
            magnitude: vec![bound; n],
        },
        bound,
    )
}

/// A matrix tile times `x`: known where every term with a nonzero weight is.
fn mvm(
    graph: &ModelGraph,
    data: &GraphData,
    matrix: usize,
    tile: usize,
    x: &Value,
) -> (Value, i64) {
    let t = graph.matrices[matrix].tiles[tile];
    let w = &data.weights[matrix];
    let rows = t.height as usize;
    let mut out = Value {
        value: vec![0; rows],
        known: vec![true; rows],
        magnitude: vec![0; rows],
    };
    let mut peak = 0;
    for r in 0..t.height {
        let (mut sum, mut bound, mut all_known) = (0i64, 0i64, true);
        for c in 0..t.width {
            let wv = i64::from(w[weight_index(graph, matrix, tile, r, c)]);
            if wv == 0 {
                continue;
            }
            let c = c as usize;
            sum = sum.wrapping_add(wv.wrapping_mul(x.value[c]));
            bound = bound.saturating_add(wv.abs().saturating_mul(x.magnitude[c]));
            all_known &= x.known[c];
        }
        let r = r as usize;
        peak = peak.max(bound);
        out.value[r] = if all_known { sum } else { 0 };
        out.known[r] = all_known;
        out.magnitude[r] = if all_known { sum.abs() } else { bound };
    }
    (out, peak)
}

/// `sig` and `tanh` of a known integer, rounded to an integer (module docs).
pub fn rounded_nonlinear(alu: &str, x: i64) -> Option<i64> {
    match alu {
        "tanh" => Some(x.signum()),
        "sig" => Some(i64::from(x >= 0)),
        _ => None,
    }
}

/// An ALU operation element-wise.
fn alu_value(
    alu: &str,
    a: &Value,
    b: Option<&Value>,
    imm: Option<f64>,
    notes: &mut BTreeMap<String, ()>,
) -> (Value, i64) {
    let n = a.value.len();
    let mut out = Value {
        value: vec![0; n],
        known: vec![false; n],
        magnitude: vec![0; n],
    };
    let integer_imm = imm.filter(|i| i.fract() == 0.0 && i.abs() <= 32767.0);
    if alu == "muli" && integer_imm.is_none() {
        notes.insert(
            format!(
                "`muli` by {}: not an integer, no exact integer result",
                imm.unwrap_or(f64::NAN)
            ),
            (),
        );
    }
    let mut peak = 0;
    for e in 0..n {
        let (p, pk, pm) = (a.value[e], a.known[e], a.magnitude[e]);
        let q = b.map(|b| (b.value[e], b.known[e], b.magnitude[e]));
        let (result, bound): (Option<i64>, i64) = match (alu, q) {
            ("add", Some((q, qk, qm))) => ((pk && qk).then(|| p + q), pm.saturating_add(qm)),
            ("sub", Some((q, qk, qm))) => ((pk && qk).then(|| p - q), pm.saturating_add(qm)),
            ("mul", Some((q, qk, qm))) => {
                let zero = (pk && p == 0) || (qk && q == 0);
                let v = if zero {
                    Some(0)
                } else {
                    (pk && qk).then(|| p * q)
                };
                (v, pm.saturating_mul(qm))
            }
            ("max", Some((q, qk, qm))) => ((pk && qk).then(|| p.max(q)), pm.max(qm)),
            ("relu", None) => (pk.then(|| p.max(0)), pm),
            ("muli", None) => match integer_imm {
                Some(0.0) => (Some(0), 0),
                Some(i) => (pk.then(|| p * i as i64), pm.saturating_mul(i.abs() as i64)),
                None => (None, (pm as f64 * imm.unwrap_or(0.0).abs()).ceil() as i64),
            },
            ("sig" | "tanh", None) => (pk.then(|| rounded_nonlinear(alu, p)).flatten(), 1),
            _ => unreachable!("refused before evaluation"),
        };
        peak = peak.max(bound);
        match result {
            Some(v) => {
                out.value[e] = v;
                out.known[e] = true;
                out.magnitude[e] = v.abs();
                peak = peak.max(v.abs());
            }
            None => out.magnitude[e] = bound,
        }
    }
    (out, peak)
}

/// Writes every matrix tile's weights as `<model>-tile<T>-core<C>-mvmu<M>.weights` into
/// `dir`, as `generateData` writes them (`src/instance.cpp:55-75`), replacing whatever the
/// program wrote (the snapshot's tests bind uninitialized arrays): the machine loads the
/// files, so the directory holds exactly what was run.
pub fn write_weight_files(dir: &Path, graph: &ModelGraph, data: &GraphData) -> std::io::Result<()> {
    use std::fmt::Write as _;
    for (m, matrix) in graph.matrices.iter().enumerate() {
        for (ti, t) in matrix.tiles.iter().enumerate() {
            let mut text = String::with_capacity(128 * 128 * 3);
            for r in 0..128u32 {
                for c in 0..128u32 {
                    if r < t.height && c < t.width {
                        let v = data.weights[m][weight_index(graph, m, ti, r, c)];
                        let _ = write!(text, "{v} ");
                    } else {
                        text.push_str("0.0 ");
                    }
                }
            }
            let name = format!(
                "{}-tile{}-core{}-mvmu{}.weights",
                graph.model, t.tile, t.core, t.mvmu
            );
            std::fs::write(dir.join(name), text)?;
        }
    }
    Ok(())
}

/// Removes the weight files the program wrote for `model` (its own data, replaced).
fn remove_program_weights(dir: &Path, model: &str) -> std::io::Result<()> {
    let prefix = format!("{model}-tile");
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().to_string();
        if name.starts_with(&prefix) && name.ends_with(".weights") {
            std::fs::remove_file(dir.join(name))?;
        }
    }
    Ok(())
}

/// The machine's weights of every matrix tile (`generateData`'s layout).
fn set_weights(model: &mut Model, graph: &ModelGraph, data: &GraphData) -> Result<(), String> {
    for (m, matrix) in graph.matrices.iter().enumerate() {
        for (ti, t) in matrix.tiles.iter().enumerate() {
            let mut w = Weights::zeros();
            for r in 0..t.height {
                for c in 0..t.width {
                    let v = data.weights[m][weight_index(graph, m, ti, r, c)];
                    w.set(r, c, i32::from(v));
                }
            }
            let slot = model
                .tiles
                .get_mut(t.tile as usize)
                .and_then(|tile| tile.cores.get_mut(t.core as usize))
                .and_then(|core| core.mvmus.get_mut(t.mvmu as usize))
                .ok_or_else(|| {
                    format!(
                        "matrix `{}` is placed on MVMU {} of core {} of tile {}, which the \
                         programs do not have",
                        matrix.name, t.mvmu, t.core, t.tile
                    )
                })?;
            *slot = Some(w);
        }
    }
    Ok(())
}

/// How the API's meaning was compared, when it was: elements compared (all equal unless the
/// verdict says otherwise) and elements of the compared pieces it leaves unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ApiStats {
    pub compared: u64,
    pub unknown: u64,
}

/// The check of the compile in `dir` against `graph` with `data` and its `eval`, and, when
/// `api` gives what the calls ask of each output, against that too.
pub fn check_graph(
    dir: &Path,
    graph: &ModelGraph,
    data: &GraphData,
    eval: &Evaluation,
    api: Option<&[Option<ApiOutput>]>,
    options: CheckOptions,
) -> (Checked, Option<ApiStats>) {
    if let Err(e) = remove_program_weights(dir, &graph.model) {
        return (unloadable("weights", e), None);
    }
    let mut model = match load_model(dir, &graph.model) {
        Ok(m) => m,
        Err(e) => return (unloadable("programs", e), None),
    };
    if let Err(e) = set_weights(&mut model, graph, data) {
        return (unloadable("weights", e), None);
    }

    let machine_options = MachineOptions {
        step_budget: options.step_budget,
        frac_bits: 0,
        quirks: options.quirks,
    };
    let mut machine = match Machine::new(&model, machine_options) {
        Ok(m) => m,
        Err(e) => return (unloadable("machine set-up", e), None),
    };
    if let Err(e) = place_inputs(&mut machine, graph, data) {
        return (unloadable("inputs", e), None);
    }
    let outcome = machine.run();
    let overflows = model
        .instruction_memory_overflows()
        .into_iter()
        .map(|(id, len)| match id.core {
            Some(c) => format!("tile {} core {c}: {len} instructions", id.tile),
            None => format!("tile {}: {len} instructions", id.tile),
        })
        .collect();
    let mut stats = None;
    let verdict = match &outcome {
        RunOutcome::Finished => {
            let (v, s) = compare(&machine, graph, eval, api, options.quirks);
            stats = s;
            v
        }
        RunOutcome::Fault(f) => Verdict::Fault {
            kind: variant_name(&format!("{:?}", f.kind)),
            opcode: mnemonic(&f.text),
            at: f.at.to_string(),
            text: f.text.clone(),
            message: f.kind.to_string(),
        },
        RunOutcome::Deadlock(report) => {
            let mut opcodes: Vec<String> =
                report.blocked.iter().map(|b| mnemonic(&b.text)).collect();
            opcodes.sort();
            opcodes.dedup();
            Verdict::Deadlock {
                opcodes,
                report: report.to_string(),
            }
        }
        RunOutcome::OutOfSteps { steps } => Verdict::OutOfSteps { steps: *steps },
    };
    let checked = Checked {
        verdict,
        run: outcome.to_string(),
        steps: machine.stats().steps,
        beyond_word: machine.stats().beyond_word,
        instruction_memory_overflows: overflows,
    };
    (checked, stats)
}

fn unloadable(what: &str, message: impl ToString) -> Checked {
    Checked {
        verdict: Verdict::Unloadable {
            what: what.to_string(),
            message: message.to_string(),
        },
        run: "not run".into(),
        steps: 0,
        beyond_word: 0,
        instruction_memory_overflows: Vec::new(),
    }
}

fn place_inputs(
    machine: &mut Machine<'_>,
    graph: &ModelGraph,
    data: &GraphData,
) -> Result<(), String> {
    for (i, t) in graph.inputs.iter().enumerate() {
        for p in &t.pieces {
            let first = p.first as usize;
            let values = &data.inputs[i][first..first + p.length as usize];
            for place in &p.places {
                let address = u32::try_from(place.address)
                    .map_err(|_| format!("`{}`: address {} out of range", t.name, place.address))?;
                machine
                    .write_tile_memory(place.tile, address, values, place.counter)
                    .map_err(|e| format!("`{}`: {e}", t.name))?;
            }
        }
    }
    Ok(())
}

/// One compared output piece: its operation, its output and piece, where it was read.
struct Compared {
    op: usize,
    output: usize,
    first: u64,
    tile: u32,
    address: u64,
    /// `(element within the piece, expected, actual)` of every wrong known element.
    wrong: Vec<(usize, i64, Option<i64>)>,
    known: u64,
}

fn compare(
    machine: &Machine<'_>,
    graph: &ModelGraph,
    eval: &Evaluation,
    api: Option<&[Option<ApiOutput>]>,
    quirks: Quirks,
) -> (Verdict, Option<ApiStats>) {
    // Output operations per piece: a piece assigned twice is not compared.
    let mut assigned: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
    for (i, op) in graph.ops.iter().enumerate() {
        if let OpKind::Output { output, piece, .. } = op.kind {
            assigned.entry((output, piece)).or_default().push(i);
        }
    }
    let (mut results, mut elements) = (Vec::new(), 0u64);
    for (&(output, piece), ops) in &assigned {
        let p = &graph.outputs[output].pieces[piece];
        elements += u64::from(p.length);
        let ([op], [place]) = (ops.as_slice(), p.places.as_slice()) else {
            if p.places.is_empty() {
                let message = format!(
                    "elements {}..{} of output `{}` are assigned but placed nowhere",
                    p.first,
                    p.first + u64::from(p.length),
                    graph.outputs[output].name
                );
                let what = "outputs".to_string();
                return (Verdict::Unloadable { what, message }, None);
            }
            continue;
        };
        let expected = &eval.values[*op];
        let words = match read_words(machine, place.tile, place.address, p.length) {
            Ok(w) => w,
            Err(message) => {
                let what = "outputs".to_string();
                return (Verdict::Unloadable { what, message }, None);
            }
        };
        let mut c = Compared {
            op: *op,
            output,
            first: p.first,
            tile: place.tile,
            address: place.address,
            wrong: Vec::new(),
            known: 0,
        };
        for (e, word) in words.iter().enumerate() {
            if !expected.known[e] {
                continue;
            }
            c.known += 1;
            if word.value != Some(expected.value[e]) {
                c.wrong.push((e, expected.value[e], word.value));
            }
        }
        results.push(c);
    }
    let on_graph = |c: &Compared| {
        let producer = graph.ops[c.op].operands()[0];
        (producer, graph.ops[producer].name())
    };
    let v = verdict(machine, graph, &results, elements, quirks, &on_graph);
    match api.filter(|_| matches!(v, Verdict::Pass { .. })) {
        Some(api) => compare_api(machine, graph, &results, api, elements, quirks, v),
        None => (v, None),
    }
}

/// The programs compute their graph (`graph_verdict` is a pass): the same words against what
/// the calls ask.
fn compare_api(
    machine: &Machine<'_>,
    graph: &ModelGraph,
    results: &[Compared],
    api: &[Option<ApiOutput>],
    elements: u64,
    quirks: Quirks,
    graph_verdict: Verdict,
) -> (Verdict, Option<ApiStats>) {
    let mut api_results = Vec::new();
    let mut stats = ApiStats::default();
    for c in results {
        let Some(expected) = &api[c.output] else {
            continue;
        };
        let length = graph.outputs[c.output]
            .pieces
            .iter()
            .find(|p| p.first == c.first)
            .map_or(0, |p| p.length);
        let words = read_words(machine, c.tile, c.address, length).unwrap_or_default();
        let (values, known) = (&expected.tensor.value, &expected.tensor.known);
        let mut a = Compared {
            wrong: Vec::new(),
            known: 0,
            ..*c
        };
        for (e, word) in words.iter().enumerate() {
            let flat = c.first as usize + e;
            if !known
                .as_slice()
                .and_then(|k| k.get(flat))
                .copied()
                .unwrap_or(false)
            {
                stats.unknown += 1;
                continue;
            }
            a.known += 1;
            let want = values
                .as_slice()
                .and_then(|v| v.get(flat))
                .copied()
                .unwrap_or(0);
            if word.value != Some(want) {
                a.wrong.push((e, want, word.value));
            }
        }
        stats.compared += a.known;
        api_results.push(a);
    }
    let on_api = |c: &Compared| {
        let o = api[c.output].as_ref().expect("compared against the API");
        (o.value, o.op.clone())
    };
    match verdict(machine, graph, &api_results, elements, quirks, &on_api) {
        v @ Verdict::Mismatch(_) => (v, Some(stats)),
        _ => (graph_verdict, Some(stats)),
    }
}

/// `length` words of tile `tile` from `address`.
fn read_words(
    machine: &Machine<'_>,
    tile: u32,
    address: u64,
    length: u32,
) -> Result<Vec<Word>, String> {
    let a = u32::try_from(address).map_err(|_| format!("address {address} out of range"))?;
    machine.read(tile, a, length).map_err(|e| e.to_string())
}

/// The verdict of compared pieces; `name` gives the value (its index, its operation) a
/// piece's expected elements come from, which orders the wrong ones and signs the mismatch.
fn verdict(
    machine: &Machine<'_>,
    graph: &ModelGraph,
    results: &[Compared],
    elements: u64,
    quirks: Quirks,
    name: &dyn Fn(&Compared) -> (usize, String),
) -> Verdict {
    let total_known: u64 = results.iter().map(|c| c.known).sum();
    let total_wrong: u64 = results.iter().map(|c| c.wrong.len() as u64).sum();
    if total_known == 0 {
        return Verdict::AllUnknown { elements };
    }
    let Some(first) = results
        .iter()
        .filter(|c| !c.wrong.is_empty())
        .min_by_key(|c| (name(c).0, c.output, c.first))
    else {
        return Verdict::Pass {
            compared: total_known,
            unknown: elements - total_known,
        };
    };
    let tensor = &graph.outputs[first.output];
    let dims = tensor.shape.dims();
    let (e, expected, actual) = first.wrong[0];
    let word = machine
        .read(first.tile, (first.address + e as u64) as u32, 1)
        .map(|w| w[0])
        .unwrap_or(Word::UNWRITTEN);
    let localized = word
        .origin
        .zip(word.origin_word)
        .and_then(|(origin, at)| slice(machine.model(), origin, at, quirks));
    // All the wrong elements of the first wrong output, across its pieces.
    let wrong_of_output: Vec<&Compared> = results
        .iter()
        .filter(|c| c.output == first.output)
        .collect();
    let (value, op) = name(first);
    Verdict::Mismatch(Box::new(Mismatch {
        output: tensor.name.clone(),
        value,
        op,
        wrong: wrong_of_output.iter().map(|c| c.wrong.len() as u64).sum(),
        known: wrong_of_output.iter().map(|c| c.known).sum(),
        total_wrong,
        total_known,
        index: unflatten(first.first as usize + e, &dims),
        expected,
        actual,
        tile: first.tile,
        address: first.address + e as u64,
        writer: word.writer.map(|w| w.to_string()),
        origin: word.origin.map(|w| w.to_string()),
        slice: localized,
        sample: wrong_of_output
            .iter()
            .flat_map(|c| {
                let dims = &dims;
                c.wrong
                    .iter()
                    .map(move |&(e, x, a)| (unflatten(c.first as usize + e, dims), x, a))
            })
            .take(16)
            .collect(),
        probe: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sig_and_tanh_round_to_integers_ties_away_from_zero() {
        assert_eq!(rounded_nonlinear("tanh", 0), Some(0));
        assert_eq!(rounded_nonlinear("tanh", -5), Some(-1));
        assert_eq!(rounded_nonlinear("tanh", 1), Some(1));
        assert_eq!(rounded_nonlinear("sig", 1), Some(1));
        assert_eq!(rounded_nonlinear("sig", -1), Some(0));
        assert_eq!(rounded_nonlinear("sig", 0), Some(1));
        assert_eq!(rounded_nonlinear("relu", 3), None);
        // What the machine computes at frac_bits = 0 (the simulator's rounding).
        for x in -40..=40i64 {
            for alu in ["sig", "tanh"] {
                let op = if alu == "sig" {
                    pimdiff_puma::values::AluOp::Sig
                } else {
                    pimdiff_puma::values::AluOp::Tanh
                };
                let machine = pimdiff_puma::fixed::alu(op, x, 0, 0, 0).unwrap();
                assert_eq!(rounded_nonlinear(alu, x), Some(machine), "{alu}({x})");
            }
        }
    }
}
