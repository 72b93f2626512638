//! The files of a PUMA finding, written into the directory the engine's one finding writer
//! builds (`finding::write_finding`):
//!
//! - `network.json` (the minimized network), `original-network.json`;
//! - `network.txt`, `weights.txt`: the driver's two files, exactly as compiled;
//! - `model.cpp` and `build.sh`: the same API calls as a standalone program, built and run
//!   against the finding's tree (ASLR off, and the sanitizer options for a sanitizer
//!   finding); its heap differs from the driver's, so a finding that depends on the heap's
//!   order may not show there (`docs/puma.md`, "Heap order");
//! - `compiler/`: the compile's `stdout.txt` and `stderr.txt`, and for a finding of the
//!   compiled programs (mismatch, fault, deadlock, compile error) everything the compiler
//!   wrote (tile and core programs, MVMU weights, placement, report);
//! - `check.json`: the machine's check (verdict, localization, run outcome) when there was one;
//! - `report.md`, with the one-line `pimdiff repro DIR`.
//!
//! `finding.json` gets the frames, message and sanitizer of a crash or abort, and in
//! `details` the tree, the quirks, the pinning, the data seed and the injection, which
//! `pimdiff repro` reads back ([`super::repro`]).

use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use pimdiff_atomic::Error;
use serde::{Deserialize, Serialize};

use super::case::{CaseContext, PumaCase, TreeRun};
use super::check::Verdict;
use super::compile::{command_line, Tree, ASAN_OPTIONS, UBSAN_OPTIONS};
use super::driver_input::{NETWORK_FILE, WEIGHTS_FILE};
use super::inject::Injection;
use super::model_cpp::model_cpp;
use super::network::PumaNetwork;
use pimdiff_engine::coverage::edge_map::EDGE_MAP_FILE;
use pimdiff_engine::finding::{to_json_text, write_new, Expectation, FindingMeta, Kind, Signature};
use pimdiff_engine::process::Pinning;

/// What a finding directory is written from.
#[derive(Clone, Debug)]
pub struct Evidence {
    pub signature: Signature,
    pub case_seed: u64,
    /// The network before minimization.
    pub original: PumaNetwork,
    /// Whether the saved case's run shows the signature (else `run` is the plain tree's run
    /// of it, showing something else).
    pub reproduced: bool,
    /// The saved case's run in the tree that shows the finding.
    pub run: TreeRun,
}

/// `finding.json`'s `details` of a PUMA finding (read back by `pimdiff repro`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PumaDetails {
    /// The tree the finding shows in.
    pub tree: Tree,
    /// The trees at the time (plain and sanitizer), for `pimdiff repro`.
    pub plain_dir: PathBuf,
    #[serde(default)]
    pub sanitize_dir: Option<PathBuf>,
    /// `compiler` or `simulator`: the machine's semantics of the check.
    pub quirks: String,
    /// Fractional bits of the machine's words (0: words read as integers).
    pub frac_bits: u32,
    /// The seed of the case's data (inputs and weights): `network_data(network, seed)`.
    pub data_seed: u64,
    /// What the compile ran under.
    #[serde(default)]
    pub pinning: Option<Pinning>,
    /// The injected miscompilation of the hunt (tests of the set-up).
    #[serde(default)]
    pub inject: Option<Injection>,
    /// Whether the saved case still showed the signature when it was written.
    pub reproduced: bool,
    /// Seconds the compile took.
    pub compile_seconds: f64,
    /// The command that compiles `network.txt` and `weights.txt` again by hand.
    pub driver_command: String,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether a finding of `kind` is about the compiled programs (their files are saved).
fn about_programs(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Mismatch | Kind::Fault | Kind::Deadlock | Kind::CompileError | Kind::OutOfSteps
    )
}

