//! The crossbar export: every core's array cells and array-group table
//! (`core_<i>.npy` + `core_<i>.json`, isa.md "The crossbar export").
//!
//! The compiler writes it before lowering forgets the weights; the machine's only source of
//! weights is this value (or, for programs that carry just an `array_group_map`, full-size
//! groups of zero or seeded-random cells).

use std::collections::BTreeMap;

use ndarray::Array3;

/// All cores' crossbar contents. A core absent from the map has no groups.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrossbarExport {
    pub cores: BTreeMap<u32, CoreCrossbars>,
}

/// One core's arrays and groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreCrossbars {
    /// Informational weight width (`mvmul`'s own `mbiw` is the one checked).
    pub mbiw: u32,
    /// `[arrays_per_core, array_rows, array_cols]`; cell `[a, r, c]` is row `r`, column `c`
    /// of array `a`.
    pub cells: Array3<i32>,
    pub groups: Vec<ArrayGroup>,
}

/// One array group: arrays side by side, fed the same `rows`-element input, producing
/// `cols` outputs. `W[r][j] = cells[arrays[j / array_cols], r, j % array_cols]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayGroup {
    pub group: u32,
    pub arrays: Vec<u32>,
    pub rows: u32,
    pub cols: u32,
}

// ---------------------------------------------------------------------------------------------
// Reading and writing the export directory.

use std::path::{Path, PathBuf};

use ndarray::ArrayD;
use ndarray::ShapeBuilder;
use ndarray_npy::write_npy;
use pimdiff_input::npy::read_header;
use serde::{Deserialize, Serialize};

/// Why a crossbar export directory could not be read. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum XbarError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a valid .npy of int8, int16 or int32 cells: {message}")]
    Npy { path: PathBuf, message: String },
    #[error("{path}: cells must have 3 dimensions [arrays_per_core, array_rows, array_cols], found shape {shape:?}")]
    NpyShape { path: PathBuf, shape: Vec<usize> },
    /// The bounded reader refused the file (empty, or above its limit; `pimdiff_input`).
    #[error("{path}: {source}")]
    Input {
        path: PathBuf,
        source: pimdiff_input::InputError,
    },
    #[error("{path}: invalid JSON: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path}: field `{field}`: {message}")]
    Field {
        path: PathBuf,
        field: &'static str,
        message: String,
    },
    /// `core_<i>.json` does not match its type (`crate::typed`): the field and what was
    /// expected.
    #[error("{path}: {source}")]
    Typed {
        path: PathBuf,
        source: crate::typed::FieldError,
    },
    #[error("{path}: the matching {missing} is missing")]
    MissingPair { path: PathBuf, missing: String },
}

/// `xbars/core_<i>.json` as stored: one core's array groups (its cells are `core_<i>.npy`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "xbars/core_<i>.json of a pimdiff bundle")]
pub struct CoreFile {
    /// The core, `i` of the file name.
    pub core: u32,
    /// Informational weight width in bits (1..=32); `mvmul`'s own `mbiw` is the one checked.
    pub mbiw: u32,
    /// The array groups `mvmul` names by number.
    pub groups: Vec<GroupFile>,
}

/// One array group: arrays side by side, fed the same `rows`-element input, giving `cols`
/// outputs; `W[r][j] = cells[arrays[j / array_cols], r, j % array_cols]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupFile {
    /// The number `mvmul`'s `group` names; unique on the core.
    pub group: u32,
    /// The core's arrays (indices into the first axis of `core_<i>.npy`), in column order.
    pub arrays: Vec<u32>,
    /// Input elements (at most `array_rows`).
    pub rows: u32,
    /// Output elements (at most `len(arrays) * array_cols`).
    pub cols: u32,
}

