//! Every cargo-fuzz target body, on stable: over its committed seed corpus
//! (`fuzz/corpus/<target>/seed-*`), and for about a second over random bytes from a seeded RNG
//! (regalloc2's habit), so `cargo test` exercises what `cargo +nightly fuzz run` does without
//! nightly or libFuzzer. A target body panics on a finding or a bug, which fails the test with
//! the report.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pimdiff::fuzz_targets::{self, LoweringTarget};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The committed seeds of `target`, by file name, sorted.
fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("seed-")
        })
        .map(|p: PathBuf| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Runs `body` over every seed of `target`; returns how many there were.
fn replay(target: &str, body: fn(&[u8])) -> usize {
    let seeds = seeds(target);
    for (name, bytes) in &seeds {
        eprintln!("{target}: {name}");
        body(bytes);
    }
    seeds.len()
}

/// Runs `body` for about `SMOKE` over random inputs of 0..=4096 bytes; returns the count.
fn smoke(body: fn(&[u8]), seed: u64) -> u64 {
    const SMOKE: Duration = Duration::from_secs(1);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let start = Instant::now();
    let mut buf = Vec::new();
    let mut runs = 0;
    while start.elapsed() < SMOKE {
        let len = rng.random_range(0..=4096usize);
        buf.resize(len, 0);
        rng.fill_bytes(&mut buf);
        body(&buf);
        runs += 1;
    }
    runs
}

// ---------------------------------------------------------------------------------------------
// conv_lowering / mvm_lowering

#[test]
fn conv_lowering_over_its_seed_corpus() {
    assert_eq!(replay("conv_lowering", fuzz_targets::conv_lowering), 6);
}

#[test]
fn mvm_lowering_over_its_seed_corpus() {
    assert_eq!(replay("mvm_lowering", fuzz_targets::mvm_lowering), 6);
}

#[test]
fn conv_lowering_smoke() {
    assert!(smoke(fuzz_targets::conv_lowering, 1) > 0);
}

#[test]
fn mvm_lowering_smoke() {
    assert!(smoke(fuzz_targets::mvm_lowering, 2) > 0);
}

/// The lowering targets force their operator whatever the bytes say, and every byte string,
/// the empty one included, decodes to a case (the generator never runs out of choices).
#[test]
fn lowering_targets_force_their_operator() {
    use pimdiff_oracle::Op;
    let mut inputs: Vec<Vec<u8>> = vec![Vec::new(), vec![0xff; 3]];
    inputs.extend(seeds("conv_lowering").into_iter().map(|(_, b)| b));
    inputs.extend(seeds("mvm_lowering").into_iter().map(|(_, b)| b));
    for bytes in &inputs {
        let conv = fuzz_targets::lowering_case(LoweringTarget::ConvLowering, bytes)
            .expect("a conv2d case");
        assert!(matches!(conv.spec.op, Op::Conv2d(_)), "{:?}", conv.spec.op);
        let mvm =
            fuzz_targets::lowering_case(LoweringTarget::MvmLowering, bytes).expect("an MVM case");
        assert!(matches!(mvm.spec.op, Op::Mvm(_)), "{:?}", mvm.spec.op);
    }
}

/// The same bytes give the same case: `pimdiff from-fuzz` depends on it.
#[test]
fn lowering_case_is_deterministic() {
    for (_, bytes) in seeds("conv_lowering") {
        let a = fuzz_targets::lowering_case(LoweringTarget::ConvLowering, &bytes);
        let b = fuzz_targets::lowering_case(LoweringTarget::ConvLowering, &bytes);
        assert_eq!(a, b);
    }
}

// ---------------------------------------------------------------------------------------------
// interp

#[test]
fn interp_over_its_seed_corpus() {
    assert_eq!(replay("interp", fuzz_targets::interp), 6);
}

#[test]
fn interp_smoke() {
    assert!(smoke(fuzz_targets::interp, 3) > 0);
}

// ---------------------------------------------------------------------------------------------
// parse_program

#[test]
fn parse_program_over_its_seed_corpus() {
    assert_eq!(replay("parse_program", fuzz_targets::parse_program), 10);
}

#[test]
fn parse_program_smoke() {
    assert!(smoke(fuzz_targets::parse_program, 4) > 0);
}

/// The seeds are what their names say: the well-formed ones load (so the fuzzer starts from
/// deep inside the readers), each `seed-bad-*` is refused.
#[test]
fn parse_program_seeds_load_as_named() {
    use pimdiff_isa::formats;
    for (name, bytes) in seeds("parse_program") {
        let loaded = formats::load_bytes(&bytes);
        match name.as_str() {
            "seed-all-ops.json"
            | "seed-asm.txt"
            | "seed-pimcomp-style.json"
            | "seed-gzip.json.gz"
            | "seed-core-keys.json" => {
                let p = loaded.unwrap_or_else(|e| panic!("{name}: {e}"));
                let cores = match name.as_str() {
                    "seed-all-ops.json" | "seed-asm.txt" => 3,
                    "seed-core-keys.json" => 11,
                    _ => 2,
                };
                assert_eq!(p.cores.len(), cores, "{name}");
            }
            "seed-dir-form" => {
                assert!(loaded.is_err(), "{name} is two files, not one");
                // As the target splits it: config.json NUL core_0.json.
                let nul = bytes.iter().position(|&b| b == 0).expect("a NUL byte");
                let dir = tempfile::tempdir().unwrap();
                std::fs::write(dir.path().join("config.json"), &bytes[..nul]).unwrap();
                std::fs::write(dir.path().join("core_0.json"), &bytes[nul + 1..]).unwrap();
                let p =
                    formats::read_program_dir(dir.path()).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(p.cores.len(), 1);
                assert_eq!(p.cores[0].len(), 7);
            }
            _ => assert!(loaded.is_err(), "{name} should be refused"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// parse_case

#[test]
fn parse_case_over_its_seed_corpus() {
    assert_eq!(replay("parse_case", fuzz_targets::parse_case), 12);
}

#[test]
fn parse_case_smoke() {
    assert!(smoke(fuzz_targets::parse_case, 5) > 0);
}

/// Reads the case a `parse_case` input describes, as the target does.
fn read_framed(bytes: &[u8]) -> Result<pimdiff_oracle::Case, pimdiff_oracle::CaseError> {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in fuzz_targets::decode_case_files(bytes) {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    pimdiff_oracle::io::read_case(dir.path())
}

/// The valid seeds read as cases and every other seed is refused for the reason its name
/// gives, so the corpus starts the fuzzer both inside and at the edges of the reader.
#[test]
fn parse_case_seeds_read_as_named() {
    use pimdiff_oracle::CaseError as E;
    for (name, bytes) in seeds("parse_case") {
        let result = read_framed(&bytes);
        let ok = match (name.as_str(), &result) {
            ("seed-conv-valid" | "seed-mvm-valid", Ok(_)) => true,
            (
                "seed-bad-dtype",
                Err(E::WrongDtype {
                    file: "input.npy", ..
                }),
            ) => true,
            (
                "seed-bad-shape",
                Err(E::ShapeMismatch {
                    file: "weight.npy", ..
                }),
            ) => true,
            (
                "seed-huge-shape",
                Err(E::ShapeMismatch {
                    file: "input.npy", ..
                }),
            ) => true,
            (
                "seed-missing-weight",
                Err(E::MissingFile {
                    file: "weight.npy", ..
                }),
            ) => true,
            (
                "seed-bias-absent",
                Err(E::MissingFile {
                    file: "bias.npy", ..
                }),
            ) => true,
            ("seed-bad-format", Err(E::UnsupportedFormat { .. })) => true,
            ("seed-unknown-field", Err(E::UnknownField { .. })) => true,
            (
                "seed-truncated-npy",
                Err(E::Npy {
                    file: "input.npy", ..
                }),
            ) => true,
            (
                "seed-big-endian-bias",
                Err(E::WrongDtype {
                    file: "bias.npy", ..
                }),
            ) => true,
            ("seed-fortran-order", r) => {
                r.is_ok()
                    || matches!(
                        r,
                        Err(E::Npy {
                            file: "input.npy",
                            ..
                        })
                    )
            }
            _ => false,
        };
        assert!(ok, "{name}: {result:?}");
    }
}

#[test]
fn case_file_framing_round_trips() {
    let files: [(&str, &[u8]); 3] = [
        ("case.json", b"{}"),
        ("weight.npy", b"w"),
        ("expected.npy", b""),
    ];
    let bytes = fuzz_targets::encode_case_files(&files);
    assert_eq!(bytes, [0b10101, 2, 0, b'{', b'}', 1, 0, b'w', 0, 0]);
    assert_eq!(fuzz_targets::decode_case_files(&bytes), files.to_vec());
    // Total over any bytes: a length past the end takes what remains, a missing one stops.
    assert_eq!(
        fuzz_targets::decode_case_files(&[0b11, 9, 0, b'x']),
        vec![("case.json", &b"x"[..])]
    );
    assert_eq!(
        fuzz_targets::decode_case_files(&[0b11, 1, 0, b'x', 7]),
        vec![("case.json", &b"x"[..])]
    );
    assert!(fuzz_targets::decode_case_files(&[]).is_empty());
}

// ---------------------------------------------------------------------------------------------
// pimdiff from-fuzz

fn pimdiff(args: &[&std::ffi::OsStr]) -> (i32, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap(), text)
}

fn seed_path(target: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target)
        .join(name)
}

/// An artifact that fails (here through an injected bug, as `PIMDIFF_FUZZ_INJECT_BUG` would
/// make the target fail) becomes a minimized finding directory that `repro` reproduces.
#[test]
fn from_fuzz_saves_a_minimized_finding_that_repro_reproduces() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("finding");
    let artifact = seed_path("conv_lowering", "seed-random-1000");
    let (code, text) = pimdiff(&[
        "from-fuzz".as_ref(),
        artifact.as_os_str(),
        "--target".as_ref(),
        "conv_lowering".as_ref(),
        out.as_os_str(),
        "--inject-bug".as_ref(),
        "missing-bias".as_ref(),
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("finding: mismatch: channels all, pixels all, batch all"),
        "{text}"
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("finding.json")).unwrap()).unwrap();
    assert_eq!(
        meta["signature"],
        "mismatch: channels all, pixels all, batch all"
    );
    assert_eq!(meta["origin"], serde_json::Value::Null);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.starts_with("# pimdiff: mismatch"), "{report}");
    assert!(report.contains(
        "From the cargo-fuzz target `conv_lowering`, artifact `seed-random-1000` (1000 bytes)"
    ));
    // Minimized: the bias bug needs one output element with a bias, nothing more.
    let case = pimdiff_oracle::io::read_case(&out).unwrap();
    assert_eq!(case.weight.len(), 1, "{:?}", case.spec);
    let (code, text) = pimdiff(&[
        "repro".as_ref(),
        out.as_os_str(),
        "--inject-bug".as_ref(),
        "missing-bias".as_ref(),
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("(met)"), "{text}");
}

#[test]
fn from_fuzz_of_an_artifact_that_passes_exits_0_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("finding");
    let artifact = seed_path("mvm_lowering", "seed-zeros-64");
    let (code, text) = pimdiff(&[
        "from-fuzz".as_ref(),
        artifact.as_os_str(),
        "--target".as_ref(),
        "mvm_lowering".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("no finding: the artifact does not reproduce"),
        "{text}"
    );
    assert!(text.contains("gives `pass`"), "{text}");
    assert!(!out.exists());
}

#[test]
fn from_fuzz_refuses_bad_input_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-artifact");
    let (code, text) = pimdiff(&[
        "from-fuzz".as_ref(),
        missing.as_os_str(),
        "--target".as_ref(),
        "conv_lowering".as_ref(),
        tmp.path().join("o").as_os_str(),
    ]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("cannot read the fuzz artifact"), "{text}");
    let artifact = seed_path("conv_lowering", "seed-zeros-64");
    let (code, text) = pimdiff(&[
        "from-fuzz".as_ref(),
        artifact.as_os_str(),
        "--target".as_ref(),
        "conv_lowering".as_ref(),
        tmp.path().as_os_str(),
    ]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("already exists"), "{text}");
    let (code, text) = pimdiff(&[
        "from-fuzz".as_ref(),
        artifact.as_os_str(),
        "--target".as_ref(),
        "interp".as_ref(),
        tmp.path().join("o").as_os_str(),
    ]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("invalid value 'interp'"), "{text}");
}

#[test]
fn the_lowering_targets_fuzz_the_compiler_they_are_told_to() {
    use fuzz_targets::{compiler_command, lowering_run_config_for, COMPILER_CMD_FILE};
    use pimdiff::check::RunConfig;
    use pimdiff::compilers::CompilerUnderTest;
    let tmp = tempfile::tempdir().unwrap();
    // Nothing set: the in-repo compiler.
    assert_eq!(compiler_command(None, Some(tmp.path())), Ok(None));
    assert_eq!(compiler_command(Some("  ".into()), None), Ok(None));
    assert_eq!(
        lowering_run_config_for(None, None).unwrap().compiler,
        RunConfig::default().compiler
    );
    // The file beside the executable (how ClusterFuzzLite is told), `{here}` its directory.
    std::fs::write(
        tmp.path().join(COMPILER_CMD_FILE),
        "\n  {here}/compiler/mycc {case} -o {out}\n",
    )
    .unwrap();
    assert_eq!(
        compiler_command(None, Some(tmp.path())),
        Ok(Some(format!(
            "'{}'/compiler/mycc {{case}} -o {{out}}",
            tmp.path().display()
        )))
    );
    // The environment wins over the file.
    let env = Some("cc2 {case} {out}".to_string());
    assert_eq!(
        compiler_command(env.clone(), Some(tmp.path())),
        Ok(env.clone())
    );
    assert_eq!(
        lowering_run_config_for(Some(""), env.clone())
            .unwrap()
            .compiler,
        CompilerUnderTest::External {
            command: "cc2 {case} {out}".into()
        }
    );
    // Two compilers at once, or an unknown bug class, stop the campaign.
    assert_eq!(
        lowering_run_config_for(Some("missing-bias"), env).unwrap_err(),
        "PIMDIFF_FUZZ_INJECT_BUG and an external compiler (PIMDIFF_FUZZ_COMPILER_CMD or \
         pimdiff-compiler-cmd) are both set: fuzz one compiler at a time"
    );
    assert!(lowering_run_config_for(Some("gremlins"), None)
        .unwrap_err()
        .starts_with("PIMDIFF_FUZZ_INJECT_BUG=\"gremlins\" names no bug class (known: "));
}
