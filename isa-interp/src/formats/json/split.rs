//! Parsing large JSON programs on several threads: the text is cut at its top-level keys
//! without parsing the values (in memory, or while a gzip stream is inflated), and each
//! core's array is parsed on its own by [`read_core_slice`]. Every problem makes these return
//! `None` (or [`Streamed::Failed`]): the caller then parses the whole text sequentially,
//! which reports the error properly, so that the errors do not depend on the path taken.

use std::collections::BTreeMap;
use std::io::Read;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Mutex;

use pimdiff_input::{gunzip_reader, InputError, MAX_PROGRAM_BYTES};

use crate::inst::Inst;
use crate::program::Program;

use super::super::config::{assemble, parse_config, parse_core_key};
use super::visit::{read_core_slice, read_entries_slice, Entries};

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

/// Inflate `compressed` on this thread, cutting the text into parts at its top-level core keys
/// as it comes (see [`cut_stream`]), while the other threads parse the parts already complete.
/// The part buffers go back to this thread once parsed, so that the text is copied into
/// memory that is already mapped.
pub(super) fn parse_gzip(compressed: &[u8]) -> Streamed {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let failed = AtomicBool::new(false);
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(threads * 2);
    let (spare_tx, spare_rx) = mpsc::channel::<Vec<u8>>();
    let rx = Mutex::new(rx);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let spare = spare_tx.clone();
                let (rx, failed) = (&rx, &failed);
                s.spawn(move || parse_parts(rx, failed, &spare))
            })
            .collect();
        drop(spare_tx);
        let reader = gunzip_reader(compressed, MAX_PROGRAM_BYTES);
        let cut = cut_stream(reader, &spare_rx, |part| {
            !failed.load(Ordering::Relaxed) && tx.send(part).is_ok()
        });
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
        let parsed: Option<Vec<Vec<Entries>>> = parsed.into_iter().collect();
        parsed
            .and_then(merge)
            .map_or(Streamed::Failed, Streamed::Program)
    })
}

/// The program made of the parts' entries; `None` when an entry repeats, the config is
/// missing, or the program is invalid (the caller then reparses sequentially for the error).
fn merge(parts: Vec<Vec<Entries>>) -> Option<Program> {
    let mut config = None;
    let mut cores = BTreeMap::new();
    for part in parts.into_iter().flatten() {
        if let Some(c) = part.config {
            if config.replace(c).is_some() {
                return None;
            }
        }
        for (core, insts) in part.cores {
            if cores.insert(core, insts).is_some() {
                return None;
            }
        }
    }
    let config = parse_config(&config?).ok()?;
    assemble(config, cores).ok()
}

/// A worker: parse the parts it receives until the channel closes, handing each emptied buffer
/// back through `spare`. After a failure anywhere it only drains the channel, so that the
/// cutter never blocks on a full one.
fn parse_parts(
    rx: &Mutex<Receiver<Vec<u8>>>,
    failed: &AtomicBool,
    spare: &Sender<Vec<u8>>,
) -> Vec<Entries> {
    let mut done = Vec::new();
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
            match read_entries_slice(&part) {
                Ok(entries) => done.push(entries),
                Err(_) => failed.store(true, Ordering::Relaxed),
            }
        }
        part.clear();
        // The cutter may have finished already; the buffer is then simply freed.
        let _ = spare.send(part);
    }
}

/// What [`cut_stream`] found.
enum Cut {
    /// Every part was handed out.
    Done,
    NotJson,
    Input(InputError),
    Failed,
}

/// How many bytes are inflated at a time.
const READ_BYTES: usize = 1 << 18;

/// How many bytes must follow a key candidate before it is checked (unless the text ended):
/// enough for `"core<digits>"`, blanks and the colon of any real file. A candidate that does
/// not fit is not cut at, which only leaves two cores in one part.
const LOOKAHEAD: usize = 64;

/// Read `r` to its end, cutting the text into parts that are each a JSON object, and handing
/// each part to `emit` (which says whether to go on) as soon as it is complete.
///
/// The text is cut at every `,` that is followed (after blanks) by a key `"core<digits>"` and
/// a colon: the `,` ends one part as a `}`, and the next part starts with a `{` before the
/// key. Such a comma may also sit inside a value (an instruction with a `core5` field, a
/// string); the part before it is then no valid JSON object (its brackets or quotes do not
/// balance), its parse fails and the caller reparses the text sequentially. If every part
/// parses, the text was one valid object whose entries are those of the parts. Nothing else
/// is parsed here: finding the candidates is a vectorised substring search.
fn cut_stream(
    mut r: impl Read,
    spare: &Receiver<Vec<u8>>,
    mut emit: impl FnMut(Vec<u8>) -> bool,
) -> Cut {
    let finder = memchr::memmem::Finder::new(b"\"core");
    let mut buf = vec![0u8; READ_BYTES];
    let mut part: Vec<u8> = Vec::new();
    // `part[..searched]` holds no candidate still to check.
    let mut searched = 0;
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
        part.extend_from_slice(&buf[..n]);
        // Candidates in the last `LOOKAHEAD` bytes are checked after the next read.
        let lookahead = if n == 0 { 0 } else { LOOKAHEAD };
        while let Some(at) = finder.find(&part[searched..]).map(|i| searched + i) {
            if at + lookahead >= part.len() {
                break;
            }
            searched = at + 1;
            let Some(comma) = cut_before(&part, at) else {
                continue;
            };
            let mut next = spare.try_recv().unwrap_or_default();
            next.push(b'{');
            next.extend_from_slice(&part[comma + 1..]);
            part.truncate(comma);
            part.push(b'}');
            if !emit(std::mem::replace(&mut part, next)) {
                return Cut::Failed;
            }
            searched = at - comma + 1;
        }
        searched = searched.max(part.len().saturating_sub(lookahead));
        if n == 0 {
            break;
        }
    }
    if !started || !emit(part) {
        return Cut::Failed;
    }
    Cut::Done
}

/// Whether the text at `at` (a `"` followed by `core`) is a key `"core<digits>"` followed by a
/// colon and preceded by a comma: the comma's index.
fn cut_before(b: &[u8], at: usize) -> Option<usize> {
    let blank = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
    let rest = &b[at + 5..];
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    let rest = rest[digits..].strip_prefix(b"\"")?;
    let colon = rest.iter().position(|c| !blank(c))?;
    if digits == 0 || rest[colon] != b':' {
        return None;
    }
    let comma = b[..at].iter().rposition(|c| !blank(c))?;
    (b[comma] == b',').then_some(comma)
}
