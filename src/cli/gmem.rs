//! `--gmem ADDR=FILE.npy`: int8 arrays written into global memory before a run.
//!
//! Each array is written flat (row-major, whatever its shape) at element address `ADDR`; under
//! the ISA's 8-bit widths an element is a byte, so the address is also a byte address. The
//! flag is repeatable. Refused, as bad input (exit 2), before the run: a malformed `ADDR=FILE`,
//! a file that is not a `.npy` of int8 (`|i1`), a header whose shape disagrees with the data,
//! a file larger than `pimdiff_input::limits::MAX_GMEM_NPY_BYTES` (256 MiB), preloads that
//! together exceed [`MAX_TOTAL_BYTES`], a range that runs past the 4 GiB global memory, and
//! two preloads that overlap.
//!
//! The file is read whole through `pimdiff_input`, after its size on disk is checked, and the
//! header is never trusted to size an allocation: ndarray-npy's *view* reader checks the
//! header's shape against the bytes actually present.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use ndarray::ArrayViewD;
use ndarray_npy::ViewNpyExt;
use pimdiff_input::limits::MAX_GMEM_NPY_BYTES;
use pimdiff_isa::machine::Machine;

/// Largest sum of all preloads of one run (1 GiB: global memory is sparse, so this is what a
/// run may cost in RAM for its preloads).
pub const MAX_TOTAL_BYTES: u64 = 1 << 30;
/// Global memory size: a preload must end at or below 2^32.
const GMEM_BYTES: u64 = 1 << 32;

/// One `--gmem` flag as given: where, and which file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GmemArg {
    pub addr: u32,
    pub path: PathBuf,
}

/// Parses `ADDR=FILE` (ADDR decimal or `0x` hexadecimal).
pub fn parse_gmem_arg(s: &str) -> anyhow::Result<GmemArg> {
    let Some((addr, path)) = s.split_once('=') else {
        bail!("expected ADDR=FILE.npy, got `{s}`")
    };
    let addr = addr.trim();
    let parsed = match addr.strip_prefix("0x").or_else(|| addr.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => addr.parse::<u32>(),
    };
    let addr = parsed.with_context(|| format!("bad address `{addr}` (0..=4294967295)"))?;
    if path.is_empty() {
        bail!("expected ADDR=FILE.npy, the file is missing in `{s}`");
    }
    Ok(GmemArg {
        addr,
        path: PathBuf::from(path),
    })
}

/// Preloads read and checked: disjoint `(address, bytes)` segments inside global memory.
#[derive(Debug, Default)]
pub struct Preloads {
    segments: Vec<(u32, Vec<u8>)>,
}

impl Preloads {
    /// Reads every file and checks the segments (see the module docs).
    pub fn read(args: &[GmemArg]) -> anyhow::Result<Preloads> {
        let mut segments = Vec::with_capacity(args.len());
        let mut total = 0u64;
        for arg in args {
            let bytes = read_int8_npy(&arg.path)?;
            let end = arg.addr as u64 + bytes.len() as u64;
            if end > GMEM_BYTES {
                bail!(
                    "--gmem {}={}: {} bytes at {} run past the end of global memory (2^32)",
                    arg.addr,
                    arg.path.display(),
                    bytes.len(),
                    arg.addr
                );
            }
            total += bytes.len() as u64;
            if total > MAX_TOTAL_BYTES {
                bail!("--gmem: the preloads exceed {MAX_TOTAL_BYTES} bytes in total");
            }
            segments.push((arg.addr, bytes, &arg.path));
        }
        let mut order: Vec<usize> = (0..segments.len()).collect();
        order.sort_by_key(|&i| segments[i].0);
        for pair in order.windows(2) {
            let (a, b) = (&segments[pair[0]], &segments[pair[1]]);
            let a_end = a.0 as u64 + a.1.len() as u64;
            if !a.1.is_empty() && !b.1.is_empty() && a_end > b.0 as u64 {
                bail!(
                    "--gmem: {} (bytes {}..{}) overlaps {} (bytes {}..{})",
                    a.2.display(),
                    a.0,
                    a_end,
                    b.2.display(),
                    b.0,
                    b.0 as u64 + b.1.len() as u64
                );
            }
        }
        Ok(Preloads {
            segments: segments.into_iter().map(|(a, b, _)| (a, b)).collect(),
        })
    }

    /// Writes every segment into the machine's global memory.
    pub fn apply(&self, machine: &mut Machine) -> anyhow::Result<()> {
        for (addr, bytes) in &self.segments {
            machine
                .write_gmem(*addr, bytes)
                .with_context(|| format!("--gmem at {addr}"))?;
        }
        Ok(())
    }

    pub fn total_bytes(&self) -> u64 {
        self.segments.iter().map(|(_, b)| b.len() as u64).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }
}

/// The elements of an int8 `.npy` file, row-major, as bytes. The file comes through the
/// bounded reader (`MAX_GMEM_NPY_BYTES`, refused from its size before it is read).
fn read_int8_npy(path: &Path) -> anyhow::Result<Vec<u8>> {
    let raw = pimdiff_input::read(path, MAX_GMEM_NPY_BYTES)
        .with_context(|| format!("cannot read --gmem file {}", path.display()))?;
    let view = ArrayViewD::<i8>::view_npy(&raw).map_err(|e| {
        anyhow::anyhow!(
            "--gmem file {}: not an int8 (|i1) .npy array: {e}",
            path.display()
        )
    })?;
    Ok(view.iter().map(|&v| v as u8).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_decimal_and_hex_addresses() {
        assert_eq!(
            parse_gmem_arg("16=a.npy").unwrap(),
            GmemArg {
                addr: 16,
                path: "a.npy".into()
            }
        );
        assert_eq!(
            parse_gmem_arg("0x10=b=c.npy").unwrap().path,
            PathBuf::from("b=c.npy")
        );
        assert_eq!(parse_gmem_arg("0x10=b.npy").unwrap().addr, 16);
        for bad in [
            "a.npy",
            "=a.npy",
            "-1=a.npy",
            "4294967296=a.npy",
            "0xg=a.npy",
            "3=",
        ] {
            assert!(parse_gmem_arg(bad).is_err(), "{bad}");
        }
    }
}
