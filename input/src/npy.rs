//! The header of a NumPy `.npy` file (`numpy.lib.format`, versions 1.0 to 3.0), parsed
//! before any data is read so that a reader can check the shape against what it expects, or
//! against the bytes the file really has, before it allocates for the data.
//!
//! Why not `ndarray_npy`: version 0.9 keeps its header parser private and allocates whatever
//! the header's shape asks for before reading the data (a 100-byte file can ask for
//! terabytes). Readers here parse the header, check, and then read exactly the data (the
//! oracle) or hand the bounded bytes to `ndarray_npy` (the crossbar export).

use std::io::{self, Read};

/// Size of a `.npy` header (the dictionary) in bytes. NumPy writes about 128.
pub const MAX_HEADER_BYTES: usize = 1 << 16;

/// What the header of a `.npy` file says.
#[derive(Debug, PartialEq, Eq)]
pub struct Header {
    pub descr: String,
    pub fortran_order: bool,
    pub shape: Vec<usize>,
}

impl Header {
    /// The number of elements the shape holds, `None` if it overflows.
    pub fn elements(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
    }
}

/// Why a header could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    #[error("truncated: shorter than the 8-byte preamble")]
    TruncatedPreamble,
    #[error("the magic string \\x93NUMPY is missing")]
    BadMagic,
    #[error("truncated header length")]
    TruncatedLength,
    #[error("format version {0}.{1} is not supported")]
    Version(u8, u8),
    /// The header length field is above [`MAX_HEADER_BYTES`].
    #[error("the header length {0} is above the limit {MAX_HEADER_BYTES}")]
    TooLong(usize),
    #[error("truncated header")]
    TruncatedHeader,
    #[error("the header is not text")]
    NotText,
    /// The dictionary does not parse: the header text and what is wrong.
    #[error("header {0:?}: {1}")]
    Syntax(String, String),
    /// The reader failed (not an early end).
    #[error("{0}")]
    Io(io::Error),
}

/// Reads and parses the header, leaving `reader` at the first data byte.
pub fn read_header<R: Read>(reader: &mut R) -> Result<Header, HeaderError> {
    let mut fixed = [0u8; 8];
    read_exact_or(reader, &mut fixed, HeaderError::TruncatedPreamble)?;
    if &fixed[..6] != b"\x93NUMPY" {
        return Err(HeaderError::BadMagic);
    }
    let header_len = match (fixed[6], fixed[7]) {
        (1, 0) => {
            let mut b = [0u8; 2];
            read_exact_or(reader, &mut b, HeaderError::TruncatedLength)?;
            u16::from_le_bytes(b) as usize
        }
        (2, 0) | (3, 0) => {
            let mut b = [0u8; 4];
            read_exact_or(reader, &mut b, HeaderError::TruncatedLength)?;
            u32::from_le_bytes(b) as usize
        }
        (major, minor) => return Err(HeaderError::Version(major, minor)),
    };
    if header_len > MAX_HEADER_BYTES {
        return Err(HeaderError::TooLong(header_len));
    }
    let mut text = vec![0u8; header_len];
    read_exact_or(reader, &mut text, HeaderError::TruncatedHeader)?;
    let text = std::str::from_utf8(&text).map_err(|_| HeaderError::NotText)?;
    parse_header(text).map_err(|reason| HeaderError::Syntax(text.trim_end().to_string(), reason))
}

fn read_exact_or<R: Read>(
    reader: &mut R,
    buf: &mut [u8],
    truncated: HeaderError,
) -> Result<(), HeaderError> {
    reader.read_exact(buf).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => truncated,
        _ => HeaderError::Io(e),
    })
}

/// Parses the header dictionary, e.g. `{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }`.
/// Exactly the three keys NumPy writes are required, as `numpy.load` does.
pub fn parse_header(text: &str) -> Result<Header, String> {
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
