//! Findings and regression cases on disk: atomic directory writes, `finding.json` /
//! `expect.json`, discovery of case directories, and replay against recorded expectations.
//!
//! A *finding directory* is a case directory (`case-format.md`: `case.json`, `input.npy`,
//! `weight.npy`, `bias.npy`, `expected.npy` = the oracle's output, so the case checks itself)
//! plus `bundle/` (the failing program, crossbars and io manifest), `report.md` and
//! `finding.json` ([`FindingMeta`]). A *regression entry* of `corpus/` is a case directory with
//! either a `finding.json` or a smaller `expect.json` ([`ExpectFile`]) saying what the case
//! must do today.
//!
//! Nothing is ever half-written: every directory is built under a temporary sibling whose name
//! starts with [`TEMP_PREFIX`] (a dot, so [`discover`] and every other reader skips it), synced,
//! then renamed into place ([`AtomicDir`]). A process killed in the middle leaves only such a
//! temporary directory, which [`clean_temp_dirs`] removes on the next run.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::driver::{check_case, CaseResult, CompilerUnderTest, RunConfig};
use crate::mutate::BugClass;

/// Name prefix of a directory under construction. Starts with a dot so that readers, which
/// ignore hidden entries, never see a half-written finding.
pub const TEMP_PREFIX: &str = ".pimdiff-tmp-";
/// The metadata file of a saved finding.
pub const FINDING_JSON: &str = "finding.json";
/// The expectation file of a hand-made regression entry.
pub const EXPECT_JSON: &str = "expect.json";
/// The readable report of a finding.
pub const REPORT_MD: &str = "report.md";
/// The compiled program of a finding.
pub const BUNDLE_DIR: &str = "bundle";
/// Version of `finding.json` / `expect.json` this reader writes and accepts.
pub const META_FORMAT: u32 = 1;
/// Largest `finding.json` / `expect.json` read (they are a few kilobytes).
const MAX_META_BYTES: u64 = 1 << 20;

/// What can go wrong reading or writing corpus files. Every variant names the path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CorpusError {
    /// An operating-system error on `path`.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    /// `finding.json` / `expect.json` is not valid JSON or has a field of the wrong type.
    #[error("{}: {message}", path.display())]
    Json { path: PathBuf, message: String },
    /// A metadata file of a format this version does not know.
    #[error("{}: field `format`: format {found} is not supported (this reader knows format {META_FORMAT})", path.display())]
    UnsupportedFormat { path: PathBuf, found: u32 },
    /// An `expect` string that does not parse (see [`Expectation`]).
    #[error("{}: field `expect`: {problem}", path.display())]
    BadExpectation {
        path: PathBuf,
        problem: ExpectationParseError,
    },
    /// A path given to [`discover`] is neither a case directory nor a directory holding any.
    #[error("{}: not a case directory (no case.json) and holds no case directories", path.display())]
    NoCases { path: PathBuf },
    /// The destination of an atomic write already exists.
    #[error("{}: already exists; refusing to overwrite it", path.display())]
    Exists { path: PathBuf },
    /// A metadata file is too large to be one of ours.
    #[error("{}: {len} bytes, more than the limit of {MAX_META_BYTES} for a metadata file", path.display())]
    TooLarge { path: PathBuf, len: u64 },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> CorpusError + '_ {
    move |source| CorpusError::Io {
        path: path.to_path_buf(),
        source,
    }
}

// ---------------------------------------------------------------------------------------------
// Atomic directories.

/// A directory being built under a temporary sibling of its final path, renamed into place by
/// [`AtomicDir::commit`]. Dropped without a commit (an error on the way, a panic), it removes
/// its temporary directory; killed outright, it leaves a hidden [`TEMP_PREFIX`] directory
/// that readers ignore and [`clean_temp_dirs`] removes.
#[derive(Debug)]
pub struct AtomicDir {
    tmp: PathBuf,
    dest: PathBuf,
    committed: bool,
}

impl AtomicDir {
    /// Creates the temporary sibling of `dest` (`dest` must not exist; its parent is created).
    pub fn create(dest: &Path) -> Result<AtomicDir, CorpusError> {
        if dest.exists() {
            return Err(CorpusError::Exists {
                path: dest.to_path_buf(),
            });
        }
        let parent = parent_of(dest);
        fs::create_dir_all(&parent).map_err(io_err(&parent))?;
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = parent.join(temp_name(&name));
        fs::create_dir(&tmp).map_err(io_err(&tmp))?;
        Ok(AtomicDir {
            tmp,
            dest: dest.to_path_buf(),
            committed: false,
        })
    }

