//! `case.json` to and from [`CaseSpec`], through one serde schema ([`CaseFile`] and its parts).
//!
//! The schema's structs derive `Deserialize` with unknown fields refused; every leaf (a size,
//! an array of sizes, a flag, the operator kind) is a small type whose `Deserialize` checks
//! the JSON value and says what was wrong in `case.json` terms ("expected an array of 2
//! non-negative integers, found the string "3x3""), and `serde_path_to_error` supplies the
//! field (`op.kernel[1]`, `arch.cores`). So every error names the field and says what was
//! found, where serde's own messages say "invalid type: integer `-3`, expected usize at line
//! 5 column 20".
//!
//! Every field is required (the format has no defaults), unknown fields are refused (a
//! misspelt optional field must not silently become its default), and `format` is checked
//! before anything else so that a future format gets "unsupported format", not a list of
//! unknown fields. When a file has several problems, the first in file order is reported.

use std::borrow::Cow;
use std::cell::RefCell;
use std::marker::PhantomData;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::case::{CaseArch, CaseSpec, Conv2d, Mvm, Op};
use crate::error::CaseError;

/// The only format version this crate reads and writes.
pub const FORMAT_VERSION: u64 = 1;

/// `case.json` as stored. Every field is an `Option` so that a missing one is reported by
/// its full name ([`CaseError::MissingField`]) rather than by serde.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "case.json of a pimdiff case (format 1)")]
struct CaseFile {
    /// Always 1 (checked before the schema is applied, see [`spec_from_json`]).
    #[allow(dead_code)]
    #[schemars(required, with = "FormatOne")]
    format: Option<de::IgnoredAny>,
    /// The operator: a conv2d (`kind`, `in_channels`, `out_channels`, `kernel`, `stride`,
    /// `padding`, `dilation`, `groups`, `bias`, `relu`) or an mvm (`kind`, `in_features`,
    /// `out_features`, `bias`, `relu`); the other kind's fields are refused.
    #[schemars(required)]
    op: Option<Object<OpFile>>,
    /// conv2d: `[N, C, H, W]` (NCHW); mvm: `[N, in_features]`.
    #[schemars(required)]
    input_shape: Option<Shape>,
    /// The machine the case is compiled for; a bundle's `config.json` may restate it and must
    /// then agree.
    #[schemars(required)]
    arch: Option<Object<ArchFile>>,
}

/// `format`: the number 1.
struct FormatOne;

impl JsonSchema for FormatOne {
    fn schema_name() -> Cow<'static, str> {
        "FormatOne".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "const": FORMAT_VERSION })
    }
}

/// The schema of `case.json` (`docs/reference/schemas/case.schema.json`), generated from the
/// types that read it.
pub fn case_schema() -> Schema {
    schemars::schema_for!(CaseFile)
}

/// `op`: the fields of every operator kind; those of the other kind are refused as unknown.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OpFile {
    /// `"conv2d"` or `"mvm"`.
    #[schemars(required)]
    kind: Option<Kind>,
    /// conv2d: input channels C.
    in_channels: Option<Size>,
    /// conv2d: output channels K.
    out_channels: Option<Size>,
    /// conv2d: `[kh, kw]`.
    kernel: Option<Sizes<2, KernelMeaning>>,
    /// conv2d: `[along H, along W]`, each at least 1.
    stride: Option<Sizes<2, AxesMeaning>>,
    /// conv2d: zero padding `[top, left, bottom, right]` (ONNX `pads` order).
    padding: Option<Sizes<4, PaddingMeaning>>,
    /// conv2d: `[along H, along W]`, each at least 1.
    dilation: Option<Sizes<2, AxesMeaning>>,
    /// conv2d: at least 1; `in_channels` and `out_channels` are multiples of it.
    groups: Option<Size>,
    /// mvm: input features.
    in_features: Option<Size>,
    /// mvm: output features.
    out_features: Option<Size>,
    /// Whether `bias.npy` is present and added before the ReLU.
    #[schemars(required)]
    bias: Option<Flag>,
    /// Whether ReLU is applied to the final result (never to partial sums).
    #[schemars(required)]
    relu: Option<Flag>,
}

/// `arch`: the machine the case is compiled for.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ArchFile {
    /// Cores on the chip.
    #[schemars(required)]
    cores: Option<Size>,
    /// Crossbar arrays in each core.
    #[schemars(required)]
    arrays_per_core: Option<Size>,
    /// Inputs (word lines) of one array: the length of the vector it multiplies.
    #[schemars(required)]
    array_rows: Option<Size>,
    /// Outputs (bit lines) of one array.
    #[schemars(required)]
    array_cols: Option<Size>,
    /// Scratchpad size of each core, in bytes.
    #[schemars(required)]
    local_memory_bytes: Option<Size>,
}

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
    if !root.is_object() {
        return Err(type_error("(top level)", "an object", &root));
    }
    check_format(root.get("format"))?;
    PROBLEM.with(|p| p.borrow_mut().take());
    let file: CaseFile =
        serde_path_to_error::deserialize(&root).map_err(|e| schema_error(&root, e))?;
    file.into_spec()
}

