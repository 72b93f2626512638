//! pimsim-nn / PIMCOMP-NN JSON: one object `{"config": {...}, "core0": [inst, ...], ...}`.
//!
//! Reading streams: a serde visitor turns each instruction object straight into a compact
//! [`Inst`] (through [`decode`](super::decode)), so a 300 MB PIMCOMP-NN file never exists as a
//! JSON tree; only the small `config` object is. Core keys may come in any order (real files
//! sort them as text, `core10` before `core2`); cores without a key are empty; a key at or
//! beyond `core_cnt`, a repeated key, or any top-level key other than `config` and `core<N>` is
//! an error.
//!
//! Writing produces one instruction object per line, cores in numeric order, every core
//! `0..core_cnt` present (an idle core is `[]`), and the field spellings pimsim-nn reads (see
//! [`write_inst`]).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read, Write};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::inst::{Inst, Opcode};
use crate::program::Program;

use super::config::{parse_config, parse_core_key, write_config, Config};
use super::decode::{decode, Field, RawInst, RawOp, Val};
use super::error::{CoreKeyProblem, FieldProblem, InstError, LoadError, LoadErrorKind};

/// Read a whole program from a JSON stream (plain JSON; decompress first for gzip, or use
/// [`super::load_program`], which detects it).
pub fn read_json<R: Read>(r: R) -> Result<Program, LoadError> {
    let stash = Cell::new(None);
    let mut de = serde_json::Deserializer::from_reader(io::BufReader::with_capacity(1 << 16, r));
    let result = ProgramSeed { stash: &stash }
        .deserialize(&mut de)
        .and_then(|p| de.end().map(|()| p));
    finish(result, &stash)
}

/// Read a whole program from JSON text in memory. Faster than [`read_json`]: serde_json parses
/// a slice without per-byte reader calls, and a large text (PIMCOMP-NN's 100–300 MB) is cut at
/// its top-level keys and its cores are parsed on all available threads. Any error sends the
/// text through the sequential parser, so errors are the same (and the first in file order)
/// whichever path ran.
pub fn read_json_slice(bytes: &[u8]) -> Result<Program, LoadError> {
    if bytes.len() >= PARALLEL_MIN_BYTES {
        if let Some(entries) = split_top_level(bytes) {
            if let Some(program) = parse_entries(bytes, &entries) {
                return Ok(program);
            }
        }
    }
    read_json_slice_sequential(bytes)
}

/// Below this size one thread parses faster than the split costs.
const PARALLEL_MIN_BYTES: usize = 4 << 20;

fn read_json_slice_sequential(bytes: &[u8]) -> Result<Program, LoadError> {
    let stash = Cell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let result = ProgramSeed { stash: &stash }
        .deserialize(&mut de)
        .and_then(|p| de.end().map(|()| p));
    finish(result, &stash)
}

/// One top-level entry: the key's bytes (between the quotes) and the value's byte range.
type Entry = (Range<usize>, Range<usize>);

/// Cut a JSON object into its top-level entries without parsing the values. The glue between
/// values (braces, quotes of keys, colons, commas) is checked strictly here, and each value is
/// later parsed in full by serde_json, so a text is accepted only if it is valid JSON. Returns
/// `None` for anything unusual (malformed text, a key with escapes): the caller then uses the
/// sequential parser, which reports the error properly.
fn split_top_level(b: &[u8]) -> Option<Vec<Entry>> {
    let ws = |mut i: usize| {
        while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        i
    };
    let mut entries = Vec::new();
    let mut i = ws(0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(i + 1);
    if b.get(i) == Some(&b'}') {
        i += 1;
    } else {
        loop {
            if b.get(i) != Some(&b'"') {
                return None;
            }
            let key_start = i + 1;
            let key_end = key_start
                + b[key_start..]
                    .iter()
                    .position(|&c| c == b'"' || c == b'\\')?;
            if b[key_end] != b'"' {
                return None;
            }
            i = ws(key_end + 1);
            if b.get(i) != Some(&b':') {
                return None;
            }
            let value_start = ws(i + 1);
            let value_end = skip_value(b, value_start)?;
            entries.push((key_start..key_end, value_start..value_end));
            i = ws(value_end);
            match b.get(i) {
                Some(b',') => i = ws(i + 1),
                Some(b'}') => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (ws(i) == b.len()).then_some(entries)
}

/// The end of the JSON value starting at `i` (brackets matched, strings skipped; the value's
/// own validity is left to serde_json).
fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i + 1),
        b'[' | b'{' => {
            let mut depth = 0usize;
            loop {
                let c = *b.get(i)?;
                i += 1;
                match c {
                    b'"' => i = skip_string(b, i)?,
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {
            let len = b[i..]
                .iter()
                .position(|&c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'));
            Some(len.map_or(b.len(), |n| i + n))
        }
    }
}

/// The index just past the closing quote of a string whose body starts at `i`.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let c = *b.get(i)?;
        i += 1;
        match c {
            b'"' => return Some(i),
            b'\\' => i += 1,
            _ => {}
        }
    }
}

/// Parse split entries, the cores on all available threads. `None` on any problem (the caller
/// then reparses sequentially for the error).
fn parse_entries(b: &[u8], entries: &[Entry]) -> Option<Program> {
    let mut config = None;
    let mut cores: Vec<(u32, Range<usize>)> = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let key = std::str::from_utf8(&b[key.clone()]).ok()?;
        if key == "config" {
            if config.is_some() {
                return None;
            }
            config = Some(value.clone());
        } else {
            cores.push((parse_core_key(key, "core")?, value.clone()));
        }
    }
    let config: serde_json::Value = serde_json::from_slice(&b[config?]).ok()?;
    let config = parse_config(&config).ok()?;
    // Largest first, so that the threads finish together.
    cores.sort_by_key(|(_, r)| std::cmp::Reverse(r.len()));
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some((core, range)) = cores.get(k) else {
                return Some(done);
            };
            done.push((*core, read_core_slice(&b[range.clone()], *core).ok()?));
        }
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(cores.len())
        .max(1);
    // One list of parsed cores per thread; `None` where a thread met an error.
    type Parsed = Option<Vec<(u32, Vec<Inst>)>>;
    let parsed: Vec<Parsed> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut all = vec![work()];
        all.extend(handles.into_iter().map(|h| h.join().ok().flatten()));
        all
    });
    let mut by_core = BTreeMap::new();
    for (core, insts) in parsed.into_iter().flatten().flatten() {
        if by_core.insert(core, insts).is_some() {
            return None;
        }
    }
    if by_core.len() != cores.len() {
        return None;
    }
    assemble(config, by_core).ok()
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

