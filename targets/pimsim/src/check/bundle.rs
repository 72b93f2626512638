//! A bundle on disk, checked against the format and against its case: what `pimdiff
//! check-bundle` runs, and what every external compiler's bundle goes through before it runs.
//!
//! Two layers, each error naming the file and the field and saying what was expected:
//!
//! 1. **The format** (`docs/reference/bundle-format.md`, the schemas generated from
//!    `pimdiff_isa::schema`): `config.json`, `io.json` and each `xbars/core_<i>.json` read as
//!    their types, then the whole bundle loaded as the machine loads it (`Bundle::read_dir`).
//! 2. **The case** ([`check_against_case`]). The case governs the architecture: the machine
//!    always runs on the case's, so whatever `config.json` states (`core_cnt`, any key of
//!    `arch`) must equal it — a bundle compiled for another machine is malformed, not quietly
//!    run on this one. The io manifest's shapes must be the case's (logical NCHW / `[N, F]`,
//!    whatever the layout), a constant named `bias` must hold the case's bias (4 bytes per
//!    output channel), and a program that multiplies on crossbars (`mvmul`) needs the crossbar
//!    export (`xbars/`).
//!
//! A hunt files a malformed bundle as a `compile-error` whose message starts with
//! [`MALFORMED`], never as a mismatch of a program that was half read.

use std::fmt;
use std::path::Path;

use pimdiff_isa::bundle::{Bundle, BundleError};
use pimdiff_isa::program::Arch;
use pimdiff_isa::schema::{read_config, ArchConfig, BundleConfig};
use pimdiff_isa::Inst;
use pimdiff_oracle::Case;

/// How a malformed bundle's compile error starts.
pub const MALFORMED: &str = "malformed bundle";

/// What is wrong with a bundle: the file (relative to the bundle), the field, what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed {
    /// `io.json`, `config.json`, `xbars/core_0.json`, `xbars/`, ...
    pub file: String,
    /// The field (`input.layout`, `arch.local_memory_bytes`); empty when the file as a whole
    /// is at fault (missing, not JSON, a missing top-level key named in `message`).
    pub field: String,
    pub message: String,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: field `{}`: {}", self.file, self.field, self.message)
        }
    }
}

impl Malformed {
    fn new(file: &str, field: &str, message: String) -> Malformed {
        Malformed {
            file: file.to_string(),
            field: field.to_string(),
            message,
        }
    }
}

/// Reads the bundle in `dir` and, with `case`, checks it against the case (see the module
/// docs). The first problem found is the error.
pub fn read_bundle(dir: &Path, case: Option<&Case>) -> Result<Bundle, Malformed> {
    let config = read_config(dir).map_err(|e| malformed(dir, e))?;
    let bundle = Bundle::read_dir(dir).map_err(|e| malformed(dir, e))?;
    if let Some(case) = case {
        check_against_case(&bundle, &config, case)?;
    }
    Ok(bundle)
}

/// A reader's error as a [`Malformed`]: its file relative to `dir`, its field when it names one.
fn malformed(dir: &Path, e: BundleError) -> Malformed {
    let relative = |p: &Path| {
        p.strip_prefix(dir)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned()
    };
    let typed = |path: &Path, source: &pimdiff_isa::schema::FieldError| {
        let field = if source.field == "." {
            ""
        } else {
            &source.field
        };
        Malformed::new(&relative(path), field, source.message.clone())
    };
    match &e {
        BundleError::Field { path, source } => typed(path, source),
        BundleError::Crossbars(pimdiff_isa::xbar::XbarError::Typed { path, source }) => {
            typed(path, source)
        }
        _ => {
            // The other errors name their file in their text: shown relative to the bundle.
            let text = e.to_string().replace(&format!("{}/", dir.display()), "");
            match text.split_once(": ") {
                Some((file, rest)) if !file.contains(' ') => Malformed::new(file, "", rest.into()),
                _ => Malformed::new("bundle", "", text),
            }
        }
    }
}

/// The checks of a bundle against its case (see the module docs).
pub fn check_against_case(
    bundle: &Bundle,
    config: &BundleConfig,
    case: &Case,
) -> Result<(), Malformed> {
    let arch = &case.spec.arch;
    if config.core_cnt as usize != arch.cores {
        return Err(Malformed::new(
            "config.json",
            "core_cnt",
            format!(
                "{}, but the case's architecture has {} cores (`arch.cores`); the case governs",
                config.core_cnt, arch.cores
            ),
        ));
    }
    if let Some(a) = &config.arch {
        check_arch(a, case)?;
    }
    check_manifest(bundle, case)?;
    check_crossbars(bundle)
}