fn check_format(format: Option<&Value>) -> Result<(), CaseError> {
    let format = format.ok_or_else(|| CaseError::MissingField {
        field: "format".into(),
    })?;
    match format.as_u64() {
        Some(FORMAT_VERSION) => Ok(()),
        Some(_) => Err(CaseError::UnsupportedFormat {
            found: format.to_string(),
        }),
        None if format.as_i64().is_some() => Err(CaseError::UnsupportedFormat {
            found: format.to_string(),
        }),
        None => Err(type_error("format", "the integer 1", format)),
    }
}

impl CaseFile {
    fn into_spec(self) -> Result<CaseSpec, CaseError> {
        let mut op = required(self.op, "op")?.0;
        let op = match required(op.kind.take(), "op.kind")? {
            Kind::Conv2d => {
                op.refuse_others(&[
                    ("in_features", op.in_features.is_some()),
                    ("out_features", op.out_features.is_some()),
                ])?;
                Op::Conv2d(Conv2d {
                    in_channels: required(op.in_channels, "op.in_channels")?.0,
                    out_channels: required(op.out_channels, "op.out_channels")?.0,
                    kernel: required(op.kernel, "op.kernel")?.0,
                    stride: required(op.stride, "op.stride")?.0,
                    padding: required(op.padding, "op.padding")?.0,
                    dilation: required(op.dilation, "op.dilation")?.0,
                    groups: required(op.groups, "op.groups")?.0,
                    bias: required(op.bias, "op.bias")?.0,
                    relu: required(op.relu, "op.relu")?.0,
                })
            }
            Kind::Mvm => {
                op.refuse_others(&[
                    ("in_channels", op.in_channels.is_some()),
                    ("out_channels", op.out_channels.is_some()),
                    ("kernel", op.kernel.is_some()),
                    ("stride", op.stride.is_some()),
                    ("padding", op.padding.is_some()),
                    ("dilation", op.dilation.is_some()),
                    ("groups", op.groups.is_some()),
                ])?;
                Op::Mvm(Mvm {
                    in_features: required(op.in_features, "op.in_features")?.0,
                    out_features: required(op.out_features, "op.out_features")?.0,
                    bias: required(op.bias, "op.bias")?.0,
                    relu: required(op.relu, "op.relu")?.0,
                })
            }
        };
        let input_shape = required(self.input_shape, "input_shape")?.0;
        let arch = required(self.arch, "arch")?.0;
        let arch = CaseArch {
            cores: required(arch.cores, "arch.cores")?.0,
            arrays_per_core: required(arch.arrays_per_core, "arch.arrays_per_core")?.0,
            array_rows: required(arch.array_rows, "arch.array_rows")?.0,
            array_cols: required(arch.array_cols, "arch.array_cols")?.0,
            local_memory_bytes: required(arch.local_memory_bytes, "arch.local_memory_bytes")?.0,
        };
        Ok(CaseSpec {
            op,
            input_shape,
            arch,
        })
    }
}

impl OpFile {
    /// Fields of the other operator kind are unknown to this one.
    fn refuse_others(&self, others: &[(&str, bool)]) -> Result<(), CaseError> {
        match others.iter().find(|(_, present)| *present) {
            Some((name, _)) => Err(CaseError::UnknownField {
                field: format!("op.{name}"),
            }),
            None => Ok(()),
        }
    }
}

fn required<T>(v: Option<T>, field: &str) -> Result<T, CaseError> {
    v.ok_or_else(|| CaseError::MissingField {
        field: field.to_string(),
    })
}

/// What a leaf found wrong; the field comes from the path of the failed deserialization.
enum Problem {
    Type {
        /// An array element at fault (`op.kernel[1]`), `None` for the value itself.
        index: Option<usize>,
        expected: &'static str,
        found: String,
    },
    Negative {
        index: Option<usize>,
        value: i64,
    },
    UnknownKind(String),
}

thread_local! {
    /// The problem of the leaf that failed last on this thread. serde's errors carry only a
    /// message, so a leaf leaves its structured problem here for [`schema_error`].
    static PROBLEM: RefCell<Option<Problem>> = const { RefCell::new(None) };
}

/// Record `problem` and fail the deserialization.
fn fail<E: de::Error>(problem: Problem) -> E {
    PROBLEM.with(|p| *p.borrow_mut() = Some(problem));
    E::custom("invalid case.json field")
}

/// A failed schema deserialization as a [`CaseError`] naming the field.
fn schema_error(root: &Value, e: serde_path_to_error::Error<serde_json::Error>) -> CaseError {
    let path = e.path().to_string();
    let field = |index: Option<usize>| match index {
        Some(i) => format!("{path}[{i}]"),
        None => path.clone(),
    };
    match PROBLEM.with(|p| p.borrow_mut().take()) {
        Some(Problem::Type {
            index,
            expected,
            found,
        }) => CaseError::FieldType {
            field: field(index),
            expected,
            found,
        },
        Some(Problem::Negative { index, value }) => CaseError::Negative {
            field: field(index),
            value,
        },
        Some(Problem::UnknownKind(found)) => CaseError::UnknownOpKind { found },
        None => {
            let message = e.inner().to_string();
            // A refused field: serde_path_to_error's path ends with its name.
            if message.starts_with("unknown field `") {
                return CaseError::UnknownField { field: path };
            }
            // Otherwise a struct (`op`, `arch`) that is not an object.
            let found = root.pointer(&pointer(&path)).unwrap_or(&Value::Null);
            type_error(&path, "an object", found)
        }
    }
}

