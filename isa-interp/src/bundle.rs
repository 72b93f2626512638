//! The bundle a compiler writes: program, crossbar export and io manifest.
//!
//! A bundle directory holds
//!
//! ```text
//! config.json, core_<i>.json   the program, pimsim-nn's directory form
//! xbars/core_<i>.{npy,json}    the crossbar export (isa.md "The crossbar export")
//! io.json                      the io manifest: where input, output and constants live in GMem
//! <constant files>             raw little-endian bytes of each constant segment (e.g. bias.bin)
//! ```
//!
//! Bundles come from external compilers too, so [`Bundle::read_dir`] trusts nothing: every
//! file goes through the bounded reader (`pimdiff_input`) and is size-bounded before it is read, constant file names must be plain names inside the
//! bundle, and every tensor slot and segment must lie inside the 4 GiB global memory. Errors
//! name the file at fault.
//!
//! The manifest also converts between the case's *logical* tensors (NCHW / `[N, features]`)
//! and the bytes the program expects in GMem ([`IoManifest::encode_input`],
//! [`IoManifest::decode_output`]), so the harness never needs to know a compiler's layout.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use ndarray::{ArrayD, IxDyn};
use serde::{Deserialize, Serialize};

use crate::formats::{read_program_dir, write_program_dir};
use crate::program::Program;
use crate::xbar::{read_export_dir, write_export_files, CrossbarExport, XbarError};

/// Everything a compiler hands to the harness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bundle {
    pub program: Program,
    pub xbars: CrossbarExport,
    pub manifest: IoManifest,
}

/// Where the tensors live in global memory (`io.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "io.json of a pimdiff bundle")]
pub struct IoManifest {
    /// Placed in GMem by the harness before the run.
    pub input: TensorSlot,
    /// Read back from GMem after the run.
    pub output: TensorSlot,
    /// Data the harness loads into GMem before the run (e.g. the bias vector); may be absent.
    #[serde(default)]
    pub constants: Vec<ConstSegment>,
}

/// One tensor in global memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TensorSlot {
    /// GMem byte address of the first element.
    pub addr: u32,
    /// The logical shape, whatever the layout: `[N, C, H, W]` for a feature map (also when
    /// `layout` is `nhwc`), `[N, features]` for an MVM. It must be the case's.
    pub shape: Vec<usize>,
    /// The memory order of the elements.
    pub layout: Layout,
    /// The element type in memory (little-endian two's complement).
    pub dtype: Dtype,
}

/// Memory order of a tensor slot. The logical shape is always NCHW (or `[N, C]`); the
/// layout only says how its elements are laid out, densely, in GMem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// `[N, C, H, W]` in that order.
    Nchw,
    /// `[N, H, W, C]`: a pixel's channels are contiguous.
    Nhwc,
    /// A 2-D `[N, C]` tensor, row-major.
    Nc,
}

/// Element type of a tensor slot; little-endian two's complement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    Int8,
    Int32,
}

impl Dtype {
    pub fn bytes(self) -> usize {
        match self {
            Dtype::Int8 => 1,
            Dtype::Int32 => 4,
        }
    }
}

/// A constant segment: `data` is loaded at `addr` before the run. In the bundle directory
/// the bytes live in `file` (a plain file name inside the bundle); `io.json` does not carry them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConstSegment {
    /// A name for reports. `bias` is the case's bias: int32, one value per output channel.
    pub name: String,
    /// GMem byte address the bytes are loaded at.
    pub addr: u32,
    /// A plain file name inside the bundle holding the raw bytes (for `bias`: little-endian
    /// int32 values).
    pub file: String,
    #[serde(skip)]
    pub data: Vec<u8>,
}

/// The largest file a bundle reader accepts for `io.json` (1 MiB, `pimdiff_input`'s limit).
pub const MAX_MANIFEST_BYTES: u64 = pimdiff_input::limits::MAX_MANIFEST_BYTES.bytes;
/// The largest constant segment a bundle may carry (256 MiB, `pimdiff_input`'s limit).
pub const MAX_CONSTANT_BYTES: u64 = pimdiff_input::limits::MAX_CONSTANT_BYTES.bytes;
/// The largest tensor slot (elements) a manifest may declare: 2^26, beyond every case limit.
pub const MAX_SLOT_ELEMENTS: usize = 1 << 26;