/// Each key `config.json`'s `arch` states, against the case's machine.
fn check_arch(a: &ArchConfig, case: &Case) -> Result<(), Malformed> {
    let c = &case.spec.arch;
    let as_u64 = |v: Option<u32>| v.map(u64::from);
    let mesh = Arch::default_mesh(u32::try_from(c.cores).unwrap_or(u32::MAX));
    let stated = [
        (
            "arrays_per_core",
            as_u64(a.arrays_per_core),
            c.arrays_per_core as u64,
            "the case's `arch.arrays_per_core`",
        ),
        (
            "array_rows",
            as_u64(a.array_rows),
            c.array_rows as u64,
            "the case's `arch.array_rows`",
        ),
        (
            "array_cols",
            as_u64(a.array_cols),
            c.array_cols as u64,
            "the case's `arch.array_cols`",
        ),
        (
            "local_memory_bytes",
            as_u64(a.local_memory_bytes),
            c.local_memory_bytes as u64,
            "the case's `arch.local_memory_bytes`",
        ),
        (
            "frac_bits",
            as_u64(a.frac_bits),
            0,
            "the machine's (no fraction bits)",
        ),
    ];
    for (key, found, expected, whose) in stated {
        if let Some(found) = found.filter(|&f| f != expected) {
            return Err(Malformed::new(
                "config.json",
                &format!("arch.{key}"),
                format!("{found}, but {whose} is {expected}; the case governs"),
            ));
        }
    }
    if let Some(found) = a.mesh.filter(|m| *m != mesh) {
        return Err(Malformed::new(
            "config.json",
            "arch.mesh",
            format!(
                "{found:?}, but the machine of {} cores is a {mesh:?} mesh",
                c.cores
            ),
        ));
    }
    if a.group_reading.is_some() {
        return Err(Malformed::new(
            "config.json",
            "arch.group_reading",
            "a bundle's `mvmul` names groups of its crossbar export; leave it out".into(),
        ));
    }
    Ok(())
}

/// The io manifest's slots and constants against the case's tensors.
fn check_manifest(bundle: &Bundle, case: &Case) -> Result<(), Malformed> {
    let m = &bundle.manifest;
    let output = case.spec.output_shape();
    for (what, slot, expected) in [
        ("input", &m.input, case.input.shape().to_vec()),
        ("output", &m.output, output.clone()),
    ] {
        if slot.shape != expected {
            return Err(Malformed::new(
                "io.json",
                &format!("{what}.shape"),
                format!(
                    "{:?}, but the case's {what} is {expected:?} (the logical shape, NCHW or \
                     [N, features], whatever the layout)",
                    slot.shape
                ),
            ));
        }
    }
    let channels = output.get(1).copied().unwrap_or(0);
    for (i, c) in m.constants.iter().enumerate() {
        if c.name != "bias" {
            continue;
        }
        let expected = channels * 4;
        if case.bias.is_none() || c.data.len() != expected {
            let why = match &case.bias {
                None => "the case has no bias".to_string(),
                Some(_) => format!(
                    "the case's bias is {channels} int32 values, {expected} bytes (raw little-endian)"
                ),
            };
            return Err(Malformed::new(
                "io.json",
                &format!("constants[{i}]"),
                format!(
                    "constant `bias` (file `{}`) has {} bytes, but {why}",
                    c.file,
                    c.data.len()
                ),
            ));
        }
    }
    Ok(())
}

/// A program that multiplies on crossbars needs their contents.
fn check_crossbars(bundle: &Bundle) -> Result<(), Malformed> {
    if !bundle.xbars.cores.is_empty() {
        return Ok(());
    }
    let first = bundle
        .program
        .cores
        .iter()
        .enumerate()
        .find_map(|(core, insts)| {
            insts
                .iter()
                .position(|i| matches!(i, Inst::Mvmul { .. }))
                .map(|pc| (core, pc))
        });
    match first {
        None => Ok(()),
        Some((core, pc)) => Err(Malformed::new(
            "xbars/",
            "",
            format!(
                "missing: the program multiplies on crossbars (`mvmul` at core {core}, pc {pc}) \
                 but the bundle has no crossbar contents; write xbars/core_<i>.npy (the cells) \
                 and xbars/core_<i>.json (the groups) for every core with arrays"
            ),
        )),
    }
}
