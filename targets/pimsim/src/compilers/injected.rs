//! Injected miscompilations: the proof that the differential loop finds bugs,
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
//!
//! Two more families prove the rest of the loop rather than the comparison: *bogus declines*
//! ([`BugClass::DECLINES`]: the compiler says `unsupported` with numbers that do not hold, as
//! a flipped comparison in a capacity check would) and a *hang* ([`BugClass::HANGS`]: the
//! compiler loops forever on some cases, in-process, as a run-length loop that never advances
//! would). They are not in [`BugClass::ALL`], which lists the classes that produce a wrong
//! bundle.

use std::collections::BTreeMap;
use std::fmt;

use pimdiff_compiler::{compile, CompileError, CompileOptions, Lowering, Reduction, Unsupported};
use pimdiff_isa::bundle::{Bundle, IoManifest};
use pimdiff_isa::inst::{BinVecOp, MemOp, Offset, UnVecOp};
use pimdiff_isa::xbar::CrossbarExport;
use pimdiff_isa::{Inst, Width};
use pimdiff_oracle::{Case, Op};
use serde::{Deserialize, Serialize};

use super::{in_repo, races, CompileFailure};

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
    /// The instruction-count check with its comparison flipped: every case that compiles is
    /// declined as having too many instructions (with its true, small estimate).
    FlippedInstructionCheck,
    /// The array-capacity check off by one (`needed >= available`): a case whose crossbars
    /// fill the chip exactly is declined as not having enough arrays.
    ArrayCapacityOffByOne,
    /// GMem reduction: the owner of a reduction never `wait`s for one contributor's `sync`
    /// before `ld`ing its partial sums (a race on the slot).
    MissingWait,
    /// GMem reduction: a contributor `sync`s its owner before `st`ing its partial sums.
    EarlySync,
    /// GMem reduction: a contributor also stores its partial sum over output bytes its owner
    /// stores (two cores' `st`s to the same bytes, unordered).
    OverlappingStores,
    /// Code generation loops forever (in-process, a genuine infinite loop) on a conv2d whose
    /// kernel reaches into the right padding at the end of an output row: a run-length loop
    /// that never advances past a trailing run of padding pixels.
    CompilerHang,
    /// A systematic bug: the last `mvmul` of every core multiplies with array group 0 (a
    /// code generator wrong the same way at every site). No single-site repair fixes it where
    /// several cores are wrong; the joint repair names it (`triage::joint`).
    LastMvmulGroupZero,
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

    /// The bogus declines: `unsupported` with numbers the harness refutes.
    pub const DECLINES: [BugClass; 2] = [
        BugClass::FlippedInstructionCheck,
        BugClass::ArrayCapacityOffByOne,
    ];

    /// The races: programs that are racy by construction (compiled with the GMem reduction,
    /// where they have their sites). Whether a run shows it depends on the schedule, so
    /// they are not in [`BugClass::ALL`]; the race detector finds them on every schedule.
    pub const RACES: [BugClass; 3] = [
        BugClass::MissingWait,
        BugClass::EarlySync,
        BugClass::OverlappingStores,
    ];

    /// The hangs: a check of an affected case never returns (only a watchdog ends it).
    pub const HANGS: [BugClass; 1] = [BugClass::CompilerHang];

    /// The systematic bugs: wrong the same way at every site of a kind.
    pub const SYSTEMATIC: [BugClass; 1] = [BugClass::LastMvmulGroupZero];

    /// Every class: [`BugClass::ALL`], then [`BugClass::DECLINES`], [`BugClass::RACES`],
    /// [`BugClass::HANGS`] and [`BugClass::SYSTEMATIC`].
    pub fn every() -> impl Iterator<Item = BugClass> {
        BugClass::ALL
            .into_iter()
            .chain(BugClass::DECLINES)
            .chain(BugClass::RACES)
            .chain(BugClass::HANGS)
            .chain(BugClass::SYSTEMATIC)
    }

    /// The names of [`BugClass::every`], comma-separated (for error messages).
    pub fn known_names() -> String {
        BugClass::every()
            .map(BugClass::name)
            .collect::<Vec<_>>()
            .join(", ")
    }

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
            BugClass::FlippedInstructionCheck => "flipped-instruction-check",
            BugClass::ArrayCapacityOffByOne => "array-capacity-off-by-one",
            BugClass::MissingWait => "missing-wait",
            BugClass::EarlySync => "early-sync",
            BugClass::OverlappingStores => "overlapping-stores",
            BugClass::CompilerHang => "compiler-hang",
            BugClass::LastMvmulGroupZero => "last-mvmul-group-zero",
        }
    }

    /// The class of a [`BugClass::name`].
    pub fn from_name(name: &str) -> Option<BugClass> {
        BugClass::every().find(|b| b.name() == name)
    }
}

