//! Provenance: every instruction of a compiled program carries the `stage::function` label
//! of the code that emitted it, for both lowerings; the labels of a known case are a
//! snapshot.

mod common;

use common::{arch, conv, conv_case, mvm_case};
use pimdiff_compiler::{compile, compile_with_provenance, emit, CompileOptions, Lowering, Stage};
use pimdiff_oracle::{Case, Conv2d, Mvm};

const CHANNEL_LABELS: [&str; 7] = [
    "codegen::load_biases",
    "codegen::load_window",
    "codegen::class_part",
    "codegen::add_runs",
    "codegen::partial_sums",
    "codegen::transfers",
    "codegen::finalize",
];

const PIXEL_LABELS: [&str; 8] = [
    "pixel::codegen::load_biases",
    "pixel::codegen::load_patches",
    "pixel::codegen::crossbar_input",
    "pixel::codegen::class_products",
    "pixel::codegen::add_staged",
    "pixel::codegen::transfers",
    "pixel::codegen::zero_unwritten",
    "pixel::codegen::finalize",
];

/// Cases that together reach every code path: bias, ReLU, several cores, padding, all-zero
/// output tiles, gathering (tight local memory), batches, MVM.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let c = Conv2d {
        padding: [1; 4],
        bias: true,
        relu: true,
        ..conv(5, 6, [3, 3])
    };
    out.push(conv_case(c, 2, 4, 4, arch(3, 16, 4, 4, 1 << 16), 7));
    // Tight local memory: one-pixel chunks; gathering in both lowerings.
    out.push(conv_case(c, 1, 4, 4, arch(3, 16, 4, 4, 120), 8));
    let gather = Conv2d {
        padding: [1; 4],
        ..conv(8, 4, [3, 3])
    };
    out.push(conv_case(gather, 1, 5, 5, arch(1, 16, 8, 4, 60), 2));
    let mut zero_tile = conv_case(c, 1, 3, 3, arch(3, 16, 4, 4, 4096), 9);
    zero_tile
        .weight
        .slice_mut(ndarray::s![4.., .., .., ..])
        .fill(0);
    out.push(zero_tile);
    let m = Mvm {
        in_features: 9,
        out_features: 7,
        bias: true,
        relu: false,
    };
    out.push(mvm_case(m, 3, arch(2, 4, 4, 4, 1024), 10));
    out
}

fn all_options() -> Vec<CompileOptions> {
    let mut all = Vec::new();
    for lowering in Lowering::ALL {
        for optimized in [true, false] {
            all.push(CompileOptions {
                skip_padding: optimized,
                weight_skipping: optimized,
                lowering,
                reduction: pimdiff_compiler::Reduction::Noc,
            });
        }
    }
    all
}

#[test]
fn every_instruction_has_a_label_of_its_lowering() {
    let mut seen = std::collections::BTreeSet::new();
    for case in cases() {
        for options in all_options() {
            let (bundle, provenance) = compile_with_provenance(&case, &options).unwrap();
            assert_eq!(bundle, compile(&case, &options).unwrap());
            assert_eq!(provenance.cores(), bundle.program.cores.len());
            let known: &[&str] = match options.lowering {
                Lowering::Channel => &CHANNEL_LABELS,
                Lowering::Pixel => &PIXEL_LABELS,
            };
            for (core, insts) in bundle.program.cores.iter().enumerate() {
                for i in 0..insts.len() {
                    let label = provenance
                        .label(core, i)
                        .unwrap_or_else(|| panic!("{options:?} core {core} #{i}: no label"));
                    assert!(known.contains(&label), "{label}");
                    seen.insert(label);
                }
                assert_eq!(provenance.label(core, insts.len()), None);
                let covered: usize = provenance.spans(core).map(|(r, _)| r.len()).sum();
                assert_eq!(covered, insts.len());
            }
            let total: usize = provenance.counts().values().sum();
            assert_eq!(
                total,
                bundle.program.cores.iter().map(Vec::len).sum::<usize>()
            );
        }
    }
    // Every label is reached by these cases.
    for label in CHANNEL_LABELS.iter().chain(&PIXEL_LABELS) {
        assert!(seen.contains(label), "{label} never emitted");
    }
}

#[test]
fn provenance_of_a_case_reduced_across_two_cores() {
    let c = Conv2d {
        bias: true,
        relu: true,
        padding: [0, 1, 0, 0],
        ..conv(4, 2, [1, 2])
    };
    let case = conv_case(c, 1, 2, 2, arch(2, 2, 2, 4, 4096), 5);
    let mut text = String::new();
    for lowering in Lowering::ALL {
        let options = CompileOptions {
            lowering,
            reduction: pimdiff_compiler::Reduction::Noc,
            ..CompileOptions::default()
        };
        text.push_str(&format!("; {lowering}-wise\n"));
        text.push_str(&emit(&case, &options, Stage::Provenance).unwrap());
        let out = common::compile_and_run(&case, &options).unwrap().unwrap();
        assert_eq!(out, pimdiff_oracle::reference(&case).unwrap());
    }
    insta::assert_snapshot!(text);
}
