//! The shim's crash frames (`PIMDIFF-FRAME` lines) for faults at known places of
//! `tests/fixtures/shim/faults.c`, read by both targets that preload it (PUMA's library,
//! PIMCOMP-NN's binary): the interrupted instruction from the signal's context, return
//! addresses moved back into their call.
//!
//! The PIMCOMP-NN shim's lazy zeroing (`PIMDIFF_LAZY_ZERO=1`, `scripts/pimcomp-shim.c`) must
//! leave memory exactly as memset would: a C program zeroes memory of every kind under the
//! shim, with and without it, and prints per kind the bytes that read wrong and the resident
//! pages of the zeroed range. Only private anonymous memory (mmap, heap, static data) may be
//! given back to the kernel; a shared or file mapping must take the real memset.

use std::path::Path;
use std::process::Command;

/// Compiles with the system C compiler (the flags of the shim are those of
/// `scripts/build-pimcomp.sh`).
fn cc(args: &[&str], out: &Path) {
    let status = Command::new("cc")
        .args(args)
        .arg("-o")
        .arg(out)
        .status()
        .expect("a C compiler `cc` is needed (scripts/build-pimcomp.sh needs it too)");
    assert!(status.success(), "cc {args:?} failed");
}

fn run(dir: &Path, lazy: bool) -> String {
    let mut cmd = Command::new(dir.join("zeroing"));
    cmd.env("LD_PRELOAD", dir.join("libpimdiff-shim.so"));
    if lazy {
        cmd.env("PIMDIFF_LAZY_ZERO", "1");
    } else {
        cmd.env_remove("PIMDIFF_LAZY_ZERO");
    }
    let out = cmd.output().expect("run the zeroing program");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn lazy_zeroing_gives_back_only_private_anonymous_pages_and_keeps_every_value() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shim = root.join("scripts/pimcomp-shim.c");
    let program = root.join("tests/fixtures/shim/zeroing.c");
    cc(
        &[
            "-shared",
            "-fPIC",
            "-O2",
            "-fno-builtin-memset",
            shim.to_str().unwrap(),
            "-ldl",
        ],
        &dir.path().join("libpimdiff-shim.so"),
    );
    cc(
        &["-O0", "-fno-builtin-memset", program.to_str().unwrap()],
        &dir.path().join("zeroing"),
    );
    // 8 MiB = 2048 pages; "unaligned" zeroes all but the first byte and the last three,
    // "small" 16 pages (below the 1 MiB threshold); a malloc'd block starts past its
    // header, mid-page, so one page fewer is whole.
    assert_eq!(
        run(dir.path(), false),
        "private-anonymous wrong=0 resident=2048\n\
         unaligned wrong=0 resident=2046\n\
         small wrong=0 resident=16\n\
         bss wrong=0 resident=2048\n\
         shared-anonymous wrong=0 resident=2048\n\
         private-file wrong=0 resident=2048\n\
         heap wrong=0 resident=2047\n"
    );
    assert_eq!(
        run(dir.path(), true),
        "private-anonymous wrong=0 resident=0\n\
         unaligned wrong=0 resident=0\n\
         small wrong=0 resident=16\n\
         bss wrong=0 resident=0\n\
         shared-anonymous wrong=0 resident=2048\n\
         private-file wrong=0 resident=2048\n\
         heap wrong=0 resident=0\n"
    );
}

/// Linux's signal numbers (the root package does not depend on libc).
const SIGSEGV: i32 = 11;
const SIGABRT: i32 = 6;

/// The line of `source` that holds `marker` (1-based), so that the tests name the lines of
/// `faults.c` by their markers and survive edits of the file.
fn marker_line(source: &str, marker: &str) -> String {
    let n = source
        .lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no {marker} in faults.c"));
    (n + 1).to_string()
}

/// `addr2line -f` of one offset of `object`: (function, line).
fn addr2line(object: &Path, offset: u64) -> (String, String) {
    let out = Command::new("addr2line")
        .args(["-f", "-e"])
        .arg(object)
        .arg(format!("0x{offset:x}"))
        .output()
        .expect("addr2line (binutils) is needed, as for symbolizing crashes");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut lines = text.lines();
    let function = lines.next().unwrap_or("??").to_string();
    let line = lines
        .next()
        .and_then(|l| l.rsplit(':').next())
        .unwrap_or("??")
        .split(' ')
        .next()
        .unwrap_or("??")
        .to_string();
    (function, line)
}

