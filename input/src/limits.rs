//! The documented size limits of every input pimdiff reads, and the compression-ratio limit of
//! every gzip stream. Each limit is named in the errors that cite it, so a refusal says which
//! line of this table to read.
//!
//! | limit | bytes | applies to |
//! |---|---|---|
//! | [`MAX_PROGRAM_BYTES`] | 1 GiB | a program file (JSON or assembly text, plain, or gzip both compressed and inflated), a directory's `core_<id>.json` |
//! | [`MAX_PROGRAM_TREE_BYTES`] | 512 MiB | a PIMCOMP-NN program read as a JSON tree (the core census of `hunt --target pimcomp-nn`), compressed and inflated |
//! | [`MAX_CONFIG_BYTES`] | 16 MiB | a program directory's `config.json` |
//! | [`MAX_MANIFEST_BYTES`] | 1 MiB | a bundle's `io.json` |
//! | [`MAX_CONSTANT_BYTES`] | 256 MiB | one constant segment file of a bundle |
//! | [`MAX_XBAR_JSON_BYTES`] | 16 MiB | a crossbar export's `core_<i>.json` |
//! | [`MAX_XBAR_NPY_BYTES`] | 256 MiB | a crossbar export's `core_<i>.npy` (64 Mi int32 cells) |
//! | [`MAX_CASE_JSON_BYTES`] | 1 MiB | a case's `case.json` |
//! | [`MAX_CASE_NPY_BYTES`] | 64 MiB + 128 KiB | a case's `.npy` tensors (16 Mi int32 elements and a header) |
//! | [`MAX_GMEM_NPY_BYTES`] | 256 MiB | a `pimdiff run --gmem` preload (`.npy`) |
//! | [`MAX_META_BYTES`] | 1 MiB | a saved finding's `finding.json` and `expect.json` |
//! | [`MAX_TABLE_BYTES`] | 2 GiB | a PIMCOMP-NN side table (plain, or gzip both compressed and inflated) |
//! | [`MAX_ONNX_MODEL_BYTES`] | 256 MiB | an ONNX model for `import-onnx` |
//! | [`MAX_FUZZ_ARTIFACT_BYTES`] | 1 MiB | a cargo-fuzz artifact for `from-fuzz` |
//! | [`crate::npy::MAX_HEADER_BYTES`] | 64 KiB | the header of any `.npy` file |
//!
//! **Gzip ratio.** A gzip stream may inflate to at most [`MAX_GZIP_RATIO`] times the
//! compressed bytes it has consumed so far, plus [`GZIP_RATIO_SLACK`]; it is checked while it
//! is inflated, so a gzip bomb (1 GiB of zeros packs into about 1 MB, a ratio of about 1000)
//! stops after about 20 MiB instead of at its size limit. Why 200: the largest real inputs,
//! PIMCOMP-NN's programs and side tables (85–377 MB of JSON in gzip files of 2.5–13 MB),
//! inflate 27 to 39 times their size in total and at most 43 times at any point of the stream
//! (counted every 64 KiB of input); its small AG maps 15 to 18 times. Measured on all 23 of
//! them (ten programs, ten side tables, three AG maps); 200 leaves a margin of more than four.
//! The slack lets small files of very regular text (under 16 MiB inflated) pass whatever
//! their ratio.
//!
//! The largest real programs (PIMCOMP-NN's, about 300 MB of JSON and 6 million instructions)
//! are well inside [`MAX_PROGRAM_BYTES`]; the case limits follow the oracle's element limits
//! (`pimdiff_oracle::limits`).

use std::fmt;

/// A documented size limit: its name (as in this module's table) and the bytes it allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub name: &'static str,
    pub bytes: u64,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes ({})", self.bytes, self.name)
    }
}

const fn limit(name: &'static str, bytes: u64) -> Limit {
    Limit { name, bytes }
}

/// A program file, compressed or not, and the text a gzip file inflates to.
pub const MAX_PROGRAM_BYTES: Limit = limit("MAX_PROGRAM_BYTES", 1 << 30);
/// A PIMCOMP-NN program read as a whole JSON tree (about 10 bytes of memory per byte of
/// text), for the hunt's core census; its random networks stay far below.
pub const MAX_PROGRAM_TREE_BYTES: Limit = limit("MAX_PROGRAM_TREE_BYTES", 512 << 20);
/// A program directory's `config.json`.
pub const MAX_CONFIG_BYTES: Limit = limit("MAX_CONFIG_BYTES", 16 << 20);
/// A bundle's `io.json`.
pub const MAX_MANIFEST_BYTES: Limit = limit("MAX_MANIFEST_BYTES", 1 << 20);
/// One constant segment file of a bundle.
pub const MAX_CONSTANT_BYTES: Limit = limit("MAX_CONSTANT_BYTES", 1 << 28);
/// A crossbar export's `core_<i>.json`.
pub const MAX_XBAR_JSON_BYTES: Limit = limit("MAX_XBAR_JSON_BYTES", 16 << 20);
/// A crossbar export's `core_<i>.npy`.
pub const MAX_XBAR_NPY_BYTES: Limit = limit("MAX_XBAR_NPY_BYTES", 1 << 28);
/// A case's `case.json`.
pub const MAX_CASE_JSON_BYTES: Limit = limit("MAX_CASE_JSON_BYTES", 1 << 20);
/// A case's `.npy` tensor: 16 Mi int32 elements plus a header.
pub const MAX_CASE_NPY_BYTES: Limit = limit("MAX_CASE_NPY_BYTES", (64 << 20) + (128 << 10));
/// A `--gmem` preload of `pimdiff run`: an int8 `.npy` of at most 256 MiB.
pub const MAX_GMEM_NPY_BYTES: Limit = limit("MAX_GMEM_NPY_BYTES", 1 << 28);
/// A saved finding's `finding.json` or `expect.json` (ours are a few KiB).
pub const MAX_META_BYTES: Limit = limit("MAX_META_BYTES", 1 << 20);
/// A PIMCOMP-NN side table, compressed or not, and the text a gzip table inflates to (the
/// largest real one is 377 MB).
pub const MAX_TABLE_BYTES: Limit = limit("MAX_TABLE_BYTES", 2 << 30);
/// An ONNX model for `import-onnx`: a case's weight is at most 2^24 elements, 128 MiB even
/// as float64.
pub const MAX_ONNX_MODEL_BYTES: Limit = limit("MAX_ONNX_MODEL_BYTES", 1 << 28);
/// A CIM-MLC tree's `manifest.json` (`scripts/build-cim-mlc.sh`; it lists the pinned packages).
pub const MAX_TREE_MANIFEST_BYTES: Limit = limit("MAX_TREE_MANIFEST_BYTES", 1 << 20);
/// A cargo-fuzz artifact: libFuzzer's inputs are a few KiB (`-max_len` defaults to 4096).
pub const MAX_FUZZ_ARTIFACT_BYTES: Limit = limit("MAX_FUZZ_ARTIFACT_BYTES", 1 << 20);

/// A gzip stream inflates to at most this many times the compressed bytes it consumed
/// (plus [`GZIP_RATIO_SLACK`]); see the module documentation for the measurement behind it.
pub const MAX_GZIP_RATIO: u64 = 200;
/// What any gzip stream may inflate to whatever its ratio.
pub const GZIP_RATIO_SLACK: u64 = 16 << 20;
