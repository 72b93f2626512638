//! Parsing large JSON programs on several threads. In memory, the text is cut at its
//! top-level keys without parsing the values, and each core's array is parsed on its own by
//! [`read_core_slice`]. While a gzip stream is inflated, the text is cut into parts that are
//! JSON objects of their own (see [`Cutter`]), parsed by simd-json ([`SimdParser`]) on the
//! other threads and joined in order. Every problem makes these return `None` (or
//! [`Streamed::Failed`]): the caller then parses the whole text sequentially with
//! serde_json, which reports the error properly, so that the errors do not depend on the
//! path taken.

use std::collections::BTreeMap;
use std::io::Read;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Mutex;

use pimdiff_input::limits::MAX_PROGRAM_BYTES;
use pimdiff_input::{gunzip_reader, InputError};

use crate::inst::Inst;
use crate::program::Program;

use super::super::config::{assemble, parse_config, parse_core_key};
use super::visit::{read_core_slice, Entries, SimdParser};

/// Below this size one thread parses faster than the split costs.
pub(super) const PARALLEL_MIN_BYTES: usize = 4 << 20;

/// Parse `bytes` with its cores on all available threads.
pub(super) fn parse_slice(bytes: &[u8]) -> Option<Program> {
    let entries = split_top_level(bytes)?;
    parse_entries(bytes, &entries)
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

/// What [`parse_gzip`] found.
pub(super) enum Streamed {
    Program(Program),
    /// The inflated text does not start with `{`: not a JSON program (assembly text, say).
    NotJson,
    /// The gzip stream itself is bad (truncated, corrupt, beyond its limit, empty).
    Input(InputError),
    /// Anything else: the caller parses the inflated text sequentially for the error.
    Failed,
}

/// A part of the text, itself a JSON object (see [`Cutter`]).
struct Part {
    text: Vec<u8>,
    /// Its place among the parts, from 0.
    index: usize,
    /// The core whose instruction array the part continues from the part before: its first
    /// entry, whose key the cutter wrote.
    continues: Option<u32>,
}

/// A part as parsed.
struct Parsed {
    index: usize,
    continues: Option<u32>,
    entries: Entries,
}

/// Inflate `compressed` on this thread, cutting the text into parts as it comes (see
/// [`Cutter`]), while the other threads parse the parts already complete. The part buffers
/// come back to this thread once parsed, so that the text is copied into memory that is
/// already mapped.
pub(super) fn parse_gzip(compressed: &[u8]) -> Streamed {
    parse_stream(gunzip_reader(compressed, MAX_PROGRAM_BYTES), PART_BYTES)
}

/// [`parse_gzip`] over any reader, cutting parts inside core arrays from `part_bytes` on.
fn parse_stream(reader: impl Read, part_bytes: usize) -> Streamed {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let failed = AtomicBool::new(false);
    let (tx, rx) = mpsc::sync_channel::<Part>(threads * 2);
    let spare = Spare::default();
    let rx = Mutex::new(rx);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| parse_parts(&rx, &failed, &spare)))
            .collect();
        let mut cutter = Cutter::new(&spare, part_bytes, |part| {
            !failed.load(Ordering::Relaxed) && tx.send(part).is_ok()
        });
        let cut = cutter.run(reader);
        let count = cutter.index;
        drop(cutter);
        drop(tx);
        let parsed: Vec<_> = workers.into_iter().map(|h| h.join().ok()).collect();
        match cut {
            Cut::Done => {}
            Cut::NotJson => return Streamed::NotJson,
            Cut::Input(e) => return Streamed::Input(e),
            Cut::Failed => return Streamed::Failed,
        }
        if failed.load(Ordering::Relaxed) {
            return Streamed::Failed;
        }
        let parsed: Option<Vec<Vec<Parsed>>> = parsed.into_iter().collect();
        parsed
            .and_then(|p| merge(p, count))
            .map_or(Streamed::Failed, Streamed::Program)
    })
}

