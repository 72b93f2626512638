//! Findings on disk during a hunt: saved the moment they are found, replaced when triaged.
//!
//! * **At once.** When the sweep meets a signature for the first time, the [`Saver`] (a thread
//!   of its own, so the sweep never waits for a disk) runs that case again under the watchdog
//!   and writes it, complete and atomically, as `findings/k<index>-<signature>/`. A hung case
//!   is not run again. So a hunt killed by anything, even SIGKILL, leaves every finding it had
//!   met on disk.
//! * **At the end.** Each finding's triaged (minimized) form is written atomically as
//!   `findings/<nnn>-<signature>/`, numbered in order of first case index, and only then are
//!   the `k<index>-…` directories it replaces removed: at every instant each finding is on
//!   disk at least once, complete.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::guided::Guide;
use super::panic;
use super::target::Target;
use super::watchdog::run_watched;
use crate::finding::{
    provisional_name, write_finding, FindingMeta, Kind, MinimizationStats, Origin, Signature,
};
use crate::plan::case_seed;

/// What every finding of one hunt shares.
pub(super) struct Context<T: Target> {
    pub target: Arc<T>,
    pub seed: u64,
    pub findings_dir: PathBuf,
    /// The corpus of a guided hunt, whose mutants no seed regenerates.
    pub guide: Option<Arc<dyn Guide<T>>>,
}

/// One finding as written.
pub(super) struct Record<'a, T: Target> {
    pub case: &'a T::Case,
    pub evidence: &'a T::Evidence,
    pub signature: &'a Signature,
    /// The case index the saved case comes from (minimized or not).
    pub index: u64,
    pub minimization: Option<MinimizationStats>,
}

impl<T: Target> Context<T> {
    /// Case `k` of the hunt.
    pub fn case(&self, k: u64) -> T::Case {
        if let Some(case) = self.guide.as_ref().and_then(|g| g.recorded(k)) {
            return case;
        }
        self.target.case(case_seed(self.seed, k))
    }

    /// Case `k` and its evidence as a finding of `signature`: run again under the watchdog,
    /// except for a timeout, whose case is not run again (it hung once).
    pub fn recheck(&self, k: u64, signature: &Signature) -> (T::Case, T::Evidence) {
        let case = self.case(k);
        let run = if signature.kind == Kind::Timeout {
            None
        } else {
            let (target, owned) = (Arc::clone(&self.target), case.clone());
            let limits = Arc::clone(&self.target);
            let watched = run_watched(
                move |clock| panic::catch(|| target.run(&owned, clock)).ok(),
                move |stage| limits.stage_limit(stage).unwrap_or(Duration::MAX),
            );
            watched.ok().flatten()
        };
        let evidence = self.target.evidence(&case, run, signature);
        (case, evidence)
    }

    /// Writes `record` as the finding directory `dest` (atomically; `dest` must not exist).
    /// Returns `finding.json` as written.
    pub fn write(
        &self,
        dest: &Path,
        record: &Record<'_, T>,
    ) -> Result<FindingMeta, pimdiff_atomic::Error> {
        let mut meta = FindingMeta::new(record.signature, self.target.compiler());
        meta.target = Some(self.target.name().to_string());
        meta.origin = Some(Origin {
            hunt_seed: self.seed,
            case_index: record.index,
            case_seed: case_seed(self.seed, record.index),
        });
        meta.generator = self.target.generator();
        meta.minimization = record.minimization.clone();
        let target = &self.target;
        write_finding(dest, meta, |dir, meta| {
            target.write_finding(dir, record.case, record.evidence, meta)
        })
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
    pub fn start<T: Target>(ctx: Arc<Context<T>>) -> Saver {
        let (tx, rx) = mpsc::channel::<(u64, Signature)>();
        let (done_tx, done) = mpsc::channel();
        let closed = Arc::new(AtomicBool::new(false));
        let saved: Arc<Mutex<BTreeMap<Signature, PathBuf>>> = Arc::default();
        let (c, s) = (Arc::clone(&closed), Arc::clone(&saved));
        let scope = crate::process::scope();
        let spawned = std::thread::Builder::new()
            .name("pimdiff-save".into())
            .spawn(move || {
                crate::process::set_scope(scope);
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
            let wait = deadline.map_or(Duration::from_millis(50), |d| {
                d.saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(50))
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
/// finding again, and reports errors then). A panic of the target while saving is reported
/// the same way: the finding is saved again at the end.
fn save_now<T: Target>(
    ctx: &Context<T>,
    k: u64,
    sig: &Signature,
    saved: &Mutex<BTreeMap<Signature, PathBuf>>,
) {
    let dest = ctx.findings_dir.join(provisional_name(k, sig));
    let written = panic::catch(|| {
        let (case, evidence) = ctx.recheck(k, sig);
        let record = Record::<T> {
            case: &case,
            evidence: &evidence,
            signature: sig,
            index: k,
            minimization: None,
        };
        ctx.write(&dest, &record).map_err(|e| e.to_string())
    });
    match written.unwrap_or_else(|p| Err(format!("the target panicked: {}", p.describe()))) {
        Ok(_) => {
            saved
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(sig.clone(), dest);
        }
        Err(e) => eprintln!("warning: cannot save the finding {sig} yet: {e}"),
    }
}
