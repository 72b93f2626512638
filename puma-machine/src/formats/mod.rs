//! Reading a compiled model: the files the PUMA compiler writes into its working directory
//! for a model named `<model>`:
//!
//! - `<model>-tile<T>.puma`: tile `T`'s program, one instruction per line;
//! - `<model>-tile<T>-core<C>.puma`: core `C` of tile `T` (`C < 8`), one instruction per line;
//! - `<model>-tile<T>-core<C>-mvmu<M>.weights`: MVMU `M < 2` of that core, 128 × 128 values
//!   on one line (`ModelInstance::generateData`).
//!
//! Other files (the compiler's report, `.dot` graphs, other models) are left alone. Tiles are
//! numbered from 0 without gaps and each has all eight core programs, as the compiler writes
//! them. Every file is read through `pimdiff_input` under a documented limit; every refusal is a
//! [`LoadError`] naming the file and, for one bad line, the line.
//!
//! # Limits
//!
//! | limit | value | applies to |
//! |---|---|---|
//! | [`MAX_PROGRAM_FILE_BYTES`] | 64 MiB | one `.puma` file |
//! | [`MAX_WEIGHTS_FILE_BYTES`] | 4 MiB | one `.weights` file (16 Ki values) |
//! | [`MAX_TILES`] | 1024 | tiles of one model (the simulator's node holds 168) |

pub(crate) mod call;
pub mod error;
mod program;
mod weights;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

pub use self::error::{
    ArgProblem, LoadError, LoadErrorKind, ProgramKind, SyntaxProblem, ValueProblem, WeightProblem,
};
pub use self::program::{parse_core_program, parse_tile_program};
pub use self::weights::parse_weights;
use crate::arch::{CORES_PER_TILE, MVMUS_PER_CORE};
use crate::model::{Core, Model, Tile};
use pimdiff_input::Limit;

/// One `.puma` file.
pub const MAX_PROGRAM_FILE_BYTES: Limit = Limit {
    name: "MAX_PROGRAM_FILE_BYTES",
    bytes: 64 << 20,
};

/// One `.weights` file.
pub const MAX_WEIGHTS_FILE_BYTES: Limit = Limit {
    name: "MAX_WEIGHTS_FILE_BYTES",
    bytes: 4 << 20,
};

/// Tiles of one model.
pub const MAX_TILES: u32 = 1024;

/// The files of one tile found in the directory.
#[derive(Default)]
struct TileFiles {
    program: Option<PathBuf>,
    cores: BTreeMap<u32, PathBuf>,
    weights: BTreeMap<(u32, u32), PathBuf>,
}

/// What one file name of the model names.
enum Named {
    Tile(u32),
    Core(u32, u32),
    Weights(u32, u32, u32),
}

/// Loads model `name` from `dir` (see the module doc for the files).
pub fn load_model(dir: &Path, name: &str) -> Result<Model, LoadError> {
    let files = scan(dir, name)?;
    let mut tiles = Vec::with_capacity(files.len());
    for (&t, f) in &files {
        tiles.push(load_tile(dir, name, t, f)?);
    }
    Ok(Model {
        name: name.to_string(),
        tiles,
    })
}

/// The names of the models in `dir`: every `<model>` with a `<model>-tile0.puma`, sorted.
pub fn model_names(dir: &Path) -> Result<Vec<String>, LoadError> {
    let mut names: Vec<String> = read_dir(dir)?
        .into_iter()
        .filter_map(|n| n.strip_suffix("-tile0.puma").map(str::to_string))
        .filter(|n| !n.is_empty())
        .collect();
    names.sort();
    Ok(names)
}

fn dir_error(dir: &Path, kind: LoadErrorKind) -> LoadError {
    LoadError {
        file: dir.to_path_buf(),
        line: None,
        kind,
    }
}

/// The UTF-8 file names of `dir`.
fn read_dir(dir: &Path) -> Result<Vec<String>, LoadError> {
    let entries = fs::read_dir(dir).map_err(|e| dir_error(dir, LoadErrorKind::Io(e)))?;
    let mut names = Vec::new();
    for e in entries {
        let e = e.map_err(|e| dir_error(dir, LoadErrorKind::Io(e)))?;
        if let Ok(n) = e.file_name().into_string() {
            names.push(n);
        }
    }
    Ok(names)
}

/// The model's files by tile, checked for completeness.
fn scan(dir: &Path, model: &str) -> Result<BTreeMap<u32, TileFiles>, LoadError> {
    let prefix = format!("{model}-tile");
    let mut tiles: BTreeMap<u32, TileFiles> = BTreeMap::new();
    for file in read_dir(dir)? {
        let Some(rest) = file.strip_prefix(&prefix) else {
            continue;
        };
        let bad = |problem: String| {
            dir_error(
                dir,
                LoadErrorKind::BadFileName {
                    file: file.clone(),
                    problem,
                },
            )
        };
        let Some(named) = parse_name(rest).map_err(bad)? else {
            continue;
        };
        let path = dir.join(&file);
        let tile_of = |t: u32| {
            if t >= MAX_TILES {
                Err(dir_error(
                    dir,
                    LoadErrorKind::TooManyTiles {
                        found: t as u64 + 1,
                        max: MAX_TILES,
                    },
                ))
            } else {
                Ok(t)
            }
        };
        match named {
            Named::Tile(t) => tiles.entry(tile_of(t)?).or_default().program = Some(path),
            Named::Core(t, c) => {
                tiles.entry(tile_of(t)?).or_default().cores.insert(c, path);
            }
            Named::Weights(t, c, m) => {
                tiles
                    .entry(tile_of(t)?)
                    .or_default()
                    .weights
                    .insert((c, m), path);
            }
        }
    }
    check_complete(dir, model, &tiles)?;
    Ok(tiles)
}