/// A bundle could not be written or read, or a tensor does not fit its slot.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    /// The bounded reader refused the file (empty, or above its limit; `pimdiff_input`).
    #[error("{}: {source}", path.display())]
    Input {
        path: PathBuf,
        source: pimdiff_input::InputError,
    },
    #[error("{}: invalid JSON: {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// A JSON file that does not match its type (`crate::typed`): the field and what was
    /// expected.
    #[error("{}: {source}", path.display())]
    Field {
        path: PathBuf,
        source: crate::typed::FieldError,
    },
    #[error("{}: {problem}", path.display())]
    Manifest {
        path: PathBuf,
        problem: ManifestProblem,
    },
    /// The program (`config.json`, `core_<i>.json`) could not be loaded; the error names the file.
    #[error("{0}")]
    Program(#[from] crate::formats::LoadError),
    /// The crossbar export (`xbars/`) could not be loaded; the error names the file.
    #[error("{0}")]
    Crossbars(#[from] crate::xbar::XbarError),
    /// A manifest used outside a directory (encode/decode) is inconsistent.
    #[error("io manifest: {0}")]
    Slot(ManifestProblem),
}

/// What is wrong with a manifest, or with a tensor against its slot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestProblem {
    #[error("constant {name:?}: file name {file:?} must be a plain file name inside the bundle")]
    ConstantFileName { name: String, file: String },
    #[error("constant {name:?}: file {file:?} has {found} bytes, more than the limit of {limit}")]
    ConstantTooLarge {
        name: String,
        file: String,
        found: u64,
        limit: u64,
    },
    #[error("{what}: layout {layout:?} needs a {expected}-dimensional shape, found {found:?}")]
    LayoutRank {
        what: String,
        layout: Layout,
        expected: usize,
        found: Vec<usize>,
    },
    #[error("{what}: shape {shape:?} has more than {limit} elements")]
    SlotTooLarge {
        what: String,
        shape: Vec<usize>,
        limit: usize,
    },
    #[error("{what}: {len} bytes at address {addr} run past the end of global memory (2^32)")]
    OutOfGlobalMemory { what: String, addr: u32, len: u64 },
    #[error("{what}: slot dtype is {slot:?}, but the tensor is {tensor:?}")]
    Dtype {
        what: String,
        slot: Dtype,
        tensor: Dtype,
    },
    #[error("{what}: tensor shape {found:?} differs from the slot's {expected:?}")]
    Shape {
        what: String,
        expected: Vec<usize>,
        found: Vec<usize>,
    },
    #[error("{what}: {found} bytes given, the slot holds {expected}")]
    Length {
        what: String,
        expected: usize,
        found: usize,
    },
    #[error("value {value} of the int32 tensor does not fit the int8 slot {what}")]
    Narrowing { what: String, value: i32 },
}

impl TensorSlot {
    /// Number of elements of the logical shape.
    pub fn elements(&self) -> usize {
        self.shape.iter().product()
    }

    /// Bytes the slot occupies in GMem.
    pub fn byte_len(&self) -> usize {
        self.elements() * self.dtype.bytes()
    }

    /// Check rank against layout, size against [`MAX_SLOT_ELEMENTS`] and the range against
    /// the 4 GiB global memory. `what` names the slot in errors.
    pub fn check(&self, what: &str) -> Result<(), ManifestProblem> {
        let expected = match self.layout {
            Layout::Nchw | Layout::Nhwc => 4,
            Layout::Nc => 2,
        };
        if self.shape.len() != expected {
            return Err(ManifestProblem::LayoutRank {
                what: what.to_string(),
                layout: self.layout,
                expected,
                found: self.shape.clone(),
            });
        }
        let elements = self
            .shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .filter(|&e| e <= MAX_SLOT_ELEMENTS);
        let Some(elements) = elements else {
            return Err(ManifestProblem::SlotTooLarge {
                what: what.to_string(),
                shape: self.shape.clone(),
                limit: MAX_SLOT_ELEMENTS,
            });
        };
        check_range(what, self.addr, (elements * self.dtype.bytes()) as u64)
    }

