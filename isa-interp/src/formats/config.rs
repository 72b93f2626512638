//! The `config` object (or a directory's `config.json`): core count, how `mvmul`'s `group`
//! is read, and architecture hints.
//!
//! Read:
//! - `core_cnt` (required, at most [`MAX_CORES`]);
//! - `array_group_map` `{"core<N>": [arrays per group, ...]}` → [`GroupSpec::ArrayGroupMap`],
//!   normalised to one list per core (cores without an entry get an empty list);
//! - otherwise PIMCOMP-NN's `xbar_size` `[rows, cols]`, `xbar_array_count`, `cell_precision`,
//!   `adc_count` (any of them) → [`GroupSpec::ArrayCount`], and they fill the hints;
//! - otherwise [`GroupSpec::ExportOnly`];
//! - our own `arch` object, every key optional: `arrays_per_core`, `array_rows`, `array_cols`,
//!   `local_memory_bytes`, `mesh` `[rows, cols]`, `frac_bits`, `cell_precision`, `adc_count`
//!   (hints; where PIMCOMP-NN's fields state the same parameter the two must agree), and
//!   `group_reading: "array_count"`, which selects [`GroupSpec::ArrayCount`] when no
//!   PIMCOMP-NN field says so (it is written only then, so that every program round-trips).
//!
//! Other keys are ignored (pimsim-nn's configs carry many).

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde_json::{Map, Value};

use crate::inst::Inst;
use crate::program::{ArchHints, GroupSpec, Program};

use super::error::{CoreKeyProblem, LoadErrorKind};
use super::problem::FieldProblem;

/// The largest `core_cnt` accepted: far above any real chip, low enough that a corrupt count
/// cannot make the loader allocate gigabytes of empty cores.
pub const MAX_CORES: u32 = 1 << 16;

/// What a config says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Config {
    pub core_cnt: u32,
    pub groups: GroupSpec,
    pub arch: ArchHints,
}

/// `N` when `key` is `<prefix><N>` with `N` in canonical decimal (no sign, no leading zero).
pub(crate) fn parse_core_key(key: &str, prefix: &str) -> Option<u32> {
    let digits = key.strip_prefix(prefix)?;
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    digits.parse().ok()
}

fn err(field: impl Into<String>, problem: FieldProblem) -> LoadErrorKind {
    LoadErrorKind::Config {
        field: field.into(),
        problem,
    }
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a float",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn as_u32(v: &Value, field: &str) -> Result<u32, LoadErrorKind> {
    const EXPECTED: &str = "a non-negative integer";
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => {
            let text = n.to_string();
            n.as_u64()
                .and_then(|u| u32::try_from(u).ok())
                .ok_or_else(|| {
                    err(
                        field,
                        FieldProblem::OutOfRange {
                            expected: "an integer in 0..=4294967295",
                            found: text,
                        },
                    )
                })
        }
        other => Err(err(
            field,
            FieldProblem::WrongType {
                expected: EXPECTED,
                found: type_of(other),
            },
        )),
    }
}

fn as_pair(v: &Value, field: &str) -> Result<[u32; 2], LoadErrorKind> {
    match v {
        Value::Array(items) if items.len() == 2 => Ok([
            as_u32(&items[0], &format!("{field}[0]"))?,
            as_u32(&items[1], &format!("{field}[1]"))?,
        ]),
        Value::Array(items) => Err(err(
            field,
            FieldProblem::OutOfRange {
                expected: "an array of 2 integers",
                found: format!("{} elements", items.len()),
            },
        )),
        other => Err(err(
            field,
            FieldProblem::WrongType {
                expected: "an array of 2 integers",
                found: type_of(other),
            },
        )),
    }
}

fn as_object<'v>(v: &'v Value, field: &str) -> Result<&'v Map<String, Value>, LoadErrorKind> {
    v.as_object().ok_or_else(|| {
        err(
            field,
            FieldProblem::WrongType {
                expected: "an object",
                found: type_of(v),
            },
        )
    })
}

