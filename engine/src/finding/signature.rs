//! What identifies a failure across cases: its [`Signature`].
//!
//! The same bug met on different cases must get the same signature, or a hunt reports it many
//! times; two bugs must get different ones, or one hides the other. So a signature is the
//! outcome [`Kind`] plus an abstract detail that each target chooses: the faulting opcode and
//! fault kind, the shape class of a wrong output, the localized cause, the top frames of a
//! crash inside the compiler. Hunts deduplicate findings by signature, minimization keeps it,
//! `pimdiff merge` joins shards by it. Messages enter a detail only through
//! [`abstract_message`], which removes what differs between runs (numbers, paths).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::kind::Kind;

/// What identifies a failure across cases (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Signature {
    /// The outcome kind.
    pub kind: Kind,
    /// The abstract detail: e.g. `"ld: LmemRange"`, `"channels all, pixels border only, batch
    /// all"`, `"batch/SIGSEGV/f<g<h"`. Empty when the kind says everything.
    pub detail: String,
}

impl Signature {
    /// A signature of `kind` with `detail`.
    pub fn new(kind: Kind, detail: impl Into<String>) -> Signature {
        Signature {
            kind,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Signature {
    /// `kind: detail`, or `kind` alone.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.detail.is_empty() {
            f.write_str(self.kind.as_str())
        } else {
            write!(f, "{}: {}", self.kind, self.detail)
        }
    }
}

/// A signature's display form that does not parse back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a signature (`KIND` or `KIND: DETAIL` with a known outcome kind)")]
pub struct BadSignature {
    pub text: String,
}

impl std::str::FromStr for Signature {
    type Err = BadSignature;

    /// Parses the display form back (`kind` or `kind: detail`).
    fn from_str(s: &str) -> Result<Signature, BadSignature> {
        let bad = || BadSignature {
            text: s.to_string(),
        };
        let (kind, detail) = match s.split_once(": ") {
            Some((k, d)) => (k, d),
            None => (s, ""),
        };
        let kind = Kind::from_word(kind).ok_or_else(bad)?;
        Ok(Signature::new(kind, detail))
    }
}

/// A message made case-independent: its first line, paths reduced to their file name, every
/// run of digits replaced by `N`, at most 100 characters.
pub fn abstract_message(message: &str) -> String {
    let line = message.lines().next().unwrap_or("");
    let mut words = Vec::new();
    for word in line.split_whitespace() {
        // A path: keep the last component (a temporary directory differs per run).
        let word = if word.contains('/') {
            word.rsplit('/').next().unwrap_or(word)
        } else {
            word
        };
        words.push(word);
    }
    let joined = words.join(" ");
    let mut out = String::new();
    let mut in_digits = false;
    for ch in joined.chars() {
        if ch.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(ch);
        }
    }
    out.chars().take(100).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_parse_are_inverse() {
        for s in [
            Signature::new(Kind::Mismatch, "channels all, pixels -, batch all"),
            Signature::new(Kind::Timeout, ""),
            Signature::new(Kind::Crash, "batch/SIGSEGV/f<g"),
        ] {
            assert_eq!(s.to_string().parse::<Signature>(), Ok(s));
        }
        assert_eq!(
            "mismatch: x".parse::<Signature>().unwrap().to_string(),
            "mismatch: x"
        );
        assert!("oops: x".parse::<Signature>().is_err());
    }

    #[test]
    fn messages_lose_numbers_and_paths() {
        assert_eq!(
            abstract_message("/tmp/x12/a.json: 3 of 40 wrong\nsecond line"),
            "a.json: N of N wrong"
        );
    }

    #[test]
    fn serde_form_is_kind_word_and_detail() {
        let s = Signature::new(Kind::UninitializedRead, "mvmul: lmem");
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"kind":"uninitialized-read","detail":"mvmul: lmem"}"#
        );
    }
}
