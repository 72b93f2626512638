//! Tensor cases as a coverage-guided target (`engine::guided`): feedback, mutations
//! ([`super::mutate`]) and the corpus entry (a case directory, as `pimdiff oracle` reads it, with
//! the case's compiler options in `compile_options.json`).
//!
//! **Feedback.** In a build with the `coverage-counters` feature (the in-repo compiler built
//! with `-C instrument-coverage`, see [`super::counters`]), the edges are the compiler's own
//! LLVM profile counters that a case moved, each with its hit-count bucket. Otherwise they are a
//! *stand-in*: the case's edge tags (`generate::edge_tags`), the compiled program's shape
//! (each core's opcode pairs, opcode counts in buckets, the core count) and the outcome
//! (kind, finding signature, decline reason).

use std::path::Path;

use pimdiff_input::limits::MAX_META_BYTES;
use pimdiff_input::InputError;
use pimdiff_oracle::Case;
use rand_chacha::ChaCha8Rng;

use super::generate::edge_tags;
use super::mutate::mutate_case;
use super::options::CaseOptions;
use super::{TensorCase, TensorTarget};
use crate::check::{CaseResult, Outcome};
use pimdiff_engine::coverage::edges::hit_bucket;
use pimdiff_engine::finding::abstract_message;
use pimdiff_engine::hunt::watchdog::StageClock;
use pimdiff_engine::hunt::{CorpusError, Edges, GuidedTarget, Target};

impl GuidedTarget for TensorTarget {
    fn feedback_source(&self) -> String {
        if cfg!(feature = "coverage-counters") {
            "llvm profile counters of the in-repo compiler, with hit-count buckets".into()
        } else {
            "stand-in: case edge tags, program opcode pairs and counts, outcome".into()
        }
    }

    fn feedback(&self, case: &TensorCase, run: &CaseResult) -> Option<Edges> {
        Some(Edges::from_features(stand_in_features(&case.case, run)))
    }

    #[cfg(feature = "coverage-counters")]
    fn run_with_edges(&self, case: &TensorCase, clock: &StageClock) -> (CaseResult, Option<Edges>) {
        super::counters::around(|| self.run(case, clock))
    }

    #[cfg(not(feature = "coverage-counters"))]
    fn run_with_edges(&self, case: &TensorCase, clock: &StageClock) -> (CaseResult, Option<Edges>) {
        let run = self.run(case, clock);
        let edges = self.feedback(case, &run);
        (run, edges)
    }

    /// A mutant keeps the options of the case it came from.
    fn mutate(
        &self,
        case: &TensorCase,
        other: Option<&TensorCase>,
        rng: &mut ChaCha8Rng,
    ) -> Option<TensorCase> {
        mutate_case(
            self.generator_config(),
            &case.case,
            other.map(|o| &o.case),
            rng,
        )
        .map(|c| case.with_case(c))
    }

    /// The case directory, and the case's compiler options beside it
    /// ([`OPTIONS_FILE`]), so that an entry read back compiles as it did when it was kept.
    fn write_case(&self, case: &TensorCase, dir: &Path) -> Result<(), pimdiff_atomic::Error> {
        let io = |path: &Path, e: String| pimdiff_atomic::Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other(e),
        };
        pimdiff_oracle::io::write_case_files(&case.case, dir)
            .map_err(|e| io(dir, e.to_string()))?;
        if let Some(options) = &case.options {
            let path = dir.join(OPTIONS_FILE);
            std::fs::write(&path, pimdiff_engine::finding::to_json_text(options))
                .map_err(|e| io(&path, e.to_string()))?;
        }
        Ok(())
    }

    /// An entry without [`OPTIONS_FILE`] compiles with the run's own options.
    fn read_case(&self, dir: &Path) -> Result<TensorCase, CorpusError> {
        let case =
            pimdiff_oracle::io::read_case(dir).map_err(|e| CorpusError::new(dir, e.to_string()))?;
        let path = dir.join(OPTIONS_FILE);
        let options = match pimdiff_input::read(&path, MAX_META_BYTES) {
            Ok(bytes) => Some(
                serde_json::from_slice::<CaseOptions>(&bytes)
                    .map_err(|e| CorpusError::new(&path, e.to_string()))?,
            ),
            Err(InputError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(CorpusError::new(&path, e.to_string())),
        };
        Ok(TensorCase { case, options })
    }
}

/// The file of a corpus entry that holds its case's compiler options (absent: the run's own).
pub const OPTIONS_FILE: &str = "compile_options.json";

/// The stand-in's features of one run (see the module docs).
fn stand_in_features(case: &Case, run: &CaseResult) -> Vec<String> {
    let mut out: Vec<String> = edge_tags(case)
        .into_iter()
        .map(|t| format!("tag {t:?}"))
        .collect();
    out.push(format!("outcome {:?}", run.outcome.kind()));
    if let Some(s) = run.signature() {
        out.push(format!("signature {s}"));
    }
    if let Outcome::Unsupported { reason } = &run.outcome {
        out.push(format!("declined {}", abstract_message(reason)));
    }
    if let Some(b) = &run.bundle {
        out.push(format!(
            "cores {}",
            hit_bucket(b.program.cores.len() as u64)
        ));
        for core in &b.program.cores {
            let mut counts = std::collections::BTreeMap::new();
            for pair in core.windows(2) {
                out.push(format!("{:?}>{:?}", pair[0].opcode(), pair[1].opcode()));
            }
            for inst in core {
                *counts.entry(inst.opcode()).or_insert(0u64) += 1;
            }
            for (op, n) in counts {
                out.push(format!("{op:?} x{}", hit_bucket(n)));
            }
        }
    }
    out
}
