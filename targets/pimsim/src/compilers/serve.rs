//! The persistent external-compiler protocol (`--compiler-protocol serve`): the command is
//! started once and compiles case after case, one request line in, one answer line out, so a
//! hunt pays for a process start (and a Python start, and module imports) once per worker
//! rather than once per case — what AFL's persistent mode saves over exec-per-input.
//!
//! The contract, exactly (`docs/serve-protocol.md` has it with a complete example):
//!
//! * The command line is run by `sh -c` as given (no `{case}`/`{out}` placeholders in this
//!   mode) through [`crate::process`]: its own process group, the harness's working directory,
//!   standard input and output piped. One server per worker thread at a time: a worker takes
//!   an idle server of the same command from a pool (the one it used last when it is there),
//!   or starts one.
//! * A request is one line of JSON: `{"protocol":1,"id":N,"case":DIR,"out":DIR}`. `case` is a
//!   case directory as the process-per-case protocol writes it (no `expected.npy`), `out` an
//!   empty directory for the bundle. A server's requests name the same two directories each
//!   time, emptied in between. The server answers with one line of JSON echoing `id`:
//!   `{"id":N,"status":"compiled"}` (the bundle is in `out`),
//!   `{"id":N,"status":"unsupported","reason":"…"}` (a decline, with the same reason rules as
//!   exit status 3), or `{"id":N,"status":"error","message":"…"}` (a `compile-error`).
//! * Each request has the `--compiler-timeout` deadline. A server still busy at it is killed
//!   with its group: the case is a `timeout` finding of the compile stage, as a process-per-
//!   case compiler killed at its deadline is. A server that ends before answering (a signal,
//!   an exit, its memory limit) makes the case a `crash` finding with the status and the tail of
//!   what it wrote to standard error during the request. An answer that is not such a line (not
//!   JSON, another `id`, an unknown status, longer than [`ANSWER_LINE_LIMIT`]) is a
//!   `compile-error` naming the protocol error and showing the line. After any of these the
//!   server is killed and the next case gets a new one; a server found dead between requests
//!   is replaced without blaming a case.
//!
//! Requests are independent (each finds just its case and an empty bundle directory), so the
//! outcome of a case does not depend on which server, worker or earlier case it met: a serve
//! hunt finds what a process-per-case hunt of the same compiler finds for the same seed, for
//! any `--jobs`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use pimdiff_isa::bundle::Bundle;
use pimdiff_oracle::Case;
use serde::{Deserialize, Serialize};

use super::{Claim, CompileFailure};
use pimdiff_engine::process::{Answer, Invocation, Limits, Scratch, Server, Status};

/// The version of the protocol a request speaks (its `protocol` field).
pub const PROTOCOL_VERSION: u32 = 1;

/// The longest answer line read, in bytes: a longer line is a protocol error, not memory the
/// harness holds.
pub const ANSWER_LINE_LIMIT: usize = 64 << 10;

/// The resident memory a server's group may use while it compiles: a server that leaks grows
/// with every case, which a process-per-case compiler never does.
pub const SERVER_RSS_LIMIT: u64 = 4 << 30;

/// How much of a bad answer line a finding shows.
const SHOWN_BYTES: usize = 300;

/// How many bytes of standard error a crash keeps (its tail).
const STDERR_TAIL_BYTES: usize = 2000;

/// Idle servers (with their directories), each with the command and request deadline it was
/// started for.
static IDLE: Mutex<Vec<(String, Duration, Slot)>> = Mutex::new(Vec::new());

/// Request ids, unique in this process (an answer must echo its request's).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One request line (what a server reads).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// [`PROTOCOL_VERSION`]: a server that speaks another version refuses the request.
    pub protocol: u32,
    /// Echoed by the answer.
    pub id: u64,
    /// The case directory (`case.json`, `input.npy`, … without `expected.npy`).
    pub case: PathBuf,
    /// An empty directory for the bundle.
    pub out: PathBuf,
}

/// One answer line, as read (checked by [`parse_answer`]).
#[derive(Deserialize)]
struct Reply {
    id: u64,
    status: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// What a well-formed answer says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Said {
    /// The bundle is in the request's `out`.
    Compiled,
    /// The compiler declines the case, for this reason.
    Unsupported(String),
    /// The compiler failed on the case (a `compile-error`), with this message.
    Error(String),
}

impl Said {
    /// The answer line (without its newline) to request `id`.
    pub fn to_line(&self, id: u64) -> String {
        let value = match self {
            Said::Compiled => serde_json::json!({ "id": id, "status": "compiled" }),
            Said::Unsupported(reason) => {
                serde_json::json!({ "id": id, "status": "unsupported", "reason": reason })
            }
            Said::Error(message) => {
                serde_json::json!({ "id": id, "status": "error", "message": message })
            }
        };
        value.to_string()
    }
}

