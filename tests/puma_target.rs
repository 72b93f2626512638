//! `pimdiff hunt --target puma`: the exact check on the compiler's own examples, injected
//! miscompilations caught as mismatches at the right instruction, minimization that keeps a
//! signature, a hunt whose findings are saved and replay with `pimdiff repro`, and the flags.
//!
//! Needs a build for most tests: `PUMA_DIR` = the plain tree of `scripts/build-puma.sh`
//! (the sanitizer tree is found beside it); those tests are skipped with a message otherwise.

#[path = "support/puma.rs"]
mod puma_support;

use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use pimdiff::engine::grouping::Cause;
use pimdiff::engine::{
    run_hunt, Budget, HuntConfig, HuntControl, Limit, MinimizeConfig, Shard, Target,
};
use pimdiff::finding::{FindingMeta, Kind, Signature};
use pimdiff::targets::puma::case::{CaseContext, PumaCase};
use pimdiff::targets::puma::check::{CheckOptions, Verdict};
use pimdiff::targets::puma::compile::{PumaSetup, Tree};
use pimdiff::targets::puma::inject::{Injected, Injection};
use pimdiff::targets::puma::network::{Op, Output, PumaNetwork, Shape};
use pimdiff::targets::puma::{PumaNetConfig, PumaTarget};
use puma_support::{examples, Net};

