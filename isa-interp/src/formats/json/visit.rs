//! The streaming serde visitors: a program object, a core's instruction array, and one
//! instruction object straight into a compact [`Inst`] (through [`decode`](super::super::decode)),
//! so that no JSON tree of the instructions is ever built.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read};

use pimdiff_input::{Bounded, InputError, Limit};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::inst::{Inst, Opcode};
use crate::program::Program;

use super::super::config::{assemble, parse_config, parse_core_key};
use super::super::decode::{decode, RawInst, RawOp, Val};
use super::super::error::{CoreKeyProblem, InstError, LoadError, LoadErrorKind};
use super::super::operand::Field;
use super::super::problem::FieldProblem;

/// A whole program from a stream of at most `limit` bytes, on one thread.
pub(super) fn read_program<R: Read>(r: R, limit: Limit) -> Result<Program, LoadError> {
    let stash = Cell::new(None);
    let r = Bounded::new(r, limit);
    let mut de = serde_json::Deserializer::from_reader(io::BufReader::with_capacity(1 << 16, r));
    let result = ProgramSeed { stash: &stash }
        .deserialize(&mut de)
        .and_then(|p| de.end().map(|()| p));
    finish(result, &stash)
}

/// A whole program from text in memory, on one thread.
pub(super) fn read_program_slice(bytes: &[u8]) -> Result<Program, LoadError> {
    let stash = Cell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let result = ProgramSeed { stash: &stash }
        .deserialize(&mut de)
        .and_then(|p| de.end().map(|()| p));
    finish(result, &stash)
}

/// Read one core's instruction array (a directory's `core_<id>.json`).
pub(crate) fn read_core_slice(bytes: &[u8], core: u32) -> Result<Vec<Inst>, LoadError> {
    let stash = Cell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let result = CoreSeed {
        core,
        stash: &stash,
    }
    .deserialize(&mut de)
    .and_then(|p| de.end().map(|()| p));
    finish(result, &stash)
}

/// Turn serde_json's result into ours, preferring the typed error a visitor stashed.
fn finish<T>(
    result: Result<T, serde_json::Error>,
    stash: &Cell<Option<LoadErrorKind>>,
) -> Result<T, LoadError> {
    result.map_err(|e| {
        if let Some(kind) = stash.take() {
            return LoadError::new(kind);
        }
        if e.is_io() {
            return LoadError::from(InputError::from_io(io::Error::from(e)));
        }
        LoadError::new(json_error(&e))
    })
}

/// A serde_json error as a `Json` kind, without the position suffix serde_json appends
/// (our kind carries line and column itself).
pub(crate) fn json_error(e: &serde_json::Error) -> LoadErrorKind {
    let text = e.to_string();
    let message = match text.rfind(" at line ") {
        Some(i) if e.line() != 0 => text[..i].to_string(),
        _ => text,
    };
    LoadErrorKind::Json {
        line: e.line(),
        column: e.column(),
        message,
    }
}

/// Stash a typed error and return a serde error that aborts the parse.
fn fail<E: de::Error>(stash: &Cell<Option<LoadErrorKind>>, kind: LoadErrorKind) -> E {
    let msg = kind.to_string();
    stash.set(Some(kind));
    E::custom(msg)
}

struct ProgramSeed<'s> {
    stash: &'s Cell<Option<LoadErrorKind>>,
}

impl<'de> DeserializeSeed<'de> for ProgramSeed<'_> {
    type Value = Program;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Program, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ProgramSeed<'_> {
    type Value = Program;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a program object {\"config\": ..., \"core0\": [...], ...}")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Program, A::Error> {
        let Entries { config, cores, .. } = collect_entries(map, self.stash)?;
        let Some(config) = config else {
            let kind = LoadErrorKind::Config {
                field: "config".into(),
                problem: FieldProblem::Missing,
            };
            return Err(fail(self.stash, kind));
        };
        let config = parse_config(&config).map_err(|kind| fail(self.stash, kind))?;
        assemble(config, cores).map_err(|kind| fail(self.stash, kind))
    }
}

