//! Known miscompilations injected into a compile's output, so that tests can see the hunt
//! catch them and name the instruction (the set-up's sanity check; never used by a real hunt).
//!
//! - [`Injection::LoadAddress`]: a load reads the wrong words. On the first core (in tile and
//!   core order) with two loads of the same width that read words its tile received, whose
//!   registers are copied into MVMU inputs and whose addresses come from a `set` of their own,
//!   the two addresses are exchanged: each load reads the other's words. (A load shifted onto words nothing else
//!   reads would break the tile memory's valid/counter protocol and show as a fault or a
//!   deadlock at some other instruction; exchanged, every word is still read as often as
//!   announced, and only the values are wrong.)
//! - [`Injection::WeightRows`]: the first MVMU weights file (in name order) with two different
//!   rows gets those two rows exchanged: the MVMU computes two outputs from each other's
//!   weights.
//!
//! Each returns what it changed, for the test to check the localization against.

use std::path::{Path, PathBuf};

use pimdiff_puma::arch::{MVMUS_PER_CORE, MVMU_DIM};
use pimdiff_puma::formats::{parse_core_program, parse_tile_program};
use pimdiff_puma::{CoreInst, TileInst};
use serde::{Deserialize, Serialize};

/// An injected miscompilation (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Injection {
    LoadAddress,
    WeightRows,
}

/// What an injection changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Injected {
    /// The core program file and the pcs of the two loads whose addresses were exchanged.
    LoadAddress { file: PathBuf, loads: [u32; 2] },
    /// The weights file and the two rows exchanged.
    WeightRows { file: PathBuf, rows: [u32; 2] },
}

impl Injection {
    pub const ALL: [Injection; 2] = [Injection::LoadAddress, Injection::WeightRows];

    pub fn name(self) -> &'static str {
        match self {
            Injection::LoadAddress => "load-address",
            Injection::WeightRows => "weight-rows",
        }
    }

    pub fn from_name(name: &str) -> Option<Injection> {
        Injection::ALL.into_iter().find(|i| i.name() == name)
    }

    /// Applies the injection to the compile in `dir` (model `model`); `None` when the compile
    /// has no place for it.
    pub fn apply(self, dir: &Path, model: &str) -> std::io::Result<Option<Injected>> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{model}-tile")))
            })
            .collect();
        files.sort();
        for file in files {
            let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let done = match self {
                Injection::LoadAddress if name.contains("-core") && name.ends_with(".puma") => {
                    let tile_program = name.split("-core").next().unwrap_or(name);
                    let received = received_words(&dir.join(format!("{tile_program}.puma")));
                    exchange_loads(&file, &received)?
                }
                Injection::WeightRows if name.ends_with(".weights") => exchange_rows(&file)?,
                _ => None,
            };
            if done.is_some() {
                return Ok(done);
            }
        }
        Ok(None)
    }
}

/// The loads of `program` whose registers feed MVMU inputs through a `copy`, with the pc of
/// the `set` that gives each its address: `(load pc, set pc, width)`.
fn feeding_loads(program: &[CoreInst]) -> Vec<(usize, usize, u32)> {
    let mut out = Vec::new();
    for (pc, inst) in program.iter().enumerate() {
        let CoreInst::Load {
            d1,
            r1,
            load_width,
            vec,
        } = *inst
        else {
            continue;
        };
        let width = load_width * vec;
        let set = program[..pc].iter().rposition(|i| match *i {
            CoreInst::Set { d1: d, vec, .. } => d <= r1 && r1 < d + vec,
            CoreInst::Load { d1: d, .. } | CoreInst::Copy { d1: d, .. } => d == r1,
            CoreInst::Alu { d1: d, .. } | CoreInst::Alui { d1: d, .. } => d == r1,
            _ => false,
        });
        let Some(set) = set.filter(|&s| matches!(program[s], CoreInst::Set { vec: 1, .. })) else {
            continue;
        };
        let feeds = feeds_mvmu(&program[pc + 1..], d1, width);
        if feeds {
            out.push((pc, set, width));
        }
    }
    out
}