/// `build.sh` for a finding of `tree`: builds `model.cpp` against the tree (`$PUMA_DIR`,
/// by default the finding's) and runs it with ASLR off, as the hunt ran the driver.
pub fn build_script(default_tree: &Path, tree: Tree) -> String {
    let sanitizer = match tree {
        Tree::Plain => String::new(),
        Tree::Sanitize => {
            format!("export ASAN_OPTIONS={ASAN_OPTIONS} UBSAN_OPTIONS={UBSAN_OPTIONS}\n")
        }
    };
    format!(
        "#!/bin/sh\n\
         # Builds model.cpp against the PUMA compiler's {} tree and runs it here, with\n\
         # address-space randomization off; the compiler writes its programs, weights and\n\
         # placement next to this script. The exit status is the model's.\n\
         #   PUMA_DIR=<tree of scripts/build-puma.sh> ./build.sh\n\
         set -eu\n\
         PUMA_DIR=\"${{PUMA_DIR:-{}}}\"\n\
         cd \"$(dirname \"$0\")\"\n\
         flags=$(cat \"$PUMA_DIR/cxxflags\" 2>/dev/null || echo -g)\n\
         g++ -std=c++11 $flags -I\"$PUMA_DIR/include\" model.cpp -L\"$PUMA_DIR/src\" -lpuma \\\n    \
         -Wl,-rpath,\"$PUMA_DIR/src\" -o model\n\
         {sanitizer}exec setarch \"$(uname -m)\" -R ./model\n",
        tree.name(),
        default_tree.display()
    )
}

/// Writes the finding's files into `dir` and fills `meta`'s PUMA fields.
pub fn write_files(
    ctx: &CaseContext,
    dir: &Path,
    case: &PumaCase,
    evidence: &Evidence,
    meta: &mut FindingMeta,
) -> Result<(), Error> {
    let outcome = &evidence.run.outcome;
    let tree = outcome.tree;
    write_new(&dir.join("network.json"), case.network.to_json().as_bytes())?;
    write_new(
        &dir.join("original-network.json"),
        evidence.original.to_json().as_bytes(),
    )?;
    let prepared = ctx.prepare(case).ok();
    let compile_dir = evidence
        .run
        .compile
        .as_ref()
        .map(|c| c.path().to_path_buf());
    for (name, text) in [
        (
            NETWORK_FILE,
            prepared.as_ref().map(|p| p.network_text.as_str()),
        ),
        (
            WEIGHTS_FILE,
            prepared.as_ref().map(|p| p.weights_text.as_str()),
        ),
    ] {
        let saved = compile_dir
            .as_ref()
            .and_then(|d| std::fs::read(d.join(name)).ok());
        match (saved, text) {
            (Some(bytes), _) => write_new(&dir.join(name), &bytes)?,
            (None, Some(t)) => write_new(&dir.join(name), t.as_bytes())?,
            (None, None) => {}
        }
    }
    let tree_dir = ctx.setup.tree(tree).unwrap_or(&ctx.setup.plain);
    write_new(
        &dir.join("model.cpp"),
        model_cpp(&case.network, prepared.as_ref().map(|p| &p.data)).as_bytes(),
    )?;
    let script = dir.join("build.sh");
    write_new(&script, build_script(tree_dir, tree).as_bytes())?;
    // Run as `./build.sh`, as the report and the script's own comment say.
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).map_err(
        |source| Error::Io {
            path: script,
            source,
        },
    )?;
    save_compile(dir, &evidence.run, about_programs(outcome.kind))?;
    if let Some(checked) = &outcome.checked {
        write_new(&dir.join("check.json"), to_json_text(checked).as_bytes())?;
    }
    // A mismatch signed by its cause (a repair's name): what a rerun shows is the operation's
    // signature (`mismatch: conv`), and that is what replay expects.
    if let Some(observed) = outcome
        .signature
        .as_ref()
        .filter(|s| **s != evidence.signature)
    {
        meta.expect = Expectation::Signature(observed.to_string());
    }
    meta.frames = outcome.frames.iter().map(|f| f.text()).collect();
    meta.suspects = suspects(outcome.checked.as_ref());
    meta.message = outcome.message.clone();
    meta.sanitizer = outcome.sanitizer.clone();
    let details = PumaDetails {
        tree,
        plain_dir: ctx.setup.plain.clone(),
        sanitize_dir: ctx.setup.sanitize.clone(),
        quirks: ctx.check.quirks_name().to_string(),
        frac_bits: 0,
        data_seed: case.seed,
        pinning: evidence.run.compile.as_ref().map(|c| c.pinning.clone()),
        inject: ctx.inject,
        reproduced: evidence.reproduced,
        compile_seconds: evidence.run.compile.as_ref().map_or(0.0, |c| c.seconds),
        driver_command: command_line(&ctx.setup, tree),
    };
    meta.details = serde_json::to_value(&details).unwrap_or_default();
    write_new(
        &dir.join("report.md"),
        render_report(case, evidence, &details, meta).as_bytes(),
    )
}

