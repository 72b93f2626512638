//! Injected miscompilations: the proof that the differential loop finds bugs (issue 5 §6),
//! and a sanity check a user can run against their own set-up
//! (`CompilerUnderTest::Mutated`).
//!
//! Each [`BugClass`] is a miscompilation a channel-wise lowering plausibly makes. Most are
//! injected into a correct bundle by [`inject`], which finds the *site* of the bug by reading
//! the program the way a person would: it follows the `sldi` constants in registers to know
//! which local-memory buffer each instruction touches, so it can tell a partial-sum `vvadd`
//! from a bias `vvadd` or from the addition of a received partial sum. One class,
//! [`BugClass::PaddingOffByOne`], is injected through the compiler instead (the case is
//! compiled with its padding shifted by one row/column, then run against the real case), as
//! an off-by-one in the compiler's window arithmetic would behave.
//!
//! [`inject`] returns `false` when the bundle has no site for the bug (e.g. no `send` in a
//! one-core program); the bundle is then unchanged and the case passes.

use std::collections::BTreeMap;
use std::fmt;

use pimdiff_compiler::{compile, CompileOptions};
use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::inst::{BinVecOp, MemOp, Offset, UnVecOp};
use pimdiff_isa::{Inst, Width};
use pimdiff_oracle::{Case, Op};
use serde::{Deserialize, Serialize};

use crate::outcome::Outcome;

/// A class of miscompilation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BugClass {
    /// The input window is placed one row (or column) off: the top (left) padding is taken
    /// one smaller and the bottom (right) one larger. Injected through the compiler.
    PaddingOffByOne,
    /// ReLU applied to every crossbar's partial sum (`mvmul`'s relu flag) instead of once on
    /// the final sum.
    ReluOnPartialSum,
    /// The first addition of a partial sum (local crossbar or received from another core) is
    /// left out.
    DroppedPartialSum,
    /// The first `send` transfers 4 bytes fewer (or more) than its `recv` expects.
    WrongSendSize,
    /// The first `recv` names a core other than the sender.
    RecvWrongCore,
    /// The first `setbw` before a partial-sum reduction sets 16-bit elements instead of 32.
    WrongSetbwBeforeReduction,
    /// One crossbar's cells are written transposed (row and column swapped on its square part).
    TransposedCells,
    /// The bias constant is not loaded into global memory (the bias buffer reads zeros).
    MissingBias,
    /// The first `st` of the output lands one int32 element (4 bytes) too far.
    StoreOffByOne,
    /// The first `ld` of input data copies one byte too few.
    ShortInputLoad,
    /// ReLU is never applied (no `vrelu`, no `mvmul` relu flag).
    MissingRelu,
}

impl BugClass {
    /// Every class, in a fixed order.
    pub const ALL: [BugClass; 11] = [
        BugClass::PaddingOffByOne,
        BugClass::ReluOnPartialSum,
        BugClass::DroppedPartialSum,
        BugClass::WrongSendSize,
        BugClass::RecvWrongCore,
        BugClass::WrongSetbwBeforeReduction,
        BugClass::TransposedCells,
        BugClass::MissingBias,
        BugClass::StoreOffByOne,
        BugClass::ShortInputLoad,
        BugClass::MissingRelu,
    ];

    /// The kebab-case name (`padding-off-by-one`, ...), as in JSON and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BugClass::PaddingOffByOne => "padding-off-by-one",
            BugClass::ReluOnPartialSum => "relu-on-partial-sum",
            BugClass::DroppedPartialSum => "dropped-partial-sum",
            BugClass::WrongSendSize => "wrong-send-size",
            BugClass::RecvWrongCore => "recv-wrong-core",
            BugClass::WrongSetbwBeforeReduction => "wrong-setbw-before-reduction",
            BugClass::TransposedCells => "transposed-cells",
            BugClass::MissingBias => "missing-bias",
            BugClass::StoreOffByOne => "store-off-by-one",
            BugClass::ShortInputLoad => "short-input-load",
            BugClass::MissingRelu => "missing-relu",
        }
    }

    /// The class of a [`BugClass::name`].
    pub fn from_name(name: &str) -> Option<BugClass> {
        BugClass::ALL.into_iter().find(|b| b.name() == name)
    }
}

