//! Running the real PIMCOMP-NN binary on one model, in a working directory of its own.
//!
//! PIMCOMP-NN reads `../config.json` and `../models/JSON/<model>.json` and writes `../output/`
//! relative to its working directory, so every compile gets a fresh temporary tree
//! `{config.json, models/JSON/net.json, output/, work/}` and runs in `work/`. It runs through
//! [`crate::process`]: in a process group of its own (killed on timeout or at the end of a
//! hunt), under a limit of CPU time of the group (with a wall-clock backstop of ten times it,
//! `pimdiff_engine::process::Limits::cpu_time`: a loaded machine does not make a hang) and a
//! watchdog on the group's resident memory (an address-space limit does not work: the binary
//! reserves far more than it touches). The
//! LD_PRELOAD shim built beside the binary pins `time()` to the given value and prints crash
//! frames.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::profile::{self, Phase};
use pimdiff_engine::coverage::{CoverageRun, EdgeMap};
use pimdiff_engine::hunt::Edges;
use pimdiff_engine::process::{Environment, Invocation, Limits, Overrun, Pinning, Status};

/// The model name every compile uses (`-m=net`).
pub const MODEL_NAME: &str = "net";
/// The shim's file name beside the binary (built by `scripts/build-pimcomp.sh`).
pub const SHIM_NAME: &str = "libpimdiff-shim.so";
/// The copy of the program with `core_cnt` raised to its highest core index + 1, written
/// beside it when a core lies beyond the count (see [`super::cores`]).
pub const RAISED_PROGRAM: &str = "SimulationInfo-core_cnt.gz";

/// PIMCOMP-NN's two pipelines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pipeline {
    Batch,
    Element,
}

impl Pipeline {
    pub fn name(self) -> &'static str {
        match self {
            Pipeline::Batch => "batch",
            Pipeline::Element => "element",
        }
    }
}

/// Where the compiler is and how it may run.
#[derive(Clone, Debug)]
pub struct CompilerSetup {
    pub bin: PathBuf,
    /// `config.json` (beside the binary, else the source's).
    pub config: PathBuf,
    /// The LD_PRELOAD shim, when it is beside the binary.
    pub shim: Option<PathBuf>,
    pub timeout: Duration,
    pub max_rss_bytes: u64,
    /// Measuring coverage (a `scripts/build-pimcomp.sh --coverage` binary): each compile
    /// records its edges, and its gcov counts go under this directory (`GCOV_PREFIX`).
    pub coverage: Option<CoverageRun>,
    /// How the memory the compiler zeroes is provided (see [`ZeroedMemory`]).
    pub zeroed_memory: ZeroedMemory,
}

/// How the shim provides the memory PIMCOMP-NN zeroes. Why it matters: every compile zeroes
/// a 200 MB static array and two 200 MB vectors (`evaluation/ModelEvaluation.cpp`) it mostly
/// never uses; writing them was over 90 % of a compile. The program's memory holds the same
/// values (zeros) in every mode, so it compiles the same programs (tested on hunts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum ZeroedMemory {
    /// `PIMDIFF_LAZY_ZERO=1`: a memset to zero of 1 MiB or more over private anonymous memory
    /// gives the pages back to the kernel (`MADV_DONTNEED`), which hands out zero pages only
    /// where the program touches them.
    #[default]
    Lazy,
    /// `PIMDIFF_HUGE_BSS=1`: transparent huge pages over the static data, every byte written.
    Huge,
    /// Plain 4 KiB pages, every byte written: the compiler as built.
    Small,
}

/// Why a compiler set-up is unusable (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("no PIMCOMP-NN binary: give --pimcomp-bin PATH or set PIMCOMP_NN_BIN (build it with scripts/build-pimcomp.sh)")]
    NoBinary,
    #[error("{}: not an executable file", .0.display())]
    NotExecutable(PathBuf),
    #[error("{}: no config.json beside the PIMCOMP-NN binary (scripts/build-pimcomp.sh puts one there)", .0.display())]
    NoConfig(PathBuf),
}

impl CompilerSetup {
    /// The set-up for `bin` (or `$PIMCOMP_NN_BIN`), with `config.json` and the shim beside it.
    pub fn locate(
        bin: Option<&Path>,
        timeout: Duration,
        max_rss_bytes: u64,
    ) -> Result<CompilerSetup, SetupError> {
        let bin = match bin {
            Some(b) => b.to_path_buf(),
            None => std::env::var_os("PIMCOMP_NN_BIN")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .ok_or(SetupError::NoBinary)?,
        };
        if !bin.is_file() {
            return Err(SetupError::NotExecutable(bin));
        }
        let bin = bin.canonicalize().unwrap_or(bin);
        let dir = bin.parent().map(Path::to_path_buf).unwrap_or_default();
        let config = dir.join("config.json");
        if !config.is_file() {
            return Err(SetupError::NoConfig(bin));
        }
        let shim = Some(dir.join(SHIM_NAME)).filter(|s| s.is_file());
        Ok(CompilerSetup {
            bin,
            config,
            shim,
            timeout,
            max_rss_bytes,
            coverage: None,
            zeroed_memory: ZeroedMemory::default(),
        })
    }
}