/// Reads every `core_<i>.json` + `core_<i>.npy` pair in `dir`. Other files are ignored; a
/// JSON without its `.npy` (or the reverse) is an error, as is a `core` field that does not
/// match the file name. Consistency with an architecture is checked by `Machine::new`.
pub fn read_export_dir(dir: &Path) -> Result<CrossbarExport, XbarError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| XbarError::Io { path, source }
    };
    // The listing says which files are there: core ids, and whether each has its pair.
    let mut ids = std::collections::BTreeSet::new();
    let mut names = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name.strip_prefix("core_") else {
            continue;
        };
        let stem = rest
            .strip_suffix(".json")
            .or_else(|| rest.strip_suffix(".npy"));
        if let Some(id) = stem.and_then(|s| s.parse::<u32>().ok()) {
            ids.insert(id);
            names.insert(name.to_string());
        }
    }
    let mut export = CrossbarExport::default();
    for id in ids {
        let json_path = dir.join(format!("core_{id}.json"));
        let npy_path = dir.join(format!("core_{id}.npy"));
        for (have, missing) in [(&json_path, &npy_path), (&npy_path, &json_path)] {
            let listed = |p: &Path| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| names.contains(n))
            };
            if !listed(missing) {
                return Err(XbarError::MissingPair {
                    path: have.clone(),
                    missing: missing
                        .file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned(),
                });
            }
        }
        let text = read(&json_path, pimdiff_input::limits::MAX_XBAR_JSON_BYTES)?;
        let file: CoreFile =
            crate::typed::read_typed(&text).map_err(|source| XbarError::Typed {
                path: json_path.clone(),
                source,
            })?;
        if file.core != id {
            return Err(XbarError::Field {
                path: json_path,
                field: "core",
                message: format!("says {} but the file is named for core {id}", file.core),
            });
        }
        if !(1..=32).contains(&file.mbiw) {
            return Err(XbarError::Field {
                path: json_path,
                field: "mbiw",
                message: format!("{} is not a width in 1..=32", file.mbiw),
            });
        }
        let cells = read_cells(&npy_path)?;
        let groups = file
            .groups
            .into_iter()
            .map(|g| ArrayGroup {
                group: g.group,
                arrays: g.arrays,
                rows: g.rows,
                cols: g.cols,
            })
            .collect();
        export.cores.insert(
            id,
            CoreCrossbars {
                mbiw: file.mbiw,
                cells,
                groups,
            },
        );
    }
    Ok(export)
}

/// A file through the bounded reader; an operating-system error as [`XbarError::Io`].
fn read(path: &Path, limit: pimdiff_input::Limit) -> Result<Vec<u8>, XbarError> {
    pimdiff_input::read(path, limit).map_err(|e| {
        let path = path.to_path_buf();
        match e {
            pimdiff_input::InputError::Io(source) => XbarError::Io { path, source },
            source => XbarError::Input { path, source },
        }
    })
}

/// Reads cells stored as int8, int16 or int32. The header is checked against the bytes the
/// file really holds before `ndarray_npy` allocates what the header asks for.
fn read_cells(path: &Path) -> Result<Array3<i32>, XbarError> {
    let bytes = read(path, pimdiff_input::limits::MAX_XBAR_NPY_BYTES)?;
    let npy_err = |message: String| XbarError::Npy {
        path: path.to_path_buf(),
        message,
    };
    let mut rest = &bytes[..];
    let header = read_header(&mut rest).map_err(|e| npy_err(e.to_string()))?;
    let item = match header.descr.as_str() {
        "|i1" | "<i1" | "i1" | ">i1" => 1,
        "<i2" | ">i2" => 2,
        "<i4" | ">i4" => 4,
        other => {
            return Err(npy_err(format!(
                "dtype {other:?} is not int8, int16 or int32"
            )))
        }
    };
    let needed = header.elements().and_then(|n| n.checked_mul(item));
    if needed != Some(rest.len()) {
        return Err(npy_err(format!(
            "the header's shape {:?} needs {} bytes of data, the file has {}",
            header.shape,
            needed.map_or("more than 2^64".to_string(), |n| n.to_string()),
            rest.len()
        )));
    }
    // Decoded here from the header already checked: a second parse of the header by
    // ndarray_npy was a tenth of reading a served bundle.
    let big = header.descr.starts_with('>');
    let values: Vec<i32> = match item {
        1 => rest.iter().map(|&b| i32::from(b as i8)).collect(),
        2 => rest
            .chunks_exact(2)
            .map(|c| {
                let b = [c[0], c[1]];
                i32::from(if big {
                    i16::from_be_bytes(b)
                } else {
                    i16::from_le_bytes(b)
                })
            })
            .collect(),
        _ => rest
            .chunks_exact(4)
            .map(|c| {
                let b = [c[0], c[1], c[2], c[3]];
                if big {
                    i32::from_be_bytes(b)
                } else {
                    i32::from_le_bytes(b)
                }
            })
            .collect(),
    };
    let dims = ndarray::IxDyn(&header.shape);
    let dyn_cells = if header.fortran_order {
        ArrayD::from_shape_vec(dims.f(), values)
    } else {
        ArrayD::from_shape_vec(dims, values)
    }
    .map_err(|e| npy_err(e.to_string()))?;
    let shape = dyn_cells.shape().to_vec();
    dyn_cells
        .into_dimensionality::<ndarray::Ix3>()
        .map_err(|_| XbarError::NpyShape {
            path: path.to_path_buf(),
            shape,
        })
}

/// Writes `x` into `dir` (created if needed): per core, `core_<i>.npy` in the narrowest of
/// int8 / int16 / int32 that holds its cells, and `core_<i>.json`.
pub fn write_export_dir(x: &CrossbarExport, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    write_export_files(x, dir)
}

