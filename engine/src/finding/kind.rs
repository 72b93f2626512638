//! The outcome kinds of every target, each once.
//!
//! One enum for the tensor check, PIMCOMP-NN and every later target, so that a summary, a
//! merge of shards or a script can count and compare outcomes without knowing which compiler
//! produced them. Each kind serializes as the word today's `summary.json` and `finding.json`
//! use (`mismatch`, `uninitialized-read`, …), so saved findings and the scripts reading them
//! keep working.
//!
//! Two kinds look alike and are kept apart on purpose: `timeout` is the engine's watchdog
//! abandoning a stage of an in-process check (a thread that cannot be killed), `hang` is an
//! external compiler process killed at its deadline or memory limit.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

macro_rules! kinds {
    ($( $(#[$doc:meta])* $variant:ident = $word:literal ),* $(,)?) => {
        /// What one run of a case came to (see the module docs).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum Kind {
            $( $(#[$doc])* #[serde(rename = $word)] $variant, )*
        }

        impl Kind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [Kind] = &[$(Kind::$variant),*];

            /// The word the kind is written as (`summary.json`, `finding.json`, signatures).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Kind::$variant => $word,)*
                }
            }
        }
    };
}

kinds! {
    /// The program's output equals the reference exactly.
    Pass = "pass",
    /// The program finished but its output differs from the reference.
    Mismatch = "mismatch",
    /// The interpreter stopped on a fault of the program (a trap, not a pimdiff bug).
    Fault = "fault",
    /// Every unfinished core or tile waits forever.
    Deadlock = "deadlock",
    /// The step budget ran out (a limit of the tooling, not a verdict).
    OutOfSteps = "out-of-steps",
    /// The compiler failed on a case it did not decline, or wrote output that cannot be loaded.
    CompileError = "compile-error",
    /// The compiler declined the case, or the check cannot judge it (counted, never a pass).
    Unsupported = "unsupported",
    /// The tooling itself failed (counted, never a finding).
    Poisoned = "poisoned",
    /// The engine's watchdog abandoned a stage of an in-process check.
    Timeout = "timeout",
    /// pimdiff's own interpreter panicked: a bug in pimdiff.
    InterpreterPanic = "interpreter-panic",
    /// A decline whose claimed numbers the harness refutes.
    BogusUnsupported = "bogus-unsupported",
    /// Two cores touch the same global bytes unordered, one writing.
    Race = "race",
    /// An instruction read bytes nothing wrote.
    UninitializedRead = "uninitialized-read",
    /// The result changes with the core interleaving.
    ScheduleDependent = "schedule-dependent",
    /// The compiler died on a signal, or an in-process target panicked.
    Crash = "crash",
    /// The compiler aborted (SIGABRT: a failed assertion, an uncaught exception).
    Abort = "abort",
    /// An external compiler was killed at its deadline or memory limit.
    Hang = "hang",
    /// Two pipelines of one compiler disagree where the reference cannot say which is wrong.
    CrossMode = "cross-mode",
    /// A compiler's program and its own side description disagree.
    Disagreement = "disagreement",
    /// A program names more cores than its configuration has.
    CoreCount = "core-count",
    /// The compiler refused the input with a message.
    Rejected = "rejected",
}

impl Kind {
    /// The kind a word names, if any.
    pub fn from_word(word: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.as_str() == word)
    }
}

/// Kinds order by their word, so maps keyed by kind list them alphabetically (as
/// `summary.json` always has).
impl Ord for Kind {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Kind {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that names no kind.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown outcome kind {0:?}")]
pub struct UnknownKind(pub String);

impl FromStr for Kind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<Kind, UnknownKind> {
        Kind::from_word(s).ok_or_else(|| UnknownKind(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_through_serde_and_from_str() {
        for &k in Kind::ALL {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.as_str()));
            assert_eq!(serde_json::from_str::<Kind>(&json).unwrap(), k);
            assert_eq!(k.as_str().parse::<Kind>(), Ok(k));
        }
        assert_eq!(
            "uninitialised".parse::<Kind>(),
            Err(UnknownKind("uninitialised".into()))
        );
    }

    #[test]
    fn each_word_once_and_ordered_alphabetically() {
        let mut words: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), Kind::ALL.len());
        assert!(Kind::Abort < Kind::Crash && Kind::UninitializedRead > Kind::Timeout);
    }
}