/// How a compile ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Exit {
    Code {
        code: i32,
    },
    Signal {
        signal: i32,
    },
    /// Killed at its time limit: `seconds` of CPU time (the limit), or the wall-clock
    /// backstop; `overrun` says which and records both times (absent in records written
    /// before CPU-time limits).
    Timeout {
        seconds: f64,
        #[serde(default)]
        overrun: Option<Overrun>,
    },
    /// The resident-memory watchdog killed it.
    Memory {
        mib: u64,
    },
}

/// One compile's result: how it ended, its output (last 64 KiB each) and where its files are.
#[derive(Clone, Debug)]
pub struct CompileRun {
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
    /// The temporary tree (removed when the value is dropped).
    pub dir: std::sync::Arc<tempfile::TempDir>,
    pub seconds: f64,
    /// The edges the compile entered, when coverage is measured.
    pub edges: Option<Edges>,
}

impl CompileRun {
    pub fn output(&self) -> PathBuf {
        self.dir.path().join("output")
    }
    /// `SimulationInfo.gz` (the program), when written.
    pub fn program(&self) -> Option<PathBuf> {
        Some(self.output().join("SimulationInfo.gz")).filter(|p| p.is_file())
    }
    /// The program the check ran: the raised copy when there is one, else `program()`.
    pub fn checked_program(&self) -> Option<PathBuf> {
        Some(self.output().join(RAISED_PROGRAM))
            .filter(|p| p.is_file())
            .or_else(|| self.program())
    }
    /// `VerificationInfo.json` (the side table), when written.
    pub fn table(&self) -> Option<PathBuf> {
        Some(self.output().join("VerificationInfo.json")).filter(|p| p.is_file())
    }
}

/// The command line a user runs to reproduce a compile (in a tree laid out as above).
pub fn command_line(setup: &CompilerSetup, pipeline: Pipeline, pin_time: u64) -> String {
    let shim = setup
        .shim
        .as_ref()
        .map(|s| format!("LD_PRELOAD={} ", s.display()))
        .unwrap_or_default();
    format!(
        "{shim}PIMDIFF_PIN_TIME={pin_time} {} -m={MODEL_NAME} -r=balance -p={} -s=YES -v=YES",
        setup.bin.display(),
        pipeline.name()
    )
}

/// Compiles `model_json` with `pipeline`, `time()` pinned to `pin_time`.
pub fn compile(
    setup: &CompilerSetup,
    model_json: &str,
    pipeline: Pipeline,
    pin_time: u64,
) -> std::io::Result<CompileRun> {
    let (invocation, edge_map) = profile::timed(Phase::Layout, || {
        let invocation =
            Invocation::new(&setup.bin, "pimcomp-case-").map_err(std::io::Error::other)?;
        let root = invocation.dir();
        std::fs::create_dir_all(root.join("models/JSON"))?;
        std::fs::create_dir_all(root.join("output"))?;
        std::fs::create_dir_all(root.join("work"))?;
        std::fs::copy(&setup.config, root.join("config.json"))?;
        std::fs::write(
            root.join("models/JSON").join(format!("{MODEL_NAME}.json")),
            model_json,
        )?;
        let edges = match &setup.coverage {
            Some(_) => Some(EdgeMap::create(root)?),
            None => None,
        };
        Ok::<_, std::io::Error>((invocation, edges))
    })?;
    let run = profile::timed(Phase::Compile, || {
        invocation
            .args([
                format!("-m={MODEL_NAME}"),
                "-r=balance".into(),
                format!("-p={}", pipeline.name()),
                "-s=YES".into(),
                "-v=YES".into(),
            ])
            .current_dir("work")
            .limits(Limits {
                rss_bytes: Some(setup.max_rss_bytes),
                ..Limits::cpu_time(setup.timeout)
            })
            .pinning(Pinning {
                environment: Environment::inherited_with(environment(
                    setup,
                    pin_time,
                    edge_map.as_ref(),
                )),
                preload: setup.shim.iter().cloned().collect(),
                ..Pinning::default()
            })
            .run()
    })
    .map_err(std::io::Error::other)?;
    let exit = match run.status {
        Status::Exited { code } => Exit::Code { code },
        Status::Signaled { signal, .. } => Exit::Signal { signal },
        // Only at the end of a hunt, when nobody reads it: as before, a death by SIGKILL.
        Status::Cancelled => Exit::Signal {
            signal: libc::SIGKILL,
        },
        Status::TimedOut { .. } => Exit::Timeout {
            seconds: setup.timeout.as_secs_f64(),
            overrun: run.status.overrun(),
        },
        Status::MemoryLimit { rss_bytes, .. } => Exit::Memory {
            mib: rss_bytes >> 20,
        },
    };
    Ok(CompileRun {
        exit,
        stdout: run.stdout.text(),
        stderr: run.stderr.text(),
        seconds: run.wall.as_secs_f64(),
        dir: std::sync::Arc::new(run.dir),
        edges: edge_map.and_then(|m| m.read().ok()),
    })
}

