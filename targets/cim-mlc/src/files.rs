//! The files of a CIM-MLC finding, written into the directory the engine's one finding writer
//! builds:
//!
//! - `model.onnx`, `arch.py`, `case.json`: exactly what CIM-MLC read (the driver's case);
//! - `case-description.json`: the network, the setting and the seed as pimdiff describes them
//!   (what `pimdiff repro` rebuilds the reference from);
//! - `flows/`: the meta-operator flows, `layout.json` and `origins.json` CIM-MLC wrote, when it wrote them;
//! - `check.json`: every granularity's verdict on the machine (the first wrong meta-operator
//!   and its line, or the fault), when the network compiled;
//! - `report.md`: what went wrong where, the network, and two ways to reproduce it: `pimdiff
//!   repro DIR` and CIM-MLC's own `main.py` on the saved files.
//!
//! `finding.json` gets a crash's frames (innermost first, `file:line function` in CIM-MLC's
//! sources) and message, and in `details` the tree, the pinning and what the driver pinned.

use std::fmt::Write as _;
use std::path::Path;

use pimdiff_atomic::Error;
use pimdiff_engine::finding::{to_json_text, write_new, FindingMeta, Signature};
use serde::{Deserialize, Serialize};

use crate::case::{CaseContext, CaseRun, CimCase};
use crate::driver::Compile;
use crate::network::Src;

/// The file `pimdiff repro` reads the case from.
pub const DESCRIPTION: &str = "case-description.json";

/// What a finding directory is written from.
#[derive(Clone, Debug)]
pub struct Evidence {
    pub signature: Signature,
    /// Whether the saved case's run shows the signature.
    pub reproduced: bool,
    /// The saved case's run.
    pub run: CaseRun,
}

/// `finding.json`'s `details` of a CIM-MLC finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CimDetails {
    /// The tree the finding was found with, its key and patches.
    pub tree: std::path::PathBuf,
    pub tree_key: String,
    #[serde(default)]
    pub patches: Vec<String>,
    /// The API level, hence the granularities checked.
    pub api: String,
    /// The environment the driver ran in, and what it pinned itself (seeds, threads,
    /// versions).
    pub pinning: pimdiff_engine::process::Pinning,
    #[serde(default)]
    pub pinned: serde_json::Value,
    /// Whether the saved case still showed the signature when it was written.
    pub reproduced: bool,
    pub compile_seconds: f64,
}

/// Writes the finding's files into `dir` and fills `meta`'s CIM-MLC fields.
pub fn write_files(
    ctx: &CaseContext,
    dir: &Path,
    case: &CimCase,
    evidence: &Evidence,
    meta: &mut FindingMeta,
) -> Result<(), Error> {
    let run = &evidence.run;
    if let Some(files) = &run.files {
        write_new(&dir.join("model.onnx"), &files.model)?;
        write_new(&dir.join("arch.py"), files.arch_py.as_bytes())?;
        write_new(&dir.join("case.json"), files.case_json.as_bytes())?;
    }
    write_new(&dir.join(DESCRIPTION), to_json_text(case).as_bytes())?;
    if let Some(Compile::Compiled(out)) = run.compile.as_ref().map(|c| &c.result) {
        let flows = dir.join("flows");
        std::fs::create_dir(&flows).map_err(|source| Error::Io {
            path: flows.clone(),
            source,
        })?;
        for (level, text) in &out.flows {
            write_new(&flows.join(level.file()), text.as_bytes())?;
        }
        write_new(&flows.join("layout.json"), out.layout.as_bytes())?;
        if !out.origins.is_empty() {
            write_new(&flows.join("origins.json"), out.origins.as_bytes())?;
        }
    }
    if let Some(check) = &run.check {
        write_new(&dir.join("check.json"), to_json_text(check).as_bytes())?;
    }
    if let Some(Compile::Exception(e)) = run.compile.as_ref().map(|c| &c.result) {
        meta.frames = e
            .frames
            .iter()
            .rev()
            .map(|f| format!("{}:{} {}", f.file, f.line, f.function))
            .collect();
        meta.message = Some(format!("{}: {}", e.kind, e.message));
    }
    let details = CimDetails {
        tree: ctx.tree.dir.clone(),
        tree_key: ctx.tree.key.clone(),
        patches: ctx.tree.patches.clone(),
        api: case.setting.arch.api.name().to_string(),
        pinning: crate::driver::pinning(),
        pinned: run
            .compile
            .as_ref()
            .map_or(serde_json::Value::Null, |c| c.pinned.clone()),
        reproduced: evidence.reproduced,
        compile_seconds: run.compile.as_ref().map_or(0.0, |c| c.seconds),
    };
    meta.details = serde_json::to_value(&details).unwrap_or_default();
    write_new(
        &dir.join("report.md"),
        report(ctx, case, evidence).as_bytes(),
    )
}