/// The instructions of a mismatch's localization, the computing one first: `{tile, core,
/// pc, op, why}`.
fn suspects(checked: Option<&super::check::Checked>) -> Vec<serde_json::Value> {
    let Some(Verdict::Mismatch(m)) = checked.map(|c| &c.verdict) else {
        return Vec::new();
    };
    let root = m.root();
    let Some(slice) = &root.slice else {
        return Vec::new();
    };
    let why = format!(
        "the first wrong element {:?} of `{}` (values[{}], {}) came from it",
        root.index, root.output, root.value, root.op
    );
    let computing = |t: &str| ["mvm(", "alu(", "alui("].iter().any(|p| t.starts_with(p));
    let mut steps: Vec<&super::localize::SliceStep> = slice.steps.iter().rev().collect();
    steps.sort_by_key(|s| !computing(&s.text));
    steps
        .into_iter()
        .take(8)
        .map(|s| {
            serde_json::json!({
                "tile": s.tile, "core": s.core, "pc": s.pc, "op": s.text, "why": why,
            })
        })
        .collect()
}

/// `compiler/`: the streams, and with `programs` every file the compiler wrote.
fn save_compile(dir: &Path, run: &TreeRun, programs: bool) -> Result<(), Error> {
    let Some(compile) = &run.compile else {
        return Ok(());
    };
    let out = dir.join("compiler");
    std::fs::create_dir_all(&out).map_err(io_err(&out))?;
    write_new(&out.join("stdout.txt"), compile.stdout.as_bytes())?;
    write_new(&out.join("stderr.txt"), compile.stderr.as_bytes())?;
    if !programs {
        return Ok(());
    }
    let entries = std::fs::read_dir(compile.path()).map_err(io_err(compile.path()))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        // The edge map of a --coverage hunt is the harness's, not the compiler's output.
        .filter(|n| n != NETWORK_FILE && n != WEIGHTS_FILE && n != EDGE_MAP_FILE)
        .collect();
    names.sort();
    for name in names {
        let from = compile.path().join(&name);
        let bytes = std::fs::read(&from).map_err(io_err(&from))?;
        write_new(&out.join(&name), &bytes)?;
    }
    Ok(())
}