/// The entries of a program object (or of a part of one), not yet checked against each other.
#[derive(Default)]
pub(crate) struct Entries {
    /// The `config` object, as a tree (it is small).
    pub config: Option<serde_json::Value>,
    pub cores: BTreeMap<u32, Vec<Inst>>,
    /// The core of the last entry in the text, `None` when that entry is the config.
    pub last_core: Option<u32>,
}

/// Read the entries of a program object: `config` and `core<N>` keys, each at most once.
fn collect_entries<'de, A: MapAccess<'de>>(
    mut map: A,
    stash: &Cell<Option<LoadErrorKind>>,
) -> Result<Entries, A::Error> {
    let mut entries = Entries::default();
    while let Some(key) = map.next_key::<String>()? {
        if key == "config" {
            if entries.config.is_some() {
                let problem = CoreKeyProblem::NotACoreKey;
                return Err(fail(stash, LoadErrorKind::CoreKey { key, problem }));
            }
            entries.config = Some(map.next_value()?);
            entries.last_core = None;
        } else if let Some(core) = parse_core_key(&key, "core") {
            if entries.cores.contains_key(&core) {
                let problem = CoreKeyProblem::Duplicate(core);
                return Err(fail(stash, LoadErrorKind::CoreKey { key, problem }));
            }
            let insts = map.next_value_seed(CoreSeed { core, stash })?;
            entries.cores.insert(core, insts);
            entries.last_core = Some(core);
        } else {
            let problem = CoreKeyProblem::NotACoreKey;
            return Err(fail(stash, LoadErrorKind::CoreKey { key, problem }));
        }
    }
    Ok(entries)
}

/// Reading the entries of a program object (or of a part of one) with simd-json, which finds the text's structure with vector
/// instructions before serde sees it (and so skips the blanks of a pretty-printed file much
/// faster). Errors are `None`, which the caller then reports through serde_json: the two
/// accept the same JSON, only serde_json's messages are the ones documented. The working
/// memory (simd-json's buffers and tape) is kept from one text to the next, so that it is
/// mapped once.
pub(super) struct SimdParser {
    buffers: simd_json::Buffers,
    tape: Option<simd_json::Tape<'static>>,
}

/// How deep simd-json may nest: real programs nest 4 deep; serde_json refuses more than 128,
/// so anything deeper than this is left to it.
const SIMD_MAX_DEPTH: usize = 64;

impl Default for SimdParser {
    fn default() -> Self {
        SimdParser {
            buffers: simd_json::Buffers::with_max_depth(0, SIMD_MAX_DEPTH),
            tape: None,
        }
    }
}

impl SimdParser {
    /// The entries of the program object in `text` (which is padded and overwritten).
    pub(super) fn entries(&mut self, text: &mut Vec<u8>) -> Option<Entries> {
        if has_negative_zero(text) {
            return None;
        }
        let len = text.len();
        text.resize(len + simd_json::INPUT_PADDING, b' ');
        let mut tape = self
            .tape
            .take()
            .unwrap_or_else(simd_json::Tape::null)
            .reset();
        let entries = match simd_json::fill_tape_padded(text, len, &mut self.buffers, &mut tape) {
            Ok(()) => {
                let mut de = simd_json::Deserializer::from_tape(tape);
                let stash = Cell::new(None);
                let entries = EntriesSeed { stash: &stash }.deserialize(&mut de).ok();
                tape = de.into_tape();
                entries
            }
            Err(_) => None,
        };
        self.tape = Some(tape.reset());
        entries
    }
}

/// Whether `text` may hold the integer `-0`, which serde_json reads as the float `-0.0` and
/// simd-json as the integer 0 (the one value found on which they differ): such a text is left
/// to serde_json.
fn has_negative_zero(text: &[u8]) -> bool {
    memchr::memmem::find_iter(text, b"-0")
        .any(|i| !matches!(text.get(i + 2), Some(b'0'..=b'9' | b'.' | b'e' | b'E')))
}

