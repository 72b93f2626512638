//! Coverage-guided hunting (`pimdiff hunt --guided`): cases that reach new edges of the
//! compiler under test are kept in a corpus and mutated, alongside fresh random cases, the
//! way libFuzzer treats its inputs, at the level of whole cases (networks, tensor cases).
//!
//! **The seam.** A target that can be guided implements [`GuidedTarget`] on top of
//! [`Target`]: [`GuidedTarget::feedback`] reports the [`Edges`] one run reached (or
//! [`GuidedTarget::run_with_edges`] when they must be collected around the run, as in-process
//! counters are), [`GuidedTarget::mutate`] makes a valid variant of a case (with a second case
//! for a splice), and [`GuidedTarget::write_case`] / [`GuidedTarget::read_case`] store a case
//! in a corpus entry. Nothing else of the engine changes: findings are bucketed, minimized and
//! saved as in any hunt.
//!
//! **The schedule.** Position `j` of the shard's index sequence (case `k = shard.nth(j)`):
//! the first positions replay the `--corpus` entries loaded, in name order; after them, one
//! position in [`Guidance::fresh_every`] (default [`FRESH_EVERY`]: `j mod 4 == 0`, a quarter
//! fresh, three quarters mutants) and every position while the corpus is empty is the fresh
//! random case `k` (exactly the case an unguided hunt runs at `k`); the others are
//! mutants: a corpus entry picked uniformly, spliced with a second one in one case of
//! [`SPLICE_ONE_IN`], then 1 to [`MAX_STACK`] mutations stacked. A mutant's choices come from a
//! ChaCha8 stream seeded by the case seed of `k`, so with `--jobs 1` (cases run one after the
//! other, each seeing the corpus its predecessors left) a seed gives the same corpus and the
//! same summary every time; with more jobs the corpus depends on which case finishes first.
//!
//! **The corpus.** A case whose edges include one no earlier case reached is kept: in memory,
//! and on disk as `OUT/corpus/k<index>/` (the target's case files and `entry.json`), written
//! atomically. A mutant has no seed to regenerate it from, so the mutants of the cases the
//! engine may still need (a finding's, a hung one's) are kept in memory by index: saving,
//! cause grouping and triage read them through `Guide::recorded`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::panic;
use super::target::panic_observation;
use super::target::{Observation, Target};
use super::watchdog::StageClock;
use crate::coverage::Edges;
use crate::plan::{case_seed, Shard};

/// The corpus directory of a guided hunt's output.
pub const CORPUS_DIR: &str = "corpus";
/// One position in this many is a fresh random case (the rest mutate the corpus): the
/// default of [`Guidance::fresh_every`].
pub const FRESH_EVERY: u64 = 4;
/// At most this many mutations are stacked on one corpus entry.
pub const MAX_STACK: u32 = 3;
/// One mutant in this many starts with a splice of two corpus entries.
pub const SPLICE_ONE_IN: u32 = 5;
/// Tries of one mutation before it is given up (a mutation may find no valid variant).
const MUTATION_TRIES: usize = 4;
/// The largest corpus `--corpus` reads.
pub const MAX_CORPUS_ENTRIES: usize = 100_000;
/// Each corpus entry's own description.
pub const ENTRY_JSON: &str = "entry.json";
/// Separates a mutant's random stream from anything else seeded by the same case seed.
const MUTATION_SALT: u64 = 0x6775_6964_6564_2121;

/// A target a hunt can guide by coverage (see the module docs).
pub trait GuidedTarget: Target {
    /// Where the edges come from, in words, for the summary (`"stand-in: ..."` when they are
    /// not the compiler's own coverage).
    fn feedback_source(&self) -> String;

    /// The edges `run` (of `case`) reached; `None` when this run has no feedback.
    fn feedback(&self, case: &Self::Case, run: &Self::Run) -> Option<Edges>;

    /// Runs `case` and collects its edges. The default runs, then asks
    /// [`GuidedTarget::feedback`]; a target whose counters must be reset before the run
    /// overrides it.
    fn run_with_edges(&self, case: &Self::Case, clock: &StageClock) -> (Self::Run, Option<Edges>) {
        let run = self.run(case, clock);
        let edges = self.feedback(case, &run);
        (run, edges)
    }

    /// A valid variant of `case`: one parameter changed, a part inserted or deleted, or, with
    /// `other`, the two spliced. `None` when the choices drawn from `rng` give no valid variant.
    fn mutate(
        &self,
        case: &Self::Case,
        other: Option<&Self::Case>,
        rng: &mut ChaCha8Rng,
    ) -> Option<Self::Case>;

    /// Writes `case`'s files into `dir` (a directory under construction).
    fn write_case(&self, case: &Self::Case, dir: &Path) -> Result<(), pimdiff_atomic::Error>;

    /// Reads a case written by [`GuidedTarget::write_case`] (bounded reads; untrusted input).
    fn read_case(&self, dir: &Path) -> Result<Self::Case, CorpusError>;
}

