//! CIM-MLC compiles through its driver (`targets/cim-mlc/driver/driver.py` of a tree), kept
//! running as a server: one request per case in pimdiff's serve protocol (version 1), through
//! the engine's [`ServerPool`] (one server per worker, its own process group and directories, a
//! deadline and a memory limit per request, the whole group killed on either). Importing torch
//! takes a second; a warm request about 11 ms.
//!
//! Everything nondeterministic is pinned: a fixed environment (`PYTHONHASHSEED=0`, one thread
//! for OpenMP, MKL, OpenBLAS; the driver seeds Python's `random`, NumPy and torch from the case
//! seed and records what it pinned in its answer), recorded in every finding.
//!
//! What a request comes to ([`Compile`]): the flows and `layout.json` CIM-MLC wrote; a decline
//! (`unsupported`: what CIM-MLC cannot take by design); an exception raised in CIM-MLC, with its
//! type, message and the traceback's frames in CIM-MLC's sources (a `crash`); the driver
//! process dying (a `crash`); the deadline (a `hang`); or a failure that is not CIM-MLC's (a
//! malformed case, the driver's own error, a broken answer: `poisoned`, never a finding).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use pimdiff_engine::process::{
    scratch_dir, Answer, Environment, Invocation, Limits, Overrun, Pinning, Recipe, ServerPool,
    Status,
};

use crate::arch::Level;
use crate::tree::Tree;

/// The longest answer line read.
pub const ANSWER_LINE_LIMIT: usize = 64 << 10;
/// What a driver's process group may hold while it compiles: torch and ONNX Runtime loaded
/// take about 600 MB.
pub const RSS_LIMIT: u64 = 4 << 30;
/// The tail of standard error kept per request.
const STDERR_TAIL: usize = 4000;
/// The largest flow file or `layout.json` read back.
const OUTPUT_LIMIT: pimdiff_input::Limit = pimdiff_input::limits::MAX_CONFIG_BYTES;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The environment every driver runs in (recorded in findings).
pub fn pinning() -> Pinning {
    let mut env = match Environment::fixed() {
        Environment::Exactly { vars } => vars,
        Environment::Inherited { set } => set,
    };
    for (k, v) in [
        ("PYTHONHASHSEED", "0"),
        ("PYTHONDONTWRITEBYTECODE", "1"),
        ("OMP_NUM_THREADS", "1"),
        ("MKL_NUM_THREADS", "1"),
        ("OPENBLAS_NUM_THREADS", "1"),
        ("CUDA_VISIBLE_DEVICES", ""),
    ] {
        env.insert(k.to_string(), v.to_string());
    }
    if let Some(home) = std::env::var_os("HOME") {
        env.insert("HOME".into(), home.to_string_lossy().into_owned());
    }
    Pinning {
        environment: Environment::Exactly { vars: env },
        aslr_disabled: false,
        preload: Vec::new(),
    }
}

/// How the driver is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// Kept running, one request per case (the default).
    Serve,
    /// One process per case (`driver.py --case DIR --out DIR`): a Python start and torch's
    /// import every time, kept for comparison.
    Process,
}

/// The driver of one tree, served or run per case.
pub struct Driver {
    pool: ServerPool,
    timeout: Duration,
    protocol: Protocol,
    tree: Tree,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// One case as the driver reads it: `model.onnx`, `arch.py`, `case.json`.
pub struct CaseFiles<'a> {
    pub model: &'a [u8],
    pub arch_py: &'a str,
    pub case_json: &'a str,
}

impl CaseFiles<'_> {
    /// Writes the three files into `dir`.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::write(dir.join("model.onnx"), self.model)?;
        std::fs::write(dir.join("arch.py"), self.arch_py)?;
        std::fs::write(dir.join("case.json"), self.case_json)
    }
}

/// A frame of a traceback in CIM-MLC's sources.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// Relative to the tree's `src/` (`codegen/CoreWise.py`).
    pub file: String,
    pub line: u64,
    pub function: String,
}

/// An exception raised in CIM-MLC.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PyException {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub module: Option<String>,
    #[serde(default)]
    pub message: String,
    /// Innermost last.
    #[serde(default)]
    pub frames: Vec<Frame>,
    /// Where it was raised when that is outside CIM-MLC (NumPy, torch): `file:line`.
    #[serde(default)]
    pub raised_in: Option<serde_json::Value>,
}

impl PyException {
    /// The innermost frame in CIM-MLC.
    pub fn site(&self) -> Option<&Frame> {
        self.frames.last()
    }
}