/// The trees of `PUMA_DIR`, or `None` (and a message saying why) when there are none.
fn setup() -> Option<PumaSetup> {
    match PumaSetup::locate(None, None, Duration::from_secs(60), 4 << 30) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

macro_rules! setup_or_skip {
    () => {
        match setup() {
            Some(s) => s,
            None => return,
        }
    };
}

fn context(setup: PumaSetup, inject: Option<Injection>) -> CaseContext {
    CaseContext {
        setup,
        net: PumaNetConfig::default(),
        check: CheckOptions::default(),
        sanitize_rate: 0.0,
        inject,
    }
}

fn case(network: PumaNetwork, seed: u64) -> PumaCase {
    PumaCase { network, seed }
}

/// `net` with every `sig` and `tanh` of a vector made a `relu`, and every `sig` of a stream
/// left out (its users read its operand), so that every output element is known.
fn linear(net: PumaNetwork) -> PumaNetwork {
    let shapes = net.check().expect("a valid example");
    let mut out = net.clone();
    out.values.clear();
    // The new index of each old value.
    let mut index: Vec<usize> = Vec::new();
    for (i, op) in net.values.iter().enumerate() {
        let remap = |v: usize| index[v];
        let op = match *op {
            Op::Sig { x } if matches!(shapes[i], Shape::Image(_)) => {
                index.push(remap(x));
                continue;
            }
            Op::Sig { x } | Op::Tanh { x } => Op::Relu { x: remap(x) },
            Op::Mvm { matrix, x } => Op::Mvm {
                matrix,
                x: remap(x),
            },
            Op::Conv { matrix, x } => Op::Conv {
                matrix,
                x: remap(x),
            },
            Op::Add { a, b } => Op::Add {
                a: remap(a),
                b: remap(b),
            },
            Op::Mul { a, b } => Op::Mul {
                a: remap(a),
                b: remap(b),
            },
            Op::Sub { a, b } => Op::Sub {
                a: remap(a),
                b: remap(b),
            },
            Op::Relu { x } => Op::Relu { x: remap(x) },
            Op::Scale { factor, x } => Op::Scale {
                factor,
                x: remap(x),
            },
            Op::MaxPool { hspan, wspan, x } => Op::MaxPool {
                hspan,
                wspan,
                x: remap(x),
            },
            Op::Input { input } => Op::Input { input },
        };
        out.values.push(op);
        index.push(out.values.len() - 1);
    }
    for o in &mut out.outputs {
        match o {
            Output::Vector { value, .. } | Output::Image { value, .. } => *value = index[*value],
        }
    }
    out.check().expect("the linear example is valid");
    out
}

#[test]
fn the_exact_check_passes_on_the_compilers_own_examples() {
    let ctx = context(setup_or_skip!(), None);
    for (name, net) in examples() {
        let run = ctx.run_in(&case(linear(net.clone()), 3), Tree::Plain);
        let o = &run.outcome;
        if name == "depthwise" {
            // The snapshot's depthwise example assigns no output: nothing to compare.
            assert_eq!(
                (o.kind, o.decline.as_deref()),
                (Kind::Unsupported, Some("no outputs to compare")),
                "{name}"
            );
            continue;
        }
        if name == "conv-layer (stride 2)" {
            // A 3×3 kernel on a stream of stride 2 reads pixels the stream does not carry:
            // every output element is unknown (docs/puma.md, strided input streams).
            assert_eq!(o.kind, Kind::Unsupported, "{name}: {}", o.detail);
            continue;
        }
        assert_eq!(o.kind, Kind::Pass, "{name}: {}", o.detail);
        let Some(Verdict::Pass { compared, .. }) = o.checked.as_ref().map(|c| &c.verdict) else {
            panic!("{name}: no verdict")
        };
        assert!(*compared > 0, "{name}");
    }
    // With its sigmoid, a layer's every output element is unknown: unsupported, never a pass.
    let fc = ctx.run_in(&case(puma_support::fully_connected(), 3), Tree::Plain);
    assert_eq!(
        (fc.outcome.kind, fc.outcome.decline.as_deref()),
        (
            Kind::Unsupported,
            Some("every output element is unknown (sig, tanh or unstreamed pixels)")
        )
    );
}

/// `(tile, core)` of a compiler output file `net-tile<T>-core<C>...`.
fn tile_core(file: &Path) -> (u32, u32) {
    let name = file.file_name().unwrap().to_str().unwrap();
    let num = |key: &str| -> u32 {
        let rest = &name[name.find(key).unwrap() + key.len()..];
        rest.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap()
    };
    (num("-tile"), num("-core"))
}

/// A dense layer: `out = M in`, 5 → 4.
fn dense() -> PumaNetwork {
    let mut n = Net::new("net");
    let x = n.input_vector("x", 5);
    let m = n.dense("m", 5, 4);
    let y = n.mvm(m, x);
    n.output("y", y);
    n.0
}

/// A convolution whose input pixels are loaded one by one into one core's MVMUs.
fn conv() -> PumaNetwork {
    let mut n = Net::new("net");
    let x = n.input_image("img", 3, 3, 2, 1);
    let m = n.conv_matrix("k", 3, 3, 2, 3, 1, 3, 3);
    let y = n.conv(m, x);
    n.output("out", y);
    n.0
}

#[test]
fn swapped_weight_rows_are_a_mismatch_computed_by_that_mvmus_mvm() {
    let ctx = context(setup_or_skip!(), Some(Injection::WeightRows));
    let run = ctx.run_in(&case(dense(), 1), Tree::Plain);
    let Some(Injected::WeightRows { file, rows }) = &run.injected else {
        panic!("not injected: {:?}", run.injected)
    };
    assert_eq!(rows, &[0, 1]);
    let o = &run.outcome;
    assert_eq!(
        o.signature,
        Some(Signature::new(Kind::Mismatch, "mvm")),
        "{}",
        o.detail
    );
    let Some(Verdict::Mismatch(m)) = o.checked.as_ref().map(|c| &c.verdict) else {
        panic!("no mismatch")
    };
    let (tile, core) = tile_core(file);
    let slice = m.slice.as_ref().expect("localized");
    let mvm = slice
        .steps
        .iter()
        .find(|s| s.text.starts_with("mvm("))
        .expect("an mvm in the slice");
    assert_eq!((mvm.tile, mvm.core), (tile, core));
    assert_eq!(m.index, vec![0]);
    assert!(slice.steps.last().unwrap().text.starts_with("store("));
}

#[test]
fn exchanged_load_addresses_are_a_mismatch_whose_slice_names_the_load() {
    let ctx = context(setup_or_skip!(), Some(Injection::LoadAddress));
    // Seed 2: the two exchanged pixels differ (under seed 1 they are equal, and so is the
    // result).
    let run = ctx.run_in(&case(conv(), 2), Tree::Plain);
    let Some(Injected::LoadAddress { file, loads }) = &run.injected else {
        panic!("not injected: {:?}", run.injected)
    };
    let o = &run.outcome;
    assert_eq!(
        o.kind,
        Kind::Mismatch,
        "{}: {file:?} {loads:?}\n{}",
        o.detail,
        std::fs::read_to_string(file).unwrap()
    );
    let Some(Verdict::Mismatch(m)) = o.checked.as_ref().map(|c| &c.verdict) else {
        panic!("no mismatch")
    };
    let (tile, core) = tile_core(file);
    let slice = m.slice.as_ref().expect("localized");
    assert!(
        slice
            .steps
            .iter()
            .any(|s| (s.tile, s.core) == (tile, core) && loads.contains(&s.pc)),
        "the slice {:?} names neither load {loads:?} of tile {tile} core {core}",
        slice.steps
    );
}

/// A 2×2 max pooling of a 1×2 stream (the window is cut at the image's edge): the
/// snapshot's maxpool reads a slot of its window array it never wrote.
fn pooled_stream() -> PumaNetwork {
    let mut n = Net::new("net");
    let x = n.input_image("img", 1, 2, 3, 1);
    let m = n.conv_matrix("k", 1, 1, 3, 3, 1, 1, 2);
    let y = n.conv(m, x);
    let p = n.op(Op::MaxPool {
        hspan: 2,
        wspan: 2,
        x: y,
    });
    n.output("out", p);
    n.0
}

#[test]
fn minimization_keeps_the_signature_and_shrinks() {
    let s = setup_or_skip!();
    let cancel = AtomicBool::new(false);
    let budget = Budget::new(400, Duration::from_secs(120));
    for (inject, network) in [
        (None, pooled_stream()),
        (Some(Injection::WeightRows), conv()),
    ] {
        let target = PumaTarget {
            cases: context(s.clone(), inject),
        };
        let c = case(network, 5);
        let sig = target
            .cases
            .run_in(&c, Tree::Plain)
            .outcome
            .signature
            .expect("a finding");
        let t = target.triage(&c, &Cause::unlocalized(sig.clone()), &budget, &cancel);
        assert!(t.evidence.reproduced, "{sig}");
        assert_eq!(t.evidence.run.outcome.signature.as_ref(), Some(&sig));
        assert!(t.stats.kept > 0 && !t.stats.cut_short, "{sig}: {:?}", t.log);
        assert!(t.stats.minimized_size < t.stats.original_size, "{sig}");
        assert!(t.case.network.check().is_ok());
    }
}

#[test]
fn a_hunt_saves_minimized_findings_that_repro_replays() {
    let s = setup_or_skip!();
    let tmp = tempfile::tempdir().unwrap();
    let cfg = HuntConfig {
        seed: 7,
        limit: Limit::Cases(12),
        jobs: 2,
        shard: Shard::ALL,
        minimize: MinimizeConfig {
            time_budget: Duration::from_secs(5),
            max_steps: 300,
        },
        max_unsupported: None,
        out: tmp.path().join("hunt"),
    };
    let target = PumaTarget {
        cases: context(s, None),
    };
    let summary = run_hunt(&cfg, Arc::new(target), &HuntControl::default()).unwrap();
    assert_eq!((summary.target.as_str(), summary.cases_run), ("puma", 12));
    assert!(!summary.findings.is_empty(), "{:?}", summary.outcomes);
    for f in &summary.findings {
        let dir = cfg.out.join(&f.dir);
        for file in [
            "network.json",
            "network.txt",
            "weights.txt",
            "model.cpp",
            "build.sh",
            "report.md",
        ] {
            assert!(dir.join(file).is_file(), "{}: no {file}", f.dir);
        }
        let mode = std::fs::metadata(dir.join("build.sh"))
            .unwrap()
            .permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o111,
            0o111,
            "{}: build.sh is not executable",
            f.dir
        );
        let meta: FindingMeta =
            serde_json::from_str(&std::fs::read_to_string(dir.join("finding.json")).unwrap())
                .unwrap();
        assert_eq!(meta.target.as_deref(), Some("puma"));
        assert_eq!(meta.details["pinning"]["aslr_disabled"], true);
        assert_eq!(meta.details["quirks"], "compiler");
        if matches!(f.outcome, Kind::Crash | Kind::Abort) {
            assert!(
                meta.frames.iter().any(|fr| fr.contains(".cpp:")),
                "{}: {:?}",
                f.dir,
                meta.frames
            );
        }
        let repro = Command::new(env!("CARGO_BIN_EXE_pimdiff"))
            .arg("repro")
            .arg(&dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&repro.stdout);
        assert_eq!(repro.status.code(), Some(1), "{}: {stdout}", f.dir);
        assert!(
            stdout.contains(&format!("saved:   {}", f.signature)),
            "{stdout}"
        );
        assert!(stdout.contains("reproduces"), "{stdout}");
    }
}

