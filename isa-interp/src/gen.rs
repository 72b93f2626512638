//! Generators of arbitrary *valid* programs (every instruction passes the loader's checks), for
//! round-trip properties, "never panics" properties of the machine, and fuzzing.
//!
//! There is one definition of what is generated: [`program_from`] reads choices from an
//! [`arbitrary::Unstructured`]. The `Arbitrary` impls of [`Inst`] and [`Program`] call it
//! directly (cargo-fuzz), and the proptest strategies ([`arb_program`], [`arb_program_with`])
//! feed it a random byte string, so proptest shrinks toward shorter byte strings, which means
//! fewer cores, shorter streams and smaller numbers. An instruction is an opcode drawn from
//! [`Opcode::ALL`] and its operands drawn in the order of its row of the instruction table
//! (`inst::for_each_inst!`), each by its operand kind: no opcode is named here.
//!
//! Values are biased toward *small* numbers (sizes, lengths and immediates that stay inside
//! the default local memory, core ids that exist, few groups), so that generated programs
//! mostly touch valid memory and exchange real messages, and only sometimes take a full-range
//! value that faults. [`GenConfig::small_values`] makes every number small.

use arbitrary::{Arbitrary, Result, Unstructured};
use proptest::prelude::*;

use crate::inst::{
    for_each_inst, BinVecOp, Inst, MemOp, Offset, Opcode, Reg, ScalarImmOp, ScalarOp, UnVecOp,
    Width,
};
use crate::program::{ArchHints, GroupSpec, Program};

/// What to generate. The defaults keep programs small enough that a property runs hundreds of
/// cases per second, and mostly valid at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenConfig {
    /// Programs have `1..=max_cores` cores (at least 1 is always used).
    pub max_cores: u32,
    /// Each core has `0..=max_len` instructions.
    pub max_len: u32,
    /// Out of 16 draws of a number, how many come from its small range (the rest from its
    /// full valid range). 16 makes every number small; 0 makes them uniform.
    pub small_weight: u8,
}

impl Default for GenConfig {
    /// 4 cores, 32 instructions each, 14/16 small numbers: enough to exercise the NoC
    /// and every opcode, with a fault in a minority of programs.
    fn default() -> GenConfig {
        GenConfig {
            max_cores: 4,
            max_len: 32,
            small_weight: 14,
        }
    }
}

impl GenConfig {
    /// Every number drawn small: programs that mostly run to completion or deadlock rather
    /// than fault on their first out-of-range access.
    pub fn small_values(max_cores: u32, max_len: u32) -> GenConfig {
        GenConfig {
            max_cores,
            max_len,
            small_weight: 16,
        }
    }
}

/// Bound on the programs the `Arbitrary` impl of [`Program`] makes (cargo-fuzz inputs).
pub const ARBITRARY_CONFIG: GenConfig = GenConfig {
    max_cores: 8,
    max_len: 64,
    small_weight: 14,
};

/// A proptest strategy for valid programs of `1..=max_cores` cores and up to `max_len`
/// instructions per core, with the default bias toward small values.
pub fn arb_program(max_cores: usize, max_len: usize) -> impl Strategy<Value = Program> {
    arb_program_with(GenConfig {
        max_cores: max_cores as u32,
        max_len: max_len as u32,
        ..GenConfig::default()
    })
}

/// [`arb_program`] with every number small ([`GenConfig::small_values`]).
pub fn small_values(max_cores: usize, max_len: usize) -> impl Strategy<Value = Program> {
    arb_program_with(GenConfig::small_values(max_cores as u32, max_len as u32))
}

/// A proptest strategy for valid programs as `config` says.
pub fn arb_program_with(config: GenConfig) -> impl Strategy<Value = Program> {
    // About 12 bytes per instruction are consumed; a shorter string yields shorter streams.
    let bytes = 16 + config.max_cores as usize * (config.max_len as usize * 12 + 8);
    proptest::collection::vec(any::<u8>(), 0..=bytes).prop_map(move |data| {
        let mut u = Unstructured::new(&data);
        program_from(&mut u, &config).unwrap_or_default()
    })
}

