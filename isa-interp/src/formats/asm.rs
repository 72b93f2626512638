//! Our assembly text: one instruction per line, readable, and an exact round trip with the
//! JSON forms (`parse(&print(p)) == Ok(p)` for every valid program).
//!
//! # Grammar
//!
//! ```text
//! program     := line*
//! line        := ws [directive | section | inst] ws [comment] newline
//! comment     := (';' | '#') any-text
//! section     := 'core' N ':'                      -- the following instructions are core N's
//! directive   := '.cores' N                         -- core count (default: last section + 1)
//!              | '.groups' ('export' | 'array_count' | 'map')
//!              | '.map' N ':' [U (',' U)*]          -- arrays per group of core N (with `.groups map`)
//!              | '.arch' akey '=' aval (',' akey '=' aval)*
//! akey        := arrays_per_core | array_rows | array_cols | local_memory_bytes | frac_bits
//!              | cell_precision | adc_count | mesh  -- mesh's value is ROWSxCOLS, e.g. 12x12
//! inst        := mnemonic [operand (',' operand)*]
//! operand     := reg | event | key '=' value
//! reg         := 'r' N                              -- general register 0..=31
//! event       := 'e' N                              -- event register 0..=31
//! value       := int | int 'f' | float              -- 'f' / a float: lldi's float-origin immediate
//!              | int '@' int                        -- off=VALUE@SELECT, e.g. off=4@0b011
//! int         := ['-'] (decimal | '0x' hex | '0b' binary)
//! ```
//!
//! Registers are positional, in the order of the instruction table (`inst::for_each_inst!`);
//! everything else is `key=value`, in any order, each key at most once. Each operand kind has
//! one assembly spelling (the table in `formats::operand`), e.g.
//!
//! ```text
//! sld r1, r2, off=4
//! vvadd r3, r1, r2, len=16, off=4@0b011
//! mvmul r0, r1, mbiw=8, relu=0, group=2
//! lldi r0, imm=0f, size=72
//! send r1, core=3, size=64
//! wait e3, value=2
//! ```
//!
//! An omitted `off` is zero; `off=V` alone has select 0. The printer omits zero offsets, writes
//! selects as three binary digits (`off=4@0b011`: bit 0 applies to `rd`, bit 1 to `rs1`, bit 2 to
//! `rs2`), `lldi`'s immediate as its byte 0..=255 with an `f` suffix when the file gave it as a
//! float, and other immediates as signed decimals. Value ranges are those of the JSON reader
//! (see [`super`]); the same decoder validates both.

use std::fmt::{self, Write as _};

use crate::inst::{
    for_each_inst, BinVecOp, Inst, MemOp, Offset, Opcode, Reg, ScalarImmOp, ScalarOp, UnVecOp,
    Width,
};
use crate::program::{ArchHints, GroupSpec, Program};

use super::config::MAX_CORES;
use super::decode::{decode, RawInst, RawOp, Val};
use super::operand::{operands, Field, Kind, Operand};
use super::problem::FieldProblem;

pub use super::error::{AsmError, AsmErrorKind};

macro_rules! print_ops {
    ($( $op:ident $mn:literal [$($alias:literal),*] $cat:ident $(($rank:literal))? $variant:ident
        [$($sub:ident : $subv:path)?] { $($field:ident : $kind:ident ($($key:ident)?)),* } ;)*) => {
        /// The mnemonic, then each operand in the table's order, spelled as its kind says.
        impl fmt::Display for Inst {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.opcode().mnemonic())?;
                let mut p = Printer { f, first: true };
                match *self {
                    $(Inst::$variant { $($sub: $subv,)? $($field,)* } => {
                        $(p.$kind($(Field::$key,)? $field)?;)*
                    })*
                }
                Ok(())
            }
        }
    };
}
for_each_inst!(print_ops);

/// One printer per operand kind, named after it.
struct Printer<'a, 'b> {
    f: &'a mut fmt::Formatter<'b>,
    first: bool,
}

