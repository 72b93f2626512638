//! Every subcommand that reads a file, given each hostile file of `pimdiff_input::hostile`
//! where it reads one (missing, empty, oversized, truncated gzip, a 1 GiB gzip bomb, an `.npy`
//! header claiming 10^12 cells, the wrong kind of file): exit 2 and one line naming the file
//! and what is wrong with it. Each run has a 20-second guard against a hang (a hostile file is
//! refused in milliseconds; the guard only turns a hang into a failure, it measures nothing).

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pimdiff_input::hostile::{gzip_zeros, npy_claiming, sparse_file};
use pimdiff_input::limits::{
    MAX_CASE_JSON_BYTES, MAX_FUZZ_ARTIFACT_BYTES, MAX_GMEM_NPY_BYTES, MAX_META_BYTES,
    MAX_ONNX_MODEL_BYTES, MAX_PROGRAM_BYTES, MAX_TABLE_BYTES,
};

const HANG_GUARD: Duration = Duration::from_secs(20);
const ENOENT: &str = "No such file or directory (os error 2)";

/// Runs `pimdiff args`, killing it after [`HANG_GUARD`]; its exit code and standard error.
fn run(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pimdiff"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pimdiff");
    let mut stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > HANG_GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pimdiff {args:?} still running after {HANG_GUARD:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    (status.code(), reader.join().expect("stderr reader"))
}

/// Exit 2 and exactly `message` on standard error.
fn refuses(args: &[&str], message: String) {
    assert_eq!(run(args), (Some(2), message + "\n"), "pimdiff {args:?}");
}