impl fmt::Display for BugClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Compiles `case` with the in-repo compiler (default options) and injects `bug`. Compiler
/// failures are outcomes, as in [`crate::driver::check_case`].
pub fn compile_mutated(bug: BugClass, case: &Case) -> Result<Bundle, Outcome> {
    if bug == BugClass::PaddingOffByOne {
        if let Some(shifted) = shifted_padding(case) {
            // Only the program and crossbars come from the shifted case; the manifest's shapes
            // are the same (same input, same output size).
            return match compile(&shifted, &CompileOptions::default()) {
                Ok(bundle) => Ok(bundle),
                Err(e) => Err(crate::driver::compile_error_outcome(e)),
            };
        }
    }
    let mut bundle = crate::driver::in_repo(case, &CompileOptions::default())?;
    inject(bug, case, &mut bundle);
    Ok(bundle)
}

/// The case with one padding moved by one from the top (left) to the bottom (right), or the
/// other way: same padded size, same output, input read one row (column) off.
fn shifted_padding(case: &Case) -> Option<Case> {
    let Op::Conv2d(mut op) = case.spec.op else {
        return None;
    };
    let p = op.padding;
    op.padding = if p[0] > 0 {
        [p[0] - 1, p[1], p[2] + 1, p[3]]
    } else if p[1] > 0 {
        [p[0], p[1] - 1, p[2], p[3] + 1]
    } else if p[2] > 0 {
        [p[0] + 1, p[1], p[2] - 1, p[3]]
    } else if p[3] > 0 {
        [p[0], p[1] + 1, p[2], p[3] - 1]
    } else {
        return None;
    };
    let mut spec = case.spec.clone();
    spec.op = Op::Conv2d(op);
    Case::new(
        spec,
        case.input.clone(),
        case.weight.clone(),
        case.bias.clone(),
        None,
    )
    .ok()
}