/// A proptest strategy for one valid instruction (core ids mostly below `cores`).
pub fn arb_inst(cores: u32) -> impl Strategy<Value = Inst> {
    let config = GenConfig::default();
    proptest::collection::vec(any::<u8>(), 0..=24).prop_map(move |data| {
        let mut u = Unstructured::new(&data);
        inst_from(&mut u, cores, &config).unwrap_or(Inst::Nop)
    })
}

/// Generate a program from `u`'s choices. Never fails on a short input (missing choices read
/// as the smallest ones); the `Result` is `arbitrary`'s, for its other errors.
pub fn program_from(u: &mut Unstructured<'_>, config: &GenConfig) -> Result<Program> {
    let n = u.int_in_range(1..=config.max_cores.max(1))?;
    let mut cores = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let len = u.int_in_range(0..=config.max_len)?;
        let mut insts = Vec::with_capacity(len as usize);
        for _ in 0..len {
            if u.is_empty() {
                break;
            }
            insts.push(inst_from(u, n, config)?);
        }
        cores.push(insts);
    }
    let groups = match u.int_in_range(0..=2u8)? {
        0 => GroupSpec::ExportOnly,
        1 => GroupSpec::ArrayCount,
        _ => {
            let mut map = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let k = u.int_in_range(0..=4usize)?;
                map.push(
                    (0..k)
                        .map(|_| u.int_in_range(1..=4u32))
                        .collect::<Result<Vec<_>>>()?,
                );
            }
            GroupSpec::ArrayGroupMap(map)
        }
    };
    let arch = hints_from(u, n)?;
    Ok(Program {
        cores,
        groups,
        arch,
    })
}

/// Architecture hints, each stated or not; the values stay small enough for a machine to be
/// built quickly (at most 16 arrays of 32 × 32 per core, 64 KiB of local memory).
fn hints_from(u: &mut Unstructured<'_>, cores: u32) -> Result<ArchHints> {
    let opt = |u: &mut Unstructured<'_>, lo: u32, hi: u32| -> Result<Option<u32>> {
        Ok(if u.ratio(1, 3)? {
            Some(u.int_in_range(lo..=hi)?)
        } else {
            None
        })
    };
    let arrays_per_core = opt(u, 1, 16)?;
    let array_rows = opt(u, 1, 32)?;
    let array_cols = opt(u, 1, 32)?;
    let local_memory_bytes = opt(u, 256, 64 << 10)?;
    let frac_bits = opt(u, 0, 8)?;
    let cell_precision = opt(u, 1, 4)?;
    let adc_count = opt(u, 1, 16)?;
    let mesh = if u.ratio(1, 3)? {
        let rows = u.int_in_range(1..=cores.max(1))?;
        Some([rows, cores.div_ceil(rows).max(1)])
    } else {
        None
    };
    Ok(ArchHints {
        arrays_per_core,
        array_rows,
        array_cols,
        local_memory_bytes,
        mesh,
        frac_bits,
        cell_precision,
        adc_count,
    })
}

/// Draws numbers with the configured bias.
struct Draw<'c> {
    config: &'c GenConfig,
    cores: u32,
}

