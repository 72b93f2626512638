//! The exit-code contract (`pimdiff::cli::exit_codes`), enforced: one table of (command line,
//! expected code) runs the real binary for every subcommand in every situation that applies —
//! success, finding, bad flag, missing file, malformed file, `compile`'s unsupported, and
//! could-not-judge — and every code the table expects of a command must be listed in that
//! command's `--help`, which must also carry an example. A subcommand without rows fails the
//! test, so a new command cannot skip the contract.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn pimdiff<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("spawn pimdiff")
}

/// One row: a command line and the code it must exit with.
struct Row {
    /// The subcommand (empty for the bare binary).
    command: &'static str,
    /// What situation the row is (for failure messages).
    situation: &'static str,
    args: Vec<String>,
    code: i32,
    /// Text its stderr must hold (the culprit a usage error names).
    says: Option<String>,
    /// Environment variables removed for the row.
    unset: &'static [&'static str],
}

/// The inputs the rows read, made once by the binary itself.
struct Fixture {
    _tmp: tempfile::TempDir,
    t: PathBuf,
}

/// Two cores exchanging four bytes: finishes in 7 steps.
const PING: &str = ".cores 2\ncore 0:\n    sldi r1, imm=0\n    lldi r1, imm=42, size=4\n    \
                    send r1, core=1, size=4\ncore 1:\n    sldi r2, imm=8\n    recv r2, core=0, \
                    size=4\n    sldi r3, imm=16\n    st r3, r2, size=4\n";
