//! Program files: one instruction per line (`formats::call` reads the line, the instruction
//! table decodes it). A final newline is optional; any other empty line is an error.

use std::path::Path;

use super::call::parse_call;
use super::error::{LoadError, LoadErrorKind};
use crate::isa::{CoreInst, TileInst};

/// The lines of `text` with their 1-based numbers, the empty piece after a final newline
/// left out.
fn lines(text: &str) -> impl Iterator<Item = (u32, &str)> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.split('\n').enumerate().map(|(i, l)| (i as u32 + 1, l))
}

fn parse<I>(
    text: &str,
    path: &Path,
    decode: impl Fn(&super::call::Call<'_>) -> Result<I, LoadErrorKind>,
) -> Result<Vec<I>, LoadError> {
    let mut out = Vec::new();
    for (n, line) in lines(text) {
        let error = |kind| LoadError {
            file: path.to_path_buf(),
            line: Some(n),
            kind,
        };
        if line.trim_matches([' ', '\t']).is_empty() {
            return Err(error(LoadErrorKind::EmptyLine));
        }
        let call = parse_call(line)
            .map_err(|(col, problem)| error(LoadErrorKind::Syntax { col, problem }))?;
        out.push(decode(&call).map_err(error)?);
    }
    Ok(out)
}

/// A core program (`<model>-tile<T>-core<C>.puma`); `path` names it in errors.
pub fn parse_core_program(text: &str, path: &Path) -> Result<Vec<CoreInst>, LoadError> {
    parse(text, path, CoreInst::decode)
}

/// A tile program (`<model>-tile<T>.puma`); `path` names it in errors.
pub fn parse_tile_program(text: &str, path: &Path) -> Result<Vec<TileInst>, LoadError> {
    parse(text, path, TileInst::decode)
}