/// The program made of the parsed parts; `None` when a part is missing, an entry repeats, a
/// continued core is not the one the part before ended with, the config is missing, or the
/// program is invalid (the caller then reparses sequentially for the error).
fn merge(parsed: Vec<Vec<Parsed>>, count: usize) -> Option<Program> {
    let mut parts: Vec<Parsed> = parsed.into_iter().flatten().collect();
    parts.sort_unstable_by_key(|p| p.index);
    if parts.len() != count || parts.iter().enumerate().any(|(i, p)| p.index != i) {
        return None;
    }
    let mut config = None;
    let mut pieces: BTreeMap<u32, Vec<Vec<Inst>>> = BTreeMap::new();
    let mut last_core = None;
    for Parsed {
        continues, entries, ..
    } in parts
    {
        if let Some(c) = entries.config {
            if config.replace(c).is_some() {
                return None;
            }
        }
        for (core, insts) in entries.cores {
            if continues == Some(core) {
                if last_core != Some(core) {
                    return None;
                }
                pieces.get_mut(&core)?.push(insts);
            } else if pieces.insert(core, vec![insts]).is_some() {
                return None;
            }
        }
        last_core = entries.last_core;
    }
    let cores = pieces
        .into_iter()
        .map(|(core, p)| {
            // The first piece grows in place (a large vector is remapped, not copied).
            let total = p.iter().map(Vec::len).sum::<usize>();
            let mut p = p.into_iter();
            let mut insts = p.next().unwrap_or_default();
            insts.reserve_exact(total - insts.len());
            p.for_each(|more| insts.extend(more));
            (core, insts)
        })
        .collect();
    let config = parse_config(&config?).ok()?;
    assemble(config, cores).ok()
}

/// Emptied part buffers, for the cutter to fill again.
#[derive(Default)]
struct Spare(Mutex<Vec<Vec<u8>>>);

impl Spare {
    fn put(&self, mut buf: Vec<u8>) {
        buf.clear();
        if let Ok(mut spare) = self.0.lock() {
            spare.push(buf);
        }
    }

    /// An emptied buffer, or a new one.
    fn take(&self) -> Vec<u8> {
        self.0
            .lock()
            .ok()
            .and_then(|mut spare| spare.pop())
            .unwrap_or_default()
    }
}

/// A worker: parse the parts it receives until the channel closes, handing each emptied buffer
/// back to `spare`. After a failure anywhere it only drains the channel, so that the cutter
/// never blocks on a full one.
fn parse_parts(rx: &Mutex<Receiver<Part>>, failed: &AtomicBool, spare: &Spare) -> Vec<Parsed> {
    let mut done = Vec::new();
    let mut parser = SimdParser::default();
    loop {
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => {
                failed.store(true, Ordering::Relaxed);
                return done;
            }
        };
        let Ok(mut part) = job else {
            return done;
        };
        if !failed.load(Ordering::Relaxed) {
            match parser.entries(&mut part.text) {
                Some(entries) => done.push(Parsed {
                    index: part.index,
                    continues: part.continues,
                    entries,
                }),
                None => failed.store(true, Ordering::Relaxed),
            }
        }
        spare.put(part.text);
    }
}

/// What [`Cutter::run`] found.
enum Cut {
    /// Every part was handed out.
    Done,
    NotJson,
    Input(InputError),
    Failed,
}

/// How many bytes are inflated at a time.
const READ_BYTES: usize = 1 << 18;

/// How many bytes must follow a place before it is checked as a cut (unless the text ended):
/// enough for `"core<digits>"`, blanks and the colon of any real file. A place that does not
/// fit is not cut at, which only makes a part longer.
const LOOKAHEAD: usize = 64;

/// The length from which a part is cut inside a core's instruction array: parts of about
/// this size keep simd-json's working memory (about four times the text) small and reused.
const PART_BYTES: usize = 1 << 20;

/// Cuts the text, while it is read, into parts that are each a JSON object of their own.
///
/// At every `,` followed (after blanks) by a key `"core<digits>"` and a colon, the `,` ends
/// one part as a `}`, and the next part starts with a `{` before the key. A part longer than
/// `part_bytes` ([`PART_BYTES`]) that is inside that core's array is also cut between two instructions, at
/// a `}` followed by a `,` and a `{`: the part is closed with `]}` after the `}`, and the next
/// one opened with `{"core<N>":[` before the `{` (it *continues* core N).
///
/// Such a place may also be inside a value (an instruction with a `core5` field, a string);
/// the part before it is then no valid JSON object (its brackets or quotes do not balance),
/// its parse fails and the caller reparses the text sequentially. If every part parses, the
/// text was one valid object whose entries are those of the parts. Nothing is parsed here:
/// finding the places is a vectorised substring search.
struct Cutter<'a, E> {
    part: Vec<u8>,
    /// The current part's index: once done, how many parts were handed out.
    index: usize,
    continues: Option<u32>,
    /// `part[..searched]` holds no key still to check.
    searched: usize,
    /// The exact scan of the first entry, before which nothing is cut.
    head: Head,
    /// Where to look on for a cut between instructions.
    inner_from: usize,
    /// The core whose array the current part is in, when it is known to be.
    core: Option<u32>,
    /// The length from which a part is cut inside a core's array.
    part_bytes: usize,
    finder: memchr::memmem::Finder<'static>,
    spare: &'a Spare,
    emit: E,
}