impl fmt::Display for BugClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The options the in-repo compiler runs with under `bug`: `lowering`, and the GMem reduction
/// for a race class (its sites are there only).
pub fn options_for(bug: BugClass, lowering: Lowering) -> CompileOptions {
    CompileOptions {
        lowering,
        reduction: if BugClass::RACES.contains(&bug) {
            Reduction::Gmem
        } else {
            Reduction::Noc
        },
        ..CompileOptions::default()
    }
}

/// Compiles `case` with the in-repo compiler (default options, `lowering`) and injects `bug`.
/// Compiler failures are reported as by [`in_repo::compile`].
pub fn compile_mutated(
    bug: BugClass,
    lowering: Lowering,
    case: &Case,
) -> Result<Bundle, CompileFailure> {
    let options = options_for(bug, lowering);
    if bug == BugClass::PaddingOffByOne {
        if let Some(shifted) = shifted_padding(case) {
            // Only the program and crossbars come from the shifted case; the manifest's shapes
            // are the same (same input, same output size).
            return match compile(&shifted, &options) {
                Ok(bundle) => Ok(bundle),
                Err(e) => Err(in_repo::failure(e)),
            };
        }
    }
    let mut bundle = in_repo::compile(case, &options)?;
    match bug {
        BugClass::FlippedInstructionCheck | BugClass::ArrayCapacityOffByOne => {
            if let Some(decline) = bogus_decline(bug, case) {
                return Err(in_repo::failure(CompileError::Unsupported(decline)));
            }
        }
        BugClass::CompilerHang => {
            std::hint::black_box(padding_runs(case));
        }
        _ => {
            inject(bug, case, &mut bundle);
        }
    }
    Ok(bundle)
}

/// The decline a bogus capacity check makes on a case the real compiler compiled, if any.
/// The numbers are the compiler's own (its tiling, its instruction estimate); only the
/// comparison is wrong.
fn bogus_decline(bug: BugClass, case: &Case) -> Option<Unsupported> {
    let spatial = pimdiff_compiler::tiling::tile(case, &CompileOptions::default()).ok()?;
    let kept = spatial.xbars.iter().filter(|x| x.skip.is_none()).count();
    let p = &spatial.problem;
    match bug {
        BugClass::FlippedInstructionCheck => {
            let pixels = p.pixels() as u64;
            let mvmuls = kept as u64 * pixels;
            let finals = spatial.classes.len() as u64 * pixels * (1 + p.bias as u64);
            let estimate = mvmuls.saturating_mul(2).saturating_add(finals);
            let limit = pimdiff_compiler::gmem::MAX_INSTRUCTIONS;
            // The bug: `<=` where the compiler has `>`.
            (estimate <= limit).then_some(Unsupported::TooManyInstructions {
                needed: estimate,
                limit,
            })
        }
        BugClass::ArrayCapacityOffByOne => {
            let arch = &case.spec.arch;
            let available = arch.cores.saturating_mul(arch.arrays_per_core);
            // The bug: `>=` where the compiler has `>`.
            (kept >= available).then_some(Unsupported::NotEnoughArrays {
                needed: kept,
                available,
            })
        }
        _ => None,
    }
}