/// The address of symbol `name` in `object` (`nm`).
fn symbol(object: &Path, name: &str) -> u64 {
    let out = Command::new("nm")
        .arg(object)
        .output()
        .expect("nm (binutils)");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let line = text
        .lines()
        .find(|l| l.ends_with(&format!(" {name}")))
        .unwrap_or_else(|| panic!("no symbol {name} in {}", object.display()));
    u64::from_str_radix(line.split(' ').next().unwrap(), 16).expect("an address")
}

/// What the faults are built into: a PUMA-like tree (`src/libpuma.so` from `src/faults.cpp`,
/// a program `bin/faults-main` linked against it) and a PIMCOMP-NN-like single binary.
struct Faults {
    _dir: tempfile::TempDir,
    shim: std::path::PathBuf,
    tree: std::path::PathBuf,
    binary: std::path::PathBuf,
    source: String,
}

/// The faults are compiled as C under the name `faults.cpp` (the PUMA target counts a frame
/// as the compiler's own when its file is one of the tree's `src/*.cpp`), with -O1 and
/// without CET's entry instructions, so that `fault_at_entry` starts with its load.
fn build_faults() -> Faults {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shim = dir.path().join("libpimdiff-shim.so");
    let c_shim = root.join("scripts/pimcomp-shim.c");
    cc(
        &["-shared", "-fPIC", "-O2", c_shim.to_str().unwrap(), "-ldl"],
        &shim,
    );
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("src")).unwrap();
    std::fs::create_dir_all(tree.join("bin")).unwrap();
    let source = tree.join("src/faults.cpp");
    std::fs::copy(root.join("tests/fixtures/shim/faults.c"), &source).unwrap();
    let main = root.join("tests/fixtures/shim/faults-main.c");
    let flags = ["-O1", "-g", "-fcf-protection=none", "-fno-inline"];
    let mut lib: Vec<&str> = flags.to_vec();
    lib.extend(["-shared", "-fPIC", "-x", "c", source.to_str().unwrap()]);
    cc(&lib, &tree.join("src/libpuma.so"));
    let src_dir = tree.join("src");
    let link = format!("-L{}", src_dir.display());
    let mut prog: Vec<&str> = flags.to_vec();
    prog.extend([
        main.to_str().unwrap(),
        link.as_str(),
        "-lpuma",
        "-Wl,-rpath,$ORIGIN/../src",
    ]);
    cc(&prog, &tree.join("bin/faults-main"));
    let binary = dir.path().join("pimcomp-faults");
    let mut one: Vec<&str> = flags.to_vec();
    one.extend(["-x", "c", source.to_str().unwrap(), main.to_str().unwrap()]);
    cc(&one, &binary);
    Faults {
        source: std::fs::read_to_string(&source).unwrap(),
        _dir: dir,
        shim,
        tree,
        binary,
    }
}

/// Runs `program which` under the shim; its standard error, after checking the signal.
fn crash(shim: &Path, program: &Path, which: u32, signal: i32) -> String {
    use std::os::unix::process::ExitStatusExt;
    let out = Command::new(program)
        .arg(which.to_string())
        .env("LD_PRELOAD", shim)
        .output()
        .expect("run the faulting program");
    assert_eq!(out.status.signal(), Some(signal), "{out:?}");
    String::from_utf8(out.stderr).expect("utf-8")
}

/// The first frame line and its offset: it must be the interrupted instruction, marked.
fn exact_offset(stderr: &str) -> u64 {
    let first = stderr
        .lines()
        .find(|l| l.starts_with("PIMDIFF-FRAME "))
        .expect("frame lines");
    assert!(first.ends_with(" exact"), "{first}");
    let off = first
        .rsplit_once(" +0x")
        .unwrap()
        .1
        .trim_end_matches(" exact");
    u64::from_str_radix(off, 16).unwrap()
}

fn own(function: &str, location: String) -> pimdiff::targets::puma::frames::Frame {
    pimdiff::targets::puma::frames::Frame {
        function: function.into(),
        location,
        own: true,
    }
}

