//! Regression material for CIM-MLC's findings (`docs/cim-mlc-findings.md`): minimized crash
//! networks of the first hunt, each committed as the `case-description.json` its finding saved
//! (`tests/fixtures/findings/NAME/`), and what each must come to.
//!
//! - On the plain tree (`CIM_MLC_DIR`, a tree of `scripts/build-cim-mlc.sh` without fixes) each
//!   case gives exactly its finding's signature and nothing else.
//! - On a tree with fixes (`CIM_MLC_FIXES_DIR`, e.g. `scripts/build-cim-mlc.sh --with-fixes` or
//!   `--fix 0002,0004`) each case whose fixes the tree holds no longer crashes, or, for an
//!   operator larger than the chip, gives fix 0003's refusal; a case whose fixes the tree lacks
//!   is skipped, by name. A case that also has its `exact_with` fixes must check exactly at
//!   every granularity on the CIM-MLC machine (the others show further defects once the crash
//!   is gone: `docs/cim-mlc-findings.md`).
//!
//! Without the variables these tests say so and pass. Each tree is served once (torch is
//! imported once per tree) and every case runs before the test judges, so that one failure
//! shows every other.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pimdiff_engine::finding::Kind;
use pimdiff_target_cim_mlc::case::{CaseContext, CimCase};
use pimdiff_target_cim_mlc::driver::Protocol;
use pimdiff_target_cim_mlc::generate::NetConfig;
use pimdiff_target_cim_mlc::tree::Tree;

/// What a case must come to on a tree with its fixes.
#[derive(Clone, Copy, Debug)]
enum Fixed {
    /// Anything but a crash or a hang.
    NoCrash,
    /// Exactly this signature (a refusal that says why).
    Refused(&'static str),
}

/// One minimized finding.
struct Finding {
    /// The fixture directory under `tests/fixtures/findings/`.
    name: &'static str,
    /// Its signature on the plain tree.
    plain: &'static str,
    /// The fixes (patch numbers in `scripts/cim-mlc-fixes/`) it needs, all of them.
    fixes: &'static [&'static str],
    fixed: Fixed,
    /// The further fixes with which its network checks exactly at every granularity (a pass);
    /// empty: it does not, yet (another defect shows once the crash is gone).
    exact_with: &'static [&'static str],
}

/// Root cause 2's signature: a crash in code generation that goes away with the network's
/// input behind a convolution.
const INPUT_READER_CODEGEN: &str =
    "crash: codegen fails on an operator reading the network's input";