/// Whether registers `start .. start + len`, as loaded, are copied into MVMU inputs before
/// anything writes over them.
fn feeds_mvmu(after: &[CoreInst], start: u32, len: u32) -> bool {
    let inputs = 0..MVMU_DIM * MVMUS_PER_CORE;
    let overlaps = |d: u32, n: u32| d < start + len && start < d + n;
    for inst in after {
        match *inst {
            CoreInst::Copy { d1, r1, vec, .. } if inputs.contains(&d1) && overlaps(r1, vec) => {
                return true;
            }
            CoreInst::Set { d1, vec, .. }
            | CoreInst::Copy { d1, vec, .. }
            | CoreInst::Alu { d1, vec, .. }
            | CoreInst::Alui { d1, vec, .. }
                if overlaps(d1, vec) =>
            {
                return false;
            }
            CoreInst::Load {
                d1,
                load_width,
                vec,
                ..
            } if overlaps(d1, load_width * vec) => return false,
            _ => {}
        }
    }
    false
}

/// The tile-memory words a tile program's receives write (other tiles' data: inputs and
/// values, never the compiler's zero padding).
fn received_words(tile_program: &Path) -> Vec<std::ops::Range<i64>> {
    let Ok(text) = std::fs::read_to_string(tile_program) else {
        return Vec::new();
    };
    let Ok(program) = parse_tile_program(&text, tile_program) else {
        return Vec::new();
    };
    program
        .iter()
        .filter_map(|i| match *i {
            TileInst::Receive {
                mem_addr,
                receive_width,
                vec,
                ..
            } => Some(i64::from(mem_addr)..i64::from(mem_addr) + i64::from(receive_width * vec)),
            _ => None,
        })
        .collect()
}

fn exchange_loads(
    file: &Path,
    received: &[std::ops::Range<i64>],
) -> std::io::Result<Option<Injected>> {
    let text = std::fs::read_to_string(file)?;
    let Ok(program) = parse_core_program(&text, file) else {
        return Ok(None);
    };
    // Loads of received words: exchanging two loads of the compiler's zero padding would
    // change nothing.
    let loads: Vec<(usize, usize, u32)> = feeding_loads(&program)
        .into_iter()
        .filter(|&(_, set, _)| {
            matches!(program[set], CoreInst::Set { imm, .. } if received.iter().any(|r| r.contains(&imm)))
        })
        .collect();
    let pair = loads.iter().enumerate().find_map(|(i, a)| {
        loads[i + 1..]
            .iter()
            .find(|b| {
                b.2 == a.2
                    && matches!((program[a.1], program[b.1]),
                    (CoreInst::Set { imm: x, .. }, CoreInst::Set { imm: y, .. }) if x != y)
            })
            .map(|b| (*a, *b))
    });
    let Some(((load_a, set_a, _), (load_b, set_b, _))) = pair else {
        return Ok(None);
    };
    let mut program = program;
    let (CoreInst::Set { imm: a, .. }, CoreInst::Set { imm: b, .. }) =
        (program[set_a], program[set_b])
    else {
        return Ok(None);
    };
    for (pc, imm) in [(set_a, b), (set_b, a)] {
        if let CoreInst::Set { imm: slot, .. } = &mut program[pc] {
            *slot = imm;
        }
    }
    let text: String = program.iter().map(|i| format!("{i}\n")).collect();
    std::fs::write(file, text)?;
    Ok(Some(Injected::LoadAddress {
        file: file.to_path_buf(),
        loads: [load_a as u32, load_b as u32],
    }))
}

fn exchange_rows(file: &Path) -> std::io::Result<Option<Injected>> {
    let text = std::fs::read_to_string(file)?;
    let mut tokens: Vec<&str> = text.split_ascii_whitespace().collect();
    let dim = MVMU_DIM as usize;
    if tokens.len() != dim * dim {
        return Ok(None);
    }
    let row = |t: &[&str], r: usize| -> Vec<f64> {
        t[r * dim..(r + 1) * dim]
            .iter()
            .map(|v| v.parse().unwrap_or(0.0))
            .collect()
    };
    let pair = (0..dim).find_map(|a| {
        let ra = row(&tokens, a);
        (a + 1..dim)
            .find(|&b| row(&tokens, b) != ra)
            .map(|b| (a, b))
    });
    let Some((a, b)) = pair else {
        return Ok(None);
    };
    for k in 0..dim {
        tokens.swap(a * dim + k, b * dim + k);
    }
    let mut out = tokens.join(" ");
    out.push(' ');
    std::fs::write(file, out)?;
    Ok(Some(Injected::WeightRows {
        file: file.to_path_buf(),
        rows: [a as u32, b as u32],
    }))
}