fn pimdiff(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .args(args)
        .env_remove("PUMA_DIR")
        .env_remove("PUMA_SANITIZE_DIR")
        .output()
        .unwrap()
}

#[test]
fn flags_of_another_target_are_refused_and_a_missing_tree_is_a_clear_error() {
    let hunt = ["hunt", "--seed", "1", "--cases", "1"];
    for (extra, message) in [
        (
            &["--puma-dir", "/x"][..],
            "--puma-dir is a flag of --target puma, not of --target cases",
        ),
        (
            &["--target", "puma", "--pimcomp-bin", "/x"],
            "--pimcomp-bin is a flag of --target pimcomp-nn, not of --target puma",
        ),
        (
            &["--target", "pimcomp-nn", "--puma-quirks", "simulator"],
            "--puma-quirks is a flag of --target puma, not of --target pimcomp-nn",
        ),
        (
            &["--target", "puma"],
            "no PUMA compiler: give --puma-dir DIR or set PUMA_DIR (a tree of scripts/build-puma.sh)",
        ),
        (
            &["--target", "puma", "--puma-dir", "/nonexistent"],
            "/nonexistent: not a tree of scripts/build-puma.sh (no executable bin/puma-driver)",
        ),
    ] {
        let o = pimdiff(&[&hunt[..], extra].concat());
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(message), "{extra:?}: {stderr}");
    }
}

