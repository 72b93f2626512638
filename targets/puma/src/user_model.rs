//! `pimdiff puma MODEL.cpp`: a network a person wrote against the PUMA compiler's
//! `include/puma.h` (their own, or one of the snapshot's `test/*.cpp`), compiled by the
//! compiler of a tree of `scripts/build-puma.sh` and checked exactly on the PUMA machine.
//!
//! 1. **Build.** `g++` compiles `MODEL.cpp` against the tree (its `include/`, `src/libpuma.so`
//!    and `cxxflags`; the file's own directory is on the include path, for the headers next to
//!    it), as a fuzzer runs its target: through [`pimdiff_engine::process`], in a temporary
//!    directory, under a deadline. A file that does not compile is bad input, with g++'s
//!    message.
//! 2. **Compile.** The program runs in a fresh directory of its own, pinned as a hunt's
//!    compiles are (fixed environment, ASLR off, the tree's crash-frame shim or sanitizer
//!    options; `docs/puma.md`), under a deadline and a memory limit that kill its whole process
//!    group, with the arguments given after `--`. The tree's patch 0002 makes every
//!    `Model::compile` dump the model the compiler built ([`super::graph`]). A crash or an
//!    assertion inside the compiler is a finding, classified and signed as in a hunt
//!    ([`super::outcome`]); one in the program's own code (no frame of the compiler's sources)
//!    or a non-zero exit status is the program's failure: bad input. A compile that does not
//!    end within the limit cannot be judged (a large network may need longer).
//! 3. **Check.** Every model the program compiled is checked against its own dump
//!    ([`super::user_check`]): seeded inputs and weights, the exact reference of the dumped
//!    graph, the programs on the machine, every output element compared.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pimdiff_engine::finding::{Kind, Verdict as EngineVerdict};
use pimdiff_engine::process::{Environment, Invocation, Limits, Pinning, ProcessError, Status};
use serde::Serialize;

use super::api::{self, expected_outputs, read_calls, Call, API_LOG};
use super::check::{CheckOptions, Checked, Verdict};
use super::compile::{CompileRun, PumaSetup, Tree};
use super::frames::{assertion, own_files};
use super::graph::{graph_file, ModelGraph, OpKind};
use super::outcome::{check_outcome, compile_outcome, PumaOutcome};
use super::reference::NumericRange;
use super::user_check::{check_graph, data_and_reference, write_weight_files, ApiStats};

/// The patch that makes the compiler dump its model; a tree without it cannot be used.
pub const GRAPH_PATCH: &str = "0002-model-graph.patch";

/// The largest `MODEL.cpp` read: 4 MiB.
const MAX_SOURCE_BYTES: u64 = 4 << 20;

/// What to check and how.
#[derive(Clone, Debug)]
pub struct UserOptions {
    pub model_cpp: PathBuf,
    /// Arguments of the program (after `--`).
    pub args: Vec<OsString>,
    /// A tree of `scripts/build-puma.sh` (plain or sanitizer).
    pub tree: PathBuf,
    /// Seed of the inputs and weights.
    pub seed: u64,
    /// Deadline of the program's run (the compile) and of g++.
    pub timeout: Duration,
    pub max_rss_bytes: u64,
    pub check: CheckOptions,
    /// Write the weights checked with into the run's directory, as `generateData` would have
    /// (for `--out`; the machine takes them from memory).
    pub write_weights: bool,
}

/// Why a model cannot be checked at all: bad input (exit 2), naming the file or flag.
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    #[error("{}: {message}", .path.display())]
    Source { path: PathBuf, message: String },
    #[error("{}: not a tree of scripts/build-puma.sh with patch {GRAPH_PATCH} (its patches.txt does not list it); rebuild it with scripts/build-puma.sh", .0.display())]
    NoGraphPatch(PathBuf),
    #[error("{} does not compile (g++ {status}):\n{message}", .path.display())]
    Build {
        path: PathBuf,
        status: String,
        message: String,
    },
    #[error("the program of {} {what}", .path.display())]
    Program { path: PathBuf, what: String },
    #[error("cannot run {program}: {source}")]
    Process {
        program: String,
        source: ProcessError,
    },
}

/// The verdict of one check, as exit codes carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UserVerdict {
    /// Every known output element of every model equals the reference.
    Agree,
    /// A crash, an assertion, a miscompilation.
    Finding,
    /// Nothing wrong found, but no verdict either (with the reason).
    NoVerdict,
}

