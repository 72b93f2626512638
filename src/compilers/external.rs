//! An external compiler under test: any command that reads a case directory and writes a
//! bundle directory (`--compiler-cmd 'mycc {case} {out}'`).
//!
//! The contract, exactly:
//!
//! * The harness writes the case to a fresh temporary directory (`case-format.md`, with
//!   `expected.npy` left out so the compiler cannot copy the answer) and creates an empty
//!   bundle directory beside it.
//! * The command line is run by `sh -c`, after replacing every `{case}` with the case
//!   directory and every `{out}` with the bundle directory, each single-quoted for the shell
//!   (so paths with spaces or quotes are safe, and the rest of the line keeps shell syntax:
//!   pipes, `&&`, environment assignments). A command with neither placeholder gets
//!   `{case} {out}` appended as its last two arguments. It runs in its own process group, in
//!   the harness's working directory, with standard input closed.
//! * Exit status 0: the bundle directory must hold a bundle (`Bundle::read_dir`); a bundle that
//!   cannot be read is a `compile-error` naming the file at fault.
//! * Exit status [`UNSUPPORTED_EXIT_CODE`] (3): the compiler declines the case —
//!   `unsupported`, with the last non-empty line of its standard error (else standard output)
//!   as the reason. Not a finding by itself; a reason of the form `… N needed, M available`
//!   is a [`Claim`] the checker holds against the case.
//! * Any other exit status, or death by a signal: `compile-error`, with the tail of standard
//!   error.
//! * Still running after the timeout: the whole process group is killed and the outcome is a
//!   `timeout` finding (a hang of the compiler under test is a bug). Failing to create the
//!   temporary directories or to start `sh` is `poisoned` (a failure of the set-up, not a
//!   verdict).
//!
//! The temporary directories are removed afterwards, whatever happened.

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pimdiff_isa::bundle::Bundle;
use pimdiff_oracle::Case;

use super::{Claim, CompileFailure};

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
    let work = TempDir::new()
        .map_err(|e| poisoned(format!("cannot create a temporary directory: {e}")))?;
    let case_dir = work.path.join("case");
    let out_dir = work.path.join("bundle");
    let mut case = case.clone();
    case.expected = None;
    pimdiff_oracle::io::write_case(&case, &case_dir).map_err(|e| {
        poisoned(format!(
            "cannot write the case for the external compiler: {e}"
        ))
    })?;
    fs::create_dir(&out_dir).map_err(|e| {
        poisoned(format!(
            "cannot create the bundle directory {}: {e}",
            out_dir.display()
        ))
    })?;
    let line = command_line(command, &case_dir, &out_dir);
    let run = run_with_timeout(&line, timeout)
        .map_err(|e| poisoned(format!("cannot run `sh -c {line}`: {e}")))?;
    match run {
        Finished::TimedOut => Err(CompileFailure::TimedOut { limit: timeout }),
        Finished::Exited { code: Some(0), .. } => {
            Bundle::read_dir(&out_dir).map_err(|e| CompileFailure::Failed {
                message: format!(
                    "the external compiler wrote a broken bundle: {}",
                    strip_dir(&e.to_string(), &out_dir)
                ),
            })
        }
        Finished::Exited {
            code: Some(UNSUPPORTED_EXIT_CODE),
            stdout,
            stderr,
        } => {
            let reason = last_line(&stderr)
                .or_else(|| last_line(&stdout))
                .unwrap_or_else(|| "(no reason given)".into());
            let claim = Claim::from_reason(&reason);
            Err(CompileFailure::Unsupported { reason, claim })
        }
        Finished::Exited { code, stderr, .. } => {
            let status = match code {
                Some(c) => format!("exit status {c}"),
                None => "killed by a signal".into(),
            };
            let tail = tail(&stderr);
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

fn poisoned(reason: String) -> CompileFailure {
    CompileFailure::Poisoned { reason }
}

/// Shows paths inside the bundle directory relative to it (`bundle/io.json`), so that messages
/// (and signatures) do not depend on the temporary directory's name.
fn strip_dir(message: &str, out_dir: &Path) -> String {
    let prefix = format!("{}/", out_dir.display());
    message.replace(&prefix, "bundle/")
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

enum Finished {
    Exited {
        code: Option<i32>,
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    },
    TimedOut,
}

/// The process groups of the external commands running now, so that a hunt that ends early
/// can kill them ([`kill_running_commands`]): they run in their own groups, which the end of
/// the harness's process does not take with it.
static RUNNING: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// Kills every external command still running (each one's whole process group). A hunt calls
/// this when it ends with cases still in flight; their checks then report a failed compiler,
/// which nobody reads any more.
pub fn kill_running_commands() {
    let groups: Vec<u32> = match RUNNING.lock() {
        Ok(g) => g.iter().copied().collect(),
        Err(poisoned) => poisoned.into_inner().iter().copied().collect(),
    };
    for pgid in groups {
        kill_group(pgid);
    }
}

/// Registers (or unregisters) a running process group for [`kill_running_commands`].
pub(crate) fn set_running(pgid: u32, running: bool) {
    let mut set = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
    if running {
        set.insert(pgid);
    } else {
        set.remove(&pgid);
    }
}

fn run_with_timeout(line: &str, timeout: Duration) -> std::io::Result<Finished> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(line)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    set_running(child.id(), true);
    let result = wait_with_timeout(&mut child, timeout);
    set_running(child.id(), false);
    result
}

fn wait_with_timeout(
    child: &mut std::process::Child,
    timeout: Duration,
) -> std::io::Result<Finished> {
    // Drain both pipes on threads so that a chatty compiler never blocks on a full pipe.
    let mut out_pipe = child.stdout.take();
    let mut err_pipe = child.stderr.take();
    let out_reader = std::thread::spawn(move || read_capped(out_pipe.as_mut()));
    let err_reader = std::thread::spawn(move || read_capped(err_pipe.as_mut()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() >= timeout {
            break None;
        }
        std::thread::sleep(Duration::from_millis(2).min(timeout / 10 + Duration::from_micros(100)));
    };
    let Some(status) = status else {
        kill_group(child.id());
        let _ = child.kill();
        let _ = child.wait();
        return Ok(Finished::TimedOut);
    };
    // The shell is gone; anything it left running in its group goes too, so the pipes close.
    kill_group(child.id());
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Ok(Finished::Exited {
        code: status.code(),
        stdout,
        stderr,
    })
}

/// Kills the process group `pgid` (the command was started as its leader).
pub(crate) fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Reads a pipe to its end, keeping at most the last 64 KiB.
fn read_capped<R: Read>(pipe: Option<&mut R>) -> Vec<u8> {
    const CAP: usize = 1 << 16;
    let Some(pipe) = pipe else { return Vec::new() };
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > 2 * CAP {
                    kept.drain(..kept.len() - CAP);
                }
            }
        }
    }
    if kept.len() > CAP {
        kept.drain(..kept.len() - CAP);
    }
    kept
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

/// A temporary directory removed on drop (`$TMPDIR/pimdiff-ext-<pid>-<n>`).
struct TempDir {
    path: PathBuf,
}

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("pimdiff-ext-{}-{n}", std::process::id()));
            match fs::create_dir(&path) {
                Ok(()) => return Ok(TempDir { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}