impl<'a, E: FnMut(Part) -> bool> Cutter<'a, E> {
    fn new(spare: &'a Spare, part_bytes: usize, emit: E) -> Self {
        Cutter {
            part: Vec::new(),
            index: 0,
            continues: None,
            searched: 0,
            head: Head::default(),
            inner_from: part_bytes,
            core: None,
            part_bytes,
            finder: memchr::memmem::Finder::new(b"\"core"),
            spare,
            emit,
        }
    }

    /// Read `r` to its end, handing each part to `emit` (which says whether to go on) as soon
    /// as it is complete.
    fn run(&mut self, mut r: impl Read) -> Cut {
        let mut buf = vec![0u8; READ_BYTES];
        let mut started = false;
        loop {
            let n = match r.read(&mut buf) {
                Ok(n) => n,
                Err(e) => return Cut::Input(InputError::from_io(e)),
            };
            if !started && n > 0 {
                match buf[..n].iter().find(|c| !c.is_ascii_whitespace()) {
                    Some(b'{') => started = true,
                    Some(_) => return Cut::NotJson,
                    None => {}
                }
            }
            self.part.extend_from_slice(&buf[..n]);
            if !self.head.done {
                if !self.head.scan(&self.part) {
                    if n == 0 {
                        break;
                    }
                    continue;
                }
                // Still in the first part: the head's end is an index into it.
                self.searched = self.head.pos;
            }
            // Places in the last `LOOKAHEAD` bytes are checked after the next read.
            let lookahead = if n == 0 { 0 } else { LOOKAHEAD };
            let ok = self.cut_at_keys(lookahead) && self.cut_inside(lookahead);
            if !ok {
                return Cut::Failed;
            }
            if n == 0 {
                break;
            }
        }
        let last = std::mem::take(&mut self.part);
        if !started || !self.hand_out(last) {
            return Cut::Failed;
        }
        Cut::Done
    }

    /// Cut at every core key found; false when `emit` said to stop.
    fn cut_at_keys(&mut self, lookahead: usize) -> bool {
        while let Some(at) = self
            .finder
            .find(&self.part[self.searched..])
            .map(|i| self.searched + i)
        {
            if at + lookahead >= self.part.len() {
                break;
            }
            self.searched = at + 1;
            let Some((comma, core)) = key_after_comma(&self.part, at) else {
                continue;
            };
            let mut next = self.spare.take();
            next.push(b'{');
            next.extend_from_slice(&self.part[comma + 1..]);
            self.part.truncate(comma);
            self.part.push(b'}');
            let done = std::mem::replace(&mut self.part, next);
            if !self.hand_out(done) {
                return false;
            }
            self.continues = None;
            self.core = Some(core);
            self.searched = at - comma + 1;
            self.inner_from = self.part_bytes;
        }
        self.searched = self.searched.max(self.part.len().saturating_sub(lookahead));
        true
    }

    /// Cut a long part between two instructions of its core; false when `emit` said to stop.
    fn cut_inside(&mut self, lookahead: usize) -> bool {
        let Some(core) = self.core else {
            return true;
        };
        let end = self.part.len().saturating_sub(lookahead);
        while self.inner_from < end {
            let Some(close) = memchr::memchr(b'}', &self.part[self.inner_from..end]) else {
                self.inner_from = end;
                break;
            };
            let close = self.inner_from + close;
            self.inner_from = close + 1;
            let Some(comma) = between_objects(&self.part, close) else {
                continue;
            };
            let mut next = self.spare.take();
            next.extend_from_slice(format!("{{\"core{core}\":[").as_bytes());
            let prefix = next.len();
            next.extend_from_slice(&self.part[comma + 1..]);
            self.part.truncate(comma);
            self.part.extend_from_slice(b"]}");
            let done = std::mem::replace(&mut self.part, next);
            if !self.hand_out(done) {
                return false;
            }
            self.continues = Some(core);
            self.searched = (self.searched + prefix).saturating_sub(comma + 1);
            self.inner_from = self.part_bytes;
            return true;
        }
        true
    }

