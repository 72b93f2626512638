//! The finding vocabulary every target speaks: outcome kinds, signatures, and (in the
//! modules that write them) finding directories and hunt summaries.
//!
//! A target turns a run of one case into an outcome [`Kind`] and, for a finding, a
//! [`Signature`]; the engine counts kinds, deduplicates by signature and writes findings and
//! summaries without knowing which compiler produced them.

mod kind;
mod signature;
pub mod summary;

pub use self::kind::{Kind, UnknownKind};
pub use self::signature::{abstract_message, BadSignature, Signature};
