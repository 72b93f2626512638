//! `pimdiff hunt --target pimcomp-nn`: the network generator's output format, minimization,
//! and whole hunts against a fake PIMCOMP-NN (tests/fixtures/pimcomp-fake/PIMCOMP-NN) with an
//! injected crash and an injected miscompilation. A last test runs the real binary when
//! `PIMCOMP_NN_BIN` names one, and skips with a message otherwise.

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::sync::Arc;

use pimdiff::engine::{
    run_hunt, HuntConfig, HuntControl, HuntSummary, Limit, MinimizeConfig, Shard,
};
use pimdiff::finding::{FindingMeta, Kind, Signature};
use pimdiff::targets::pimcomp_nn::case::CaseContext;
use pimdiff::targets::pimcomp_nn::compile::{CompilerSetup, Pipeline};
use pimdiff::targets::pimcomp_nn::network::{
    check_model_json, network_from_seed, NetConfig, NetOp, Network,
};
use pimdiff::targets::pimcomp_nn::reductions::minimize;
use pimdiff::targets::pimcomp_nn::PimcompTarget;
use proptest::prelude::*;

fn fake_bin() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pimcomp-fake/PIMCOMP-NN")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// Every generated network is well formed and its model JSON passes the independent
    /// schema and shape check.
    #[test]
    fn generated_models_pass_the_schema_check(seed in any::<u64>()) {
        let net = network_from_seed(&NetConfig::default(), seed);
        prop_assert!(net.shapes().is_ok(), "{:?}", net.shapes());
        let json = net.to_model_json().unwrap();
        prop_assert_eq!(check_model_json(&json), Ok(()));
        // Node 0 is the input; only the last node has no consumers.
        let input_first = matches!(net.nodes[0].op, NetOp::Input { .. });
        prop_assert!(input_first);
    }
}

#[test]
fn generator_reaches_the_edges() {
    let cfg = NetConfig::default();
    let nets: Vec<Network> = (0..400).map(|s| network_from_seed(&cfg, s)).collect();
    let has = |f: &dyn Fn(&NetOp) -> bool| nets.iter().any(|n| n.nodes.iter().any(|x| f(&x.op)));
    assert!(has(&|op| matches!(op, NetOp::Input { channels: 3, .. })));
    assert!(has(
        &|op| matches!(op, NetOp::Conv(c) if c.group > 1 && c.group == c.out_channels)
    ));
    assert!(has(
        &|op| matches!(op, NetOp::Conv(c) if c.out_channels == 128)
    ));
    assert!(has(
        &|op| matches!(op, NetOp::Conv(c) if c.pads[0] != c.pads[1])
    ));
    assert!(has(&|op| matches!(op, NetOp::Pool(p) if p.global)));
    assert!(has(&|op| matches!(op, NetOp::Pool(p) if p.max)));
    for op in [
        NetOp::Concat,
        NetOp::Add,
        NetOp::Relu,
        NetOp::Lrn,
        NetOp::Dropout,
    ] {
        assert!(has(&|x| *x == op), "{op:?}");
    }
    assert!(has(&|op| matches!(op, NetOp::Fc { .. })));
    assert!(has(&|op| matches!(op, NetOp::Clip { .. })));
    assert!(has(&|op| matches!(op, NetOp::Softmax)));
    assert!(has(&|op| matches!(op, NetOp::Reshape)));
    assert!(has(&|op| matches!(op, NetOp::Flatten)));
    // Concats whose operands are not listed in node order, and dense-style concats that join
    // the branch point itself with features computed from it.
    let concats = || {
        nets.iter()
            .flat_map(|n| n.nodes.iter().map(move |x| (n, x)))
            .filter(|(_, x)| x.op == NetOp::Concat)
    };
    assert!(concats().any(|(_, x)| x.inputs.windows(2).any(|w| w[0] > w[1])));
    assert!(concats().any(|(n, x)| x
        .inputs
        .iter()
        .any(|&i| x.inputs.iter().any(|&j| n.nodes[j].inputs.contains(&i)))));
}

