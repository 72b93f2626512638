//! Every reason the compiler declines a case, with its numbers, and that a declined case is
//! never a panic or an internal error.

mod common;

use common::{arch, conv, conv_case, mvm_case};
use pimdiff_compiler::gmem::MAX_INSTRUCTIONS;
use pimdiff_compiler::{compile, emit, CompileError, CompileOptions, Stage, Unsupported};
use pimdiff_oracle::{Conv2d, Mvm};

fn unsupported(r: Result<pimdiff_isa::Bundle, CompileError>) -> Unsupported {
    match r {
        Err(CompileError::Unsupported(u)) => u,
        Err(e) => panic!("expected unsupported, got {e}"),
        Ok(_) => panic!("expected unsupported, got a bundle"),
    }
}

#[test]
fn not_enough_arrays() {
    // 9 input tiles x 2 output tiles = 18 crossbars (weights all nonzero), 2 x 8 arrays.
    let m = Mvm {
        in_features: 9,
        out_features: 2,
        bias: false,
        relu: false,
    };
    let mut case = mvm_case(m, 1, arch(2, 8, 1, 1, 1 << 16), 1);
    case.weight.fill(1);
    let u = unsupported(compile(&case, &CompileOptions::default()));
    assert_eq!(
        u,
        Unsupported::NotEnoughArrays {
            needed: 18,
            available: 16
        }
    );
    assert_eq!(
        u.to_string(),
        "not enough crossbar arrays: 18 needed, 16 available (cores × arrays_per_core)"
    );
    // Weight skipping can make it fit: zero input feature 0's column.
    case.weight.index_axis_mut(ndarray::Axis(1), 0).fill(0);
    let out = common::compile_and_run(&case, &CompileOptions::default())
        .unwrap()
        .expect("fits with skipping");
    assert_eq!(out, pimdiff_oracle::reference(&case).unwrap());
    let off = CompileOptions {
        weight_skipping: false,
        ..CompileOptions::default()
    };
    assert_eq!(
        unsupported(compile(&case, &off)),
        Unsupported::NotEnoughArrays {
            needed: 18,
            available: 16
        }
    );
    // The Spatial IR can still be printed; the mapping cannot.
    assert!(emit(&case, &off, Stage::Spatial).is_ok());
    assert!(matches!(
        emit(&case, &off, Stage::Mapping),
        Err(CompileError::Unsupported(_))
    ));
}

#[test]
fn local_memory_too_small_even_for_one_gathered_pixel() {
    // A one-pixel window is 3x3x8 = 72 bytes; gathering needs an 8-byte input slot, plus an
    // accumulator and a scratch row (2 x 16 bytes) either way.
    let c = Conv2d {
        padding: [1; 4],
        ..conv(8, 4, [3, 3])
    };
    let mut case = conv_case(c, 1, 5, 5, arch(1, 16, 8, 4, 36), 2);
    let u = unsupported(compile(&case, &CompileOptions::default()));
    assert_eq!(
        u,
        Unsupported::LocalMemory {
            core: 0,
            needed: 40,
            available: 36
        }
    );
    assert_eq!(
        u.to_string(),
        "local memory too small on core 0: even a one-pixel chunk needs 40 bytes, 36 available"
    );
    // 40 bytes: one gathered pixel per chunk; 103: three; 104: a one-pixel window.
    for (lmem, chunks) in [
        (40, "Gather(1), 25 chunk(s)"),
        (103, "Gather(2), 15 chunk(s)"),
        (104, "Pixels(1), 25 chunk(s)"),
    ] {
        case.spec.arch.local_memory_bytes = lmem;
        let pim = emit(&case, &CompileOptions::default(), Stage::Pim).unwrap();
        assert!(pim.contains(chunks), "{lmem}: {pim}");
        for options in [
            CompileOptions::default(),
            CompileOptions {
                skip_padding: false,
                weight_skipping: false,
                ..CompileOptions::default()
            },
        ] {
            let out = common::compile_and_run(&case, &options)
                .unwrap()
                .expect("fits");
            assert_eq!(
                out,
                pimdiff_oracle::reference(&case).unwrap(),
                "{lmem} {options:?}"
            );
        }
    }
}

