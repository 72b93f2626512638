//! Set-up mistakes: failures of an external compiler that say it could not start or does not
//! speak the protocol it was run with, rather than that it miscompiled a case.
//!
//! A hunt checks its first cases for them before it starts ([`diagnose`] on each, up to
//! [`PROBE_CASES`]): when every one fails the same way, the hunt stops with a set-up error
//! naming the fix (exit 2) and writes no finding; as soon as one case compiles, declines or
//! fails otherwise, the compiler works and every later failure is a finding. `repro` and
//! `replay` refuse a finding whose compiler cannot be started the same way, instead of filing
//! the failure as the finding's outcome.
//!
//! What counts (`docs/guide/your-compiler.md` lists the messages):
//!
//! | mistake | how it shows |
//! |---|---|
//! | command not found | `sh` exits 127 (process per case, or a server that never answers) |
//! | not executable | `sh` exits 126 |
//! | a missing script or module | the compiler exits nonzero with `can't open file`, `No such file or directory`, `No module named`, … on standard error |
//! | a server run once per case | exit 0 with nothing written into the bundle directory |
//! | a one-shot compiler run as a server | the server ends before answering its first request |
//! | a banner, a log line or garbage on a server's standard output | its first answer is not a protocol answer |

use super::outcome::Outcome;

/// How many of a hunt's first cases are checked for a set-up mistake before it starts.
pub const PROBE_CASES: u64 = 3;

/// The kinds of set-up mistake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mistake {
    NotFound,
    NotExecutable,
    MissingFile,
    EmptyBundle,
    ServerEnded,
    NotProtocol,
}

/// A set-up mistake: which, what was seen, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    pub mistake: Mistake,
    /// What happened, with the compiler's own words.
    pub what: String,
    /// What to do about it.
    pub fix: String,
}

/// Standard error that says a program or file the command needs is missing.
const MISSING: &[&str] = &[
    "can't open file",
    "No such file or directory",
    "No module named",
    "ModuleNotFoundError",
    "ImportError",
    "command not found",
    ": not found",
    "cannot execute",
    "Permission denied",
];

/// The set-up mistake `outcome` shows, if any (see the module docs).
pub fn diagnose(outcome: &Outcome) -> Option<Setup> {
    let (message, served) = match outcome {
        Outcome::CompileError { message } => (message.as_str(), false),
        Outcome::Crash { message, .. } if message.starts_with("the compile server died") => {
            (message.as_str(), true)
        }
        _ => return None,
    };
    let said = message.trim_end();
    let setup = |mistake, fix: &str| {
        Some(Setup {
            mistake,
            what: said.to_string(),
            fix: fix.to_string(),
        })
    };
    if said.contains("(exit status 127)") {
        return setup(
            Mistake::NotFound,
            "`sh` could not find the command: check the program name in --compiler-cmd, name \
             it by a path, or put it on PATH (run the command by hand in this directory to see)",
        );
    }
    if said.contains("(exit status 126)") {
        return setup(
            Mistake::NotExecutable,
            "the program is not executable: `chmod +x` it, or run it through its interpreter \
             (`python3 mycc.py ...`)",
        );
    }
    if said.contains("wrote nothing into the bundle directory: is it a server?") {
        return setup(
            Mistake::EmptyBundle,
            "this command wrote nothing into the bundle; is it a server? use \
             --compiler-protocol serve",
        );
    }
    if said.contains("the compile server broke the protocol: the answer is not a JSON answer") {
        return setup(
            Mistake::NotProtocol,
            "a server writes exactly one JSON answer line per request on standard output and \
             nothing else: print banners and logs to standard error (python/pimdiff_serve.py \
             sends `print` to standard error while a case compiles; a banner printed at start-up \
             must go to sys.stderr)",
        );
    }
    let failed = said.starts_with("the external compiler failed") || served;
    if failed && MISSING.iter().any(|m| said.contains(m)) {
        return setup(
            Mistake::MissingFile,
            "the command cannot find a file or module it needs: check the paths in \
             --compiler-cmd (they are relative to the directory pimdiff runs in) and that its \
             interpreter has the packages it imports",
        );
    }
    if served {
        return setup(
            Mistake::ServerEnded,
            "the compile server ended before answering its first request: run the command by \
             hand and send it one request line (docs/serve-protocol.md); a compiler that takes \
             {case} {out} and exits is run without --compiler-protocol serve",
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(message: &str) -> Outcome {
        Outcome::CompileError {
            message: message.to_string(),
        }
    }

    #[test]
    fn start_up_failures_are_told_apart_from_compile_errors() {
        let kind = |o: &Outcome| diagnose(o).map(|s| s.mistake);
        assert_eq!(
            kind(&error(
                "the external compiler failed (exit status 127): sh: 1: mycc: not found"
            )),
            Some(Mistake::NotFound)
        );
        assert_eq!(
            kind(&error(
                "the external compiler failed (exit status 126): sh: 1: ./cc: Permission denied"
            )),
            Some(Mistake::NotExecutable)
        );
        assert_eq!(
            kind(&error("the external compiler failed (exit status 2): python3: can't open file '/x/cc.py': [Errno 2] No such file or directory")),
            Some(Mistake::MissingFile)
        );
        assert_eq!(
            kind(&error("the compile server broke the protocol: the answer is not a JSON answer: expected value at line 1 column 1; the line: \"mycc 1.0 ready\"")),
            Some(Mistake::NotProtocol)
        );
        let died = Outcome::Crash {
            stage: "compile".into(),
            message: "the compile server died (exit status 2): usage: cc CASE OUT".into(),
            location: None,
        };
        assert_eq!(kind(&died), Some(Mistake::ServerEnded));
        // A compiler that runs and fails on the case is a finding, not a set-up mistake.
        assert_eq!(
            kind(&error(
                "the external compiler failed (exit status 1): IndexError: list index out of range"
            )),
            None
        );
        assert_eq!(kind(&Outcome::Pass), None);
    }
}