/// Write `program` as one JSON object.
pub fn write_json<W: Write>(program: &Program, w: W) -> io::Result<()> {
    let mut w = io::BufWriter::with_capacity(1 << 16, w);
    w.write_all(b"{\n\"config\": ")?;
    write_config(program, &mut w)?;
    for (i, insts) in program.cores.iter().enumerate() {
        write!(w, ",\n\"core{i}\": ")?;
        write_core(insts, &mut w)?;
    }
    w.write_all(b"\n}\n")?;
    w.flush()
}

/// Write one core's instructions as a JSON array, one instruction per line.
pub(crate) fn write_core<W: Write>(insts: &[Inst], w: &mut W) -> io::Result<()> {
    if insts.is_empty() {
        return w.write_all(b"[]");
    }
    w.write_all(b"[")?;
    for (i, inst) in insts.iter().enumerate() {
        w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
        write_inst(inst, w)?;
    }
    w.write_all(b"\n]")
}

/// Write one instruction object. Spellings follow isa.md's field table and design.md's rules
/// for pimsim-nn: `offset` is always an object (`sld` alone uses a top-level `offset_value`);
/// `lmv` and `lldi` give their byte count as `len`, `ld`/`st`/`send`/`recv` as `size`; `send`
/// names its source in both `rd` and `rs1`; `mvmul` always has `mbiw`; a float-origin `lldi`
/// immediate is written as a float (`3.0`) so that it reads back as one.
pub fn write_inst<W: Write + ?Sized>(inst: &Inst, w: &mut W) -> io::Result<()> {
    let op = inst.opcode();
    write!(w, "{{\"op\": \"{}\"", op.mnemonic())?;
    match *inst {
        Inst::Nop => {}
        Inst::Sldi { rd, imm } => write!(w, ", \"rd\": {}, \"imm\": {imm}", rd.index())?,
        Inst::Sld { rd, rs1, offset } => write!(
            w,
            ", \"rd\": {}, \"rs1\": {}, \"offset_value\": {offset}",
            rd.index(),
            rs1.index()
        )?,
        Inst::Scalar { rd, rs1, rs2, .. } => write!(
            w,
            ", \"rd\": {}, \"rs1\": {}, \"rs2\": {}",
            rd.index(),
            rs1.index(),
            rs2.index()
        )?,
        Inst::ScalarImm { rd, rs1, imm, .. } => write!(
            w,
            ", \"rd\": {}, \"rs1\": {}, \"imm\": {imm}",
            rd.index(),
            rs1.index()
        )?,
        Inst::Setbw { ibiw, obiw } => {
            write!(w, ", \"ibiw\": {}, \"obiw\": {}", ibiw.bits(), obiw.bits())?
        }
        Inst::Mvmul {
            rd,
            rs1,
            mbiw,
            relu,
            group,
        } => write!(
            w,
            ", \"rd\": {}, \"rs1\": {}, \"mbiw\": {}, \"relu\": {}, \"group\": {group}",
            rd.index(),
            rs1.index(),
            mbiw.bits(),
            relu as u8
        )?,
        Inst::BinVec {
            rd,
            rs1,
            rs2,
            len,
            offset,
            ..
        } => {
            write!(
                w,
                ", \"rd\": {}, \"rs1\": {}, \"rs2\": {}, \"len\": {len}",
                rd.index(),
                rs1.index(),
                rs2.index()
            )?;
            write_offset(w, offset.select, offset.value)?
        }
        Inst::UnVec {
            rd,
            rs1,
            len,
            offset,
            ..
        } => {
            write!(
                w,
                ", \"rd\": {}, \"rs1\": {}, \"len\": {len}",
                rd.index(),
                rs1.index()
            )?;
            write_offset(w, offset.select, offset.value)?
        }
        Inst::Vavg {
            rd,
            rs1,
            rs2,
            len,
            offset,
        } => {
            write!(
                w,
                ", \"rd\": {}, \"rs1\": {}, \"rs2\": {}, \"len\": {len}",
                rd.index(),
                rs1.index(),
                rs2.index()
            )?;
            write_offset(w, 0, offset)?
        }
        Inst::Vmv { rd, rs1, rs2, len } => write!(
            w,
            ", \"rd\": {}, \"rs1\": {}, \"rs2\": {}, \"len\": {len}",
            rd.index(),
            rs1.index(),
            rs2.index()
        )?,
        Inst::Mem {
            op: mem_op,
            rd,
            rs1,
            size,
            offset,
        } => {
            let key = if mem_op == crate::inst::MemOp::Lmv {
                "len"
            } else {
                "size"
            };
            write!(
                w,
                ", \"rd\": {}, \"rs1\": {}, \"{key}\": {size}",
                rd.index(),
                rs1.index()
            )?;
            write_offset(w, offset.select, offset.value)?
        }
        Inst::Lldi {
            rd,
            imm,
            size,
            offset,
            from_float,
        } => {
            let dot = if from_float { ".0" } else { "" };
            write!(
                w,
                ", \"rd\": {}, \"imm\": {imm}{dot}, \"len\": {size}",
                rd.index()
            )?;
            write_offset(w, 0, offset)?
        }
        Inst::Send {
            rs1,
            core,
            size,
            offset,
        } => {
            write!(
                w,
                ", \"rd\": {0}, \"rs1\": {0}, \"core\": {core}, \"size\": {size}",
                rs1.index()
            )?;
            write_offset(w, 0, offset)?
        }
        Inst::Recv {
            rd,
            core,
            size,
            offset,
        } => {
            write!(
                w,
                ", \"rd\": {}, \"core\": {core}, \"size\": {size}",
                rd.index()
            )?;
            write_offset(w, 0, offset)?
        }
        Inst::Wait { event, value } => write!(
            w,
            ", \"event_register\": {}, \"wait_value\": {value}",
            event.index()
        )?,
        Inst::Sync { event, core } => write!(
            w,
            ", \"event_register\": {}, \"core\": {core}",
            event.index()
        )?,
    }
    w.write_all(b"}")
}

