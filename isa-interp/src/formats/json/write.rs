//! Writing a program as pimsim-nn JSON: one instruction object per line, spelled as the
//! instruction table says.

use std::io::{self, Write};

use crate::inst::{for_each_inst, BinVecOp, Inst, MemOp, ScalarImmOp, ScalarOp, UnVecOp};
use crate::program::Program;

use super::super::config::write_config;
use super::super::operand::Field;

/// Write `program` as one JSON object.
pub fn write_json<W: Write>(program: &Program, w: W) -> io::Result<()> {
    let mut w = io::BufWriter::with_capacity(1 << 16, w);
    w.write_all(b"{\n\"config\": ")?;
    write_config(program, &mut w)?;
    for (i, insts) in program.cores.iter().enumerate() {
        write!(w, ",\n\"core{i}\": ")?;
        write_core(insts, &mut w)?;
    }
    w.write_all(b"\n}\n")?;
    w.flush()
}

/// Write one core's instructions as a JSON array, one instruction per line.
pub(crate) fn write_core<W: Write>(insts: &[Inst], w: &mut W) -> io::Result<()> {
    if insts.is_empty() {
        return w.write_all(b"[]");
    }
    w.write_all(b"[")?;
    for (i, inst) in insts.iter().enumerate() {
        w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
        write_inst(inst, w)?;
    }
    w.write_all(b"\n]")
}

/// Write one instruction object: `op`, then each operand in the instruction table's order,
/// spelled as its kind says (`formats::operand`). So `offset` is always an object (save the
/// top-level kind), byte counts use the key the table names (`len` or `size`), a transfer's
/// source is written as both `rd` and `rs1`, `relu` as 0 or 1, and a float-origin byte
/// immediate as a float (`3.0`) so that it reads back as one. These are the spellings
/// pimsim-nn reads (design.md).
pub fn write_inst<W: Write + ?Sized>(inst: &Inst, w: &mut W) -> io::Result<()> {
    write!(w, "{{\"op\": \"{}\"", inst.opcode().mnemonic())?;
    write_operands(inst, w)?;
    w.write_all(b"}")
}

macro_rules! write_ops {
    ($( $op:ident $mn:literal [$($alias:literal),*] $cat:ident $(($rank:literal))? $variant:ident
        [$($sub:ident : $subv:path)?] { $($field:ident : $kind:ident ($($key:ident)?)),* } ;)*) => {
        fn write_operands<W: Write + ?Sized>(inst: &Inst, w: &mut W) -> io::Result<()> {
            match *inst {
                $(Inst::$variant { $($sub: $subv,)? $($field,)* } => {
                    $(put::$kind(w, $(Field::$key,)? $field)?;)*
                })*
            }
            Ok(())
        }
    };
}
for_each_inst!(write_ops);

/// One writer per operand kind, named after it.
mod put {
    use std::io::{self, Write};

    use crate::inst::{Offset, Reg, Width};

    use super::super::super::operand::Field;

    type Out<'w, W> = &'w mut W;

    pub(super) fn reg<W: Write + ?Sized>(w: Out<W>, key: Field, v: Reg) -> io::Result<()> {
        write!(w, ", \"{}\": {}", key.name(), v.index())
    }
    pub(super) fn event<W: Write + ?Sized>(w: Out<W>, key: Field, v: Reg) -> io::Result<()> {
        reg(w, key, v)
    }
    pub(super) fn send_source<W: Write + ?Sized>(w: Out<W>, v: Reg) -> io::Result<()> {
        write!(w, ", \"rd\": {0}, \"rs1\": {0}", v.index())
    }
    pub(super) fn imm32<W: Write + ?Sized>(w: Out<W>, key: Field, v: i32) -> io::Result<()> {
        i32(w, key, v)
    }
    pub(super) fn width<W: Write + ?Sized>(w: Out<W>, key: Field, v: Width) -> io::Result<()> {
        u32(w, key, v.bits())
    }
    pub(super) fn u32<W: Write + ?Sized>(w: Out<W>, key: Field, v: u32) -> io::Result<()> {
        write!(w, ", \"{}\": {v}", key.name())
    }
    pub(super) fn i32<W: Write + ?Sized>(w: Out<W>, key: Field, v: i32) -> io::Result<()> {
        write!(w, ", \"{}\": {v}", key.name())
    }
    pub(super) fn relu<W: Write + ?Sized>(w: Out<W>, v: bool) -> io::Result<()> {
        write!(w, ", \"relu\": {}", v as u8)
    }
    pub(super) fn lldi_byte<W: Write + ?Sized>(w: Out<W>, v: u8) -> io::Result<()> {
        write!(w, ", \"imm\": {v}")
    }
    /// A suffix of the byte immediate written just before it: `3.0` reads back as a float.
    pub(super) fn lldi_float<W: Write + ?Sized>(w: Out<W>, v: bool) -> io::Result<()> {
        if v {
            w.write_all(b".0")?;
        }
        Ok(())
    }
    pub(super) fn bytes<W: Write + ?Sized>(w: Out<W>, key: Field, v: u32) -> io::Result<()> {
        u32(w, key, v)
    }
    pub(super) fn offset<W: Write + ?Sized>(w: Out<W>, v: Offset) -> io::Result<()> {
        write!(
            w,
            ", \"offset\": {{\"offset_select\": {}, \"offset_value\": {}}}",
            v.select, v.value
        )
    }
    pub(super) fn offset_value<W: Write + ?Sized>(w: Out<W>, v: i32) -> io::Result<()> {
        offset(
            w,
            Offset {
                select: 0,
                value: v,
            },
        )
    }
    pub(super) fn top_offset_value<W: Write + ?Sized>(w: Out<W>, v: i32) -> io::Result<()> {
        write!(w, ", \"offset_value\": {v}")
    }
}
