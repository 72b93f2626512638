//! The check of one compile: the compiler's programs and weights loaded into the PUMA machine,
//! the case's inputs placed where the placement file says, the machine run, every output
//! element read back and compared with the exact reference, and the first wrong element traced
//! to the instructions that computed it ([`super::localize`]).
//!
//! Numerics (`docs/puma.md`, "Numerics and exact checking"): inputs and weights are small
//! integers and every intermediate stays within ±32767, so the machine runs with `frac_bits =
//! 0` (a word read as an integer) and every known element must be equal, not close. Elements
//! the reference does not know (sig and tanh results, pixels a strided stream does not carry)
//! are not compared; a compile whose outputs are all unknown is `unsupported`, never a pass.
//!
//! Semantics: the machine follows the PUMA simulator, except where the simulator contradicts
//! what the compiler's output clearly means (`Quirks`, `docs/puma-findings.md`); a hunt checks
//! under [`Quirks::COMPILER`] by default.

use std::collections::BTreeSet;
use std::path::Path;

use pimdiff_puma::formats::load_model;
use pimdiff_puma::machine::{Machine, MachineOptions, Quirks, RunOutcome, Word, Writer};
use pimdiff_puma::Model;
use serde::Serialize;

use super::localize::{slice, Slice};
use super::network::PumaNetwork;
use super::placement::{placement_file, Placement, Role};
use super::reference::Reference;
use super::tensors::NetworkData;

/// How the machine runs a compile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckOptions {
    pub quirks: Quirks,
    pub step_budget: u64,
}

impl Default for CheckOptions {
    /// Compiler semantics, 2^26 steps (a generated network's programs take well under a
    /// million; the compiler's programs are straight-line, so a budget is only a guard).
    fn default() -> CheckOptions {
        CheckOptions {
            quirks: Quirks::COMPILER,
            step_budget: 1 << 26,
        }
    }
}

impl CheckOptions {
    /// `compiler` or `simulator` (the `--puma-quirks` spelling), else `custom`.
    pub fn quirks_name(&self) -> &'static str {
        if self.quirks == Quirks::COMPILER {
            "compiler"
        } else if self.quirks == Quirks::SIMULATOR {
            "simulator"
        } else {
            "custom"
        }
    }
}

/// What the check of one compile came to.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// Every known element equals the reference.
    Pass {
        compared: u64,
        unknown: u64,
    },
    /// No output element is known (nothing to compare), or there are no outputs.
    AllUnknown {
        elements: u64,
    },
    Mismatch(Box<Mismatch>),
    Fault {
        /// The fault's kind (`ReadNeverWritten`, ...).
        kind: String,
        /// The faulting instruction's mnemonic.
        opcode: String,
        at: String,
        text: String,
        message: String,
    },
    Deadlock {
        /// The mnemonics of the blocked instructions, sorted, each once.
        opcodes: Vec<String>,
        report: String,
    },
    OutOfSteps {
        steps: u64,
    },
    /// The compiler's output cannot be loaded, placed or read back.
    Unloadable {
        what: String,
        message: String,
    },
}

/// A wrong output, localized.
#[derive(Clone, Debug, Serialize)]
pub struct Mismatch {
    /// The first wrong output (topologically first by its value, then in output order).
    pub output: String,
    /// The index of its value.
    pub value: usize,
    /// The network operation of its value (`conv`, `mvm`, `add`, ...).
    pub op: String,
    /// Wrong and known elements of that output.
    pub wrong: u64,
    pub known: u64,
    /// Wrong and known elements of every output.
    pub total_wrong: u64,
    pub total_known: u64,
    /// The first wrong element of that output: its index, values and where it was read.
    pub index: Vec<usize>,
    pub expected: i64,
    /// `None`: the word holds no value.
    pub actual: Option<i64>,
    pub tile: u32,
    pub address: u64,
    /// The instruction that wrote the word last and the store that produced its value.
    pub writer: Option<String>,
    pub origin: Option<String>,
    /// The instructions the value came from, on the core that stored it.
    pub slice: Option<Slice>,
    /// Up to 16 wrong elements of the first wrong output: index, expected, actual.
    pub sample: Vec<(Vec<usize>, i64, Option<i64>)>,
    /// The first wrong value of the network, when a probe (every value an output,
    /// `super::probe`) found it; `None` when there was no probe or it did not mismatch.
    pub probe: Option<Box<Mismatch>>,
}

