//! The bundle's JSON files as types with JSON Schemas: `config.json` ([`BundleConfig`]),
//! `io.json` ([`IoManifest`](crate::bundle::IoManifest)) and the crossbar export's
//! `core_<i>.json` ([`CoreFile`](crate::xbar::CoreFile)).
//!
//! The schemas are generated from the types that read the files (`schemars`), so the published
//! ones (`docs/reference/schemas/`, checked by a test) cannot drift from the reader. Each file
//! is read with [`read_typed`], whose errors name the field (`input.layout`,
//! `groups[1].rows`) and say what was expected.
//!
//! `config.json` is read by the program loader too (`formats::config`, which also accepts
//! PIMCOMP-NN's keys); [`BundleConfig`] is what a bundle's config may say, checked field by
//! field: keys outside it at the top level are ignored (pimsim-nn's configs carry many), keys
//! inside `arch` are not (a misspelt one would silently say nothing).

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::typed::{read_typed, FieldError};

/// A bundle's `config.json`: how many cores the program has, and optionally the architecture
/// it was compiled for. The case's architecture governs: whatever `arch` states must equal it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "config.json of a pimdiff bundle")]
pub struct BundleConfig {
    /// Number of cores of the program: must equal the case's `arch.cores`, and every
    /// `core_<i>.json` must have `i < core_cnt` (a core without a file runs no instructions).
    pub core_cnt: u32,
    /// The architecture the program was compiled for (optional; each key optional). What it
    /// states must equal the case's architecture: the case governs, and a bundle that claims
    /// another machine is malformed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<ArchConfig>,
    /// pimsim-nn's array group map, `{"core<i>": [arrays in group 0, arrays in group 1, ...]}`
    /// (optional: a bundle's groups come from its crossbar export).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_group_map: Option<BTreeMap<String, Vec<u32>>>,
}

/// `config.json`'s `arch`: every key optional; each stated one must equal the case's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchConfig {
    /// Crossbar arrays per core (the case's `arch.arrays_per_core`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrays_per_core: Option<u32>,
    /// Rows (word lines) of one array (the case's `arch.array_rows`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_rows: Option<u32>,
    /// Columns (bit lines) of one array (the case's `arch.array_cols`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_cols: Option<u32>,
    /// Local memory of each core in bytes (the case's `arch.local_memory_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_memory_bytes: Option<u32>,
    /// `[rows, cols]` of the network-on-chip mesh: the machine's is the most square mesh that
    /// holds the cores (`[2, 2]` for 3 or 4 cores, `[2, 3]` for 5 or 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mesh: Option<[u32; 2]>,
    /// Fraction bits of `vtanh`/`vsigm` inputs: the machine's is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frac_bits: Option<u32>,
    /// Informational (PIMCOMP-NN's `cell_precision`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell_precision: Option<u32>,
    /// Informational (PIMCOMP-NN's `adc_count`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adc_count: Option<u32>,
    /// `"array_count"`: `mvmul`'s `group` is a number of arrays (PIMCOMP-NN's reading), not a
    /// group number of the crossbar export. Bundles leave it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_reading: Option<GroupReading>,
}

/// How `mvmul`'s `group` is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupReading {
    /// `group` is the number of arrays the multiplication uses.
    ArrayCount,
}

/// The published schemas: `(file name, schema)` for `config.json`, `io.json` and the crossbar
/// export's `core_<i>.json` (`docs/reference/schemas/<file name>`).
pub fn bundle_schemas() -> Vec<(&'static str, schemars::Schema)> {
    vec![
        ("config.schema.json", schemars::schema_for!(BundleConfig)),
        (
            "io.schema.json",
            schemars::schema_for!(crate::bundle::IoManifest),
        ),
        (
            "xbar-core.schema.json",
            schemars::schema_for!(crate::xbar::CoreFile),
        ),
    ]
}

/// Reads `dir/config.json` as a [`BundleConfig`]; the error names the field.
pub fn read_config(dir: &Path) -> Result<BundleConfig, crate::bundle::BundleError> {
    let path = dir.join("config.json");
    let bytes = pimdiff_input::read(&path, pimdiff_input::limits::MAX_MANIFEST_BYTES)
        .map_err(|e| crate::bundle::input_error(&path, e))?;
    read_typed(&bytes).map_err(|source| crate::bundle::BundleError::Field { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_field_and_what_was_expected() {
        let e = read_typed::<BundleConfig>(br#"{"core_cnt": "4"}"#).unwrap_err();
        assert_eq!(e.field, "core_cnt");
        assert_eq!(e.message, r#"invalid type: string "4", expected u32"#);
        let e = read_typed::<BundleConfig>(br#"{"core_cnt": 1, "arch": {"local_memory": 4}}"#)
            .unwrap_err();
        assert_eq!(e.field, "arch.local_memory");
        assert!(e
            .message
            .starts_with("unknown field `local_memory`, expected one of"));
        let e = read_typed::<BundleConfig>(br#"{"arch": {}}"#).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.message.as_str()),
            (".", "missing field `core_cnt`")
        );
        // Other top-level keys are pimsim-nn's and are ignored.
        let c = read_typed::<BundleConfig>(br#"{"core_cnt": 2, "xbar_size": [8, 8]}"#).unwrap();
        assert_eq!(c.core_cnt, 2);
    }
}
