//! The PUMA instruction sets: the tile's (send, receive, halt) and the core's (set, copy, load,
//! store, mvm, alu, alui, alu_int, jmp, beq, hlt), each from one table.
//!
//! # The instruction tables
//!
//! `for_each_core_inst!` and `for_each_tile_inst!` are the one definition of each set: one
//! row per instruction with its mnemonic (the function name of the program line, the
//! simulator's `i_<mnemonic>` prototype) and its parameters in the prototype's order, each as
//! `name: kind Type [= default]`. The parameter names and defaults are the prototypes' in
//! `instrn_proto.py` / `tile_instrn_proto.py`; the kinds (`operand.rs`) say how a literal is
//! read, checked and written. Everything else derives from the rows: the instruction enums
//! [`CoreInst`] / [`TileInst`] (one variant per row, one field per parameter), the opcode enums
//! with their name tables and [`CoreOpcode::params`], the line decoder (Python's rules of calls:
//! positional then keyword arguments, defaults, no duplicates) and the printer (`Display`,
//! which writes a line the decoder and the simulator's generator read back).
//!
//! To add an instruction: add its row, give it semantics in `machine/step/` (the compiler
//! points at the missing match arm), test it in `tests/machine_ops.rs`; the format tests
//! cover its spelling through [`CoreOpcode::ALL`].
//!
//! Training instructions (`train`, `crs`) and the tile's deprecated `compute` are not in the
//! tables: the compiler emits them only for training models, which the simulator's inference
//! configuration does not run.

use std::fmt;

use crate::formats::call::{Call, Value};
use crate::formats::error::{ArgProblem, LoadErrorKind, ProgramKind};
use crate::operand;
use crate::values::{AluOp, IntOp, Mask, Real};

/// The core instruction set, one row per instruction (see the module doc):
///
/// ```text
/// Variant "mnemonic" { param: kind Type [= default], ... };
/// ```
macro_rules! for_each_core_inst {
    ($m:ident) => {
        $m! {
            /// A core instruction, as a line of `<model>-tile<T>-core<C>.puma` spells it. Register
            /// operands (`d1`, `r1`, `r2`) are register addresses of the core's map
            /// (`crate::arch`); `vec` counts elements (words), or chunks for `load`/`store`.
            CoreInst,
            /// The opcode of a [`CoreInst`], one per row of `for_each_core_inst!`, in its order.
            CoreOpcode,
            ProgramKind::Core;
            /// `d1 .. d1+vec` ← the integer `imm` (unscaled: the simulator stores it as an
            /// address-width integer).
            Set "set" { d1: reg u32, imm: int i64, vec: count u32 = 1 };
            /// `d1+i` ← `r1+i` for `i < vec`, in order; `src_type` is ignored (as the simulator
            /// does).
            Copy "copy" { d1: reg u32, r1: reg u32, vec: count u32 = 1, src_type: int i64 = 0 };
            /// `vec` chunks of `load_width` words from tile memory at the address held in
            /// register `r1` to registers `d1 ..`.
            Load "load" { d1: reg u32, r1: reg u32, load_width: ldst u32 = 1, vec: count1 u32 = 1 };
            /// `vec` chunks of `store_width` words from registers `r1 ..` to tile memory at the
            /// address held in register `d1`, each word valid with `counter` reads left.
            Store "store" { d1: reg u32, r1: reg u32, counter: count u32 = 1, store_width: ldst u32 = 1, vec: count1 u32 = 1 };
            /// Matrix-vector multiplication on the MVMUs of the mask; `r1`/`r2` (both above 0)
            /// stride the input registers afterwards.
            Mvm "mvm" { xb_nma: mask Mask, r1: count u32 = 0, r2: count u32 = 0 };
            /// `d1+i` ← `r1+i` op `r2+i` for `i < vec`; `imm` is the shift of `sna`.
            Alu "alu" { aluop: aluop AluOp, d1: reg u32, r1: reg u32, r2: reg u32 = 0, imm: int i64 = 0, vec: count u32 = 1 };
            /// `d1+i` ← `imm` op `r1+i` (the immediate is the first operand) for `i < vec`.
            Alui "alui" { aluop: aluop AluOp, d1: reg u32, r1: reg u32, imm: real Real, vec: count u32 = 1 };
            /// `d1` ← `r1` op `r2` on integers; all three are data-memory registers.
            AluInt "alu_int" { aluop: intop IntOp, d1: reg u32, r1: reg u32, r2: reg u32 };
            /// Continue at instruction `imm`.
            Jmp "jmp" { imm: target u32 };
            /// Continue at instruction `imm` when data-memory registers `r1` and `r2` are equal.
            Beq "beq" { r1: reg u32, r2: reg u32, imm: target u32 };
            /// The core halts.
            Hlt "hlt" {};
        }
    };
}