/// [`write_export_dir`] into a directory that exists.
pub(crate) fn write_export_files(x: &CrossbarExport, dir: &Path) -> std::io::Result<()> {
    for (&id, core) in &x.cores {
        let (min, max) = core
            .cells
            .iter()
            .fold((0i32, 0i32), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        let npy = dir.join(format!("core_{id}.npy"));
        let result = if min >= i8::MIN as i32 && max <= i8::MAX as i32 {
            write_npy(&npy, &core.cells.mapv(|v| v as i8))
        } else if min >= i16::MIN as i32 && max <= i16::MAX as i32 {
            write_npy(&npy, &core.cells.mapv(|v| v as i16))
        } else {
            write_npy(&npy, &core.cells)
        };
        result.map_err(std::io::Error::other)?;
        let file = CoreFile {
            core: id,
            mbiw: core.mbiw,
            groups: core
                .groups
                .iter()
                .map(|g| GroupFile {
                    group: g.group,
                    arrays: g.arrays.clone(),
                    rows: g.rows,
                    cols: g.cols,
                })
                .collect(),
        };
        let text = serde_json::to_string_pretty(&file).map_err(std::io::Error::other)?;
        std::fs::write(dir.join(format!("core_{id}.json")), text + "\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cells of every width, byte order and memory order read as ndarray_npy reads them.
    #[test]
    fn cells_decode_like_ndarray_npy_in_every_dtype_and_order() {
        use ndarray_npy::ReadNpyExt;
        let dir = tempfile::tempdir().unwrap();
        let values: Vec<i32> = (0..12).map(|i| (i * 37 % 23) - 11).collect();
        let i8s: Vec<u8> = values.iter().map(|&v| v as i8 as u8).collect();
        let le16: Vec<u8> = values
            .iter()
            .flat_map(|&v| (v as i16 * 300).to_le_bytes())
            .collect();
        let be16: Vec<u8> = values
            .iter()
            .flat_map(|&v| (v as i16 * 300).to_be_bytes())
            .collect();
        let le32: Vec<u8> = values
            .iter()
            .flat_map(|&v| (v * 70_000).to_le_bytes())
            .collect();
        let be32: Vec<u8> = values
            .iter()
            .flat_map(|&v| (v * 70_000).to_be_bytes())
            .collect();
        type Reference = fn(&[u8]) -> ArrayD<i32>;
        let cases: [(&str, &[u8], Reference); 5] = [
            ("|i1", &i8s, |b| {
                ArrayD::<i8>::read_npy(b).unwrap().mapv(i32::from)
            }),
            ("<i2", &le16, |b| {
                ArrayD::<i16>::read_npy(b).unwrap().mapv(i32::from)
            }),
            (">i2", &be16, |b| {
                ArrayD::<i16>::read_npy(b).unwrap().mapv(i32::from)
            }),
            ("<i4", &le32, |b| ArrayD::<i32>::read_npy(b).unwrap()),
            (">i4", &be32, |b| ArrayD::<i32>::read_npy(b).unwrap()),
        ];
        for (descr, data, reference) in cases {
            for fortran in [false, true] {
                let bytes = pimdiff_input::hostile::npy_file(descr, fortran, &[2, 3, 2], data);
                let path = dir.path().join("cells.npy");
                std::fs::write(&path, &bytes).unwrap();
                let cells = read_cells(&path).unwrap().into_dyn();
                assert_eq!(cells, reference(&bytes), "{descr} fortran={fortran}");
            }
        }
    }

    fn export(cells: Array3<i32>) -> CrossbarExport {
        let mut x = CrossbarExport::default();
        x.cores.insert(
            3,
            CoreCrossbars {
                mbiw: 8,
                cells,
                groups: vec![ArrayGroup {
                    group: 0,
                    arrays: vec![1, 0],
                    rows: 2,
                    cols: 3,
                }],
            },
        );
        x
    }

    #[test]
    fn round_trips_each_dtype() {
        for scale in [1, 1000, 100_000] {
            let cells = Array3::from_shape_fn((2, 2, 2), |(a, r, c)| {
                (a as i32 * 4 + r as i32 * 2 + c as i32 - 3) * scale
            });
            let x = export(cells);
            let dir = tempfile::tempdir().unwrap();
            write_export_dir(&x, dir.path()).unwrap();
            assert_eq!(read_export_dir(dir.path()).unwrap(), x);
        }
    }

    #[test]
    fn errors_name_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        write_export_dir(&export(Array3::zeros((1, 1, 1))), dir.path()).unwrap();
        let json = dir.path().join("core_3.json");
        std::fs::write(&json, r#"{"core": 4, "mbiw": 8, "groups": []}"#).unwrap();
        match read_export_dir(dir.path()) {
            Err(XbarError::Field {
                path,
                field: "core",
                ..
            }) => assert_eq!(path, json),
            other => panic!("unexpected {other:?}"),
        }
        std::fs::remove_file(dir.path().join("core_3.npy")).unwrap();
        match read_export_dir(dir.path()) {
            Err(XbarError::MissingPair { path, missing }) => {
                assert_eq!(path, json);
                assert_eq!(missing, "core_3.npy");
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