impl UserVerdict {
    /// The engine's verdict, whose exit codes every command shares.
    pub fn engine(self) -> EngineVerdict {
        match self {
            UserVerdict::Agree => EngineVerdict::Clean,
            UserVerdict::Finding => EngineVerdict::Findings,
            UserVerdict::NoVerdict => EngineVerdict::NoVerdict,
        }
    }

    fn and(self, other: UserVerdict) -> UserVerdict {
        use UserVerdict::*;
        match (self, other) {
            (Finding, _) | (_, Finding) => Finding,
            (NoVerdict, _) | (_, NoVerdict) => NoVerdict,
            _ => Agree,
        }
    }
}

/// One model the program compiled, and its check.
#[derive(Clone, Debug, Serialize)]
pub struct ModelReport {
    pub model: String,
    /// Operations by kind (`mvm`, `alu add`, ...), and totals.
    pub operations: Vec<(String, u64)>,
    pub matrices: usize,
    pub matrix_tiles: usize,
    pub weights: u64,
    pub input_elements: u64,
    pub output_elements: u64,
    pub tiles: u32,
    pub verdict: UserVerdict,
    /// One line: what the check came to.
    pub detail: String,
    /// The check's outcome (kind and signature), when the programs ran.
    pub outcome: Option<PumaOutcome>,
    /// Why elements are unknown or why there is no verdict.
    pub notes: Vec<String>,
    /// What the check against the API calls' meaning came to (`docs/puma.md`): compared and
    /// unknown elements, or why it was not made.
    pub api: Result<ApiStats, String>,
}

/// Everything `pimdiff puma` did.
#[derive(Clone, Debug, Serialize)]
pub struct UserReport {
    pub model_cpp: PathBuf,
    pub tree: PathBuf,
    pub seed: u64,
    pub quirks: &'static str,
    pub build_seconds: f64,
    /// How the program's run ended, and in how long.
    pub run_status: String,
    pub run_seconds: f64,
    /// The compile's own outcome when it crashed, aborted or did not end.
    pub compile: Option<PumaOutcome>,
    pub models: Vec<ModelReport>,
    pub verdict: UserVerdict,
    /// Why there is no verdict, or what the finding is, in one line.
    pub reason: String,
    /// The program's run directory (everything the compiler wrote, and the weights used),
    /// kept while this report lives.
    #[serde(skip)]
    pub dir: Option<Arc<tempfile::TempDir>>,
}

/// Builds, runs and checks (module docs).
pub fn check_model_cpp(opts: &UserOptions) -> Result<UserReport, UserError> {
    let source = source_file(&opts.model_cpp)?;
    let tree = tree_of(&opts.tree)?;
    let (build_dir, build_seconds) = build(opts, &source)?;
    let setup = PumaSetup {
        plain: opts.tree.clone(),
        sanitize: (tree == Tree::Sanitize).then(|| opts.tree.clone()),
        timeout: opts.timeout,
        max_rss_bytes: opts.max_rss_bytes,
        coverage: None,
    };
    let program = build_dir.path().join("model");
    let run = run_program(opts, &setup, tree, &program)?;
    let mut report = UserReport {
        model_cpp: source.clone(),
        tree: opts.tree.clone(),
        seed: opts.seed,
        quirks: opts.check.quirks_name(),
        build_seconds,
        run_status: run.status.to_string(),
        run_seconds: run.seconds,
        compile: None,
        models: Vec::new(),
        verdict: UserVerdict::Agree,
        reason: String::new(),
        dir: Some(run.dir.clone()),
    };
    if let Some(outcome) = compile_outcome(&setup, &run, None) {
        let failed = FailedRun {
            source: &source,
            program: &program,
            setup: &setup,
            run: &run,
        };
        failed.classify(opts, outcome, &mut report)?;
        return Ok(report);
    }
    let graphs = graph_files(run.path());
    if graphs.is_empty() {
        return Err(UserError::Program {
            path: source,
            what: "compiled no model: it exited without calling Model::compile (no \
                   <model>-graph.json was written)"
                .into(),
        });
    }
    let calls = read_calls(run.path());
    for path in graphs {
        let m = check_one(run.path(), &path, &calls, opts);
        report.verdict = report.verdict.and(m.verdict);
        report.models.push(m);
    }
    report.reason = summary_reason(&report.models);
    Ok(report)
}

