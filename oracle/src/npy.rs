//! Reading `.npy` files with every size checked before anything is allocated.
//!
//! Why not `ndarray_npy::ReadNpyExt`: ndarray-npy 0.9 keeps its header parser private, so
//! its reader allocates whatever the header's shape asks for before we could check it
//! against the case (a 100-byte file can ask for terabytes), and it refuses the `<i1`
//! descriptor that the case format allows for int8. This reader parses the header itself
//! (the format is NumPy's `numpy.lib.format`, versions 1.0 to 3.0), compares the shape with
//! the one `case.json` implies, and only then reads exactly that many bytes. Writing uses
//! ndarray-npy (see [`crate::io`]).

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use ndarray::{ArrayD, IxDyn, ShapeBuilder};

use crate::error::CaseError;
use crate::limits;

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

/// What the header of a `.npy` file says.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub descr: String,
    pub fortran_order: bool,
    pub shape: Vec<usize>,
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
    let f = File::open(path).map_err(|e| CaseError::io(path, e))?;
    let mut reader = BufReader::new(f);
    let header = read_header(&mut reader, file).map_err(|e| match e {
        HeaderError::Case(e) => e,
        HeaderError::Io(e) => CaseError::io(path, e),
    })?;
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
        _ => CaseError::io(path, e),
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
        Err(e) => return Err(CaseError::io(path, e)),
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

pub(crate) enum HeaderError {
    Case(CaseError),
    Io(io::Error),
}

impl From<CaseError> for HeaderError {
    fn from(e: CaseError) -> Self {
        HeaderError::Case(e)
    }
}

/// Reads and parses the header, leaving `reader` at the first data byte.
pub(crate) fn read_header<R: Read>(
    reader: &mut R,
    file: &'static str,
) -> Result<Header, HeaderError> {
    let bad = |reason: String| HeaderError::Case(CaseError::Npy { file, reason });
    let mut fixed = [0u8; 8];
    read_exact_or(reader, &mut fixed, || {
        bad("truncated: shorter than the 8-byte preamble".into())
    })?;
    if &fixed[..6] != b"\x93NUMPY" {
        return Err(bad("the magic string \\x93NUMPY is missing".into()));
    }
    let header_len = match (fixed[6], fixed[7]) {
        (1, 0) => {
            let mut b = [0u8; 2];
            read_exact_or(reader, &mut b, || bad("truncated header length".into()))?;
            u16::from_le_bytes(b) as usize
        }
        (2, 0) | (3, 0) => {
            let mut b = [0u8; 4];
            read_exact_or(reader, &mut b, || bad("truncated header length".into()))?;
            u32::from_le_bytes(b) as usize
        }
        (major, minor) => {
            return Err(bad(format!(
                "format version {major}.{minor} is not supported"
            )))
        }
    };
    if header_len > limits::MAX_NPY_HEADER_BYTES {
        return Err(HeaderError::Case(CaseError::BeyondLimit {
            file,
            what: "the header length".into(),
            value: header_len as u128,
            limit: limits::MAX_NPY_HEADER_BYTES as u128,
            name: "MAX_NPY_HEADER_BYTES",
        }));
    }
    let mut text = vec![0u8; header_len];
    read_exact_or(reader, &mut text, || bad("truncated header".into()))?;
    let text = std::str::from_utf8(&text).map_err(|_| bad("the header is not text".into()))?;
    parse_header(text).map_err(|reason| bad(format!("header {:?}: {reason}", text.trim_end())))
}

fn read_exact_or<R: Read>(
    reader: &mut R,
    buf: &mut [u8],
    truncated: impl FnOnce() -> HeaderError,
) -> Result<(), HeaderError> {
    reader.read_exact(buf).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => truncated(),
        _ => HeaderError::Io(e),
    })
}