/// How a guided hunt starts and schedules.
#[derive(Clone, Debug)]
pub struct Guidance<C> {
    /// Corpus entries replayed first (`--corpus`, read by [`load_corpus`]).
    pub corpus: Vec<C>,
    /// One position in this many is fresh ([`FRESH_EVERY`] by default); 1 makes no mutants:
    /// the unguided hunt's cases, with their feedback measured (a baseline to compare with).
    pub fresh_every: u64,
}

impl<C> Default for Guidance<C> {
    fn default() -> Self {
        Guidance {
            corpus: Vec::new(),
            fresh_every: FRESH_EVERY,
        }
    }
}

/// A corpus that cannot be read, naming the culprit.
#[derive(Debug, thiserror::Error)]
#[error("corpus entry {}: {reason}", path.display())]
pub struct CorpusError {
    pub path: PathBuf,
    pub reason: String,
}

impl CorpusError {
    pub fn new(path: &Path, reason: impl Into<String>) -> CorpusError {
        CorpusError {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }
}

/// The cases of corpus directory `dir` (one subdirectory per entry, in name order; hidden
/// entries, which are writes under way, skipped). Anything else in it, or an entry its target
/// cannot read, is an error naming it.
pub fn load_corpus<T: GuidedTarget>(target: &T, dir: &Path) -> Result<Vec<T::Case>, CorpusError> {
    let io = |path: &Path, e: std::io::Error| CorpusError::new(path, e.to_string());
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let entry = entry.map_err(|e| io(dir, e))?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        if !entry.file_type().map_err(|e| io(&path, e))?.is_dir() {
            return Err(CorpusError::new(
                &path,
                "not a directory (a corpus holds one directory per entry)",
            ));
        }
        names.push(path);
        if names.len() > MAX_CORPUS_ENTRIES {
            return Err(CorpusError::new(
                dir,
                format!("more than {MAX_CORPUS_ENTRIES} entries (MAX_CORPUS_ENTRIES)"),
            ));
        }
    }
    names.sort();
    names.iter().map(|p| target.read_case(p)).collect()
}

/// What the engine asks of a guided hunt (object-safe, so that `engine::Context` needs no
/// more than `Target`).
pub(super) trait Guide<T: Target>: Send + Sync {
    /// Case `k` when it is not the fresh case of its seed (a mutant or a loaded entry the
    /// engine may still need), else `None`.
    fn recorded(&self, k: u64) -> Option<T::Case>;
    /// Picks case `k` (see the schedule), runs it, keeps it when it reached a new edge.
    fn check(&self, k: u64, clock: &StageClock) -> Observation;
    /// The corpus and schedule statistics for `summary.json` (`details.guided`).
    fn stats(&self) -> serde_json::Value;
}

/// Where a case of a guided hunt came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    Fresh,
    Mutant,
    Loaded,
}

impl Origin {
    fn name(self) -> &'static str {
        match self {
            Origin::Fresh => "fresh",
            Origin::Mutant => "mutant",
            Origin::Loaded => "loaded",
        }
    }
}

/// The counts a guided hunt reports (`summary.json`, `details.guided`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GuidedStats {
    /// [`GuidedTarget::feedback_source`].
    pub feedback: String,
    /// One position in this many is fresh ([`Guidance::fresh_every`]).
    pub fresh_every: u64,
    /// Cases run, by origin.
    pub fresh: u64,
    pub mutants: u64,
    pub loaded: u64,
    /// Mutant positions that fell back to a fresh case (no valid variant found).
    pub mutation_failures: u64,
    /// Corpus entries kept, by origin.
    pub kept_fresh: u64,
    pub kept_mutants: u64,
    pub kept_loaded: u64,
    /// Distinct edges reached by the cases of the sweep.
    pub edges: u64,
    /// Corpus entries that could not be written (the first error is in `write_error`).
    pub write_failures: u64,
    pub write_error: Option<String>,
}

/// The corpus of one guided hunt.
pub(super) struct Corpus<T: GuidedTarget> {
    target: Arc<T>,
    seed: u64,
    shard: Shard,
    dir: PathBuf,
    /// `--corpus` entries, replayed first.
    loaded: Vec<T::Case>,
    fresh_every: u64,
    state: Mutex<State<T::Case>>,
    /// Mutants and loaded cases the engine may still ask for, by index.
    recorded: Mutex<HashMap<u64, T::Case>>,
}