    /// The element offset (in memory order) of every logical index, in logical
    /// (row-major) order. Assumes [`TensorSlot::check`] passed.
    fn memory_order(&self) -> Vec<usize> {
        let s = &self.shape;
        match self.layout {
            Layout::Nchw | Layout::Nc => (0..self.elements()).collect(),
            Layout::Nhwc => {
                let (n, c, h, w) = (s[0], s[1], s[2], s[3]);
                let mut out = Vec::with_capacity(self.elements());
                for ni in 0..n {
                    for ci in 0..c {
                        for hi in 0..h {
                            for wi in 0..w {
                                out.push(((ni * h + hi) * w + wi) * c + ci);
                            }
                        }
                    }
                }
                out
            }
        }
    }

    /// The GMem bytes of a logical int32 tensor (narrowed to int8 if the slot says so).
    pub fn encode(&self, what: &str, values: &ArrayD<i32>) -> Result<Vec<u8>, ManifestProblem> {
        self.check(what)?;
        if values.shape() != self.shape.as_slice() {
            return Err(ManifestProblem::Shape {
                what: what.to_string(),
                expected: self.shape.clone(),
                found: values.shape().to_vec(),
            });
        }
        let width = self.dtype.bytes();
        let mut bytes = vec![0u8; self.byte_len()];
        for (&v, pos) in values.iter().zip(self.memory_order()) {
            let at = pos * width;
            match self.dtype {
                Dtype::Int8 => {
                    let b = i8::try_from(v).map_err(|_| ManifestProblem::Narrowing {
                        what: what.to_string(),
                        value: v,
                    })?;
                    bytes[at] = b as u8;
                }
                Dtype::Int32 => bytes[at..at + 4].copy_from_slice(&v.to_le_bytes()),
            }
        }
        Ok(bytes)
    }

    /// The logical tensor (int8 values sign-extended) of the slot's GMem bytes.
    pub fn decode(&self, what: &str, bytes: &[u8]) -> Result<ArrayD<i32>, ManifestProblem> {
        self.check(what)?;
        if bytes.len() != self.byte_len() {
            return Err(ManifestProblem::Length {
                what: what.to_string(),
                expected: self.byte_len(),
                found: bytes.len(),
            });
        }
        let width = self.dtype.bytes();
        let values: Vec<i32> = self
            .memory_order()
            .into_iter()
            .map(|pos| {
                let at = pos * width;
                match self.dtype {
                    Dtype::Int8 => bytes[at] as i8 as i32,
                    Dtype::Int32 => {
                        i32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
                    }
                }
            })
            .collect();
        ArrayD::from_shape_vec(IxDyn(&self.shape), values).map_err(|_| ManifestProblem::Length {
            what: what.to_string(),
            expected: self.elements(),
            found: bytes.len() / width,
        })
    }
}

fn check_range(what: &str, addr: u32, len: u64) -> Result<(), ManifestProblem> {
    if addr as u64 + len > 1u64 << 32 {
        return Err(ManifestProblem::OutOfGlobalMemory {
            what: what.to_string(),
            addr,
            len,
        });
    }
    Ok(())
}

impl IoManifest {
    /// Check both slots and every constant's range and file name.
    pub fn check(&self) -> Result<(), ManifestProblem> {
        self.input.check("input")?;
        self.output.check("output")?;
        for c in &self.constants {
            check_file_name(c)?;
            check_range(
                &format!("constant {:?}", c.name),
                c.addr,
                c.data.len() as u64,
            )?;
        }
        Ok(())
    }