/// Whether `command` names a placeholder, which this protocol does not take (the directories
/// travel in the requests).
pub fn has_placeholder(command: &str) -> bool {
    command.contains("{case}") || command.contains("{out}")
}

/// Compiles `case` with a server of `command` (see the module docs); failures are outcomes.
pub fn compile_served(
    case: &Case,
    command: &str,
    timeout: Duration,
) -> Result<Bundle, CompileFailure> {
    if has_placeholder(command) {
        return Err(poisoned(format!(
            "the serve protocol takes no {{case}}/{{out}} placeholders: `{command}`"
        )));
    }
    let mut slot = match checkout(command, timeout) {
        Some(slot) => slot,
        None => start(command, timeout)?,
    };
    let scratch = &slot.scratch;
    super::write_scratch_case(case, scratch.case())
        .map_err(|e| poisoned(format!("cannot write the case for the compile server: {e}")))?;
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let request = serde_json::to_vec(&Request {
        protocol: PROTOCOL_VERSION,
        id,
        case: scratch.case().to_path_buf(),
        out: scratch.out().to_path_buf(),
    })
    .map_err(|e| poisoned(format!("cannot write a request: {e}")))?;
    let answer = slot.server.request(&request).map_err(|e| {
        poisoned(format!(
            "cannot talk to the compile server `{command}`: {e}"
        ))
    })?;
    let said = match answer {
        Answer::Line { line, .. } => match parse_answer(&line, id) {
            Ok(said) => said,
            Err(problem) => return Err(protocol_error(&problem, &line)),
        },
        Answer::TooLong { start, .. } => {
            let problem = format!("an answer line longer than {ANSWER_LINE_LIMIT} bytes");
            return Err(protocol_error(&problem, &start));
        }
        Answer::Ended { status, stderr } => return Err(ended(status, &stderr.bytes, timeout)),
    };
    let out_dir = slot.scratch.out();
    let result = match said {
        Said::Compiled => super::external::read_bundle(case, out_dir, ("the compile server", true)),
        Said::Unsupported(reason) => {
            let claim = Claim::from_reason(&reason);
            Err(CompileFailure::Unsupported { reason, claim })
        }
        Said::Error(message) => Err(CompileFailure::Failed {
            message: format!("the compile server reported an error: {message}"),
        }),
    };
    // A server goes back to the pool with its directories empty again; one whose directories
    // cannot be emptied is dropped (killed, and its directories removed with it).
    if slot.scratch.empty().is_ok() {
        checkin(command, timeout, slot);
    }
    result
}

/// Kills every idle server (a hunt's end; the ones in use end with their workers).
pub fn shutdown() {
    let idle = std::mem::take(&mut *lock_idle());
    drop(idle);
}

fn lock_idle() -> std::sync::MutexGuard<'static, Vec<(String, Duration, Slot)>> {
    IDLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// An idle live server of `command`, if any, preferring the one this thread used last. Dead
/// ones found on the way are dropped (reaped), and so are ones whose directories were replaced
/// since their last request (see [`Scratch`]).
fn checkout(command: &str, timeout: Duration) -> Option<Slot> {
    let me = std::thread::current().id();
    let mut idle = lock_idle();
    loop {
        let fits = |(c, t, _): &(String, Duration, Slot)| c == command && *t == timeout;
        let i = idle
            .iter()
            .position(|e| fits(e) && e.2.last_user == me)
            .or_else(|| idle.iter().position(fits))?;
        let (_, _, mut slot) = idle.swap_remove(i);
        if slot.server.alive() && slot.scratch.intact() {
            slot.last_user = me;
            return Some(slot);
        }
    }
}

fn checkin(command: &str, timeout: Duration, slot: Slot) {
    lock_idle().push((command.to_string(), timeout, slot));
}

fn start(command: &str, timeout: Duration) -> Result<Slot, CompileFailure> {
    let scratch = Scratch::new(&super::scratch_dir(), "bundle").map_err(|e| {
        poisoned(format!(
            "cannot create the directories for the compile server: {e}"
        ))
    })?;
    let server = Invocation::new("sh", "pimdiff-server-")
        .map_err(|e| poisoned(e.to_string()))?
        .args(["-c", command])
        .in_harness_dir()
        .limits(Limits {
            rss_bytes: Some(SERVER_RSS_LIMIT),
            output_bytes: STDERR_TAIL_BYTES,
            ..Limits::cpu_time(timeout)
        })
        .serve(ANSWER_LINE_LIMIT)
        .map_err(|e| {
            poisoned(format!(
                "cannot start the compile server `sh -c {command}`: {e}"
            ))
        })?;
    Ok(Slot {
        server,
        scratch,
        last_user: std::thread::current().id(),
    })
}

