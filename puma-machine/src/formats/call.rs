//! One line of a program file: a Python call with literal arguments, as the PUMA compiler
//! prints it (`load(d1=513, r1=513, load_width=16, vec=1)`, `alu('add', d1=641, r1=641,
//! r2=657, vec=16)`, `mvm(['11'])`) and as the simulator's generator script evaluates it
//! (it prefixes `i_` and runs the line under Python 2).
//!
//! The grammar accepted is the part of Python's that such a line can use: a name, then
//! arguments (positional before keyword, an optional trailing comma), each an integer, a float,
//! a quoted string or a list of those. Anything else is a [`SyntaxProblem`] at a column:
//! an integer with a leading zero among them (Python 2 reads `010` as octal 8).

use super::error::SyntaxProblem;

/// A parsed call: the function name and its arguments in order.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    pub name: &'a str,
    pub args: Vec<Arg<'a>>,
}

/// One argument: `key=value` or a positional `value`.
#[derive(Debug)]
pub(crate) struct Arg<'a> {
    pub key: Option<&'a str>,
    pub value: Value,
}

/// A literal argument value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Int(i64),
    Real(f64),
    Str(String),
    List(Vec<Value>),
}

impl Value {
    /// What the value is, for messages: "an integer", "a string", ...
    pub fn describe(&self) -> &'static str {
        match self {
            Value::Int(_) => "an integer",
            Value::Real(_) => "a float",
            Value::Str(_) => "a string",
            Value::List(_) => "a list",
        }
    }
}

/// A syntax error and the 1-based column (in characters) where it was found.
pub(crate) type SyntaxError = (u32, SyntaxProblem);

/// Parses one line (without its newline).
pub(crate) fn parse_call(line: &str) -> Result<Call<'_>, SyntaxError> {
    let mut p = Parser { s: line, pos: 0 };
    p.blanks();
    let name = p
        .ident()
        .ok_or_else(|| p.error(SyntaxProblem::ExpectedName))?;
    p.blanks();
    p.expect(b'(', "`(`")?;
    let mut args = Vec::new();
    let mut seen_keyword = false;
    loop {
        p.blanks();
        if p.eat(b')') {
            break;
        }
        let start = p.pos;
        let key = p.keyword();
        if key.is_some() {
            seen_keyword = true;
        } else if seen_keyword {
            p.pos = start;
            return Err(p.error(SyntaxProblem::PositionalAfterKeyword));
        }
        let value = p.value(0)?;
        args.push(Arg { key, value });
        p.blanks();
        if p.eat(b')') {
            break;
        }
        p.expect(b',', "`,` or `)`")?;
    }
    p.blanks();
    if p.pos < p.s.len() {
        return Err(p.error(SyntaxProblem::TrailingText));
    }
    Ok(Call { name, args })
}

/// Lists nest at most this deep (the compiler writes one level).
const MAX_DEPTH: u32 = 4;

