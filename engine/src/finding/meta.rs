//! `finding.json`: what every saved finding says about itself, whatever its target.
//!
//! One schema for every target, so that `repro`, `replay`, `merge` and scripts read any
//! finding the same way. The fields a target does not use stay absent; a target's own data
//! that no other target has goes into [`FindingMeta::details`].

use serde::{Deserialize, Serialize};

use super::expectation::Expectation;

/// The metadata file of a saved finding.
pub const FINDING_JSON: &str = "finding.json";
/// Version of `finding.json` / `expect.json` this reader writes and accepts.
pub const META_FORMAT: u32 = 1;

/// Where a hunt found the case: enough to regenerate the original, unminimized case.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    /// The hunt's `--seed`.
    pub hunt_seed: u64,
    /// The case's index `k` in the hunt's index space.
    pub case_index: u64,
    /// `engine::case_seed(hunt_seed, case_index)`, the seed handed to the generator.
    pub case_seed: u64,
}

/// How minimization went.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MinimizationStats {
    /// Candidate cases tried.
    pub tried: u64,
    /// Candidates kept (they still failed with the same signature).
    pub kept: u64,
    /// Size of the case before minimization (the target's measure).
    pub original_size: u64,
    /// Size of the saved case.
    pub minimized_size: u64,
    /// Whether minimization was cut short (time budget or a second Ctrl-C); the saved case
    /// still fails with the recorded signature.
    pub cut_short: bool,
}

impl MinimizationStats {
    /// The statistics of a case of `size` saved without minimization.
    pub fn unminimized(size: u64) -> MinimizationStats {
        MinimizationStats {
            tried: 0,
            kept: 0,
            original_size: size,
            minimized_size: size,
            cut_short: true,
        }
    }
}

/// `finding.json`: everything needed to understand and reproduce a saved finding.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingMeta {
    /// `1` ([`META_FORMAT`]): the version of this format; a reader refuses another.
    pub format: u32,
    /// The signature's display form.
    pub signature: String,
    /// The signature as structured data (`Signature`'s serde form).
    #[serde(default)]
    pub signature_detail: serde_json::Value,
    /// The outcome kind, e.g. `"mismatch"` (the signature's kind).
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::summary::schema::kind")
    )]
    pub outcome: String,
    /// What replay must observe today; at save time the bug is present, so this is the saved
    /// case's own outcome signature (what a rerun shows without localizing; `signature` may
    /// be the localized cause). Edit it to `pass` once the bug is fixed. One of `pass`,
    /// `unsupported`, `unsupported: TEXT`, an outcome kind, `finding`, `signature: SIG`.
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub expect: Expectation,
    /// The compiler under test, in words.
    pub compiler: String,
    /// The tensor target's lowering(s) of the in-repo compiler (`channel`, `pixel`, `both`):
    /// `repro` and `replay` use it unless `--lowering` says otherwise. Absent for other
    /// compilers and in findings saved before lowerings were recorded (channel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowering: Option<String>,
    /// The `pimdiff` version that saved it.
    pub pimdiff_version: String,
    /// Where a hunt found it (absent for findings from elsewhere).
    #[serde(default)]
    pub origin: Option<Origin>,
    /// The generator configuration of that hunt.
    #[serde(default)]
    pub generator: serde_json::Value,
    /// Minimization statistics (absent when the case was not minimized).
    #[serde(default)]
    pub minimization: Option<MinimizationStats>,
    /// Ranked suspects of localization, best first: `{"core", "pc", "op", "why", "fix"}`
    /// objects (empty when nothing was localized, or the finding was not triaged).
    #[serde(default)]
    pub suspects: Vec<serde_json::Value>,
    /// The schedule (`pct:SEED:DEPTH`, …) under which a `schedule-dependent` finding's run
    /// ended differently; `repro` and `replay` run it again under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The injected miscompilation (`--inject-bug` name) of the hunt that found it, so that
    /// `repro` and `replay` compile the case the same way (as `expect.json`'s `mutation`); in
    /// a `--lowering both` hunt, `details.injected_into` names the lowering it went into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected_bug: Option<String>,
    /// The target that found it (`cases`, `pimcomp-nn`, `puma`); absent in findings saved
    /// before there were targets (they are `cases`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// A crash's or abort's stack frames, innermost first, each holding `file:line` where
    /// known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<String>,
    /// A crash's, abort's or rejection's own message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The sanitizer that reported the finding (`AddressSanitizer`, …), when it came from a
    /// sanitizer build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sanitizer: Option<String>,
    /// What only this finding's target records: for `cases`, the in-repo compiler's
    /// `compile_options` and an N-version hunt's `injected_into`; for `pimcomp-nn`, its
    /// pipelines and pinned time; for `puma`, the tree, quirks, pinning and data seed.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub details: serde_json::Value,
}

impl FindingMeta {
    /// A finding of `signature` (the target, the compiler and everything else to be filled
    /// in), expecting its own signature again.
    pub fn new(signature: &super::Signature, compiler: String) -> FindingMeta {
        FindingMeta {
            format: META_FORMAT,
            signature: signature.to_string(),
            signature_detail: serde_json::to_value(signature).unwrap_or_default(),
            outcome: signature.kind.to_string(),
            expect: Expectation::Signature(signature.to_string()),
            compiler,
            lowering: None,
            pimdiff_version: env!("CARGO_PKG_VERSION").to_string(),
            origin: None,
            generator: serde_json::Value::Null,
            minimization: None,
            suspects: Vec::new(),
            schedule: None,
            injected_bug: None,
            target: None,
            frames: Vec::new(),
            message: None,
            sanitizer: None,
            details: serde_json::Value::Null,
        }
    }
}

/// A value as pretty JSON with a trailing newline (how pimdiff writes every JSON file).
pub fn to_json_text<T: Serialize>(value: &T) -> String {
    // Our metadata types hold only strings, numbers and JSON values: this cannot fail.
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}