/// `compiler-hang`: counts, for each kernel column of a conv2d, the runs of equal validity
/// (inside the input / in the padding) along an output row, as code generation does to emit
/// one `lldi` or `vvadd` per run. The bug: a run of padding that ends the row is never
/// stepped over, so the loop spins forever on such a case (a genuine infinite loop: no sleep,
/// no flag, nothing a watchdog could ask to stop). Returns the run count on other cases.
fn padding_runs(case: &Case) -> u64 {
    let Op::Conv2d(op) = case.spec.op else {
        return 0;
    };
    let w = case.spec.input_shape.get(3).copied().unwrap_or(0) as i64;
    let ext_w = (op.dilation[1] * (op.kernel[1] - 1) + 1) as i64;
    let padded = w + (op.padding[1] + op.padding[3]) as i64;
    if padded < ext_w || op.stride[1] == 0 {
        return 0;
    }
    let ow = ((padded - ext_w) / op.stride[1] as i64 + 1) as usize;
    let mut runs = 0u64;
    for j in 0..op.kernel[1] {
        let valid = |q: usize| {
            let col = (q * op.stride[1] + j * op.dilation[1]) as i64 - op.padding[1] as i64;
            (0..w).contains(&col)
        };
        let mut q = 0;
        while q < ow {
            let v = valid(q);
            let start = q;
            while q < ow && valid(q) == v {
                q += 1;
            }
            if !v && q == ow {
                q = start; // the injected bug: the trailing padding run is never left
            }
            runs = std::hint::black_box(runs + 1);
        }
    }
    runs
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
    let sites = Sites { roles: &roles };
    let cores = &mut bundle.program.cores;
    let has_relu = case.spec.op.has_relu();
    match bug {
        // Through the compiler only (see `compile_mutated`); a bundle alone has no site.
        BugClass::PaddingOffByOne
        | BugClass::FlippedInstructionCheck
        | BugClass::ArrayCapacityOffByOne
        | BugClass::CompilerHang => false,
        BugClass::ReluOnPartialSum => has_relu && relu_on_every_mvmul(cores),
        BugClass::DroppedPartialSum => drop_first_partial_sum(&sites, cores),
        BugClass::WrongSendSize => wrong_send_size(&sites, cores),
        BugClass::RecvWrongCore => recv_from_wrong_core(&sites, cores),
        BugClass::WrongSetbwBeforeReduction => narrow_setbw_before_reduction(&sites, cores),
        BugClass::TransposedCells => transpose_one_crossbar(&mut bundle.xbars),
        BugClass::MissingBias => drop_bias_constant(case, &mut bundle.manifest),
        BugClass::StoreOffByOne => store_one_element_off(&sites, cores),
        BugClass::ShortInputLoad => shorten_input_load(&sites, cores),
        BugClass::MissingRelu => has_relu && remove_relu(cores),
        BugClass::MissingWait => races::missing_wait(cores),
        BugClass::EarlySync => races::early_sync(cores),
        BugClass::OverlappingStores => races::overlapping_stores(cores, &bundle.manifest),
        BugClass::LastMvmulGroupZero => last_mvmul_group_zero(cores),
    }
}

/// Every core's last `mvmul` takes array group 0; whether any changed.
fn last_mvmul_group_zero(cores: &mut [Vec<Inst>]) -> bool {
    let mut changed = false;
    for insts in cores {
        let last = insts.iter_mut().rev().find_map(|i| match i {
            Inst::Mvmul { group, .. } => Some(group),
            _ => None,
        });
        if let Some(group) = last {
            changed |= *group != 0;
            *group = 0;
        }
    }
    changed
}

/// The roles of every instruction of a bundle, core by core.
struct Sites<'a> {
    roles: &'a [Vec<Role>],
}

impl Sites<'_> {
    /// The first instruction (core-major order) with a role satisfying `want`.
    fn first(
        &self,
        cores: &[Vec<Inst>],
        want: impl Fn(&Inst, Role) -> bool,
    ) -> Option<(usize, usize)> {
        for (c, insts) in cores.iter().enumerate() {
            for (i, inst) in insts.iter().enumerate() {
                if want(inst, self.roles[c][i]) {
                    return Some((c, i));
                }
            }
        }
        None
    }

    /// The first partial-sum addition (of a local crossbar's or a received partial sum).
    fn first_partial_sum(&self, cores: &[Vec<Inst>]) -> Option<(usize, usize)> {
        self.first(cores, |_, r| matches!(r, Role::LocalAdd | Role::RemoteAdd))
    }
}

/// `relu-on-partial-sum`: every `mvmul` applies ReLU to its partial sum.
fn relu_on_every_mvmul(cores: &mut [Vec<Inst>]) -> bool {
    let mut changed = false;
    for inst in cores.iter_mut().flatten() {
        if let Inst::Mvmul { relu, .. } = inst {
            if !*relu {
                *relu = true;
                changed = true;
            }
        }
    }
    changed
}