fn check_complete(
    dir: &Path,
    model: &str,
    tiles: &BTreeMap<u32, TileFiles>,
) -> Result<(), LoadError> {
    let last = tiles.keys().next_back().copied();
    if tiles.get(&0).is_none_or(|t| t.program.is_none()) {
        return Err(dir_error(
            dir,
            LoadErrorKind::NoModel {
                model: model.to_string(),
            },
        ));
    }
    let last = last.unwrap_or(0);
    for t in 0..=last {
        let Some(files) = tiles.get(&t).filter(|f| f.program.is_some()) else {
            return Err(dir_error(dir, LoadErrorKind::MissingTile { tile: t, last }));
        };
        for c in 0..CORES_PER_TILE {
            if !files.cores.contains_key(&c) {
                return Err(dir_error(
                    dir,
                    LoadErrorKind::MissingCore {
                        file: format!("{model}-tile{t}-core{c}.puma"),
                        cores: CORES_PER_TILE,
                    },
                ));
            }
        }
    }
    Ok(())
}

/// A decimal index as the compiler writes it (no sign, no leading zero), and the rest.
fn index(s: &str) -> Option<(u32, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let digits = &s[..end];
    if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
        return None;
    }
    Some((digits.parse().ok()?, &s[end..]))
}

/// What the part of a file name after `<model>-tile` names: `Ok(None)` for a file that is not
/// one of the model's (another suffix), an error for one that is but names something
/// impossible.
fn parse_name(rest: &str) -> Result<Option<Named>, String> {
    let Some((t, rest)) = index(rest) else {
        return if rest.ends_with(".puma") || rest.ends_with(".weights") {
            Err("the tile number is not a decimal number without leading zeros".into())
        } else {
            Ok(None)
        };
    };
    if rest == ".puma" {
        return Ok(Some(Named::Tile(t)));
    }
    let Some(rest) = rest.strip_prefix("-core") else {
        return Ok(None);
    };
    let in_range = |what: &str, i: u32, n: u32| {
        if i < n {
            Ok(i)
        } else {
            Err(format!("{what} {i} does not exist (there are {n})"))
        }
    };
    let Some((c, rest)) = index(rest) else {
        return Err("the core number is not a decimal number without leading zeros".into());
    };
    if rest == ".puma" {
        return Ok(Some(Named::Core(t, in_range("core", c, CORES_PER_TILE)?)));
    }
    let Some(rest) = rest.strip_prefix("-mvmu") else {
        return Ok(None);
    };
    match index(rest) {
        Some((m, ".weights")) => Ok(Some(Named::Weights(
            t,
            in_range("core", c, CORES_PER_TILE)?,
            in_range("MVMU", m, MVMUS_PER_CORE)?,
        ))),
        Some(_) => Ok(None),
        None => Err("the MVMU number is not a decimal number without leading zeros".into()),
    }
}

/// Reads a text file under `limit`, naming it in any error.
fn read_text(path: &Path, limit: Limit) -> Result<String, LoadError> {
    let error = |kind| LoadError {
        file: path.to_path_buf(),
        line: None,
        kind,
    };
    let bytes = pimdiff_input::read(path, limit).map_err(|e| error(e.into()))?;
    String::from_utf8(bytes).map_err(|e| {
        error(LoadErrorKind::NotUtf8 {
            offset: e.utf8_error().valid_up_to(),
        })
    })
}

/// One tile's programs and weights (`scan` checked that every file is there; a file that
/// vanished since is an I/O error of its own).
fn load_tile(dir: &Path, model: &str, t: u32, files: &TileFiles) -> Result<Tile, LoadError> {
    let missing_core = |c: u32| {
        dir_error(
            dir,
            LoadErrorKind::MissingCore {
                file: format!("{model}-tile{t}-core{c}.puma"),
                cores: CORES_PER_TILE,
            },
        )
    };
    let tile_path = files
        .program
        .clone()
        .unwrap_or_else(|| dir.join(format!("{model}-tile{t}.puma")));
    let program = parse_tile_program(&read_text(&tile_path, MAX_PROGRAM_FILE_BYTES)?, &tile_path)?;
    let mut cores = Vec::with_capacity(CORES_PER_TILE as usize);
    for c in 0..CORES_PER_TILE {
        let path = files.cores.get(&c).ok_or_else(|| missing_core(c))?;
        let text = read_text(path, MAX_PROGRAM_FILE_BYTES)?;
        let mut core = Core::new(parse_core_program(&text, path)?);
        for m in 0..MVMUS_PER_CORE {
            if let Some(wpath) = files.weights.get(&(c, m)) {
                let text = read_text(wpath, MAX_WEIGHTS_FILE_BYTES)?;
                core.mvmus[m as usize] = Some(parse_weights(&text, wpath)?);
            }
        }
        cores.push(core);
    }
    Ok(Tile { program, cores })
}