/// Set a hint, checking it agrees with a value already stated elsewhere in the config.
fn merge(
    slot: &mut Option<u32>,
    value: u32,
    field: &str,
    other: &'static str,
) -> Result<(), LoadErrorKind> {
    match *slot {
        Some(old) if old != value => Err(err(
            field,
            FieldProblem::Disagree {
                other,
                value: value as i64,
                other_value: old as i64,
            },
        )),
        _ => {
            *slot = Some(value);
            Ok(())
        }
    }
}

/// Interpret a config object.
pub(crate) fn parse_config(v: &Value) -> Result<Config, LoadErrorKind> {
    let obj = as_object(v, "config")?;
    let core_cnt = match obj.get("core_cnt") {
        None => return Err(err("core_cnt", FieldProblem::Missing)),
        Some(v) => as_u32(v, "core_cnt")?,
    };
    if core_cnt > MAX_CORES {
        let expected = "at most 65536 cores";
        return Err(err(
            "core_cnt",
            FieldProblem::OutOfRange {
                expected,
                found: core_cnt.to_string(),
            },
        ));
    }
    let mut arch = ArchHints::default();
    let pimcomp = pimcomp_fields(obj, &mut arch)?;
    let count_marker = match obj.get("arch") {
        Some(a) => our_arch(as_object(a, "arch")?, &mut arch)?,
        None => false,
    };
    let groups = if let Some(m) = obj.get("array_group_map") {
        GroupSpec::ArrayGroupMap(group_map(as_object(m, "array_group_map")?, core_cnt)?)
    } else if pimcomp || count_marker {
        GroupSpec::ArrayCount
    } else {
        GroupSpec::ExportOnly
    };
    Ok(Config {
        core_cnt,
        groups,
        arch,
    })
}

/// PIMCOMP-NN's crossbar fields into `arch`; whether any was present.
fn pimcomp_fields(obj: &Map<String, Value>, arch: &mut ArchHints) -> Result<bool, LoadErrorKind> {
    let mut pimcomp = false;
    if let Some(v) = obj.get("xbar_size") {
        let [rows, cols] = as_pair(v, "xbar_size")?;
        arch.array_rows = Some(rows);
        arch.array_cols = Some(cols);
        pimcomp = true;
    }
    for (key, slot) in [
        ("xbar_array_count", &mut arch.arrays_per_core),
        ("cell_precision", &mut arch.cell_precision),
        ("adc_count", &mut arch.adc_count),
    ] {
        if let Some(v) = obj.get(key) {
            *slot = Some(as_u32(v, key)?);
            pimcomp = true;
        }
    }
    Ok(pimcomp)
}

/// Our `arch` object into `arch` (agreeing with PIMCOMP-NN's fields); whether it carries the
/// `group_reading: "array_count"` marker.
fn our_arch(a: &Map<String, Value>, arch: &mut ArchHints) -> Result<bool, LoadErrorKind> {
    for (key, slot, pimcomp_name) in [
        (
            "arrays_per_core",
            &mut arch.arrays_per_core,
            "xbar_array_count",
        ),
        ("array_rows", &mut arch.array_rows, "xbar_size[0]"),
        ("array_cols", &mut arch.array_cols, "xbar_size[1]"),
        ("local_memory_bytes", &mut arch.local_memory_bytes, ""),
        ("frac_bits", &mut arch.frac_bits, ""),
        ("cell_precision", &mut arch.cell_precision, "cell_precision"),
        ("adc_count", &mut arch.adc_count, "adc_count"),
    ] {
        if let Some(v) = a.get(key) {
            let field = format!("arch.{key}");
            merge(slot, as_u32(v, &field)?, &field, pimcomp_name)?;
        }
    }
    if let Some(v) = a.get("mesh") {
        arch.mesh = Some(as_pair(v, "arch.mesh")?);
    }
    match a.get("group_reading") {
        None => Ok(false),
        Some(Value::String(s)) if s == "array_count" => Ok(true),
        Some(Value::String(s)) => Err(err(
            "arch.group_reading",
            FieldProblem::OutOfRange {
                expected: "\"array_count\"",
                found: format!("\"{s}\""),
            },
        )),
        Some(other) => Err(err(
            "arch.group_reading",
            FieldProblem::WrongType {
                expected: "a string",
                found: type_of(other),
            },
        )),
    }
}

