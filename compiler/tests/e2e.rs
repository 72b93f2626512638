//! The end-to-end differential property: compile → interpret → equals the oracle, for random
//! small cases of every feature the case format has, with both lowerings and the
//! optimizations on and off.

mod common;

use common::{compile_and_run, Rng};
use ndarray::Array1;
use pimdiff_compiler::{CompileOptions, Lowering};
use pimdiff_isa::machine::{MachineOptions, Schedule};
use pimdiff_oracle::{Case, CaseArch, CaseSpec, Conv2d, Mvm, Op};
use proptest::prelude::*;

/// A random valid small case from a seed: conv2d (groups, depthwise, stride, dilation,
/// asymmetric padding, bias, ReLU, batch) or MVM, on a random small architecture. Weights
/// have whole zero output channels now and then, so weight skipping has work to do.
fn random_case(seed: u64) -> Case {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let max_arrays = if r.below(2) == 0 { 12 } else { 40 };
    let arch = CaseArch {
        cores: [1, 1, 2, 3, 4, 6][r.below(6) as usize],
        arrays_per_core: 1 + r.below(max_arrays) as usize,
        array_rows: 1 + r.below(6) as usize,
        array_cols: 1 + r.below(6) as usize,
        local_memory_bytes: [64, 256, 1024, 4096, 65536][r.below(5) as usize],
    };
    let bias = r.below(2) == 0;
    let relu = r.below(2) == 0;
    let (spec, wshape, k) = if r.below(4) == 0 {
        let mvm = Mvm {
            in_features: 1 + r.below(10) as usize,
            out_features: 1 + r.below(10) as usize,
            bias,
            relu,
        };
        let n = 1 + r.below(3) as usize;
        (
            CaseSpec {
                op: Op::Mvm(mvm),
                input_shape: vec![n, mvm.in_features],
                arch,
            },
            vec![mvm.out_features, mvm.in_features],
            mvm.out_features,
        )
    } else {
        let groups = if r.below(3) == 0 {
            1 + r.below(3) as usize
        } else {
            1
        };
        let depthwise = groups > 1 && r.below(2) == 0;
        let wide = r.below(5) == 0;
        let cg = if depthwise {
            1
        } else {
            1 + r.below(if wide { 10 } else { 4 }) as usize
        };
        let kg = 1 + r.below(if wide { 10 } else { 4 }) as usize;
        // Now and then an extreme window: big kernels, strides, dilations and paddings
        // (output pixels entirely in the padding, kernels larger than the input).
        let x = if r.below(6) == 0 { 2 } else { 0 };
        let kernel = [1 + r.below(3 + x) as usize, 1 + r.below(3 + x) as usize];
        let stride = [1 + r.below(2 + x) as usize, 1 + r.below(3 + x) as usize];
        let dilation = [
            1 + r.below(2 + x / 2) as usize,
            1 + r.below(2 + x / 2) as usize,
        ];
        let padding = [
            r.below(3 + x) as usize,
            r.below(3 + x) as usize,
            r.below(3 + x) as usize,
            r.below(2 + x) as usize,
        ];
        let ext = [
            dilation[0] * (kernel[0] - 1) + 1,
            dilation[1] * (kernel[1] - 1) + 1,
        ];
        let h = (1 + r.below(6) as usize).max(ext[0].saturating_sub(padding[0] + padding[2]));
        let w = (1 + r.below(6) as usize).max(ext[1].saturating_sub(padding[1] + padding[3]));
        let n = 1 + r.below(3) as usize;
        let conv = Conv2d {
            in_channels: groups * cg,
            out_channels: groups * kg,
            kernel,
            stride,
            padding,
            dilation,
            groups,
            bias,
            relu,
        };
        (
            CaseSpec {
                op: Op::Conv2d(conv),
                input_shape: vec![n, conv.in_channels, h, w],
                arch,
            },
            vec![conv.out_channels, cg, kernel[0], kernel[1]],
            conv.out_channels,
        )
    };
    let input = common::random(&mut r, &spec.input_shape);
    let mut weight = common::random(&mut r, &wshape);
    // Zero some whole output channels.
    for k in 0..wshape[0] {
        if r.below(4) == 0 {
            weight.index_axis_mut(ndarray::Axis(0), k).fill(0);
        }
    }
    let bias = bias.then(|| Array1::from_iter((0..k).map(|_| r.below(61) as i32 - 30)));
    Case::new(spec, input, weight, bias, None).expect("generated case is valid")
}

