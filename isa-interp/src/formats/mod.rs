//! Program file formats: pimsim-nn / PIMCOMP-NN JSON (plain, gzip, directory) and our assembly
//! text, all loading into one [`Program`].
//!
//! - [`json`]: one object `{"config": {...}, "core0": [...], ...}`, read by a streaming serde
//!   visitor (no JSON tree of the instructions is ever built).
//! - [`dir`]: `config.json` + `core_<id>.json`, pimsim-nn's directory mode.
//! - [`asm`]: our readable text, which round-trips exactly with the JSON.
//! - [`load_program`]: any of them, detected from the path and the bytes.
//!
//! Field rules (isa.md's last section, enforced by one decoder shared by the JSON and assembly
//! readers): a missing `offset` is zero; any other missing field an op needs, or a field of the
//! wrong type, is an error; fields an op does not use are ignored; `send`'s source may be
//! spelled `rd` or `rs1`, byte counts `len` or `size`, the offset value top-level or nested, and
//! where two spellings are present they must agree; `vsub` and `vsigmoid` are accepted.
//! Ranges: registers 0..=31, widths 1..=32, `offset_select` 0..=7; sizes, lengths, core ids and
//! groups 0..=2^32-1; offsets and `wait_value` signed 32-bit; `sldi`/`saddi`/`smuli` immediates
//! -2^31..=2^32-1 (stored as the 32-bit pattern); `lldi` immediates -128..=255 (stored as the
//! byte; -1 and 255 are the same fill), or a float truncated toward zero into that range
//! (recorded as `from_float`, PIMCOMP-NN's pooling constants); `relu` 0, 1, false or true.

pub mod asm;
mod config;
mod decode;
pub mod dir;
pub mod error;
pub mod json;
mod operand;
mod problem;

use std::fs;
use std::path::Path;

use pimdiff_input::limits::MAX_PROGRAM_BYTES;
use pimdiff_input::{is_blank, InputError, GZIP_MAGIC};

use crate::program::Program;

pub use config::MAX_CORES;
pub use dir::{read_program_dir, write_program_dir};
pub use error::{CoreKeyProblem, FieldProblem, InstError, LoadError, LoadErrorKind};
pub use json::{read_json, write_json};
pub use operand::size_key;

/// Load a program from `path`: a directory (pimsim-nn's directory form), or a file holding
/// JSON or our assembly text, either of them possibly gzip-compressed. Gzip is detected by its
/// magic bytes whatever the extension; JSON by its first non-blank character being `{`;
/// anything else is parsed as assembly text. The file goes through the bounded reader
/// (`pimdiff_input::limits::MAX_PROGRAM_BYTES`, compressed and inflated); an empty file is an error.
pub fn load_program(path: &Path) -> Result<Program, LoadError> {
    let meta =
        fs::metadata(path).map_err(|e| LoadError::new(LoadErrorKind::Io(e)).in_file(path))?;
    if meta.is_dir() {
        return read_program_dir(path);
    }
    let bytes = pimdiff_input::read(path, MAX_PROGRAM_BYTES)
        .map_err(|e| LoadError::from(e).in_file(path))?;
    load_bytes(&bytes).map_err(|e| e.in_file(path))
}

/// Load a program from the bytes of a file (see [`load_program`] for the detection rules).
pub fn load_bytes(bytes: &[u8]) -> Result<Program, LoadError> {
    if is_blank(bytes) {
        return Err(InputError::Empty.into());
    }
    if bytes.starts_with(&GZIP_MAGIC) {
        // JSON is parsed while it is inflated; anything else (assembly text) afterwards.
        if let Some(result) = json::read_json_gzip(bytes) {
            return result;
        }
        let text = gunzip(bytes)?;
        return load_text_bytes(&text);
    }
    load_text_bytes(bytes)
}

/// Decompress a whole gzip file (all members), bounded by `pimdiff_input::limits::MAX_PROGRAM_BYTES`.
pub fn gunzip(bytes: &[u8]) -> Result<Vec<u8>, LoadError> {
    Ok(pimdiff_input::gunzip(bytes, MAX_PROGRAM_BYTES)?)
}

fn load_text_bytes(bytes: &[u8]) -> Result<Program, LoadError> {
    let first = bytes.iter().copied().find(|b| !b.is_ascii_whitespace());
    if first == Some(b'{') {
        return json::read_json_slice(bytes);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        LoadError::new(LoadErrorKind::NotAProgram(format!(
            "neither JSON nor UTF-8 assembly text ({e})"
        )))
    })?;
    asm::parse(text).map_err(|e| LoadError::new(LoadErrorKind::Asm(e)))
}
