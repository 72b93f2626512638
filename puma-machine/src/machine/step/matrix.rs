//! `mvm`: matrix-vector multiplication on a core's MVMUs (ima.py `inner_product`).
//!
//! MVMU `m` multiplies its 128 input registers (`m · 128 ..`) by its matrix into its 128
//! output registers (`256 + m · 128 ..`), which it resets first. The simulator streams the
//! inputs bit by bit through 2-bit physical crossbars and sums in floats; on integer weights
//! the sum it rounds to is `Σ_i in[i] · w[i][j]`, which the machine computes exactly in
//! `i128`. An input register that holds nothing counts as 0, as the simulator's empty string
//! does. Afterwards, when `r1` and `r2` are both positive, the input registers are shifted
//! by the simulator's stride rule (ima_modules.py `xb_inMem.stride`).

use super::{CoreCx, Step};
use crate::arch::{MVMUS_PER_CORE, MVMU_DIM, XBAR_IN_START, XBAR_OUT_START};
use crate::machine::fault::FaultKind;
use crate::values::Mask;

const DIM: usize = MVMU_DIM as usize;

pub(super) fn mvm(cx: &mut CoreCx<'_>, mask: Mask, r1: u32, r2: u32) -> Result<Step, FaultKind> {
    for m in 0..MVMUS_PER_CORE {
        // In the simulator's inference mode every MVMU runs: `if self.de_xb_nma[i]` tests a
        // non-empty string ('000' or '100'), which is always true.
        if !(cx.options.quirks.mvm_runs_every_mvmu || mask.uses(m)) {
            continue;
        }
        multiply(cx, m)?;
        if r1 > 0 && r2 > 0 {
            stride(cx, m, r1, r2);
        }
    }
    Ok(Step::Done)
}

fn multiply(cx: &mut CoreCx<'_>, m: u32) -> Result<(), FaultKind> {
    let in_start = XBAR_IN_START + m * MVMU_DIM;
    let out_start = XBAR_OUT_START + m * MVMU_DIM;
    let inputs = cx.state.regs.slice(in_start, MVMU_DIM);
    let mut outputs = [0i64; DIM];
    if let Some(matrix) = &cx.mvmus[m as usize] {
        let x: Vec<i128> = inputs.iter().map(|v| v.unwrap_or(0) as i128).collect();
        for (j, out) in outputs.iter_mut().enumerate() {
            let Some(row) = matrix.output_row(j) else {
                continue;
            };
            let sum: i128 = row.iter().zip(&x).map(|(&w, &x)| w as i128 * x).sum();
            *out = i64::try_from(sum).map_err(|_| FaultKind::MvmOverflow {
                mvmu: m,
                output: j as u32,
            })?;
        }
        let unwritten = inputs
            .iter()
            .enumerate()
            .filter(|(i, v)| v.is_none() && matrix.input_is_live(*i))
            .count();
        cx.stats.unwritten_mvm_inputs += unwritten as u64;
    }
    let pc = cx.at.pc;
    for (j, &v) in outputs.iter().enumerate() {
        cx.stats.note_result(v);
        cx.state.regs.set(out_start + j as u32, Some(v), pc);
    }
    cx.stats.mvmu_runs += 1;
    Ok(())
}

/// The simulator's input stride: for `i < 128 / r2` (integer division) and `j < r2 - r1`,
/// input `i·r2 + j` ← input `i·r2 + j + r1`; every other input is emptied.
fn stride(cx: &mut CoreCx<'_>, m: u32, r1: u32, r2: u32) {
    let in_start = XBAR_IN_START + m * MVMU_DIM;
    let old = cx.state.regs.slice(in_start, MVMU_DIM);
    let mut new = vec![None; DIM];
    for i in 0..(MVMU_DIM / r2) {
        for j in 0..r2.saturating_sub(r1) {
            new[(i * r2 + j) as usize] = old[(i * r2 + j + r1) as usize];
        }
    }
    for (k, v) in new.into_iter().enumerate() {
        cx.state.regs.set(in_start + k as u32, v, cx.at.pc);
    }
}
