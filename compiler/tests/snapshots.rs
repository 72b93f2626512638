//! Snapshots of the generated assembly for six tiny canonical cases (and three of them
//! lowered pixel-wise), and of every stage's IR for design.md's worked example. Review a
//! changed snapshot like code.

mod common;

use common::{arch, conv, conv_case, mvm_case};
use pimdiff_compiler::{emit, CompileOptions, Lowering, Stage};
use pimdiff_oracle::{Case, Conv2d, Mvm};

fn asm(case: &Case) -> String {
    asm_with(case, &CompileOptions::default())
}

fn asm_with(case: &Case, options: &CompileOptions) -> String {
    let text = emit(case, options, Stage::Asm).expect("compiles");
    // Every snapshot is also a correct program.
    let out = common::compile_and_run(case, options)
        .expect("runs")
        .expect("supported");
    assert_eq!(out, pimdiff_oracle::reference(case).expect("oracle"));
    text
}

const PIXEL: CompileOptions = CompileOptions {
    skip_padding: true,
    weight_skipping: true,
    lowering: Lowering::Pixel,
    reduction: pimdiff_compiler::Reduction::Noc,
};

#[test]
fn mvm_on_one_array() {
    let m = Mvm {
        in_features: 4,
        out_features: 3,
        bias: true,
        relu: true,
    };
    insta::assert_snapshot!(asm(&mvm_case(m, 1, arch(1, 1, 4, 4, 1024), 1)));
}

#[test]
fn mvm_needing_two_by_two_arrays() {
    let m = Mvm {
        in_features: 6,
        out_features: 5,
        bias: false,
        relu: false,
    };
    insta::assert_snapshot!(asm(&mvm_case(m, 1, arch(1, 4, 4, 4, 1024), 2)));
}

#[test]
fn conv_3x3_padding_1() {
    let c = Conv2d {
        padding: [1; 4],
        ..conv(2, 2, [3, 3])
    };
    insta::assert_snapshot!(asm(&conv_case(c, 1, 3, 3, arch(1, 16, 4, 4, 4096), 3)));
}

#[test]
fn pixel_conv_3x3_padding_1() {
    let c = Conv2d {
        padding: [1; 4],
        ..conv(2, 2, [3, 3])
    };
    let case = conv_case(c, 1, 3, 3, arch(1, 16, 4, 4, 4096), 3);
    insta::assert_snapshot!(asm_with(&case, &PIXEL));
}

#[test]
fn pixel_mvm_on_one_array() {
    let m = Mvm {
        in_features: 4,
        out_features: 3,
        bias: true,
        relu: true,
    };
    insta::assert_snapshot!(asm_with(&mvm_case(m, 1, arch(1, 1, 4, 4, 1024), 1), &PIXEL));
}

#[test]
fn conv_stride_2() {
    let c = Conv2d {
        stride: [2, 2],
        ..conv(2, 3, [2, 2])
    };
    insta::assert_snapshot!(asm(&conv_case(c, 1, 4, 4, arch(1, 8, 4, 4, 4096), 4)));
}

#[test]
fn conv_reduced_across_two_cores() {
    // 2 input tiles x 2 kernel positions = 4 crossbars, 2 arrays per core.
    let c = conv(4, 2, [1, 2]);
    insta::assert_snapshot!(asm(&conv_case(c, 1, 2, 3, arch(2, 2, 2, 4, 4096), 5)));
}

#[test]
fn pixel_conv_reduced_across_two_cores() {
    let c = conv(4, 2, [1, 2]);
    let case = conv_case(c, 1, 2, 3, arch(2, 2, 2, 4, 4096), 5);
    insta::assert_snapshot!(asm_with(&case, &PIXEL));
}

/// The same case reduced through global memory: the contributor `st`s its partial sum and
/// `sync`s the owner, which `wait`s, `ld`s, `vvadd`s and acknowledges.
#[test]
fn conv_reduced_across_two_cores_through_gmem() {
    let c = conv(4, 2, [1, 2]);
    let case = conv_case(c, 1, 2, 3, arch(2, 2, 2, 4, 4096), 5);
    let gmem = CompileOptions {
        reduction: pimdiff_compiler::Reduction::Gmem,
        ..CompileOptions::default()
    };
    insta::assert_snapshot!(asm_with(&case, &gmem));
}

#[test]
fn depthwise_conv() {
    let c = Conv2d {
        groups: 2,
        bias: true,
        ..conv(2, 2, [2, 2])
    };
    insta::assert_snapshot!(asm(&conv_case(c, 1, 3, 3, arch(1, 8, 4, 4, 4096), 6)));
}

/// design.md's worked example: C = 5, K = 6, 3×3, padding 1, 4×4 input, 4×4 arrays, 3
/// cores of 16 arrays. Weights are all nonzero so that all 36 crossbars are placed.
fn worked_example() -> Case {
    let c = Conv2d {
        padding: [1; 4],
        ..conv(5, 6, [3, 3])
    };
    let mut case = conv_case(c, 1, 4, 4, arch(3, 16, 4, 4, 1 << 16), 7);
    case.weight.mapv_inplace(|v| if v == 0 { 1 } else { v });
    case
}

#[test]
fn worked_example_spatial() {
    insta::assert_snapshot!(emit(
        &worked_example(),
        &CompileOptions::default(),
        Stage::Spatial
    )
    .unwrap());
}

#[test]
fn worked_example_mapping() {
    let text = emit(
        &worked_example(),
        &CompileOptions::default(),
        Stage::Mapping,
    )
    .unwrap();
    // As design.md says: tile 0 on cores 0 (16) and 1 (2), tile 1 on cores 1 (14) and 2 (4).
    assert!(
        text.starts_with("36 crossbars on 3 core(s); arrays used per core: [16, 16, 4]"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn worked_example_pim() {
    insta::assert_snapshot!(
        emit(&worked_example(), &CompileOptions::default(), Stage::Pim).unwrap()
    );
}

#[test]
fn pixel_worked_example_pim() {
    insta::assert_snapshot!(emit(&worked_example(), &PIXEL, Stage::Pim).unwrap());
}

#[test]
fn worked_example_runs() {
    let case = worked_example();
    for options in [
        CompileOptions::default(),
        CompileOptions {
            skip_padding: false,
            weight_skipping: false,
            ..CompileOptions::default()
        },
        PIXEL,
        CompileOptions {
            skip_padding: false,
            weight_skipping: false,
            lowering: Lowering::Pixel,
            reduction: pimdiff_compiler::Reduction::Noc,
        },
    ] {
        let out = common::compile_and_run(&case, &options).unwrap().unwrap();
        assert_eq!(out, pimdiff_oracle::reference(&case).unwrap());
    }
}

/// `--emit asm` is the ISA crate's assembly text: it parses back to the very program.
#[test]
fn emitted_assembly_parses_back_to_the_program() {
    let case = worked_example();
    let text = emit(&case, &CompileOptions::default(), Stage::Asm).unwrap();
    let program = pimdiff_compiler::compile(&case, &CompileOptions::default())
        .unwrap()
        .program;
    let parsed = pimdiff_isa::formats::asm::parse(&text).expect("parses");
    assert_eq!(parsed.cores, program.cores);
    assert_eq!(parsed.groups, program.groups);
}
