//! Discovering, loading and checking entries: `repro`, `replay` and the corpus test.

use std::fs;
use std::path::{Path, PathBuf};

use crate::check::n_version::LoweringChoice;
use crate::check::{check_case_within, CaseResult, RunConfig};
use crate::compilers::injected::BugClass;
use crate::compilers::record::ExternalCompiler;
use crate::compilers::CompilerUnderTest;
use crate::options::CaseOptions;

use super::meta::{read_entry_meta, EntryError, EntryMeta};
use super::{io_err, CorpusError, EXPECT_JSON};
use pimdiff_engine::finding::{Expectation, Observed};

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

/// A case directory with what it says about itself.
#[derive(Clone, Debug)]
pub struct Entry {
    pub dir: PathBuf,
    pub case: pimdiff_oracle::Case,
    pub meta: EntryMeta,
    /// The injected bug `expect.json` asks for, if any.
    pub mutation: Option<BugClass>,
    /// The lowering the injected bug goes into (an N-version finding's
    /// `details.injected_into`, or `repro --inject-into`); `None`: the bug's default.
    pub inject_into: Option<pimdiff_compiler::Lowering>,
    /// The lowering(s) to check with: recorded in `expect.json` or `finding.json`, or set by
    /// `--lowering` (which overrides the record); `None`: the base configuration's.
    pub lowering: Option<LoweringChoice>,
    /// The in-repo compiler's options recorded in `expect.json` or `finding.json`; flags of
    /// the base configuration still force theirs (`CaseOptions::forced_by`). `None`: the base
    /// configuration's.
    pub options: Option<CaseOptions>,
    /// The external compiler the finding was made with (`finding.json`'s
    /// `details.external_compiler`, or for an older finding its `compiler` in words): `repro`
    /// and `replay` compile with it unless their flags choose a compiler.
    pub external: Option<ExternalCompiler>,
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
        Some(name) => {
            Some(
                BugClass::from_name(name).ok_or_else(|| EntryError::UnknownMutation {
                    path: dir.join(EXPECT_JSON),
                    name: name.to_string(),
                    known: BugClass::known_names(),
                })?,
            )
        }
    };
    Ok(Entry {
        dir: dir.to_path_buf(),
        case,
        lowering: meta.lowering(),
        options: meta.compile_options(),
        inject_into: meta.injected_into(),
        external: meta.external_compiler(),
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

/// What `repro` and `replay` observe for a check: [`observe`] with the N-version
/// attribution in the signature.
pub fn observe_result(result: &CaseResult) -> Observed {
    Observed {
        signature: result.signature().map(|s| s.to_string()),
        ..observe(&result.outcome)
    }
}

/// What `repro` and `replay` observe for an outcome.
pub fn observe(outcome: &crate::check::Outcome) -> Observed {
    Observed {
        kind: outcome.kind(),
        finding: outcome.is_finding(),
        signature: outcome.signature().map(|s| s.to_string()),
        unsupported_reason: match outcome {
            crate::check::Outcome::Unsupported { reason } => Some(reason.clone()),
            _ => None,
        },
    }
}

/// The run configuration for `entry`: `base`, with the in-repo compiler replaced by the
/// entry's injected bug when it names one, and switched to the entry's lowering(s) when it
/// records them, and to its recorded compiler options (where the base's flags do not force
/// theirs). A `schedule-dependent` finding's recorded schedule is explored too, so it replays
/// exactly.
pub fn run_config_for(entry: &Entry, base: &RunConfig) -> RunConfig {
    if let Some(run) = recorded_external(entry, base) {
        return run;
    }
    let run = match entry.mutation {
        Some(bug) => RunConfig {
            compiler: CompilerUnderTest::Mutated(bug, entry.inject_into.unwrap_or_default()),
            second: None,
            ..base.clone()
        },
        None => base.clone(),
    };
    let run = match entry.lowering {
        Some(choice) if run.lowering_choice() != Some(choice) => {
            run.with_lowering(choice, entry.inject_into)
        }
        _ => run,
    };
    // An injected bug compiles with its own options (`injected::options_for`).
    let mut run = match &entry.options {
        Some(options) if entry.mutation.is_none() => options.apply(&run),
        _ => run,
    };
    let recorded = entry
        .meta
        .finding
        .as_ref()
        .and_then(|f| f.schedule.as_deref());
    if let Some(s) = recorded.and_then(|s| s.parse().ok()) {
        if !run.explore.contains(&s) {
            run.explore.insert(0, s);
        }
    }
    run
}

/// `base` with the external compiler `entry` records, when the base configuration chose no
/// compiler of its own (the in-repo compiler with no flags: `--compiler-cmd` or
/// `--inject-bug` override the record).
pub fn recorded_external(entry: &Entry, base: &RunConfig) -> Option<RunConfig> {
    let record = entry.external.as_ref()?;
    let chosen = base.external.is_some()
        || base.second.is_some()
        || !matches!(base.compiler, CompilerUnderTest::InRepo(_));
    if chosen {
        return None;
    }
    let mut run = RunConfig {
        compiler: record.compiler(),
        external: Some(record.clone()),
        ..base.clone()
    };
    if let Some(t) = record.timeout() {
        run.external_timeout = t;
    }
    Some(run)
}

/// Checks one entry: compile, run, compare with the oracle and with `expected.npy`, and with
/// the recorded expectation. Under the watchdog: an entry that hangs is a `timeout` (its thread
/// is abandoned), never a hung replay.
pub fn check_entry(entry: &Entry, base: &RunConfig) -> EntryResult {
    let run = run_config_for(entry, base);
    let result = check_case_within(&entry.case, &run);
    let expected_disagrees = match (&entry.case.expected, &result.oracle) {
        (Some(expected), Some(oracle)) => differing(expected, oracle),
        _ => None,
    };
    let mut observed = observe_result(&result);
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
    replay_with_lowering(paths, base, None)
}

/// [`replay`], checking every entry with `lowering` instead of the lowering it records
/// (`--lowering`), when given.
pub fn replay_with_lowering(
    paths: &[PathBuf],
    base: &RunConfig,
    lowering: Option<LoweringChoice>,
) -> Result<Vec<ReplayRow>, CorpusError> {
    use rayon::prelude::*;
    let dirs = discover(paths)?;
    Ok(dirs
        .into_par_iter()
        .map(|dir| match load_entry(&dir) {
            Ok(mut entry) => {
                if lowering.is_some() {
                    entry.lowering = lowering;
                }
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