impl<'b> Printer<'_, 'b> {
    /// Start an operand: a space after the mnemonic, a comma between operands.
    fn next(&mut self) -> &mut fmt::Formatter<'b> {
        let sep = if self.first { " " } else { ", " };
        self.first = false;
        let _ = self.f.write_str(sep);
        self.f
    }
    fn reg(&mut self, _: Field, v: Reg) -> fmt::Result {
        write!(self.next(), "{v}")
    }
    fn event(&mut self, _: Field, v: Reg) -> fmt::Result {
        write!(self.next(), "e{}", v.index())
    }
    fn send_source(&mut self, v: Reg) -> fmt::Result {
        write!(self.next(), "{v}")
    }
    fn keyed(&mut self, key: Field, v: impl fmt::Display) -> fmt::Result {
        let name = if key == Field::WaitValue {
            "value"
        } else {
            key.name()
        };
        write!(self.next(), "{name}={v}")
    }
    fn imm32(&mut self, key: Field, v: i32) -> fmt::Result {
        self.keyed(key, v)
    }
    fn width(&mut self, key: Field, v: Width) -> fmt::Result {
        self.keyed(key, v.bits())
    }
    fn u32(&mut self, key: Field, v: u32) -> fmt::Result {
        self.keyed(key, v)
    }
    fn i32(&mut self, key: Field, v: i32) -> fmt::Result {
        self.keyed(key, v)
    }
    fn relu(&mut self, v: bool) -> fmt::Result {
        write!(self.next(), "relu={}", v as u8)
    }
    fn lldi_byte(&mut self, v: u8) -> fmt::Result {
        write!(self.next(), "imm={v}")
    }
    /// A suffix of the byte immediate just printed.
    fn lldi_float(&mut self, v: bool) -> fmt::Result {
        if v {
            self.f.write_str("f")?;
        }
        Ok(())
    }
    fn bytes(&mut self, _: Field, v: u32) -> fmt::Result {
        write!(self.next(), "size={v}")
    }
    /// Left out when zero; the select bits as three binary digits.
    fn offset(&mut self, v: Offset) -> fmt::Result {
        if v.select != 0 || v.value != 0 {
            write!(self.next(), "off={}@0b{:03b}", v.value, v.select)?;
        }
        Ok(())
    }
    /// Left out when zero.
    fn offset_value(&mut self, v: i32) -> fmt::Result {
        if v != 0 {
            write!(self.next(), "off={v}")?;
        }
        Ok(())
    }
    fn top_offset_value(&mut self, v: i32) -> fmt::Result {
        self.offset_value(v)
    }
}

/// Print a whole program: a header with the config, then one `core N:` section per core
/// (idle cores included, so the text shows the whole chip).
pub fn print(program: &Program) -> String {
    let total: usize = program.cores.iter().map(Vec::len).sum();
    let mut out = String::with_capacity(64 + total * 32);
    out.push_str("; pimdiff assembly (syntax: isa-interp/src/formats/asm.rs)\n");
    let _ = writeln!(out, ".cores {}", program.cores.len());
    match &program.groups {
        GroupSpec::ExportOnly => out.push_str(".groups export\n"),
        GroupSpec::ArrayCount => out.push_str(".groups array_count\n"),
        GroupSpec::ArrayGroupMap(map) => {
            out.push_str(".groups map\n");
            for (core, list) in map.iter().enumerate().take(program.cores.len()) {
                let _ = write!(out, ".map {core}:");
                for (i, n) in list.iter().enumerate() {
                    let _ = write!(out, "{} {n}", if i == 0 { "" } else { "," });
                }
                out.push('\n');
            }
        }
    }
    let arch = arch_line(&program.arch);
    if !arch.is_empty() {
        let _ = writeln!(out, ".arch {arch}");
    }
    for (core, insts) in program.cores.iter().enumerate() {
        let _ = writeln!(out, "\ncore {core}:");
        for inst in insts {
            let _ = writeln!(out, "    {inst}");
        }
    }
    out
}

fn arch_line(h: &ArchHints) -> String {
    let mut parts = Vec::new();
    for (key, v) in [
        ("arrays_per_core", h.arrays_per_core),
        ("array_rows", h.array_rows),
        ("array_cols", h.array_cols),
        ("local_memory_bytes", h.local_memory_bytes),
        ("frac_bits", h.frac_bits),
        ("cell_precision", h.cell_precision),
        ("adc_count", h.adc_count),
    ] {
        if let Some(v) = v {
            parts.push(format!("{key}={v}"));
        }
    }
    if let Some([r, c]) = h.mesh {
        parts.push(format!("mesh={r}x{c}"));
    }
    parts.join(", ")
}

