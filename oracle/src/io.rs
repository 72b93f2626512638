//! The case directory on disk (`docs/case-format.md`): reading, and atomic writing.
//!
//! Reading checks everything the format's "rules for readers" list, in this order, and stops
//! at the first problem: `case.json` (size, JSON syntax, `format`, fields and their types,
//! values and [`limits`]); then each tensor's header (magic, dtype, shape
//! against `case.json`) before any of its data is read; then the exact result's int32 range.
//! Files other than the five known names are ignored.
//!
//! Writing never leaves a half case behind: the files go into a fresh temporary directory
//! beside the target, each file and the directory are fsynced, and the directory is renamed
//! into place in one step (then the parent is fsynced so the rename is durable).

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use ndarray::{ArrayD, Ix1};
use ndarray_npy::{WritableElement, WriteNpyExt};

use crate::case::Case;
use crate::error::{CaseError, BIAS_NPY, CASE_JSON, EXPECTED_NPY, INPUT_NPY, WEIGHT_NPY};
use crate::{json, npy};

/// Reads and validates the case in directory `dir`.
///
/// Errors name the file and the field (see [`CaseError`]); nothing panics, and no tensor is
/// allocated before its header's shape has been checked against `case.json` (which is
/// itself within the limits).
pub fn read_case(dir: &Path) -> Result<Case, CaseError> {
    if !fs::metadata(dir)
        .map_err(|e| CaseError::io(dir, e))?
        .is_dir()
    {
        return Err(CaseError::io(dir, std::io::Error::other("not a directory")));
    }
    let json_path = dir.join(CASE_JSON);
    if !regular_file(&json_path, CASE_JSON)? {
        return Err(CaseError::MissingFile {
            file: CASE_JSON,
            why: "every case has one",
        });
    }
    let text = read_bounded(&json_path)?;
    let spec = json::spec_from_json(&text)?;
    spec.validate()?;

    let input = read_required_i8(dir, INPUT_NPY, &spec.input_shape)?;
    let weight = read_required_i8(dir, WEIGHT_NPY, &spec.weight_shape())?;
    let bias_path = dir.join(BIAS_NPY);
    let bias = match spec.bias_len() {
        Some(len) => {
            if !regular_file(&bias_path, BIAS_NPY)? {
                return Err(CaseError::MissingFile {
                    file: BIAS_NPY,
                    why: "case.json says `op.bias` is true",
                });
            }
            let b = npy::read_i32(&bias_path, BIAS_NPY, &[len])?;
            let b = b
                .into_dimensionality::<Ix1>()
                .map_err(|_| CaseError::ShapeMismatch {
                    file: BIAS_NPY,
                    expected: vec![len],
                    found: Vec::new(),
                })?;
            Some(b)
        }
        None => {
            if regular_file(&bias_path, BIAS_NPY)? {
                return Err(CaseError::BiasMismatch { op_bias: false });
            }
            None
        }
    };
    let expected_path = dir.join(EXPECTED_NPY);
    let expected = if regular_file(&expected_path, EXPECTED_NPY)? {
        Some(npy::read_i32(
            &expected_path,
            EXPECTED_NPY,
            &spec.output_shape(),
        )?)
    } else {
        None
    };
    Case::new(spec, input, weight, bias, expected)
}

/// Writes `case` as a new case directory `dir`, atomically.
///
/// `dir` must not exist, or be an empty directory: an existing case is never overwritten
/// ([`CaseError::AlreadyExists`]); use [`replace_case`] for that. Missing parent directories
/// are created. On any error the temporary directory is removed and `dir` is untouched.
pub fn write_case(case: &Case, dir: &Path) -> Result<(), CaseError> {
    if !is_absent_or_empty_dir(dir)? {
        return Err(CaseError::AlreadyExists {
            path: dir.to_path_buf(),
        });
    }
    let parent = parent_of(dir);
    fs::create_dir_all(parent).map_err(|e| CaseError::io(parent, e))?;
    let tmp = fill_temp_dir(case, dir)?;
    let renamed = fs::rename(&tmp, dir).map_err(|e| {
        let _ = fs::remove_dir_all(&tmp);
        // A directory that became non-empty since the check above (another writer won).
        if dir.is_dir() {
            CaseError::AlreadyExists {
                path: dir.to_path_buf(),
            }
        } else {
            CaseError::io(dir, e)
        }
    });
    renamed?;
    sync_dir(parent_of(dir))
}