    /// Hand `text` out as the current part, and count it.
    fn hand_out(&mut self, text: Vec<u8>) -> bool {
        let part = Part {
            text,
            index: self.index,
            continues: self.continues,
        };
        self.index += 1;
        (self.emit)(part)
    }
}

/// An exact scan (strings and brackets followed byte by byte) of the text's first top-level
/// entry: the config in the files PIMCOMP-NN and pimdiff write, whose `array_group_map` has
/// `"core<N>"` keys of its own. Only after it does the [`Cutter`] look for cut places.
#[derive(Default)]
struct Head {
    /// How far the text was scanned; once done, the index of the `,` or `}` that ends the
    /// first entry.
    pos: usize,
    depth: u32,
    in_string: bool,
    escaped: bool,
    done: bool,
}

impl Head {
    /// Scan on in `text` (the text so far); true once the first entry has ended.
    fn scan(&mut self, text: &[u8]) -> bool {
        while !self.done && self.pos < text.len() {
            let c = text[self.pos];
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == b'"' {
                    self.in_string = false;
                }
            } else {
                match c {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth = self.depth.saturating_sub(1);
                        self.done = self.depth == 0;
                    }
                    b',' => self.done = self.depth == 1,
                    _ => {}
                }
            }
            if !self.done {
                self.pos += 1;
            }
        }
        self.done
    }
}