    /// The bytes to write at `input.addr`: the case's logical int8 input in the slot's
    /// layout and dtype.
    pub fn encode_input(&self, input: &ArrayD<i8>) -> Result<Vec<u8>, BundleError> {
        if self.input.shape.as_slice() != input.shape() {
            return Err(BundleError::Slot(ManifestProblem::Shape {
                what: "input".into(),
                expected: self.input.shape.clone(),
                found: input.shape().to_vec(),
            }));
        }
        self.input
            .encode("input", &input.mapv(i32::from))
            .map_err(BundleError::Slot)
    }

    /// The logical output tensor (NCHW / `[N, features]`) from the `output.byte_len()`
    /// bytes read at `output.addr`.
    pub fn decode_output(&self, bytes: &[u8]) -> Result<ArrayD<i32>, BundleError> {
        self.output
            .decode("output", bytes)
            .map_err(BundleError::Slot)
    }
}

fn check_file_name(c: &ConstSegment) -> Result<(), ManifestProblem> {
    let f = &c.file;
    let plain = !f.is_empty()
        && f != "."
        && f != ".."
        && !f.contains(['/', '\\', '\0'])
        && !f.contains(':')
        && !matches!(f.as_str(), "io.json" | "config.json")
        && !f.starts_with("core_");
    if plain {
        Ok(())
    } else {
        Err(ManifestProblem::ConstantFileName {
            name: c.name.clone(),
            file: f.clone(),
        })
    }
}

/// A refusal of the bounded reader for `path`, an operating-system error as [`BundleError::Io`].
pub(crate) fn input_error(path: &Path, e: pimdiff_input::InputError) -> BundleError {
    let path = path.to_path_buf();
    match e {
        pimdiff_input::InputError::Io(source) => BundleError::Io { path, source },
        source => BundleError::Input { path, source },
    }
}

impl IoManifest {
    /// Write `io.json` and one file per constant segment into `dir`.
    pub fn write_dir(&self, dir: &Path) -> Result<(), BundleError> {
        let path = dir.join("io.json");
        self.check().map_err(|problem| BundleError::Manifest {
            path: path.clone(),
            problem,
        })?;
        let text = serde_json::to_string_pretty(self).map_err(|source| BundleError::Json {
            path: path.clone(),
            source,
        })?;
        fs::write(&path, text + "\n").map_err(|source| BundleError::Io { path, source })?;
        for c in &self.constants {
            let p = dir.join(&c.file);
            fs::write(&p, &c.data).map_err(|source| BundleError::Io { path: p, source })?;
        }
        Ok(())
    }

    /// Read `io.json` and its constant files from `dir`, checking everything.
    pub fn read_dir(dir: &Path) -> Result<IoManifest, BundleError> {
        let path = dir.join("io.json");
        let bytes = pimdiff_input::read(&path, pimdiff_input::limits::MAX_MANIFEST_BYTES)
            .map_err(|e| input_error(&path, e))?;
        let mut manifest: IoManifest =
            crate::typed::read_typed(&bytes).map_err(|source| BundleError::Field {
                path: path.clone(),
                source,
            })?;
        let bad = |problem| BundleError::Manifest {
            path: path.clone(),
            problem,
        };
        manifest.input.check("input").map_err(bad)?;
        manifest.output.check("output").map_err(bad)?;
        for c in &mut manifest.constants {
            check_file_name(c).map_err(bad)?;
            let p = dir.join(&c.file);
            let len = fs::metadata(&p)
                .map_err(|source| BundleError::Io {
                    path: p.clone(),
                    source,
                })?
                .len();
            if len > MAX_CONSTANT_BYTES {
                return Err(bad(ManifestProblem::ConstantTooLarge {
                    name: c.name.clone(),
                    file: c.file.clone(),
                    found: len,
                    limit: MAX_CONSTANT_BYTES,
                }));
            }
            // A zero-length segment is valid data.
            c.data = pimdiff_input::read_maybe_empty(&p, pimdiff_input::limits::MAX_CONSTANT_BYTES)
                .map_err(|e| input_error(&p, e))?;
            check_range(
                &format!("constant {:?}", c.name),
                c.addr,
                c.data.len() as u64,
            )
            .map_err(bad)?;
        }
        Ok(manifest)
    }
}

