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
//! Registers are positional, in the order of isa.md's operand lists; everything else is
//! `key=value`, in any order, each key at most once:
//!
//! | op | form |
//! |---|---|
//! | `nop` | `nop` |
//! | `sldi` | `sldi rD, imm=I` |
//! | `sld` | `sld rD, rS1[, off=V]` |
//! | `sadd` `ssub` `smul` | `sadd rD, rS1, rS2` |
//! | `saddi` `smuli` | `saddi rD, rS1, imm=I` |
//! | `setbw` | `setbw ibiw=W, obiw=W` |
//! | `mvmul` | `mvmul rD, rS1, mbiw=W, relu=0\|1, group=G` |
//! | `vvadd` … `vrsl` (two sources) | `vvadd rD, rS1, rS2, len=N[, off=V@S]` |
//! | `vrelu` `vtanh` `vsigm` | `vrelu rD, rS1, len=N[, off=V@S]` |
//! | `vavg` | `vavg rD, rS1, rS2, len=N[, off=V]` |
//! | `vmv` | `vmv rD, rS1, rS2, len=N` |
//! | `ld` `st` `lmv` | `ld rD, rS1, size=N[, off=V@S]` |
//! | `lldi` | `lldi rD, imm=B[f], size=N[, off=V]` |
//! | `send` | `send rS1, core=C, size=N[, off=V]` |
//! | `recv` | `recv rD, core=C, size=N[, off=V]` |
//! | `wait` | `wait eE, value=V` |
//! | `sync` | `sync eE, core=C` |
//!
//! An omitted `off` is zero; `off=V` alone has select 0. The printer omits zero offsets, writes
//! selects as three binary digits (`off=4@0b011`: bit 0 applies to `rd`, bit 1 to `rs1`, bit 2 to
//! `rs2`), `lldi`'s immediate as its byte 0..=255 with an `f` suffix when the file gave it as a
//! float, and other immediates as signed decimals. Value ranges are those of the JSON reader
//! (see [`super`]); the same decoder validates both.

use std::fmt::{self, Write as _};

use crate::inst::{Inst, Opcode};
use crate::program::{ArchHints, GroupSpec, Program};

use super::config::MAX_CORES;
use super::decode::{decode, Field, RawInst, RawOp, Val};
use super::error::FieldProblem;

/// A parse error in assembly text, at a 1-based line and column.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}, column {column}: {kind}")]
pub struct AsmError {
    pub line: usize,
    pub column: usize,
    pub kind: AsmErrorKind,
}

/// What is wrong at that position.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AsmErrorKind {
    /// Malformed text; the string says what was expected.
    #[error("{0}")]
    Syntax(String),
    #[error("unknown op \"{0}\"")]
    UnknownOp(String),
    /// A `key=` the op does not take.
    #[error("{op} has no operand \"{key}\"")]
    UnknownKey { op: Opcode, key: String },
    #[error("operand \"{0}\" given twice")]
    DuplicateKey(String),
    #[error("{op} takes {expected} register operand(s), found {found}")]
    RegisterCount {
        op: Opcode,
        expected: usize,
        found: usize,
    },
    /// An operand's value is invalid (the same kinds the JSON reader reports).
    #[error("{op}: field \"{field}\": {problem}")]
    Field {
        op: Opcode,
        field: &'static str,
        problem: FieldProblem,
    },
    #[error("instruction outside a `core N:` section")]
    OutsideSection,
    #[error("core {0} has two sections")]
    DuplicateCore(u32),
    #[error("core {core} is beyond the {cores} cores of `.cores`")]
    CoreBeyondCount { core: u32, cores: u32 },
    /// A directive given twice, or a `.map` without `.groups map`.
    #[error("{0}")]
    Directive(String),
}