/// Injects `bug` into a correct bundle of `case`. Returns `false`, leaving the bundle
/// unchanged, when it has no site for the bug.
pub fn inject(bug: BugClass, case: &Case, bundle: &mut Bundle) -> bool {
    let roles: Vec<Vec<Role>> = bundle
        .program
        .cores
        .iter()
        .map(|insts| annotate(insts, bundle))
        .collect();
    let cores = &mut bundle.program.cores;
    // The first instruction (core-major order) with a role satisfying `want`.
    let first = |want: &dyn Fn(&Inst, Role) -> bool| -> Option<(usize, usize)> {
        for (c, insts) in cores.iter().enumerate() {
            for (i, inst) in insts.iter().enumerate() {
                if want(inst, roles[c][i]) {
                    return Some((c, i));
                }
            }
        }
        None
    };
    match bug {
        BugClass::PaddingOffByOne => {
            // Through the compiler only (see `compile_mutated`); a bundle alone has no site.
            false
        }
        BugClass::ReluOnPartialSum => {
            if !case.spec.op.has_relu() {
                return false;
            }
            let mut changed = false;
            for insts in cores.iter_mut() {
                for inst in insts.iter_mut() {
                    if let Inst::Mvmul { relu, .. } = inst {
                        if !*relu {
                            *relu = true;
                            changed = true;
                        }
                    }
                }
            }
            changed
        }
        BugClass::DroppedPartialSum => {
            match first(&|_, r| matches!(r, Role::LocalAdd | Role::RemoteAdd)) {
                Some((c, i)) => {
                    cores[c][i] = Inst::Nop;
                    true
                }
                None => false,
            }
        }
        BugClass::WrongSendSize => match first(&|inst, _| matches!(inst, Inst::Send { .. })) {
            Some((c, i)) => {
                if let Inst::Send { size, .. } = &mut cores[c][i] {
                    *size = if *size > 4 { *size - 4 } else { *size + 4 };
                }
                true
            }
            None => false,
        },
        BugClass::RecvWrongCore => {
            let n = cores.len() as u32;
            match first(&|inst, _| matches!(inst, Inst::Recv { .. })) {
                Some((c, i)) => {
                    if let Inst::Recv { core, .. } = &mut cores[c][i] {
                        // The next core after the sender that is not the sender (with two cores,
                        // that is the receiver itself).
                        *core = (*core + 1) % n.max(1);
                        if *core as usize == c && n > 2 {
                            *core = (*core + 1) % n;
                        }
                    }
                    true
                }
                None => false,
            }
        }
        BugClass::WrongSetbwBeforeReduction => {
            // The last `setbw` before the first partial-sum addition.
            let Some((c, i)) = first(&|_, r| matches!(r, Role::LocalAdd | Role::RemoteAdd)) else {
                return false;
            };
            let Some(j) = (0..i)
                .rev()
                .find(|&j| matches!(cores[c][j], Inst::Setbw { .. }))
            else {
                return false;
            };
            cores[c][j] = Inst::Setbw {
                ibiw: Width::W16,
                obiw: Width::W16,
            };
            true
        }
        BugClass::TransposedCells => {
            for xb in bundle.xbars.cores.values_mut() {
                let (_, array_rows, array_cols) = xb.cells.dim();
                for g in &xb.groups {
                    let side = (g.rows as usize)
                        .min(g.cols as usize)
                        .min(array_cols)
                        .min(array_rows);
                    let Some(&array) = g.arrays.first() else {
                        continue;
                    };
                    if side < 2 {
                        continue;
                    }
                    let a = array as usize;
                    let mut differs = false;
                    for r in 0..side {
                        for col in r + 1..side {
                            if xb.cells[[a, r, col]] != xb.cells[[a, col, r]] {
                                differs = true;
                            }
                        }
                    }
                    if !differs {
                        continue;
                    }
                    for r in 0..side {
                        for col in r + 1..side {
                            let t = xb.cells[[a, r, col]];
                            xb.cells[[a, r, col]] = xb.cells[[a, col, r]];
                            xb.cells[[a, col, r]] = t;
                        }
                    }
                    return true;
                }
            }
            false
        }
        BugClass::MissingBias => {
            let bias_nonzero = case
                .bias
                .as_ref()
                .is_some_and(|b| b.iter().any(|&v| v != 0));
            if !bias_nonzero || bundle.manifest.constants.is_empty() {
                return false;
            }
            bundle.manifest.constants.clear();
            true
        }
        BugClass::StoreOffByOne => {
            match first(&|inst, _| matches!(inst, Inst::Mem { op: MemOp::St, .. })) {
                Some((c, i)) => {
                    if let Inst::Mem { offset, .. } = &mut cores[c][i] {
                        *offset = Offset {
                            select: offset.select | 1,
                            value: offset.value + 4,
                        };
                    }
                    true
                }
                None => false,
            }
        }
        BugClass::ShortInputLoad => match first(&|inst, r| {
            matches!(inst, Inst::Mem { op: MemOp::Ld, size, .. } if *size > 0)
                && r == Role::InputLoad
        }) {
            Some((c, i)) => {
                if let Inst::Mem { size, .. } = &mut cores[c][i] {
                    *size -= 1;
                }
                true
            }
            None => false,
        },
        BugClass::MissingRelu => {
            if !case.spec.op.has_relu() {
                return false;
            }
            let mut changed = false;
            for insts in cores.iter_mut() {
                for inst in insts.iter_mut() {
                    match inst {
                        Inst::Mvmul { relu, .. } if *relu => {
                            *relu = false;
                            changed = true;
                        }
                        Inst::UnVec {
                            op: UnVecOp::Vrelu, ..
                        } => {
                            *inst = Inst::Nop;
                            changed = true;
                        }
                        _ => {}
                    }
                }
            }
            changed
        }
    }
}

/// What an instruction does in a channel-wise program, as far as the mutators care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Other,
    /// `ld` from the input slot.
    InputLoad,
    /// `vvadd` adding a bias buffer (loaded from a constant segment).
    BiasAdd,
    /// `vvadd` adding a buffer filled by `recv` (a partial sum from another core).
    RemoteAdd,
    /// Any other `vvadd` (a local partial sum).
    LocalAdd,
}