impl Bundle {
    /// Name of the crossbar export's subdirectory.
    pub const XBARS_DIR: &'static str = "xbars";

    /// Write the bundle into `dir` (created if missing): the program in pimsim-nn's directory
    /// form, the crossbar export in `xbars/`, `io.json` and the constant files.
    pub fn write_dir(&self, dir: &Path) -> Result<(), BundleError> {
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| BundleError::Io { path, source }
        };
        // `write_program_dir` creates `dir` when missing.
        write_program_dir(&self.program, dir).map_err(io_err(dir))?;
        let xdir = dir.join(Self::XBARS_DIR);
        if let Err(e) = fs::create_dir(&xdir) {
            if e.kind() != std::io::ErrorKind::AlreadyExists {
                return Err(io_err(&xdir)(e));
            }
            // Stale files of an earlier bundle would be read back as cores of this one.
            fs::remove_dir_all(&xdir).map_err(io_err(&xdir))?;
            fs::create_dir(&xdir).map_err(io_err(&xdir))?;
        }
        write_export_files(&self.xbars, &xdir).map_err(io_err(&xdir))?;
        self.manifest.write_dir(dir)
    }

    /// Read a bundle from `dir`, refusing a broken or hostile one with an error naming the
    /// file. A bundle without `xbars/` has an empty export (groups then come from the
    /// program's config, as for PIMCOMP-NN programs).
    pub fn read_dir(dir: &Path) -> Result<Bundle, BundleError> {
        let program = read_program_dir(dir)?;
        let xdir = dir.join(Self::XBARS_DIR);
        let xbars = match read_export_dir(&xdir) {
            Ok(x) => x,
            // No `xbars/` (or a file by that name, as before): an empty export.
            Err(XbarError::Io { source, .. })
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) && !xdir.is_dir() =>
            {
                CrossbarExport::default()
            }
            Err(e) => return Err(e.into()),
        };
        let manifest = IoManifest::read_dir(dir)?;
        Ok(Bundle {
            program,
            xbars,
            manifest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array4, ArrayD};

    fn slot(shape: Vec<usize>, layout: Layout, dtype: Dtype) -> TensorSlot {
        TensorSlot {
            addr: 16,
            shape,
            layout,
            dtype,
        }
    }

    #[test]
    fn nhwc_encoding_puts_a_pixels_channels_together() {
        // x[n, c, h, w] = 100c + 10h + w, shape [1, 2, 2, 3].
        let x = Array4::from_shape_fn((1, 2, 2, 3), |(_, c, h, w)| (100 * c + 10 * h + w) as i32)
            .into_dyn();
        let s = slot(vec![1, 2, 2, 3], Layout::Nhwc, Dtype::Int32);
        let bytes = s.encode("t", &x).unwrap();
        let words: Vec<i32> = bytes
            .chunks(4)
            .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(
            words,
            vec![0, 100, 1, 101, 2, 102, 10, 110, 11, 111, 12, 112]
        );
        assert_eq!(s.decode("t", &bytes).unwrap(), x);
    }

    #[test]
    fn int8_input_round_trips_and_nchw_is_identity() {
        let m = IoManifest {
            input: slot(vec![1, 2, 1, 2], Layout::Nchw, Dtype::Int8),
            output: slot(vec![2, 3], Layout::Nc, Dtype::Int32),
            constants: vec![],
        };
        let x = ArrayD::from_shape_vec(vec![1, 2, 1, 2], vec![-1i8, 2, -3, 4]).unwrap();
        assert_eq!(m.encode_input(&x).unwrap(), vec![0xff, 2, 0xfd, 4]);
        let out: Vec<u8> = (1..=6i32).flat_map(|v| (-v).to_le_bytes()).collect();
        let y = m.decode_output(&out).unwrap();
        assert_eq!(
            y,
            ArrayD::from_shape_vec(vec![2, 3], vec![-1, -2, -3, -4, -5, -6]).unwrap()
        );
    }

    #[test]
    fn mismatches_are_typed_errors() {
        let m = IoManifest {
            input: slot(vec![1, 2, 1, 2], Layout::Nhwc, Dtype::Int8),
            output: slot(vec![2, 3], Layout::Nc, Dtype::Int32),
            constants: vec![],
        };
        let x = ArrayD::<i8>::zeros(vec![1, 2, 2, 1]);
        assert!(matches!(
            m.encode_input(&x),
            Err(BundleError::Slot(ManifestProblem::Shape { .. }))
        ));
        assert!(matches!(
            m.decode_output(&[0; 23]),
            Err(BundleError::Slot(ManifestProblem::Length {
                expected: 24,
                found: 23,
                ..
            }))
        ));
        let bad_rank = slot(vec![2, 3], Layout::Nhwc, Dtype::Int8);
        assert!(matches!(
            bad_rank.check("x"),
            Err(ManifestProblem::LayoutRank { expected: 4, .. })
        ));
        let past_end = TensorSlot {
            addr: u32::MAX - 2,
            ..slot(vec![1, 4], Layout::Nc, Dtype::Int8)
        };
        assert!(matches!(
            past_end.check("x"),
            Err(ManifestProblem::OutOfGlobalMemory { len: 4, .. })
        ));
        let huge = slot(vec![1 << 20, 1 << 20], Layout::Nc, Dtype::Int8);
        assert!(matches!(
            huge.check("x"),
            Err(ManifestProblem::SlotTooLarge { .. })
        ));
    }

    #[test]
    fn hostile_manifests_are_refused_naming_io_json() {
        let dir = tempfile::tempdir().unwrap();
        let write = |text: &str| fs::write(dir.path().join("io.json"), text).unwrap();
        let slots = r#""input": {"addr": 0, "shape": [1, 4], "layout": "nc", "dtype": "int8"},
                       "output": {"addr": 64, "shape": [1, 2], "layout": "nc", "dtype": "int32"}"#;
        for file in [
            "../etc/passwd",
            "/abs",
            "a/b",
            "..",
            "",
            "io.json",
            "core_0.json",
        ] {
            write(&format!(
                r#"{{{slots}, "constants": [{{"name": "b", "addr": 0, "file": {file:?}}}]}}"#
            ));
            let err = IoManifest::read_dir(dir.path()).unwrap_err();
            assert!(
                matches!(&err, BundleError::Manifest { path, problem: ManifestProblem::ConstantFileName { .. } }
                    if path.ends_with("io.json")),
                "{file}: {err}"
            );
        }
        write(&format!(r#"{{{slots}, "extra": 1}}"#));
        assert!(matches!(
            IoManifest::read_dir(dir.path()),
            Err(BundleError::Field { source, .. }) if source.field == "extra"
        ));
        write(&format!(
            r#"{{{slots}, "constants": [{{"name": "b", "addr": 0, "file": "missing.bin"}}]}}"#
        ));
        let err = IoManifest::read_dir(dir.path()).unwrap_err();
        assert!(
            matches!(&err, BundleError::Io { path, .. } if path.ends_with("missing.bin")),
            "{err}"
        );
        fs::write(dir.path().join("b.bin"), [1, 2, 3, 4]).unwrap();
        write(&format!(
            r#"{{{slots}, "constants": [{{"name": "b", "addr": 4294967294, "file": "b.bin"}}]}}"#
        ));
        assert!(matches!(
            IoManifest::read_dir(dir.path()),
            Err(BundleError::Manifest {
                problem: ManifestProblem::OutOfGlobalMemory { .. },
                ..
            })
        ));
        write(&format!(
            r#"{{{slots}, "constants": [{{"name": "b", "addr": 8, "file": "b.bin"}}]}}"#
        ));
        let m = IoManifest::read_dir(dir.path()).unwrap();
        assert_eq!(m.constants[0].data, vec![1, 2, 3, 4]);
    }
}