/// What CIM-MLC wrote for a case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// Each flow file's text, by granularity.
    pub flows: BTreeMap<Level, String>,
    /// `layout.json`'s text.
    pub layout: String,
    /// `origins.json`'s text: the CIM-MLC source line behind each flow line
    /// ([`crate::origins`]); empty when the driver wrote none.
    pub origins: String,
}

/// What one compile came to.
#[derive(Clone, Debug, PartialEq)]
pub enum Compile {
    Compiled(Output),
    Unsupported(String),
    Exception(PyException),
    /// The driver process ended before answering (a signal in a C extension, say).
    Died {
        status: String,
        stderr: String,
    },
    /// Still compiling at its limit: `limit` of CPU time, or ten times it by the wall clock
    /// (`overrun` says which, with both times).
    Hang {
        limit: Duration,
        overrun: Option<Overrun>,
    },
    /// Not CIM-MLC's failure: a malformed case, the driver's own error, a broken answer, the
    /// harness unable to run the driver.
    Poisoned(String),
}

/// A compile with what it cost and ran under.
#[derive(Clone, Debug, PartialEq)]
pub struct Compiled {
    pub result: Compile,
    /// What the driver said it pinned (seeds, threads, versions), when it answered.
    pub pinned: serde_json::Value,
    pub seconds: f64,
}

#[derive(Deserialize)]
struct Reply {
    id: u64,
    status: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    exception: Option<PyException>,
    #[serde(default)]
    pinned: serde_json::Value,
}

