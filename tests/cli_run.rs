//! `pimdiff run` end to end: exit codes 0 / 1 / 2, the summary, the dump, and the reports
//! that name core, pc and instruction.

#[path = "support/cli.rs"]
mod cli;

use std::path::Path;

use cli::{pimdiff, stderr, stdout};

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// Two cores: core 0 stores 0x2a.. to local memory and sends 4 bytes to core 1, which stores
/// them to global memory at 16.
const PING: &str = "\
.cores 2
core 0:
    sldi r1, imm=0
    lldi r1, imm=42, size=4
    send r1, core=1, size=4
core 1:
    sldi r2, imm=8
    recv r2, core=0, size=4
    sldi r3, imm=16
    st r3, r2, size=4
";

#[test]
fn a_finished_program_exits_0_with_a_summary_and_dumps_its_state() {
    let dir = tempfile::tempdir().unwrap();
    let prog = write(dir.path(), "ping.s", PING);
    let dump = dir.path().join("dump");
    let out = pimdiff(&["run", &prog, "--dump", dump.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let text = stdout(&out);
    assert!(text.contains("instructions executed: 7"), "{text}");
    assert!(text.contains("outcome: finished"), "{text}");
    // Global memory from address 0 up to the last touched byte: 16 zero bytes, then 42 × 4.
    let gmem = std::fs::read(dump.join("gmem.bin")).unwrap();
    assert_eq!(gmem.len(), 20);
    assert_eq!(&gmem[16..], &[42, 42, 42, 42]);
    assert!(gmem[..16].iter().all(|&b| b == 0));
    let regs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dump.join("core_1.regs.json")).unwrap())
            .unwrap();
    assert_eq!(regs["r"][3], 16);
    assert_eq!(regs["finished"], true);
    assert_eq!(regs["pc"], 4);
    assert!(dump.join("stats.json").is_file());
    assert!(dump.join("core_0.lmem.bin").is_file());
}

#[test]
fn the_same_program_finishes_under_a_random_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let prog = write(dir.path(), "ping.s", PING);
    let out = pimdiff(&["run", &prog, "--schedule", "random:7"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn an_out_of_bounds_access_exits_1_naming_core_pc_and_instruction() {
    let dir = tempfile::tempdir().unwrap();
    let prog = write(
        dir.path(),
        "oob.s",
        ".cores 1\ncore 0:\n    sldi r1, imm=1020\n    lldi r1, imm=1, size=8\n",
    );
    let out = pimdiff(&["run", &prog, "--local-memory-bytes", "1024"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("core 0"), "{err}");
    assert!(err.contains("pc 1"), "{err}");
    assert!(err.contains("lldi r1"), "{err}");
}

#[test]
fn a_deadlock_exits_1_with_what_each_core_waits_for() {
    let dir = tempfile::tempdir().unwrap();
    let prog = write(
        dir.path(),
        "cycle.s",
        ".cores 2\ncore 0:\n    recv r0, core=1, size=4\ncore 1:\n    recv r0, core=0, size=4\n",
    );
    let out = pimdiff(&["run", &prog]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.to_lowercase().contains("deadlock"), "{err}");
    assert!(err.contains("core 0") && err.contains("core 1"), "{err}");
}

#[test]
fn bad_input_exits_2_naming_the_culprit() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.json");
    let out = pimdiff(&["run", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("nope.json"), "{}", stderr(&out));

    let bad = write(
        dir.path(),
        "bad.json",
        r#"{"config": {"core_cnt": 1}, "core0": [{"op": "vvadd", "rd": 1, "rs1": 2, "rs2": 3, "len": -1}]}"#,
    );
    let out = pimdiff(&["run", &bad]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("core 0, instruction 0 (vvadd)") && err.contains("\"len\""),
        "{err}"
    );

    let prog = write(dir.path(), "ping.s", PING);
    let out = pimdiff(&["run", &prog, "--mesh", "0x3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