const FINDINGS: &[Finding] = &[
    Finding {
        name: "conv-without-kernel-shape",
        plain: "crash: TypeError in optimization/CoreMapping.py:virtual_mapping_conv: 'NoneType' object is not subscriptable",
        fixes: &["0001"],
        fixed: Fixed::NoCrash,
        exact_with: &["0011"],
    },
    Finding {
        name: "mul-of-the-input",
        plain: INPUT_READER_CODEGEN,
        fixes: &["0002"],
        fixed: Fixed::NoCrash,
        exact_with: &["0011"],
    },
    // Root cause 2 raises a different exception in each handler (an empty source list
    // indexed, a source address that is `None`): one signature for all of them.
    Finding {
        name: "relu-of-the-input",
        plain: INPUT_READER_CODEGEN,
        fixes: &["0002"],
        fixed: Fixed::NoCrash,
        exact_with: &[],
    },
    Finding {
        name: "flatten-of-the-input-crossbar",
        plain: INPUT_READER_CODEGEN,
        fixes: &["0002"],
        fixed: Fixed::NoCrash,
        exact_with: &[],
    },
    Finding {
        name: "maxpool-of-the-input-then-flatten",
        plain: INPUT_READER_CODEGEN,
        fixes: &["0002"],
        fixed: Fixed::NoCrash,
        exact_with: &[],
    },
    Finding {
        name: "maxpool-of-the-input-twice",
        plain: INPUT_READER_CODEGEN,
        fixes: &["0002"],
        fixed: Fixed::NoCrash,
        exact_with: &[],
    },
    Finding {
        name: "maxpool-of-the-input-then-relu",
        plain: INPUT_READER_CODEGEN,
        fixes: &["0002"],
        fixed: Fixed::NoCrash,
        exact_with: &[],
    },
    Finding {
        name: "maxpool-of-the-input-then-add",
        plain: INPUT_READER_CODEGEN,
        fixes: &["0002"],
        fixed: Fixed::NoCrash,
        exact_with: &[],
    },
    Finding {
        name: "conv-larger-than-the-chip",
        plain: "crash: IndexError in optimization/CoreDup.py:get_corewise_dup: index N is out of bounds for axis N with size N",
        fixes: &["0003"],
        fixed: Fixed::Refused("crash: NotImplementedError in optimization/CoreDup.py:create_network_segments: Conv node N (nN_conv) needs N cores for one copy of its weights; the chip has N"),
        exact_with: &[],
    },
    Finding {
        name: "maxpool-of-the-input-then-conv",
        // Root cause 4 (a segment starting with a pooling), in another pass than root cause 2.
        plain: "crash: optimization fails on an operator reading the network's input",
        fixes: &["0002", "0004"],
        fixed: Fixed::NoCrash,
        exact_with: &["0011"],
    },
    Finding {
        name: "reshape-to-an-initializer-shape",
        plain: "crash: AssertionError in codegen/Addr.py:handle_reshape: Reshape must contain exactly two sources Ops",
        fixes: &["0005"],
        fixed: Fixed::NoCrash,
        exact_with: &["0011"],
    },
    Finding {
        name: "concat-with-the-input-crossbar",
        plain: "crash: UnboundLocalError in codegen/CrossbarWise.py:conv_start_time_retrieval: cannot access local variable 'source_data_fetch_time' where it is not associated with a value",
        fixes: &["0006"],
        fixed: Fixed::NoCrash,
        exact_with: &[],
    },
    Finding {
        name: "concat-then-padded-maxpool-crossbar",
        plain: "crash: RuntimeError in codegen/CrossbarWise.py:process_pooling_node_xbm: shape '[N, N, N, N]' is invalid for input of size N",
        fixes: &["0006", "0007"],
        fixed: Fixed::NoCrash,
        exact_with: &[],
    },
    Finding {
        name: "maxpool-padded-beyond-half-its-kernel-crossbar",
        plain: "crash: RuntimeError in codegen/CrossbarWise.py:process_pooling_node_xbm: pad should be at most half of effective kernel size, but got pad=N, kernel_size=N and dilation=N",
        fixes: &["0007"],
        fixed: Fixed::NoCrash,
        exact_with: &["0011"],
    },
    Finding {
        name: "conv-padded-right-only-wordline",
        plain: "crash: IndexError in codegen/WordlineWise.py:process_conv_node_wlm: list index out of range",
        fixes: &["0008"],
        fixed: Fixed::NoCrash,
        exact_with: &[],
    },
    Finding {
        name: "conv-with-a-2x1-kernel-wordline",
        plain: "crash: ValueError in codegen/WordlineWise.py:process_conv_node_wlm: max() arg is an empty sequence",
        fixes: &["0008"],
        fixed: Fixed::NoCrash,
        exact_with: &[],
    },
    Finding {
        name: "narrow-crossbar-wordline",
        plain: "crash: IndexError in codegen/WordlineWise.py:process_conv_node_wlm: index N is out of bounds for axis N with size N",
        fixes: &["0009"],
        fixed: Fixed::NoCrash,
        exact_with: &[],
    },
    Finding {
        name: "conv-flatten-matmul-wordline",
        plain: "crash: TypeError in codegen/WordlineWise.py:process_linear_node_wlm: 'float' object cannot be interpreted as an integer",
        fixes: &["0010"],
        fixed: Fixed::NoCrash,
        exact_with: &[],
    },
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/findings")
}