/// A store past the end of a 1 KiB local memory: a fault.
const OOB: &str = ".cores 1\ncore 0:\n    sldi r1, imm=1020\n    lldi r1, imm=1, size=8\n";

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path().to_path_buf();
        let ok = |args: &[&str]| {
            let o = pimdiff(args);
            assert_eq!(o.status.code(), Some(0), "{args:?}: {o:?}");
        };
        let p = |name: &str| t.join(name).to_str().unwrap().to_string();
        ok(&["new-case", "--op", "conv2d", "--expected", &p("case")]);
        ok(&[
            "new-case",
            "--op",
            "conv2d",
            "--expected",
            "--seed",
            "9",
            &p("case2"),
        ]);
        copy_dir(&t.join("case"), &t.join("case-wrong"));
        std::fs::copy(
            t.join("case2/expected.npy"),
            t.join("case-wrong/expected.npy"),
        )
        .unwrap();
        copy_dir(&t.join("case"), &t.join("case-export"));
        std::fs::create_dir_all(t.join("bad-case")).unwrap();
        std::fs::write(t.join("bad-case/case.json"), "{ not json").unwrap();
        std::fs::create_dir_all(t.join("bad-corpus/k1")).unwrap();
        std::fs::write(t.join("bad-corpus/k1/case.json"), "{ not json").unwrap();
        std::fs::create_dir_all(t.join("bad-summary")).unwrap();
        std::fs::write(t.join("bad-summary/summary.json"), "{\"seed\": ").unwrap();
        std::fs::write(t.join("ping.s"), PING).unwrap();
        std::fs::write(t.join("oob.s"), OOB).unwrap();
        std::fs::write(t.join("garbage.txt"), "this is not a program\n").unwrap();
        std::fs::write(t.join("empty.bin"), b"").unwrap();
        ok(&["compile", &p("case"), "-o", &p("bundle")]);
        copy_dir(
            &repo().join("corpus/features/conv-bias"),
            &t.join("replay-bug/conv-bias"),
        );
        Fixture { _tmp: tmp, t }
    }

    /// A path under the fixture's directory.
    fn p(&self, name: &str) -> String {
        self.t.join(name).to_str().unwrap().to_string()
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// An external compiler that declines every case (exit 3).
fn declining() -> String {
    format!(
        "sh '{}' plain",
        repo()
            .join("tests/fixtures/declining_compiler.sh")
            .display()
    )
}

fn fake_pimcomp(name: &str) -> String {
    repo()
        .join("tests/fixtures/pimcomp-fake")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

fn fuzz_seed(name: &str) -> String {
    format!("fuzz/corpus/conv_lowering/{name}")
}

/// A row, with `args` after the subcommand.
fn row(command: &'static str, situation: &'static str, args: &[&str], code: i32) -> Row {
    let mut all: Vec<String> = Vec::new();
    if !command.is_empty() {
        all.push(command.to_string());
    }
    all.extend(args.iter().map(|a| a.to_string()));
    Row {
        command,
        situation,
        args: all,
        code,
        says: None,
        unset: &[],
    }
}

/// A row whose stderr must name `says`, run without the variables `unset`.
fn row_saying(r: Row, says: &str, unset: &'static [&'static str]) -> Row {
    Row {
        says: Some(says.to_string()),
        unset,
        ..r
    }
}

/// Rows that need nothing but the fixture (hunts among them, whose outputs the second table
/// merges).
fn first_rows(f: &Fixture) -> Vec<Row> {
    let p = |n: &str| f.p(n);
    let decline = declining();
    let hunt = |out: &str, extra: &[&str]| {
        let mut a = vec![
            "--cases".to_string(),
            "8".into(),
            "--jobs".into(),
            "1".into(),
            "--quiet".into(),
            "--minimize-time".into(),
            "1s".into(),
            "--out".into(),
            p(out),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let hunt_row = |situation, out: &str, extra: &[&str], code| {
        let a = hunt(out, extra);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        row("hunt", situation, &refs, code)
    };
    let setup = hunt(
        "h-setup",
        &["--compiler-cmd", "pimdiff-no-such-compiler {case} {out}"],
    );
    let setup: Vec<&str> = setup.iter().map(String::as_str).collect();
    let mut rows =
        vec![
        row_saying(
            row("hunt", "compiler command not found", &setup, 2),
            "fix: `sh` could not find the command",
            &[],
        ),
        row("", "help", &["--help"], 0),
        row("", "version", &["--version"], 0),
        row("", "no subcommand", &[], 2),
        row("", "unknown subcommand", &["frobnicate"], 2),
        // run
        row("run", "finished", &[&p("ping.s")], 0),
        row(
            "run",
            "fault",
            &[&p("oob.s"), "--local-memory-bytes", "1024"],
            1,
        ),
        row(
            "run",
            "step budget spent",
            &[&p("ping.s"), "--step-budget", "2"],
            4,
        ),
        row("run", "bad flag", &[&p("ping.s"), "--schedule", "often"], 2),
        row("run", "missing file", &[&p("nope.s")], 2),
        row("run", "malformed file", &[&p("garbage.txt")], 2),
        // asm, disasm
        row(
            "asm",
            "assembled",
            &[&p("ping.s"), "-o", &p("ping.json")],
            0,
        ),
        row("asm", "bad flag", &[&p("ping.s"), "--bogus"], 2),
        row("asm", "missing file", &[&p("nope.s")], 2),
        row("asm", "malformed file", &[&p("garbage.txt")], 2),
        row(
            "disasm",
            "disassembled",
            &[&p("bundle"), "-o", &p("b.s")],
            0,
        ),
        row("disasm", "bad flag", &[&p("bundle"), "--bogus"], 2),
        row("disasm", "missing file", &[&p("nope.json")], 2),
        row("disasm", "malformed file", &[&p("garbage.txt")], 2),
        // oracle
        row("oracle", "agrees", &[&p("case")], 0),
        row("oracle", "expected.npy differs", &[&p("case-wrong")], 1),
        row("oracle", "bad flag", &[&p("case"), "--bogus"], 2),
        row("oracle", "missing case", &[&p("nope")], 2),
        row("oracle", "malformed case", &[&p("bad-case")], 2),
        // completions, man
        row("completions", "written", &["bash"], 0),
        row("completions", "bad flag", &["tcsh"], 2),
        row("man", "written", &[], 0),
        row("man", "into a directory", &["--out", &p("man-pages")], 0),
        row("man", "bad flag", &["--bogus"], 2),
        // new-case
        row("new-case", "written", &["--op", "mvm", &p("new-mvm")], 0),
        row("new-case", "bad flag", &["--op", "conv3d", &p("new-x")], 2),
        row(
            "new-case",
            "invalid case",
            &["--op", "conv2d", "--stride", "0", &p("new-y")],
            2,
        ),
        row(
            "new-case",
            "OUT_DIR not empty",
            &["--op", "mvm", &p("case")],
            2,
        ),
        // compile
        row("compile", "compiled", &[&p("case"), "-o", &p("bundle2")], 0),
        row(
            "compile",
            "unsupported",
            &["corpus/limits/not-enough-arrays", "-o", &p("bundle3")],
            3,
        ),
        row(
            "compile",
            "bad flag",
            &[&p("case"), "--lowering", "diagonal", "-o", &p("b4")],
            2,
        ),
        row("compile", "missing case", &[&p("nope"), "-o", &p("b5")], 2),
        row(
            "compile",
            "malformed case",
            &[&p("bad-case"), "-o", &p("b6")],
            2,
        ),
        row("compile", "--serve, no requests", &["--serve"], 0),
        row(
            "compile",
            "--serve with a case",
            &["--serve", &p("case")],
            2,
        ),
        row(
            "compile",
            "injected bug",
            &[&p("case"), "-o", &p("b7"), "--inject-bug", "missing-bias"],
            0,
        ),
        // check-bundle
        row("check-bundle", "valid", &[&p("bundle")], 0),
        row(
            "check-bundle",
            "fits its case",
            &[&p("bundle"), "--case", &p("case")],
            0,
        ),
        row_saying(
            row(
                "check-bundle",
                "another case's architecture",
                &[&p("bundle"), "--case", "corpus/limits/not-enough-arrays"],
                2,
            ),
            "config.json: field `core_cnt`: 4, but the case's architecture has 1 cores",
            &[],
        ),
        row("check-bundle", "missing bundle", &[&p("nope")], 2),
        row("check-bundle", "malformed case", &[&p("bundle"), "--case", &p("bad-case")], 2),
        row("check-bundle", "bad flag", &[&p("bundle"), "--bogus"], 2),
        // export
        row("export", "written", &[&p("case-export")], 0),
        row("export", "bad flag", &[&p("case-export"), "--bogus"], 2),
        row("export", "missing case", &[&p("nope")], 2),
        row("export", "malformed case", &[&p("bad-case")], 2),
        // import-onnx
        row(
            "import-onnx",
            "imported",
            &[&p("case/model.onnx"), "--out", &p("imported")],
            0,
        ),
        row(
            "import-onnx",
            "bad flag",
            &[&p("case/model.onnx"), "--out", &p("i2"), "--seed", "x"],
            2,
        ),
        row(
            "import-onnx",
            "missing model",
            &[&p("nope.onnx"), "--out", &p("i3")],
            2,
        ),
        row(
            "import-onnx",
            "malformed model",
            &[&p("garbage.txt"), "--out", &p("i4")],
            2,
        ),
        // lowerings
        row(
            "lowerings",
            "both agree",
            &["--out", &p("low"), "--runs", "1", "--layer", "fc"],
            0,
        ),
        row(
            "lowerings",
            "bad flag",
            &["--out", &p("low2"), "--runs", "0"],
            2,
        ),
        row(
            "lowerings",
            "no such layer",
            &["--out", &p("low3"), "--layer", "no-such-layer"],
            2,
        ),
        // repro
        row("repro", "passes", &["corpus/features/conv-plain"], 0),
        row("repro", "finding", &["corpus/bugs/missing-bias"], 1),
        row(
            "repro",
            "expected unsupported and unsupported",
            &["corpus/limits/not-enough-arrays"],
            4,
        ),
        row(
            "repro",
            "bad flag",
            &["corpus/features/conv-plain", "--schedule", "often"],
            2,
        ),
        row("repro", "missing case", &[&p("nope")], 2),
        row("repro", "malformed case", &[&p("bad-case")], 2),
        // replay
        row(
            "replay",
            "every expectation met",
            &["corpus/features", "corpus/limits"],
            0,
        ),
        row(
            "replay",
            "finding where none expected",
            &[&p("replay-bug"), "--inject-bug", "missing-bias"],
            1,
        ),
        row(
            "replay",
            "declined, expected to pass",
            &["corpus/features/conv-plain", "--compiler-cmd", &decline],
            4,
        ),
        row("replay", "bad flag", &["corpus/features", "--jobs", "x"], 2),
        row("replay", "missing directory", &[&p("nope")], 2),
        row("replay", "malformed case", &[&p("bad-case")], 2),
        // hunt (the outputs feed the merge rows)
        hunt_row(
            "clean shard 0/2",
            "h-clean0",
            &["--seed", "1", "--shard", "0/2"],
            0,
        ),
        hunt_row(
            "clean shard 1/2",
            "h-clean1",
            &["--seed", "1", "--shard", "1/2"],
            0,
        ),
        hunt_row(
            "finding",
            "h-bug",
            &["--seed", "5", "--inject-bug", "missing-bias"],
            1,
        ),
        hunt_row(
            "finding, another seed",
            "h-bug2",
            &["--seed", "6", "--inject-bug", "missing-bias"],
            1,
        ),
        hunt_row(
            "compiler declines everything",
            "h-decline",
            &["--seed", "2", "--compiler-cmd", &decline],
            4,
        ),
        hunt_row(
            "pimcomp-nn finding",
            "h-pc",
            &[
                "--seed",
                "3",
                "--target",
                "pimcomp-nn",
                "--mode",
                "element",
                "--pimcomp-bin",
                &fake_pimcomp("PIMCOMP-NN"),
            ],
            1,
        ),
        hunt_row("bad flag", "h-x", &["--shard", "2/2"], 2),
        hunt_row("guided, clean", "h-guided", &["--seed", "1", "--guided"], 0),
        hunt_row(
            "guided, malformed corpus",
            "h-gc",
            &["--guided", "--corpus", &p("bad-corpus")],
            2,
        ),
        hunt_row(
            "corpus without --guided",
            "h-gc2",
            &["--corpus", &p("bad-corpus")],
            2,
        ),
        hunt_row("flag of another target", "h-y", &["--mode", "batch"], 2),
        hunt_row(
            "missing compiler binary",
            "h-z",
            &[
                "--target",
                "pimcomp-nn",
                "--pimcomp-bin",
                &p("no-such-PIMCOMP-NN"),
            ],
            2,
        ),
        hunt_row(
            "--coverage with a binary not built for it",
            "h-cov",
            &[
                "--target",
                "pimcomp-nn",
                "--coverage",
                "--pimcomp-bin",
                &fake_pimcomp("PIMCOMP-NN"),
            ],
            2,
        ),
        row_saying(
            hunt_row("--coverage of another target", "h-cov2", &["--coverage"], 2),
            "--coverage is a flag of --target pimcomp-nn and --target puma, not of --target cases",
            &[],
        ),
        // from-fuzz
        row(
            "from-fuzz",
            "does not reproduce",
            &[
                &fuzz_seed("seed-random-200"),
                "--target",
                "conv_lowering",
                &p("ff0"),
            ],
            0,
        ),
        row(
            "from-fuzz",
            "no case in the bytes",
            &[&p("empty.bin"), "--target", "conv_lowering", &p("ff00")],
            0,
        ),
        row(
            "from-fuzz",
            "finding",
            &[
                &fuzz_seed("seed-random-200"),
                "--target",
                "conv_lowering",
                &p("ff1"),
                "--inject-bug",
                "store-off-by-one",
                "--minimize-time",
                "0s",
            ],
            1,
        ),
        row(
            "from-fuzz",
            "declined",
            &[
                &fuzz_seed("seed-ones-256"),
                "--target",
                "conv_lowering",
                &p("ff4"),
            ],
            4,
        ),
        row(
            "from-fuzz",
            "bad flag",
            &[&p("empty.bin"), "--target", "interp", &p("ff5")],
            2,
        ),
        row(
            "from-fuzz",
            "missing artifact",
            &[&p("nope.bin"), "--target", "conv_lowering", &p("ff6")],
            2,
        ),
        row(
            "from-fuzz",
            "OUT_DIR exists",
            &[&p("empty.bin"), "--target", "conv_lowering", &p("case")],
            2,
        ),
    ];
    rows.extend(pimcomp_rows(f));
    rows.extend(puma_rows(f));
    rows.extend(puma_model_rows(f));
    rows.extend(cim_mlc_rows(f));
    rows
}

/// `hunt --target cim-mlc` and `repro --cim-mlc-dir`: a missing or wrong tree is a usage error
/// before any case runs; a finding needs `CIM_MLC_DIR` (a tree of `scripts/build-cim-mlc.sh`).
fn cim_mlc_rows(f: &Fixture) -> Vec<Row> {
    let p = |n: &str| f.p(n);
    let hunt = |out: &str, extra: &[&str]| {
        let mut a: Vec<String> = ["--target", "cim-mlc", "--cases", "4", "--jobs", "1"]
            .into_iter()
            .chain(["--quiet", "--minimize-time", "1s", "--out"])
            .map(str::to_string)
            .collect();
        a.push(p(out));
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let not_a_tree = p("case");
    let mut rows = vec![
        row_saying(
            row("hunt", "cim-mlc: no tree", &refs(&hunt("cm-z", &[])), 2),
            "--cim-mlc-dir",
            &["CIM_MLC_DIR"],
        ),
        row_saying(
            row(
                "hunt",
                "cim-mlc: --cim-mlc-dir not a tree",
                &refs(&hunt("cm-w", &["--cim-mlc-dir", &not_a_tree])),
                2,
            ),
            "scripts/build-cim-mlc.sh",
            &[],
        ),
        row(
            "hunt",
            "cim-mlc flag with another target",
            &["--cim-mlc-protocol", "process", "--out", &p("cm-y")],
            2,
        ),
    ];
    match std::env::var("CIM_MLC_DIR")
        .ok()
        .filter(|d| Path::new(d).join("manifest.json").is_file())
    {
        Some(dir) => rows.push(row(
            "hunt",
            "cim-mlc finding",
            &refs(&hunt("h-cim", &["--seed", "7", "--cim-mlc-dir", &dir])),
            1,
        )),
        None => eprintln!("CIM_MLC_DIR unset: skipping the exit-code row that runs CIM-MLC"),
    }
    rows
}

/// `puma MODEL.cpp`: usage errors need no compiler; the verdicts need `PUMA_DIR`, a tree with
/// the model-graph patch (`tests/fixtures/puma-models/`).
fn puma_model_rows(f: &Fixture) -> Vec<Row> {
    let model = |n: &str| format!("tests/fixtures/puma-models/{n}");
    // A tree with a driver but built before the model-graph patch (its patches.txt lacks it).
    let old_tree = f.t.join("puma-plain-tree");
    let old_tree = old_tree.to_str().unwrap().to_string();
    let mut rows = vec![
        row_saying(
            row("puma", "no tree", &[&model("conv.cpp")], 2),
            "--puma-dir",
            &["PUMA_DIR"],
        ),
        row_saying(
            row("puma", "missing model", &[&f.p("nope.cpp")], 2),
            "nope.cpp",
            &[],
        ),
        row_saying(
            row(
                "puma",
                "tree without the graph patch",
                &[&model("conv.cpp"), "--puma-dir", &old_tree],
                2,
            ),
            "0002-model-graph.patch",
            &[],
        ),
    ];
    if let Some(dir) = puma_dir() {
        let run = |situation, name: &str, code| {
            row("puma", situation, &[&model(name), "--puma-dir", &dir], code)
        };
        rows.extend([
            run("agrees", "conv.cpp", 0),
            run("compiled programs fault", "overflow.cpp", 1),
            run("nothing to compare", "no-output.cpp", 4),
            row_saying(
                run("does not build", "does-not-build.cpp", 2),
                "does-not-build.cpp:12",
                &[],
            ),
        ]);
    }
    rows
}

/// The PUMA compiler's tree, when the environment gives one (`PUMA_DIR`, as the PUMA tests
/// read it); without it the rows that run the compiler are skipped with a message.
fn puma_dir() -> Option<String> {
    let dir = std::env::var("PUMA_DIR")
        .ok()
        .filter(|d| Path::new(d).is_dir());
    if dir.is_none() {
        eprintln!("PUMA_DIR unset: skipping the exit-code rows that run the PUMA compiler");
    }
    dir
}

fn refs(a: &[String]) -> Vec<&str> {
    a.iter().map(String::as_str).collect()
}

/// `hunt --target puma`: usage errors need no compiler; a finding needs `PUMA_DIR`.
fn puma_rows(f: &Fixture) -> Vec<Row> {
    let p = |n: &str| f.p(n);
    let hunt = |out: &str, extra: &[&str]| {
        let mut a = vec!["--target", "puma", "--cases", "8", "--jobs", "1", "--quiet"];
        a.extend(["--minimize-time", "1s", "--out"]);
        let out = p(out);
        let mut a: Vec<String> = a.into_iter().map(str::to_string).collect();
        a.push(out);
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let not_a_tree = p("case");
    // A tree with a driver (never run: the refusal comes first) but no coverage build.
    let plain_tree = f.t.join("puma-plain-tree");
    std::fs::create_dir_all(plain_tree.join("bin")).unwrap();
    let driver = plain_tree.join("bin/puma-driver");
    std::fs::write(&driver, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&driver, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let plain_tree = plain_tree.to_str().unwrap().to_string();
    let mut rows = vec![
        row_saying(
            row(
                "hunt",
                "puma: --coverage with a tree not built for it",
                &refs(&hunt("pu-cov", &["--coverage", "--puma-dir", &plain_tree])),
                2,
            ),
            "coverage-source.txt",
            &[],
        ),
        row(
            "hunt",
            "puma: flag of another target",
            &refs(&hunt("pu-x", &["--mode", "batch"])),
            2,
        ),
        row_saying(
            row(
                "hunt",
                "puma: --guided",
                &refs(&hunt("pu-g", &["--guided"])),
                2,
            ),
            "--guided",
            &[],
        ),
        row(
            "hunt",
            "puma flag with another target",
            &["--puma-quirks", "simulator", "--out", &p("pu-y")],
            2,
        ),
        row_saying(
            row("hunt", "puma: no tree", &refs(&hunt("pu-z", &[])), 2),
            "--puma-dir",
            &["PUMA_DIR", "PUMA_SANITIZE_DIR"],
        ),
        row_saying(
            row(
                "hunt",
                "puma: --puma-dir not a tree",
                &refs(&hunt("pu-w", &["--puma-dir", &not_a_tree])),
                2,
            ),
            &not_a_tree,
            &[],
        ),
    ];
    if let Some(dir) = puma_dir() {
        rows.push(row(
            "hunt",
            "puma finding",
            &refs(&hunt("h-puma", &["--seed", "7", "--puma-dir", &dir])),
            1,
        ));
    }
    rows
}

/// `repro` of a PUMA finding of the first rows' hunt: as saved (reproduces), with a saved
/// signature the compiler no longer shows (a finding of another build: does not), and with
/// its `network.txt` edited (unreadable as a finding).
fn puma_repro_rows(f: &Fixture) -> Vec<Row> {
    if puma_dir().is_none() {
        return Vec::new();
    }
    let findings = f.t.join("h-puma/findings");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&findings)
        .unwrap_or_else(|e| panic!("{}: {e}", findings.display()))
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let found = dirs.first().expect("the PUMA hunt saved a finding").clone();
    let gone = f.t.join("pu-gone");
    copy_dir(&found, &gone);
    let meta = gone.join("finding.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&meta).unwrap()).unwrap();
    json["signature"] = "crash: SIGSEGV/no<such<function".into();
    std::fs::write(&meta, json.to_string()).unwrap();
    let edited = f.t.join("pu-edited");
    copy_dir(&found, &edited);
    std::fs::write(edited.join("network.txt"), "pimdiff-puma-network 1\nend\n").unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    vec![
        row("repro", "puma finding reproduces", &[&s(&found)], 1),
        row("repro", "puma finding does not reproduce", &[&s(&gone)], 0),
        row_saying(
            row("repro", "puma finding edited", &[&s(&edited)], 2),
            "network.txt",
            &[],
        ),
    ]
}

fn pimcomp_rows(f: &Fixture) -> Vec<Row> {
    let table = fake_pimcomp("element-VerificationInfo.json.gz");
    let program = fake_pimcomp("element-SimulationInfo.gz");
    vec![
        row("pimcomp", "exact", &[&program, "--verification", &table], 0),
        row(
            "pimcomp",
            "mismatch",
            &[
                &fake_pimcomp("element-SimulationInfo-lmv-shifted.gz"),
                "--verification",
                &table,
            ],
            1,
        ),
        row(
            "pimcomp",
            "bad flag",
            &[&program, "--verification", &table, "--schedule", "often"],
            2,
        ),
        row(
            "pimcomp",
            "missing program",
            &[&f.p("nope.gz"), "--verification", &table],
            2,
        ),
        row(
            "pimcomp",
            "malformed program",
            &[&f.p("garbage.txt"), "--verification", &table],
            2,
        ),
    ]
}

/// Rows that read the first rows' hunt outputs.
fn then_rows(f: &Fixture) -> Vec<Row> {
    let p = |n: &str| f.p(n);
    let mut rows = puma_repro_rows(f);
    rows.extend([
        row(
            "merge",
            "clean shards",
            &[&p("h-clean0"), &p("h-clean1"), "--out", &p("m-clean")],
            0,
        ),
        row(
            "merge",
            "findings",
            &[&p("h-bug"), &p("h-bug2"), "--out", &p("m-bug")],
            1,
        ),
        row(
            "merge",
            "findings and no verdict",
            &[&p("h-bug"), &p("h-decline"), "--out", &p("m-both")],
            1,
        ),
        row(
            "merge",
            "no verdict",
            &[&p("h-decline"), "--out", &p("m-decline")],
            4,
        ),
        row("merge", "bad flag", &[&p("h-bug")], 2),
        row(
            "merge",
            "missing summary.json",
            &[&p("nope"), "--out", &p("m-x")],
            2,
        ),
        row(
            "merge",
            "malformed summary.json",
            &[&p("bad-summary"), "--out", &p("m-y")],
            2,
        ),
        row(
            "merge",
            "different targets",
            &[&p("h-bug"), &p("h-pc"), "--out", &p("m-z")],
            2,
        ),
        row(
            "merge",
            "the same cases twice",
            &[&p("h-bug"), &p("h-bug"), "--out", &p("m-w")],
            2,
        ),
        row(
            "merge",
            "MERGED holds findings",
            &[&p("h-clean0"), "--out", &p("h-bug")],
            2,
        ),
        row(
            "hunt",
            "OUT holds findings",
            &[
                "--cases",
                "2",
                "--seed",
                "1",
                "--quiet",
                "--out",
                &p("h-bug"),
            ],
            2,
        ),
        row(
            "hunt",
            "serve protocol with placeholders",
            &[
                "--cases",
                "2",
                "--quiet",
                "--out",
                &p("h-serve-placeholders"),
                "--compiler-protocol",
                "serve",
                "--compiler-cmd",
                "mycc {case} {out}",
            ],
            2,
        ),
    ]);
    rows
}

/// Runs the rows on a few threads; returns one message per row that exited otherwise.
fn run_rows(rows: &[Row]) -> Vec<String> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(r) = rows.get(i) else { break };
                let mut cmd = Command::new(env!("CARGO_BIN_EXE_pimdiff"));
                cmd.args(&r.args).current_dir(repo());
                for var in r.unset {
                    cmd.env_remove(var);
                }
                let o = cmd.output().expect("spawn pimdiff");
                let said = r
                    .says
                    .as_ref()
                    .is_none_or(|s| String::from_utf8_lossy(&o.stderr).contains(s.as_str()));
                if o.status.code() != Some(r.code) || !said {
                    failures.lock().unwrap().push(format!(
                        "{} ({}): expected {}{}, got {:?}\n  args: {:?}\n  stdout: {}\n  stderr: {}",
                        r.command,
                        r.situation,
                        r.code,
                        r.says.as_ref().map_or(String::new(), |s| format!(" saying {s:?}")),
                        o.status.code(),
                        r.args,
                        tail(&o.stdout),
                        tail(&o.stderr)
                    ));
                }
            });
        }
    });
    failures.into_inner().unwrap()
}

fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(6)..].join("\n    ")
}

/// The subcommands `pimdiff --help` lists (without `help`).
fn subcommands() -> BTreeSet<String> {
    let o = pimdiff(&["--help"]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn every_command_exits_by_the_contract_and_its_help_says_so() {
    let f = Fixture::new();
    let first = first_rows(&f);
    let mut failures = run_rows(&first);
    let then = then_rows(&f);
    failures.extend(run_rows(&then));
    assert!(
        failures.is_empty(),
        "{} row(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );

    // Every subcommand has rows, among them a bad-usage row; its --help lists each code the
    // table expects of it and an example.
    let mut codes: BTreeMap<&str, BTreeSet<i32>> = BTreeMap::new();
    for r in first.iter().chain(&then) {
        codes.entry(r.command).or_default().insert(r.code);
    }
    let commands = subcommands();
    assert!(
        commands.contains("merge") && commands.contains("hunt"),
        "{commands:?}"
    );
    let top = String::from_utf8_lossy(&pimdiff(&["--help"]).stdout).into_owned();
    for code in 0..=4 {
        assert!(top.contains(&format!("\n  {code}  ")), "{top}");
    }
    for command in &commands {
        let expected = codes
            .get(command.as_str())
            .unwrap_or_else(|| panic!("no row for `pimdiff {command}`: add its situations"));
        assert!(expected.contains(&2), "{command}: no bad-usage row");
        let o = pimdiff(&[command.as_str(), "--help"]);
        assert_eq!(o.status.code(), Some(0), "{command} --help");
        let help = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(help.contains("\nExit codes:\n"), "{command}:\n{help}");
        assert!(help.contains("\nExample:\n  "), "{command}:\n{help}");
        for code in expected {
            assert!(
                help.contains(&format!("\n  {code}  ")),
                "`pimdiff {command} --help` does not list exit code {code}:\n{help}"
            );
        }
    }
}