/// `report.md` (see the module docs).
pub fn report(ctx: &CaseContext, case: &CimCase, evidence: &Evidence) -> String {
    let mut r = String::new();
    let run = &evidence.run;
    let _ = writeln!(r, "# {}\n", evidence.signature);
    for o in run
        .outcomes
        .iter()
        .filter(|o| o.signature.as_ref() == Some(&evidence.signature))
    {
        let _ = writeln!(r, "{}\n", o.detail);
    }
    if !evidence.reproduced {
        let _ = writeln!(
            r,
            "**Note**: the saved case no longer showed this signature when it was written \
             (it came to: {}).\n",
            run.kind()
        );
    }
    report_what_happened(&mut r, run);
    report_network(&mut r, case);
    let tree = ctx.tree.dir.display();
    let _ = writeln!(r, "## Reproduce\n");
    let _ = writeln!(
        r,
        "In this directory:\n\n```sh\npimdiff repro . --cim-mlc-dir {tree}   # exit 1 while it shows, 0 once fixed\n```\n"
    );
    let ifm: Vec<String> = case.ifmsize().iter().map(|d| d.to_string()).collect();
    let _ = writeln!(
        r,
        "With CIM-MLC's own, unchanged `main.py` (the architecture must become \
         `configs/example_config.py`: main.py reads the API level from there), in this \
         directory:\n\n```sh\nTREE={tree}\nW=$(mktemp -d) && cp -R \"$TREE/src/.\" \"$W/\" && \
         cp arch.py \"$W/configs/example_config.py\" &&\n(cd \"$W\" && \"$TREE/python\" main.py \
         -onnx_model_path \"$OLDPWD/model.onnx\" --ifmsize {} --input_precision {} \
         --weight_precision {} --arch_config_module configs.example_config --output_dir \
         \"$OLDPWD/main-out\")\n```\n",
        ifm.join(" "),
        case.setting.input_precision,
        case.setting.weight_precision
    );
    r
}

fn report_what_happened(r: &mut String, run: &CaseRun) {
    let _ = writeln!(r, "## What CIM-MLC did\n");
    match run.compile.as_ref().map(|c| &c.result) {
        Some(Compile::Exception(e)) => {
            let _ = writeln!(r, "It raised `{}`: {}\n", e.kind, e.message.trim());
            let _ = writeln!(r, "Traceback in CIM-MLC's sources (innermost last):\n");
            for f in &e.frames {
                let _ = writeln!(r, "- `{}:{}` in `{}`", f.file, f.line, f.function);
            }
            let _ = writeln!(r);
        }
        Some(Compile::Compiled(out)) => {
            let levels: Vec<&str> = out.flows.keys().map(|l| l.name()).collect();
            let _ = writeln!(
                r,
                "It compiled the network into flows at the {} level(s) (`flows/`).\n",
                levels.join(", ")
            );
            if let Some(check) = &run.check {
                r.push_str(&check.report());
            }
        }
        Some(other) => {
            let _ = writeln!(r, "{other:?}\n");
        }
        None => {}
    }
}

fn report_network(r: &mut String, case: &CimCase) {
    let net = &case.network;
    let shapes = net.shapes().unwrap_or_default();
    let _ = writeln!(r, "## The network\n");
    let _ = writeln!(r, "Input `input` {:?}.\n", net.input);
    let _ = writeln!(
        r,
        "| node | operator | reads | output shape |\n|---|---|---|---|"
    );
    for (i, n) in net.nodes.iter().enumerate() {
        let reads: Vec<String> = n
            .inputs
            .iter()
            .map(|s| match s {
                Src::Input => "input".to_string(),
                Src::Node(j) => format!("n{j}"),
            })
            .collect();
        let out = if net.outputs.contains(&i) {
            " (output)"
        } else {
            ""
        };
        let _ = writeln!(
            r,
            "| n{i} | `{}` | {} | {:?}{out} |",
            serde_json::to_string(&n.op).unwrap_or_default(),
            reads.join(", "),
            shapes.get(i).cloned().unwrap_or_default()
        );
    }
    let a = &case.setting.arch;
    let _ = writeln!(
        r,
        "\nArchitecture (`arch.py`): API {}, {}x{} cores of {}x{} crossbars of {}x{} cells \
         ({} bit each, {} rows at once), global buffer {:?}; input precision {}, weight \
         precision {}; data seed {}.\n",
        a.api.name(),
        a.cores[0],
        a.cores[1],
        a.crossbars[0],
        a.crossbars[1],
        a.crossbar_size[0],
        a.crossbar_size[1],
        a.cell_bits,
        a.max_rows,
        a.global_buffer,
        case.setting.input_precision,
        case.setting.weight_precision,
        case.seed
    );
}
