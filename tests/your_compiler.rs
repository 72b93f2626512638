//! The guide's compiler (`python/examples/tiny_compiler.py`, written from the docs) hunted as a
//! user would (`docs/guide/your-compiler.md`): a clean hunt finds nothing; its bug switch (one
//! store one int32 element off) gives exactly one finding, which `repro DIR` with no flags
//! reproduces (exit 1) with the compiler the finding recorded; and the common set-up mistakes
//! end in exit 2 within seconds, with no finding saved and the fix named.
//!
//! The compiler needs NumPy: these tests use the Python of `scripts/setup-python.sh`
//! (`PIMDIFF_PYTHON`; without it each test prints a `skipped:` line and passes; CI sets it).

#[path = "support/cli.rs"]
mod cli;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use cli::{path, stderr, stdout, summary};

fn python(test: &str) -> Option<PathBuf> {
    match std::env::var_os("PIMDIFF_PYTHON") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "{test}: skipped: run scripts/setup-python.sh (PIMDIFF_PYTHON is not set)"
            );
            None
        }
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `pimdiff ARGS` run in `dir`, as a user runs it from their checkout.
fn pimdiff_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("spawn pimdiff")
}

/// The served compiler's command line, as the guide writes it (a path relative to the
/// checkout, where the hunt runs).
fn served(py: &Path) -> String {
    format!(
        "exec {} python/examples/tiny_compiler.py --serve",
        py.display()
    )
}

fn hunt(py: &Path, out: &Path, cases: &str, extra: &[&str]) -> Output {
    let cmd = served(py);
    let mut args = vec![
        "hunt",
        "--seed",
        "1",
        "--cases",
        cases,
        "--jobs",
        "2",
        "--quiet",
        "--out",
        path(out),
        "--compiler-protocol",
        "serve",
        "--compiler-cmd",
        &cmd,
    ];
    args.extend_from_slice(extra);
    pimdiff_in(&root(), &args)
}

#[test]
fn a_clean_hunt_of_the_guides_compiler_finds_nothing() {
    let Some(py) = python("a_clean_hunt_of_the_guides_compiler_finds_nothing") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("clean");
    let run = hunt(&py, &out, "300", &[]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}{}",
        stdout(&run),
        stderr(&run)
    );
    let s = summary(&out);
    assert_eq!((s.cases_run, s.findings.len()), (300, 0));
    assert!(!s.declines.exceeded, "{:?}", s.declines);
}

#[test]
fn one_store_bug_is_one_finding_and_repro_with_no_flags_reproduces_it() {
    let Some(py) = python("one_store_bug_is_one_finding_and_repro_with_no_flags_reproduces_it")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("bug");
    let run = hunt(
        &py,
        &out,
        "300",
        &["--compiler-env", "TINY_BUG=store-off-by-one"],
    );
    assert_eq!(
        run.status.code(),
        Some(1),
        "{}{}",
        stdout(&run),
        stderr(&run)
    );
    let s = summary(&out);
    // Mismatches and races of the same store: one cause, one finding.
    assert!(
        s.outcomes[&pimdiff::finding::Kind::Race] > 0,
        "{:?}",
        s.outcomes
    );
    assert_eq!(s.findings.len(), 1, "{:?}", s.findings);
    let f = &s.findings[0];
    assert_eq!(f.signature, "mismatch: st offset");
    assert!(f.localized && !f.minimization.cut_short);
    assert!(f.minimization.minimized_size < f.minimization.original_size);
    // The closing hint is the whole command.
    let dir = out.join(&f.dir);
    assert!(
        stdout(&run).contains(&format!("pimdiff repro {}", path(&dir))),
        "{}",
        stdout(&run)
    );
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("finding.json")).unwrap()).unwrap();
    let record = &meta["details"]["external_compiler"];
    assert_eq!(record["protocol"], "serve");
    assert_eq!(record["command"], served(&py));
    assert_eq!(record["env"]["TINY_BUG"], "store-off-by-one");
    assert_eq!(record["workdir"], path(&root()));
    // From another directory, with no flags: the recorded compiler, bug switch included.
    let repro = pimdiff_in(tmp.path(), &["repro", path(&dir)]);
    assert_eq!(
        repro.status.code(),
        Some(1),
        "{}{}",
        stdout(&repro),
        stderr(&repro)
    );
    let said = stdout(&repro);
    assert!(
        said.starts_with("note: compiling with the compiler recorded in"),
        "{said}"
    );
    assert!(said.contains("expectation: signature: mismatch:"), "{said}");
    assert!(said.contains("(met)"), "{said}");
    // Flags override the record: the correct compiler passes the case.
    let cmd = format!(
        "exec {} {}/python/examples/tiny_compiler.py --serve",
        py.display(),
        path(&root())
    );
    let fixed = pimdiff_in(
        tmp.path(),
        &[
            "repro",
            path(&dir),
            "--compiler-protocol",
            "serve",
            "--compiler-cmd",
            &cmd,
        ],
    );
    assert_eq!(fixed.status.code(), Some(0), "{}", stdout(&fixed));
}

