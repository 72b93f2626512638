//! Reading `finding.json` and `expect.json` of a corpus entry, and saving a tensor finding
//! directory outside a hunt (`from-fuzz`, tests).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use pimdiff_input::limits::MAX_META_BYTES;
use pimdiff_input::InputError;
use serde::{Deserialize, Serialize};

use super::{io_err, CorpusError, EXPECT_JSON};
use crate::check::n_version::LoweringChoice;
use crate::check::RunConfig;
use crate::compilers::record::ExternalCompiler;
use crate::compilers::CompilerUnderTest;
use crate::options::CaseOptions;
use pimdiff_compiler::Lowering;
use pimdiff_engine::finding::{
    to_json_text, write_finding, Expectation, FindingMeta, FINDING_JSON, META_FORMAT,
};

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
    /// The in-repo compiler's options to check the entry with (default: both optimizations,
    /// the per-case reduction), as a finding records them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_options: Option<CaseOptions>,
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

    /// The lowering(s) recorded for the entry: `expect.json`'s, else `finding.json`'s (checked
    /// when the file was read).
    pub fn lowering(&self) -> Option<LoweringChoice> {
        self.expect_file.as_ref().and_then(|e| e.lowering).or(self
            .finding
            .as_ref()
            .and_then(|f| f.lowering.as_deref())
            .and_then(|l| l.parse().ok()))
    }

    /// The in-repo compiler's options recorded for the entry: `expect.json`'s, else
    /// `finding.json`'s (checked when the file was read); `None` when neither records them
    /// (the defaults: what every case was compiled with before options varied per case).
    pub fn compile_options(&self) -> Option<CaseOptions> {
        self.expect_file
            .as_ref()
            .and_then(|e| e.compile_options)
            .or_else(|| {
                self.finding
                    .as_ref()
                    .and_then(|f| CaseOptions::from_details(&f.details).ok().flatten())
            })
    }

    /// The lowering an N-version finding's injected bug went into (`finding.json`'s
    /// `details.injected_into`, checked when the file was read); `None`: the lowering the bug
    /// is in by default (channel), or no injected bug.
    pub fn injected_into(&self) -> Option<Lowering> {
        self.finding
            .as_ref()
            .and_then(|f| injected_into(&f.details).ok().flatten())
    }

    /// The external compiler the finding records: `details.external_compiler`, else (a
    /// finding saved before that record) its `compiler` when it names an external one.
    pub fn external_compiler(&self) -> Option<ExternalCompiler> {
        let f = self.finding.as_ref()?;
        ExternalCompiler::from_details(&f.details)
            .ok()
            .flatten()
            .or_else(|| ExternalCompiler::from_words(&f.compiler))
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

/// The key of `finding.json`'s `details` naming the lowering that an N-version hunt's injected
/// bug went into (`--lowering both --inject-bug CLASS --inject-into pixel`): with the bug's
/// name in `injected_bug`, what `repro` needs to compile the case as the hunt did.
pub const INJECTED_INTO_KEY: &str = "injected_into";

/// `details.injected_into` of a `finding.json`: `Ok(None)` when absent, an error naming the
/// field when it is not a lowering.
fn injected_into(details: &serde_json::Value) -> Result<Option<Lowering>, String> {
    match details.get(INJECTED_INTO_KEY) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => s
            .parse()
            .map(Some)
            .map_err(|e| format!("field `details.{INJECTED_INTO_KEY}`: {e}")),
        Some(other) => Err(format!(
            "field `details.{INJECTED_INTO_KEY}`: expected a lowering (channel, pixel), found {other}"
        )),
    }
}

/// Records in `meta` what `repro` and `replay` need besides the case to compile it as `run`
/// did: the injected bug (`injected_bug`) and, when an N-version run has it in one lowering,
/// that lowering (`details.injected_into`); the lowering(s) (`lowering`); and the in-repo
/// compiler's options (`details.compile_options`: `options` when the case carries its own,
/// else the run's, with a `per-case` reduction resolved for `case`); and how an external
/// compiler was run (`details.external_compiler`), which `repro` and `replay` use again.
pub fn record_compiler(
    meta: &mut FindingMeta,
    run: &RunConfig,
    case: &pimdiff_oracle::Case,
    options: Option<&CaseOptions>,
) {
    let versions = || std::iter::once(&run.compiler).chain(run.second.as_ref());
    let mutated = versions().find_map(|c| match c {
        CompilerUnderTest::Mutated(bug, lowering) => Some((bug, *lowering)),
        _ => None,
    });
    meta.injected_bug = mutated.map(|(bug, _)| bug.name().to_string());
    meta.lowering = run.lowering_choice().map(|l| l.name().to_string());
    let options = options.copied().or_else(|| {
        CaseOptions::variable_in(run).map(|o| {
            CaseOptions {
                skip_padding: o.skip_padding,
                weight_skipping: o.weight_skipping,
                reduction: o.reduction,
            }
            .resolved(case)
        })
    });
    let mut details = serde_json::Map::new();
    if let Some(o) = options {
        if let serde_json::Value::Object(map) = o.to_details() {
            details.extend(map);
        }
    }
    if let (Some((_, lowering)), Some(_)) = (mutated, &run.second) {
        details.insert(INJECTED_INTO_KEY.into(), lowering.name().into());
    }
    if !details.is_empty() {
        meta.details = serde_json::Value::Object(details);
    }
    // How an external compiler was run: `repro` and `replay` run it again the same way.
    if let Some(external) = &run.external {
        meta.details = external.into_details(std::mem::take(&mut meta.details));
    }
}

