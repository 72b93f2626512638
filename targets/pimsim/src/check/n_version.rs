//! N-version checking: one case, two compilers (the in-repo compiler's two lowerings), each
//! compared with the oracle and the two compared with each other.
//!
//! Why: the channel-wise and pixel-wise lowerings share tiling, mapping and the crossbar
//! export but not bufferization or code generation, so a finding that only one of them shows
//! points at that lowering's own stages, and a finding both show points at the shared stages
//! (or at the oracle). [`Attribution`] says which; it is part of the finding's signature
//! ([`attributed`]), so a hunt deduplicates and minimizes "pixel only" and "both" findings
//! separately and a minimized case keeps its attribution.
//!
//! The combined [`CaseResult`] is that of the wrong version (the first one when both are
//! wrong), so triage, localization and reports work on one bundle as for a single compiler.

use std::fmt;

use pimdiff_compiler::Lowering;

use super::{CaseResult, Signature};

/// Which lowering(s) a check compiles with: `channel`, `pixel`, or `both` (N-version).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LoweringChoice {
    #[default]
    Channel,
    Pixel,
    Both,
}

impl LoweringChoice {
    /// `channel`, `pixel` or `both`, as on the command line and in `finding.json`.
    pub fn name(self) -> &'static str {
        match self {
            LoweringChoice::Channel => "channel",
            LoweringChoice::Pixel => "pixel",
            LoweringChoice::Both => "both",
        }
    }

    /// The single lowering, `None` for `both`.
    pub fn single(self) -> Option<Lowering> {
        match self {
            LoweringChoice::Channel => Some(Lowering::Channel),
            LoweringChoice::Pixel => Some(Lowering::Pixel),
            LoweringChoice::Both => None,
        }
    }
}

impl From<Lowering> for LoweringChoice {
    fn from(l: Lowering) -> LoweringChoice {
        match l {
            Lowering::Channel => LoweringChoice::Channel,
            Lowering::Pixel => LoweringChoice::Pixel,
        }
    }
}

impl fmt::Display for LoweringChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for LoweringChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<LoweringChoice, String> {
        [
            LoweringChoice::Channel,
            LoweringChoice::Pixel,
            LoweringChoice::Both,
        ]
        .into_iter()
        .find(|l| l.name() == s)
        .ok_or_else(|| format!("unknown lowering {s:?} (expected channel, pixel or both)"))
    }
}

impl serde::Serialize for LoweringChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for LoweringChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Which version of an N-version check is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrong {
    /// The first version (channel-wise) only; the second passes.
    First,
    /// The second version (pixel-wise) only; the first passes.
    Second,
    /// Both.
    Both,
}

/// How the versions disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disagreement {
    /// Both produced an output and the outputs differ (from each other, and at least one
    /// from the oracle's).
    Values,
    /// Both produced the same output, and it is not the oracle's: a shared stage (or the
    /// oracle) is the suspect.
    SameWrongValues,
    /// At least one version produced no output (fault, deadlock, compile error, timeout, a
    /// refuted decline): they disagree only in a fault, not in values.
    FaultOnly,
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Disagreement::Values => "outputs differ",
            Disagreement::SameWrongValues => "same wrong output",
            Disagreement::FaultOnly => "only in a fault",
        })
    }
}

/// What an N-version check found (present on a [`CaseResult`] only when it is a finding of
/// an N-version check).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attribution {
    /// The two versions' names (`channel`, `pixel`).
    pub names: [&'static str; 2],
    /// Each version's outcome, one line.
    pub summaries: [String; 2],
    pub wrong: Wrong,
    pub how: Disagreement,
    /// The version whose result (bundle, outcome) the combined result carries: 0 or 1.
    pub shown: usize,
}

impl Attribution {
    /// `channel`, `pixel` or `both`: the name of the wrong version(s).
    pub fn wrong_name(&self) -> &'static str {
        match self.wrong {
            Wrong::First => self.names[0],
            Wrong::Second => self.names[1],
            Wrong::Both => "both",
        }
    }

    /// The signature prefix: `pixel only`, `channel only`, `both`.
    fn prefix(&self) -> String {
        match self.wrong {
            Wrong::Both => "both".to_string(),
            _ => format!("{} only", self.wrong_name()),
        }
    }
}

/// `sig` with the attribution of `result` (when it has one) in front of its detail:
/// `mismatch: pixel only: channels all, ...`.
pub fn attributed(mut sig: Signature, result: &CaseResult) -> Signature {
    if let Some(a) = &result.attribution {
        sig.detail = if sig.detail.is_empty() {
            a.prefix()
        } else {
            format!("{}: {}", a.prefix(), sig.detail)
        };
    }
    sig
}

/// Combines the results of the two versions of one case (`a` of the first compiler, `b` of
/// the second; the same oracle). Neither a finding: `a` (its pass, decline or limit), without
/// attribution. Otherwise the wrong version's result, with its [`Attribution`].
pub fn combine(names: [&'static str; 2], a: CaseResult, b: CaseResult) -> CaseResult {
    let (fa, fb) = (a.outcome.is_finding(), b.outcome.is_finding());
    let wrong = match (fa, fb) {
        (false, false) => return a,
        (true, false) => Wrong::First,
        (false, true) => Wrong::Second,
        (true, true) => Wrong::Both,
    };
    let how = match (&a.machine_output, &b.machine_output) {
        (Some(x), Some(y)) if x == y => Disagreement::SameWrongValues,
        (Some(_), Some(_)) => Disagreement::Values,
        _ => Disagreement::FaultOnly,
    };
    let summaries = [a.outcome.summary(), b.outcome.summary()];
    let (shown, mut result) = if wrong == Wrong::Second {
        (1, b)
    } else {
        (0, a)
    };
    result.attribution = Some(Attribution {
        names,
        summaries,
        wrong,
        how,
        shown,
    });
    result
}

/// The Markdown section a report shows for an N-version finding.
pub fn report_section(a: &Attribution) -> String {
    let mut s = String::from("## Lowerings (N-version check)\n\n");
    for (name, summary) in a.names.iter().zip(&a.summaries) {
        s.push_str(&format!("- {name}: {summary}\n"));
    }
    s.push_str(&format!(
        "\nWrong: **{}** (they disagree: {}). The program below is the {} lowering's.\n\n",
        a.wrong_name(),
        a.how,
        a.names[a.shown]
    ));
    s
}