struct Parser<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn error(&self, problem: SyntaxProblem) -> SyntaxError {
        let col = self.s[..self.pos].chars().count() as u32 + 1;
        (col, problem)
    }

    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, b: u8, what: &'static str) -> Result<(), SyntaxError> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(self.error(SyntaxProblem::Expected(what)))
        }
    }

    fn blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    fn ident(&mut self) -> Option<&'a str> {
        let start = self.pos;
        match self.peek() {
            Some(b) if b.is_ascii_alphabetic() || b == b'_' => self.pos += 1,
            _ => return None,
        }
        while matches!(self.peek(), Some(b) if b.is_ascii_alphanumeric() || b == b'_') {
            self.pos += 1;
        }
        Some(&self.s[start..self.pos])
    }

    /// `name =` (consumed) or nothing (position unchanged).
    fn keyword(&mut self) -> Option<&'a str> {
        let start = self.pos;
        if let Some(name) = self.ident() {
            self.blanks();
            // `==` is a comparison, not a keyword argument.
            if self.eat(b'=') && self.peek() != Some(b'=') {
                self.blanks();
                return Some(name);
            }
        }
        self.pos = start;
        None
    }

    fn value(&mut self, depth: u32) -> Result<Value, SyntaxError> {
        match self.peek() {
            Some(b'\'' | b'"') => self.string(),
            Some(b'[') if depth < MAX_DEPTH => self.list(depth),
            Some(b'[') => Err(self.error(SyntaxProblem::TooDeep)),
            Some(b'-' | b'+' | b'.' | b'0'..=b'9') => self.number(),
            None => Err(self.error(SyntaxProblem::Expected("a value"))),
            Some(_) => Err(self.error(SyntaxProblem::NotALiteral)),
        }
    }

    fn string(&mut self) -> Result<Value, SyntaxError> {
        let quote = self.peek().unwrap_or(b'\'');
        let start = self.pos;
        self.pos += 1;
        let body = self.pos;
        loop {
            match self.peek() {
                None => {
                    self.pos = start;
                    return Err(self.error(SyntaxProblem::UnterminatedString));
                }
                Some(b'\\') => return Err(self.error(SyntaxProblem::Escape)),
                Some(b) if b == quote => break,
                Some(_) => self.pos += 1,
            }
        }
        let text = self.s[body..self.pos].to_string();
        self.pos += 1;
        Ok(Value::Str(text))
    }

    fn list(&mut self, depth: u32) -> Result<Value, SyntaxError> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.blanks();
            if self.eat(b']') {
                return Ok(Value::List(items));
            }
            items.push(self.value(depth + 1)?);
            self.blanks();
            if self.eat(b']') {
                return Ok(Value::List(items));
            }
            self.expect(b',', "`,` or `]`")?;
        }
    }

    fn number(&mut self) -> Result<Value, SyntaxError> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.pos += 1;
            self.blanks();
        }
        let digits = self.pos;
        let mut is_real = false;
        while let Some(b) = self.peek() {
            match b {
                b'0'..=b'9' => {}
                b'.' => is_real = true,
                b'e' | b'E' => {
                    is_real = true;
                    if matches!(self.s.as_bytes().get(self.pos + 1), Some(b'-' | b'+')) {
                        self.pos += 1;
                    }
                }
                b if b.is_ascii_alphanumeric() || b == b'_' => {
                    self.pos = start;
                    return Err(self.error(SyntaxProblem::BadNumber));
                }
                _ => break,
            }
            self.pos += 1;
        }
        let text = &self.s[digits..self.pos];
        let at_start = |p: &Self| (p.s[..start].chars().count() as u32 + 1, ());
        if is_real {
            let v: f64 = text
                .parse()
                .map_err(|_| (at_start(self).0, SyntaxProblem::BadNumber))?;
            return Ok(Value::Real(if negative { -v } else { v }));
        }
        if text.is_empty() {
            return Err((at_start(self).0, SyntaxProblem::BadNumber));
        }
        if text.len() > 1 && text.starts_with('0') {
            return Err((at_start(self).0, SyntaxProblem::LeadingZero));
        }
        // Parse with the sign so that i64::MIN is representable.
        let signed = if negative {
            format!("-{text}")
        } else {
            text.to_string()
        };
        signed
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| (at_start(self).0, SyntaxProblem::IntegerTooLarge))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiler_lines_parse() {
        let c = parse_call("alu('add', d1=641, r1=641, r2=657, vec=16)").unwrap();
        assert_eq!(c.name, "alu");
        assert_eq!(c.args.len(), 5);
        assert_eq!(c.args[0].key, None);
        assert_eq!(c.args[0].value, Value::Str("add".into()));
        assert_eq!(c.args[4].key, Some("vec"));
        assert_eq!(c.args[4].value, Value::Int(16));
        let c = parse_call("mvm(['11'])").unwrap();
        assert_eq!(c.args[0].value, Value::List(vec![Value::Str("11".into())]));
        let c = parse_call("alui('mul', d1=1, r1=2, imm=-1.5e-05, vec=1)").unwrap();
        assert_eq!(c.args[3].value, Value::Real(-1.5e-05));
        assert!(parse_call("hlt()").unwrap().args.is_empty());
        assert!(parse_call("  set ( d1 = 1 , imm = -3, ) ").is_ok());
    }

    #[test]
    fn malformed_lines_name_their_column() {
        let e = |s: &str| parse_call(s).unwrap_err();
        assert_eq!(e("set(d1=010)"), (8, SyntaxProblem::LeadingZero));
        assert_eq!(e("set(d1=1) x"), (11, SyntaxProblem::TrailingText));
        assert_eq!(
            e("set(d1=1, 2)"),
            (11, SyntaxProblem::PositionalAfterKeyword)
        );
        assert_eq!(e("set(d1=x)"), (8, SyntaxProblem::NotALiteral));
        assert_eq!(e("set(d1='ab"), (8, SyntaxProblem::UnterminatedString));
        assert_eq!(e("set(d1=1"), (9, SyntaxProblem::Expected("`,` or `)`")));
        assert_eq!(e("(d1=1)"), (1, SyntaxProblem::ExpectedName));
        assert_eq!(e("set d1=1"), (5, SyntaxProblem::Expected("`(`")));
        assert_eq!(
            e("set(d1=99999999999999999999)"),
            (8, SyntaxProblem::IntegerTooLarge)
        );
        assert_eq!(e("set(d1=0x10)"), (8, SyntaxProblem::BadNumber));
        assert_eq!(e("set(d1='a\\'')"), (10, SyntaxProblem::Escape));
        assert_eq!(e("mvm([[[[['1']]]]])"), (9, SyntaxProblem::TooDeep));
        assert_eq!(e("set(d1=-)"), (8, SyntaxProblem::BadNumber));
        // Columns count characters, not bytes.
        assert_eq!(e("set(d1=\u{e9})"), (8, SyntaxProblem::NotALiteral));
        assert_eq!(
            e("s(d1='\u{e9}\u{e9}') x"),
            (12, SyntaxProblem::TrailingText)
        );
        assert_eq!(e("s\u{e9}t()"), (2, SyntaxProblem::Expected("`(`")));
    }
}
