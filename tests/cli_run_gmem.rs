//! `pimdiff run --gmem ADDR=FILE.npy`: preloads land in global memory before the run, and every
//! bad preload is refused with exit 2 before anything runs.

#[path = "support/cli.rs"]
mod cli;

use std::path::Path;

use ndarray::{arr1, arr2, Array1};
use ndarray_npy::write_npy;

use cli::{pimdiff, stderr};

/// Copies 6 bytes from global memory 100 to 200 through local memory.
const COPY: &str = "\
.cores 1
core 0:
    sldi r0, imm=0
    sldi r1, imm=100
    ld r0, r1, size=6
    sldi r2, imm=200
    st r2, r0, size=6
";

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_owned()
}

#[test]
fn preloads_are_written_flat_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("copy.s"), COPY).unwrap();
    // A 2×2 array at 100 and a 1-element array at 104: row-major flattening, two segments.
    write_npy(dir.path().join("a.npy"), &arr2(&[[1i8, -2], [3, -128]])).unwrap();
    write_npy(dir.path().join("b.npy"), &arr1(&[127i8])).unwrap();
    let dump = dir.path().join("dump");
    let out = pimdiff(&[
        "run",
        &path(dir.path(), "copy.s"),
        "--gmem",
        &format!("100={}", path(dir.path(), "a.npy")),
        "--gmem",
        &format!("0x68={}", path(dir.path(), "b.npy")),
        "--dump",
        dump.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("global memory preloaded: 5 bytes"));
    let gmem = std::fs::read(dump.join("gmem.bin")).unwrap();
    assert_eq!(&gmem[200..206], &[1, 0xfe, 3, 0x80, 127, 0]);
}

#[test]
fn a_fortran_order_array_is_flattened_row_major() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("copy.s"), COPY).unwrap();
    let a = arr2(&[[1i8, 2, 3], [4, 5, 6]]);
    write_npy(dir.path().join("f.npy"), &a.t().as_standard_layout().t()).unwrap();
    let dump = dir.path().join("dump");
    let out = pimdiff(&[
        "run",
        &path(dir.path(), "copy.s"),
        "--gmem",
        &format!("100={}", path(dir.path(), "f.npy")),
        "--dump",
        dump.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let gmem = std::fs::read(dump.join("gmem.bin")).unwrap();
    assert_eq!(&gmem[200..206], &[1, 2, 3, 4, 5, 6]);
}

/// A `.npy` file whose header promises `shape` over `data_bytes` bytes of data.
fn hostile_npy(shape: &str, data_bytes: usize) -> Vec<u8> {
    let mut header = format!("{{'descr': '|i1', 'fortran_order': False, 'shape': ({shape}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend(std::iter::repeat_n(7u8, data_bytes));
    bytes
}

#[test]
fn bad_preloads_exit_2_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("copy.s"), COPY).unwrap();
    write_npy(d.join("four.npy"), &Array1::<i8>::zeros(4)).unwrap();
    write_npy(d.join("wide.npy"), &Array1::<i32>::zeros(4)).unwrap();
    std::fs::write(d.join("huge.npy"), hostile_npy("1099511627776,", 16)).unwrap();
    std::fs::write(d.join("short.npy"), hostile_npy("10,", 4)).unwrap();
    std::fs::write(d.join("garbage.npy"), b"not a numpy file").unwrap();
    let four = path(d, "four.npy");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![format!("10={four}"), format!("12={four}")], "overlaps"),
        (
            vec![format!("4294967294={four}")],
            "past the end of global memory",
        ),
        (vec![format!("0={}", path(d, "wide.npy"))], "not an int8"),
        (vec![format!("0={}", path(d, "huge.npy"))], "not an int8"),
        (vec![format!("0={}", path(d, "short.npy"))], "not an int8"),
        (vec![format!("0={}", path(d, "garbage.npy"))], "not an int8"),
        (
            vec![format!("0={}", path(d, "missing.npy"))],
            "cannot read --gmem file",
        ),
        (vec![four.clone()], "expected ADDR=FILE.npy"),
        (vec![format!("-3={four}")], "bad address"),
    ];
    for (flags, message) in cases {
        let mut args = vec!["run".to_string(), path(d, "copy.s")];
        for f in &flags {
            args.push(format!("--gmem={f}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = pimdiff(&args);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(message),
            "{flags:?}: {}",
            stderr(&out)
        );
        assert!(
            !stderr(&out).contains("panicked"),
            "{flags:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn adjacent_preloads_do_not_overlap() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("copy.s"), COPY).unwrap();
    write_npy(dir.path().join("four.npy"), &Array1::<i8>::ones(4)).unwrap();
    let four = path(dir.path(), "four.npy");
    let out = pimdiff(&[
        "run",
        &path(dir.path(), "copy.s"),
        "--gmem",
        &format!("104={four}"),
        "--gmem",
        &format!("100={four}"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
