//! `case.json` to and from [`CaseSpec`].
//!
//! Reading goes through `serde_json::Value` and a hand-written walk instead of
//! `#[derive(Deserialize)]`, so that every error names the field in `case.json` terms
//! (`op.kernel[1]`, `arch.cores`) and says what was found: serde's derived messages say
//! "invalid value: integer `-3`, expected usize at line 5 column 20", which does not tell a
//! user which of the twenty integers to fix.
//!
//! Every field is required (the format has no defaults), unknown fields are refused (a
//! misspelt optional field must not silently become its default), and `format` is checked
//! before anything else so that a future format gets "unsupported format", not a list of
//! unknown fields.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::case::{CaseArch, CaseSpec, Conv2d, Mvm, Op};
use crate::error::CaseError;

/// The only format version this crate reads and writes.
pub const FORMAT_VERSION: u64 = 1;

/// Parses the text of `case.json`. Only the JSON structure and types are checked here; the
/// values are checked by [`CaseSpec::validate`].
pub(crate) fn spec_from_json(text: &str) -> Result<CaseSpec, CaseError> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        // serde_json's message ends with the position, which the variant carries already.
        let full = e.to_string();
        let position = format!(" at line {} column {}", e.line(), e.column());
        let message = full.strip_suffix(&position).unwrap_or(&full).to_string();
        CaseError::Json {
            line: e.line(),
            column: e.column(),
            message,
        }
    })?;
    let root = object(&root, "(top level)")?;
    let format = required(root, "", "format")?;
    match format.as_u64() {
        Some(FORMAT_VERSION) => {}
        Some(_) => {
            return Err(CaseError::UnsupportedFormat {
                found: format.to_string(),
            })
        }
        None if format.as_i64().is_some() => {
            return Err(CaseError::UnsupportedFormat {
                found: format.to_string(),
            })
        }
        None => return Err(type_error("format", "the integer 1", format)),
    }
    known_fields(root, "", &["format", "op", "input_shape", "arch"])?;

    let op_value = required(root, "", "op")?;
    let op = object(op_value, "op")?;
    let kind = required(op, "op.", "kind")?;
    let kind = kind
        .as_str()
        .ok_or_else(|| type_error("op.kind", "a string (\"conv2d\" or \"mvm\")", kind))?;
    let op = match kind {
        "conv2d" => {
            known_fields(
                op,
                "op.",
                &[
                    "kind",
                    "in_channels",
                    "out_channels",
                    "kernel",
                    "stride",
                    "padding",
                    "dilation",
                    "groups",
                    "bias",
                    "relu",
                ],
            )?;
            Op::Conv2d(Conv2d {
                in_channels: size(required(op, "op.", "in_channels")?, "op.in_channels")?,
                out_channels: size(required(op, "op.", "out_channels")?, "op.out_channels")?,
                kernel: sizes::<2>(required(op, "op.", "kernel")?, "op.kernel", "[kh, kw]")?,
                stride: sizes::<2>(
                    required(op, "op.", "stride")?,
                    "op.stride",
                    "[along H, along W]",
                )?,
                padding: sizes::<4>(
                    required(op, "op.", "padding")?,
                    "op.padding",
                    "[top, left, bottom, right]",
                )?,
                dilation: sizes::<2>(
                    required(op, "op.", "dilation")?,
                    "op.dilation",
                    "[along H, along W]",
                )?,
                groups: size(required(op, "op.", "groups")?, "op.groups")?,
                bias: boolean(required(op, "op.", "bias")?, "op.bias")?,
                relu: boolean(required(op, "op.", "relu")?, "op.relu")?,
            })
        }
        "mvm" => {
            known_fields(
                op,
                "op.",
                &["kind", "in_features", "out_features", "bias", "relu"],
            )?;
            Op::Mvm(Mvm {
                in_features: size(required(op, "op.", "in_features")?, "op.in_features")?,
                out_features: size(required(op, "op.", "out_features")?, "op.out_features")?,
                bias: boolean(required(op, "op.", "bias")?, "op.bias")?,
                relu: boolean(required(op, "op.", "relu")?, "op.relu")?,
            })
        }
        other => {
            return Err(CaseError::UnknownOpKind {
                found: other.to_string(),
            })
        }
    };

    let shape_value = required(root, "", "input_shape")?;
    let items = shape_value
        .as_array()
        .ok_or_else(|| type_error("input_shape", "an array of integers", shape_value))?;
    let input_shape = items
        .iter()
        .enumerate()
        .map(|(i, v)| size(v, &format!("input_shape[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;

    let arch = object(required(root, "", "arch")?, "arch")?;
    known_fields(
        arch,
        "arch.",
        &[
            "cores",
            "arrays_per_core",
            "array_rows",
            "array_cols",
            "local_memory_bytes",
        ],
    )?;
    let arch = CaseArch {
        cores: size(required(arch, "arch.", "cores")?, "arch.cores")?,
        arrays_per_core: size(
            required(arch, "arch.", "arrays_per_core")?,
            "arch.arrays_per_core",
        )?,
        array_rows: size(required(arch, "arch.", "array_rows")?, "arch.array_rows")?,
        array_cols: size(required(arch, "arch.", "array_cols")?, "arch.array_cols")?,
        local_memory_bytes: size(
            required(arch, "arch.", "local_memory_bytes")?,
            "arch.local_memory_bytes",
        )?,
    };
    Ok(CaseSpec {
        op,
        input_shape,
        arch,
    })
}

/// `case.json` text for `spec`: `format`, `op`, `input_shape`, `arch`, one per line with
/// their contents inline and in declaration order (as in the format's documentation).
pub(crate) fn spec_to_json(spec: &CaseSpec) -> String {
    format!(
        "{{\n  \"format\": {FORMAT_VERSION},\n  \"op\": {},\n  \"input_shape\": {},\n  \"arch\": {}\n}}\n",
        inline(&spec.op),
        inline(&spec.input_shape),
        inline(&spec.arch)
    )
}

/// One-line JSON with a space after every `:` and `,` and inside braces. Safe as a textual
/// rewrite because the only strings in a spec are field names and `"conv2d"`/`"mvm"`.
fn inline<T: Serialize>(v: &T) -> String {
    // Integers, booleans and strings always serialize.
    let compact = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
    compact
        .replace(',', ", ")
        .replace(':', ": ")
        .replace('{', "{ ")
        .replace('}', " }")
}

fn object<'a>(v: &'a Value, field: &str) -> Result<&'a Map<String, Value>, CaseError> {
    v.as_object()
        .ok_or_else(|| type_error(field, "an object", v))
}

