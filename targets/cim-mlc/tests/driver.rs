//! The driver against the real CIM-MLC, when `CIM_MLC_DIR` names a tree of
//! `scripts/build-cim-mlc.sh` (CI builds one); without it each test says so and passes. The
//! tests share one served context and take turns, so that torch is imported once.

use std::time::Duration;

use pimdiff_engine::finding::Kind;
use pimdiff_target_cim_mlc::arch::{Api, Arch, Level};
use pimdiff_target_cim_mlc::case::{CaseContext, CimCase};
use pimdiff_target_cim_mlc::driver::{Compile, Driver, Protocol};
use pimdiff_target_cim_mlc::generate::{NetConfig, Setting};
use pimdiff_target_cim_mlc::network::{Network, Node, Op, Spelling, Src};
use pimdiff_target_cim_mlc::tree::Tree;

/// The shared context (served, 60 s per compile) and the lock the tests take turns with.
fn shared() -> Option<(std::sync::MutexGuard<'static, ()>, &'static CaseContext)> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    static CTX: std::sync::OnceLock<Option<CaseContext>> = std::sync::OnceLock::new();
    let guard = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = CTX
        .get_or_init(|| {
            tree().map(|t| {
                CaseContext::new(
                    NetConfig::default(),
                    t,
                    Duration::from_secs(60),
                    Protocol::Serve,
                )
            })
        })
        .as_ref()?;
    Some((guard, ctx))
}

fn tree() -> Option<Tree> {
    match std::env::var_os("CIM_MLC_DIR") {
        Some(d) if !d.is_empty() => Some(Tree::locate(Some(std::path::Path::new(&d))).unwrap()),
        _ => {
            eprintln!("skipped: CIM_MLC_DIR names no tree (scripts/build-cim-mlc.sh builds one)");
            None
        }
    }
}

fn conv_case(spelling: Spelling, api: Api) -> CimCase {
    CimCase {
        network: Network {
            input: vec![1, 3, 6, 6],
            nodes: vec![Node {
                op: Op::Conv {
                    out_channels: 4,
                    kernel: [3, 3],
                    stride: [1, 1],
                    pads: [1, 1, 1, 1],
                    group: 1,
                    bias: false,
                },
                inputs: vec![Src::Input],
                spelling,
            }],
            outputs: vec![0],
        },
        setting: Setting {
            arch: Arch::example(api),
            input_precision: 8,
            weight_precision: 8,
        },
        seed: 3,
    }
}

const EXPLICIT: Spelling = Spelling {
    defaults: true,
    kernel_shape: true,
};

#[test]
fn a_convolution_compiles_into_the_flows_of_its_api_level() {
    let Some(tree) = tree() else { return };
    let ctx = CaseContext::new(
        NetConfig::default(),
        tree,
        Duration::from_secs(60),
        Protocol::Serve,
    );
    for (api, levels) in [
        (Api::Core, vec![Level::Core]),
        (
            Api::Wordline,
            vec![Level::Core, Level::Crossbar, Level::Wordline],
        ),
    ] {
        let case = conv_case(EXPLICIT, api);
        let compiled = ctx.compile(&case.files().unwrap());
        let Compile::Compiled(out) = &compiled.result else {
            panic!("{:?}", compiled.result)
        };
        assert_eq!(out.flows.keys().copied().collect::<Vec<_>>(), levels);
        assert!(
            out.flows[&Level::Core].contains("CIM.read_core-conv"),
            "{}",
            out.flows[&Level::Core]
        );
        assert!(out.layout.contains("\"pimdiff-cim-mlc-layout\""));
        assert_eq!(
            compiled.pinned["seed"],
            serde_json::json!(case.python_seed())
        );
    }
    ctx.driver.shutdown();
}

#[test]
fn a_convolution_without_its_default_strides_crashes_cim_mlc_at_its_line() {
    let Some(tree) = tree() else { return };
    let ctx = CaseContext::new(
        NetConfig::default(),
        tree,
        Duration::from_secs(60),
        Protocol::Serve,
    );
    let case = conv_case(
        Spelling {
            defaults: false,
            kernel_shape: true,
        },
        Api::Core,
    );
    let run = ctx.run_case(&case);
    assert_eq!(run.kind(), Kind::Crash);
    assert_eq!(
        run.signatures()[0].to_string(),
        "crash: TypeError in codegen/CoreWise.py:process_conv_node_cm: 'NoneType' object is not subscriptable"
    );
    assert!(run.outcomes[0]
        .detail
        .ends_with("at codegen/CoreWise.py:60 (process_conv_node_cm)"));
    ctx.driver.shutdown();
}

#[test]
fn served_and_process_per_case_compiles_write_the_same_flows() {
    let Some((_turn, ctx)) = shared() else { return };
    let case = conv_case(EXPLICIT, Api::Crossbar);
    let files = case.files().unwrap();
    let flows = |c: pimdiff_target_cim_mlc::driver::Compiled| match c.result {
        Compile::Compiled(o) => o.flows,
        other => panic!("{other:?}"),
    };
    let served = flows(ctx.compile(&files));
    let d = Driver::new(&ctx.tree, Duration::from_secs(60), Protocol::Process);
    let per_case = flows(d.compile(&pimdiff_target_cim_mlc::driver::CaseFiles {
        model: &files.model,
        arch_py: &files.arch_py,
        case_json: &files.case_json,
    }));
    assert_eq!(served, per_case);
}

#[test]
fn a_compile_past_its_deadline_is_a_hang() {
    let Some(tree) = tree() else { return };
    // Importing torch alone takes about a second: a first request cannot finish in 50 ms.
    let ctx = CaseContext::new(
        NetConfig::default(),
        tree,
        Duration::from_millis(50),
        Protocol::Serve,
    );
    let run = ctx.run_case(&conv_case(EXPLICIT, Api::Core));
    assert_eq!(run.kind(), Kind::Hang);
    assert_eq!(run.signatures()[0].to_string(), "hang: compile");
    ctx.driver.shutdown();
}

#[test]
fn a_directory_that_is_not_a_tree_is_refused_naming_the_build_script() {
    let tmp = tempfile::tempdir().unwrap();
    let e = Tree::locate(Some(tmp.path())).unwrap_err().to_string();
    assert!(e.contains("scripts/build-cim-mlc.sh"), "{e}");
}