/// `report.md`.
fn render_report(
    case: &PumaCase,
    evidence: &Evidence,
    details: &PumaDetails,
    meta: &FindingMeta,
) -> String {
    let o = &evidence.run.outcome;
    let mut t = String::new();
    let _ = writeln!(t, "# PUMA finding: `{}`\n", evidence.signature);
    let _ = writeln!(t, "{}\n", o.detail);
    if evidence.signature.kind == Kind::Mismatch
        && !super::case::is_op_signature(&evidence.signature.detail)
    {
        let _ = writeln!(
            t,
            "**Cause**: the compiled program checks exactly once `{}` is applied to it (every \
             instruction of that opcode or kind, or those that computed the wrong elements; \
             `targets/puma/src/repair.rs`): the compiler writes those instructions wrong the \
             same way wherever it writes them. The run's own signature is `{}`.\n",
            evidence.signature.detail,
            o.signature
                .as_ref()
                .map_or("-".to_string(), |s| s.to_string())
        );
    }
    let _ = writeln!(
        t,
        "Reproduce: `pimdiff repro DIR` (this directory; exit 1 while it reproduces), or by \
         hand in a copy of this directory: `{}`; standalone: `./build.sh` (`model.cpp`).\n",
        details.driver_command
    );
    if !evidence.reproduced {
        let _ = writeln!(
            t,
            "**Note**: the saved network did not show the signature again when it was saved \
             (its run: {}: {}).\n",
            o.kind, o.detail
        );
    }
    let n = &case.network;
    let _ = writeln!(
        t,
        "- tree: {} (`{}`), checked under {} semantics, words read as integers (frac_bits 0)",
        details.tree.name(),
        details.plain_dir.display(),
        details.quirks
    );
    let _ = writeln!(
        t,
        "- network: {} inputs, {} matrices, {} values, {} outputs (from {} values); data seed {}",
        n.inputs.len(),
        n.matrices.len(),
        n.values.len(),
        n.outputs.len(),
        evidence.original.values.len(),
        case.seed
    );
    if let Some(p) = &details.pinning {
        let _ = writeln!(
            t,
            "- pinned: ASLR {}, environment fixed, preload {:?}",
            if p.aslr_disabled { "off" } else { "on" },
            p.preload
        );
    }
    if let Some(i) = details.inject {
        let _ = writeln!(t, "- injected miscompilation: {}", i.name());
    }
    if let Some(s) = &meta.sanitizer {
        let _ = writeln!(t, "- reported by {s}");
    }
    if !meta.frames.is_empty() {
        let _ = writeln!(t, "\n## Frames\n");
        for f in meta.frames.iter().take(16) {
            let _ = writeln!(t, "- `{f}`");
        }
    }
    if let Some(checked) = &o.checked {
        render_check(&mut t, checked);
    }
    let _ = writeln!(t, "\n## Network\n\n```json\n{}\n```", n.to_json());
    t
}

fn render_check(t: &mut String, checked: &super::check::Checked) {
    let _ = writeln!(t, "\n## The machine's check\n\nRun: {}\n", checked.run);
    if !checked.instruction_memory_overflows.is_empty() {
        let _ = writeln!(
            t,
            "Programs longer than the simulator's instruction memory (run anyway): {}\n",
            checked.instruction_memory_overflows.join(", ")
        );
    }
    if let Verdict::Mismatch(m) = &checked.verdict {
        render_mismatch(t, m, "First wrong output");
        if let Some(p) = &m.probe {
            let _ = writeln!(
                t,
                "\n### The first wrong value\n\nCompiled again with every value as an output \
                 (a probe), the first wrong value is values[{}] ({}):\n",
                p.value, p.op
            );
            render_mismatch(t, p, "First wrong value");
        }
    }
}

fn render_mismatch(t: &mut String, m: &super::check::Mismatch, title: &str) {
    {
        let _ = writeln!(
            t,
            "{title} `{}` ({}): {} of {} known elements wrong ({} of {} over all \
             outputs). Element {:?} (tile {} word {}) is {}, expected {}; written by {}, \
             value stored by {}.\n",
            m.output,
            m.op,
            m.wrong,
            m.known,
            m.total_wrong,
            m.total_known,
            m.index,
            m.tile,
            m.address,
            m.actual.map_or("nothing".to_string(), |v| v.to_string()),
            m.expected,
            m.writer.as_deref().unwrap_or("nothing"),
            m.origin.as_deref().unwrap_or("nothing")
        );
        if let Some(s) = &m.slice {
            let _ = writeln!(
                t,
                "The instructions it came from (computed by `{}`):\n",
                s.computed_by
            );
            for step in &s.steps {
                let _ = writeln!(
                    t,
                    "- tile {} core {} pc {}: `{}`",
                    step.tile, step.core, step.pc, step.text
                );
            }
        }
        let _ = writeln!(t, "\n| element | expected | actual |\n|---|---|---|");
        for (i, e, a) in &m.sample {
            let _ = writeln!(
                t,
                "| {i:?} | {e} | {} |",
                a.map_or("—".to_string(), |v| v.to_string())
            );
        }
    }
}
