//! The verdict of a run of any command or target: nothing found, something found, or no
//! verdict at all.
//!
//! "No verdict" is its own answer because a compiler that declines every case, or a check that
//! runs out of steps, has not been shown correct: counting it as clean would let a hunt pass
//! a compiler that compiles nothing, and counting it as a finding would report a bug nobody
//! can reproduce. The CLI maps the three onto exit codes 0, 1 and 4 (`pimdiff::cli`).

use super::Kind;

/// What a run came to, from best to worst.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// Ran and found nothing.
    #[default]
    Clean,
    /// Ran, but cannot say whether anything is wrong (every case declined, a step budget
    /// spent, more declines than the generator explains).
    NoVerdict,
    /// Found something.
    Findings,
}

impl Verdict {
    /// The verdict of two results together: findings over no verdict over clean.
    pub fn and(self, other: Verdict) -> Verdict {
        self.max(other)
    }
}

/// The outcome kinds that are no verdict on the compiler: the case was declined, the tooling
/// failed, or the step budget ran out before the program ended.
pub const UNJUDGED_KINDS: [Kind; 3] = [Kind::Unsupported, Kind::Poisoned, Kind::OutOfSteps];

/// Whether a run that ended in `kind`, and is not a finding, left the case unjudged.
pub fn is_unjudged(kind: Kind) -> bool {
    UNJUDGED_KINDS.contains(&kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_take_precedence_over_no_verdict() {
        use Verdict::*;
        assert_eq!(Clean.and(NoVerdict), NoVerdict);
        assert_eq!(NoVerdict.and(Findings), Findings);
        assert_eq!(Findings.and(Clean), Findings);
        assert_eq!(Clean.and(Clean), Clean);
        assert!(is_unjudged(Kind::OutOfSteps) && !is_unjudged(Kind::BogusUnsupported));
    }
}
