//! Hunts in miniature for an injected bug: how many cases of a seed stream the loop needs to
//! detect it. Used by the injected-bug tests and the harness benchmark's per-class table.

use pimdiff_oracle::Case;

use crate::check::{check_case, Outcome, RunConfig, Signature};
use crate::compilers::injected::BugClass;
use crate::compilers::CompilerUnderTest;
use crate::generate::{case_from_seed, GenConfig};

/// The first case of a seed stream on which an injected bug is detected.
#[derive(Clone, Debug)]
pub struct Detection {
    /// Cases checked up to and including the detecting one.
    pub cases: usize,
    /// The seed of the detecting case.
    pub seed: u64,
    pub case: Case,
    pub signature: Signature,
}

/// A short hunt for `bug`: checks the cases of seeds `first_seed..first_seed + max_cases`
/// (generated with `gen`) against the in-repo compiler with `bug` injected, and returns the
/// first *detection*: a finding of the mutated compiler on a case the correct compiler
/// passes (so a genuine compiler bug is never credited to the injection).
pub fn first_detection(
    bug: BugClass,
    gen: &GenConfig,
    first_seed: u64,
    max_cases: usize,
) -> Option<Detection> {
    let mutated = RunConfig::with_compiler(CompilerUnderTest::Mutated(
        bug,
        pimdiff_compiler::Lowering::Channel,
    ));
    let correct = RunConfig::default();
    for (i, seed) in (first_seed..).take(max_cases).enumerate() {
        let case = case_from_seed(gen, seed);
        let result = check_case(&case, &mutated);
        let Some(signature) = result.outcome.signature() else {
            continue;
        };
        if check_case(&case, &correct).outcome == Outcome::Pass {
            return Some(Detection {
                cases: i + 1,
                seed,
                case,
                signature,
            });
        }
    }
    None
}