impl Mismatch {
    /// `all` when every known element of the first wrong output is wrong, else `some`.
    pub fn extent(&self) -> &'static str {
        if self.wrong == self.known {
            "all"
        } else {
            "some"
        }
    }

    /// The first wrong value: the probe's first wrong output, else this one.
    pub fn root(&self) -> &Mismatch {
        self.probe.as_deref().unwrap_or(self)
    }

    /// The instruction kind that computed the first wrong element (`unwritten` when the
    /// word holds nothing a store wrote).
    pub fn computed_by(&self) -> String {
        match (&self.slice, self.actual) {
            (Some(s), _) => s.computed_by.clone(),
            (None, None) => "unwritten".into(),
            (None, Some(_)) => "unknown".into(),
        }
    }
}

/// A check's result, with what the report shows beside the verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Checked {
    pub verdict: Verdict,
    /// How the run ended, in words.
    pub run: String,
    /// Instructions executed.
    pub steps: u64,
    /// Results outside the 16-bit word (the simulator would wrap them; exact data keeps
    /// this at 0 for a correct program).
    pub beyond_word: u64,
    /// Programs longer than the simulator's instruction memory (512 per core, 2048 per tile):
    /// run anyway, reported (not a finding: see `docs/puma-findings.md`).
    pub instruction_memory_overflows: Vec<String>,
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

/// Where every element of every output lives: `(tile, address)` per flat element, the last
/// placed piece winning (as `Placement::gather_outputs`), `None` where no piece holds it.
fn output_places(placement: &Placement, net: &PumaNetwork) -> Vec<Vec<Option<(u32, u64)>>> {
    net.outputs
        .iter()
        .map(|o| {
            let n: usize = o.data_shape().iter().product();
            let mut places = vec![None; n];
            let tensor = placement
                .tensors
                .iter()
                .find(|t| t.role == Role::Output && t.name == o.name());
            for p in tensor.map(|t| t.pieces.as_slice()).unwrap_or_default() {
                let (Some(tile), Some(address)) = (p.tile, p.address) else {
                    continue;
                };
                for k in 0..p.length as u64 {
                    if let Some(slot) = places.get_mut((p.first + k) as usize) {
                        *slot = Some((tile, address + k));
                    }
                }
            }
            places
        })
        .collect()
}

/// Checks the compile in `dir` (see the module docs).
pub fn check(
    dir: &Path,
    net: &PumaNetwork,
    data: &NetworkData,
    reference: &Reference,
    options: CheckOptions,
) -> Checked {
    let model = match load_model(dir, &net.model) {
        Ok(m) => m,
        Err(e) => return unloadable("programs", e),
    };
    let placement = match Placement::read(&dir.join(placement_file(&net.model)))
        .and_then(|p| p.check(net).map(|()| p))
    {
        Ok(p) => p,
        Err(e) => return unloadable("placement", e),
    };
    run_and_compare(&model, &placement, net, data, reference, options)
}

/// A machine for `model` with the case's inputs placed; `Err` (what cannot be set up, and
/// what the check calls it) when the model or the placement does not allow it.
fn loaded_machine<'m>(
    model: &'m Model,
    placement: &Placement,
    net: &PumaNetwork,
    data: &NetworkData,
    options: CheckOptions,
) -> Result<Machine<'m>, (&'static str, String)> {
    let machine_options = MachineOptions {
        step_budget: options.step_budget,
        frac_bits: 0,
        quirks: options.quirks,
    };
    let mut machine =
        Machine::new(model, machine_options).map_err(|e| ("machine set-up", e.to_string()))?;
    let writes = placement
        .input_writes(net, data)
        .map_err(|e| ("inputs", e.to_string()))?;
    for w in writes {
        u32::try_from(w.address)
            .map_err(|_| format!("input address {} out of range", w.address))
            .and_then(|a| {
                machine
                    .write_tile_memory(w.tile, a, &w.values, w.counter)
                    .map_err(|e| e.to_string())
            })
            .map_err(|e| ("inputs", e))?;
    }
    Ok(machine)
}