#[test]
fn repro_of_an_incomplete_puma_finding_names_the_missing_file() {
    let tmp = tempfile::tempdir().unwrap();
    let sig = Signature::new(Kind::Crash, "SIGSEGV/maxpool");
    let mut meta = FindingMeta::new(&sig, "PUMA".into());
    meta.target = Some("puma".into());
    meta.details = serde_json::json!({
        "tree": "plain", "plain_dir": "/nonexistent", "quirks": "compiler", "frac_bits": 0,
        "data_seed": 1, "reproduced": true, "compile_seconds": 0.1, "driver_command": ""
    });
    std::fs::write(
        tmp.path().join("finding.json"),
        serde_json::to_string(&meta).unwrap(),
    )
    .unwrap();
    let o = pimdiff(&["repro", tmp.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("network.json"), "{stderr}");
}

/// The simulator's semantics where it contradicts the compiler (`Quirks`): each quirk alone,
/// on the compiler's own output for a small layer. Two of them break every such program
/// (`docs/puma-findings.md`, "Where the simulator and the compiler disagree"); the hunt
/// checks under the compiler's reading so that they are reported once, not on every network.
#[test]
fn the_simulators_semantics_break_the_compilers_programs() {
    let s = setup_or_skip!();
    let off = pimdiff_puma::Quirks::COMPILER;
    let run = |net: PumaNetwork, quirks: pimdiff_puma::Quirks| {
        let mut ctx = context(s.clone(), None);
        ctx.check.quirks = quirks;
        ctx.run_in(&case(net, 2), Tree::Plain).outcome
    };
    // A 5 → 4 layer: the simulator multiplies by the transpose of what the compiler wrote.
    assert_eq!(run(dense(), off).kind, Kind::Pass);
    let rows = pimdiff_puma::Quirks {
        weights_row_is_input: true,
        ..off
    };
    assert_eq!(run(dense(), rows).kind, Kind::Mismatch);
    // A 1 → 24 layer: the compiler stores 24 words as two chunks of 12 contiguous registers;
    // the simulator reads the second chunk 16 registers on.
    let mut n = Net::new("net");
    let x = n.input_vector("x", 1);
    let m = n.dense("m", 1, 24);
    let y = n.mvm(m, x);
    n.output("y", y);
    assert_eq!(run(n.0.clone(), off).kind, Kind::Pass);
    let stride = pimdiff_puma::Quirks {
        store_bus_stride: true,
        ..off
    };
    let o = run(n.0, stride);
    assert!(
        matches!(o.kind, Kind::Mismatch | Kind::Fault),
        "{:?}: {}",
        o.kind,
        o.detail
    );
}

/// The cause a real compile of `case` gets from the repair search once `edit` has put a bug
/// into its compiled program: `None` when the edited program does not mismatch.
fn cause_of_edited(
    ctx: &CaseContext,
    case: &PumaCase,
    edit: impl Fn(&mut pimdiff_puma::Model),
) -> Option<(String, Vec<String>)> {
    use pimdiff::targets::puma::placement::{placement_file, Placement};
    use pimdiff::targets::puma::repair::Judge;
    let prepared = ctx.prepare(case).expect("a valid case");
    let run = pimdiff::targets::puma::compile::compile(
        &ctx.setup,
        Tree::Plain,
        &prepared.network_text,
        &prepared.weights_text,
    )
    .expect("the driver runs");
    let dir = run.path();
    let mut model =
        pimdiff_puma::formats::load_model(dir, &case.network.model).expect("the programs load");
    edit(&mut model);
    let placement = Placement::read(&dir.join(placement_file(&case.network.model))).unwrap();
    let mut judge = Judge::new(
        &model,
        &placement,
        &case.network,
        &prepared.data,
        &prepared.reference,
        CheckOptions::default(),
    )?;
    judge.search(&|| false).map(|r| (r.name, r.also))
}

/// A dense layer and a subtraction: `y = M x − x`.
fn dense_minus_input() -> PumaNetwork {
    let mut n = Net::new("net");
    let x = n.input_vector("x", 5);
    let m = n.dense("m", 5, 5);
    let y = n.mvm(m, x);
    let z = n.op(Op::Sub { a: y, b: x });
    n.output("z", z);
    n.0
}

/// Systematic bugs put into every instruction (or crossbar) of a kind of a real compile are
/// each named by the edit that undoes it, in a dense layer and in a convolution alike: the
/// cause a hunt files one finding under, whatever operation shows it.
#[test]
fn systematic_bugs_in_real_compiles_are_named_by_the_edit_that_undoes_them() {
    use pimdiff_puma::CoreInst;
    let ctx = context(setup_or_skip!(), None);
    let transpose = |m: &mut pimdiff_puma::Model| {
        for w in m
            .tiles
            .iter_mut()
            .flat_map(|t| t.cores.iter_mut())
            .flat_map(|c| c.mvmus.iter_mut())
            .flatten()
        {
            let mut t = pimdiff_puma::model::Weights::zeros();
            for r in 0..128 {
                for c in 0..128 {
                    t.set(c, r, w.cell(r, c));
                }
            }
            *w = t;
        }
    };
    for (network, seed) in [(dense(), 1), (conv(), 2)] {
        let case = case(network, seed);
        assert_eq!(cause_of_edited(&ctx, &case, |_| {}), None);
        let (name, _) = cause_of_edited(&ctx, &case, transpose).expect("a mismatch");
        assert_eq!(name, "weights transposed");
    }
    let swap = |m: &mut pimdiff_puma::Model| {
        for inst in m
            .tiles
            .iter_mut()
            .flat_map(|t| t.cores.iter_mut())
            .flat_map(|c| c.program.iter_mut())
        {
            if let CoreInst::Alu { aluop, r1, r2, .. } = inst {
                if aluop.name() == "sub" {
                    std::mem::swap(r1, r2);
                }
            }
        }
    };
    let case = case(dense_minus_input(), 3);
    let (name, also) = cause_of_edited(&ctx, &case, swap).expect("a mismatch");
    assert_eq!(name, "alu r1<->r2");
    assert!(also.contains(&"alu-sub r1<->r2".to_string()), "{also:?}");
}

/// "Virtual MVMU not assigned!" has two causes whose frames below the assertion are the same
/// (`Partitioner::getVCore` ← `insertLoadsAndStores` ← the partitioner's constructor): an
/// output computed from inputs alone, which the partitioner cannot place, and the last
/// placement pass's single walk over a pointer-ordered set (a 5×5 kernel on a 1×1 image, whose
/// accumulation chains end in padding taps). The network tells them apart: two signatures.
#[test]
fn virtual_mvmu_not_assigned_is_two_findings_by_its_two_causes() {
    let ctx = context(setup_or_skip!(), None);
    let mut n = Net::new("net");
    n.dense("unused", 1, 1);
    let img = n.input_image("img", 1, 1, 3, 1);
    n.output("out", img);
    let inputs_only = ctx.run_in(&case(n.0, 1), Tree::Plain).outcome;
    let mut n = Net::new("net");
    let img = n.input_image("img", 1, 1, 1, 1);
    let k = n.conv_matrix("k", 5, 5, 1, 1, 1, 1, 1);
    let y = n.conv(k, img);
    n.output("out", y);
    let padding = ctx.run_in(&case(n.0, 1), Tree::Plain).outcome;
    let assertion = "partitioner.cpp Partitioner::getVMVMU: isVMVMUAssigned(op) && \"Virtual MVMU not assigned!\"";
    assert_eq!(
        inputs_only.signature,
        Some(Signature::new(
            Kind::Abort,
            format!("{assertion} (an output computed from inputs alone)")
        )),
        "{}",
        inputs_only.detail
    );
    assert_eq!(
        padding.signature,
        Some(Signature::new(Kind::Abort, assertion)),
        "{}",
        padding.detail
    );
    let tail = |o: &pimdiff::targets::puma::outcome::PumaOutcome| -> Vec<String> {
        o.frames
            .iter()
            .filter(|f| f.own)
            .map(|f| f.function.clone())
            .take(4)
            .collect()
    };
    assert_eq!(tail(&inputs_only), tail(&padding));
    assert_eq!(
        tail(&padding)[..3],
        [
            "Partitioner::getVMVMU".to_string(),
            "Partitioner::getVCore".to_string(),
            "Partitioner::insertLoadsAndStores".to_string()
        ]
    );
}