/// Reads `finding.json` and `expect.json` of a case directory, each when present.
pub fn read_entry_meta(dir: &Path) -> Result<EntryMeta, CorpusError> {
    Ok(EntryMeta {
        finding: read_meta(&dir.join(FINDING_JSON))?,
        expect_file: read_meta(&dir.join(EXPECT_JSON))?,
    })
}

/// Common access to the `format` field of both metadata files, and what serde cannot check.
trait Versioned {
    fn format(&self) -> u32;
    /// A field whose value serde accepted but this version does not know.
    fn problem(&self) -> Option<String> {
        None
    }
}
impl Versioned for FindingMeta {
    fn format(&self) -> u32 {
        self.format
    }
    fn problem(&self) -> Option<String> {
        if let Err(bad) = CaseOptions::from_details(&self.details) {
            return Some(bad);
        }
        if let Err(bad) = injected_into(&self.details) {
            return Some(bad);
        }
        if let Err(bad) = ExternalCompiler::from_details(&self.details) {
            return Some(bad);
        }
        let lowering = self.lowering.as_deref()?;
        let bad = lowering.parse::<LoweringChoice>().err()?;
        Some(format!("field `lowering`: {bad}"))
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
    if let Some(message) = value.problem() {
        return Err(CorpusError::Json {
            path: path.to_path_buf(),
            message,
        });
    }
    Ok(Some(value))
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

/// Saves a tensor finding directory at `dest` atomically with the one finding writer: the
/// case (with `expected.npy` when `case.expected` is set), `bundle/` when there is one,
/// `report.md`, the attachments and `finding.json`. `dest` must not exist.
pub fn save_finding(
    dest: &Path,
    case: &pimdiff_oracle::Case,
    bundle: Option<&pimdiff_isa::bundle::Bundle>,
    report: &str,
    meta: &FindingMeta,
    attachments: &[Attachment],
) -> Result<PathBuf, EntryError> {
    write_finding(dest, meta.clone(), |dir, _| {
        crate::files::write_files(dir, case, bundle, report, attachments)
    })
    .map_err(CorpusError::from)?;
    Ok(dest.to_path_buf())
}

/// A file saved beside a finding's case, report and metadata (a picture, an export for the
/// user's toolchain). The corpus only stores it; what it holds is its producer's business.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attachment {
    /// A plain file name (no directory), e.g. `diff.svg`.
    pub name: &'static str,
    pub bytes: Vec<u8>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compilers::injected::BugClass;
    use crate::generate::{case_from_seed, GenConfig};
    use pimdiff_compiler::{CompileOptions, Reduction};
    use pimdiff_engine::finding::{Kind, Signature};

    fn meta() -> FindingMeta {
        FindingMeta::new(&Signature::new(Kind::Mismatch, "x"), "c".into())
    }

    #[test]
    fn the_options_a_run_forces_are_recorded_with_the_reduction_resolved() {
        let case = case_from_seed(&GenConfig::default(), 3);
        let run = RunConfig::with_compiler(CompilerUnderTest::InRepo(CompileOptions {
            skip_padding: false,
            reduction: Reduction::Gmem,
            ..CompileOptions::default()
        }));
        let mut m = meta();
        record_compiler(&mut m, &run, &case, None);
        assert_eq!(
            m.details,
            serde_json::json!({"compile_options": {"skip_padding": false, "weight_skipping": true, "reduction": "gmem"}})
        );
        assert_eq!(m.injected_bug, None);
        assert_eq!(m.lowering.as_deref(), Some("channel"));
    }

    #[test]
    fn an_injected_bug_is_recorded_and_in_an_n_version_run_its_lowering() {
        let case = case_from_seed(&GenConfig::default(), 3);
        let bug = BugClass::from_name("missing-bias").unwrap();
        let single = RunConfig::with_compiler(CompilerUnderTest::Mutated(bug, Lowering::Channel));
        let mut m = meta();
        record_compiler(&mut m, &single, &case, None);
        assert_eq!(m.injected_bug.as_deref(), Some("missing-bias"));
        assert_eq!(m.details, serde_json::Value::Null);

        let both = single.with_lowering(LoweringChoice::Both, Some(Lowering::Pixel));
        let mut m = meta();
        record_compiler(&mut m, &both, &case, None);
        assert_eq!(m.injected_bug.as_deref(), Some("missing-bias"));
        assert_eq!(m.lowering.as_deref(), Some("both"));
        assert_eq!(m.details, serde_json::json!({"injected_into": "pixel"}));
        assert_eq!(injected_into(&m.details), Ok(Some(Lowering::Pixel)));
        assert_eq!(
            injected_into(&serde_json::json!({"injected_into": 3})),
            Err(
                "field `details.injected_into`: expected a lowering (channel, pixel), found 3"
                    .into()
            )
        );
    }
}
