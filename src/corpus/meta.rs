//! `finding.json` and `expect.json`, and saving a finding directory.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use pimdiff_input::limits::MAX_META_BYTES;
use pimdiff_input::InputError;
use serde::{Deserialize, Serialize};

use super::atomic::AtomicDir;
use super::expectation::Expectation;
use super::{io_err, CorpusError, BUNDLE_DIR, EXPECT_JSON, FINDING_JSON, META_FORMAT, REPORT_MD};
use crate::check::versions::LoweringChoice;

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
    /// What replay must observe today; at save time the bug is present, so this is the saved
    /// case's own outcome signature (what a rerun shows without localizing; `signature` may
    /// be the localized cause). Edit it to `pass` once the bug is fixed.
    pub expect: Expectation,
    /// `CompilerUnderTest::describe()` of the compiler that produced the finding.
    pub compiler: String,
    /// The in-repo compiler's lowering(s) the finding was checked with (`channel`, `pixel`,
    /// `both`): `repro` and `replay` use it unless `--lowering` says otherwise. Absent for
    /// an external compiler and in findings saved before lowerings were recorded (channel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowering: Option<LoweringChoice>,
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
    /// Ranked suspects of localization, best first: `{"core", "pc", "op", "why", "fix"}`
    /// objects (empty when nothing was localized, or the finding was not triaged).
    #[serde(default)]
    pub suspects: Vec<serde_json::Value>,
    /// The schedule (`pct:SEED:DEPTH`, …) under which a `schedule-dependent` finding's run
    /// ended differently; `repro` and `replay` run it again under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The injected miscompilation (`--inject-bug` name) of the hunt that found it, so that
    /// `repro` and `replay` compile the case the same way (as `expect.json`'s `mutation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected_bug: Option<String>,
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
    /// The lowering(s) to check the entry with (default: channel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowering: Option<LoweringChoice>,
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

    /// The lowering(s) recorded for the entry: `expect.json`'s, else `finding.json`'s.
    pub fn lowering(&self) -> Option<LoweringChoice> {
        self.expect_file
            .as_ref()
            .and_then(|e| e.lowering)
            .or(self.finding.as_ref().and_then(|f| f.lowering))
    }

    /// The injected mutation the entry needs, if any: `expect.json`'s, else the bug the
    /// finding was found with.
    pub fn mutation(&self) -> Option<&str> {
        self.expect_file
            .as_ref()
            .and_then(|e| e.mutation.as_deref())
            .or(self
                .finding
                .as_ref()
                .and_then(|f| f.injected_bug.as_deref()))
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
    let text = match pimdiff_input::read(path, MAX_META_BYTES) {
        Ok(bytes) => bytes,
        Err(InputError::Io(e)) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(InputError::Io(source)) => {
            return Err(CorpusError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
        Err(source) => {
            return Err(CorpusError::Input {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    // Check `format` and `expect` first, so that a future format is refused as such and a bad
    // expectation is named as one, not as a generic type error.
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(&text) {
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
    let value: T = serde_json::from_slice(&text).map_err(|e| CorpusError::Json {
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
    attachments: &[Attachment],
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
    for a in attachments {
        let path = dir.path().join(a.name);
        fs::write(&path, &a.bytes).map_err(io_err(&path))?;
    }
    Ok(dir.commit()?)
}

/// A file saved beside a finding's case, report and metadata (a picture, an export for the
/// user's toolchain). The corpus only stores it; what it holds is its producer's business.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attachment {
    /// A plain file name (no directory), e.g. `diff.svg`.
    pub name: &'static str,
    pub bytes: Vec<u8>,
}