/// A NULL dereference on a function's first instruction: the interrupted frame is that
/// function at that line (not the function the linker placed before it, where the
/// instruction's address minus one lies), and its caller is named at the call's line.
#[test]
fn a_fault_on_a_functions_first_instruction_is_that_functions_frame() {
    let f = build_faults();
    let lib = f.tree.join("src/libpuma.so");
    let at = |m: &str| format!("faults.cpp:{}", marker_line(&f.source, m));
    let stderr = crash(&f.shim, &f.tree.join("bin/faults-main"), 1, SIGSEGV);
    let pc = exact_offset(&stderr);
    // The premise: the fault is the function's first instruction, and one byte before it
    // lies in another function.
    assert_eq!(pc, symbol(&lib, "fault_at_entry"));
    assert_eq!(addr2line(&lib, pc - 1).0, "just_before");
    let frames = pimdiff::targets::puma::frames::shim_frames(&f.tree, &stderr);
    assert_eq!(
        frames[..3],
        [
            own("fault_at_entry", at("FAULT-AT-ENTRY")),
            own("call_entry", at("CALL-ENTRY")),
            own("pimdiff_fault", at("return call_entry")),
        ]
    );
}

/// A fault in the middle of a line (the instruction before it belongs to the same line), and
/// an abort: the interrupted frame of the abort is in libc, and the compiler's own frames
/// below it (return addresses) name the `abort()` line, though the call is `aborting`'s last
/// instruction and its return address is the next function's first.
#[test]
fn a_fault_mid_line_and_an_abort_name_their_function_and_line() {
    let f = build_faults();
    let lib = f.tree.join("src/libpuma.so");
    let at = |m: &str| format!("faults.cpp:{}", marker_line(&f.source, m));
    let stderr = crash(&f.shim, &f.tree.join("bin/faults-main"), 2, SIGSEGV);
    let pc = exact_offset(&stderr);
    assert!(pc > symbol(&lib, "fault_mid_line"));
    assert_eq!(addr2line(&lib, pc - 1), addr2line(&lib, pc));
    let frames = pimdiff::targets::puma::frames::shim_frames(&f.tree, &stderr);
    assert_eq!(
        frames[..2],
        [
            own("fault_mid_line", at("FAULT-MID-LINE")),
            own("call_mid", at("CALL-MID")),
        ]
    );
    let stderr = crash(&f.shim, &f.tree.join("bin/faults-main"), 3, SIGABRT);
    let frames = pimdiff::targets::puma::frames::shim_frames(&f.tree, &stderr);
    let first_own = frames.iter().position(|f| f.own).expect("own frames");
    assert!(first_own > 0, "the interrupted frame is libc's: {frames:?}");
    assert_eq!(
        frames[first_own..first_own + 2],
        [
            own("aborting", at("ABORT")),
            own("pimdiff_fault", at("return aborting")),
        ]
    );
}

/// The same shim under PIMCOMP-NN's reading: the compiler is one binary, symbolized by
/// `targets/pimcomp/src/compile.rs`.
#[test]
fn pimcomp_frames_name_the_faulting_function_and_line() {
    use pimdiff::targets::pimcomp_nn::compile::{frames, CompilerSetup, ZeroedMemory};
    let f = build_faults();
    let setup = CompilerSetup {
        bin: f.binary.clone(),
        config: f.binary.with_file_name("config.json"),
        shim: Some(f.shim.clone()),
        timeout: std::time::Duration::from_secs(10),
        max_rss_bytes: 1 << 30,
        coverage: None,
        zeroed_memory: ZeroedMemory::Small,
    };
    let line = |m: &str| format!("faults.cpp:{}", marker_line(&f.source, m));
    for (which, function, marker, caller, call) in [
        (
            1,
            "fault_at_entry",
            "FAULT-AT-ENTRY",
            "call_entry",
            "CALL-ENTRY",
        ),
        (
            2,
            "fault_mid_line",
            "FAULT-MID-LINE",
            "call_mid",
            "CALL-MID",
        ),
    ] {
        let stderr = crash(&f.shim, &f.binary, which, SIGSEGV);
        let got: Vec<(String, String, bool)> = frames(&setup, &stderr)
            .into_iter()
            .take(2)
            .map(|f| (f.function, f.location, f.own))
            .collect();
        assert_eq!(
            got,
            [
                (function.to_string(), line(marker), true),
                (caller.to_string(), line(call), true),
            ],
            "{stderr}"
        );
    }
}
