//! Findings on disk during a hunt: saved the moment they are found, replaced when triaged.
//!
//! * **At once.** When the sweep meets a signature for the first time, the [`Saver`] (a thread
//!   of its own, so the sweep never waits for a disk) rechecks that case under the watchdog
//!   and writes it, complete and atomically, as `findings/k<index>-<signature>/`. A hung case
//!   is not run again: its directory holds the case and a report of the timeout. So a hunt
//!   killed by anything, even SIGKILL, leaves every finding it had met on disk.
//! * **At the end.** Each finding's triaged (minimized) form is written atomically as
//!   `findings/<nnn>-<signature>/`, numbered in order of first case index, and only then are
//!   the `k<index>-…` directories it replaces removed: at every instant each finding is on
//!   disk at least once, complete.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pimdiff_oracle::Case;

use super::config::HuntError;
use super::plan::case_seed;
use crate::check::outcome::timeout_outcome;
use crate::check::stage_limit;
use crate::check::{check_case_within, CaseResult, RunConfig, Signature, Stage};
use crate::compilers::CompilerUnderTest;
use crate::corpus::{self, FindingMeta, MinimizationStats, Origin};
use crate::finding::Kind;
use crate::report::{render_report_with, Suspects};
use crate::targets::tensor::generate::{case_from_seed, GenConfig};

/// What every finding of one hunt shares.
#[derive(Clone, Debug)]
pub(super) struct Context {
    pub seed: u64,
    pub generator: GenConfig,
    pub run: RunConfig,
    pub findings_dir: PathBuf,
}

/// One finding as written: the case (with `expected` set), its check, and what triage says.
pub(super) struct Record<'a> {
    pub case: &'a Case,
    pub result: &'a CaseResult,
    pub signature: &'a Signature,
    pub index: u64,
    pub minimization: Option<MinimizationStats>,
    /// The suspects triage localized (empty before triage, or when none were found).
    pub suspects: &'a [crate::triage::Suspect],
    /// Whether the record is triaged (its report then shows `suspects`).
    pub triaged: bool,
}

impl Context {
    /// Case `k` of the hunt.
    pub fn case(&self, k: u64) -> Case {
        case_from_seed(&self.generator, case_seed(self.seed, k))
    }

    /// Case `k` and its check, for saving a finding seen with `signature`: rerun under the
    /// watchdog, except for a timeout, whose case is not run again (it hung once; the result
    /// only carries the oracle's output, unless the oracle was what hung).
    pub fn recheck(&self, k: u64, signature: &Signature) -> (Case, CaseResult) {
        let mut case = self.case(k);
        let result = if signature.kind == Kind::Timeout {
            let stage = [Stage::Oracle, Stage::Compile, Stage::Run]
                .into_iter()
                .find(|s| s.name() == signature.detail)
                .unwrap_or(Stage::Compile);
            CaseResult {
                outcome: timeout_outcome(stage, stage_limit(&self.run, stage)),
                bundle: None,
                oracle: (stage != Stage::Oracle)
                    .then(|| pimdiff_oracle::reference(&case).ok())
                    .flatten(),
                machine_output: None,
                attribution: None,
            }
        } else {
            check_case_within(&case, &self.run)
        };
        case.expected = result.oracle.clone();
        (case, result)
    }

    /// Writes `record` as the finding directory `dest` (atomically; `dest` must not exist).
    pub fn write(&self, dest: &Path, record: &Record<'_>) -> Result<PathBuf, HuntError> {
        let suspects = if record.triaged {
            Suspects::Known(record.suspects)
        } else {
            Suspects::NotYet
        };
        let report = render_report_with(record.case, record.result, &self.run, suspects);
        let sig = record.signature;
        let meta = FindingMeta {
            format: corpus::META_FORMAT,
            signature: sig.to_string(),
            signature_detail: serde_json::to_value(sig).unwrap_or_default(),
            outcome: sig.kind.to_string(),
            // What `repro` and `replay` can confirm without localizing: the saved case's own
            // outcome signature (the finding's `signature` may be a localized cause).
            expect: corpus::Expectation::Signature(
                record
                    .result
                    .outcome
                    .signature()
                    .map_or_else(|| sig.to_string(), |s| s.to_string()),
            ),
            compiler: self.run.describe_compiler(),
            lowering: self.run.lowering_choice(),
            injected_bug: match (&self.run.compiler, &self.run.second) {
                // One version: replaying it needs the bug. (An N-version hunt's bug may sit in
                // either lowering; its finding records the compilers in words only.)
                (CompilerUnderTest::Mutated(bug, _), None) => Some(bug.name().to_string()),
                _ => None,
            },
            pimdiff_version: env!("CARGO_PKG_VERSION").to_string(),
            origin: Some(Origin {
                hunt_seed: self.seed,
                case_index: record.index,
                case_seed: case_seed(self.seed, record.index),
            }),
            generator: serde_json::to_value(&self.generator).unwrap_or_default(),
            minimization: record.minimization.clone(),
            suspects: record
                .suspects
                .iter()
                .filter_map(|s| serde_json::to_value(s).ok())
                .collect(),
            schedule: record.result.outcome.schedule().map(str::to_string),
        };
        Ok(corpus::save_finding(
            dest,
            record.case,
            record.result.bundle.as_ref(),
            &report,
            &meta,
            &crate::triage::attachments(record.case, record.result),
        )?)
    }
}