/// Parse a whole program.
pub fn parse(text: &str) -> Result<Program, AsmError> {
    Parser::default().run(text)
}

/// Parse one instruction (no section, no comment), e.g. `vvadd r3, r1, r2, len=16`.
/// Errors are reported at line 1.
pub fn parse_inst(text: &str) -> Result<Inst, AsmError> {
    let mut raw = RawInst::default();
    parse_inst_line(text, 1, 0, &mut raw)
}

#[derive(Default)]
struct Parser {
    cores: Option<(u32, usize)>,
    groups: Option<GroupSpec>,
    map: Vec<(usize, usize, u32, Vec<u32>)>,
    arch: ArchHints,
    arch_seen: Vec<&'static str>,
    sections: Vec<Option<Vec<Inst>>>,
    section_lines: Vec<(u32, usize)>,
}

fn err(line: usize, column: usize, kind: AsmErrorKind) -> AsmError {
    AsmError { line, column, kind }
}

fn syntax(line: usize, column: usize, msg: impl Into<String>) -> AsmError {
    err(line, column, AsmErrorKind::Syntax(msg.into()))
}

impl Parser {
    fn run(mut self, text: &str) -> Result<Program, AsmError> {
        let mut current: Option<usize> = None;
        let mut raw = RawInst::default();
        for (i, full) in text.lines().enumerate() {
            let line = i + 1;
            let body = match full.find([';', '#']) {
                Some(c) => &full[..c],
                None => full,
            };
            let start = body.len() - body.trim_start().len();
            let body = body.trim();
            if body.is_empty() {
                continue;
            }
            let col = start + 1;
            if let Some(rest) = body.strip_prefix('.') {
                self.directive(rest, line, col)?;
            } else if let Some(rest) = section_header(body) {
                let core = parse_u32_token(rest.trim(), line, col + 4)?;
                if core >= MAX_CORES {
                    return Err(syntax(
                        line,
                        col,
                        format!("core {core}: at most {MAX_CORES} cores"),
                    ));
                }
                let idx = core as usize;
                if self.sections.len() <= idx {
                    self.sections.resize(idx + 1, None);
                }
                if self.sections[idx].is_some() {
                    return Err(err(line, col, AsmErrorKind::DuplicateCore(core)));
                }
                self.sections[idx] = Some(Vec::new());
                self.section_lines.push((core, line));
                current = Some(idx);
            } else {
                let Some(idx) = current else {
                    return Err(err(line, col, AsmErrorKind::OutsideSection));
                };
                let inst = parse_inst_line(body, line, start, &mut raw)?;
                if let Some(v) = self.sections[idx].as_mut() {
                    v.push(inst);
                }
            }
        }
        self.finish()
    }

    fn directive(&mut self, rest: &str, line: usize, col: usize) -> Result<(), AsmError> {
        let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let args_col = col
            + 1
            + name.len()
            + (args.len() - args.trim_start().len())
            + usize::from(!args.is_empty());
        let args = args.trim();
        match name {
            "cores" => {
                if self.cores.is_some() {
                    return Err(err(
                        line,
                        col,
                        AsmErrorKind::Directive("`.cores` given twice".into()),
                    ));
                }
                let n = parse_u32_token(args, line, args_col)?;
                if n > MAX_CORES {
                    return Err(syntax(line, args_col, format!("at most {MAX_CORES} cores")));
                }
                self.cores = Some((n, line));
            }
            "groups" => {
                if self.groups.is_some() {
                    return Err(err(
                        line,
                        col,
                        AsmErrorKind::Directive("`.groups` given twice".into()),
                    ));
                }
                self.groups = Some(match args {
                    "export" => GroupSpec::ExportOnly,
                    "array_count" => GroupSpec::ArrayCount,
                    "map" => GroupSpec::ArrayGroupMap(Vec::new()),
                    _ => {
                        return Err(syntax(
                            line,
                            args_col,
                            "expected `export`, `array_count` or `map`",
                        ))
                    }
                });
            }
            "map" => {
                let Some((core, list)) = args.split_once(':') else {
                    return Err(syntax(line, args_col, "expected `.map N: a, b, ...`"));
                };
                let core = parse_u32_token(core.trim(), line, args_col)?;
                let list_col = args_col + args.find(':').unwrap_or(0) + 1;
                let mut sizes = Vec::new();
                if !list.trim().is_empty() {
                    let mut offset = 0;
                    for item in list.split(',') {
                        let lead = item.len() - item.trim_start().len();
                        sizes.push(parse_u32_token(
                            item.trim(),
                            line,
                            list_col + offset + lead,
                        )?);
                        offset += item.len() + 1;
                    }
                }
                if self.map.iter().any(|m| m.2 == core) {
                    return Err(err(
                        line,
                        args_col,
                        AsmErrorKind::Directive(format!("`.map {core}` given twice")),
                    ));
                }
                self.map.push((line, args_col, core, sizes));
            }
            "arch" => {
                let mut offset = 0;
                for item in args.split(',') {
                    let icol = args_col + offset + (item.len() - item.trim_start().len());
                    offset += item.len() + 1;
                    self.arch_item(item.trim(), line, icol)?;
                }
            }
            _ => return Err(syntax(line, col, format!("unknown directive `.{name}`"))),
        }
        Ok(())
    }

