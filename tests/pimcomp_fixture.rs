//! A real PIMCOMP-NN program, shipped with the repository, runs to completion through
//! `pimdiff run` in any clone: PIMCOMP-NN's array-count groups, its float `lldi` immediates,
//! 105 cores exchanging partial sums. The counts are exact: the run is deterministic.

use std::path::Path;
use std::process::Command;

#[test]
fn alexnet_element_from_pimcomp_nn_runs_to_completion() {
    let program = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pimcomp/alexnet-element.json.gz");
    let out = Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .arg("run")
        .arg(&program)
        .output()
        .expect("spawn pimdiff");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "instructions executed: 1015972",
        "by opcode: sldi 678622, setbw 105, mvmul 32096, vvadd 32096, vvmax 6813, vrelu 4026, \
         ld 52059, st 1, lldi 2635, lmv 175377, send 16071, recv 16071",
        "noc: 16071 messages, 2830016 bytes, 11617872 hop-weighted bytes, 332 core pairs",
        "float lldi immediates: 2635",
        "outcome: finished",
    ] {
        assert!(
            stdout.lines().any(|l| l == line),
            "no line {line:?} in:\n{stdout}"
        );
    }
}
