//! pimsim-nn / PIMCOMP-NN JSON: one object `{"config": {...}, "core0": [inst, ...], ...}`.
//!
//! Reading streams: a serde visitor turns each instruction object straight into a compact
//! [`Inst`] (through [`decode`](super::decode)), so a 300 MB PIMCOMP-NN file never exists as a
//! JSON tree; only the small `config` object is. Core keys may come in any order (real files
//! sort them as text, `core10` before `core2`); cores without a key are empty; a key at or
//! beyond `core_cnt`, a repeated key, or any top-level key other than `config` and `core<N>` is
//! an error.
//!
//! Large texts are parsed on several threads ([`split`]): in memory, cut at their top-level
//! keys and each core parsed on its own; while a gzip stream is inflated, cut into parts of
//! about a megabyte (at core keys and between instructions), each parsed with simd-json
//! (whose vectorised scan skips the blanks of pretty-printed files fast) through the same
//! serde visitors.
//!
//! Writing produces one instruction object per line, cores in numeric order, every core
//! `0..core_cnt` present (an idle core is `[]`), and the field spellings pimsim-nn reads (see
//! [`write_inst`]).

use std::io::Read;

use pimdiff_input::limits::{Limit, MAX_PROGRAM_BYTES};

use crate::program::Program;

use super::error::LoadError;

mod split;
mod visit;
mod write;

pub(crate) use visit::{json_error, read_core_slice};
pub(crate) use write::write_core;
pub use write::{write_inst, write_json};

/// Read a whole program from a JSON stream (plain JSON; decompress first for gzip, or use
/// [`super::load_program`], which detects it). At most `pimdiff_input::limits::MAX_PROGRAM_BYTES`
/// are read.
pub fn read_json<R: Read>(r: R) -> Result<Program, LoadError> {
    read_json_with_limit(r, MAX_PROGRAM_BYTES)
}

/// [`read_json`], reading at most `limit` bytes (more is an `InputError::TooLarge`).
pub fn read_json_with_limit<R: Read>(r: R, limit: Limit) -> Result<Program, LoadError> {
    visit::read_program(r, limit)
}

/// Read a whole program from JSON text in memory. Faster than [`read_json`]: serde_json parses
/// a slice without per-byte reader calls, and a large text (PIMCOMP-NN's 100–300 MB) is cut at
/// its top-level keys and its cores are parsed on all available threads. Any error sends the
/// text through the sequential parser, so errors are the same (and the first in file order)
/// whichever path ran.
pub fn read_json_slice(bytes: &[u8]) -> Result<Program, LoadError> {
    if bytes.len() >= split::PARALLEL_MIN_BYTES {
        if let Some(program) = split::parse_slice(bytes) {
            return Ok(program);
        }
    }
    visit::read_program_slice(bytes)
}

/// Read a gzip-compressed JSON program, parsing its parts on other threads while the stream
/// is still being inflated. `None` when the inflated text does not start with `{` (it is
/// then no JSON program); any error is reported as [`read_json_slice`] reports it on the
/// whole inflated text, which is inflated again for that purpose.
pub(crate) fn read_json_gzip(compressed: &[u8]) -> Option<Result<Program, LoadError>> {
    match split::parse_gzip(compressed) {
        split::Streamed::Program(p) => Some(Ok(p)),
        split::Streamed::NotJson => None,
        split::Streamed::Input(e) => Some(Err(e.into())),
        split::Streamed::Failed => {
            let text = match pimdiff_input::gunzip(compressed, MAX_PROGRAM_BYTES) {
                Ok(text) => text,
                Err(e) => return Some(Err(e.into())),
            };
            Some(visit::read_program_slice(&text))
        }
    }
}
