//! The per-case watchdog and the findings it makes possible: a compiler that hangs is a
//! `timeout`, an interpreter that panics is an `interpreter-panic`.

use std::time::Duration;

use pimdiff::check::{check_case, check_case_within, Outcome, RunConfig};
use pimdiff::compilers::injected::BugClass;
use pimdiff::compilers::CompilerUnderTest;
use pimdiff::finding::Kind;
use pimdiff::targets::tensor::generate::{case_from_seed, GenConfig};
use pimdiff_isa::Opcode;
use pimdiff_oracle::{Case, Op};

/// Whether the last output column of a conv2d reads the right padding at some kernel column
/// (the cases `compiler-hang` loops on).
fn reads_right_padding_last(case: &Case) -> bool {
    let Op::Conv2d(op) = case.spec.op else {
        return false;
    };
    let w = case.spec.input_shape[3];
    let ow = case.spec.output_shape()[3];
    (0..op.kernel[1]).any(|j| {
        let x = (ow - 1) * op.stride[1] + j * op.dilation[1];
        x < op.padding[1] || x >= op.padding[1] + w
    })
}

#[test]
fn a_hanging_compiler_is_a_timeout_and_other_cases_pass() {
    let cfg = RunConfig {
        case_timeout: Duration::from_millis(300),
        ..RunConfig::with_compiler(CompilerUnderTest::Mutated(
            BugClass::CompilerHang,
            pimdiff_compiler::Lowering::Channel,
        ))
    };
    let correct = RunConfig::default();
    let gen = GenConfig::default();
    let mut hangs = 0;
    let mut passes = 0;
    for seed in 0..60u64 {
        let case = case_from_seed(&gen, seed);
        if check_case(&case, &correct).outcome != Outcome::Pass {
            continue;
        }
        if reads_right_padding_last(&case) {
            if hangs < 2 {
                let outcome = check_case_within(&case, &cfg).outcome;
                assert_eq!(
                    outcome,
                    Outcome::Timeout {
                        stage: "compile".into(),
                        limit: Duration::from_millis(300),
                        overrun: None,
                    },
                    "seed {seed}"
                );
                assert_eq!(outcome.signature().unwrap().to_string(), "timeout: compile");
                hangs += 1;
            }
        } else {
            assert_eq!(
                check_case_within(&case, &cfg).outcome,
                Outcome::Pass,
                "seed {seed}"
            );
            passes += 1;
        }
    }
    assert_eq!(hangs, 2);
    assert!(passes > 10, "{passes}");
}

#[test]
fn an_interpreter_panic_is_a_finding_of_its_own() {
    let cfg = RunConfig {
        interpreter_panic_on: Some(Opcode::Mvmul),
        ..RunConfig::default()
    };
    let has_mvmul = |c: &Case| {
        let r = check_case(c, &RunConfig::default());
        r.outcome == Outcome::Pass
            && r.bundle.is_some_and(|b| {
                b.program.cores[0]
                    .iter()
                    .any(|i| i.opcode() == Opcode::Mvmul)
            })
    };
    let case = (0..)
        .map(|s| case_from_seed(&GenConfig::default(), s))
        .find(has_mvmul)
        .unwrap();
    let result = check_case(&case, &cfg);
    let Outcome::InterpreterPanic { message } = &result.outcome else {
        panic!("{:?}", result.outcome)
    };
    assert!(
        message.starts_with("injected interpreter panic at core 0, pc "),
        "{message}"
    );
    assert!(result.outcome.is_finding());
    assert_eq!(result.outcome.kind(), Kind::InterpreterPanic);
    assert_eq!(
        result.outcome.signature().unwrap().to_string(),
        "interpreter-panic: injected interpreter panic at core N, pc N (mvmul)"
    );
    assert!(result.bundle.is_some());
}