/// A server, the two directories its requests name, and the worker thread that used it last.
/// A worker gets its own server back when it can: each server then answers one worker and the
/// scheduler keeps the pair on one core. When workers traded servers, a woken process often
/// waited for a busy core while the other idled: 801 migrations against 10 in 8,000 cases,
/// 1.55 against 1.95 cores busy, a third of the rate (`docs/serve-protocol.md#measured`).
struct Slot {
    server: Server,
    scratch: Scratch,
    last_user: std::thread::ThreadId,
}

/// Reads one answer line for request `id`; a protocol error says what is wrong with it.
fn parse_answer(line: &[u8], id: u64) -> Result<Said, String> {
    let reply: Reply = serde_json::from_slice(line)
        .map_err(|e| format!("the answer is not a JSON answer: {e}"))?;
    if reply.id != id {
        return Err(format!(
            "the answer is for request {}, not for request {id}",
            reply.id
        ));
    }
    match (reply.status.as_str(), reply.reason, reply.message) {
        ("compiled", _, _) => Ok(Said::Compiled),
        ("unsupported", Some(reason), _) => Ok(Said::Unsupported(reason)),
        ("error", _, Some(message)) => Ok(Said::Error(message)),
        ("unsupported", None, _) => Err("an `unsupported` answer without a `reason`".into()),
        ("error", _, None) => Err("an `error` answer without a `message`".into()),
        (other, _, _) => Err(format!(
            "unknown status {other:?} (compiled, unsupported or error)"
        )),
    }
}

/// A protocol error as a `compile-error`, showing (the start of) the line.
fn protocol_error(problem: &str, line: &[u8]) -> CompileFailure {
    let shown = &line[..line.len().min(SHOWN_BYTES)];
    let more = if line.len() > SHOWN_BYTES { "…" } else { "" };
    CompileFailure::Failed {
        message: format!(
            "the compile server broke the protocol: {problem}; the line: {:?}{more}",
            String::from_utf8_lossy(shown)
        ),
    }
}

/// A server that ended before answering, as the case's outcome.
fn ended(status: Status, stderr: &[u8], timeout: Duration) -> CompileFailure {
    let text = String::from_utf8_lossy(stderr);
    let last = text.lines().rev().map(str::trim).find(|l| !l.is_empty());
    match status {
        Status::TimedOut { .. } => CompileFailure::TimedOut {
            limit: timeout,
            overrun: status.overrun(),
        },
        Status::Cancelled => poisoned("the compile server was cancelled".into()),
        status => {
            let mut message = format!("the compile server died ({status})");
            if let Some(last) = last {
                message.push_str(&format!(": {last}\n{}", text.trim_end()));
            }
            CompileFailure::Died { message }
        }
    }
}

fn poisoned(reason: String) -> CompileFailure {
    CompileFailure::Poisoned { reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_strictly() {
        assert_eq!(
            parse_answer(br#"{"id":7,"status":"compiled"}"#, 7),
            Ok(Said::Compiled)
        );
        assert_eq!(
            parse_answer(br#"{"id":7,"status":"unsupported","reason":"r"}"#, 7),
            Ok(Said::Unsupported("r".into()))
        );
        assert_eq!(
            parse_answer(br#"{"id":7,"status":"error","message":"m"}"#, 7),
            Ok(Said::Error("m".into()))
        );
        assert_eq!(
            parse_answer(br#"{"id":6,"status":"compiled"}"#, 7),
            Err("the answer is for request 6, not for request 7".into())
        );
        assert_eq!(
            parse_answer(br#"{"id":7,"status":"done"}"#, 7),
            Err("unknown status \"done\" (compiled, unsupported or error)".into())
        );
        assert_eq!(
            parse_answer(br#"{"id":7,"status":"unsupported"}"#, 7),
            Err("an `unsupported` answer without a `reason`".into())
        );
        assert_eq!(
            parse_answer(br#"{"id":7,"status":"error"}"#, 7),
            Err("an `error` answer without a `message`".into())
        );
        assert!(parse_answer(b"hello", 7)
            .unwrap_err()
            .starts_with("the answer is not a JSON answer: expected value"));
    }

    #[test]
    fn answer_lines_read_back() {
        for said in [
            Said::Compiled,
            Said::Unsupported("not enough crossbar arrays: 9 needed, 2 available".into()),
            Said::Error("line one\nline \"two\"".into()),
        ] {
            let line = said.to_line(42);
            assert!(!line.contains('\n'));
            assert_eq!(parse_answer(line.as_bytes(), 42), Ok(said));
        }
        assert_eq!(Said::Compiled.to_line(3), r#"{"id":3,"status":"compiled"}"#);
    }

    #[test]
    fn placeholders_are_recognized() {
        assert!(has_placeholder("mycc {case} {out}"));
        assert!(has_placeholder("mycc {out}"));
        assert!(!has_placeholder("pimdiff compile --serve"));
    }
}