#[test]
fn too_many_instructions() {
    // 1x1 arrays: 16 x 16 x 9 = 2304 crossbars, each run for 128 x 128 pixels.
    let c = Conv2d {
        padding: [1; 4],
        ..conv(16, 16, [3, 3])
    };
    let mut case = conv_case(c, 1, 128, 128, arch(64, 64, 1, 1, 1 << 20), 3);
    case.weight.fill(1);
    let u = unsupported(compile(&case, &CompileOptions::default()));
    // Two instructions per mvmul (with its address) plus one store per output tile and pixel.
    let needed = 2304u64 * 128 * 128 * 2 + 16 * 128 * 128;
    assert_eq!(
        u,
        Unsupported::TooManyInstructions {
            needed,
            limit: MAX_INSTRUCTIONS
        }
    );
}

#[test]
fn very_many_crossbars_are_counted_before_the_ir_is_built() {
    // 1x1 arrays: 1024 x 2048 = 2 Mi crossbar matrices, more than the tiler builds up front.
    let m = Mvm {
        in_features: 2048,
        out_features: 1024,
        bias: false,
        relu: false,
    };
    let mut case = mvm_case(m, 1, arch(64, 64, 1, 1, 1 << 16), 6);
    case.weight.fill(1);
    case.weight.index_axis_mut(ndarray::Axis(0), 0).fill(0);
    let u = unsupported(compile(&case, &CompileOptions::default()));
    assert_eq!(
        u,
        Unsupported::NotEnoughArrays {
            needed: 1023 * 2048,
            available: 4096
        }
    );
}

#[test]
fn arch_too_large_for_the_program_config() {
    let m = Mvm {
        in_features: 2,
        out_features: 2,
        bias: false,
        relu: false,
    };
    let mut case = mvm_case(m, 1, arch(1, 1, 4, 4, 1024), 4);
    // Beyond the case limits, so only a hand-built case can say it.
    case.spec.arch.local_memory_bytes = 1 << 33;
    let u = unsupported(compile(&case, &CompileOptions::default()));
    assert_eq!(
        u,
        Unsupported::ArchTooLarge {
            field: "local_memory_bytes",
            value: 1 << 33
        }
    );
}

#[test]
fn a_hand_built_inconsistent_case_is_an_internal_error_not_a_panic() {
    let m = Mvm {
        in_features: 3,
        out_features: 2,
        bias: false,
        relu: false,
    };
    let mut case = mvm_case(m, 1, arch(1, 4, 4, 4, 1024), 5);
    case.weight = ndarray::ArrayD::zeros(vec![2, 2]);
    assert!(matches!(
        compile(&case, &CompileOptions::default()),
        Err(CompileError::Internal(_))
    ));
}

#[test]
fn pixel_wise_local_memory_fallbacks() {
    // The case above: 9 crossbars of 8 rows x 4 columns on one core. A patch is 9 x 8 = 72
    // bytes, the accumulator 16; staged scratch has 8 rows of 16 bytes, a single one 16.
    let c = Conv2d {
        padding: [1; 4],
        ..conv(8, 4, [3, 3])
    };
    let mut case = conv_case(c, 1, 5, 5, arch(1, 16, 8, 4, 39), 2);
    let pixel = CompileOptions {
        lowering: pimdiff_compiler::Lowering::Pixel,
        ..CompileOptions::default()
    };
    assert_eq!(
        unsupported(compile(&case, &pixel)),
        Unsupported::LocalMemory {
            core: 0,
            needed: 40,
            available: 39
        }
    );
    for (lmem, scheme) in [
        (40, "gathered tile by tile; one scratch row"),
        (103, "gathered tile by tile; one scratch row"),
        (104, "from a per-pixel patch; one scratch row"),
        (215, "from a per-pixel patch; one scratch row"),
        (
            216,
            "from a per-pixel patch; a scratch row per further crossbar",
        ),
    ] {
        case.spec.arch.local_memory_bytes = lmem;
        let pim = emit(&case, &pixel, Stage::Pim).unwrap();
        assert!(pim.contains(scheme), "{lmem}: {pim}");
        for skip_padding in [true, false] {
            let options = CompileOptions {
                skip_padding,
                weight_skipping: skip_padding,
                ..pixel
            };
            let out = common::compile_and_run(&case, &options)
                .unwrap()
                .expect("fits");
            assert_eq!(
                out,
                pimdiff_oracle::reference(&case).unwrap(),
                "{lmem} {options:?}"
            );
        }
    }
}