/// The model source, checked to be a readable file of bounded size (its absolute path).
pub fn source_file(path: &Path) -> Result<PathBuf, UserError> {
    let bad = |message: String| UserError::Source {
        path: path.to_path_buf(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    if !meta.is_file() {
        return Err(bad("not a file".into()));
    }
    if meta.len() > MAX_SOURCE_BYTES {
        return Err(bad(format!(
            "{} bytes, above the limit of {MAX_SOURCE_BYTES}",
            meta.len()
        )));
    }
    path.canonicalize()
        .map_err(|e| bad(format!("cannot resolve it: {e}")))
}

/// Which kind of tree `dir` is; refused without the graph patch.
fn tree_of(dir: &Path) -> Result<Tree, UserError> {
    let patches = std::fs::read_to_string(dir.join("patches.txt")).unwrap_or_default();
    if !patches.lines().any(|l| l.trim() == GRAPH_PATCH) {
        return Err(UserError::NoGraphPatch(dir.to_path_buf()));
    }
    Ok(
        if cxxflags(dir).iter().any(|f| f.starts_with("-fsanitize")) {
            Tree::Sanitize
        } else {
            Tree::Plain
        },
    )
}

/// The flags a program linked against the tree's library needs (`cxxflags`).
fn cxxflags(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("cxxflags"))
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_else(|_| vec!["-O1".into(), "-g".into()])
}

fn process_error(program: &str) -> impl Fn(ProcessError) -> UserError + '_ {
    move |source| UserError::Process {
        program: program.to_string(),
        source,
    }
}

/// g++ on the source; the directory holding `model`, and the seconds it took.
fn build(opts: &UserOptions, source: &Path) -> Result<(tempfile::TempDir, f64), UserError> {
    let include_dir = source.parent().unwrap_or(Path::new("."));
    let mut args: Vec<OsString> = vec!["-std=c++11".into()];
    args.extend(cxxflags(&opts.tree).into_iter().map(OsString::from));
    args.extend([
        OsString::from(format!("-I{}", opts.tree.join("include").display())),
        OsString::from(format!("-I{}", include_dir.display())),
        source.as_os_str().to_os_string(),
        OsString::from(format!("-L{}", opts.tree.join("src").display())),
        "-lpuma".into(),
        OsString::from(format!("-Wl,-rpath,{}", opts.tree.join("src").display())),
        "-o".into(),
        "model".into(),
    ]);
    let run = Invocation::new("g++", "puma-model-build-")
        .map_err(process_error("g++"))?
        .args(args)
        .limits(Limits::new(opts.timeout.max(Duration::from_secs(60))))
        .pinning(Pinning {
            environment: Environment::fixed(),
            aslr_disabled: false,
            preload: Vec::new(),
        })
        .run()
        .map_err(process_error("g++"))?;
    if run.status != (Status::Exited { code: 0 }) {
        return Err(UserError::Build {
            path: source.to_path_buf(),
            status: run.status.to_string(),
            message: compiler_message(&run.stderr.text()),
        });
    }
    Ok((run.dir, run.wall.as_secs_f64()))
}

/// g++'s first errors (at most 20 lines from the first `error:`), without the noise before.
fn compiler_message(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().collect();
    let first = lines.iter().position(|l| l.contains("error")).unwrap_or(0);
    let mut shown: Vec<&str> = lines[first..].iter().take(20).copied().collect();
    if lines.len() > first + 20 {
        shown.push("...");
    }
    shown.join("\n")
}

/// The program, run as a hunt runs the driver.
fn run_program(
    opts: &UserOptions,
    setup: &PumaSetup,
    tree: Tree,
    program: &Path,
) -> Result<CompileRun, UserError> {
    let pinning = PumaSetup::pinning(tree, &opts.tree);
    let name = program.display().to_string();
    let run = Invocation::new(program, "puma-model-")
        .map_err(process_error(&name))?
        .args(&opts.args)
        .limits(Limits {
            rss_bytes: Some(setup.max_rss_bytes),
            ..Limits::new(setup.timeout)
        })
        .pinning(pinning.clone())
        .run()
        .map_err(process_error(&name))?;
    Ok(CompileRun {
        tree,
        status: run.status,
        stdout: run.stdout.text(),
        stderr: run.stderr.text(),
        seconds: run.wall.as_secs_f64(),
        pinning,
        dir: Arc::new(run.dir),
        edges: None,
    })
}