impl Draw<'_> {
    fn small(&self, u: &mut Unstructured<'_>) -> Result<bool> {
        match self.config.small_weight {
            0 => Ok(false),
            w if w >= 16 => Ok(true),
            w => u.ratio(w, 16),
        }
    }

    fn reg(&self, u: &mut Unstructured<'_>) -> Result<Reg> {
        // Small: the first eight registers, so values flow between instructions.
        let hi = if self.small(u)? { 7 } else { 31 };
        Ok(Reg::new(u.int_in_range(0..=hi)?).unwrap_or(Reg::new(0).expect("r0")))
    }

    fn width(&self, u: &mut Unstructured<'_>) -> Result<Width> {
        let bits = if self.small(u)? {
            *u.choose(&[8, 8, 16, 32, 1, 7, 9])?
        } else {
            u.int_in_range(1..=32)?
        };
        Ok(Width::new(bits).unwrap_or(Width::W8))
    }

    /// A byte count or element count.
    fn size(&self, u: &mut Unstructured<'_>) -> Result<u32> {
        if self.small(u)? {
            u.int_in_range(0..=64)
        } else {
            u.arbitrary()
        }
    }

    fn offset_value(&self, u: &mut Unstructured<'_>) -> Result<i32> {
        if self.small(u)? {
            u.int_in_range(-8..=16)
        } else {
            u.arbitrary()
        }
    }

    fn offset(&self, u: &mut Unstructured<'_>) -> Result<Offset> {
        Ok(Offset {
            select: u.int_in_range(0..=7)?,
            value: self.offset_value(u)?,
        })
    }

    fn imm(&self, u: &mut Unstructured<'_>) -> Result<i32> {
        if self.small(u)? {
            u.int_in_range(-4..=256)
        } else {
            u.arbitrary()
        }
    }

    fn core(&self, u: &mut Unstructured<'_>) -> Result<u32> {
        if self.small(u)? {
            u.int_in_range(0..=self.cores.saturating_sub(1))
        } else {
            u.arbitrary()
        }
    }

    fn group(&self, u: &mut Unstructured<'_>) -> Result<u32> {
        if self.small(u)? {
            u.int_in_range(0..=4)
        } else {
            u.arbitrary()
        }
    }

    /// A `wait` value: small ones are counts a few `sync`s can reach.
    fn wait_value(&self, u: &mut Unstructured<'_>) -> Result<i32> {
        if self.small(u)? {
            u.int_in_range(0..=3)
        } else {
            u.arbitrary()
        }
    }
}

/// Generate one instruction of a program of `cores` cores.
pub fn inst_from(u: &mut Unstructured<'_>, cores: u32, config: &GenConfig) -> Result<Inst> {
    let d = Draw { config, cores };
    let op = *u.choose(&Opcode::ALL)?;
    inst_of(op, &d, u)
}

/// One operand of the instruction table (`inst::for_each_inst!`) drawn by its kind, and for
/// the `u32` / `i32` kinds by its JSON key (a group, a core and a length are drawn from
/// different ranges). A new kind or key fails to compile here until it is given a draw.
macro_rules! draw {
    ($d:ident, $u:ident, reg, $key:ident) => {
        $d.reg($u)?
    };
    ($d:ident, $u:ident, event, $key:ident) => {
        $d.reg($u)?
    };
    ($d:ident, $u:ident, send_source) => {
        $d.reg($u)?
    };
    ($d:ident, $u:ident, imm32, $key:ident) => {
        $d.imm($u)?
    };
    ($d:ident, $u:ident, width, $key:ident) => {
        $d.width($u)?
    };
    ($d:ident, $u:ident, u32, Group) => {
        $d.group($u)?
    };
    ($d:ident, $u:ident, u32, Core) => {
        $d.core($u)?
    };
    ($d:ident, $u:ident, u32, Len) => {
        $d.size($u)?
    };
    ($d:ident, $u:ident, i32, WaitValue) => {
        $d.wait_value($u)?
    };
    ($d:ident, $u:ident, relu) => {
        $u.arbitrary()?
    };
    ($d:ident, $u:ident, lldi_byte) => {
        $u.arbitrary()?
    };
    // Drawn after the others (see `draw_last!`).
    ($d:ident, $u:ident, lldi_float) => {
        false
    };
    ($d:ident, $u:ident, bytes, $key:ident) => {
        $d.size($u)?
    };
    ($d:ident, $u:ident, offset) => {
        $d.offset($u)?
    };
    ($d:ident, $u:ident, offset_value) => {
        $d.offset_value($u)?
    };
    ($d:ident, $u:ident, top_offset_value) => {
        $d.offset_value($u)?
    };
}

/// The operands drawn after all others: `lldi`'s float marker, which the generator has always
/// drawn last, so that a byte string (a committed fuzz seed) keeps meaning the same program.
macro_rules! draw_last {
    ($u:ident, $value:ident, lldi_float) => {
        $u.ratio(1, 4)?
    };
    ($u:ident, $value:ident, $kind:ident) => {
        $value
    };
}

