//! JSON Schemas of `summary.json` and `finding.json` (feature `schema`), generated from the
//! types that write them, so that the published schemas (`docs/reference/`) say exactly what
//! the code writes: the field names, types and optionality come from the serde attributes,
//! the descriptions from the doc comments.
//!
//! The few fields whose types serialize by hand are described here: an outcome kind is one
//! of [`Kind::ALL`]'s words, a shard `"i/n"`, an expectation one string. `coverage` is written
//! by `crate::coverage::Coverage`, whose fields are listed here rather than derived (the
//! coverage module keeps no schema derive of its own).

use schemars::{json_schema, Schema, SchemaGenerator};

use crate::finding::{FindingMeta, Kind};
use crate::summary::HuntSummary;

/// The schema of `summary.json` ([`HuntSummary`]).
pub fn summary_schema() -> Schema {
    schemars::schema_for!(HuntSummary)
}

/// The schema of `finding.json` ([`FindingMeta`]).
pub fn finding_schema() -> Schema {
    schemars::schema_for!(FindingMeta)
}

fn kind_words() -> Vec<&'static str> {
    Kind::ALL.iter().map(|k| k.as_str()).collect()
}

/// An outcome kind: one word of the one vocabulary every target speaks.
pub fn kind(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "description": "An outcome kind (the vocabulary every target speaks).",
        "enum": kind_words(),
    })
}

/// Cases per outcome kind: an object whose keys are kinds.
pub fn outcomes(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "Cases per outcome kind (kinds no case had are absent).",
        "propertyNames": { "enum": kind_words() },
        "additionalProperties": { "type": "integer", "minimum": 0 },
    })
}

/// A shard, `"i/n"` (0-based).
pub fn shard(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "description": "A shard `i/n` (0-based): the cases k with k mod n = i; `0/1` is the whole index space.",
        "pattern": "^[0-9]+/[0-9]+$",
    })
}

/// `summary.json`'s `coverage` (`hunt --coverage`), or absent.
pub fn coverage(_: &mut SchemaGenerator) -> Schema {
    let totals = json_schema!({
        "lines_total": { "type": "integer" },
        "lines_hit": { "type": "integer" },
        "branches_total": { "type": "integer" },
        "branches_hit": { "type": "integer" },
    });
    let file_properties = {
        let mut p = totals.as_object().cloned().unwrap_or_default();
        p.insert("file".into(), serde_json::json!({ "type": "string" }));
        p
    };
    let mut properties = totals.as_object().cloned().unwrap_or_default();
    properties.insert(
        "tool".into(),
        serde_json::json!({ "type": "string", "description": "What measured it (`gcov`)." }),
    );
    properties.insert(
        "edges_hit".into(),
        serde_json::json!({
            "type": "integer",
            "description": "Distinct edges the cases entered (the per-case edge maps' union), when recorded."
        }),
    );
    properties.insert(
        "files".into(),
        serde_json::json!({
            "type": "array",
            "description": "Each of the compiler's own source files.",
            "items": { "type": "object", "properties": file_properties,
                       "required": ["file", "lines_total", "lines_hit", "branches_total", "branches_hit"] }
        }),
    );
    properties.insert(
        "never_entered".into(),
        serde_json::json!({
            "type": "array",
            "description": "Files with lines of which none ran.",
            "items": { "type": "string" }
        }),
    );
    json_schema!({
        "type": "object",
        "description": "Line and branch coverage of the compiler's own source (`hunt --coverage`): the totals over its files, each file, and the files no case entered.",
        "properties": properties,
        "required": ["tool", "lines_total", "lines_hit", "branches_total", "branches_hit", "files", "never_entered"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schemas_name_every_field_and_refuse_unknown_ones() {
        let s = serde_json::to_value(summary_schema()).unwrap();
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["properties"]["shard"]["pattern"], "^[0-9]+/[0-9]+$");
        assert_eq!(
            s["properties"]["outcomes"]["propertyNames"]["enum"]
                .as_array()
                .map(Vec::len),
            Some(Kind::ALL.len())
        );
        let f = serde_json::to_value(finding_schema()).unwrap();
        assert_eq!(f["properties"]["expect"]["type"], "string");
        assert_eq!(f["properties"]["outcome"]["enum"][0], Kind::ALL[0].as_str());
    }
}
