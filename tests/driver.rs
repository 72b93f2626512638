//! The differential driver: the in-repo compiler agrees with the oracle; external compilers
//! go through case and bundle directories with the documented exit-code contract; reports.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pimdiff::check::outcome::{Outcome, Signature};
use pimdiff::check::{check_case, RunConfig};
use pimdiff::compilers::CompilerUnderTest;
use pimdiff::finding::Kind;
use pimdiff::process::{Clock, Overrun};
use pimdiff::report::render_report;
use pimdiff::targets::tensor::generate::{case_from_seed, GenConfig};
use pimdiff_compiler::{compile, CompileOptions};
use pimdiff_isa::bundle::Bundle;
use pimdiff_oracle::Case;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_compiler.sh")
}

fn write_bundle(bundle: &Bundle, dir: &Path) {
    bundle.write_dir(dir).unwrap();
}

/// The first seed whose case compiles with the in-repo compiler, with a correct bundle
/// written to `template`.
fn compiling_case(template: &Path) -> Case {
    let cfg = GenConfig::default();
    for seed in 0.. {
        let case = case_from_seed(&cfg, seed);
        if let Ok(bundle) = compile(&case, &CompileOptions::default()) {
            write_bundle(&bundle, template);
            return case;
        }
    }
    unreachable!()
}

fn external(mode: &str, template: &Path, timeout: Duration) -> RunConfig {
    let command = format!(
        "TEMPLATE={} sh {} {mode} {{case}} {{out}}",
        pimdiff::compilers::external::shell_quote(&template.to_string_lossy()),
        pimdiff::compilers::external::shell_quote(&fixture().to_string_lossy())
    );
    RunConfig {
        external_timeout: timeout,
        ..RunConfig::with_compiler(CompilerUnderTest::External { command })
    }
}

#[test]
fn in_repo_compiler_passes_generated_cases() {
    let gen = GenConfig::default();
    let cfg = RunConfig::default();
    let mut unsupported = 0;
    for seed in 0..400u64 {
        let case = case_from_seed(&gen, seed);
        let result = check_case(&case, &cfg);
        match &result.outcome {
            Outcome::Pass => {
                assert_eq!(result.machine_output, result.oracle, "seed {seed}");
                assert!(result.bundle.is_some());
            }
            Outcome::Unsupported { .. } => unsupported += 1,
            other => panic!("seed {seed}: {}\n{:?}", other.summary(), case.spec),
        }
    }
    // The generator makes cases that fit their architecture, apart from a few on purpose.
    assert!(unsupported <= 40, "{unsupported} of 400 unsupported");
}

#[test]
fn random_schedule_agrees_too() {
    let gen = GenConfig::default();
    for seed in 0..100u64 {
        let cfg = RunConfig {
            schedule: pimdiff_isa::machine::Schedule::Random(seed),
            ..RunConfig::default()
        };
        let outcome = check_case(&case_from_seed(&gen, seed), &cfg).outcome;
        assert!(
            matches!(outcome, Outcome::Pass | Outcome::Unsupported { .. }),
            "seed {seed}: {}",
            outcome.summary()
        );
    }
}

#[test]
fn external_compiler_contract() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("template");
    let case = compiling_case(&template);
    let t = Duration::from_secs(20);

    assert_eq!(
        check_case(&case, &external("copy", &template, t)).outcome,
        Outcome::Pass
    );

    // Without placeholders the two paths are appended as the last two arguments.
    let RunConfig {
        compiler: CompilerUnderTest::External { command },
        ..
    } = external("copy", &template, t)
    else {
        unreachable!()
    };
    let bare = command.replace(" {case} {out}", "");
    assert!(!bare.contains('{'));
    let cfg = RunConfig {
        external_timeout: t,
        ..RunConfig::with_compiler(CompilerUnderTest::External { command: bare })
    };
    assert_eq!(check_case(&case, &cfg).outcome, Outcome::Pass);
    assert_eq!(
        pimdiff::compilers::external::command_line(
            "cc -o {out} {case}",
            Path::new("/t/c d"),
            Path::new("/t/it's")
        ),
        r"cc -o '/t/it'\''s' '/t/c d'"
    );

    let broken = check_case(&case, &external("broken-io", &template, t)).outcome;
    let Outcome::CompileError { message } = &broken else {
        panic!("{broken:?}")
    };
    assert!(
        message.starts_with("malformed bundle: the external compiler wrote io.json: "),
        "{message}"
    );
    assert!(broken.is_finding());

    assert_eq!(
        check_case(&case, &external("unsupported", &template, t)).outcome,
        Outcome::Unsupported {
            reason: "grouped convolutions are not supported".into()
        }
    );

    let failed = check_case(&case, &external("fail", &template, t)).outcome;
    assert_eq!(
        failed,
        Outcome::CompileError {
            message: "the external compiler failed (exit status 1): fake_compiler: internal error: tile 3 has no core"
                .into()
        }
    );
    assert_eq!(
        failed.signature(),
        Some(Signature {
            kind: Kind::CompileError,
            detail: "the external compiler failed (exit status N): fake_compiler: internal error: tile N has no core"
                .into()
        })
    );
}

