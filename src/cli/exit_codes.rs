//! The exit-code contract of every `pimdiff` command, defined once.
//!
//! A script that runs pimdiff (CI, a nightly job, a bisection) must be able to tell "nothing
//! wrong" from "something wrong" from "I used it wrong" from "it could not tell" without reading
//! the output, and the answer must not depend on which command it ran. So every command maps its
//! result onto the same five codes, and every command's `--help` lists the codes it can return
//! in its own words ([`help`]), with one example. `tests/exit_codes.rs` runs every command in
//! every situation that applies and checks the code and that its `--help` names it.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | ran and found nothing: agreement, a clean hunt, a valid case |
//! | 1 | found something: a finding, mismatch, fault, deadlock, race, … |
//! | 2 | bad usage or bad input; the message names the flag, file or field |
//! | 3 | `compile` only: the compiler declines the case (the bundle protocol's "unsupported") |
//! | 4 | could not judge: the tool ran, but cannot give a verdict |
//!
//! Findings take precedence over "could not judge" when both occur. Anything else is not part
//! of the contract: 101 is a panic of pimdiff itself (a bug, please report it), 130 a hunt
//! stopped by a third Ctrl-C.

use std::process::ExitCode;

use crate::finding::Verdict;

/// Ran and found nothing: agreement, a clean hunt, a valid case.
pub const EXIT_OK: u8 = 0;
/// Found something: a finding, mismatch, fault, deadlock, race, ….
pub const EXIT_FINDING: u8 = 1;
/// Bad usage or bad input (a flag, an unreadable or invalid file); the message names it.
pub const EXIT_BAD_INPUT: u8 = 2;
/// `pimdiff compile` only: the compiler declines the case (the external-compiler protocol's
/// "unsupported", `crate::compilers::external::UNSUPPORTED_EXIT_CODE`).
pub const EXIT_UNSUPPORTED: u8 = 3;
/// Could not judge: the tool ran fine but cannot give a verdict (every case declined, more
/// declines than the generator explains, a case the compiler declines, a step budget spent).
pub const EXIT_NO_VERDICT: u8 = 4;

/// The contract itself, one line per code, as the top-level `--help` prints it.
pub const CONTRACT: &[(u8, &str)] = &[
    (
        EXIT_OK,
        "ran and found nothing: agreement, a clean hunt, a valid case",
    ),
    (
        EXIT_FINDING,
        "found something: a finding, mismatch, fault, deadlock, race, ...",
    ),
    (
        EXIT_BAD_INPUT,
        "bad usage or bad input; the message names the flag, file or field",
    ),
    (
        EXIT_UNSUPPORTED,
        "`compile` only: the compiler declines the case (the bundle protocol's \"unsupported\")",
    ),
    (
        EXIT_NO_VERDICT,
        "could not judge: the tool ran, but cannot give a verdict (findings take precedence)",
    ),
];

/// The line every command's help has for code 2.
pub const BAD_INPUT_LINE: (u8, &str) = (
    EXIT_BAD_INPUT,
    "bad usage or bad input; the message names the flag, file or field",
);

/// An exit code as the process returns it.
pub fn exit(code: u8) -> ExitCode {
    ExitCode::from(code)
}

/// The exit code of a verdict: [`EXIT_OK`], [`EXIT_FINDING`] or [`EXIT_NO_VERDICT`].
pub fn code_of(verdict: Verdict) -> u8 {
    match verdict {
        Verdict::Clean => EXIT_OK,
        Verdict::Findings => EXIT_FINDING,
        Verdict::NoVerdict => EXIT_NO_VERDICT,
    }
}

/// [`code_of`] as the process returns it.
pub fn exit_with(verdict: Verdict) -> ExitCode {
    exit(code_of(verdict))
}

/// The text after a command's options in its `--help`: its exit codes, each with what it
/// means for this command (code 2 is added when absent), and one example command line.
pub fn help(codes: &[(u8, &str)], example: &str) -> String {
    let mut lines: Vec<(u8, &str)> = codes.to_vec();
    if !lines.iter().any(|(c, _)| *c == EXIT_BAD_INPUT) {
        lines.push(BAD_INPUT_LINE);
    }
    lines.sort_by_key(|(c, _)| *c);
    let mut text = String::from("Exit codes:\n");
    for (code, meaning) in lines {
        text.push_str(&format!("  {code}  {meaning}\n"));
    }
    text.push_str("\nExample:\n  ");
    text.push_str(example);
    text
}

/// The top-level `--help`'s text after the command list: the whole contract and an example.
pub fn contract_help() -> String {
    let mut text = help(
        CONTRACT,
        "pimdiff hunt --cases 200 --out hunt-out   # then: pimdiff repro hunt-out/findings/001-*",
    );
    text.insert_str(
        "Exit codes".len(),
        " (every command; each command's --help says what they mean for it)",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_the_codes_in_order_with_code_2_and_the_example() {
        assert_eq!(
            help(&[(1, "a finding"), (0, "nothing found")], "pimdiff x y"),
            "Exit codes:\n  0  nothing found\n  1  a finding\n  2  bad usage or bad input; \
             the message names the flag, file or field\n\nExample:\n  pimdiff x y"
        );
    }

    #[test]
    fn the_contract_names_every_code_once() {
        let codes: Vec<u8> = CONTRACT.iter().map(|(c, _)| *c).collect();
        assert_eq!(codes, vec![0, 1, 2, 3, 4]);
        assert!(contract_help().starts_with("Exit codes (every command; "));
        assert_eq!(code_of(Verdict::NoVerdict), 4);
    }
}