    fn arch_item(&mut self, item: &str, line: usize, col: usize) -> Result<(), AsmError> {
        let Some((key, value)) = item.split_once('=') else {
            return Err(syntax(line, col, "expected `key=value`"));
        };
        let (key, value) = (key.trim(), value.trim());
        let vcol = col + item.find('=').unwrap_or(0) + 1;
        let h = &mut self.arch;
        let (name, slot): (&'static str, Option<&mut Option<u32>>) = match key {
            "arrays_per_core" => ("arrays_per_core", Some(&mut h.arrays_per_core)),
            "array_rows" => ("array_rows", Some(&mut h.array_rows)),
            "array_cols" => ("array_cols", Some(&mut h.array_cols)),
            "local_memory_bytes" => ("local_memory_bytes", Some(&mut h.local_memory_bytes)),
            "frac_bits" => ("frac_bits", Some(&mut h.frac_bits)),
            "cell_precision" => ("cell_precision", Some(&mut h.cell_precision)),
            "adc_count" => ("adc_count", Some(&mut h.adc_count)),
            "mesh" => ("mesh", None),
            _ => return Err(syntax(line, col, format!("unknown `.arch` key `{key}`"))),
        };
        if self.arch_seen.contains(&name) {
            return Err(err(line, col, AsmErrorKind::DuplicateKey(name.to_string())));
        }
        self.arch_seen.push(name);
        match slot {
            Some(slot) => *slot = Some(parse_u32_token(value.trim(), line, vcol)?),
            None => {
                let Some((r, c)) = value.split_once('x') else {
                    return Err(syntax(line, vcol, "expected `mesh=ROWSxCOLS`"));
                };
                let r = parse_u32_token(r.trim(), line, vcol)?;
                let c = parse_u32_token(c.trim(), line, vcol)?;
                h.mesh = Some([r, c]);
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<Program, AsmError> {
        let count = match self.cores {
            Some((n, _)) => {
                if let Some(&(core, line)) = self.section_lines.iter().find(|(c, _)| *c >= n) {
                    return Err(err(
                        line,
                        1,
                        AsmErrorKind::CoreBeyondCount { core, cores: n },
                    ));
                }
                n as usize
            }
            None => self.sections.len(),
        };
        let mut cores: Vec<Vec<Inst>> = self
            .sections
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect();
        cores.resize_with(count, Vec::new);
        let groups = match self.groups {
            Some(GroupSpec::ArrayGroupMap(_)) => {
                let mut map = vec![Vec::new(); count];
                for (line, col, core, sizes) in self.map {
                    if core as usize >= count {
                        return Err(err(
                            line,
                            col,
                            AsmErrorKind::CoreBeyondCount {
                                core,
                                cores: count as u32,
                            },
                        ));
                    }
                    map[core as usize] = sizes;
                }
                GroupSpec::ArrayGroupMap(map)
            }
            other => {
                if let Some(&(line, col, ..)) = self.map.first() {
                    return Err(err(
                        line,
                        col,
                        AsmErrorKind::Directive("`.map` needs `.groups map`".into()),
                    ));
                }
                other.unwrap_or_default()
            }
        };
        Ok(Program {
            cores,
            groups,
            arch: self.arch,
        })
    }
}

/// `Some(rest)` when `body` is `core N:` (rest is `N`).
fn section_header(body: &str) -> Option<&str> {
    let rest = body.strip_prefix("core")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    rest.strip_suffix(':')
}

/// Parse an integer literal: `[-](decimal | 0x hex | 0b binary)`.
fn parse_int(token: &str) -> Option<i64> {
    let (neg, digits) = match token.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, token),
    };
    let magnitude = if let Some(h) = digits.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()?
    } else if let Some(b) = digits.strip_prefix("0b") {
        i64::from_str_radix(b, 2).ok()?
    } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse::<i64>().ok()?
    } else {
        return None;
    };
    Some(if neg { -magnitude } else { magnitude })
}