/// The overrun of a compile-stage timeout (the external compiler's CPU and wall time).
fn overrun(outcome: &Outcome) -> Overrun {
    match outcome {
        Outcome::Timeout {
            stage,
            limit: _,
            overrun: Some(o),
        } if stage == "compile" => *o,
        other => panic!("not a compile timeout with its times: {other:?}"),
    }
}

/// The limit is CPU time of the compiler's process group: a compiler that blocks (here it
/// sleeps) uses none, and is ended by the wall-clock backstop, ten times the limit, as a
/// `timeout` finding that says so.
#[test]
fn a_blocked_external_compiler_is_killed_at_the_backstop_and_is_a_timeout_finding() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("template");
    let case = compiling_case(&template);
    let start = std::time::Instant::now();
    let outcome = check_case(
        &case,
        &external("sleep", &template, Duration::from_millis(300)),
    )
    .outcome;
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "the sleeping compiler was not killed"
    );
    let o = overrun(&outcome);
    assert_eq!(o.clock, Clock::Wall);
    assert!(o.wall >= Duration::from_secs(3), "{o:?}");
    assert!(o.cpu < Duration::from_millis(300), "{o:?}");
    assert!(outcome.is_finding());
    assert_eq!(
        outcome.signature().map(|s| s.to_string()).as_deref(),
        Some("timeout: compile")
    );
}

/// The acceptance of CPU-time limits: with a limit of one second, a compiler that sleeps
/// three seconds and then compiles passes (a slow wall clock is a loaded machine, not a hang),
/// and one that spins is a `timeout` by its CPU time, long before the ten-second backstop.
#[test]
fn a_compiler_that_sleeps_then_compiles_is_not_a_hang_and_one_that_spins_is() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("template");
    let case = compiling_case(&template);
    let second = Duration::from_secs(1);
    let start = std::time::Instant::now();
    let slow = check_case(&case, &external("sleep-copy", &template, second)).outcome;
    assert_eq!(slow, Outcome::Pass);
    assert!(start.elapsed() >= Duration::from_secs(3));
    let start = std::time::Instant::now();
    let spinning = check_case(&case, &external("spin", &template, second)).outcome;
    let spent = start.elapsed();
    let o = overrun(&spinning);
    assert_eq!(o.clock, Clock::Cpu, "{o:?}");
    assert!(o.cpu >= second, "{o:?}");
    assert!(spent < Duration::from_secs(10), "{spent:?}");
    assert_eq!(
        spinning.signature().map(|s| s.to_string()).as_deref(),
        Some("timeout: compile")
    );
}

#[test]
fn describe_is_stable() {
    assert_eq!(
        CompilerUnderTest::default().describe(),
        format!(
            "in-repo pimdiff-compiler {} (skip_padding, weight_skipping)",
            env!("CARGO_PKG_VERSION")
        )
    );
    assert_eq!(
        CompilerUnderTest::InRepo(CompileOptions {
            skip_padding: false,
            weight_skipping: false,
            ..CompileOptions::default()
        })
        .describe(),
        format!(
            "in-repo pimdiff-compiler {} (no optimizations)",
            env!("CARGO_PKG_VERSION")
        )
    );
    assert_eq!(
        CompilerUnderTest::External {
            command: "mycc {case} {out}".into()
        }
        .describe(),
        "external: mycc {case} {out}"
    );
}

#[test]
fn report_of_an_injected_mismatch() {
    use pimdiff::compilers::injected::BugClass;
    let gen = GenConfig::default();
    let cfg = RunConfig::with_compiler(CompilerUnderTest::Mutated(
        BugClass::MissingBias,
        pimdiff_compiler::Lowering::Channel,
    ));
    // The first seed the injected bug shows on, minimized so the snapshot stays small.
    let (case, result) = (0..)
        .map(|seed| {
            let case = case_from_seed(&gen, seed);
            let result = check_case(&case, &cfg);
            (case, result)
        })
        .find(|(_, r)| r.outcome.is_finding())
        .unwrap();
    let sig = result.outcome.signature().unwrap();
    let small = pimdiff::targets::tensor::shrink::minimize(
        &case,
        &cfg,
        &sig,
        &pimdiff::engine::MinimizeConfig::default(),
    );
    let result = check_case(&small.case, &cfg);
    insta::assert_snapshot!(render_report(&small.case, &result, &cfg));
}