fn write_offset<W: Write + ?Sized>(w: &mut W, select: u8, value: i32) -> io::Result<()> {
    write!(
        w,
        ", \"offset\": {{\"offset_select\": {select}, \"offset_value\": {value}}}"
    )
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
            let kind = e.io_error_kind().unwrap_or(io::ErrorKind::Other);
            return LoadError::new(LoadErrorKind::Io(io::Error::new(kind, e.to_string())));
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

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Program, A::Error> {
        let mut config: Option<serde_json::Value> = None;
        let mut cores: BTreeMap<u32, Vec<Inst>> = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "config" {
                if config.is_some() {
                    let problem = CoreKeyProblem::NotACoreKey;
                    return Err(fail(self.stash, LoadErrorKind::CoreKey { key, problem }));
                }
                config = Some(map.next_value()?);
            } else if let Some(core) = parse_core_key(&key, "core") {
                if cores.contains_key(&core) {
                    let problem = CoreKeyProblem::Duplicate(core);
                    return Err(fail(self.stash, LoadErrorKind::CoreKey { key, problem }));
                }
                let insts = map.next_value_seed(CoreSeed {
                    core,
                    stash: self.stash,
                })?;
                cores.insert(core, insts);
            } else {
                let problem = CoreKeyProblem::NotACoreKey;
                return Err(fail(self.stash, LoadErrorKind::CoreKey { key, problem }));
            }
        }
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

/// Put the parsed cores into a program of `config.core_cnt` cores.
pub(crate) fn assemble(
    config: Config,
    cores: BTreeMap<u32, Vec<Inst>>,
) -> Result<Program, LoadErrorKind> {
    let core_cnt = config.core_cnt;
    let mut out = vec![Vec::new(); core_cnt as usize];
    for (core, insts) in cores {
        if core >= core_cnt {
            let problem = CoreKeyProblem::BeyondCoreCount { core, core_cnt };
            return Err(LoadErrorKind::CoreKey {
                key: format!("core{core}"),
                problem,
            });
        }
        out[core as usize] = insts;
    }
    Ok(Program {
        cores: out,
        groups: config.groups,
        arch: config.arch,
    })
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