/// [`inst_of`] from the table's rows.
macro_rules! generate_ops {
    ($( $op:ident $mn:literal [$($alias:literal),*] $cat:ident $(($rank:literal))? $variant:ident
        [$($sub:ident : $subv:path)?] { $($field:ident : $kind:ident ($($key:ident)?)),* } ;)*) => {
        /// An instruction of opcode `op` with its operands drawn in the table's order.
        fn inst_of(op: Opcode, d: &Draw<'_>, u: &mut Unstructured<'_>) -> Result<Inst> {
            Ok(match op {
                $(Opcode::$op => {
                    // A placeholder for the operands drawn last goes unread.
                    $(#[allow(unused_variables)] let $field = draw!(d, u, $kind $(, $key)?);)*
                    Inst::$variant { $($sub: $subv,)? $($field: draw_last!(u, $field, $kind),)* }
                })*
            })
        }
    };
}
for_each_inst!(generate_ops);

impl<'a> Arbitrary<'a> for Inst {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Inst> {
        inst_from(u, ARBITRARY_CONFIG.max_cores, &ARBITRARY_CONFIG)
    }
}

impl<'a> Arbitrary<'a> for Program {
    /// At most [`ARBITRARY_CONFIG`]'s 8 cores of 64 instructions.
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Program> {
        program_from(u, &ARBITRARY_CONFIG)
    }
}

/// `text` damaged by `edits` (position modulo the length, byte): a zero byte deletes, an even
/// byte overwrites, an odd byte inserts. What the "damaged input never panics / never
/// disagrees" properties feed the readers.
pub fn damage(mut text: Vec<u8>, edits: &[(usize, u8)]) -> Vec<u8> {
    for &(pos, byte) in edits {
        if text.is_empty() {
            break;
        }
        let pos = pos % text.len();
        match byte {
            0 => {
                text.remove(pos);
            }
            b if b % 2 == 0 => text[pos] = b,
            b => text.insert(pos, b),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    #[test]
    fn every_opcode_is_generated() {
        let mut seen = std::collections::BTreeSet::new();
        let mut runner = TestRunner::deterministic();
        let strategy = arb_program(4, 32);
        for _ in 0..200 {
            let p = strategy.new_tree(&mut runner).unwrap().current();
            for inst in p.cores.iter().flatten() {
                seen.insert(inst.opcode());
            }
        }
        assert_eq!(
            seen.len(),
            Opcode::ALL.len(),
            "missing: {:?}",
            Opcode::ALL
                .iter()
                .filter(|o| !seen.contains(o))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn small_values_stay_small() {
        let mut runner = TestRunner::deterministic();
        let strategy = small_values(3, 32);
        for _ in 0..100 {
            let p = strategy.new_tree(&mut runner).unwrap().current();
            assert!((1..=3).contains(&p.cores.len()));
            for inst in p.cores.iter().flatten() {
                match *inst {
                    Inst::Mem { size, .. } | Inst::Lldi { size, .. } => assert!(size <= 64),
                    Inst::BinVec { len, .. } | Inst::UnVec { len, .. } | Inst::Vmv { len, .. } => {
                        assert!(len <= 64)
                    }
                    Inst::Send { core, size, .. } | Inst::Recv { core, size, .. } => {
                        assert!(core < p.cores.len() as u32 && size <= 64)
                    }
                    Inst::Sync { core, .. } => assert!(core < p.cores.len() as u32),
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn arbitrary_program_is_bounded_and_total_on_short_input() {
        let data: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let p = Program::arbitrary(&mut Unstructured::new(&data)).unwrap();
        assert!((1..=8).contains(&p.cores.len()));
        assert!(p.cores.iter().all(|c| c.len() <= 64));
        assert_eq!(
            Program::arbitrary(&mut Unstructured::new(&[]))
                .unwrap()
                .cores
                .len(),
            1
        );
    }
}