/// The directory name of a finding saved the moment it was found: `k<index>-<signature>`.
pub(super) fn provisional_name(index: u64, signature: &Signature) -> String {
    format!("k{index}-{}", slug(&signature.to_string()))
}

/// The directory name of a finding at the end of a hunt: `<nnn>-<signature>`.
pub(super) fn final_name(number: usize, signature: &Signature) -> String {
    format!("{number:03}-{}", slug(&signature.to_string()))
}

/// A file-name-safe form of a signature: lowercase letters and digits, runs of anything else
/// as one `-`, at most 48 characters.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 48 {
            break;
        }
    }
    let trimmed = out.trim_end_matches('-');
    if trimmed.is_empty() {
        "finding".to_string()
    } else {
        trimmed.to_string()
    }
}

/// The thread that saves new findings as the sweep meets them.
pub(super) struct Saver {
    tx: Sender<(u64, Signature)>,
    closed: Arc<AtomicBool>,
    done: Receiver<()>,
    saved: Arc<Mutex<BTreeMap<Signature, PathBuf>>>,
}

impl Saver {
    pub fn start(ctx: Arc<Context>) -> Saver {
        let (tx, rx) = mpsc::channel::<(u64, Signature)>();
        let (done_tx, done) = mpsc::channel();
        let closed = Arc::new(AtomicBool::new(false));
        let saved: Arc<Mutex<BTreeMap<Signature, PathBuf>>> = Arc::default();
        let (c, s) = (Arc::clone(&closed), Arc::clone(&saved));
        let spawned = std::thread::Builder::new()
            .name("pimdiff-save".into())
            .spawn(move || {
                while let Ok((k, sig)) = rx.recv() {
                    if c.load(Ordering::SeqCst) {
                        break;
                    }
                    save_now(&ctx, k, &sig, &s);
                }
                let _ = done_tx.send(());
            });
        if spawned.is_err() {
            closed.store(true, Ordering::SeqCst);
        }
        Saver {
            tx,
            closed,
            done,
            saved,
        }
    }

    /// Queues case `index`, first seen with `signature`, for saving.
    pub fn save(&self, index: u64, signature: &Signature) {
        let _ = self.tx.send((index, signature.clone()));
    }

    /// Stops taking requests, waits for the one being saved until `deadline`, and returns
    /// the directories written so far per signature.
    pub fn finish(self, deadline: Option<Instant>) -> BTreeMap<Signature, PathBuf> {
        self.closed.store(true, Ordering::SeqCst);
        drop(self.tx);
        loop {
            let wait = deadline.map_or(std::time::Duration::from_millis(50), |d| {
                d.saturating_duration_since(Instant::now())
                    .min(std::time::Duration::from_millis(50))
            });
            match self.done.recv_timeout(wait) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                }
            }
        }
        let saved = self.saved.lock().unwrap_or_else(|p| p.into_inner());
        saved.clone()
    }
}

/// Saves one finding unminimized (errors go to stderr: the end of the hunt writes every
/// finding again, and reports errors then).
fn save_now(ctx: &Context, k: u64, sig: &Signature, saved: &Mutex<BTreeMap<Signature, PathBuf>>) {
    let (case, result) = ctx.recheck(k, sig);
    let dest = ctx.findings_dir.join(provisional_name(k, sig));
    let record = Record {
        case: &case,
        result: &result,
        signature: sig,
        index: k,
        minimization: None,
        suspects: &[],
        triaged: false,
    };
    match ctx.write(&dest, &record) {
        Ok(path) => {
            saved
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(sig.clone(), path);
        }
        Err(e) => eprintln!("warning: cannot save the finding {sig} yet: {e}"),
    }
}
