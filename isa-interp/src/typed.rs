//! Reading one of a bundle's JSON files as its type, with errors naming the field at fault
//! (`input.layout`, `groups[1].rows`) and what was expected.
//!
//! Separate from `schema.rs`, which names the types of all the bundle's files (and so imports
//! `bundle.rs` and `xbar.rs`): those two read their own files with [`read_typed`], so it sits
//! below all three. `crate::schema` re-exports both names.

use serde::Deserialize;

/// A JSON file of a bundle that does not match its type: the field at fault and what was
/// expected (`field` is `.` for the whole file, e.g. a missing top-level key).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {message}")]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

/// Parses `bytes` as `T`, naming the field of the first problem (`serde_path_to_error`).
pub fn read_typed<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, FieldError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        // serde_json ends its messages with the position; the field says where.
        let message = inner.to_string();
        let message = match message.rfind(" at line ") {
            Some(at) if inner.line() > 0 => message[..at].to_string(),
            _ => message,
        };
        FieldError { field, message }
    })
}