struct EntriesSeed<'s> {
    stash: &'s Cell<Option<LoadErrorKind>>,
}

impl<'de> DeserializeSeed<'de> for EntriesSeed<'_> {
    type Value = Entries;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Entries, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EntriesSeed<'_> {
    type Value = Entries;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a program object {\"config\": ..., \"core0\": [...], ...}")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Entries, A::Error> {
        collect_entries(map, self.stash)
    }
}

struct CoreSeed<'s> {
    core: u32,
    stash: &'s Cell<Option<LoadErrorKind>>,
}

impl<'de> DeserializeSeed<'de> for CoreSeed<'_> {
    type Value = Vec<Inst>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<Inst>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for CoreSeed<'_> {
    type Value = Vec<Inst>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an array of instructions for core {}", self.core)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Inst>, A::Error> {
        let mut insts = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        let mut raw = RawInst::default();
        loop {
            let seed = InstSeed {
                core: self.core,
                index: insts.len(),
                raw: &mut raw,
                stash: self.stash,
            };
            match seq.next_element_seed(seed)? {
                Some(inst) => insts.push(inst),
                None => break,
            }
        }
        insts.shrink_to_fit();
        Ok(insts)
    }
}

struct InstSeed<'a> {
    core: u32,
    index: usize,
    /// Reused across instructions to avoid re-initialising a fresh one each time.
    raw: &'a mut RawInst,
    stash: &'a Cell<Option<LoadErrorKind>>,
}

impl InstSeed<'_> {
    fn error<E: de::Error>(
        &self,
        op: Option<Opcode>,
        field: Option<&'static str>,
        problem: FieldProblem,
    ) -> E {
        let e = InstError {
            core: self.core,
            index: self.index,
            op,
            field,
            problem,
        };
        fail(self.stash, LoadErrorKind::Inst(e))
    }

    fn not_an_object<E: de::Error>(self, found: &'static str) -> Result<Inst, E> {
        Err(self.error(None, None, FieldProblem::NotAnObject(found)))
    }
}