/// `dropped-partial-sum`: the first partial-sum addition becomes a `nop`.
fn drop_first_partial_sum(sites: &Sites, cores: &mut [Vec<Inst>]) -> bool {
    let Some((c, i)) = sites.first_partial_sum(cores) else {
        return false;
    };
    cores[c][i] = Inst::Nop;
    true
}

/// `wrong-send-size`: the first `send` moves 4 bytes fewer (or more).
fn wrong_send_size(sites: &Sites, cores: &mut [Vec<Inst>]) -> bool {
    let Some((c, i)) = sites.first(cores, |inst, _| matches!(inst, Inst::Send { .. })) else {
        return false;
    };
    if let Inst::Send { size, .. } = &mut cores[c][i] {
        *size = if *size > 4 { *size - 4 } else { *size + 4 };
    }
    true
}

/// `recv-wrong-core`: the first `recv` names the next core after its sender.
fn recv_from_wrong_core(sites: &Sites, cores: &mut [Vec<Inst>]) -> bool {
    let n = cores.len() as u32;
    let Some((c, i)) = sites.first(cores, |inst, _| matches!(inst, Inst::Recv { .. })) else {
        return false;
    };
    if let Inst::Recv { core, .. } = &mut cores[c][i] {
        // The next core after the sender that is not the sender (with two cores, that is the
        // receiver itself).
        *core = (*core + 1) % n.max(1);
        if *core as usize == c && n > 2 {
            *core = (*core + 1) % n;
        }
    }
    true
}

/// `wrong-setbw-before-reduction`: the last `setbw` before the first partial-sum addition sets
/// 16-bit elements.
fn narrow_setbw_before_reduction(sites: &Sites, cores: &mut [Vec<Inst>]) -> bool {
    let Some((c, i)) = sites.first_partial_sum(cores) else {
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

/// `transposed-cells`: the square part of the first non-symmetric crossbar is transposed.
fn transpose_one_crossbar(xbars: &mut CrossbarExport) -> bool {
    for xb in xbars.cores.values_mut() {
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
            let mut square = xb
                .cells
                .slice_mut(ndarray::s![array as usize, ..side, ..side]);
            if square == square.t() {
                continue;
            }
            let transposed = square.t().to_owned();
            square.assign(&transposed);
            return true;
        }
    }
    false
}

/// `missing-bias`: the bias constant is not loaded (only when the bias is not all zeros).
fn drop_bias_constant(case: &Case, manifest: &mut IoManifest) -> bool {
    let bias_nonzero = case
        .bias
        .as_ref()
        .is_some_and(|b| b.iter().any(|&v| v != 0));
    if !bias_nonzero || manifest.constants.is_empty() {
        return false;
    }
    manifest.constants.clear();
    true
}

/// `store-off-by-one`: the first `st` lands one int32 element (4 bytes) too far.
fn store_one_element_off(sites: &Sites, cores: &mut [Vec<Inst>]) -> bool {
    let is_store = |inst: &Inst, _| matches!(inst, Inst::Mem { op: MemOp::St, .. });
    let Some((c, i)) = sites.first(cores, is_store) else {
        return false;
    };
    if let Inst::Mem { offset, .. } = &mut cores[c][i] {
        *offset = Offset {
            select: offset.select | 1,
            value: offset.value + 4,
        };
    }
    true
}

/// `short-input-load`: the first `ld` of input data copies one byte too few.
fn shorten_input_load(sites: &Sites, cores: &mut [Vec<Inst>]) -> bool {
    let is_input_load = |inst: &Inst, r| {
        matches!(inst, Inst::Mem { op: MemOp::Ld, size, .. } if *size > 0) && r == Role::InputLoad
    };
    let Some((c, i)) = sites.first(cores, is_input_load) else {
        return false;
    };
    if let Inst::Mem { size, .. } = &mut cores[c][i] {
        *size -= 1;
    }
    true
}

/// `missing-relu`: no `vrelu` (they become `nop`s) and no `mvmul` ReLU flag.
fn remove_relu(cores: &mut [Vec<Inst>]) -> bool {
    let mut changed = false;
    for inst in cores.iter_mut().flatten() {
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
    changed
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
        for b in BugClass::every() {
            assert_eq!(BugClass::from_name(b.name()), Some(b));
        }
        assert_eq!(BugClass::every().count(), 18);
        assert_eq!(BugClass::from_name("no-such-bug"), None);
    }
}
