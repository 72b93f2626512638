//! What a saved case must do today (`expect` in `finding.json` / `expect.json`).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Kind;

/// Every outcome kind's word, for messages.
fn kind_words() -> String {
    let words: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
    words.join(", ")
}

/// What a case must do today. Written as a string in `finding.json` / `expect.json`:
///
/// | string | meaning |
/// |---|---|
/// | `pass` | compiles, runs and agrees with the oracle (e.g. a fixed bug) |
/// | `unsupported` | the compiler declines the case, any reason |
/// | `unsupported: TEXT` | declines it with a reason containing TEXT (a documented limit) |
/// | `mismatch`, `fault`, `deadlock`, `compile-error`, `timeout`, … (any [`Kind`]) | an outcome of that kind |
/// | `finding` | any finding |
/// | `signature: SIG` | a finding whose signature prints exactly as SIG (a bug still present) |
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expectation {
    Pass,
    Unsupported(Option<String>),
    Kind(Kind),
    AnyFinding,
    Signature(String),
}

/// Why an `expect` string does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExpectationParseError {
    #[error("empty expectation")]
    Empty,
    #[error("unknown expectation {0:?} (known: pass, unsupported[: TEXT], finding, signature: SIG, or an outcome kind: {kinds})", kinds = kind_words())]
    Unknown(String),
    #[error("`signature:` needs a signature after the colon")]
    EmptySignature,
}

/// What happened to one case, as far as an [`Expectation`] cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// The outcome kind.
    pub kind: Kind,
    /// Whether the outcome is a finding.
    pub finding: bool,
    /// The signature's display form, for a finding.
    pub signature: Option<String>,
    /// The compiler's reason, for `unsupported`.
    pub unsupported_reason: Option<String>,
}

impl Expectation {
    /// Parses the string form (see the table on [`Expectation`]).
    pub fn parse(s: &str) -> Result<Expectation, ExpectationParseError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(ExpectationParseError::Empty);
        }
        let (head, rest) = match s.split_once(':') {
            Some((h, r)) => (h.trim(), Some(r.trim())),
            None => (s, None),
        };
        match (head, rest) {
            ("pass", None) => Ok(Expectation::Pass),
            ("finding", None) => Ok(Expectation::AnyFinding),
            ("unsupported", None) => Ok(Expectation::Unsupported(None)),
            ("unsupported", Some("")) => Ok(Expectation::Unsupported(None)),
            ("unsupported", Some(text)) => Ok(Expectation::Unsupported(Some(text.to_string()))),
            ("signature", Some("")) => Err(ExpectationParseError::EmptySignature),
            ("signature", Some(sig)) => Ok(Expectation::Signature(sig.to_string())),
            (word, None) => match Kind::from_word(word) {
                Some(kind) => Ok(Expectation::Kind(kind)),
                None => Err(ExpectationParseError::Unknown(s.to_string())),
            },
            _ => Err(ExpectationParseError::Unknown(s.to_string())),
        }
    }

    /// Whether `observed` meets the expectation.
    pub fn is_met_by(&self, observed: &Observed) -> bool {
        match self {
            Expectation::Pass => observed.kind == Kind::Pass,
            Expectation::Unsupported(text) => {
                observed.kind == Kind::Unsupported
                    && text.as_ref().is_none_or(|t| {
                        observed
                            .unsupported_reason
                            .as_deref()
                            .is_some_and(|r| r.contains(t.as_str()))
                    })
            }
            Expectation::Kind(kind) => observed.kind == *kind,
            Expectation::AnyFinding => observed.finding,
            Expectation::Signature(sig) => observed.signature.as_deref() == Some(sig.as_str()),
        }
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expectation::Pass => f.write_str("pass"),
            Expectation::Unsupported(None) => f.write_str("unsupported"),
            Expectation::Unsupported(Some(t)) => write!(f, "unsupported: {t}"),
            Expectation::Kind(k) => f.write_str(k.as_str()),
            Expectation::AnyFinding => f.write_str("finding"),
            Expectation::Signature(s) => write!(f, "signature: {s}"),
        }
    }
}

impl Serialize for Expectation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Expectation {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Expectation::parse(&s).map_err(serde::de::Error::custom)
    }
}