impl<'de> DeserializeSeed<'de> for InstSeed<'_> {
    type Value = Inst;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Inst, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for InstSeed<'_> {
    type Value = Inst;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an instruction object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Inst, A::Error> {
        self.raw.clear();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key {
                Key::Field(field) => {
                    let v = map.next_value_seed(ValSeed)?;
                    self.raw.set(field, v);
                }
                Key::Op => {
                    let op = map.next_value_seed(OpSeed)?;
                    self.raw.op = Some(op);
                }
                Key::Offset => match map.next_value_seed(OffsetSeed)? {
                    Ok((select, value)) => {
                        if let Some(s) = select {
                            self.raw.set(Field::NestedSelect, s);
                        }
                        if let Some(v) = value {
                            self.raw.set(Field::NestedValue, v);
                        }
                    }
                    Err(found) => self.raw.offset_wrong_type = Some(found),
                },
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match decode(self.raw) {
            Ok(inst) => Ok(inst),
            Err((op, field, problem)) => Err(self.error(op, field, problem)),
        }
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Inst, E> {
        self.not_an_object("a boolean")
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Inst, E> {
        self.not_an_object("an integer")
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Inst, E> {
        self.not_an_object("an integer")
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Inst, E> {
        self.not_an_object("a float")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Inst, E> {
        self.not_an_object("a string")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Inst, E> {
        self.not_an_object("null")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Inst, A::Error> {
        self.not_an_object("an array")
    }
}

enum Key {
    Op,
    Offset,
    Field(Field),
    Other,
}

struct KeySeed;

/// Keys are read as bytes: serde_json then skips UTF-8 validation, a measurable share of the
/// parse (an instruction has six or seven keys). A key that is not ASCII is simply unknown.
impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_bytes(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_bytes<E: de::Error>(self, key: &[u8]) -> Result<Key, E> {
        Ok(match key {
            b"op" => Key::Op,
            b"offset" => Key::Offset,
            _ => Field::from_key(key).map_or(Key::Other, Key::Field),
        })
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        self.visit_bytes(key.as_bytes())
    }
}

/// Any JSON value, as a [`Val`]; arrays and objects are skipped and reported by type.
struct ValSeed;

impl<'de> DeserializeSeed<'de> for ValSeed {
    type Value = Val;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Val, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValSeed {
    type Value = Val;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Val, E> {
        Ok(Val::Bool(b))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Val, E> {
        Ok(Val::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Val, E> {
        Ok(i64::try_from(v).map_or(Val::Huge(v), Val::Int))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Val, E> {
        Ok(Val::Float(v))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Val, E> {
        Ok(Val::Other("a string"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Val, E> {
        Ok(Val::Other("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Val, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Val::Other("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Val, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Val::Other("an object"))
    }
}

/// The `op` string.
struct OpSeed;

impl<'de> DeserializeSeed<'de> for OpSeed {
    type Value = RawOp;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<RawOp, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for OpSeed {
    type Value = RawOp;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an op name")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<RawOp, E> {
        Ok(Opcode::from_mnemonic(s).map_or_else(|| RawOp::Unknown(s.to_string()), RawOp::Known))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<RawOp, E> {
        Ok(RawOp::WrongType("a boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<RawOp, E> {
        Ok(RawOp::WrongType("an integer"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<RawOp, E> {
        Ok(RawOp::WrongType("an integer"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<RawOp, E> {
        Ok(RawOp::WrongType("a float"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<RawOp, E> {
        Ok(RawOp::WrongType("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<RawOp, A::Error> {
        ValSeed.visit_seq(seq).map(|_| RawOp::WrongType("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawOp, A::Error> {
        ValSeed
            .visit_map(map)
            .map(|_| RawOp::WrongType("an object"))
    }
}

/// The `offset` object: `Ok((offset_select, offset_value))`, or `Err(type)` when it is not an
/// object.
struct OffsetSeed;

type OffsetParts = Result<(Option<Val>, Option<Val>), &'static str>;

impl<'de> DeserializeSeed<'de> for OffsetSeed {
    type Value = OffsetParts;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<OffsetParts, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for OffsetSeed {
    type Value = OffsetParts;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an offset object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OffsetParts, A::Error> {
        let (mut select, mut value) = (None, None);
        while let Some(key) = map.next_key_seed(OffsetKeySeed)? {
            match key {
                Some(true) => select = Some(map.next_value_seed(ValSeed)?),
                Some(false) => value = Some(map.next_value_seed(ValSeed)?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Ok((select, value)))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<OffsetParts, E> {
        Ok(Err("a boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<OffsetParts, E> {
        Ok(Err("an integer"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<OffsetParts, E> {
        Ok(Err("an integer"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<OffsetParts, E> {
        Ok(Err("a float"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<OffsetParts, E> {
        Ok(Err("a string"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<OffsetParts, E> {
        Ok(Err("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<OffsetParts, A::Error> {
        ValSeed.visit_seq(seq).map(|_| Err("an array"))
    }
}

/// `Some(true)` for `offset_select`, `Some(false)` for `offset_value`, `None` otherwise.
struct OffsetKeySeed;

impl<'de> DeserializeSeed<'de> for OffsetKeySeed {
    type Value = Option<bool>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<bool>, D::Error> {
        d.deserialize_bytes(self)
    }
}

impl<'de> Visitor<'de> for OffsetKeySeed {
    type Value = Option<bool>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an offset field name")
    }
    fn visit_bytes<E: de::Error>(self, key: &[u8]) -> Result<Option<bool>, E> {
        Ok(match key {
            b"offset_select" => Some(true),
            b"offset_value" => Some(false),
            _ => None,
        })
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Option<bool>, E> {
        self.visit_bytes(key.as_bytes())
    }
}