impl fmt::Display for Inst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = self.opcode();
        f.write_str(op.mnemonic())?;
        match *self {
            Inst::Nop => Ok(()),
            Inst::Sldi { rd, imm } => write!(f, " {rd}, imm={imm}"),
            Inst::Sld { rd, rs1, offset } => {
                write!(f, " {rd}, {rs1}")?;
                plain_offset(f, offset)
            }
            Inst::Scalar { rd, rs1, rs2, .. } => write!(f, " {rd}, {rs1}, {rs2}"),
            Inst::ScalarImm { rd, rs1, imm, .. } => write!(f, " {rd}, {rs1}, imm={imm}"),
            Inst::Setbw { ibiw, obiw } => write!(f, " ibiw={}, obiw={}", ibiw.bits(), obiw.bits()),
            Inst::Mvmul {
                rd,
                rs1,
                mbiw,
                relu,
                group,
            } => {
                write!(
                    f,
                    " {rd}, {rs1}, mbiw={}, relu={}, group={group}",
                    mbiw.bits(),
                    relu as u8
                )
            }
            Inst::BinVec {
                rd,
                rs1,
                rs2,
                len,
                offset,
                ..
            } => {
                write!(f, " {rd}, {rs1}, {rs2}, len={len}")?;
                select_offset(f, offset.select, offset.value)
            }
            Inst::UnVec {
                rd,
                rs1,
                len,
                offset,
                ..
            } => {
                write!(f, " {rd}, {rs1}, len={len}")?;
                select_offset(f, offset.select, offset.value)
            }
            Inst::Vavg {
                rd,
                rs1,
                rs2,
                len,
                offset,
            } => {
                write!(f, " {rd}, {rs1}, {rs2}, len={len}")?;
                plain_offset(f, offset)
            }
            Inst::Vmv { rd, rs1, rs2, len } => write!(f, " {rd}, {rs1}, {rs2}, len={len}"),
            Inst::Mem {
                rd,
                rs1,
                size,
                offset,
                ..
            } => {
                write!(f, " {rd}, {rs1}, size={size}")?;
                select_offset(f, offset.select, offset.value)
            }
            Inst::Lldi {
                rd,
                imm,
                size,
                offset,
                from_float,
            } => {
                write!(
                    f,
                    " {rd}, imm={imm}{}, size={size}",
                    if from_float { "f" } else { "" }
                )?;
                plain_offset(f, offset)
            }
            Inst::Send {
                rs1,
                core,
                size,
                offset,
            } => {
                write!(f, " {rs1}, core={core}, size={size}")?;
                plain_offset(f, offset)
            }
            Inst::Recv {
                rd,
                core,
                size,
                offset,
            } => {
                write!(f, " {rd}, core={core}, size={size}")?;
                plain_offset(f, offset)
            }
            Inst::Wait { event, value } => write!(f, " e{}, value={value}", event.index()),
            Inst::Sync { event, core } => write!(f, " e{}, core={core}", event.index()),
        }
    }
}

fn plain_offset(f: &mut fmt::Formatter<'_>, value: i32) -> fmt::Result {
    if value != 0 {
        write!(f, ", off={value}")?;
    }
    Ok(())
}

fn select_offset(f: &mut fmt::Formatter<'_>, select: u8, value: i32) -> fmt::Result {
    if select != 0 || value != 0 {
        write!(f, ", off={value}@0b{select:03b}")?;
    }
    Ok(())
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

/// Register operands of each op, in order; `true` marks an event register (`eN`).
fn positional(op: Opcode) -> &'static [(Field, bool)] {
    use Field::*;
    match op {
        Opcode::Nop | Opcode::Setbw => &[],
        Opcode::Sldi | Opcode::Lldi | Opcode::Recv => &[(Rd, false)],
        Opcode::Send => &[(Rs1, false)],
        Opcode::Wait | Opcode::Sync => &[(EventRegister, true)],
        Opcode::Sld
        | Opcode::Saddi
        | Opcode::Smuli
        | Opcode::Mvmul
        | Opcode::Vrelu
        | Opcode::Vtanh
        | Opcode::Vsigm
        | Opcode::Ld
        | Opcode::St
        | Opcode::Lmv => &[(Rd, false), (Rs1, false)],
        _ => &[(Rd, false), (Rs1, false), (Rs2, false)],
    }
}

/// The `key=` operands each op takes: (key, field, required).
fn keys(op: Opcode) -> &'static [(&'static str, Field, bool)] {
    use Field::*;
    const OFF: (&str, Field, bool) = ("off", NestedValue, false);
    match op {
        Opcode::Nop | Opcode::Sadd | Opcode::Ssub | Opcode::Smul => &[],
        Opcode::Sldi | Opcode::Saddi | Opcode::Smuli => &[("imm", Imm, true)],
        Opcode::Sld => &[OFF],
        Opcode::Setbw => &[("ibiw", Ibiw, true), ("obiw", Obiw, true)],
        Opcode::Mvmul => &[
            ("mbiw", Mbiw, true),
            ("relu", Relu, true),
            ("group", Group, true),
        ],
        Opcode::Vmv => &[("len", Len, true)],
        Opcode::Ld | Opcode::St | Opcode::Lmv => &[("size", Size, true), OFF],
        Opcode::Lldi => &[("imm", Imm, true), ("size", Size, true), OFF],
        Opcode::Send | Opcode::Recv => &[("core", Core, true), ("size", Size, true), OFF],
        Opcode::Wait => &[("value", WaitValue, true)],
        Opcode::Sync => &[("core", Core, true)],
        // Vector ops: vavg, vvadd.., vrelu..
        _ => &[("len", Len, true), OFF],
    }
}