/// Per output, its wrong elements: each flat index with the word read (see [`wrong_words`]).
pub type WrongWords = Vec<Vec<(usize, Word)>>;

/// The wrong elements of every output of one run of `model` (which may be an edited copy of
/// a compile's, `super::repair`), each as its flat index and the word read (with its writer
/// and origin, for slicing): the check's comparison without the verdict. `Err` says why the
/// run cannot be judged this way (it did not finish: a fault, a deadlock; or an output cannot
/// be read).
pub fn wrong_words(
    model: &Model,
    placement: &Placement,
    net: &PumaNetwork,
    data: &NetworkData,
    reference: &Reference,
    options: CheckOptions,
) -> Result<WrongWords, String> {
    run_and_read(model, placement, net, data, reference, options).map(|(_, w)| w)
}

/// [`wrong_words`], with the machine after the run (its tile memories say where every word
/// came from, for following a wrong value back across cores).
pub fn run_and_read<'m>(
    model: &'m Model,
    placement: &Placement,
    net: &PumaNetwork,
    data: &NetworkData,
    reference: &Reference,
    options: CheckOptions,
) -> Result<(Machine<'m>, WrongWords), String> {
    let mut machine = loaded_machine(model, placement, net, data, options)
        .map_err(|(what, e)| format!("{what}: {e}"))?;
    let outcome = machine.run();
    if !matches!(outcome, RunOutcome::Finished) {
        return Err(outcome.to_string());
    }
    let places = output_places(placement, net);
    let wrong = reference
        .outputs
        .iter()
        .enumerate()
        .map(|(o, expected)| {
            let c = compare_output(&machine, &places[o], expected)?;
            c.wrong
                .iter()
                .map(|&(flat, _, _, (tile, address))| {
                    Ok((flat, read_word(&machine, tile, address)?))
                })
                .collect()
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok((machine, wrong))
}

fn run_and_compare(
    model: &Model,
    placement: &Placement,
    net: &PumaNetwork,
    data: &NetworkData,
    reference: &Reference,
    options: CheckOptions,
) -> Checked {
    let mut machine = match loaded_machine(model, placement, net, data, options) {
        Ok(m) => m,
        Err((what, e)) => return unloadable(what, e),
    };
    let outcome = machine.run();
    let overflows = model
        .instruction_memory_overflows()
        .into_iter()
        .map(|(id, len)| match id.core {
            Some(c) => format!("tile {} core {c}: {len} instructions", id.tile),
            None => format!("tile {}: {len} instructions", id.tile),
        })
        .collect();
    let verdict = match &outcome {
        RunOutcome::Finished => compare(&machine, placement, net, reference, options.quirks),
        RunOutcome::Fault(f) => Verdict::Fault {
            kind: variant_name(&format!("{:?}", f.kind)),
            opcode: mnemonic(&f.text),
            at: f.at.to_string(),
            text: f.text.clone(),
            message: f.kind.to_string(),
        },
        RunOutcome::Deadlock(report) => {
            let opcodes: BTreeSet<String> =
                report.blocked.iter().map(|b| mnemonic(&b.text)).collect();
            Verdict::Deadlock {
                opcodes: opcodes.into_iter().collect(),
                report: report.to_string(),
            }
        }
        RunOutcome::OutOfSteps { steps } => Verdict::OutOfSteps { steps: *steps },
    };
    Checked {
        verdict,
        run: outcome.to_string(),
        steps: machine.stats().steps,
        beyond_word: machine.stats().beyond_word,
        instruction_memory_overflows: overflows,
    }
}

/// `ReadNeverWritten { addr: 3 }` → `ReadNeverWritten`.
pub(crate) fn variant_name(debug: &str) -> String {
    debug
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .next()
        .unwrap_or(debug)
        .to_string()
}

/// `load(d1=513, ...)` → `load`.
pub(crate) fn mnemonic(text: &str) -> String {
    text.split('(').next().unwrap_or(text).trim().to_string()
}

/// A wrong element: its flat index, the expected and actual values, and its tile and word.
type WrongElement = (usize, i64, Option<i64>, (u32, u64));

/// One output's comparison.
struct Compared {
    wrong: Vec<WrongElement>,
    known: u64,
    elements: u64,
}

fn compare_output(
    machine: &Machine<'_>,
    places: &[Option<(u32, u64)>],
    expected: &super::reference::OutputTensor,
) -> Result<Compared, String> {
    let mut c = Compared {
        wrong: Vec::new(),
        known: 0,
        elements: places.len() as u64,
    };
    for (flat, ((value, known), place)) in expected
        .value
        .iter()
        .zip(expected.known.iter())
        .zip(places)
        .enumerate()
    {
        if !known {
            continue;
        }
        c.known += 1;
        let Some((tile, address)) = *place else {
            return Err(format!(
                "element {flat} of output `{}` is in no placed piece",
                expected.name
            ));
        };
        let word = read_word(machine, tile, address)?;
        if word.value != Some(*value) {
            c.wrong.push((flat, *value, word.value, (tile, address)));
        }
    }
    Ok(c)
}

fn read_word(machine: &Machine<'_>, tile: u32, address: u64) -> Result<Word, String> {
    let a = u32::try_from(address).map_err(|_| format!("address {address} out of range"))?;
    machine
        .read(tile, a, 1)
        .map_err(|e| e.to_string())
        .map(|w| w[0])
}

fn compare(
    machine: &Machine<'_>,
    placement: &Placement,
    net: &PumaNetwork,
    reference: &Reference,
    quirks: Quirks,
) -> Verdict {
    let places = output_places(placement, net);
    let mut results = Vec::new();
    for (out, expected) in reference.outputs.iter().enumerate() {
        match compare_output(machine, &places[out], expected) {
            Ok(c) => results.push(c),
            Err(message) => {
                return Verdict::Unloadable {
                    what: "outputs".into(),
                    message,
                }
            }
        }
    }
    let total_known: u64 = results.iter().map(|c| c.known).sum();
    let total_wrong: u64 = results.iter().map(|c| c.wrong.len() as u64).sum();
    let elements: u64 = results.iter().map(|c| c.elements).sum();
    if total_known == 0 {
        return Verdict::AllUnknown { elements };
    }
    if total_wrong == 0 {
        return Verdict::Pass {
            compared: total_known,
            unknown: elements - total_known,
        };
    }
    // The wrong output computed earliest: its value's index, then the output's order.
    let first = (0..results.len())
        .filter(|&o| !results[o].wrong.is_empty())
        .min_by_key(|&o| (net.outputs[o].value(), o))
        .expect("some output is wrong");
    let c = &results[first];
    let shape = net.outputs[first].data_shape();
    let (flat, expected, actual, (tile, address)) = c.wrong[0];
    let word = read_word(machine, tile, address).unwrap_or(Word::UNWRITTEN);
    let localized = word
        .origin
        .zip(word.origin_word)
        .and_then(|(origin, at)| slice(machine.model(), origin, at, quirks));
    let describe = |w: Option<Writer>| w.map(|w| w.to_string());
    Verdict::Mismatch(Box::new(Mismatch {
        output: net.outputs[first].name().to_string(),
        value: net.outputs[first].value(),
        op: net.values[net.outputs[first].value()].name().to_string(),
        wrong: c.wrong.len() as u64,
        known: c.known,
        total_wrong,
        total_known,
        index: unflatten(flat, &shape),
        expected,
        actual,
        tile,
        address,
        writer: describe(word.writer),
        origin: describe(word.origin),
        slice: localized,
        sample: c
            .wrong
            .iter()
            .take(16)
            .map(|&(f, e, a, _)| (unflatten(f, &shape), e, a))
            .collect(),
        probe: None,
    }))
}

/// The index of flat element `flat` of a row-major tensor of `shape`.
pub(crate) fn unflatten(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (i, &d) in shape.iter().enumerate().rev() {
        let d = d.max(1);
        index[i] = flat % d;
        flat /= d;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_indices_and_variants() {
        assert_eq!(unflatten(7, &[2, 2, 3]), vec![1, 0, 1]);
        assert_eq!(unflatten(3, &[5]), vec![3]);
        assert_eq!(
            variant_name("ReadNeverWritten { addr: 3 }"),
            "ReadNeverWritten"
        );
        assert_eq!(variant_name("Alu { op: \"mul\" }"), "Alu");
        assert_eq!(mnemonic("load(d1=513, r1=513)"), "load");
    }
}