/// The case a finding saved, from its committed `case-description.json`.
fn case(name: &str) -> CimCase {
    let path = fixtures().join(name).join("case-description.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The tree `var` names, or `None` (said on standard error) when it names none.
fn tree(var: &str) -> Option<Tree> {
    match std::env::var_os(var) {
        Some(d) if !d.is_empty() => Some(Tree::locate(Some(Path::new(&d))).unwrap()),
        _ => {
            eprintln!("skipped: {var} names no tree (scripts/build-cim-mlc.sh builds one)");
            None
        }
    }
}

/// Whether `patches` (a tree's) hold every fix `finding` needs.
fn holds(patches: &[String], finding: &Finding) -> bool {
    holds_all(patches, finding.fixes)
}

/// Whether `patches` hold every fix of `numbers`.
fn holds_all(patches: &[String], numbers: &[&str]) -> bool {
    numbers
        .iter()
        .all(|number| patches.iter().any(|p| p.starts_with(&format!("{number}-"))))
}

/// Runs every case in one served context of `tree`; `judge` says what is wrong with a case's
/// outcome (kind and signatures), if anything. Panics listing every wrong case.
fn check_all(tree: Tree, judge: impl Fn(&Finding, Kind, &[String]) -> Option<String>) {
    let ctx = CaseContext::new(
        NetConfig::default(),
        tree,
        Duration::from_secs(60),
        Protocol::Serve,
    );
    let mut wrong = Vec::new();
    for finding in FINDINGS {
        // As the hunt signs a minimized crash (and `repro` judges one): with the input probe.
        let case = case(finding.name);
        let mut run = ctx.run_case(&case);
        ctx.probe_input(&case, &mut run);
        let signatures: Vec<String> = run.signatures().iter().map(|s| s.to_string()).collect();
        if let Some(why) = judge(finding, run.kind(), &signatures) {
            wrong.push(format!("{}: {why}", finding.name));
        }
    }
    ctx.driver.shutdown();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_fixture_is_a_valid_case_with_an_expectation() {
    let mut dirs: Vec<String> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    let mut names: Vec<&str> = FINDINGS.iter().map(|f| f.name).collect();
    names.sort_unstable();
    assert_eq!(
        dirs, names,
        "a fixture without an expectation, or the reverse"
    );
    for finding in FINDINGS {
        let files = case(finding.name).files();
        assert!(files.is_ok(), "{}: {files:?}", finding.name);
        assert!(finding.plain.starts_with("crash: "), "{}", finding.name);
    }
}

#[test]
fn each_finding_shows_exactly_its_signature_on_the_plain_tree() {
    let Some(tree) = tree("CIM_MLC_DIR") else {
        return;
    };
    if !tree.patches.is_empty() {
        eprintln!(
            "skipped: CIM_MLC_DIR is a tree with patches ({}), not the plain snapshot",
            tree.patches.join(", ")
        );
        return;
    }
    check_all(tree, |finding, kind, signatures| {
        (kind != Kind::Crash || signatures != [finding.plain])
            .then(|| format!("{kind:?} {signatures:?}, want exactly {:?}", finding.plain))
    });
}

#[test]
fn each_finding_stops_crashing_on_a_tree_with_its_fixes_and_some_check_exactly() {
    let Some(tree) = tree("CIM_MLC_FIXES_DIR") else {
        return;
    };
    let patches = tree.patches.clone();
    for finding in FINDINGS.iter().filter(|f| !holds(&patches, f)) {
        eprintln!(
            "skipped {}: the tree lacks one of the fixes {:?}",
            finding.name, finding.fixes
        );
    }
    check_all(tree, |finding, kind, signatures| {
        if !holds(&patches, finding) {
            return None;
        }
        if !finding.exact_with.is_empty() && holds_all(&patches, finding.exact_with) {
            return (kind != Kind::Pass).then(|| {
                format!(
                    "{kind:?} {signatures:?}: with fixes {:?} and {:?} it must check exactly",
                    finding.fixes, finding.exact_with
                )
            });
        }
        match finding.fixed {
            Fixed::NoCrash => matches!(kind, Kind::Crash | Kind::Hang)
                .then(|| format!("still {kind:?}: {signatures:?}")),
            Fixed::Refused(want) => (kind != Kind::Crash || signatures != [want])
                .then(|| format!("{kind:?} {signatures:?}, want exactly {want:?}")),
        }
    });
}
