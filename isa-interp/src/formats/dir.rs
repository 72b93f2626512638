//! pimsim-nn's directory form: `config.json` (the config object) and one `core_<id>.json`
//! (that core's instruction array) per core.
//!
//! Every file goes through the bounded reader (`pimdiff_input`: `config.json` up to
//! `MAX_CONFIG_BYTES`, core files up to `MAX_PROGRAM_BYTES`; an empty file is an error).
//! Reading accepts a `config.json` that is either the config object itself or a whole
//! `{"config": {...}}` wrapper; a core without a file is empty; a `core_<N>.json` with
//! `N >= core_cnt` (or a non-canonical `N` such as `core_07.json`) is an error; other files and
//! subdirectories (a bundle's `xbars/`, its io manifest) are ignored.
//!
//! Writing follows design.md's "Timing the same bundle in pimsim-nn": every core id
//! `0..core_cnt` gets a file (an idle core `[]`), the config has an `array_group_map` entry for
//! every core when the program carries a map, and the instruction spellings are those of
//! [`super::json::write_inst`]. Stale `core_<N>.json` files with `N >= core_cnt` left by an
//! earlier write are removed, so the directory always reads back as the program written.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::Path;

use pimdiff_input::limits::{MAX_CONFIG_BYTES, MAX_PROGRAM_BYTES};

use crate::program::Program;

use super::config::{assemble, parse_config, parse_core_key, write_config};
use super::error::{CoreKeyProblem, LoadError, LoadErrorKind};
use super::json::{json_error, read_core_slice, write_core};

/// Read a program from a directory.
pub fn read_program_dir(dir: &Path) -> Result<Program, LoadError> {
    let config_path = dir.join("config.json");
    let config_bytes = pimdiff_input::read(&config_path, MAX_CONFIG_BYTES)
        .map_err(|e| LoadError::from(e).in_file(&config_path))?;
    let value: serde_json::Value = serde_json::from_slice(&config_bytes)
        .map_err(|e| LoadError::new(json_error(&e)).in_file(&config_path))?;
    let value = match value.get("config") {
        Some(inner) if value.get("core_cnt").is_none() => inner.clone(),
        _ => value,
    };
    let config = parse_config(&value).map_err(|k| LoadError::new(k).in_file(&config_path))?;

    let entries =
        fs::read_dir(dir).map_err(|e| LoadError::new(LoadErrorKind::Io(e)).in_file(dir))?;
    let mut files = BTreeMap::new();
    for entry in entries {
        let entry = entry.map_err(|e| LoadError::new(LoadErrorKind::Io(e)).in_file(dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        if !stem.starts_with("core_") {
            continue;
        }
        let path = entry.path();
        let key_error = |problem| {
            LoadError::new(LoadErrorKind::CoreKey {
                key: name.to_string(),
                problem,
            })
            .in_file(&path)
        };
        let Some(core) = parse_core_key(stem, "core_") else {
            return Err(key_error(CoreKeyProblem::NotACoreKey));
        };
        if core >= config.core_cnt {
            return Err(key_error(CoreKeyProblem::BeyondCoreCount {
                core,
                core_cnt: config.core_cnt,
            }));
        }
        files.insert(core, path);
    }

    let mut cores = BTreeMap::new();
    for (core, path) in files {
        let bytes = pimdiff_input::read(&path, MAX_PROGRAM_BYTES)
            .map_err(|e| LoadError::from(e).in_file(&path))?;
        let insts = read_core_slice(&bytes, core).map_err(|e| e.in_file(&path))?;
        cores.insert(core, insts);
    }
    assemble(config, cores).map_err(|k| LoadError::new(k).in_file(dir))
}

/// Prefix an I/O error with the path it concerns.
fn named(path: &Path) -> impl Fn(io::Error) -> io::Error + '_ {
    move |e| io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Write `program` as a directory (created if missing). Errors name the file being written.
pub fn write_program_dir(program: &Program, dir: &Path) -> io::Result<()> {
    let config_path = dir.join("config.json");
    // The directory is made only when the first file cannot be created for want of it: a
    // compile server writes into a directory that exists, case after case.
    let config = match fs::File::create(&config_path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(dir).map_err(named(dir))?;
            fs::File::create(&config_path)
        }
        created => created,
    };
    let mut w = io::BufWriter::new(config.map_err(named(&config_path))?);
    write_config(program, &mut w)
        .and_then(|()| w.write_all(b"\n"))
        .and_then(|()| w.flush())
        .map_err(named(&config_path))?;

    for (core, insts) in program.cores.iter().enumerate() {
        let path = dir.join(format!("core_{core}.json"));
        let file = fs::File::create(&path).map_err(named(&path))?;
        let mut w = io::BufWriter::with_capacity(1 << 16, file);
        write_core(insts, &mut w)
            .and_then(|()| w.write_all(b"\n"))
            .and_then(|()| w.flush())
            .map_err(named(&path))?;
    }

    for entry in fs::read_dir(dir).map_err(named(dir))? {
        let entry = entry.map_err(named(dir))?;
        let name = entry.file_name();
        let stale = name
            .to_str()
            .and_then(|n| n.strip_suffix(".json"))
            .and_then(|stem| parse_core_key(stem, "core_"))
            .is_some_and(|core| core as usize >= program.cores.len());
        if stale {
            let path = entry.path();
            fs::remove_file(&path).map_err(named(&path))?;
        }
    }
    Ok(())
}
