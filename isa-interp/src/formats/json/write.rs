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
    w.write_all(b"{\"op\": \"")?;
    w.write_all(inst.opcode().mnemonic().as_bytes())?;
    w.write_all(b"\"")?;
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

/// One writer per operand kind, named after it. Each writes its pieces with `write_all` and
/// its integers with `itoa` rather than through `write!`: the same bytes, without the
/// formatting machinery's per-argument dispatch (a third of the time of writing a program;
/// `cargo bench -p pimdiff-isa --bench load` with `PIMDIFF_LOAD_SPLIT=1`, column `write s`).
mod put {
    use std::io::{self, Write};

    use crate::inst::{Offset, Reg, Width};

    use super::super::super::operand::Field;

    type Out<'w, W> = &'w mut W;

    /// `, "key": value`.
    fn entry<W: Write + ?Sized>(w: Out<W>, key: &str, v: impl itoa::Integer) -> io::Result<()> {
        w.write_all(b", \"")?;
        w.write_all(key.as_bytes())?;
        w.write_all(b"\": ")?;
        w.write_all(itoa::Buffer::new().format(v).as_bytes())
    }

    pub(super) fn reg<W: Write + ?Sized>(w: Out<W>, key: Field, v: Reg) -> io::Result<()> {
        entry(w, key.name(), v.index())
    }
    pub(super) fn event<W: Write + ?Sized>(w: Out<W>, key: Field, v: Reg) -> io::Result<()> {
        reg(w, key, v)
    }
    pub(super) fn send_source<W: Write + ?Sized>(w: Out<W>, v: Reg) -> io::Result<()> {
        entry(w, "rd", v.index())?;
        entry(w, "rs1", v.index())
    }
    pub(super) fn imm32<W: Write + ?Sized>(w: Out<W>, key: Field, v: i32) -> io::Result<()> {
        i32(w, key, v)
    }
    pub(super) fn width<W: Write + ?Sized>(w: Out<W>, key: Field, v: Width) -> io::Result<()> {
        u32(w, key, v.bits())
    }
    pub(super) fn u32<W: Write + ?Sized>(w: Out<W>, key: Field, v: u32) -> io::Result<()> {
        entry(w, key.name(), v)
    }
    pub(super) fn i32<W: Write + ?Sized>(w: Out<W>, key: Field, v: i32) -> io::Result<()> {
        entry(w, key.name(), v)
    }
    pub(super) fn relu<W: Write + ?Sized>(w: Out<W>, v: bool) -> io::Result<()> {
        entry(w, "relu", v as u8)
    }
    pub(super) fn lldi_byte<W: Write + ?Sized>(w: Out<W>, v: u8) -> io::Result<()> {
        entry(w, "imm", v)
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
        let mut n = itoa::Buffer::new();
        w.write_all(b", \"offset\": {\"offset_select\": ")?;
        w.write_all(n.format(v.select).as_bytes())?;
        w.write_all(b", \"offset_value\": ")?;
        w.write_all(n.format(v.value).as_bytes())?;
        w.write_all(b"}")
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
        entry(w, "offset_value", v)
    }
}