fn is_blank(c: &u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// Whether the text at `at` (a `"` followed by `core`) is a key `"core<N>"` followed by a
/// colon and preceded by a comma: the comma's index and N.
fn key_after_comma(b: &[u8], at: usize) -> Option<(usize, u32)> {
    let rest = &b[at + 5..];
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    let core = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    let rest = rest[digits..].strip_prefix(b"\"")?;
    let colon = rest.iter().position(|c| !is_blank(c))?;
    if rest[colon] != b':' {
        return None;
    }
    let comma = b[..at].iter().rposition(|c| !is_blank(c))?;
    (b[comma] == b',').then_some((comma, core))
}

/// Whether the `}` at `close` is followed by a `,` and a `{` (blanks aside): the comma's index.
fn between_objects(b: &[u8], close: usize) -> Option<usize> {
    let comma = close + 1 + b[close + 1..].iter().position(|c| !is_blank(c))?;
    if b[comma] != b',' {
        return None;
    }
    let open = b[comma + 1..].iter().position(|c| !is_blank(c))?;
    (b[comma + 1 + open] == b'{').then_some(comma)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::{read_json_slice, write_json};
    use super::*;
    use crate::gen;
    use crate::inst::Inst;

    fn to_json(p: &Program) -> Vec<u8> {
        let mut out = Vec::new();
        write_json(p, &mut out).unwrap();
        out
    }

    /// The streamed parse of `text` with parts cut inside arrays from `part_bytes` on.
    fn streamed(text: &[u8], part_bytes: usize) -> Option<Program> {
        match parse_stream(text, part_bytes) {
            Streamed::Program(p) => Some(p),
            _ => None,
        }
    }

    #[test]
    fn cores_cut_into_many_parts_are_joined_in_order() {
        let core = |n: i32| -> Vec<Inst> {
            (0..n)
                .map(|i| Inst::Sldi {
                    rd: crate::inst::Reg::new(i as u32 % 32).unwrap(),
                    imm: i,
                })
                .collect()
        };
        let p = Program {
            cores: vec![core(300), vec![], core(7), core(1000)],
            ..Program::default()
        };
        let text = to_json(&p);
        for part_bytes in [1, 64, 1000, 1 << 20] {
            assert_eq!(
                streamed(&text, part_bytes).as_ref(),
                Some(&p),
                "{part_bytes}"
            );
        }
    }

    #[test]
    fn cut_places_inside_values_make_the_stream_fail() {
        // A `core1` field in an instruction and a string holding `}, {`: the parts cut there
        // are no valid objects, so the caller reparses the whole text sequentially.
        let text = br#"{"config": {"core_cnt": 2}, "core0": [{"op": "nop", "x": "}, {"},
            {"op": "nop", "core1": 3}], "core1": [{"op": "nop"}]}"#;
        for part_bytes in [1, 1 << 20] {
            assert!(matches!(
                parse_stream(&text[..], part_bytes),
                Streamed::Failed
            ));
        }
        assert_eq!(
            read_json_slice(text).unwrap().cores,
            vec![vec![Inst::Nop, Inst::Nop], vec![Inst::Nop]]
        );
    }

    #[test]
    fn edge_values_stream_only_where_the_sequential_parser_agrees() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let values = [
            "1e400",
            "-1e400",
            "1.5e-400",
            "18446744073709551616",
            "-9223372036854775809",
            "01",
            "-",
            "1.",
            ".5",
            "+1",
            "NaN",
            "Infinity",
            "1E2",
            "-0",
            "0.0e0",
            r#""\ud800""#,
            r#""\udc00x""#,
            r#""\u0000""#,
            r#""\x""#,
            "\"tab\tin\"",
            "\"\u{1}\"",
            "\"é\"",
            "true",
            "null",
            "{}",
            "[]",
            "{\"a\":}",
            &deep,
        ];
        for value in values {
            for field in ["x", "imm"] {
                let text = format!(
                    r#"{{"config": {{"core_cnt": 1}}, "core0": [{{"op": "sldi", "rd": 1, "imm": 2, "{field}": {value}}}]}}"#
                );
                let sequential = read_json_slice(text.as_bytes()).ok();
                if let Some(p) = streamed(text.as_bytes(), 1) {
                    assert_eq!(Some(p), sequential, "{text}");
                }
            }
        }
        // serde_json does not check the UTF-8 of the strings it skips, simd-json does: such a
        // text is left to serde_json.
        let bad_utf8 =
            b"{\"config\": {\"core_cnt\": 1}, \"core0\": [{\"op\": \"nop\", \"x\": \"\xff\"}]}";
        assert!(streamed(bad_utf8, 1).is_none());
        assert_eq!(
            read_json_slice(bad_utf8).unwrap().cores,
            vec![vec![Inst::Nop]]
        );
    }

    #[test]
    fn odd_but_valid_instructions_stream_to_the_sequential_program() {
        // Unknown keys, repeated fields (the last wins), keys in any order, an offset object
        // with extra keys, a config with nested values: all valid, all on the fast path.
        let insts = [
            r#"{"op": "sldi", "rd": 1, "imm": 2, "x": {"y": [1, "z", null]}}"#,
            r#"{"imm": 5, "rd": 2, "imm": 7, "op": "sldi"}"#,
            r#"{"op": "nop", "op": "sldi", "rd": 3, "imm": -4}"#,
            r#"{"op": "vvadd", "rd": 0, "rs1": 1, "rs2": 2, "len": 4, "offset": {"w": true, "offset_value": 0, "offset_select": 0}}"#,
        ];
        for inst in insts {
            let text = format!(
                r#"{{"config": {{"core_cnt": 1, "extra": {{"a": [1.5, -2, 18446744073709551615]}}}}, "core0": [{inst}]}}"#
            );
            let sequential = read_json_slice(text.as_bytes());
            assert!(sequential.is_ok(), "{text}: {sequential:?}");
            assert_eq!(streamed(text.as_bytes(), 1), sequential.ok(), "{text}");
        }
        // Wrong types and unknown ops are errors the sequential parser reports; the stream
        // gives nothing of its own for them.
        for inst in [
            r#"{"op": 3}"#,
            r#"{"op": "frobnicate"}"#,
            r#"{"op": "ld", "rd": 1, "rs1": 2, "offset": 4, "size": 8}"#,
            r#"{"op": "sldi", "rd": "1", "imm": 2}"#,
            r#"[1]"#,
        ] {
            let text = format!(r#"{{"config": {{"core_cnt": 1}}, "core0": [{inst}]}}"#);
            assert!(read_json_slice(text.as_bytes()).is_err(), "{text}");
            assert!(streamed(text.as_bytes(), 1).is_none(), "{text}");
        }
    }

    #[test]
    fn not_json_and_blank_texts() {
        assert!(matches!(
            parse_stream(&b"  sync\n"[..], 1),
            Streamed::NotJson
        ));
        assert!(matches!(parse_stream(&b" \n "[..], 1), Streamed::Failed));
        assert!(matches!(parse_stream(&b""[..], 1), Streamed::Failed));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Whatever the cuts, a streamed parse gives the sequential parser's program, and a
        /// written program always streams.
        #[test]
        fn streamed_parses_agree_with_the_sequential_parser(
            p in gen::arb_program(4, 24),
            part_bytes in 1usize..400,
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        ) {
            let text = to_json(&p);
            prop_assert_eq!(streamed(&text, part_bytes), Some(p));
            let damaged = gen::damage(text, &edits);
            if let Some(q) = streamed(&damaged, part_bytes) {
                prop_assert_eq!(read_json_slice(&damaged).ok(), Some(q));
            }
        }
    }
}