/// The tile instruction set, one row per instruction (see the module doc).
macro_rules! for_each_tile_inst {
    ($m:ident) => {
        $m! {
            /// A tile instruction, as a line of `<model>-tile<T>.puma` spells it. Addresses are
            /// tile-memory word addresses.
            TileInst,
            /// The opcode of a [`TileInst`], one per row of `for_each_tile_inst!`, in its order.
            TileOpcode,
            ProgramKind::Tile;
            /// `vec` packets of `send_width` words from tile memory at `mem_addr` to tile
            /// `target_addr`, tagged with `vtile_id`.
            Send "send" { mem_addr: addr u32, vtile_id: count u32, send_width: sendw u32, target_addr: count u32, vec: count1 u32 = 1 };
            /// `vec` packets tagged `vtile_id`, of `receive_width` words each, into tile memory
            /// at `mem_addr`, each word valid with `counter` reads left.
            Receive "receive" { mem_addr: addr u32, vtile_id: count u32, receive_width: count1 u32, counter: count u32, vec: count1 u32 = 1 };
            /// The tile halts once every core halted and its packets left.
            Halt "halt" {};
        }
    };
}

/// One parameter of an instruction, from the table: its name, kind and default (as written
/// in the table), for documentation and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub kind: &'static str,
    pub default: Option<&'static str>,
}

macro_rules! default_text {
    () => {
        None
    };
    ($d:expr) => {
        Some(stringify!($d))
    };
}

macro_rules! is_default {
    ($v:expr) => {
        false
    };
    ($v:expr, $d:expr) => {
        *$v == $d
    };
}

macro_rules! field_value {
    ($inst:expr, $name:expr, $k:ident, $slot:expr) => {
        match $slot {
            Some(v) => operand::$k::parse(v).map_err(|problem| {
                arg_error(
                    $inst,
                    ArgProblem::BadValue {
                        param: $name,
                        problem,
                    },
                )
            }),
            None => Err(arg_error($inst, ArgProblem::Missing($name))),
        }
    };
    ($inst:expr, $name:expr, $k:ident, $slot:expr, $default:expr) => {
        match $slot {
            Some(v) => operand::$k::parse(v).map_err(|problem| {
                arg_error(
                    $inst,
                    ArgProblem::BadValue {
                        param: $name,
                        problem,
                    },
                )
            }),
            None => Ok($default),
        }
    };
}

/// Generates an instruction enum, its opcode enum, the decoder and the printer from a table.
macro_rules! define_insts {
    ($(#[$edoc:meta])* $inst:ident, $(#[$odoc:meta])* $opcode:ident, $program:expr;
     $( $(#[$doc:meta])* $op:ident $mn:literal
        { $( $field:ident : $k:ident $ty:ty $(= $default:expr)? ),* } ; )*) => {
        $(#[$edoc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $inst {
            $( $(#[$doc])* $op { $( $field: $ty ),* }, )*
        }

        $(#[$odoc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $opcode {
            $($op,)*
        }

        impl $opcode {
            /// Every opcode, in the table's order (usable as an index with `as usize`).
            pub const ALL: &'static [$opcode] = &[$($opcode::$op),*];
            /// The number of opcodes.
            pub const COUNT: usize = [$($mn),*].len();

            /// The function name a program line calls.
            pub fn mnemonic(self) -> &'static str {
                match self {
                    $($opcode::$op => $mn,)*
                }
            }

            pub fn from_mnemonic(s: &str) -> Option<$opcode> {
                match s {
                    $($mn => Some($opcode::$op),)*
                    _ => None,
                }
            }

            /// The parameters in the prototype's order.
            pub fn params(self) -> &'static [Param] {
                match self {
                    $($opcode::$op => &[$(Param {
                        name: stringify!($field),
                        kind: stringify!($k),
                        default: default_text!($($default)?),
                    }),*],)*
                }
            }
        }

        impl fmt::Display for $opcode {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.mnemonic())
            }
        }

        impl $inst {
            pub fn opcode(&self) -> $opcode {
                match self {
                    $($inst::$op { .. } => $opcode::$op,)*
                }
            }

            /// The instruction a parsed line calls.
            pub(crate) fn decode(call: &Call<'_>) -> Result<$inst, LoadErrorKind> {
                match call.name {
                    $($mn => {
                        let params: &[&'static str] = &[$(stringify!($field)),*];
                        let slots = bind($mn, params, call)?;
                        #[allow(unused_mut, unused_variables)]
                        let mut slots = slots.into_iter();
                        $(
                            let $field: $ty = field_value!(
                                $mn, stringify!($field), $k, slots.next().flatten() $(, $default)?
                            )?;
                        )*
                        Ok($inst::$op { $($field),* })
                    })*
                    other => Err(unknown_instruction(other, $program)),
                }
            }
        }

        /// The program line: the mnemonic and its arguments, leading ALU operations and masks
        /// positional, parameters at their default left out.
        impl fmt::Display for $inst {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let mut out = String::new();
                match self {
                    $($inst::$op { $($field),* } => {
                        out.push_str($mn);
                        out.push('(');
                        #[allow(unused_mut, unused_variables)]
                        let mut w = ArgWriter::new(&mut out);
                        $(
                            if is_default!($field $(, $default)?) {
                                w.skip();
                            } else {
                                w.arg(stringify!($field), operand::$k::POSITIONAL, |o| {
                                    operand::$k::write($field, o)
                                });
                            }
                        )*
                        out.push(')');
                    })*
                }
                f.write_str(&out)
            }
        }
    };
}

