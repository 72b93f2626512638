//! Parsing large JSON programs on several threads: the text is cut at its top-level keys
//! without parsing the values (in memory, or while a gzip stream is inflated), and each
//! core's array is parsed on its own by [`read_core_slice`]. Every problem makes these return
//! `None` (or [`Streamed::Failed`]): the caller then parses the whole text sequentially,
//! which reports the error properly, so that the errors do not depend on the path taken.

use std::collections::BTreeMap;
use std::io::Read;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Mutex;

use pimdiff_input::{gunzip_reader, InputError, MAX_PROGRAM_BYTES};

use crate::inst::Inst;
use crate::program::Program;

use super::super::config::{assemble, parse_config, parse_core_key};
use super::visit::read_core_slice;

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

/// Inflate `compressed` on this thread, cutting the text at its top-level keys as it comes,
/// while the other threads parse the cores already complete.
pub(super) fn parse_gzip(compressed: &[u8]) -> Streamed {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let failed = AtomicBool::new(false);
    let (tx, rx) = mpsc::sync_channel::<(u32, Vec<u8>)>(threads * 4);
    let rx = Mutex::new(rx);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| parse_jobs(&rx, &failed)))
            .collect();
        let reader = gunzip_reader(compressed, MAX_PROGRAM_BYTES);
        let split = split_stream(reader, |core, bytes| {
            !failed.load(Ordering::Relaxed) && tx.send((core, bytes)).is_ok()
        });
        drop(tx);
        let parsed: Vec<_> = workers.into_iter().map(|h| h.join().ok()).collect();
        let (config, cores) = match split {
            Split::Done { config, cores } => (config, cores),
            Split::NotJson => return Streamed::NotJson,
            Split::Input(e) => return Streamed::Input(e),
            Split::Failed => return Streamed::Failed,
        };
        if failed.load(Ordering::Relaxed) {
            return Streamed::Failed;
        }
        let mut by_core = BTreeMap::new();
        for (core, insts) in parsed.into_iter().flatten().flatten() {
            if by_core.insert(core, insts).is_some() {
                return Streamed::Failed;
            }
        }
        if by_core.len() != cores {
            return Streamed::Failed;
        }
        let program = config
            .and_then(|c| serde_json::from_slice::<serde_json::Value>(&c).ok())
            .and_then(|c| parse_config(&c).ok())
            .and_then(|c| assemble(c, by_core).ok());
        program.map_or(Streamed::Failed, Streamed::Program)
    })
}

/// A worker: parse the cores it receives until the channel closes. After a failure anywhere
/// it only drains the channel, so that the splitter never blocks on a full one.
fn parse_jobs(rx: &Mutex<Receiver<(u32, Vec<u8>)>>, failed: &AtomicBool) -> Vec<(u32, Vec<Inst>)> {
    let mut done = Vec::new();
    loop {
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => {
                failed.store(true, Ordering::Relaxed);
                return done;
            }
        };
        let Ok((core, bytes)) = job else {
            return done;
        };
        if failed.load(Ordering::Relaxed) {
            continue;
        }
        match read_core_slice(&bytes, core) {
            Ok(insts) => done.push((core, insts)),
            Err(_) => failed.store(true, Ordering::Relaxed),
        }
    }
}

/// What [`split_stream`] found.
enum Split {
    /// The config's text (if any) and how many cores were handed out.
    Done {
        config: Option<Vec<u8>>,
        cores: usize,
    },
    NotJson,
    Input(InputError),
    Failed,
}

/// Read `r` to its end, handing each core's array text to `emit` (which says whether to go
/// on) as soon as it is complete.
fn split_stream(mut r: impl Read, mut emit: impl FnMut(u32, Vec<u8>) -> bool) -> Split {
    let mut splitter = Splitter::default();
    let mut config = None;
    let mut cores = 0;
    let mut buf = vec![0u8; 1 << 18];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return Split::Input(InputError::from_io(e)),
        };
        let mut entry = |key: &[u8], value: Vec<u8>| {
            if key == b"config" {
                return config.replace(value).is_none();
            }
            let core = std::str::from_utf8(key)
                .ok()
                .and_then(|k| parse_core_key(k, "core"));
            cores += 1;
            core.is_some_and(|core| emit(core, value))
        };
        match splitter.feed(&buf[..n], &mut entry) {
            Ok(()) => {}
            Err(Stop::NotJson) => return Split::NotJson,
            Err(Stop::Failed) => return Split::Failed,
        }
    }
    match splitter.state {
        State::End => Split::Done { config, cores },
        _ => Split::Failed,
    }
}

/// Where the splitter is in the top-level object.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum State {
    #[default]
    Start,
    /// After `{`: a key or `}`.
    Open,
    Key,
    Colon,
    Value,
    /// Inside an array or object value.
    Nested,
    /// After a value: `,` or `}`.
    After,
    /// After `,`: a key.
    Comma,
    End,
}

enum Stop {
    NotJson,
    Failed,
}

/// A resumable cutter of a top-level object into its entries (the glue checked strictly, the
/// values only matched by brackets: serde_json checks each value in full later).
#[derive(Default)]
struct Splitter {
    state: State,
    key: Vec<u8>,
    value: Vec<u8>,
    depth: u32,
    in_string: bool,
    escaped: bool,
}

impl Splitter {
    fn feed(
        &mut self,
        chunk: &[u8],
        entry: &mut impl FnMut(&[u8], Vec<u8>) -> bool,
    ) -> Result<(), Stop> {
        let mut i = 0;
        while i < chunk.len() {
            if self.state == State::Nested {
                i = self.nested(chunk, i);
                if self.state == State::After {
                    let value = std::mem::take(&mut self.value);
                    if !entry(&self.key, value) {
                        return Err(Stop::Failed);
                    }
                }
                continue;
            }
            let c = chunk[i];
            i += 1;
            if self.state == State::Key {
                match c {
                    b'"' => self.state = State::Colon,
                    b'\\' => return Err(Stop::Failed),
                    _ => self.key.push(c),
                }
                continue;
            }
            if c.is_ascii_whitespace() {
                continue;
            }
            self.state = match (self.state, c) {
                (State::Start, b'{') => State::Open,
                (State::Start, _) => return Err(Stop::NotJson),
                (State::Open | State::Comma, b'"') => {
                    self.key.clear();
                    State::Key
                }
                (State::Open, b'}') | (State::After, b'}') => State::End,
                (State::Colon, b':') => State::Value,
                (State::Value, b'[' | b'{') => {
                    self.value.push(c);
                    self.depth = 1;
                    State::Nested
                }
                (State::After, b',') => State::Comma,
                _ => return Err(Stop::Failed),
            };
        }
        Ok(())
    }

    /// Scan a nested value from `i`; returns where it stopped (the chunk's end, or just past
    /// the value's closing bracket, the state then being `After`).
    fn nested(&mut self, chunk: &[u8], mut i: usize) -> usize {
        let start = i;
        while i < chunk.len() {
            let c = chunk[i];
            i += 1;
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match c {
                b'"' => self.in_string = true,
                b'[' | b'{' => self.depth += 1,
                b']' | b'}' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        self.state = State::After;
                        break;
                    }
                }
                _ => {}
            }
        }
        self.value.extend_from_slice(&chunk[start..i]);
        i
    }
}
