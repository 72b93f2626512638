//! Reading a case's `.npy` tensors with every size checked before anything is allocated: the
//! file through `pimdiff_input` (bounded by its documented limit), the header with
//! [`pimdiff_input::npy`], its dtype and shape compared with what `case.json` implies, and only
//! then exactly that much data. Why not `ndarray_npy::ReadNpyExt`: it allocates whatever the
//! header asks for before the shape could be checked, and it refuses the `<i1` descriptor
//! that the case format allows for int8. Writing uses ndarray-npy (see [`crate::io`]).

use std::io::{self, BufReader, Read};
use std::path::Path;

use ndarray::{ArrayD, IxDyn, ShapeBuilder};
use pimdiff_input::limits::MAX_CASE_NPY_BYTES;
use pimdiff_input::npy::{read_header, HeaderError};
use pimdiff_input::{open, InputError};

use crate::error::CaseError;

/// The element types a case holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dtype {
    /// int8: `<i1` or `|i1` (NumPy writes `|i1`; `i1` and `>i1` are the same bytes and are
    /// accepted as well, since byte order means nothing for one byte).
    I8,
    /// int32, little-endian: `<i4` only, as the case format says.
    I32,
}

impl Dtype {
    fn accepts(self, descr: &str) -> bool {
        match self {
            Dtype::I8 => matches!(descr, "<i1" | "|i1" | "i1" | ">i1"),
            Dtype::I32 => descr == "<i4",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Dtype::I8 => "int8 ('<i1' or '|i1')",
            Dtype::I32 => "int32 ('<i4')",
        }
    }
}

/// Reads `path` (named `file` in errors) as an int8 array of exactly `shape`.
pub(crate) fn read_i8(
    path: &Path,
    file: &'static str,
    shape: &[usize],
) -> Result<ArrayD<i8>, CaseError> {
    read_array(path, file, Dtype::I8, shape, |b| b[0] as i8)
}

/// Reads `path` (named `file` in errors) as a little-endian int32 array of exactly `shape`.
pub(crate) fn read_i32(
    path: &Path,
    file: &'static str,
    shape: &[usize],
) -> Result<ArrayD<i32>, CaseError> {
    read_array(path, file, Dtype::I32, shape, |b| {
        i32::from_le_bytes([b[0], b[1], b[2], b[3]])
    })
}

fn read_array<T: Clone>(
    path: &Path,
    file: &'static str,
    dtype: Dtype,
    shape: &[usize],
    decode: fn(&[u8]) -> T,
) -> Result<ArrayD<T>, CaseError> {
    let f = open(path, MAX_CASE_NPY_BYTES).map_err(|e| CaseError::input(path, file, e))?;
    let mut reader = BufReader::new(f);
    let header = read_header(&mut reader).map_err(|e| header_error(path, file, e))?;
    if !dtype.accepts(&header.descr) {
        return Err(CaseError::WrongDtype {
            file,
            found: format!("'{}'", header.descr),
            expected: dtype.name(),
        });
    }
    if header.shape != shape {
        return Err(CaseError::ShapeMismatch {
            file,
            expected: shape.to_vec(),
            found: header.shape,
        });
    }
    // `shape` was validated against the limits, so this product is small.
    let len: usize = shape.iter().product();
    let item = match dtype {
        Dtype::I8 => 1,
        Dtype::I32 => 4,
    };
    let mut bytes = vec![0u8; len * item];
    reader.read_exact(&mut bytes).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => CaseError::Npy {
            file,
            reason: format!(
                "truncated: shape {shape:?} needs {} bytes of data, the file has fewer",
                len * item
            ),
        },
        _ => CaseError::input(path, file, InputError::from_io(e)),
    })?;
    let mut extra = [0u8; 1];
    match reader.read(&mut extra) {
        Ok(0) => {}
        Ok(_) => {
            return Err(CaseError::Npy {
                file,
                reason: "extra bytes after the data the header describes".into(),
            })
        }
        Err(e) => return Err(CaseError::input(path, file, InputError::from_io(e))),
    }
    let data: Vec<T> = bytes.chunks_exact(item).map(decode).collect();
    let dims = IxDyn(shape);
    let array = if header.fortran_order {
        // Column-major data: build the array in that order, then copy to row-major so that
        // every tensor of a `Case` has the same layout.
        ArrayD::from_shape_vec(dims.f(), data).map(|a| a.as_standard_layout().into_owned())
    } else {
        ArrayD::from_shape_vec(dims, data)
    };
    array.map_err(|e| CaseError::Npy {
        file,
        reason: format!("data does not match the shape: {e}"),
    })
}

/// A header problem as the case reader reports it.
fn header_error(path: &Path, file: &'static str, e: HeaderError) -> CaseError {
    match e {
        HeaderError::TooLong(len) => CaseError::BeyondLimit {
            file,
            what: "the header length".into(),
            value: len as u128,
            limit: pimdiff_input::npy::MAX_HEADER_BYTES as u128,
            name: "MAX_NPY_HEADER_BYTES",
        },
        HeaderError::Io(e) => CaseError::input(path, file, InputError::from_io(e)),
        other => CaseError::Npy {
            file,
            reason: other.to_string(),
        },
    }
}