fn parse_u32_token(token: &str, line: usize, col: usize) -> Result<u32, AsmError> {
    parse_int(token)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| {
            syntax(
                line,
                col,
                format!("expected a non-negative integer, found `{token}`"),
            )
        })
}

/// Parse one instruction whose text starts at byte `start` of line `line`: its operands go
/// into `raw` under their JSON field names, then through the decoder the JSON reader uses.
fn parse_inst_line(
    body: &str,
    line: usize,
    start: usize,
    raw: &mut RawInst,
) -> Result<Inst, AsmError> {
    raw.clear();
    let (mnemonic, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let Some(op) = Opcode::from_mnemonic(mnemonic) else {
        return Err(err(
            line,
            start + 1,
            AsmErrorKind::UnknownOp(mnemonic.to_string()),
        ));
    };
    raw.op = Some(RawOp::Known(op));
    let mut p = OperandParser::new(op, line, start + 1, raw);
    let mut offset = start + mnemonic.len() + 1 + (rest.len() - rest.trim_start().len());
    let rest = rest.trim_start();
    if !rest.trim().is_empty() {
        for item in rest.split(',') {
            let col = offset + (item.len() - item.trim_start().len()) + 1;
            offset += item.len() + 1;
            p.operand(item.trim(), col)?;
        }
    }
    p.finish()
}

/// The state of one instruction's operands while they are parsed.
struct OperandParser<'r> {
    op: Opcode,
    operands: &'static [Operand],
    line: usize,
    /// Column of the mnemonic.
    start: usize,
    raw: &'r mut RawInst,
    /// Positional operands seen so far, and the column of the first.
    registers: usize,
    first_register_col: Option<usize>,
    /// Bit `k` set: the `k`-th operand's key was given.
    seen: u32,
    /// Where each field's text starts (and the name the user wrote), to place decoder errors.
    columns: Vec<(Field, &'static str, usize)>,
}

impl<'r> OperandParser<'r> {
    fn new(op: Opcode, line: usize, start: usize, raw: &'r mut RawInst) -> Self {
        OperandParser {
            op,
            operands: operands(op),
            line,
            start,
            raw,
            registers: 0,
            first_register_col: None,
            seen: 0,
            columns: Vec::new(),
        }
    }

    fn operand(&mut self, item: &str, col: usize) -> Result<(), AsmError> {
        if item.is_empty() {
            return Err(syntax(self.line, col, "empty operand"));
        }
        match item.split_once('=') {
            Some((key, value)) => {
                let vcol = col + (item.len() - item[key.len() + 1..].trim_start().len());
                self.keyed(key.trim(), value.trim(), col, vcol)
            }
            None => self.register(item, col),
        }
    }

    /// A positional operand: the next register of the op's list.
    fn register(&mut self, item: &str, col: usize) -> Result<(), AsmError> {
        self.first_register_col.get_or_insert(col);
        let n = self.registers;
        self.registers += 1;
        let Some(operand) = self
            .operands
            .iter()
            .filter(|o| o.register_prefix().is_some())
            .nth(n)
        else {
            return Ok(()); // Too many: counted, and reported by `finish`.
        };
        let prefix = operand.register_prefix().unwrap_or('r');
        let Some(v) = item.strip_prefix(prefix).and_then(parse_int) else {
            let what = if prefix == 'e' {
                "an event register `eN`"
            } else {
                "a register `rN`"
            };
            let msg = format!("expected {what}, found `{item}`");
            return Err(syntax(self.line, col, msg));
        };
        self.raw.set(operand.field, Val::Int(v));
        self.columns
            .push((operand.field, operand.field.name(), col));
        Ok(())
    }

    /// A `key=value` operand.
    fn keyed(&mut self, key: &str, value: &str, col: usize, vcol: usize) -> Result<(), AsmError> {
        let (line, op) = (self.line, self.op);
        let found = self
            .operands
            .iter()
            .enumerate()
            .find(|(_, o)| o.asm_key() == Some(key));
        let Some((k, &operand)) = found else {
            let kind = AsmErrorKind::UnknownKey {
                op,
                key: key.to_string(),
            };
            return Err(err(line, col, kind));
        };
        if self.seen & (1 << k) != 0 {
            return Err(err(line, col, AsmErrorKind::DuplicateKey(key.to_string())));
        }
        self.seen |= 1 << k;
        let name = operand.asm_key().unwrap_or("?");
        match operand.kind {
            Kind::Offset | Kind::OffsetValue | Kind::TopOffsetValue => {
                let (v, s) = match value.split_once('@') {
                    Some((v, s)) if operand.kind == Kind::Offset => (v, Some(s)),
                    Some(_) => {
                        let msg = format!("{op}'s offset has no select bits");
                        return Err(syntax(line, vcol, msg));
                    }
                    None => (value, None),
                };
                self.raw
                    .set(Field::NestedValue, Val::Int(int_token(v, line, vcol)?));
                if let Some(s) = s {
                    self.raw
                        .set(Field::NestedSelect, Val::Int(int_token(s, line, vcol)?));
                }
                self.columns.push((Field::NestedValue, name, vcol));
                self.columns.push((Field::NestedSelect, name, vcol));
            }
            kind => {
                let v = if kind == Kind::LldiByte {
                    lldi_imm_token(value)
                } else {
                    parse_int(value).map(Val::Int)
                };
                let Some(v) = v else {
                    let msg = format!("expected a number, found `{value}`");
                    return Err(syntax(line, vcol, msg));
                };
                // A byte count is stored as `size`, which the decoder accepts for every op.
                let field = if kind == Kind::Bytes {
                    Field::Size
                } else {
                    operand.field
                };
                self.raw.set(field, v);
                self.columns.push((field, name, vcol));
            }
        }
        Ok(())
    }

    /// Check the counts and required keys, then decode, placing a decoder error at the text
    /// of the field at fault.
    fn finish(self) -> Result<Inst, AsmError> {
        let (line, op) = (self.line, self.op);
        let expected = self
            .operands
            .iter()
            .filter(|o| o.register_prefix().is_some())
            .count();
        if self.registers != expected {
            let col = self.first_register_col.unwrap_or(self.start);
            let found = self.registers;
            return Err(err(
                line,
                col,
                AsmErrorKind::RegisterCount {
                    op,
                    expected,
                    found,
                },
            ));
        }
        let missing = self
            .operands
            .iter()
            .enumerate()
            .find(|(k, o)| o.asm_key().is_some() && !o.optional() && self.seen & (1 << k) == 0);
        if let Some((_, o)) = missing {
            let field = o.asm_key().unwrap_or("?");
            let problem = FieldProblem::Missing;
            return Err(err(
                line,
                self.start,
                AsmErrorKind::Field { op, field, problem },
            ));
        }
        decode(self.raw).map_err(|(_, field, problem)| {
            let found = self.columns.iter().find(|(f, ..)| Some(f.name()) == field);
            let (field, col) = match found {
                Some(&(_, name, col)) => (name, col),
                None => (field.unwrap_or("?"), self.start),
            };
            err(line, col, AsmErrorKind::Field { op, field, problem })
        })
    }
}

fn int_token(token: &str, line: usize, col: usize) -> Result<i64, AsmError> {
    parse_int(token)
        .ok_or_else(|| syntax(line, col, format!("expected an integer, found `{token}`")))
}

/// `lldi`'s immediate: an integer, `Nf` (float origin), or a decimal float.
fn lldi_imm_token(token: &str) -> Option<Val> {
    if let Some(n) = token.strip_suffix('f') {
        return parse_int(n).map(|v| Val::Float(v as f64));
    }
    if let Some(v) = parse_int(token) {
        return Some(Val::Int(v));
    }
    let ok = token.bytes().all(|b| {
        b.is_ascii_digit() || b == b'.' || b == b'-' || b == b'e' || b == b'E' || b == b'+'
    });
    if ok {
        token
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .map(Val::Float)
    } else {
        None
    }
}