#[test]
fn schema_check_names_the_broken_field() {
    let json = network_from_seed(&NetConfig::default(), 5)
        .to_model_json()
        .unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    doc["node_list"][1]["output_dim"][1] = serde_json::json!(999);
    let err = check_model_json(&doc.to_string()).unwrap_err();
    assert!(err.starts_with("node 1: output_dim [1, 999,"), "{err}");
    doc["node_list"][1]["index"] = serde_json::json!(7);
    assert_eq!(
        check_model_json(&doc.to_string()),
        Err("node 1: index is not its position".to_string())
    );
}

/// Minimization keeps the signature (here: a predicate standing in for one) and reaches the
/// smallest network that has it.
#[test]
fn minimization_keeps_the_signature() {
    let cfg = NetConfig::default();
    let net = (0..200)
        .map(|s| network_from_seed(&cfg, s))
        .find(|n| n.nodes.len() >= 6 && n.nodes.iter().any(|x| x.op == NetOp::Add))
        .expect("a network with a residual add");
    let has_add = |n: &Network| n.nodes.iter().any(|x| x.op == NetOp::Add);
    let (small, stats) = minimize(&net, None, 10_000, has_add);
    assert!(has_add(&small));
    assert!(small.shapes().is_ok());
    assert!(!stats.cut_short);
    // input, one conv feeding the add, and the add (its other operand is the input).
    assert_eq!(small.nodes.len(), 3, "{small}");
    assert_eq!(small.size().1, 1, "channels shrink to 1: {small}");
}

fn fake_config(out: &Path, cases: u64, jobs: usize) -> (HuntConfig, PimcompTarget) {
    let cfg = HuntConfig {
        seed: 3,
        limit: Limit::Cases(cases),
        jobs,
        shard: Shard::ALL,
        // The run cap, not the clock, ends minimization here, so that a loaded machine
        // cannot cut one hunt's minimization shorter than the other's.
        minimize: MinimizeConfig {
            time_budget: Duration::from_secs(3600),
            max_steps: 400,
        },
        max_unsupported: None,
        out: out.to_path_buf(),
    };
    let target = PimcompTarget {
        cases: CaseContext {
            net: NetConfig::default(),
            setup: CompilerSetup::locate(Some(&fake_bin()), Duration::from_secs(20), 1 << 32)
                .unwrap(),
            pipelines: vec![Pipeline::Element],
        },
    };
    (cfg, target)
}

fn hunt((cfg, target): (HuntConfig, PimcompTarget)) -> HuntSummary {
    run_hunt(&cfg, Arc::new(target), &HuntControl::default()).unwrap()
}

fn stable(s: &HuntSummary) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap();
    for k in ["cases_per_second", "sweep_time_s", "wall_time_s", "jobs"] {
        v[k] = serde_json::Value::Null;
    }
    v
}

/// A finding's `finding.json`.
fn meta(dir: &Path) -> FindingMeta {
    serde_json::from_str(&std::fs::read_to_string(dir.join("finding.json")).unwrap()).unwrap()
}