    /// Where to write the contents.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// The final path.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Syncs every file and directory written, renames the directory into place and syncs
    /// the parent, so that after a crash the destination is either complete or absent.
    pub fn commit(mut self) -> Result<PathBuf, CorpusError> {
        sync_tree(&self.tmp)?;
        if self.dest.exists() {
            return Err(CorpusError::Exists {
                path: self.dest.clone(),
            });
        }
        fs::rename(&self.tmp, &self.dest).map_err(io_err(&self.dest))?;
        self.committed = true;
        sync_dir(&parent_of(&self.dest))?;
        Ok(self.dest.clone())
    }
}

impl Drop for AtomicDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

/// Writes one file atomically: a temporary sibling, synced, renamed over `dest`.
pub fn write_file_atomic(dest: &Path, bytes: &[u8]) -> Result<(), CorpusError> {
    let parent = parent_of(dest);
    fs::create_dir_all(&parent).map_err(io_err(&parent))?;
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(temp_name(&name));
    let result = (|| {
        fs::write(&tmp, bytes).map_err(io_err(&tmp))?;
        fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(io_err(&tmp))?;
        fs::rename(&tmp, dest).map_err(io_err(dest))?;
        sync_dir(&parent)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Removes the leftovers of interrupted writes ([`TEMP_PREFIX`] entries) directly under
/// `dir`; returns how many were removed. A missing `dir` has none.
pub fn clean_temp_dirs(dir: &Path) -> Result<usize, CorpusError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => {
            return Err(CorpusError::Io {
                path: dir.to_path_buf(),
                source: e,
            })
        }
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(io_err(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // `..pimdiff-tmp-*`: the case writer's own temporary sibling of one of ours.
        if !name.starts_with(TEMP_PREFIX)
            && !name
                .strip_prefix('.')
                .is_some_and(|n| n.starts_with(TEMP_PREFIX))
        {
            continue;
        }
        let path = entry.path();
        let is_dir = entry.file_type().map_err(io_err(&path))?.is_dir();
        if is_dir {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        }
        .map_err(io_err(&path))?;
        removed += 1;
    }
    Ok(removed)
}

/// Unique temporary name: prefix, the final name, process id and a per-process counter.
fn temp_name(final_name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{TEMP_PREFIX}{final_name}-{}-{n}", std::process::id())
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn sync_tree(dir: &Path) -> Result<(), CorpusError> {
    for entry in fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        let path = entry.path();
        if entry.file_type().map_err(io_err(&path))?.is_dir() {
            sync_tree(&path)?;
        } else {
            fs::File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(io_err(&path))?;
        }
    }
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), CorpusError> {
    // Directories can be opened and fsynced on Unix; elsewhere this is best effort.
    match fs::File::open(dir).and_then(|f| f.sync_all()) {
        Ok(()) => Ok(()),
        Err(e) if cfg!(unix) => Err(CorpusError::Io {
            path: dir.to_path_buf(),
            source: e,
        }),
        Err(_) => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------------
// Discovery.

/// The case directories named by `paths`, sorted and without duplicates: a path holding a
/// `case.json` is a case; any other directory is searched recursively for cases. Hidden
/// entries (names starting with `.`, among them interrupted writes) are skipped.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CorpusError> {
    let mut out = Vec::new();
    for path in paths {
        let before = out.len();
        let meta = fs::metadata(path).map_err(io_err(path))?;
        if !meta.is_dir() {
            return Err(CorpusError::NoCases { path: path.clone() });
        }
        collect(path, &mut out)?;
        if out.len() == before {
            return Err(CorpusError::NoCases { path: path.clone() });
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), CorpusError> {
    if dir.join("case.json").is_file() {
        out.push(dir.to_path_buf());
        return Ok(());
    }
    let mut children = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if entry.file_type().map_err(io_err(&entry.path()))?.is_dir() {
            children.push(entry.path());
        }
    }
    children.sort();
    for child in children {
        collect(&child, out)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Expectations.

/// What a case must do today. Written as a string in `finding.json` / `expect.json`:
///
/// | string | meaning |
/// |---|---|
/// | `pass` | compiles, runs and agrees with the oracle (e.g. a fixed bug) |
/// | `unsupported` | the compiler declines the case, any reason |
/// | `unsupported: TEXT` | declines it with a reason containing TEXT (a documented limit) |
/// | `mismatch`, `fault`, `deadlock`, `compile-error`, `out-of-steps`, `poisoned` | an outcome of that kind |
/// | `finding` | any finding |
/// | `signature: SIG` | a finding whose signature prints exactly as SIG (a bug still present) |
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expectation {
    Pass,
    Unsupported(Option<String>),
    Kind(String),
    AnyFinding,
    Signature(String),
}

/// The outcome kinds an [`Expectation::Kind`] may name (`Outcome::kind()` spellings).
pub const OUTCOME_KINDS: &[&str] = &[
    "pass",
    "mismatch",
    "fault",
    "deadlock",
    "out-of-steps",
    "compile-error",
    "unsupported",
    "poisoned",
];

/// Why an `expect` string does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExpectationParseError {
    #[error("empty expectation")]
    Empty,
    #[error("unknown expectation {0:?} (known: pass, unsupported[: TEXT], finding, signature: SIG, or an outcome kind: {kinds})", kinds = OUTCOME_KINDS.join(", "))]
    Unknown(String),
    #[error("`signature:` needs a signature after the colon")]
    EmptySignature,
}

/// What happened to one case, as far as an [`Expectation`] cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// `Outcome::kind()`, e.g. `"pass"`, `"mismatch"`.
    pub kind: String,
    /// Whether the outcome is a finding.
    pub finding: bool,
    /// The signature's display form, for a finding.
    pub signature: Option<String>,
    /// The compiler's reason, for `unsupported`.
    pub unsupported_reason: Option<String>,
}

impl Expectation {
    /// Parses the string form (see the table on [`Expectation`]).
    pub fn parse(s: &str) -> Result<Expectation, ExpectationParseError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(ExpectationParseError::Empty);
        }
        let (head, rest) = match s.split_once(':') {
            Some((h, r)) => (h.trim(), Some(r.trim())),
            None => (s, None),
        };
        match (head, rest) {
            ("pass", None) => Ok(Expectation::Pass),
            ("finding", None) => Ok(Expectation::AnyFinding),
            ("unsupported", None) => Ok(Expectation::Unsupported(None)),
            ("unsupported", Some("")) => Ok(Expectation::Unsupported(None)),
            ("unsupported", Some(text)) => Ok(Expectation::Unsupported(Some(text.to_string()))),
            ("signature", Some("")) => Err(ExpectationParseError::EmptySignature),
            ("signature", Some(sig)) => Ok(Expectation::Signature(sig.to_string())),
            (kind, None) if OUTCOME_KINDS.contains(&kind) => {
                Ok(Expectation::Kind(kind.to_string()))
            }
            _ => Err(ExpectationParseError::Unknown(s.to_string())),
        }
    }

    /// Whether `observed` meets the expectation.
    pub fn is_met_by(&self, observed: &Observed) -> bool {
        match self {
            Expectation::Pass => observed.kind == "pass",
            Expectation::Unsupported(text) => {
                observed.kind == "unsupported"
                    && text.as_ref().is_none_or(|t| {
                        observed
                            .unsupported_reason
                            .as_deref()
                            .is_some_and(|r| r.contains(t.as_str()))
                    })
            }
            Expectation::Kind(kind) => &observed.kind == kind,
            Expectation::AnyFinding => observed.finding,
            Expectation::Signature(sig) => observed.signature.as_deref() == Some(sig.as_str()),
        }
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expectation::Pass => f.write_str("pass"),
            Expectation::Unsupported(None) => f.write_str("unsupported"),
            Expectation::Unsupported(Some(t)) => write!(f, "unsupported: {t}"),
            Expectation::Kind(k) => f.write_str(k),
            Expectation::AnyFinding => f.write_str("finding"),
            Expectation::Signature(s) => write!(f, "signature: {s}"),
        }
    }
}

impl Serialize for Expectation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Expectation {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Expectation::parse(&s).map_err(serde::de::Error::custom)
    }
}

// ---------------------------------------------------------------------------------------------
// Metadata files.

/// Where a hunt found the case: enough to regenerate the original, unminimized case.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    /// The hunt's `--seed`.
    pub hunt_seed: u64,
    /// The case's index `k` in the hunt's index space.
    pub case_index: u64,
    /// `hunt::case_seed(hunt_seed, case_index)`, the seed handed to the generator.
    pub case_seed: u64,
}

