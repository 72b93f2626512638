//! An external compiler under test: any command that reads a case directory and writes a
//! bundle directory (`--compiler-cmd 'mycc {case} {out}'`).
//!
//! The contract, exactly:
//!
//! * The harness writes the case to a fresh temporary directory (in [`super::scratch_dir`],
//!   a RAM file system when there is one; `case-format.md`, with
//!   `expected.npy` left out so the compiler cannot copy the answer) and creates an empty
//!   bundle directory beside it.
//! * The command line is run by `sh -c`, after replacing every `{case}` with the case
//!   directory and every `{out}` with the bundle directory, each single-quoted for the shell
//!   (so paths with spaces or quotes are safe, and the rest of the line keeps shell syntax:
//!   pipes, `&&`, environment assignments). A command with neither placeholder gets
//!   `{case} {out}` appended as its last two arguments. It runs through [`crate::process`]: in
//!   its own process group, in the harness's working directory, with standard input closed.
//! * Exit status 0: the bundle directory must hold a bundle (`Bundle::read_dir`); a bundle that
//!   cannot be read is a `compile-error` naming the file at fault.
//! * Exit status [`UNSUPPORTED_EXIT_CODE`] (3): the compiler declines the case —
//!   `unsupported`, with the last non-empty line of its standard error (else standard output)
//!   as the reason. Not a finding by itself; a reason of the form `… N needed, M available`
//!   is a [`Claim`] the checker holds against the case.
//! * Any other exit status, or death by a signal: `compile-error`, with the tail of standard
//!   error.
//! * Still running after its time limit — `--compiler-timeout` of CPU time of its whole process
//!   group, or ten times that of wall time for a command that blocks without using CPU
//!   (`pimdiff_engine::process::Limits::cpu_time`) — the whole process group is killed and the
//!   outcome is a `timeout` finding recording both times (a hang of the compiler under test is a
//!   bug; a loaded machine is not one). Failing to create the
//!   temporary directories or to start `sh` is `poisoned` (a failure of the set-up, not a
//!   verdict).
//!
//! The temporary directories are removed afterwards, whatever happened.

use std::fs;
use std::path::Path;
use std::time::Duration;

use pimdiff_isa::bundle::Bundle;
use pimdiff_oracle::Case;

use super::{Claim, CompileFailure};
use pimdiff_engine::process::{Invocation, Limits, Status};

/// The exit status by which an external compiler declines a case.
pub const UNSUPPORTED_EXIT_CODE: i32 = 3;

/// How many bytes of standard error a compile error keeps (its tail).
const STDERR_TAIL_BYTES: usize = 2000;

/// Runs `command` on `case` and reads the bundle it writes; failures are outcomes.
pub fn compile_external(
    case: &Case,
    command: &str,
    timeout: Duration,
) -> Result<Bundle, CompileFailure> {
    let invocation = Invocation::new_in("sh", "pimdiff-ext-", &super::scratch_dir())
        .map_err(|e| poisoned(e.to_string()))?;
    let case_dir = invocation.dir().join("case");
    let out_dir = invocation.dir().join("bundle");
    for dir in [&case_dir, &out_dir] {
        fs::create_dir(dir).map_err(|e| {
            poisoned(format!(
                "cannot create the directory {}: {e}",
                dir.display()
            ))
        })?;
    }
    super::write_scratch_case(case, &case_dir).map_err(|e| {
        poisoned(format!(
            "cannot write the case for the external compiler: {e}"
        ))
    })?;
    let line = command_line(command, &case_dir, &out_dir);
    let run = invocation
        .args(["-c", &line])
        .in_harness_dir()
        .limits(Limits::cpu_time(timeout))
        .run()
        .map_err(|e| poisoned(format!("cannot run `sh -c {line}`: {e}")))?;
    let (stdout, stderr) = (&run.stdout.bytes, &run.stderr.bytes);
    match run.status {
        Status::TimedOut { .. } => Err(CompileFailure::TimedOut {
            limit: timeout,
            overrun: run.status.overrun(),
        }),
        Status::Exited { code: 0 } => read_bundle(case, &out_dir, ("the external compiler", false)),
        Status::Exited {
            code: UNSUPPORTED_EXIT_CODE,
        } => {
            let reason = last_line(stderr)
                .or_else(|| last_line(stdout))
                .unwrap_or_else(|| "(no reason given)".into());
            let claim = Claim::from_reason(&reason);
            Err(CompileFailure::Unsupported { reason, claim })
        }
        status => {
            let tail = tail(stderr);
            let message = if tail.trim().is_empty() {
                format!("the external compiler failed ({status})")
            } else {
                format!(
                    "the external compiler failed ({status}): {}",
                    tail.trim_end()
                )
            };
            Err(CompileFailure::Failed { message })
        }
    }
}

/// The bundle `who` wrote into `out_dir`, checked against the format and the case
/// (`check::bundle`); a malformed one is a compile error naming the file and field. A compiler
/// that wrote nothing at all is told what that usually means.
pub(super) fn read_bundle(
    case: &Case,
    out_dir: &Path,
    (who, served): (&str, bool),
) -> Result<Bundle, CompileFailure> {
    let empty = fs::read_dir(out_dir).is_ok_and(|mut d| d.next().is_none());
    if empty {
        let message = if served {
            format!(
                "{who} answered `compiled` but wrote nothing into the bundle directory (the \
                 request's `out`)"
            )
        } else {
            format!("{who} wrote nothing into the bundle directory: {EMPTY_BUNDLE_HINT}")
        };
        return Err(CompileFailure::Failed { message });
    }
    crate::check::bundle::read_bundle(out_dir, Some(case)).map_err(|m| CompileFailure::Failed {
        message: format!("{}: {who} wrote {m}", crate::check::bundle::MALFORMED),
    })
}

/// What a compiler that exits 0 without writing a bundle usually is.
pub const EMPTY_BUNDLE_HINT: &str = "is it a server? use --compiler-protocol serve (a \
     process-per-case compiler must write config.json, core_<i>.json, xbars/ and io.json into \
     {out} before it exits 0)";

fn poisoned(reason: String) -> CompileFailure {
    CompileFailure::Poisoned { reason }
}

/// The command with `{case}` and `{out}` replaced by single-quoted paths (appended when the
/// command names neither).
pub fn command_line(command: &str, case_dir: &Path, out_dir: &Path) -> String {
    let case = shell_quote(&case_dir.to_string_lossy());
    let out = shell_quote(&out_dir.to_string_lossy());
    if command.contains("{case}") || command.contains("{out}") {
        command.replace("{case}", &case).replace("{out}", &out)
    } else {
        format!("{command} {case} {out}")
    }
}

/// `'text'` with every `'` written as `'\''`: one shell word, taken literally.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn tail(bytes: &[u8]) -> String {
    let start = bytes.len().saturating_sub(STDERR_TAIL_BYTES);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

fn last_line(bytes: &[u8]) -> Option<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}