/// Whether `off=` may carry select bits (`off=V@S`) for this op.
fn takes_select(op: Opcode) -> bool {
    !matches!(
        op,
        Opcode::Sld | Opcode::Vavg | Opcode::Lldi | Opcode::Send | Opcode::Recv
    )
}

/// Parse one instruction whose text starts at byte `start` of line `line`.
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
    // Column (1-based) where each field's text starts, to place decoder errors.
    let mut columns: [(Field, &'static str, usize); 4] = [(Field::Rd, "", 0); 4];
    let mut n_columns = 0;
    let mut record = |field: Field, name: &'static str, col: usize| {
        if n_columns < columns.len() {
            columns[n_columns] = (field, name, col);
            n_columns += 1;
        }
    };
    let regs = positional(op);
    let op_keys = keys(op);
    let mut n_regs = 0;
    let mut seen = [false; 4];
    let rest_start = start + mnemonic.len() + 1;
    let mut offset = rest_start + (rest.len() - rest.trim_start().len());
    let rest = rest.trim_start();
    let mut first_reg_col = start + 1;
    if !rest.trim().is_empty() {
        for item in rest.split(',') {
            let lead = item.len() - item.trim_start().len();
            let col = offset + lead + 1;
            offset += item.len() + 1;
            let item = item.trim();
            if item.is_empty() {
                return Err(syntax(line, col, "empty operand"));
            }
            if let Some((key, value)) = item.split_once('=') {
                let (key, value) = (key.trim(), value.trim());
                let vcol = col + (value.as_ptr() as usize - item.as_ptr() as usize);
                let Some(k) = op_keys.iter().position(|(name, ..)| *name == key) else {
                    return Err(err(
                        line,
                        col,
                        AsmErrorKind::UnknownKey {
                            op,
                            key: key.to_string(),
                        },
                    ));
                };
                if seen[k] {
                    return Err(err(line, col, AsmErrorKind::DuplicateKey(key.to_string())));
                }
                seen[k] = true;
                let (name, field, _) = op_keys[k];
                if field == Field::NestedValue {
                    let (v, s) = match value.split_once('@') {
                        Some((v, s)) if takes_select(op) => (v, Some(s)),
                        Some(_) => {
                            return Err(syntax(
                                line,
                                vcol,
                                format!("{op}'s offset has no select bits"),
                            ))
                        }
                        None => (value, None),
                    };
                    raw.set(Field::NestedValue, Val::Int(int_token(v, line, vcol)?));
                    if let Some(s) = s {
                        raw.set(Field::NestedSelect, Val::Int(int_token(s, line, vcol)?));
                    }
                    record(Field::NestedValue, name, vcol);
                    record(Field::NestedSelect, name, vcol);
                } else {
                    let v = if field == Field::Imm && op == Opcode::Lldi {
                        lldi_imm_token(value)
                    } else {
                        parse_int(value).map(Val::Int)
                    };
                    let Some(v) = v else {
                        return Err(syntax(
                            line,
                            vcol,
                            format!("expected a number, found `{value}`"),
                        ));
                    };
                    raw.set(field, v);
                    record(field, name, vcol);
                }
            } else {
                if n_regs == 0 {
                    first_reg_col = col;
                }
                if n_regs < regs.len() {
                    let (field, event) = regs[n_regs];
                    let prefix = if event { 'e' } else { 'r' };
                    let Some(v) = item.strip_prefix(prefix).and_then(parse_int) else {
                        let what = if event {
                            "an event register `eN`"
                        } else {
                            "a register `rN`"
                        };
                        return Err(syntax(
                            line,
                            col,
                            format!("expected {what}, found `{item}`"),
                        ));
                    };
                    raw.set(field, Val::Int(v));
                    record(field, field.name(), col);
                }
                n_regs += 1;
            }
        }
    }
    if n_regs != regs.len() {
        return Err(err(
            line,
            first_reg_col,
            AsmErrorKind::RegisterCount {
                op,
                expected: regs.len(),
                found: n_regs,
            },
        ));
    }
    if let Some(k) = op_keys
        .iter()
        .enumerate()
        .position(|(k, (_, _, required))| *required && !seen[k])
    {
        let (name, ..) = op_keys[k];
        return Err(err(
            line,
            start + 1,
            AsmErrorKind::Field {
                op,
                field: name,
                problem: FieldProblem::Missing,
            },
        ));
    }
    decode(raw).map_err(|(_, field, problem)| {
        let found = columns[..n_columns]
            .iter()
            .find(|(f, ..)| Some(f.name()) == field);
        let (name, col) = match found {
            Some(&(_, name, col)) => (name, col),
            None => (field.unwrap_or("?"), start + 1),
        };
        err(
            line,
            col,
            AsmErrorKind::Field {
                op,
                field: name,
                problem,
            },
        )
    })
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