#[test]
fn fake_compiler_crash_and_miscompilation_are_each_reported_once_minimized() {
    let tmp = tempfile::tempdir().unwrap();
    let s = hunt(fake_config(tmp.path(), 30, 2));
    let sigs: Vec<&str> = s.findings.iter().map(|f| f.signature.as_str()).collect();
    assert_eq!(
        sigs.iter().filter(|s| s.starts_with("crash: ")).count(),
        1,
        "{sigs:?}"
    );
    assert!(
        sigs.contains(&"crash: element/SIGSEGV/no-frames"),
        "{sigs:?}"
    );
    let mismatches: Vec<&&str> = sigs
        .iter()
        .filter(|s| s.starts_with("mismatch: "))
        .collect();
    assert_eq!(mismatches.len(), 1, "{sigs:?}");
    assert_eq!(s.findings.len(), 2, "{sigs:?}");
    assert_eq!(s.cases_run, 30);
    for f in &s.findings {
        let dir = tmp.path().join(&f.dir);
        let details = meta(&dir).details;
        assert_eq!(details["reproduced"], true, "{}", f.signature);
        assert_eq!(meta(&dir).target.as_deref(), Some("pimcomp-nn"));
        let model = std::fs::read_to_string(dir.join("model.json")).unwrap();
        assert_eq!(check_model_json(&model), Ok(()));
        let net: Network =
            serde_json::from_str(&std::fs::read_to_string(dir.join("network.json")).unwrap())
                .unwrap();
        let marker = if f.outcome == Kind::Crash {
            "OP_ELTWISE"
        } else {
            "OP_POOL"
        };
        assert!(model.contains(marker), "{}", f.signature);
        // The smallest networks with the marker: input → pool (2), input → conv → add (3).
        let want = if f.outcome == Kind::Crash { 3 } else { 2 };
        assert_eq!(net.nodes.len(), want, "{}:\n{net}", f.signature);
        for file in [
            "report.md",
            "repro.sh",
            "outcome.json",
            "original-model.json",
            "compiler/stdout.txt",
        ] {
            assert!(dir.join(file).is_file(), "{file}");
        }
        // One pipeline: its compile directly under compiler/.
        assert_eq!(
            details["pipelines"],
            serde_json::json!([details["pipeline"]])
        );
        assert!(!dir.join("compiler/element").exists());
    }
    let mismatch = s
        .findings
        .iter()
        .find(|f| f.outcome == Kind::Mismatch)
        .unwrap();
    let check = tmp.path().join(&mismatch.dir).join("check");
    assert!(check.join("report.md").is_file());
    // The check names the program's saved copy, not the removed compile tree.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(check.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["program"], "compiler/SimulationInfo.gz");
    // No early (unminimized) directories remain.
    let names: Vec<String> = std::fs::read_dir(tmp.path().join("findings"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| n.starts_with("00")), "{names:?}");
    assert!(tmp.path().join("summary.md").is_file());

    // Same seed, one job: the same summary apart from timing.
    let tmp1 = tempfile::tempdir().unwrap();
    let s1 = hunt(fake_config(tmp1.path(), 30, 1));
    assert_eq!(stable(&s1)["findings"], stable(&s)["findings"]);
    assert_eq!(stable(&s1)["outcomes"], stable(&s)["outcomes"]);
}

#[test]
fn missing_binary_is_a_clear_error() {
    let err = CompilerSetup::locate(
        Some(Path::new("/nonexistent/PIMCOMP-NN")),
        Duration::from_secs(1),
        1,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "/nonexistent/PIMCOMP-NN: not an executable file"
    );
}

