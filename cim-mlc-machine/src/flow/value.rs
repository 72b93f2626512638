//! One line of a flow as CIM-MLC's templates print it: a name, then operands separated by `-`.
//!
//! The templates (codegen/CoreWiseCodeTem.py, CrossbarCodeTem.py, WordlineCodeTem.py) join
//! Python values with `" - "`, except where they do not: `ActivFuncTmpl` has no space before
//! the destination (`Relu - 512 - 256 -768`), the wordline-level reduction is built without
//! spaces (`Add-[0, 7]-896--224`, codegen/WordlineWise.py:381), and a negative operand follows
//! a separator (`load - 128 - [1, 1] - -96`). So a line is read as a sequence, not split:
//! a value, blanks, one `-`, blanks, the next value (which may itself start with `-`).
//! Operands are Python literals as `str()` prints them: integers, floats, `None`, quoted
//! strings (`'pad-9'`) and lists of these.

use std::fmt;

/// An operand.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    None,
    Str(String),
    List(Vec<Value>),
}

impl Value {
    /// What kind of value this is, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::None => "None",
            Value::Str(_) => "a string",
            Value::List(_) => "a list",
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v:?}"),
            Value::None => f.write_str("None"),
            Value::Str(s) => write!(f, "'{s}'"),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// Why a line could not be read, and where (0-based byte column of the text given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub col: usize,
    pub problem: String,
}

/// Deepest list nesting accepted (CIM-MLC prints at most three levels).
const MAX_DEPTH: usize = 16;

/// A line split into its name and operands.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub name: String,
    pub operands: Vec<Value>,
}

/// The instruction name `text` starts with, if it starts with one.
pub fn name_of(text: &str) -> Option<String> {
    Parser {
        s: text.as_bytes(),
        pos: 0,
    }
    .name()
    .ok()
}

/// Read `text` (one instruction, without its indentation) as a name and its operands.
pub fn parse_line(text: &str) -> Result<Parsed, SyntaxError> {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
    };
    let name = p.name()?;
    let mut operands = Vec::new();
    loop {
        p.blanks();
        if p.at_end() {
            break;
        }
        if p.peek() != Some(b'-') {
            return Err(p.error("expected ` - ` before the next operand"));
        }
        p.pos += 1;
        p.blanks();
        operands.push(p.value(0)?);
    }
    Ok(Parsed { name, operands })
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn error(&self, problem: &str) -> SyntaxError {
        SyntaxError {
            col: self.pos,
            problem: problem.to_string(),
        }
    }

    fn blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    /// The instruction's name: letters, digits, `.`, `_`, and a `-` followed by a letter
    /// (`CIM.read_core-conv`); `CIM.read_wl- [` and `Add-[` end before their `-`.
    fn name(&mut self) -> Result<String, SyntaxError> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            let next_is_letter = self
                .s
                .get(self.pos + 1)
                .is_some_and(|n| n.is_ascii_alphabetic());
            if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || (c == b'-' && next_is_letter)
            {
                self.pos += 1;
            } else {
                break;
            }
        }
        if self.pos == start || !self.s[start].is_ascii_alphabetic() {
            self.pos = start;
            return Err(self.error("expected an instruction name"));
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.pos]).into_owned())
    }

    fn value(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        match self.peek() {
            None => Err(self.error("expected an operand, found the end of the line")),
            Some(b'[') => self.list(depth),
            Some(b'\'') | Some(b'"') => self.string(),
            Some(b'N') => self.word("None", Value::None),
            Some(c) if c == b'-' || c.is_ascii_digit() => self.number(),
            Some(_) => Err(self.error("expected an operand")),
        }
    }

    fn word(&mut self, word: &str, value: Value) -> Result<Value, SyntaxError> {
        if self.s[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error("expected an operand"))
        }
    }

    fn list(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        if depth >= MAX_DEPTH {
            return Err(self.error("lists nested too deeply"));
        }
        self.pos += 1; // '['
        let mut items = Vec::new();
        self.blanks();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::List(items));
        }
        loop {
            self.blanks();
            items.push(self.value(depth + 1)?);
            self.blanks();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::List(items));
                }
                _ => return Err(self.error("expected `,` or `]` in a list")),
            }
        }
    }

    fn string(&mut self) -> Result<Value, SyntaxError> {
        let quote = self.s[self.pos];
        let start = self.pos + 1;
        let Some(len) = self.s[start..].iter().position(|&c| c == quote) else {
            return Err(self.error("a string without its closing quote"));
        };
        self.pos = start + len + 1;
        Ok(Value::Str(
            String::from_utf8_lossy(&self.s[start..start + len]).into_owned(),
        ))
    }

    fn number(&mut self) -> Result<Value, SyntaxError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let digits = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        if self.pos == digits {
            self.pos = start;
            return Err(self.error("expected a number"));
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            float = true;
            self.pos += 1;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            float = true;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("");
        let parsed = if float {
            text.parse::<f64>().ok().map(Value::Float)
        } else {
            text.parse::<i64>().ok().map(Value::Int)
        };
        parsed.ok_or_else(|| SyntaxError {
            col: start,
            problem: format!("`{text}` is not a number this machine can hold"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Value::*;

    fn ops(text: &str) -> (String, Vec<Value>) {
        let p = parse_line(text).unwrap();
        (p.name, p.operands)
    }

    #[test]
    fn every_separator_form_of_the_templates() {
        assert_eq!(
            ops("Relu - 512 - 256 -768"),
            ("Relu".into(), vec![Int(512), Int(256), Int(768)])
        );
        assert_eq!(
            ops("Add-[0, 7]-896--224"),
            (
                "Add".into(),
                vec![List(vec![Int(0), Int(7)]), Int(896), Int(-224)]
            )
        );
        assert_eq!(
            ops("CIM.read_wl- [0, 16] - [1, 1]").1,
            vec![List(vec![Int(0), Int(16)]), List(vec![Int(1), Int(1)])]
        );
        assert_eq!(ops("CIM.read_core-conv - 1").0, "CIM.read_core-conv");
        assert_eq!(ops("load - 128 - [1, 1] - -96").1[2], Int(-96));
        assert_eq!(
            ops("load - [['pad-9'], [0, 9]] - [0, 0] - None").1,
            vec![
                List(vec![
                    List(vec![Str("pad-9".into())]),
                    List(vec![Int(0), Int(9)])
                ]),
                List(vec![Int(0), Int(0)]),
                None
            ]
        );
        assert_eq!(ops("X - 1.5 - []").1, vec![Float(1.5), List(vec![])]);
    }

    #[test]
    fn malformed_lines_name_their_column() {
        let e = parse_line("Mov - 1 - [2, 3").unwrap_err();
        assert_eq!(
            (e.col, e.problem.as_str()),
            (15, "expected `,` or `]` in a list")
        );
        let e = parse_line("Mov 1").unwrap_err();
        assert_eq!(
            (e.col, e.problem.as_str()),
            (4, "expected ` - ` before the next operand")
        );
        let e = parse_line("- 1").unwrap_err();
        assert_eq!(e.col, 0);
        let e = parse_line("Mov - 99999999999999999999").unwrap_err();
        assert_eq!(e.col, 6);
        let e = parse_line("Mov - ").unwrap_err();
        assert_eq!(e.problem, "expected an operand, found the end of the line");
        let deep = format!("X - {}", "[".repeat(100));
        assert_eq!(
            parse_line(&deep).unwrap_err().problem,
            "lists nested too deeply"
        );
    }
}