/// `array_group_map`, one list per core (empty where the map has no entry).
fn group_map(m: &Map<String, Value>, core_cnt: u32) -> Result<Vec<Vec<u32>>, LoadErrorKind> {
    let mut map = vec![Vec::new(); core_cnt as usize];
    for (key, list) in m {
        let field = format!("array_group_map.{key}");
        let Some(core) = parse_core_key(key, "core") else {
            let problem = FieldProblem::OutOfRange {
                expected: "a key \"core<N>\"",
                found: format!("\"{key}\""),
            };
            return Err(err(field, problem));
        };
        if core >= core_cnt {
            let problem = FieldProblem::OutOfRange {
                expected: "a core below core_cnt",
                found: core.to_string(),
            };
            return Err(err(field, problem));
        }
        let Value::Array(items) = list else {
            let problem = FieldProblem::WrongType {
                expected: "an array of integers",
                found: type_of(list),
            };
            return Err(err(field, problem));
        };
        map[core as usize] = items
            .iter()
            .enumerate()
            .map(|(i, v)| as_u32(v, &format!("{field}[{i}]")))
            .collect::<Result<_, _>>()?;
    }
    Ok(map)
}

/// Write `program`'s config object (compact, one line). Every core `0..core_cnt` gets an
/// `array_group_map` entry (pimsim-nn needs one for each core that has a file); map entries
/// beyond `core_cnt` describe no core and are not written.
pub(crate) fn write_config<W: Write + ?Sized>(program: &Program, w: &mut W) -> io::Result<()> {
    let core_cnt = program.cores.len();
    let h = &program.arch;
    let mut obj = Map::new();
    obj.insert("core_cnt".into(), core_cnt.into());
    let mut pimcomp_written = false;
    match &program.groups {
        GroupSpec::ExportOnly => {}
        GroupSpec::ArrayGroupMap(map) => {
            let mut m = Map::new();
            for core in 0..core_cnt {
                let list = map.get(core).cloned().unwrap_or_default();
                m.insert(format!("core{core}"), list.into());
            }
            obj.insert("array_group_map".into(), Value::Object(m));
        }
        GroupSpec::ArrayCount => {
            if let (Some(r), Some(c)) = (h.array_rows, h.array_cols) {
                obj.insert("xbar_size".into(), vec![r, c].into());
                pimcomp_written = true;
            }
            for (key, v) in [
                ("xbar_array_count", h.arrays_per_core),
                ("cell_precision", h.cell_precision),
                ("adc_count", h.adc_count),
            ] {
                if let Some(v) = v {
                    obj.insert(key.into(), v.into());
                    pimcomp_written = true;
                }
            }
        }
    }
    let mut a = Map::new();
    for (key, v) in [
        ("arrays_per_core", h.arrays_per_core),
        ("array_rows", h.array_rows),
        ("array_cols", h.array_cols),
        ("local_memory_bytes", h.local_memory_bytes),
        ("frac_bits", h.frac_bits),
        ("cell_precision", h.cell_precision),
        ("adc_count", h.adc_count),
    ] {
        if let Some(v) = v {
            a.insert(key.into(), v.into());
        }
    }
    if let Some(mesh) = h.mesh {
        a.insert("mesh".into(), mesh.to_vec().into());
    }
    if program.groups == GroupSpec::ArrayCount && !pimcomp_written {
        a.insert("group_reading".into(), "array_count".into());
    }
    if !a.is_empty() {
        obj.insert("arch".into(), Value::Object(a));
    }
    serde_json::to_writer(&mut *w, &Value::Object(obj)).map_err(io::Error::from)
}

/// Put the parsed cores into a program of `config.core_cnt` cores.
pub(crate) fn assemble(
    config: Config,
    cores: BTreeMap<u32, Vec<Inst>>,
) -> Result<Program, LoadErrorKind> {
    let core_cnt = config.core_cnt;
    let mut out = vec![Vec::new(); core_cnt as usize];
    for (core, insts) in cores {
        if core >= core_cnt {
            let problem = CoreKeyProblem::BeyondCoreCount { core, core_cnt };
            return Err(LoadErrorKind::CoreKey {
                key: format!("core{core}"),
                problem,
            });
        }
        out[core as usize] = insts;
    }
    Ok(Program {
        cores: out,
        groups: config.groups,
        arch: config.arch,
    })
}