for_each_core_inst!(define_insts);
for_each_tile_inst!(define_insts);

fn arg_error(inst: &'static str, problem: ArgProblem) -> LoadErrorKind {
    LoadErrorKind::Argument { inst, problem }
}

/// Python's binding of call arguments to parameters: positional ones in order, then keyword
/// ones by name, each parameter at most once. Returns the value bound to each parameter.
fn bind<'c>(
    inst: &'static str,
    params: &[&'static str],
    call: &'c Call<'_>,
) -> Result<Vec<Option<&'c Value>>, LoadErrorKind> {
    let mut slots: Vec<Option<&Value>> = vec![None; params.len()];
    let positional = call.args.iter().take_while(|a| a.key.is_none()).count();
    if positional > params.len() {
        return Err(arg_error(
            inst,
            ArgProblem::TooManyPositional {
                given: positional,
                max: params.len(),
            },
        ));
    }
    for (i, arg) in call.args.iter().enumerate() {
        let slot = match arg.key {
            None => i,
            Some(key) => params
                .iter()
                .position(|p| *p == key)
                .ok_or_else(|| arg_error(inst, ArgProblem::UnknownKeyword(key.to_string())))?,
        };
        if slots[slot].is_some() {
            return Err(arg_error(inst, ArgProblem::Duplicate(params[slot])));
        }
        slots[slot] = Some(&arg.value);
    }
    Ok(slots)
}

fn unknown_instruction(name: &str, program: ProgramKind) -> LoadErrorKind {
    let hint = match program {
        ProgramKind::Core if TileOpcode::from_mnemonic(name).is_some() => {
            " (it is a tile instruction)"
        }
        ProgramKind::Tile if CoreOpcode::from_mnemonic(name).is_some() => {
            " (it is a core instruction)"
        }
        _ if ["train", "crs", "compute"].contains(&name) => {
            " (training and deprecated instructions are not supported)"
        }
        _ => "",
    };
    LoadErrorKind::UnknownInstruction {
        name: name.to_string(),
        program,
        hint,
    }
}

/// Writes `a, b, key=c` argument lists: arguments are positional while every one before was.
struct ArgWriter<'o> {
    out: &'o mut String,
    first: bool,
    positional: bool,
}

impl<'o> ArgWriter<'o> {
    fn new(out: &'o mut String) -> ArgWriter<'o> {
        ArgWriter {
            out,
            first: true,
            positional: true,
        }
    }

    fn skip(&mut self) {
        self.positional = false;
    }

    fn arg(&mut self, name: &str, positional: bool, write: impl FnOnce(&mut String)) {
        if !self.first {
            self.out.push_str(", ");
        }
        self.first = false;
        self.positional &= positional;
        if !self.positional {
            self.out.push_str(name);
            self.out.push('=');
        }
        write(self.out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::call::parse_call;

    fn core(line: &str) -> Result<CoreInst, LoadErrorKind> {
        CoreInst::decode(&parse_call(line).unwrap())
    }

    #[test]
    fn compiler_lines_decode_and_print_back() {
        for line in [
            "set(d1=513, imm=0)",
            "load(d1=513, r1=513, load_width=10, vec=4)",
            "copy(d1=0, r1=513, vec=40, src_type=1)",
            "mvm(['10'])",
            "alu('sig', d1=513, r1=256, vec=24)",
            "alu('add', d1=641, r1=641, r2=657, vec=16)",
            "alui('mul', d1=513, r1=513, imm=0.5, vec=3)",
            "store(d1=537, r1=513, store_width=12, vec=2)",
            "hlt()",
        ] {
            assert_eq!(core(line).unwrap().to_string(), line);
        }
        assert_eq!(
            core("set(d1=513, imm=0, vec=1)").unwrap(),
            CoreInst::Set {
                d1: 513,
                imm: 0,
                vec: 1
            }
        );
        assert_eq!(
            core("store(d1=537, r1=513, counter=1, store_width=12, vec=2)")
                .unwrap()
                .to_string(),
            "store(d1=537, r1=513, store_width=12, vec=2)"
        );
        assert_eq!(
            core("alu('add', 1, 2, 3)").unwrap(),
            CoreInst::Alu {
                aluop: AluOp::Add,
                d1: 1,
                r1: 2,
                r2: 3,
                imm: 0,
                vec: 1
            }
        );
    }

    #[test]
    fn every_name_is_unique() {
        let names: std::collections::BTreeSet<&str> = CoreOpcode::ALL
            .iter()
            .map(|o| o.mnemonic())
            .chain(TileOpcode::ALL.iter().map(|o| o.mnemonic()))
            .collect();
        assert_eq!(names.len(), CoreOpcode::COUNT + TileOpcode::COUNT);
        for op in AluOp::ALL {
            assert_eq!(AluOp::from_name(op.name()), Some(*op));
        }
    }
}