/// Exit 2 and one line starting with `head` (which names the file) and ending with `tail`.
fn refuses_with(args: &[&str], head: &str, tail: &str) {
    let (code, err) = run(args);
    assert_eq!(code, Some(2), "pimdiff {args:?}: {err}");
    assert!(
        err.starts_with(head) && err.ends_with(&format!("{tail}\n")) && err.lines().count() == 1,
        "pimdiff {args:?}: {err:?} is not {head:?}…{tail:?}"
    );
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// The hostile files, in a temporary directory.
struct Hostile {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
}

impl Hostile {
    fn new() -> Hostile {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        fs::write(dir.join("empty"), b"").unwrap();
        fs::write(dir.join("bomb.gz"), gzip_zeros(1024)).unwrap();
        let z = gzip(br#"{"config": {"core_cnt": 1}, "core0": [{"op": "nop"}]}"#);
        fs::write(dir.join("truncated.gz"), &z[..z.len() - 10]).unwrap();
        fs::write(dir.join("nop.s"), "core 0:\n  nop\n").unwrap();
        fs::create_dir(dir.join("a-directory")).unwrap();
        Hostile { _tmp: tmp, dir }
    }

    /// The path of `name` as a string.
    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_str().unwrap().to_string()
    }

    /// A sparse file one byte above `limit`, named after it.
    fn oversized(&self, limit: pimdiff_input::Limit) -> String {
        let path = self.path(limit.name);
        sparse_file(Path::new(&path), limit.bytes + 1).unwrap();
        path
    }
}

/// The message of a gzip bomb, whatever the counts: its head and tail.
const BOMB: (&str, &str) = (": a gzip bomb: ", "(MAX_GZIP_RATIO)");

fn above(limit: pimdiff_input::Limit) -> String {
    format!(
        "{} bytes, above the limit of {} bytes ({})",
        limit.bytes + 1,
        limit.bytes,
        limit.name
    )
}

#[test]
fn programs() {
    let h = Hostile::new();
    let out = h.path("out.s");
    for (file, what) in [
        ("empty", "the file is empty".to_string()),
        ("truncated.gz", "truncated gzip data".into()),
        ("missing", format!("cannot read: {ENOENT}")),
    ] {
        let p = h.path(file);
        refuses(
            &["run", &p],
            format!("error: cannot load program {p}: {what}"),
        );
    }
    let p = h.oversized(MAX_PROGRAM_BYTES);
    refuses(
        &["run", &p],
        format!(
            "error: cannot load program {p}: {}",
            above(MAX_PROGRAM_BYTES)
        ),
    );
    let p = h.path("bomb.gz");
    refuses_with(
        &["run", &p],
        &format!("error: cannot load program {p}{}", BOMB.0),
        BOMB.1,
    );
    refuses_with(
        &["disasm", &p, "-o", &out],
        &format!("error: {p}{}", BOMB.0),
        BOMB.1,
    );
    refuses_with(
        &["asm", &p, "-o", &out],
        &format!("error: {p}{}", BOMB.0),
        BOMB.1,
    );
    // The wrong kind of file: a directory is read as a program directory, without config.json.
    let d = h.path("a-directory");
    refuses_with(
        &["run", &d],
        &format!("error: cannot load program {d}"),
        "config.json: cannot read: No such file or directory (os error 2)",
    );
}

#[test]
fn gmem_preloads() {
    let h = Hostile::new();
    let program = h.path("nop.s");
    let claims = h.path("claims.npy");
    fs::write(
        &claims,
        npy_claiming("|i1", &[1_000_000, 1_000_000], &[0; 16]),
    )
    .unwrap();
    let gmem = |file: &str| format!("0={file}");
    refuses_with(
        &["run", &program, "--gmem", &gmem(&claims)],
        &format!("error: --gmem file {claims}: not an int8 (|i1) .npy array: "),
        "",
    );
    let e = h.path("empty");
    refuses(
        &["run", &program, "--gmem", &gmem(&e)],
        format!("error: cannot read --gmem file {e}: the file is empty"),
    );
    let big = h.oversized(MAX_GMEM_NPY_BYTES);
    refuses(
        &["run", &program, "--gmem", &gmem(&big)],
        format!(
            "error: cannot read --gmem file {big}: {}",
            above(MAX_GMEM_NPY_BYTES)
        ),
    );
    let bomb = h.path("bomb.gz");
    refuses_with(
        &["run", &program, "--gmem", &gmem(&bomb)],
        &format!("error: --gmem file {bomb}: not an int8 (|i1) .npy array: "),
        "",
    );
}

#[test]
fn pimcomp_programs_and_side_tables() {
    let h = Hostile::new();
    let program = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/pimcomp/squeezenet-batch-conv1.json.gz"
    );
    let check = |table: &str| run(&["pimcomp", program, "--verification", table]);
    let t = h.path("bomb.gz");
    let (code, err) = check(&t);
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with(&format!("error: {t}: the side table{}", BOMB.0)),
        "{err}"
    );
    let t = h.path("truncated.gz");
    assert_eq!(
        check(&t),
        (
            Some(2),
            format!("error: {t}: the side table: truncated gzip data\n")
        )
    );
    let t = h.path("empty");
    assert_eq!(
        check(&t),
        (
            Some(2),
            format!("error: {t}: the side table: the file is empty\n")
        )
    );
    let t = h.oversized(MAX_TABLE_BYTES);
    assert_eq!(
        check(&t),
        (
            Some(2),
            format!("error: {t}: the side table: {}\n", above(MAX_TABLE_BYTES))
        )
    );
    let t = h.path("missing");
    assert_eq!(check(&t), (Some(2), format!("error: {t}: {ENOENT}\n")));
    // The program is read through the same reader.
    let p = h.path("bomb.gz");
    let table = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/pimcomp/squeezenet-batch-conv1-verification.json.gz"
    );
    refuses_with(
        &["pimcomp", &p, "--verification", table],
        &format!("error: cannot load program {p}{}", BOMB.0),
        BOMB.1,
    );
}

/// A valid case directory (`pimdiff new-case`).
fn new_case(h: &Hostile, name: &str) -> String {
    let dir = h.path(name);
    let (code, _) = run(&["new-case", "--op", "conv2d", "--bias", &dir]);
    assert_eq!(code, Some(0));
    dir
}