/// A run that did not exit 0, and what it needs to be classified.
struct FailedRun<'a> {
    source: &'a Path,
    program: &'a Path,
    setup: &'a PumaSetup,
    run: &'a CompileRun,
}

impl FailedRun<'_> {
    /// The compiler's crash (a finding), a compile that did not end (no verdict), or the
    /// program's own failure (bad input).
    fn classify(
        &self,
        opts: &UserOptions,
        outcome: PumaOutcome,
        report: &mut UserReport,
    ) -> Result<(), UserError> {
        let program_failure = |what: String| UserError::Program {
            path: self.source.to_path_buf(),
            what,
        };
        match (&self.run.status, outcome.kind) {
            (Status::Exited { code }, _) => {
                let last = self
                    .run
                    .stderr
                    .lines()
                    .chain(self.run.stdout.lines())
                    .rfind(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim()
                    .to_string();
                Err(program_failure(format!(
                    "exited with status {code} (the compiler has no exit path of its own): {last}"
                )))
            }
            (_, Kind::Hang) => {
                report.verdict = UserVerdict::NoVerdict;
                report.reason = format!(
                    "the program did not finish: {} (--timeout {} s, --max-rss-mib {})",
                    outcome.detail,
                    opts.timeout.as_secs(),
                    self.setup.max_rss_bytes >> 20
                );
                report.compile = Some(outcome);
                Ok(())
            }
            (_, Kind::Poisoned) => Err(program_failure(format!("was stopped: {}", outcome.detail))),
            _ if self.in_compiler(&outcome) => {
                report.verdict = UserVerdict::Finding;
                report.reason = format!(
                    "the compiler failed: {} ({})",
                    outcome
                        .signature
                        .as_ref()
                        .map_or(String::new(), |s| s.to_string()),
                    outcome.detail
                );
                report.compile = Some(outcome);
                Ok(())
            }
            _ => Err(program_failure(format!(
                "failed outside the compiler: {}{}",
                self.run.status,
                self.program_frame()
                    .map_or_else(String::new, |f| format!(", in its own code at {f}"))
            ))),
        }
    }

    /// Whether a crash or abort happened in the compiler: a frame in its sources, or an
    /// assertion of one of its files.
    fn in_compiler(&self, outcome: &PumaOutcome) -> bool {
        if outcome.frames.iter().any(|f| f.own) {
            return true;
        }
        let own = own_files(self.setup.tree(self.run.tree).unwrap_or(&self.setup.plain));
        assertion(&self.run.stderr).is_some_and(|(file, _, _)| {
            let base = Path::new(&file)
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or(file.clone());
            own.contains(&base)
        })
    }

    /// The innermost frame of the crash in the program itself (`function (file:line)`), by
    /// addr2line on the program: the shim prints `PIMDIFF-FRAME <object> +0x<offset>`.
    fn program_frame(&self) -> Option<String> {
        let offset = self
            .run
            .stderr
            .lines()
            .filter_map(|l| l.strip_prefix("PIMDIFF-FRAME "))
            .filter_map(|l| l.rsplit_once(" +"))
            .find(|(object, _)| Path::new(object) == self.program)
            .map(|(_, offset)| offset.trim().to_string())?;
        let out = std::process::Command::new("addr2line")
            .args(["-f", "-i", "-C", "-s", "-e"])
            .arg(self.program)
            .arg(&offset)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        // Pairs of lines, innermost inlined function first: the first in the program's own
        // source file, else the function the code belongs to (the last).
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let pairs: Vec<(&str, &str)> = lines
            .chunks(2)
            .filter_map(|c| Some((c[0], *c.get(1)?)))
            .collect();
        let name = self.source.file_name()?.to_string_lossy().to_string();
        let (function, location) = pairs
            .iter()
            .find(|(_, l)| l.starts_with(&format!("{name}:")))
            .or(pairs.last())?;
        Some(format!("{function} ({location})"))
    }
}