/// How minimization went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MinimizationStats {
    /// Candidate cases tried.
    pub tried: u64,
    /// Candidates kept (they still failed with the same signature).
    pub kept: u64,
    /// Size of the case before minimization (see `hunt::case_size`).
    pub original_size: u64,
    /// Size of the saved case.
    pub minimized_size: u64,
    /// Whether minimization was cut short (time budget or a second Ctrl-C); the saved case
    /// still fails with the recorded signature.
    pub cut_short: bool,
}

/// `finding.json`: everything needed to understand and reproduce a saved finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingMeta {
    /// Always [`META_FORMAT`].
    pub format: u32,
    /// The signature's display form.
    pub signature: String,
    /// The signature as structured data (`Signature`'s serde form).
    #[serde(default)]
    pub signature_detail: serde_json::Value,
    /// The outcome kind, e.g. `"mismatch"`.
    pub outcome: String,
    /// What replay must observe today; at save time the bug is present, so this is the
    /// signature. Edit it to `pass` once the bug is fixed.
    pub expect: Expectation,
    /// `CompilerUnderTest::describe()` of the compiler that produced the finding.
    pub compiler: String,
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
}

/// `expect.json`: a hand-made regression entry's expectation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectFile {
    /// Always [`META_FORMAT`].
    pub format: u32,
    /// What replay must observe.
    pub expect: Expectation,
    /// Why the case is in the corpus.
    #[serde(default)]
    pub note: String,
    /// An injected miscompilation (`mutate` name) applied after compiling: the entry then
    /// proves that the harness still detects that class of bug.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation: Option<String>,
}

