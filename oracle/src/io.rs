//! The case directory on disk (`docs/case-format.md`): reading, and atomic writing.
//!
//! Reading checks everything the format's "rules for readers" list, in this order, and stops
//! at the first problem: `case.json` (size, JSON syntax, `format`, fields and their types,
//! values and [`limits`]); then each tensor's header (magic, dtype, shape
//! against `case.json`) before any of its data is read; then the exact result's int32 range.
//! Files other than the five known names are ignored.
//!
//! Writing never leaves a half case behind: it goes through `pimdiff-atomic` (a temporary
//! sibling directory, fsynced, renamed into place in one step).

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use pimdiff_atomic::AtomicDir;

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
    // Each file is opened once and checked on the open file (regular, within its limit) by
    // the bounded reader; an absent one shows as `NotFound` from that open, not from a look-up
    // by path before it (a serve hunt reads a case per millisecond).
    let json_path = dir.join(CASE_JSON);
    let text = required(read_bounded(&json_path), CASE_JSON, "every case has one")?;
    let spec = json::spec_from_json(&text)?;
    spec.validate()?;

    let input = read_required_i8(dir, INPUT_NPY, &spec.input_shape)?;
    let weight = read_required_i8(dir, WEIGHT_NPY, &spec.weight_shape())?;
    let bias_path = dir.join(BIAS_NPY);
    let bias = match spec.bias_len() {
        Some(len) => {
            let b = required(
                npy::read_i32(&bias_path, BIAS_NPY, &[len]),
                BIAS_NPY,
                "case.json says `op.bias` is true",
            )?;
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
    let expected = optional(npy::read_i32(
        &expected_path,
        EXPECTED_NPY,
        &spec.output_shape(),
    ))?;
    Case::new(spec, input, weight, bias, expected)
}

/// Writes `case` as a new case directory `dir`, atomically.
///
/// `dir` must not exist, or be an empty directory: an existing case is never overwritten
/// ([`CaseError::AlreadyExists`]); use [`replace_case`] for that. Missing parent directories
/// are created. On any error the temporary directory is removed and `dir` is untouched.
pub fn write_case(case: &Case, dir: &Path) -> Result<(), CaseError> {
    let tmp = AtomicDir::create(dir).map_err(atomic_err)?;
    write_case_files(case, tmp.path())?;
    tmp.commit().map_err(atomic_err)?;
    Ok(())
}

/// Writes `case` to `dir`, replacing whatever case directory is there.
///
/// The new case is written completely into a temporary directory first; then the old
/// directory is moved aside, the new one renamed into place, and the old one deleted (see
/// [`AtomicDir::commit_replacing`]): never a half-written case. Files other than the case's
/// own (a saved finding's report, say) go with the old directory.
pub fn replace_case(case: &Case, dir: &Path) -> Result<(), CaseError> {
    let tmp = AtomicDir::create_anyway(dir).map_err(atomic_err)?;
    write_case_files(case, tmp.path())?;
    tmp.commit_replacing().map_err(atomic_err)?;
    Ok(())
}

/// Writes an int32 array as `.npy` at `path`, atomically (an existing file at `path` is
/// replaced: this is for outputs such as `pimdiff oracle --out`, not for cases).
pub fn write_npy_atomic<A: WritableElement>(
    path: &Path,
    array: &ArrayD<A>,
) -> Result<(), CaseError> {
    pimdiff_atomic::write_file_with(path, |f| {
        let mut w = BufWriter::new(f);
        array
            .write_npy(&mut w)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        w.flush()
    })
    .map_err(atomic_err)
}

/// An atomic write's error as a case error (an existing destination is `AlreadyExists`).
fn atomic_err(e: pimdiff_atomic::Error) -> CaseError {
    match e {
        pimdiff_atomic::Error::Exists { path } => CaseError::AlreadyExists { path },
        pimdiff_atomic::Error::Io { path, source } => CaseError::io(path, source),
    }
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
    required(
        npy::read_i8(&dir.join(file), file, shape),
        file,
        "every case has one",
    )
}

/// Whether `read` failed because the file is absent (its open said `NotFound`).
fn is_absent<T>(read: &Result<T, CaseError>) -> bool {
    use std::io::ErrorKind::NotFound;
    matches!(read, Err(CaseError::Io { source, .. }) if source.kind() == NotFound)
}

/// The reading of a file the case must have: an absent one is [`CaseError::MissingFile`].
fn required<T>(
    read: Result<T, CaseError>,
    file: &'static str,
    why: &'static str,
) -> Result<T, CaseError> {
    if is_absent(&read) {
        return Err(CaseError::MissingFile { file, why });
    }
    read
}

/// The reading of a file the case may have: an absent one is `None`.
fn optional<T>(read: Result<T, CaseError>) -> Result<Option<T>, CaseError> {
    if is_absent(&read) {
        return Ok(None);
    }
    read.map(Some)
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

/// Writes every file of `case` into `dir`, a directory under construction that its caller
/// commits atomically (a finding's directory holds a case and more): plain writes, synced by
/// the commit.
pub fn write_case_files(case: &Case, dir: &Path) -> Result<(), CaseError> {
    case.check_shapes()?;
    let new = |name: &str, bytes: &[u8]| {
        pimdiff_atomic::write_new(&dir.join(name), bytes).map_err(atomic_err)
    };
    new(CASE_JSON, json::spec_to_json(&case.spec).as_bytes())?;
    new(INPUT_NPY, &npy_bytes(&case.input)?)?;
    new(WEIGHT_NPY, &npy_bytes(&case.weight)?)?;
    if let Some(b) = &case.bias {
        new(BIAS_NPY, &npy_bytes(b)?)?;
    }
    if let Some(e) = &case.expected {
        new(EXPECTED_NPY, &npy_bytes(e)?)?;
    }
    Ok(())
}

/// An array as the bytes of a `.npy` file.
fn npy_bytes<A, D>(array: &ndarray::Array<A, D>) -> Result<Vec<u8>, CaseError>
where
    A: WritableElement,
    D: ndarray::Dimension,
{
    let mut out = Vec::new();
    array
        .write_npy(&mut out)
        .map_err(|e| CaseError::io("<npy>", std::io::Error::other(e.to_string())))?;
    Ok(out)
}