/// Writes `case` to `dir`, replacing whatever case directory is there.
///
/// The new case is written completely into a temporary directory first; then the old
/// directory is renamed aside, the new one renamed into place, and the old one deleted. An
/// interruption can leave `dir` missing between the two renames (with the old case still
/// beside it under a `.NAME.old-*` name), but never a half-written case. Files other than the
/// case's own (a saved finding's report, say) go with the old directory.
pub fn replace_case(case: &Case, dir: &Path) -> Result<(), CaseError> {
    if is_absent_or_empty_dir(dir)? {
        return write_case(case, dir);
    }
    let tmp = fill_temp_dir(case, dir)?;
    let aside = fresh_name(dir, "old");
    if let Err(e) = fs::rename(dir, &aside) {
        let _ = fs::remove_dir_all(&tmp);
        return Err(CaseError::io(dir, e));
    }
    if let Err(e) = fs::rename(&tmp, dir) {
        let _ = fs::rename(&aside, dir);
        let _ = fs::remove_dir_all(&tmp);
        return Err(CaseError::io(dir, e));
    }
    sync_dir(parent_of(dir))?;
    fs::remove_dir_all(&aside).map_err(|e| CaseError::io(&aside, e))
}

/// Writes an int32 array as `.npy` at `path`, atomically: a temporary file beside it, fsync,
/// rename. An existing file at `path` is replaced (this is for outputs such as
/// `pimdiff oracle --out`, not for cases).
pub fn write_npy_atomic<A: WritableElement>(
    path: &Path,
    array: &ArrayD<A>,
) -> Result<(), CaseError> {
    let tmp = fresh_name(path, "tmp");
    let result = write_npy_synced(&tmp, array)
        .and_then(|()| fs::rename(&tmp, path).map_err(|e| CaseError::io(path, e)));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    sync_dir(parent_of(path))
}

/// Whether `path` is a regular file (following symbolic links); `Ok(false)` when absent.
fn regular_file(path: &Path, file: &'static str) -> Result<bool, CaseError> {
    match fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(true),
        Ok(_) => Err(CaseError::NotAFile { file }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(CaseError::io(path, e)),
    }
}

fn read_required_i8(
    dir: &Path,
    file: &'static str,
    shape: &[usize],
) -> Result<ArrayD<i8>, CaseError> {
    let path = dir.join(file);
    if !regular_file(&path, file)? {
        return Err(CaseError::MissingFile {
            file,
            why: "every case has one",
        });
    }
    npy::read_i8(&path, file, shape)
}

/// Reads `case.json` through the bounded reader ([`crate::limits::MAX_CASE_JSON_BYTES`]).
fn read_bounded(path: &Path) -> Result<String, CaseError> {
    let bytes = pimdiff_input::read(path, pimdiff_input::limits::MAX_CASE_JSON_BYTES)
        .map_err(|e| CaseError::input(path, CASE_JSON, e))?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = valid.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
        CaseError::Json {
            line,
            column,
            message: "the file is not valid UTF-8".into(),
        }
    })
}

fn is_absent_or_empty_dir(dir: &Path) -> Result<bool, CaseError> {
    match fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(_) if dir.exists() => Ok(false),
        Err(e) => Err(CaseError::io(dir, e)),
    }
}

/// Creates a fresh temporary directory beside `dir` and writes every file of `case` into it,
/// fsynced. Removes it again on error.
fn fill_temp_dir(case: &Case, dir: &Path) -> Result<PathBuf, CaseError> {
    case.check_shapes()?;
    let tmp = loop {
        let candidate = fresh_name(dir, "tmp");
        match fs::create_dir(&candidate) {
            Ok(()) => break candidate,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(CaseError::io(&candidate, e)),
        }
    };
    let filled = (|| {
        write_synced(
            &tmp.join(CASE_JSON),
            json::spec_to_json(&case.spec).as_bytes(),
        )?;
        write_npy_synced(&tmp.join(INPUT_NPY), &case.input)?;
        write_npy_synced(&tmp.join(WEIGHT_NPY), &case.weight)?;
        if let Some(b) = &case.bias {
            write_npy_synced(&tmp.join(BIAS_NPY), b)?;
        }
        if let Some(e) = &case.expected {
            write_npy_synced(&tmp.join(EXPECTED_NPY), e)?;
        }
        sync_dir(&tmp)
    })();
    match filled {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), CaseError> {
    let mut f = File::create(path).map_err(|e| CaseError::io(path, e))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| CaseError::io(path, e))
}

fn write_npy_synced<A, D>(path: &Path, array: &ndarray::Array<A, D>) -> Result<(), CaseError>
where
    A: WritableElement,
    D: ndarray::Dimension,
{
    let f = File::create(path).map_err(|e| CaseError::io(path, e))?;
    let mut w = BufWriter::new(f);
    array
        .write_npy(&mut w)
        .map_err(|e| CaseError::io(path, std::io::Error::other(e.to_string())))?;
    let f = w
        .into_inner()
        .map_err(|e| CaseError::io(path, e.into_error()))?;
    f.sync_all().map_err(|e| CaseError::io(path, e))
}

fn sync_dir(dir: &Path) -> Result<(), CaseError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| CaseError::io(dir, e))
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `.NAME.KIND-PID-N` beside `path`: hidden, and unique within this process and among
/// processes.
fn fresh_name(path: &Path, kind: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "case".into());
    parent_of(path).join(format!(".{name}.{kind}-{}-{n}", std::process::id()))
}