/// Parses the header dictionary, e.g. `{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }`.
/// Exactly the three keys NumPy writes are required, as `numpy.load` does.
pub(crate) fn parse_header(text: &str) -> Result<Header, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
    };
    let value = p.value(0)?;
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(format!(
            "unexpected text after the dictionary at byte {}",
            p.pos
        ));
    }
    let Py::Dict(entries) = value else {
        return Err("not a dictionary".into());
    };
    let (mut descr, mut fortran_order, mut shape) = (None, None, None);
    for (key, value) in entries {
        match (key.as_str(), value) {
            ("descr", Py::Str(s)) => descr = Some(s),
            ("descr", _) => {
                return Err(
                    "'descr' is not a simple type string (structured dtypes are not supported)"
                        .into(),
                )
            }
            ("fortran_order", Py::Bool(b)) => fortran_order = Some(b),
            ("fortran_order", _) => return Err("'fortran_order' is not True or False".into()),
            ("shape", Py::Tuple(items)) => {
                let dims = items
                    .into_iter()
                    .map(|d| match d {
                        Py::Int(i) => usize::try_from(i)
                            .map_err(|_| format!("dimension {i} is not a valid size")),
                        _ => Err("'shape' holds something other than integers".to_string()),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                shape = Some(dims);
            }
            ("shape", _) => return Err("'shape' is not a tuple".into()),
            (other, _) => return Err(format!("unknown key {other:?}")),
        }
    }
    Ok(Header {
        descr: descr.ok_or("missing key 'descr'")?,
        fortran_order: fortran_order.ok_or("missing key 'fortran_order'")?,
        shape: shape.ok_or("missing key 'shape'")?,
    })
}

/// The subset of Python literals NumPy headers use.
enum Py {
    Str(String),
    Bool(bool),
    Int(i128),
    Tuple(Vec<Py>),
    Dict(Vec<(String, Py)>),
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

/// Nesting deeper than this is refused (NumPy headers nest two levels), so a hostile header
/// cannot exhaust the stack.
const MAX_DEPTH: usize = 8;

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", c as char, self.pos))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Py, String> {
        if depth > MAX_DEPTH {
            return Err("nested too deeply".into());
        }
        match self.peek() {
            Some(b'{') => {
                self.pos += 1;
                let mut entries = Vec::new();
                while self.peek() != Some(b'}') {
                    let Py::Str(key) = self.value(depth + 1)? else {
                        return Err(format!(
                            "a dictionary key at byte {} is not a string",
                            self.pos
                        ));
                    };
                    self.expect(b':')?;
                    let value = self.value(depth + 1)?;
                    entries.push((key, value));
                    if self.peek() == Some(b',') {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
                self.expect(b'}')?;
                Ok(Py::Dict(entries))
            }
            Some(open @ (b'(' | b'[')) => {
                let close = if open == b'(' { b')' } else { b']' };
                self.pos += 1;
                let mut items = Vec::new();
                while self.peek() != Some(close) {
                    items.push(self.value(depth + 1)?);
                    if self.peek() == Some(b',') {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
                self.expect(close)?;
                Ok(Py::Tuple(items))
            }
            Some(q @ (b'\'' | b'"')) => {
                self.pos += 1;
                let start = self.pos;
                while self.pos < self.s.len() && self.s[self.pos] != q {
                    if self.s[self.pos] == b'\\' {
                        return Err("escape sequences in strings are not supported".into());
                    }
                    self.pos += 1;
                }
                if self.pos == self.s.len() {
                    return Err("unterminated string".into());
                }
                let text = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
                self.pos += 1;
                Ok(Py::Str(text))
            }
            Some(c) if c.is_ascii_digit() || c == b'-' || c == b'+' => {
                let start = self.pos;
                self.pos += 1;
                while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
                    self.pos += 1;
                }
                let digits =
                    std::str::from_utf8(&self.s[start..self.pos]).map_err(|e| e.to_string())?;
                // Python 2 wrote long integers with a trailing `L`.
                if self.s.get(self.pos) == Some(&b'L') {
                    self.pos += 1;
                }
                digits
                    .parse::<i128>()
                    .map(Py::Int)
                    .map_err(|_| format!("bad integer {digits:?}"))
            }
            Some(_) => {
                for (word, value) in [("True", true), ("False", false)] {
                    if self.s[self.pos..].starts_with(word.as_bytes()) {
                        self.pos += word.len();
                        return Ok(Py::Bool(value));
                    }
                }
                Err(format!("unexpected character at byte {}", self.pos))
            }
            None => Err("unexpected end".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_numpy_writes() {
        let h = parse_header("{'descr': '|i1', 'fortran_order': False, 'shape': (2, 3), }      ")
            .unwrap();
        assert_eq!(
            h,
            Header {
                descr: "|i1".into(),
                fortran_order: false,
                shape: vec![2, 3]
            }
        );
        let h = parse_header("{'descr': '<i4', 'fortran_order': True, 'shape': (5,), }").unwrap();
        assert_eq!(
            h,
            Header {
                descr: "<i4".into(),
                fortran_order: true,
                shape: vec![5]
            }
        );
        let h = parse_header("{\"descr\":\"<i4\",\"fortran_order\":False,\"shape\":()}").unwrap();
        assert_eq!(h.shape, Vec::<usize>::new());
    }

    #[test]
    fn refuses_odd_headers() {
        assert_eq!(
            parse_header("{'descr': '<i4', 'fortran_order': False, 'shape': (-1,), }").unwrap_err(),
            "dimension -1 is not a valid size"
        );
        assert_eq!(
            parse_header("{'descr': '<i4', 'shape': (1,), }").unwrap_err(),
            "missing key 'fortran_order'"
        );
        assert_eq!(
            parse_header("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), 'x': 1}")
                .unwrap_err(),
            "unknown key \"x\""
        );
        assert_eq!(
            parse_header(&"(".repeat(100)).unwrap_err(),
            "nested too deeply"
        );
        assert_eq!(
            parse_header("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,)}")
                .unwrap_err(),
            "'descr' is not a simple type string (structured dtypes are not supported)"
        );
    }
}