/// What a case directory says about itself besides the case.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct EntryMeta {
    pub finding: Option<FindingMeta>,
    pub expect_file: Option<ExpectFile>,
}

impl EntryMeta {
    /// The expectation: `expect.json`'s when present (a curated entry overrides), else
    /// `finding.json`'s, else none (a plain case).
    pub fn expectation(&self) -> Option<&Expectation> {
        self.expect_file
            .as_ref()
            .map(|e| &e.expect)
            .or(self.finding.as_ref().map(|f| &f.expect))
    }

    /// The injected mutation the entry needs, if any.
    pub fn mutation(&self) -> Option<&str> {
        self.expect_file
            .as_ref()
            .and_then(|e| e.mutation.as_deref())
    }
}

/// Reads `finding.json` and `expect.json` of a case directory, each when present.
pub fn read_entry_meta(dir: &Path) -> Result<EntryMeta, CorpusError> {
    Ok(EntryMeta {
        finding: read_meta(&dir.join(FINDING_JSON))?,
        expect_file: read_meta(&dir.join(EXPECT_JSON))?,
    })
}

/// Common access to the `format` field of both metadata files.
trait Versioned {
    fn format(&self) -> u32;
}
impl Versioned for FindingMeta {
    fn format(&self) -> u32 {
        self.format
    }
}
impl Versioned for ExpectFile {
    fn format(&self) -> u32 {
        self.format
    }
}