fn required<'a>(
    map: &'a Map<String, Value>,
    prefix: &str,
    key: &str,
) -> Result<&'a Value, CaseError> {
    map.get(key).ok_or_else(|| CaseError::MissingField {
        field: format!("{prefix}{key}"),
    })
}

fn known_fields(map: &Map<String, Value>, prefix: &str, known: &[&str]) -> Result<(), CaseError> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(CaseError::UnknownField {
            field: format!("{prefix}{k}"),
        }),
        None => Ok(()),
    }
}

/// A non-negative integer. Zero is accepted here and refused by validation where it is not
/// allowed (padding may be 0), so that both paths give the same [`CaseError::ZeroSize`].
fn size(v: &Value, field: &str) -> Result<usize, CaseError> {
    if let Some(u) = v.as_u64() {
        return usize::try_from(u)
            .map_err(|_| type_error(field, "an integer that fits this machine's usize", v));
    }
    if let Some(i) = v.as_i64() {
        return Err(CaseError::Negative {
            field: field.to_string(),
            value: i,
        });
    }
    Err(type_error(field, "a non-negative integer", v))
}

fn sizes<const N: usize>(
    v: &Value,
    field: &str,
    meaning: &'static str,
) -> Result<[usize; N], CaseError> {
    let expected: &'static str = match N {
        2 => "an array of 2 non-negative integers",
        _ => "an array of 4 non-negative integers",
    };
    let items = v
        .as_array()
        .filter(|a| a.len() == N)
        .ok_or_else(|| CaseError::FieldType {
            field: field.to_string(),
            expected,
            found: format!("{} (the array is {meaning})", describe(v)),
        })?;
    let mut out = [0; N];
    for (i, item) in items.iter().enumerate() {
        out[i] = size(item, &format!("{field}[{i}]"))?;
    }
    Ok(out)
}

fn boolean(v: &Value, field: &str) -> Result<bool, CaseError> {
    v.as_bool()
        .ok_or_else(|| type_error(field, "true or false", v))
}

fn type_error(field: &str, expected: &'static str, found: &Value) -> CaseError {
    CaseError::FieldType {
        field: field.to_string(),
        expected,
        found: describe(found),
    }
}

/// A short description of a JSON value for an error message.
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.len() <= 40 => format!("the string {s:?}"),
        Value::String(_) => "a long string".into(),
        Value::Array(a) if a.len() <= 8 => format!("the array {v}"),
        Value::Array(a) => format!("an array of {} elements", a.len()),
        Value::Object(_) => "an object".into(),
    }
}