#[test]
fn repro_of_a_finding_whose_compiler_is_gone_says_so_and_exits_2() {
    let Some(py) = python("repro_of_a_finding_whose_compiler_is_gone_says_so_and_exits_2") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("bug");
    let run = hunt(
        &py,
        &out,
        "20",
        &["--compiler-env", "TINY_BUG=store-off-by-one"],
    );
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    let dir = out.join(&summary(&out).findings[0].dir);
    // The finding now names a compiler that is not there.
    let file = dir.join("finding.json");
    let mut meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    meta["details"]["external_compiler"]["command"] = "exec tiny-compiler-gone --serve".into();
    std::fs::write(&file, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    let repro = pimdiff_in(tmp.path(), &["repro", path(&dir)]);
    assert_eq!(repro.status.code(), Some(2), "{}", stdout(&repro));
    let said = stderr(&repro);
    assert!(
        said.starts_with(
            "error: the compiler recorded in finding.json cannot be run, so the case was not judged"
        ),
        "{said}"
    );
    assert!(said.contains("exec tiny-compiler-gone --serve"), "{said}");
    assert!(said.contains("(exit status 127)"), "{said}");
    assert!(
        said.contains("fix: `sh` could not find the command"),
        "{said}"
    );
}

/// A hunt with a broken set-up: exit 2 within seconds, no output directory, and the fix.
fn refused(args: &[&str], dir: &Path, fix: &str) {
    let out = dir.join("hunt");
    let mut all = vec![
        "hunt",
        "--seed",
        "1",
        "--cases",
        "300",
        "--quiet",
        "--out",
        path(&out),
    ];
    all.extend_from_slice(args);
    let start = Instant::now();
    let run = pimdiff_in(dir, &all);
    let took = start.elapsed();
    assert_eq!(run.status.code(), Some(2), "{args:?}: {}", stdout(&run));
    assert!(took < Duration::from_secs(20), "{args:?} took {took:?}");
    assert!(!out.exists(), "{args:?} made {}", out.display());
    let said = stderr(&run);
    assert!(
        said.starts_with("error: the compiler under test is not set up"),
        "{said}"
    );
    assert!(said.contains(&format!("fix: {fix}")), "{args:?}: {said}");
}

#[test]
fn set_up_mistakes_end_in_exit_2_naming_the_fix_with_nothing_saved() {
    let Some(py) = python("set_up_mistakes_end_in_exit_2_naming_the_fix_with_nothing_saved") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("banner.py"),
        "import sys\nprint('tiny compiler 1.0 ready', flush=True)\nfor line in sys.stdin:\n    \
         print('{\"id\": 0, \"status\": \"compiled\"}', flush=True)\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("garbage.py"),
        "import sys\nfor line in sys.stdin:\n    print('compiling', line.strip()[:10], \
         flush=True)\n",
    )
    .unwrap();
    let py = py.display().to_string();
    refused(
        &["--compiler-cmd", "tiny-compiler-missing {case} {out}"],
        dir,
        "`sh` could not find the command",
    );
    let banner = format!("exec {py} banner.py");
    let garbage = format!("exec {py} garbage.py");
    let protocol = "a server writes exactly one JSON answer line per request on standard output";
    for server in [&banner, &garbage] {
        refused(
            &["--compiler-protocol", "serve", "--compiler-cmd", server],
            dir,
            protocol,
        );
    }
    refused(
        &["--compiler-cmd", &format!("{py} banner.py")],
        dir,
        "this command wrote nothing into the bundle; is it a server? use --compiler-protocol serve",
    );
}