/// The JSON pointer of a serde_path_to_error path of object keys (`op` → `/op`).
fn pointer(path: &str) -> String {
    path.split('.').map(|k| format!("/{k}")).collect()
}

/// A field that must be a JSON object, holding `T`.
struct Object<T>(T);

impl<T: JsonSchema> JsonSchema for Object<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        T::json_schema(g)
    }
}

/// The schemas of the leaf types: what their `Deserialize` accepts.
macro_rules! leaf_schema {
    ($ty:ty, $name:literal, $schema:tt) => {
        impl JsonSchema for $ty {
            fn schema_name() -> Cow<'static, str> {
                $name.into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!($schema)
            }
        }
    };
}
leaf_schema!(Size, "Size", { "type": "integer", "minimum": 0 });
leaf_schema!(Shape, "Shape", { "type": "array", "items": { "type": "integer", "minimum": 0 } });
leaf_schema!(Flag, "Flag", { "type": "boolean" });
leaf_schema!(Kind, "Kind", { "type": "string", "enum": ["conv2d", "mvm"] });

impl<const N: usize, M: Meaning> JsonSchema for Sizes<N, M> {
    fn schema_name() -> Cow<'static, str> {
        format!("Sizes{N}").into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "array",
            "items": { "type": "integer", "minimum": 0 },
            "minItems": N,
            "maxItems": N,
            "description": M::MEANING,
        })
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(Object)
    }
}

/// A non-negative integer. Zero is accepted here and refused by validation where it is not
/// allowed (padding may be 0), so that both paths give the same [`CaseError::ZeroSize`].
struct Size(usize);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        size(&v, None).map(Size).map_err(fail)
    }
}

fn size(v: &Value, index: Option<usize>) -> Result<usize, Problem> {
    if let Some(u) = v.as_u64() {
        return usize::try_from(u).map_err(|_| Problem::Type {
            index,
            expected: "an integer that fits this machine's usize",
            found: describe(v),
        });
    }
    if let Some(value) = v.as_i64() {
        return Err(Problem::Negative { index, value });
    }
    Err(Problem::Type {
        index,
        expected: "a non-negative integer",
        found: describe(v),
    })
}

/// What the elements of a fixed-size array of sizes mean, for error messages.
trait Meaning {
    const MEANING: &'static str;
}
struct KernelMeaning;
impl Meaning for KernelMeaning {
    const MEANING: &'static str = "[kh, kw]";
}
struct AxesMeaning;
impl Meaning for AxesMeaning {
    const MEANING: &'static str = "[along H, along W]";
}
struct PaddingMeaning;
impl Meaning for PaddingMeaning {
    const MEANING: &'static str = "[top, left, bottom, right]";
}

/// Exactly `N` non-negative integers.
struct Sizes<const N: usize, M>([usize; N], PhantomData<M>);

impl<'de, const N: usize, M: Meaning> Deserialize<'de> for Sizes<N, M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let expected: &'static str = match N {
            2 => "an array of 2 non-negative integers",
            _ => "an array of 4 non-negative integers",
        };
        let Some(items) = v.as_array().filter(|a| a.len() == N) else {
            return Err(fail(Problem::Type {
                index: None,
                expected,
                found: format!("{} (the array is {})", describe(&v), M::MEANING),
            }));
        };
        let mut out = [0; N];
        for (i, item) in items.iter().enumerate() {
            out[i] = size(item, Some(i)).map_err(fail)?;
        }
        Ok(Sizes(out, PhantomData))
    }
}

/// `input_shape`: any number of non-negative integers (the rank is checked by validation).
struct Shape(Vec<usize>);

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let Some(items) = v.as_array() else {
            return Err(fail(Problem::Type {
                index: None,
                expected: "an array of integers",
                found: describe(&v),
            }));
        };
        let dims = items
            .iter()
            .enumerate()
            .map(|(i, item)| size(item, Some(i)));
        dims.collect::<Result<_, _>>().map(Shape).map_err(fail)
    }
}

/// `true` or `false`.
struct Flag(bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        v.as_bool().map(Flag).ok_or_else(|| {
            fail(Problem::Type {
                index: None,
                expected: "true or false",
                found: describe(&v),
            })
        })
    }
}

/// `op.kind`.
enum Kind {
    Conv2d,
    Mvm,
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        match v.as_str() {
            Some("conv2d") => Ok(Kind::Conv2d),
            Some("mvm") => Ok(Kind::Mvm),
            Some(other) => Err(fail(Problem::UnknownKind(other.to_string()))),
            None => Err(fail(Problem::Type {
                index: None,
                expected: "a string (\"conv2d\" or \"mvm\")",
                found: describe(&v),
            })),
        }
    }
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
