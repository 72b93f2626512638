//! The finding vocabulary every target speaks: outcome kinds, signatures, what a saved case
//! must do today, `finding.json`, the one finding writer, and the verdict of a set of outcomes.
//!
//! A target turns a run of one case into an outcome [`Kind`] and, for a finding, a
//! [`Signature`]; the engine counts kinds, deduplicates by signature and writes findings with
//! this module (and summaries with [`crate::summary`]), without knowing which compiler
//! produced them.

mod expectation;
mod kind;
mod meta;
mod signature;
mod verdict;
mod writer;

pub use self::expectation::{Expectation, ExpectationParseError, Observed};
pub use self::kind::{Kind, UnknownKind};
pub use self::meta::{
    to_json_text, FindingMeta, MinimizationStats, Origin, FINDING_JSON, META_FORMAT,
};
pub use self::signature::{abstract_message, BadSignature, Signature};
pub use self::verdict::{is_unjudged, Verdict, UNJUDGED_KINDS};
pub use self::writer::{
    final_name, is_provisional_name, provisional_name, relative_dir, slug, write_finding, write_new,
};

/// The directory of finding directories inside a hunt's `--out`.
pub const FINDINGS_DIR: &str = "findings";
