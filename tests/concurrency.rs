//! `pimdiff run` with the race and uninitialized-read checks, and the schedule syntax.

use std::process::Command;

use pimdiff_isa::machine::Schedule;

/// Runs `pimdiff run` on `asm` (written to a temporary file) with `flags`; (exit code, stdout).
fn run(asm: &str, flags: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prog.s");
    std::fs::write(&path, asm).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .arg("run")
        .arg(&path)
        .args(["--local-memory-bytes", "64"])
        .args(flags)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Core 1 stores 8 bytes at 32 and syncs core 0; core 0 loads them, after a `wait` or not.
fn handoff(wait: bool) -> String {
    let wait = if wait { "wait e0, value=1\n" } else { "" };
    format!(
        "core 0:\nsldi r1, imm=32\nsldi r2, imm=0\n{wait}ld r2, r1, size=8\n\
         core 1:\nsldi r1, imm=32\nsldi r2, imm=0\nlldi r2, imm=5, size=8\nst r1, r2, size=8\n\
         sync e0, core=0\n"
    )
}

#[test]
fn a_race_is_a_finding_unless_the_check_is_off() {
    let (code, out) = run(&handoff(false), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("races: 1\n  data race on gmem[32, 40): core 0 pc 2"),
        "{out}"
    );
    assert!(
        out.contains("outcome: finished, with findings of the checks"),
        "{out}"
    );
    let (code, out) = run(&handoff(false), &["--no-race-check"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("races: not checked"), "{out}");
    let (code, out) = run(&handoff(true), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("races: 0\nuninitialized reads: 0\n"), "{out}");
}

#[test]
fn uninitialized_reads_are_fatal_only_with_strict() {
    let prog = "core 0:\nsldi r1, imm=0\nsldi r2, imm=16\nld r2, r1, size=4\n";
    let (code, out) = run(prog, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "uninitialized reads: 1\n  uninitialized read of gmem[0, 4): core 0 pc 2 \
             (ld r2, r1, size=4) reads bytes nothing wrote\n"
        ),
        "{out}"
    );
    assert_eq!(run(prog, &["--strict"]).0, 1);
}

#[test]
fn a_pct_schedule_runs_and_round_trips() {
    let s: Schedule = "pct:7:3".parse().unwrap();
    assert_eq!(s, Schedule::Pct { seed: 7, depth: 3 });
    assert_eq!(s.to_string(), "pct:7:3");
    assert_eq!(
        "random:4".parse::<Schedule>().unwrap().to_string(),
        "random:4"
    );
    assert_eq!(
        "pct:7:0".parse::<Schedule>().unwrap_err(),
        "`pct:7:0` is not a schedule (fixed, random:SEED or pct:SEED:DEPTH)"
    );
    let (code, out) = run(&handoff(true), &["--schedule", "pct:7:3"]);
    assert_eq!(code, 0, "{out}");
    let (code, _) = run(&handoff(true), &["--schedule", "pct:x"]);
    assert_eq!(code, 2);
}