/// The role of each instruction of one core, following `sldi` constants through registers.
fn annotate(insts: &[Inst], bundle: &Bundle) -> Vec<Role> {
    let manifest = &bundle.manifest;
    let input_lo = manifest.input.addr as u64;
    let input_hi = input_lo + manifest.input.byte_len() as u64;
    let in_constant = |g: u64| {
        manifest
            .constants
            .iter()
            .any(|c| g >= c.addr as u64 && g < c.addr as u64 + c.data.len() as u64)
    };
    let mut regs: [Option<i64>; 32] = [None; 32];
    // Local-memory ranges holding bias values, and start addresses of receive buffers.
    let mut bias_ranges: Vec<(i64, i64)> = Vec::new();
    let mut recv_bufs: BTreeMap<i64, ()> = BTreeMap::new();
    let mut roles = Vec::with_capacity(insts.len());
    for inst in insts {
        let mut role = Role::Other;
        match *inst {
            Inst::Sldi { rd, imm } => regs[rd.index()] = Some(imm as u32 as i64),
            Inst::Sld { rd, .. } | Inst::Scalar { rd, .. } | Inst::ScalarImm { rd, .. } => {
                regs[rd.index()] = None
            }
            Inst::Mem {
                op: MemOp::Ld,
                rd,
                rs1,
                size,
                offset,
            } => {
                let l = regs[rd.index()].map(|v| {
                    v + if offset.applies_to_rd() {
                        offset.value as i64
                    } else {
                        0
                    }
                });
                let g = regs[rs1.index()].map(|v| {
                    v + if offset.applies_to_rs1() {
                        offset.value as i64
                    } else {
                        0
                    }
                });
                if let (Some(l), Some(g)) = (l, g) {
                    if g >= 0 && in_constant(g as u64) {
                        bias_ranges.push((l, l + size as i64));
                    } else if g >= 0 && (g as u64) >= input_lo && (g as u64) < input_hi {
                        role = Role::InputLoad;
                    }
                }
            }
            Inst::Recv { rd, offset, .. } => {
                if let Some(v) = regs[rd.index()] {
                    recv_bufs.insert(v + offset as i64, ());
                }
            }
            Inst::BinVec {
                op: BinVecOp::Vvadd,
                rs2,
                offset,
                ..
            } => {
                let b = regs[rs2.index()].map(|v| {
                    v + if offset.applies_to_rs2() {
                        offset.value as i64 * 4
                    } else {
                        0
                    }
                });
                role = match b {
                    Some(b) if bias_ranges.iter().any(|&(lo, hi)| b >= lo && b < hi) => {
                        Role::BiasAdd
                    }
                    Some(b) if recv_bufs.contains_key(&b) => Role::RemoteAdd,
                    _ => Role::LocalAdd,
                };
            }
            _ => {}
        }
        roles.push(role);
    }
    roles
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for b in BugClass::ALL {
            assert_eq!(BugClass::from_name(b.name()), Some(b));
        }
        assert_eq!(BugClass::from_name("no-such-bug"), None);
    }
}

/// The first case of a seed stream on which an injected bug is detected.
#[derive(Clone, Debug)]
pub struct Detection {
    /// Cases checked up to and including the detecting one.
    pub cases: usize,
    /// The seed of the detecting case.
    pub seed: u64,
    pub case: Case,
    pub signature: crate::outcome::Signature,
}

/// A short hunt for `bug`: checks the cases of seeds `first_seed..first_seed + max_cases`
/// (generated with `gen`) against the in-repo compiler with `bug` injected, and returns the
/// first *detection*: a finding of the mutated compiler on a case the correct compiler
/// passes (so a genuine compiler bug is never credited to the injection).
pub fn first_detection(
    bug: BugClass,
    gen: &crate::generate::GenConfig,
    first_seed: u64,
    max_cases: usize,
) -> Option<Detection> {
    use crate::driver::{check_case, CompilerUnderTest, RunConfig};
    let mutated = RunConfig::with_compiler(CompilerUnderTest::Mutated(bug));
    let correct = RunConfig::default();
    for (i, seed) in (first_seed..).take(max_cases).enumerate() {
        let case = crate::generate::case_from_seed(gen, seed);
        let result = check_case(&case, &mutated);
        let Some(signature) = result.outcome.signature() else {
            continue;
        };
        if check_case(&case, &correct).outcome == Outcome::Pass {
            return Some(Detection {
                cases: i + 1,
                seed,
                case,
                signature,
            });
        }
    }
    None
}