fn read_meta<T: for<'de> Deserialize<'de> + Versioned>(
    path: &Path,
) -> Result<Option<T>, CorpusError> {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(CorpusError::Io {
                path: path.to_path_buf(),
                source: e,
            })
        }
    };
    if meta.len() > MAX_META_BYTES {
        return Err(CorpusError::TooLarge {
            path: path.to_path_buf(),
            len: meta.len(),
        });
    }
    let text = fs::read_to_string(path).map_err(io_err(path))?;
    // Check `format` and `expect` first, so that a future format is refused as such and a bad
    // expectation is named as one, not as a generic type error.
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(&text) {
        if let Some(found) = map.get("format").and_then(|v| v.as_u64()) {
            if found != META_FORMAT as u64 {
                let found = u32::try_from(found).unwrap_or(u32::MAX);
                return Err(CorpusError::UnsupportedFormat {
                    path: path.to_path_buf(),
                    found,
                });
            }
        }
        if let Some(serde_json::Value::String(expect)) = map.get("expect") {
            Expectation::parse(expect).map_err(|problem| CorpusError::BadExpectation {
                path: path.to_path_buf(),
                problem,
            })?;
        }
    }
    let value: T = serde_json::from_str(&text).map_err(|e| CorpusError::Json {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    if value.format() != META_FORMAT {
        return Err(CorpusError::UnsupportedFormat {
            path: path.to_path_buf(),
            found: value.format(),
        });
    }
    Ok(Some(value))
}

/// Serializes a metadata value as pretty JSON with a trailing newline.
pub fn to_json_text<T: Serialize>(value: &T) -> String {
    // Our metadata types contain only strings, numbers and JSON values: serialization cannot fail.
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}

/// Writes `value` as `dir/name` (plain write: `dir` is an [`AtomicDir`] under construction
/// or the caller makes it atomic).
pub fn write_json<T: Serialize>(dir: &Path, name: &str, value: &T) -> Result<(), CorpusError> {
    let path = dir.join(name);
    fs::write(&path, to_json_text(value)).map_err(io_err(&path))
}

// ---------------------------------------------------------------------------------------------
// Saving a finding.

/// Why a finding could not be saved or a case directory could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EntryError {
    /// The case itself (`case.json`, the `.npy` files) is invalid.
    #[error("{}: {source}", dir.display())]
    Case {
        dir: PathBuf,
        source: Box<pimdiff_oracle::CaseError>,
    },
    /// The bundle could not be written.
    #[error("{}: {source}", dir.display())]
    Bundle {
        dir: PathBuf,
        source: Box<pimdiff_isa::bundle::BundleError>,
    },
    /// `expect.json` names an injected bug this version does not know.
    #[error("{}: field `mutation`: unknown bug class {name:?} (known: {known})", path.display())]
    UnknownMutation {
        path: PathBuf,
        name: String,
        known: String,
    },
    #[error(transparent)]
    Corpus(#[from] CorpusError),
}

/// Saves a finding directory at `dest` atomically: the case (with `expected.npy` when
/// `case.expected` is set — the hunt sets it to the oracle's output), `bundle/` when there is
/// one, `report.md` and `finding.json`. `dest` must not exist.
pub fn save_finding(
    dest: &Path,
    case: &pimdiff_oracle::Case,
    bundle: Option<&pimdiff_isa::bundle::Bundle>,
    report: &str,
    meta: &FindingMeta,
) -> Result<PathBuf, EntryError> {
    let dir = AtomicDir::create(dest)?;
    pimdiff_oracle::io::write_case(case, dir.path()).map_err(|e| EntryError::Case {
        dir: dest.to_path_buf(),
        source: Box::new(e),
    })?;
    if let Some(bundle) = bundle {
        bundle
            .write_dir(&dir.path().join(BUNDLE_DIR))
            .map_err(|e| EntryError::Bundle {
                dir: dest.to_path_buf(),
                source: Box::new(e),
            })?;
    }
    let report_path = dir.path().join(REPORT_MD);
    fs::write(&report_path, report).map_err(io_err(&report_path))?;
    write_json(dir.path(), FINDING_JSON, meta)?;
    Ok(dir.commit()?)
}

// ---------------------------------------------------------------------------------------------
// Loading and checking entries (repro, replay, the corpus test).

/// A case directory with what it says about itself.
#[derive(Clone, Debug)]
pub struct Entry {
    pub dir: PathBuf,
    pub case: pimdiff_oracle::Case,
    pub meta: EntryMeta,
    /// The injected bug `expect.json` asks for, if any.
    pub mutation: Option<BugClass>,
}

/// Reads a case directory, its `finding.json` / `expect.json`, and checks the mutation name.
pub fn load_entry(dir: &Path) -> Result<Entry, EntryError> {
    let case = pimdiff_oracle::io::read_case(dir).map_err(|e| EntryError::Case {
        dir: dir.to_path_buf(),
        source: Box::new(e),
    })?;
    let meta = read_entry_meta(dir)?;
    let mutation = match meta.mutation() {
        None => None,
        Some(name) => Some(BugClass::from_name(name).ok_or_else(|| {
            EntryError::UnknownMutation {
                path: dir.join(EXPECT_JSON),
                name: name.to_string(),
                known: BugClass::ALL
                    .iter()
                    .map(|b| b.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        })?),
    };
    Ok(Entry {
        dir: dir.to_path_buf(),
        case,
        meta,
        mutation,
    })
}

/// Where `expected.npy` and the oracle's output differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disagreement {
    /// Differing elements (all of them when the shapes differ).
    pub count: usize,
    /// The first eight: `(index, expected.npy value, oracle value)`.
    pub first: Vec<(Vec<usize>, i32, i32)>,
}

/// The result of checking one entry.
#[derive(Clone, Debug)]
pub struct EntryResult {
    pub result: CaseResult,
    pub observed: Observed,
    /// The compiler actually used (an entry's mutation overrides the base configuration).
    pub run: RunConfig,
    /// `expected.npy` is present and differs from the oracle's output: the case contradicts
    /// itself, which counts as a finding.
    pub expected_disagrees: Option<Disagreement>,
    /// Whether the observation meets the entry's expectation (`None`: the entry has none).
    pub meets_expectation: Option<bool>,
}

impl EntryResult {
    /// Whether this is a finding: the outcome is one, or `expected.npy` disagrees.
    pub fn is_finding(&self) -> bool {
        self.observed.finding || self.expected_disagrees.is_some()
    }
}

/// What `repro` and `replay` observe for an outcome.
pub fn observe(outcome: &crate::driver::Outcome) -> Observed {
    Observed {
        kind: outcome.kind().to_string(),
        finding: outcome.is_finding(),
        signature: outcome.signature().map(|s| s.to_string()),
        unsupported_reason: match outcome {
            crate::driver::Outcome::Unsupported { reason } => Some(reason.clone()),
            _ => None,
        },
    }
}

/// The run configuration for `entry`: `base`, with the in-repo compiler replaced by the
/// entry's injected bug when it names one.
pub fn run_config_for(entry: &Entry, base: &RunConfig) -> RunConfig {
    match entry.mutation {
        Some(bug) => RunConfig {
            compiler: CompilerUnderTest::Mutated(bug),
            ..base.clone()
        },
        None => base.clone(),
    }
}

/// Checks one entry: compile, run, compare with the oracle and with `expected.npy`, and with
/// the recorded expectation.
pub fn check_entry(entry: &Entry, base: &RunConfig) -> EntryResult {
    let run = run_config_for(entry, base);
    let result = check_case(&entry.case, &run);
    let expected_disagrees = match (&entry.case.expected, &result.oracle) {
        (Some(expected), Some(oracle)) => differing(expected, oracle),
        _ => None,
    };
    let mut observed = observe(&result.outcome);
    if expected_disagrees.is_some() && !observed.finding {
        observed.finding = true;
    }
    let meets_expectation = entry.meta.expectation().map(|e| {
        // A case whose expected.npy contradicts the oracle meets only a finding expectation.
        let base_ok = e.is_met_by(&observed);
        base_ok
            && (expected_disagrees.is_none()
                || !matches!(e, Expectation::Pass | Expectation::Unsupported(_)))
    });
    EntryResult {
        result,
        observed,
        run,
        expected_disagrees,
        meets_expectation,
    }
}

/// Where `a` (expected.npy) and `b` (the oracle) differ; `None` when equal.
fn differing(a: &ndarray::ArrayD<i32>, b: &ndarray::ArrayD<i32>) -> Option<Disagreement> {
    if a.shape() != b.shape() {
        return Some(Disagreement {
            count: a.len().max(b.len()),
            first: Vec::new(),
        });
    }
    let mut count = 0;
    let mut first = Vec::new();
    for ((idx, &x), &y) in a.indexed_iter().zip(b.iter()) {
        if x != y {
            count += 1;
            if first.len() < 8 {
                first.push((ndarray::Dimension::slice(&idx).to_vec(), x, y));
            }
        }
    }
    (count > 0).then_some(Disagreement { count, first })
}

/// One row of a replay.
#[derive(Debug)]
pub struct ReplayRow {
    pub dir: PathBuf,
    /// The entry could not be read (bad input), or it was checked.
    pub result: Result<EntryResult, EntryError>,
    pub expectation: Option<Expectation>,
}

impl ReplayRow {
    /// Whether the row meets its expectation. An entry without one must not be a finding.
    pub fn ok(&self) -> bool {
        match &self.result {
            Err(_) => false,
            Ok(r) => r.meets_expectation.unwrap_or(!r.is_finding()),
        }
    }
}

/// Replays every case directory under `paths` (see [`discover`]) on the current rayon pool.
/// Rows come back sorted by directory.
pub fn replay(paths: &[PathBuf], base: &RunConfig) -> Result<Vec<ReplayRow>, CorpusError> {
    use rayon::prelude::*;
    let dirs = discover(paths)?;
    Ok(dirs
        .into_par_iter()
        .map(|dir| match load_entry(&dir) {
            Ok(entry) => {
                let expectation = entry.meta.expectation().cloned();
                ReplayRow {
                    dir,
                    result: Ok(check_entry(&entry, base)),
                    expectation,
                }
            }
            Err(e) => ReplayRow {
                dir,
                result: Err(e),
                expectation: None,
            },
        })
        .collect())
}