/// The real compiler, when `PIMCOMP_NN_BIN` names a build of scripts/build-pimcomp.sh.
#[test]
fn real_pimcomp_hunt_runs_when_built() {
    let Some(bin) = std::env::var_os("PIMCOMP_NN_BIN").filter(|b| Path::new(b).is_file()) else {
        eprintln!("skipped: PIMCOMP_NN_BIN is not set to a PIMCOMP-NN binary (scripts/build-pimcomp.sh builds one)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (mut cfg, mut target) = fake_config(tmp.path(), 3, 2);
    target.cases.setup =
        CompilerSetup::locate(Some(Path::new(&bin)), Duration::from_secs(60), 8 << 30).unwrap();
    target.cases.pipelines = vec![Pipeline::Batch, Pipeline::Element];
    cfg.minimize.time_budget = Duration::from_secs(5);
    let s = hunt((cfg, target));
    assert_eq!(s.cases_run, 3);
    assert_eq!(s.outcomes.values().sum::<u64>(), 3);
}

/// The recorded findings under tests/fixtures/pimcomp-replay/: each `<name>.json` holds the
/// signature, the case seed (the check's seed), the original network and the minimized one; the
/// replaying PIMCOMP-NN beside it serves the real compiler's outputs for every network of the
/// minimization path.
#[derive(serde::Deserialize)]
struct RecordedFinding {
    #[serde(deserialize_with = "signature")]
    signature: Signature,
    case_seed: u64,
    original: Network,
    minimized: Network,
}

/// A signature written as its display form.
fn signature<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Signature, D::Error> {
    let text = <String as serde::Deserialize>::deserialize(d)?;
    text.parse().map_err(serde::de::Error::custom)
}

fn replay_context() -> CaseContext {
    let bin =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pimcomp-replay/PIMCOMP-NN");
    CaseContext {
        net: NetConfig::default(),
        setup: CompilerSetup::locate(Some(&bin), Duration::from_secs(20), 1 << 32).unwrap(),
        pipelines: vec![Pipeline::Batch, Pipeline::Element],
    }
}

fn recorded(name: &str) -> RecordedFinding {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pimcomp-replay")
        .join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Minimizing the recorded original again, against the recorded compiles, takes the same path
/// to the same network, every kept step shows the signature, and the minimized network's
/// recorded compile still gives exactly that signature under today's check.
fn minimization_replays(name: &str) {
    let f = recorded(name);
    let ctx = replay_context();
    let mut kept = 0;
    let (small, stats) = minimize(&f.original, None, 400, |cand| {
        let has = ctx
            .run_for_signature(cand, f.case_seed, &f.signature, false)
            .0
            .has(&f.signature);
        kept += u64::from(has);
        has
    });
    assert_eq!(small, f.minimized, "{name}:\n{small}");
    assert!(!stats.cut_short);
    assert_eq!(stats.kept, kept);
    assert!(kept > 0, "{name}: the original was already minimal");
    let (outcome, _) = ctx.run_for_signature(&small, f.case_seed, &f.signature, false);
    assert!(outcome.has(&f.signature), "{name}: {outcome:?}");
    // A network off the recorded path (the original itself) is refused, not judged.
    let (off, _) = ctx.run_for_signature(&f.original, f.case_seed, &f.signature, false);
    assert_eq!(off.kind, Kind::Rejected, "{name}");
}

/// B1 (batch input reuse by a colliding hash): 13 nodes → input and one 1×1 CONV.
#[test]
fn recorded_b1_minimizes_to_the_same_network() {
    minimization_replays("b1-batch-input-reuse");
    let f = recorded("b1-batch-input-reuse");
    assert_eq!(f.original.size(), (13, 6, 3));
    assert_eq!(f.minimized.size(), (2, 1, 3));
}

/// K1 (a core named beyond `core_cnt`): 13 nodes → input, CONV and ELTWISE, one channel.
#[test]
fn recorded_k1_minimizes_to_the_same_network() {
    minimization_replays("k1-element-core-count");
    let f = recorded("k1-element-core-count");
    assert_eq!(f.minimized.size(), (3, 1, 1));
    let ctx = replay_context();
    let (o, mut runs) = ctx.run_for_signature(&f.minimized, f.case_seed, &f.signature, true);
    assert_eq!(o.kind, Kind::CoreCount);
    assert_eq!(
        o.detail,
        "the program names core 2 but its config declares core_cnt = 2 (2 cores used); with \
         core_cnt raised to 3 the numerics check says unsupported: no node could be compared \
         with an informative reference"
    );
    // Its numerics could not be judged: counted among the hunt's reasons, not passed.
    assert_eq!(
        o.unchecked.as_deref(),
        Some("core-count, numerics: no node could be compared with an informative reference")
    );
    // The numerics ran on the raised copy, saved beside the program.
    assert_eq!(runs.len(), 1);
    let (pipeline, run) = runs.pop().unwrap();
    assert_eq!(pipeline, Pipeline::Element);
    assert_eq!(
        run.checked_program(),
        Some(run.output().join("SimulationInfo-core_cnt.gz"))
    );
    let census =
        pimdiff::targets::pimcomp_nn::cores::census(&run.checked_program().unwrap()).unwrap();
    assert_eq!(census.core_cnt, 3);
    assert!(!census.beyond());
}

/// X1 (element mode drops the last node's fused ReLU), found by the cross-mode check: the
/// recorded batch and element compiles of its minimized network (input and one CONV with a
/// fused ReLU) are each exact against their own pipeline's reference, yet differ.
#[test]
fn recorded_x1_is_a_cross_mode_finding() {
    let f = recorded("x1-cross-mode");
    assert_eq!(f.minimized.size(), (2, 6, 3));
    let ctx = replay_context();
    let (outcomes, cross) = ctx.run_pipelines(
        &f.minimized,
        f.case_seed,
        &[Pipeline::Batch, Pipeline::Element],
        false,
    );
    let kinds: Vec<Kind> = outcomes.iter().map(|(o, _)| o.kind).collect();
    assert_eq!(kinds, [Kind::Pass, Kind::Pass]);
    let cross = cross.expect("a cross-mode finding");
    assert_eq!(cross.kind, Kind::CrossMode);
    assert_eq!(cross.signature.as_ref(), Some(&f.signature));
    assert_eq!(
        cross.detail,
        "node 1 (conv2, OP_CONV): 2 of 6 elements both pipelines observed differ (batch exact, \
         element exact; their references differ)"
    );
    // One pipeline alone has nothing to compare with.
    let (_, alone) = ctx.run_pipelines(&f.minimized, f.case_seed, &[Pipeline::Element], false);
    assert!(alone.is_none());
}

/// E3 (element mode joins a CONCAT's operands in node order, not in the model's): the
/// recorded element compile of the minimized `concat [conv2, conv9, conv8]` signs as
/// `channels-permuted` (its wrong pixels hold their own values in other channels), beside the
/// program's `core-count` finding, however the check observed the node.
#[test]
fn recorded_e3_is_a_channels_permuted_finding() {
    let f = recorded("e3-concat-operand-order");
    assert_eq!(f.minimized.nodes[4].inputs, [1, 3, 2]);
    let ctx = replay_context();
    let (o, _) = ctx.run_one(&f.minimized, f.case_seed, Pipeline::Element, false);
    assert_eq!(o.kind, Kind::Mismatch);
    assert!(o.has(&f.signature), "{o:?}");
    let core_count = "core-count: element/max-index>=core_cnt/used=core_cnt";
    assert!(o.has(&core_count.parse().unwrap()), "{o:?}");
    assert!(
        o.detail.ends_with(
            "numerics check says mismatch: node 4 (concat11, OP_CONCAT): 2 of 6 elements differ"
        ),
        "{}",
        o.detail
    );
}

/// X1 saved as a finding: the directory holds both compiles (`compiler/batch/`,
/// `compiler/element/`), `check/` is `pimdiff pimcomp --cross --out` of the two, and
/// `sh repro.sh` (the replaying stand-in as `PIMCOMP_NN_BIN`, our `pimdiff` on `PATH`)
/// recompiles both and prints the finding's signature, exit 1.
#[test]
fn cross_mode_finding_saves_both_compiles_and_its_repro_reproduces_it() {
    use pimdiff::finding::{final_name, write_finding};
    use pimdiff::targets::pimcomp_nn::case::finding_pipeline;
    use pimdiff::targets::pimcomp_nn::files::{write_files, FindingRecord};
    use pimdiff::targets::pimcomp_nn::reductions::Shrunk;

    let f = recorded("x1-cross-mode");
    let ctx = replay_context();
    let (outcome, runs) = ctx.run_for_signature(&f.minimized, f.case_seed, &f.signature, true);
    assert!(outcome.has(&f.signature), "{outcome:?}");
    let pipelines: Vec<Pipeline> = runs.iter().map(|(p, _)| *p).collect();
    assert_eq!(pipelines, [Pipeline::Batch, Pipeline::Element]);
    let size = f.minimized.size();
    let record = FindingRecord {
        signature: f.signature.clone(),
        pipeline: finding_pipeline(&f.signature),
        case_seed: f.case_seed,
        original: f.original.clone(),
        minimized: f.minimized.clone(),
        stats: Shrunk {
            tried: 0,
            kept: 0,
            before: size,
            after: size,
            cut_short: false,
        },
        outcome,
        runs,
    };
    let tmp = tempfile::tempdir().unwrap();
    let name = final_name(1, &f.signature);
    assert!(name.starts_with("001-cross-mode-both-op-conv-"), "{name}");
    let dir = tmp.path().join("findings").join(&name);
    let meta = write_finding(
        &dir,
        FindingMeta::new(&f.signature, "fake".into()),
        |d, m| write_files(&ctx, d, &record, m),
    )
    .unwrap();
    assert_eq!(meta.details["reproduced"], true);

    for p in ["batch", "element"] {
        for file in [
            "stdout.txt",
            "stderr.txt",
            "SimulationInfo.gz",
            "VerificationInfo.json",
        ] {
            assert!(
                dir.join("compiler").join(p).join(file).is_file(),
                "{p}/{file}"
            );
        }
        assert!(dir.join("check").join(p).join("report.md").is_file(), "{p}");
    }
    assert!(!dir.join("compiler/SimulationInfo.gz").exists());
    let cross: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("check/cross.json")).unwrap())
            .unwrap();
    assert_eq!(cross["signature"], f.signature.to_string());
    assert_eq!(cross["finding"], true);
    assert_eq!(cross["nodes_compared"], 1);
    // The reports name the saved copies, relative to the finding's directory.
    assert_eq!(cross["batch"], "compiler/batch/SimulationInfo.gz");
    assert_eq!(cross["element"], "compiler/element/SimulationInfo.gz");

    assert_eq!(meta.details["pipeline"], "element");
    assert_eq!(
        meta.details["pipelines"],
        serde_json::json!(["batch", "element"])
    );

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        !report.contains("by hand") && !report.contains("-p=batch"),
        "{report}"
    );
    assert!(report.contains("`check/cross.json`"), "{report}");

    let repro = std::fs::read_to_string(dir.join("repro.sh")).unwrap();
    let pin = pimdiff::targets::pimcomp_nn::case::pin_time(f.case_seed);
    for p in ["batch", "element"] {
        let line = format!(
            "PIMDIFF_PIN_TIME={pin} \"$bin\" -m=net -r=balance -p={p} -s=YES -v=YES > \
             ../output/log.txt 2>&1 || {{ echo \"PIMCOMP-NN -p={p} failed (exit $?): $(tail -3 \
             ../output/log.txt)\"; exit 1; }}"
        );
        assert!(repro.lines().any(|l| l == line), "{line}\n{repro}");
        assert!(repro.contains(&format!("cd \"$t/{p}/work\"\n")), "{repro}");
    }
    assert_eq!(
        repro.lines().last().unwrap(),
        format!(
            "pimdiff pimcomp \"$t/batch\"/output/SimulationInfo.gz --verification \
             \"$t/batch\"/output/VerificationInfo.json --cross \
             \"$t/element\"/output/SimulationInfo.gz --cross-verification \
             \"$t/element\"/output/VerificationInfo.json --seed {}",
            f.case_seed
        )
    );

    let bin_dir = Path::new(env!("CARGO_BIN_EXE_pimdiff")).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let out = std::process::Command::new("sh")
        .arg(dir.join("repro.sh"))
        .env("PATH", path)
        .env("PIMCOMP_NN_BIN", &ctx.setup.bin)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().last().unwrap(),
        format!(
            "{}: node 1 (conv2, OP_CONV): 2 of 6 elements both pipelines observed differ (batch \
             exact, element exact; their references differ)",
            f.signature
        )
    );
}