struct State<C> {
    seen: HashSet<u32>,
    entries: Vec<C>,
    stats: GuidedStats,
}

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<T: GuidedTarget> Corpus<T> {
    /// A corpus written under `dir`, scheduled by `guidance`.
    pub fn new(
        target: Arc<T>,
        seed: u64,
        shard: Shard,
        dir: PathBuf,
        guidance: Guidance<T::Case>,
    ) -> Self {
        let fresh_every = guidance.fresh_every.max(1);
        let stats = GuidedStats {
            feedback: target.feedback_source(),
            fresh_every,
            ..GuidedStats::default()
        };
        Corpus {
            target,
            seed,
            shard,
            dir,
            loaded: guidance.corpus,
            fresh_every,
            state: Mutex::new(State {
                seen: HashSet::new(),
                entries: Vec::new(),
                stats,
            }),
            recorded: Mutex::new(HashMap::new()),
        }
    }

    /// Case `k` and its origin (see the module docs, "The schedule").
    fn next_case(&self, k: u64) -> (T::Case, Origin) {
        let j = k.saturating_sub(self.shard.index) / self.shard.count.max(1);
        if let Some(c) = usize::try_from(j).ok().and_then(|j| self.loaded.get(j)) {
            lock(&self.state).stats.loaded += 1;
            return (c.clone(), Origin::Loaded);
        }
        let mutant = if j.is_multiple_of(self.fresh_every) {
            None
        } else {
            self.mutant(k)
        };
        let mut st = lock(&self.state);
        match mutant {
            Some(m) => {
                st.stats.mutants += 1;
                (m, Origin::Mutant)
            }
            None => {
                st.stats.fresh += 1;
                drop(st);
                (self.target.case(case_seed(self.seed, k)), Origin::Fresh)
            }
        }
    }

    /// A mutant for position `k`, or `None` (empty corpus, or no valid variant found).
    fn mutant(&self, k: u64) -> Option<T::Case> {
        let mut rng = ChaCha8Rng::seed_from_u64(case_seed(self.seed, k) ^ MUTATION_SALT);
        let (parent, other) = {
            let st = lock(&self.state);
            let n = st.entries.len();
            if n == 0 {
                return None;
            }
            let parent = st.entries[rng.random_range(0..n)].clone();
            let other = (n > 1 && rng.random_ratio(1, SPLICE_ONE_IN))
                .then(|| st.entries[rng.random_range(0..n)].clone());
            (parent, other)
        };
        let depth = rng.random_range(1..=MAX_STACK);
        let mut cur = parent;
        let mut changed = false;
        for step in 0..depth {
            let with = if step == 0 { other.as_ref() } else { None };
            for _ in 0..MUTATION_TRIES {
                if let Some(m) = self.target.mutate(&cur, with, &mut rng) {
                    cur = m;
                    changed = true;
                    break;
                }
            }
        }
        if !changed {
            lock(&self.state).stats.mutation_failures += 1;
        }
        changed.then_some(cur)
    }

    /// Keeps `case` when `edges` holds an edge not seen before, and writes it to disk.
    fn offer(&self, k: u64, case: &T::Case, edges: Option<Edges>, origin: Origin) {
        let Some(edges) = edges else { return };
        {
            let mut st = lock(&self.state);
            let before = st.seen.len();
            st.seen.extend(edges.ids().iter().copied());
            if st.seen.len() == before {
                return;
            }
            st.stats.edges = st.seen.len() as u64;
            match origin {
                Origin::Fresh => st.stats.kept_fresh += 1,
                Origin::Mutant => st.stats.kept_mutants += 1,
                Origin::Loaded => st.stats.kept_loaded += 1,
            }
            st.entries.push(case.clone());
        }
        if let Err(e) = self.write_entry(k, case, &edges, origin) {
            let mut st = lock(&self.state);
            st.stats.write_failures += 1;
            st.stats.write_error.get_or_insert_with(|| e.to_string());
        }
    }

    fn write_entry(
        &self,
        k: u64,
        case: &T::Case,
        edges: &Edges,
        origin: Origin,
    ) -> Result<(), pimdiff_atomic::Error> {
        let dest = self.dir.join(format!("k{k:012}"));
        let tmp = pimdiff_atomic::AtomicDir::create(&dest)?;
        self.target.write_case(case, tmp.path())?;
        let entry = serde_json::json!({
            "hunt_seed": self.seed,
            "case_index": k,
            "origin": origin.name(),
            "edges": edges.len(),
        });
        let text = serde_json::to_string_pretty(&entry).unwrap_or_default() + "\n";
        pimdiff_atomic::write_file(&tmp.path().join(ENTRY_JSON), text.as_bytes())?;
        tmp.commit()?;
        Ok(())
    }
}

impl<T: GuidedTarget> Guide<T> for Corpus<T> {
    fn recorded(&self, k: u64) -> Option<T::Case> {
        lock(&self.recorded).get(&k).cloned()
    }

    fn check(&self, k: u64, clock: &StageClock) -> Observation {
        let (case, origin) = self.next_case(k);
        if origin != Origin::Fresh {
            lock(&self.recorded).insert(k, case.clone());
        }
        let target = &self.target;
        let obs = match panic::catch(|| {
            let (run, edges) = target.run_with_edges(&case, clock);
            (target.observe(&run), edges)
        }) {
            Ok((obs, edges)) => {
                self.offer(k, &case, edges, origin);
                obs
            }
            Err(p) => panic_observation(&p),
        };
        if obs.signatures.is_empty() && origin != Origin::Fresh {
            lock(&self.recorded).remove(&k);
        }
        obs
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::to_value(&lock(&self.state).stats).unwrap_or_default()
    }
}
