//! Whose a fault is (`pimdiff_target_cim_mlc::blame`), on flows CIM-MLC wrote: each fixture
//! under `tests/fixtures/blame/` is a finding of a plain 3-minute hunt (`pimdiff hunt --target
//! cim-mlc --seed 7 --duration 3m --jobs 2`, tree of `scripts/build-cim-mlc.sh`), its
//! `case-description.json` and the `flows/` CIM-MLC compiled it into (flow files, `layout.json`,
//! `origins.json`). The check runs on them again, without CIM-MLC: these need no tree.
//!
//! Before the blame, each was filed at the meta-operator that faulted (`out-of-bounds at Relu
//! of codegen/CoreWise.py:…`, `read-never-written at Relu of codegen/CrossbarWise.py:…`,
//! `core-out-of-chip at CIM.read_core-fc of …`, `crossbar-out-of-chip at load of
//! codegen/WordlineWise.py:…`, `read-never-written at Add of …`), so one defect was filed once
//! per operator and level that met it; CIM-MLC's own state puts most of them elsewhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pimdiff_target_cim_mlc::arch::Level;
use pimdiff_target_cim_mlc::case::CimCase;
use pimdiff_target_cim_mlc::check::check;
use pimdiff_target_cim_mlc::data::network_data;
use pimdiff_target_cim_mlc::driver::Output;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/blame")
        .join(name)
}

/// The signatures the check gives the saved flows of fixture `name`, and the descriptions.
fn judged(name: &str) -> (Vec<String>, Vec<String>) {
    let dir = fixture(name);
    let read =
        |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let case: CimCase = serde_json::from_str(&read(&dir.join("case-description.json"))).unwrap();
    let data = network_data(&case.network, case.seed).unwrap();
    let flows: BTreeMap<Level, String> = Level::ALL
        .into_iter()
        .filter_map(|l| {
            std::fs::read_to_string(dir.join("flows").join(l.file()))
                .ok()
                .map(|t| (l, t))
        })
        .collect();
    let out = Output {
        flows,
        layout: read(&dir.join("flows/layout.json")),
        origins: read(&dir.join("flows/origins.json")),
    };
    let outcomes = check(&case.network, &data, &out).outcomes();
    (
        outcomes
            .iter()
            .map(|o| o.signature.as_ref().expect("a finding").to_string())
            .collect(),
        outcomes.iter().map(|o| o.detail.clone()).collect(),
    )
}

#[test]
fn a_tensor_placed_across_the_buffer_end_is_the_allocators_whatever_meta_operator_meets_it() {
    // Conv 4×4 → Relu on an 8×8 input, a global buffer of 256: CIM-MLC places the Relu's 100
    // values at [164, 264).
    let (sigs, details) = judged("relu-across-the-buffer-end");
    assert_eq!(
        sigs,
        ["fault: out-of-bounds at a tensor placed across the global buffer's end of codegen/Addr.py:AddrGenerator"]
    );
    assert!(
        details[0].contains("the output of n1 (Relu) at [164, 264) in a buffer of 256"),
        "{}",
        details[0]
    );
}

#[test]
fn weights_mapped_past_the_chip_are_the_mappings_at_every_level() {
    // A MatMul needing 2 cores on a chip of 1 (CIM-MLC's root cause 3 when it does not crash):
    // the core level names core 1, the wordline level crossbar 1 of a one-crossbar chip.
    for name in [
        "matmul-larger-than-the-chip",
        "matmul-larger-than-the-chip-wordline",
    ] {
        let (sigs, details) = judged(name);
        assert_eq!(
            sigs,
            ["fault: weights mapped past the chip's cores of optimization/CoreDup.py:get_corewise_dup"],
            "{name}"
        );
        assert!(
            details[0].contains("(MatMul)'s 1 copies to cores [0, 2) of a chip of 1"),
            "{name}: {}",
            details[0]
        );
    }
}

#[test]
fn a_read_of_a_sources_output_that_nothing_wrote_is_the_sources() {
    // Conv → Conv → Flatten: the Flatten reads the second conv's output, which that conv's
    // trailing Mov moved off (root cause 11). Signed where the conv's own Mov faults when no
    // other node reads it: one place, one finding.
    let (moved, details) = judged("conv-output-moved-off");
    let (own, _) = judged("conv-trailing-mov");
    assert_eq!(
        moved,
        ["fault: read-never-written at Mov of codegen/CoreWise.py:process_conv_node_cm"]
    );
    assert_eq!(own, moved);
    assert!(
        details[0].contains("n2 (Flatten) reads the output CIM-MLC gave n1 (Conv)"),
        "{}",
        details[0]
    );
    // The reader itself is named in the description, as before.
    assert!(details[0].contains("`Flatten - 24 - 5"), "{}", details[0]);
}

#[test]
fn a_source_a_level_never_computes_is_signed_by_its_operator_and_level() {
    // Conv → Flatten → Relu at API Crossbar: the crossbar flow has no meta-operator of the
    // Flatten, and its Relu reads the Flatten's output.
    let (sigs, details) = judged("flatten-never-computed-crossbar");
    assert_eq!(
        sigs,
        [
            "fault: read-never-written at Mov of codegen/CoreWise.py:process_conv_node_cm",
            "fault: crossbar: the output of Flatten never computed",
        ]
    );
    assert!(
        details[1].contains("no meta-operator of n1 is in the crossbar flow"),
        "{}",
        details[1]
    );
}

#[test]
fn a_source_computed_after_its_reader_is_the_levels_schedule() {
    // Gemm → Mul → Add at API Wordline: the crossbar flow prints the Add (line 1) before the
    // Mul whose output it reads (line 3); at the wordline level the Mul leaves its output
    // unwritten where the Add reads it: signed by the Mul's meta-operator.
    let (sigs, details) = judged("gemm-mul-add-out-of-order");
    assert_eq!(
        sigs,
        [
            "fault: crossbar: an operator's source read before it is computed",
            "fault: read-never-written at Mul of codegen/WordlineWise.py:process_aluOp_node_wlm",
        ]
    );
    assert!(
        details[0].contains("n2 (Add) reads the output CIM-MLC gave n1 (Mul); n1's meta-operators come later in the crossbar flow (from line 3)"),
        "{}",
        details[0]
    );
}