#[test]
fn mismatch_classes() {
    use ndarray::{ArrayD, IxDyn};
    use pimdiff::check::compare::compare;
    let oracle = ArrayD::<i32>::zeros(IxDyn(&[2, 3, 4, 4]));
    assert_eq!(compare(&oracle, &oracle), None);

    // Border pixels of every channel and image.
    let mut border = oracle.clone();
    for n in 0..2 {
        for k in 0..3 {
            for i in 0..4 {
                border[[n, k, 0, i]] = 1;
                border[[n, k, i, 3]] = 1;
            }
        }
    }
    let m = compare(&oracle, &border).unwrap();
    assert_eq!((m.differing, m.total), (2 * 3 * 7, 96));
    assert_eq!(m.first[0], (vec![0, 0, 0, 0], 0, 1));
    assert_eq!(m.first.len(), 8);
    let sig = Outcome::Mismatch(m).signature().unwrap();
    assert_eq!(
        sig.to_string(),
        "mismatch: channels all, pixels border only, batch all"
    );

    // One interior pixel of one channel of the second image.
    let mut one = oracle.clone();
    one[[1, 2, 1, 2]] = -5;
    let m = compare(&oracle, &one).unwrap();
    assert_eq!(m.first, vec![(vec![1, 2, 1, 2], 0, -5)]);
    assert_eq!(
        Outcome::Mismatch(m).signature().unwrap().to_string(),
        "mismatch: channels some, pixels interior only, batch some"
    );

    // MVM: some features, all rows.
    let o2 = ArrayD::<i32>::zeros(IxDyn(&[2, 5]));
    let mut m2 = o2.clone();
    m2[[0, 4]] = 1;
    m2[[1, 4]] = 1;
    assert_eq!(
        Outcome::Mismatch(compare(&o2, &m2).unwrap())
            .signature()
            .unwrap()
            .to_string(),
        "mismatch: channels some, pixels -, batch all"
    );

    // Another shape altogether.
    let wrong = ArrayD::<i32>::zeros(IxDyn(&[2, 3, 4, 5]));
    assert_eq!(
        Outcome::Mismatch(compare(&oracle, &wrong).unwrap())
            .signature()
            .unwrap()
            .to_string(),
        "mismatch: output shape"
    );
}

#[test]
fn outcome_kinds_and_findings() {
    use pimdiff_isa::Opcode;
    let cases = [
        (Outcome::Pass, "pass", false),
        (
            Outcome::Fault {
                report: "r".into(),
                opcode: Opcode::Ld,
                kind: "LmemRange".into(),
            },
            "fault",
            true,
        ),
        (
            Outcome::Deadlock {
                report: "r".into(),
                waits: "blocked at recv".into(),
            },
            "deadlock",
            true,
        ),
        (Outcome::OutOfSteps { executed: 9 }, "out-of-steps", false),
        (
            Outcome::CompileError {
                message: "bad 12 in /tmp/x/core_3.json".into(),
            },
            "compile-error",
            true,
        ),
        (
            Outcome::Unsupported { reason: "r".into() },
            "unsupported",
            false,
        ),
        (Outcome::Poisoned { reason: "r".into() }, "poisoned", false),
    ];
    for (o, kind, finding) in &cases {
        assert_eq!(o.kind().as_str(), *kind);
        assert_eq!(o.is_finding(), *finding, "{kind}");
        assert_eq!(o.signature().is_some(), *finding, "{kind}");
    }
    assert_eq!(
        cases[1].0.signature().unwrap().to_string(),
        "fault: ld: LmemRange"
    );
    assert_eq!(
        cases[2].0.signature().unwrap().to_string(),
        "deadlock: blocked at recv"
    );
    assert_eq!(
        cases[4].0.signature().unwrap().to_string(),
        "compile-error: bad N in core_N.json"
    );
}

#[test]
fn report_of_an_injected_fault() {
    use pimdiff::compilers::injected::BugClass;
    use pimdiff::engine::MinimizeConfig;
    use pimdiff::targets::tensor::detection::first_detection;
    use pimdiff::targets::tensor::shrink::minimize;
    let found = first_detection(BugClass::WrongSendSize, &GenConfig::default(), 0, 2_000).unwrap();
    let cfg = RunConfig::with_compiler(CompilerUnderTest::Mutated(
        BugClass::WrongSendSize,
        pimdiff_compiler::Lowering::Channel,
    ));
    let small = minimize(
        &found.case,
        &cfg,
        &found.signature,
        &MinimizeConfig::default(),
    );
    let result = check_case(&small.case, &cfg);
    assert!(matches!(result.outcome, Outcome::Fault { .. }));
    insta::assert_snapshot!(render_report(&small.case, &result, &cfg));
}
