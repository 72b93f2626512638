//! The generator: determinism, validity, edge coverage, the three callers.

use std::collections::BTreeMap;

use pimdiff::targets::tensor::generate::{
    case_from_seed, case_from_unstructured, case_strategy, edge_tags, plain_case, EdgeTag,
    GenConfig,
};
use pimdiff_oracle::{Case, Op};
use proptest::prelude::*;

fn revalidate(case: &Case) {
    let again = Case::new(
        case.spec.clone(),
        case.input.clone(),
        case.weight.clone(),
        case.bias.clone(),
        case.expected.clone(),
    );
    match again {
        Ok(again) => assert_eq!(&again, case),
        Err(e) => panic!("Case::new refuses a generated case: {e}\n{:?}", case.spec),
    }
}

#[test]
fn same_seed_same_case() {
    let cfg = GenConfig::default();
    for seed in [0, 1, 42, u64::MAX] {
        assert_eq!(case_from_seed(&cfg, seed), case_from_seed(&cfg, seed));
    }
    // Different seeds give different cases (overwhelmingly).
    let distinct: std::collections::HashSet<String> = (0..100)
        .map(|s| format!("{:?}", case_from_seed(&cfg, s)))
        .collect();
    assert!(
        distinct.len() >= 95,
        "only {} distinct cases of 100",
        distinct.len()
    );
}

/// A fixed seed gives a fixed case on every platform and build (ChaCha8 is portable).
#[test]
fn seed_zero_is_stable() {
    let case = case_from_seed(&GenConfig::default(), 0);
    insta::assert_snapshot!(pimdiff::targets::tensor::generate::describe_case(&case), @"conv2d N1 C7→K7 5×4 k3×3 s5×2 p[1, 2, 1, 2] d1×1 g7 +bias +relu | 4 cores × 16 arrays of 1×5, 65536 B local");
}

#[test]
fn ten_thousand_cases_are_valid_and_within_defaults() {
    let cfg = GenConfig::default();
    let mut kinds = BTreeMap::new();
    for seed in 0..10_000u64 {
        let case = case_from_seed(&cfg, seed);
        revalidate(&case);
        let a = &case.spec.arch;
        assert!(a.cores <= cfg.max_cores && a.arrays_per_core <= cfg.max_arrays_per_core);
        assert!(a.array_rows <= cfg.max_array_dim && a.array_cols <= cfg.max_array_dim);
        assert!(case.spec.input_shape[0] <= cfg.max_batch);
        match &case.spec.op {
            Op::Conv2d(c) => {
                assert!(
                    c.in_channels <= cfg.max_channels && c.out_channels <= cfg.max_channels,
                    "{c:?}"
                );
                assert!(c.kernel[0] <= cfg.max_kernel && c.kernel[1] <= cfg.max_kernel);
                assert!(
                    case.spec.input_shape[2] <= cfg.max_spatial
                        && case.spec.input_shape[3] <= cfg.max_spatial
                );
            }
            Op::Mvm(m) => {
                assert!(m.in_features <= cfg.max_channels && m.out_features <= cfg.max_channels)
            }
        }
        *kinds.entry(case.spec.op.kind()).or_insert(0) += 1;
    }
    // mvm_ratio 0.25 → about 2,500 MVMs.
    let mvm = kinds["mvm"];
    assert!((2_000..3_000).contains(&mvm), "{mvm} MVM cases of 10,000");
}

#[test]
fn every_edge_appears() {
    let cfg = GenConfig::default();
    let mut seen: BTreeMap<EdgeTag, usize> = BTreeMap::new();
    for seed in 0..3_000u64 {
        for tag in edge_tags(&case_from_seed(&cfg, seed)) {
            *seen.entry(tag).or_insert(0) += 1;
        }
    }
    let all = [
        EdgeTag::Mvm,
        EdgeTag::ChannelsTileMinusOne,
        EdgeTag::ChannelsAtTile,
        EdgeTag::ChannelsTilePlusOne,
        EdgeTag::KernelLargerThanInput,
        EdgeTag::StrideLargerThanKernel,
        EdgeTag::PaddingLargerThanKernel,
        EdgeTag::AsymmetricPadding,
        EdgeTag::OnePixelOutput,
        EdgeTag::OneRowArrays,
        EdgeTag::OneColumnArrays,
        EdgeTag::SingleCore,
        EdgeTag::ManyCores,
        EdgeTag::ZeroWeightTile,
        EdgeTag::ExtremeValues,
        EdgeTag::Grouped,
        EdgeTag::Depthwise,
        EdgeTag::Dilated,
        EdgeTag::Batch,
        EdgeTag::Bias,
        EdgeTag::Relu,
        EdgeTag::TightMemory,
    ];
    for tag in all {
        let n = seen.get(&tag).copied().unwrap_or(0);
        // Every edge in at least 1% of the cases.
        assert!(n >= 30, "edge {tag:?} appears in only {n} of 3,000 cases");
    }
}

#[test]
fn unstructured_never_fails_and_empty_input_is_the_plain_case() {
    let cfg = GenConfig::default();
    let mut u = arbitrary::Unstructured::new(&[]);
    assert_eq!(
        case_from_unstructured(&cfg, &mut u).unwrap(),
        plain_case_like(&cfg)
    );
    // Arbitrary bytes always decode to a valid case.
    let mut bytes = Vec::new();
    for i in 0..2_000u32 {
        bytes.push((i.wrapping_mul(2_654_435_761) >> 13) as u8);
        let mut u = arbitrary::Unstructured::new(&bytes);
        revalidate(&case_from_unstructured(&cfg, &mut u).unwrap());
    }
}

/// What an exhausted source gives: every choice at its lowest.
fn plain_case_like(cfg: &GenConfig) -> Case {
    let mut u = arbitrary::Unstructured::new(&[0u8; 0]);
    let case = pimdiff::targets::tensor::generate::generate(
        cfg,
        &mut pimdiff::targets::tensor::generate::UnstructuredChoices(&mut u),
    );
    // The lowest choices are an MVM (the first option of op kind is MVM when the chance fails).
    assert_eq!(case.spec.op.kind(), "mvm");
    assert_eq!(case.spec.input_shape, vec![1, 1]);
    case
}

#[test]
fn zero_sized_config_still_generates() {
    let cfg = GenConfig {
        max_channels: 0,
        max_spatial: 0,
        max_kernel: 0,
        max_batch: 0,
        max_cores: 0,
        max_arrays_per_core: 0,
        max_array_dim: 0,
        max_local_memory_bytes: 0,
        mvm_ratio: f64::NAN,
        edge_ratio: 7.0,
        overcommit_ratio: -1.0,
        memory_edge_ratio: f64::INFINITY,
        no_skip_padding_ratio: 2.0,
        no_weight_skipping_ratio: f64::NEG_INFINITY,
    };
    for seed in 0..200 {
        revalidate(&case_from_seed(&cfg, seed));
    }
    revalidate(&plain_case());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn strategy_values_are_valid(case in case_strategy(GenConfig::default())) {
        revalidate(&case);
    }
}