impl Driver {
    /// `tree`'s driver run by `protocol`, each compile under `timeout`.
    pub fn new(tree: &Tree, timeout: Duration, protocol: Protocol) -> Driver {
        let (program, args) = tree.serve_command();
        let recipe: Recipe = Box::new(move || {
            Ok(Invocation::new(&program, "pimdiff-cim-mlc-")?
                .args(&args)
                .pinning(pinning())
                .limits(Limits {
                    rss_bytes: Some(RSS_LIMIT),
                    output_bytes: STDERR_TAIL,
                    ..Limits::cpu_time(timeout)
                }))
        });
        Driver {
            pool: ServerPool::new(recipe, ANSWER_LINE_LIMIT, scratch_dir()),
            timeout,
            protocol,
            tree: tree.clone(),
        }
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Compiles one case (see the module docs); never an error: failures are outcomes.
    pub fn compile(&self, files: &CaseFiles<'_>) -> Compiled {
        if self.protocol == Protocol::Process {
            return self.compile_in_process(files);
        }
        let start = Instant::now();
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let timeout = self.timeout;
        let done = self.pool.request(
            |dir| files.write(dir),
            |d| {
                serde_json::json!({
                    "protocol": 1,
                    "id": id,
                    "case": d.case,
                    "out": d.out,
                })
                .to_string()
                .into_bytes()
            },
            |answer, d| read_answer(answer, id, d.out, timeout),
        );
        let (result, pinned) =
            done.unwrap_or_else(|e| (Compile::Poisoned(e.to_string()), serde_json::Value::Null));
        Compiled {
            result,
            pinned,
            seconds: start.elapsed().as_secs_f64(),
        }
    }

    /// One case in a process of its own: the case and output directories in its temporary
    /// directory, the answer on its standard output.
    fn compile_in_process(&self, files: &CaseFiles<'_>) -> Compiled {
        let start = Instant::now();
        let (program, mut args) = self.tree.serve_command();
        args.pop(); // --serve
        let result = (|| -> Result<(Compile, serde_json::Value), String> {
            let inv = Invocation::new_in(&program, "pimdiff-cim-mlc-", &scratch_dir())
                .map_err(|e| e.to_string())?;
            let (case, out) = (inv.dir().join("case"), inv.dir().join("out"));
            for d in [&case, &out] {
                std::fs::create_dir(d).map_err(|e| e.to_string())?;
            }
            files.write(&case).map_err(|e| e.to_string())?;
            let run = inv
                .args(&args)
                .args([
                    "--case".to_string(),
                    case.display().to_string(),
                    "--out".to_string(),
                    out.display().to_string(),
                ])
                .pinning(pinning())
                .limits(Limits {
                    rss_bytes: Some(RSS_LIMIT),
                    output_bytes: ANSWER_LINE_LIMIT,
                    ..Limits::cpu_time(self.timeout)
                })
                .run()
                .map_err(|e| e.to_string())?;
            let answer = match run.status {
                Status::Exited { code: 0 | 1 | 3 } => {
                    // The one-shot answer is indented JSON: read it as one value.
                    let v: serde_json::Value = serde_json::from_slice(&run.stdout.bytes)
                        .map_err(|e| format!("the driver's answer is not JSON ({e})"))?;
                    let mut v = v;
                    v["id"] = serde_json::json!(0);
                    Answer::Line {
                        line: v.to_string().into_bytes(),
                        stderr: run.stderr.clone(),
                    }
                }
                ref status => Answer::Ended {
                    status: status.clone(),
                    stderr: run.stderr.clone(),
                },
            };
            Ok(read_answer(answer, 0, &out, self.timeout))
        })();
        let (result, pinned) =
            result.unwrap_or_else(|e| (Compile::Poisoned(e), serde_json::Value::Null));
        Compiled {
            result,
            pinned,
            seconds: start.elapsed().as_secs_f64(),
        }
    }

    /// Kills the idle servers.
    pub fn shutdown(&self) {
        self.pool.shutdown();
    }
}

/// What an answer (or its absence) means; `out` holds what the request wrote.
fn read_answer(
    answer: Answer,
    id: u64,
    out: &Path,
    timeout: Duration,
) -> (Compile, serde_json::Value) {
    let line = match answer {
        Answer::Line { line, .. } => line,
        Answer::TooLong { .. } => {
            return (
                Compile::Poisoned(format!(
                    "the driver answered a line longer than {ANSWER_LINE_LIMIT} bytes"
                )),
                serde_json::Value::Null,
            )
        }
        Answer::Ended { status, stderr } => {
            let text = String::from_utf8_lossy(&stderr.bytes).into_owned();
            let result = match status {
                Status::TimedOut { .. } => Compile::Hang {
                    limit: timeout,
                    overrun: status.overrun(),
                },
                Status::Cancelled => Compile::Poisoned("the driver was cancelled".into()),
                other => Compile::Died {
                    status: other.to_string(),
                    stderr: text,
                },
            };
            return (result, serde_json::Value::Null);
        }
    };
    let reply: Reply = match serde_json::from_slice(&line) {
        Ok(r) => r,
        Err(e) => {
            let shown = String::from_utf8_lossy(&line[..line.len().min(300)]).into_owned();
            return (
                Compile::Poisoned(format!(
                    "the driver's answer is not protocol ({e}): {shown:?}"
                )),
                serde_json::Value::Null,
            );
        }
    };
    let pinned = reply.pinned.clone();
    if reply.id != id {
        return (
            Compile::Poisoned(format!("the driver answered request {} for {id}", reply.id)),
            pinned,
        );
    }
    let result = match (reply.status.as_str(), reply.exception) {
        ("compiled", _) => match read_output(out) {
            Ok(o) => Compile::Compiled(o),
            Err(e) => Compile::Poisoned(format!("the driver's output cannot be read: {e}")),
        },
        ("unsupported", _) => Compile::Unsupported(reply.reason.unwrap_or_default()),
        // An exception of CIM-MLC has a frame in its sources (main.main at least); one
        // without is the driver's own.
        ("error", Some(exc))
            if !exc.frames.is_empty()
                && !matches!(exc.kind.as_str(), "CaseError" | "DriverError") =>
        {
            Compile::Exception(exc)
        }
        ("error", _) => Compile::Poisoned(format!(
            "the driver failed outside CIM-MLC: {}",
            reply.message.unwrap_or_default()
        )),
        (other, _) => Compile::Poisoned(format!("the driver answered status {other:?}")),
    };
    (result, pinned)
}

/// The flow files present, `layout.json` and `origins.json` (when written), from `out`.
fn read_output(out: &Path) -> Result<Output, String> {
    let text = |name: &str| -> Result<String, String> {
        let bytes = pimdiff_input::read_maybe_empty(&out.join(name), OUTPUT_LIMIT)
            .map_err(|e| format!("{name}: {e}"))?;
        String::from_utf8(bytes).map_err(|_| format!("{name}: not UTF-8"))
    };
    let mut flows = BTreeMap::new();
    for level in Level::ALL {
        if out.join(level.file()).is_file() {
            flows.insert(level, text(level.file())?);
        }
    }
    let origins = if out.join("origins.json").is_file() {
        text("origins.json")?
    } else {
        String::new()
    };
    Ok(Output {
        flows,
        layout: text("layout.json")?,
        origins,
    })
}
