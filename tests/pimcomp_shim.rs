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