/// The variables a compile runs with: the pinned time and, when coverage is measured, the
/// edge map and the gcov prefix.
fn environment(
    setup: &CompilerSetup,
    pin_time: u64,
    edge_map: Option<&EdgeMap>,
) -> Vec<(String, String)> {
    let mut vars = vec![("PIMDIFF_PIN_TIME".to_string(), pin_time.to_string())];
    match setup.zeroed_memory {
        ZeroedMemory::Lazy => vars.push(("PIMDIFF_LAZY_ZERO".to_string(), "1".to_string())),
        ZeroedMemory::Huge => vars.push(("PIMDIFF_HUGE_BSS".to_string(), "1".to_string())),
        ZeroedMemory::Small => {}
    }
    vars.extend(edge_map.map(EdgeMap::environment));
    if let Some(c) = &setup.coverage {
        vars.extend(c.environment());
    }
    vars
}

/// One frame of a crash backtrace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    pub function: String,
    /// `file:line` (file name only), `??` when unknown.
    pub location: String,
    /// Whether the frame is inside PIMCOMP-NN (not libc, libstdc++ or the shim).
    pub own: bool,
}

/// The shim's `PIMDIFF-FRAME <object> +0x<offset>[ exact]` lines, symbolized with
/// `addr2line` (frames of the shim itself dropped). Every offset is symbolized as printed: the
/// shim takes the interrupted instruction's address from the signal's context (`exact`) and
/// has already moved return addresses back into their call, so nothing is subtracted here.
/// Without addr2line, frames keep their offsets.
pub fn frames(setup: &CompilerSetup, stderr: &str) -> Vec<Frame> {
    let raw: Vec<(String, String)> = stderr
        .lines()
        .filter_map(shim_frame)
        .map(|(obj, off)| (obj.to_string(), off.to_string()))
        .filter(|(obj, _)| !obj.ends_with(SHIM_NAME))
        .collect();
    let bin = setup.bin.to_string_lossy().into_owned();
    let own: Vec<&str> = raw
        .iter()
        .filter(|(obj, _)| same_file(obj, &bin))
        .map(|(_, off)| off.as_str())
        .collect();
    let symbolized = symbolize(&setup.bin, &own);
    let mut next = symbolized.into_iter();
    raw.iter()
        .map(|(obj, off)| {
            if same_file(obj, &bin) {
                let (function, location) = next
                    .next()
                    .unwrap_or_else(|| (format!("PIMCOMP-NN+{off}"), "??".into()));
                Frame {
                    function,
                    location,
                    own: true,
                }
            } else {
                let lib = Path::new(obj)
                    .file_name()
                    .map_or(obj.clone(), |n| n.to_string_lossy().into_owned());
                Frame {
                    function: format!("{lib}+{off}"),
                    location: "??".into(),
                    own: false,
                }
            }
        })
        .collect()
}

/// The object and offset of one `PIMDIFF-FRAME <object> +0x<offset>[ exact]` line (lines of
/// an older shim, without the mark, read the same).
fn shim_frame(line: &str) -> Option<(&str, &str)> {
    let (object, rest) = line.strip_prefix("PIMDIFF-FRAME ")?.rsplit_once(" +")?;
    let offset = rest
        .split_whitespace()
        .next()
        .filter(|o| o.starts_with("0x"))?;
    Some((object, offset))
}

fn same_file(a: &str, b: &str) -> bool {
    a == b
        || Path::new(a).canonicalize().ok() == Path::new(b).canonicalize().ok()
            && Path::new(a).exists()
}

/// `(function, file:line)` per offset, via `addr2line -f -C -e BIN` (outermost inline frame).
fn symbolize(bin: &Path, offsets: &[&str]) -> Vec<(String, String)> {
    if offsets.is_empty() {
        return Vec::new();
    }
    let out = Command::new("addr2line")
        .arg("-f")
        .arg("-C")
        .arg("-e")
        .arg(bin)
        .args(offsets)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let Ok(out) = out else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    lines
        .chunks(2)
        .map(|pair| {
            let function = pair.first().copied().unwrap_or("??");
            let function = function.split('(').next().unwrap_or(function).to_string();
            let loc = pair.get(1).copied().unwrap_or("??");
            let loc = loc.split(" (").next().unwrap_or(loc);
            let loc = Path::new(loc)
                .file_name()
                .map_or(loc.to_string(), |n| n.to_string_lossy().into_owned());
            (function, loc)
        })
        .collect()
}