/// The graph dumps in `dir`, sorted.
fn graph_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.ends_with("-graph.json"))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// The check of one dumped model; `calls` are the program's API calls (all models').
fn check_one(
    dir: &Path,
    path: &Path,
    calls: &Result<Option<Vec<Call>>, String>,
    opts: &UserOptions,
) -> ModelReport {
    let model = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix("-graph.json"))
        .unwrap_or("")
        .to_string();
    let mut report = ModelReport {
        model: model.clone(),
        operations: Vec::new(),
        matrices: 0,
        matrix_tiles: 0,
        weights: 0,
        input_elements: 0,
        output_elements: 0,
        tiles: 0,
        verdict: UserVerdict::NoVerdict,
        detail: String::new(),
        outcome: None,
        notes: Vec::new(),
        api: Err("not made: the model was not checked".into()),
    };
    let graph = match ModelGraph::read(path) {
        Ok(g) if graph_file(&g.model) == graph_file(&model) => g,
        Ok(g) => {
            report.detail = format!("the dump names model `{}`, its file `{model}`", g.model);
            return report;
        }
        Err(e) => {
            report.detail = format!("cannot read the compiler's dump {}: {e}", path.display());
            return report;
        }
    };
    describe(&graph, &mut report);
    let (data, eval) = match data_and_reference(&graph, opts.seed, NumericRange::PUMA_WORD) {
        Ok(d) => d,
        Err(e) => {
            report.detail = format!("no verdict: {e}");
            return report;
        }
    };
    report.notes = eval.notes.clone();
    let api = match calls {
        Ok(Some(calls)) => api::describe(calls, &graph)
            .and_then(|d| expected_outputs(&d, &graph, &data))
            .map_err(|e| format!("not made: {e}")),
        Ok(None) => Err(format!("not made: the program wrote no {API_LOG}")),
        Err(e) => Err(format!("not made: {e}")),
    };
    let (checked, stats) = check_graph(
        dir,
        &graph,
        &data,
        &eval,
        api.as_ref().ok().map(Vec::as_slice),
        opts.check,
    );
    report.api = match (api, stats) {
        (Err(e), _) => Err(e),
        (Ok(_), Some(stats)) => Ok(stats),
        (Ok(_), None) => Err(match checked.verdict {
            Verdict::AllUnknown { .. } => "not made: no output element to compare".into(),
            _ => "not made: the programs do not compute their own graph".into(),
        }),
    };
    judge(&mut report, checked);
    if report.api.is_ok()
        && report
            .outcome
            .as_ref()
            .is_some_and(|o| o.kind == Kind::Mismatch)
    {
        report.detail = format!(
            "{} (against what the API calls ask; the programs compute the compiler's own graph)",
            report.detail
        );
    }
    if opts.write_weights {
        if let Err(e) = write_weight_files(dir, &graph, &data) {
            report
                .notes
                .push(format!("the weight files were not written: {e}"));
        }
    }
    report
}

/// Counts of what the graph holds.
fn describe(graph: &ModelGraph, report: &mut ModelReport) {
    let mut ops = std::collections::BTreeMap::<String, u64>::new();
    for op in &graph.ops {
        let name = match &op.kind {
            OpKind::Alu { alu, .. } => format!("alu {alu}"),
            _ => op.name(),
        };
        *ops.entry(name).or_default() += 1;
    }
    report.operations = ops.into_iter().collect();
    report.matrices = graph.matrices.len();
    report.matrix_tiles = graph.matrices.iter().map(|m| m.tiles.len()).sum();
    report.weights = graph
        .matrices
        .iter()
        .map(|m| m.shape.dims().iter().map(|&d| d as u64).product::<u64>())
        .sum();
    report.input_elements = graph.inputs.iter().map(|t| t.shape.elements()).sum();
    report.output_elements = graph.outputs.iter().map(|t| t.shape.elements()).sum();
    report.tiles = graph.tiles;
}

/// The verdict of a check, from its outcome's kind.
fn judge(report: &mut ModelReport, checked: Checked) {
    let outcome = check_outcome(Tree::Plain, checked);
    report.verdict = match outcome.kind {
        Kind::Pass => UserVerdict::Agree,
        Kind::Unsupported | Kind::OutOfSteps => UserVerdict::NoVerdict,
        _ => UserVerdict::Finding,
    };
    report.detail = match &outcome.signature {
        Some(s) => format!("{s}: {}", outcome.detail),
        None => format!("{}: {}", outcome.kind, outcome.detail),
    };
    report.outcome = Some(outcome);
}

/// The report's one line, from its models.
fn summary_reason(models: &[ModelReport]) -> String {
    models
        .iter()
        .map(|m| format!("`{}`: {}", m.model, m.detail))
        .collect::<Vec<_>>()
        .join("; ")
}