/// Every combination of lowering and optimizations.
fn all_options() -> Vec<CompileOptions> {
    let mut all = Vec::new();
    for lowering in Lowering::ALL {
        for (skip_padding, weight_skipping) in
            [(true, true), (false, false), (true, false), (false, true)]
        {
            all.push(CompileOptions {
                skip_padding,
                weight_skipping,
                lowering,
                reduction: pimdiff_compiler::Reduction::Noc,
            });
        }
    }
    all
}

fn check(seed: u64) -> Result<bool, TestCaseError> {
    let case = random_case(seed);
    let expected = pimdiff_oracle::reference(&case).expect("oracle");
    let mut compiled = false;
    for options in all_options() {
        match compile_and_run(&case, &options) {
            Ok(Some(out)) => {
                compiled = true;
                prop_assert_eq!(
                    &out,
                    &expected,
                    "options {:?}, case {:?}",
                    options,
                    case.spec
                );
            }
            Ok(None) => {}
            Err(e) => prop_assert!(false, "options {:?}, case {:?}: {}", options, case.spec, e),
        }
    }
    // The result must not depend on how the cores interleave.
    for lowering in Lowering::ALL {
        let options = CompileOptions {
            lowering,
            reduction: pimdiff_compiler::Reduction::Noc,
            ..CompileOptions::default()
        };
        if let Ok(bundle) = pimdiff_compiler::compile(&case, &options) {
            let random = MachineOptions {
                schedule: Schedule::Random(seed),
                ..MachineOptions::default()
            };
            let out = common::run_bundle_with(&case, &bundle, random);
            prop_assert_eq!(
                out.as_ref(),
                Ok(&expected),
                "{} lowering, random schedule, case {:?}",
                lowering,
                case.spec
            );
        }
    }
    // Both lowerings share tiling and mapping, and the pixel-wise one needs no more local
    // memory: whatever one declines, the other declines the same way.
    for (skip_padding, weight_skipping) in [(true, true), (false, false)] {
        let [channel, pixel] = Lowering::ALL.map(|lowering| {
            pimdiff_compiler::compile(
                &case,
                &CompileOptions {
                    skip_padding,
                    weight_skipping,
                    lowering,
                    reduction: pimdiff_compiler::Reduction::Noc,
                },
            )
            .err()
        });
        prop_assert!(
            channel.is_none() || channel == pixel,
            "channel-wise declines with {:?}, pixel-wise with {:?}: case {:?}",
            channel,
            pixel,
            case.spec
        );
    }
    Ok(compiled)
}

/// `PIMDIFF_E2E_CASES` raises the number of cases for a soak run.
fn cases() -> u32 {
    std::env::var("PIMDIFF_E2E_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]
    #[test]
    fn compiled_programs_agree_with_the_oracle(seed in any::<u64>()) {
        check(seed)?;
    }
}

/// Most generated cases must actually compile, or the property above proves little.
#[test]
fn most_random_cases_compile() {
    let compiled = (0..200u64).filter(|&s| check(s).expect("agrees")).count();
    assert!(compiled >= 140, "only {compiled} of 200 cases compiled");
}

/// `per-case` compiles each case exactly as the strategy it picks for it, picks each for a
/// fair share of cases, and the programs it makes agree with the oracle.
#[test]
fn per_case_reduction_is_one_of_the_two_fixed_per_case() {
    use pimdiff_compiler::{compile, Reduction};
    let per_case = CompileOptions {
        reduction: Reduction::PerCase,
        ..CompileOptions::default()
    };
    let mut picked = [0usize; 2];
    for seed in 0..200u64 {
        let case = random_case(seed);
        let chosen = Reduction::PerCase.for_case(&case);
        assert_eq!(chosen, Reduction::PerCase.for_case(&case), "seed {seed}");
        picked[usize::from(chosen == Reduction::Gmem)] += 1;
        let explicit = CompileOptions {
            reduction: chosen,
            ..CompileOptions::default()
        };
        match (compile(&case, &per_case), compile(&case, &explicit)) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.program, b.program, "seed {seed}");
                let out = compile_and_run(&case, &per_case).expect("runs");
                if let Some(out) = out {
                    assert_eq!(
                        out,
                        pimdiff_oracle::reference(&case).unwrap(),
                        "seed {seed}"
                    );
                }
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "seed {seed}"),
            (a, b) => panic!("seed {seed}: {:?} vs {:?}", a.is_ok(), b.is_ok()),
        }
    }
    assert!(picked[0] >= 60 && picked[1] >= 60, "{picked:?}");
}
