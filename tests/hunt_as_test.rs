//! A default tensor hunt as the only test of the in-repo compiler: what
//! `scripts/mutants-compiler.sh` runs for every cargo-mutants mutant of `compiler/`, so that a
//! mutant survives only when `pimdiff hunt --cases 3000 --lowering both` finds nothing.
//! Ignored in ordinary runs (it is a hunt, not a unit test); run it with
//! `cargo test -p pimdiff --test hunt_as_test -- --ignored`.
//! `PIMDIFF_HUNT_CASES` and `PIMDIFF_HUNT_SEED` change the case count and seed.

use std::process::Command;

#[test]
#[ignore = "a 3000-case hunt; run by scripts/mutants-compiler.sh"]
fn a_default_hunt_finds_nothing() {
    let cases = std::env::var("PIMDIFF_HUNT_CASES").unwrap_or_else(|_| "3000".into());
    let seed = std::env::var("PIMDIFF_HUNT_SEED").unwrap_or_else(|_| "20261122".into());
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .args(["hunt", "-q", "--seed", &seed, "--cases", &cases])
        .args(["--lowering", "both", "--minimize-time", "1s", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "the hunt found something or failed:\n{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}