#[test]
fn cases() {
    let h = Hostile::new();
    let case = new_case(&h, "claims");
    let input = format!("{case}/input.npy");
    fs::write(
        &input,
        npy_claiming("|i1", &[1, 1_000_000, 1_000_000, 1], &[0; 16]),
    )
    .unwrap();
    refuses_with(
        &["oracle", &case],
        &format!("error: invalid case {case}: input.npy: shape [1, 1000000, 1000000, 1]"),
        "",
    );
    let case = new_case(&h, "big-json");
    sparse_file(
        &Path::new(&case).join("case.json"),
        MAX_CASE_JSON_BYTES.bytes + 1,
    )
    .unwrap();
    refuses(
        &["oracle", &case],
        format!(
            "error: invalid case {case}: case.json: the file size is {}, above the limit {} \
             (pimdiff_oracle::limits::MAX_CASE_JSON_BYTES)",
            MAX_CASE_JSON_BYTES.bytes + 1,
            MAX_CASE_JSON_BYTES.bytes
        ),
    );
    let case = new_case(&h, "empty-weight");
    fs::write(Path::new(&case).join("weight.npy"), b"").unwrap();
    refuses(
        &["oracle", &case],
        format!("error: invalid case {case}: weight.npy: the file is empty"),
    );
    let case = new_case(&h, "bomb-bias");
    fs::write(Path::new(&case).join("bias.npy"), gzip_zeros(1024)).unwrap();
    refuses_with(
        &["oracle", &case],
        &format!("error: invalid case {case}: bias.npy: not a valid .npy file: "),
        "",
    );
}

#[test]
fn saved_finding_metadata() {
    let h = Hostile::new();
    let case = new_case(&h, "finding");
    let finding = format!("{case}/finding.json");
    sparse_file(Path::new(&finding), MAX_META_BYTES.bytes + 1).unwrap();
    refuses_with(
        &["repro", &case],
        "error: ",
        &format!("{finding}: {}", above(MAX_META_BYTES)),
    );
    fs::write(&finding, b"").unwrap();
    refuses_with(
        &["repro", &case],
        "error: ",
        &format!("{finding}: the file is empty"),
    );
}

#[test]
fn onnx_models() {
    let h = Hostile::new();
    let out = h.path("case-out");
    let m = h.path("empty");
    refuses(
        &["import-onnx", &m, "--out", &out],
        format!("error: cannot read {m}: the file is empty"),
    );
    let m = h.oversized(MAX_ONNX_MODEL_BYTES);
    refuses(
        &["import-onnx", &m, "--out", &out],
        format!("error: cannot read {m}: {}", above(MAX_ONNX_MODEL_BYTES)),
    );
    let m = h.path("a-directory");
    refuses(
        &["import-onnx", &m, "--out", &out],
        format!("error: cannot read {m}: not a regular file"),
    );
    // A gzip bomb is not inflated: it is not an ONNX model.
    let m = h.path("bomb.gz");
    refuses_with(
        &["import-onnx", &m, "--out", &out],
        &format!("error: cannot import {m}: not an ONNX model: "),
        "",
    );
    assert!(!Path::new(&out).exists());
}

#[test]
fn fuzz_artifacts() {
    let h = Hostile::new();
    let out = h.path("finding-out");
    let from_fuzz = |a: &str| run(&["from-fuzz", a, "--target", "conv_lowering", &out]);
    let a = h.oversized(MAX_FUZZ_ARTIFACT_BYTES);
    assert_eq!(
        from_fuzz(&a),
        (
            Some(2),
            format!(
                "error: cannot read the fuzz artifact {a}: {}\n",
                above(MAX_FUZZ_ARTIFACT_BYTES)
            )
        )
    );
    let a = h.path("a-directory");
    assert_eq!(
        from_fuzz(&a),
        (
            Some(2),
            format!("error: cannot read the fuzz artifact {a}: not a regular file\n")
        )
    );
    assert!(!Path::new(&out).exists());
}
