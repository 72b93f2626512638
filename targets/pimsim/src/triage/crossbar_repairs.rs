//! Repairs of the crossbar export: the weights a compiler wrote into its arrays, rather than
//! its instructions.
//!
//! A compiler can get every instruction right and still place a weight wrongly: a tile
//! written transposed, a kernel position's tile on the array of another, one cell holding
//! the wrong weight. No instruction edit repairs that, and without this search such a
//! finding fell back to its shape (one finding per shape again). The catalog, tried on every
//! array that an array group uses, in a fixed order:
//!
//! 1. **transpose** the array's used square block (`cells[a, r, c] ↔ cells[a, c, r]`);
//! 2. **another array's tile**: the array holds what another array of the same core holds.
//!
//! Each edit is judged like an instruction edit (`judge::judge_bundle`): right on the case
//! and on every probe input. Nothing is read from the case, so the search works for any
//! compiler's layout. Single cells are not edited: "some weight is wrong somewhere" repairs
//! too many unrelated bugs on a small case (a padding off by one, which places another
//! kernel position's weight, would sign as a crossbar bug on some cases and as a store on
//! others).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ndarray::{Array2, Axis};
use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::Inst;

use super::judge::{judge_bundle, Effect, Failure, Limits};
use crate::check::RunConfig;

/// One edit of a core's crossbar cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CellEdit {
    /// Transpose the `side × side` block at the array's origin.
    Transpose { side: usize },
    /// Replace the array's cells with array `from`'s.
    CopyFrom { from: u32 },
}

/// A crossbar edit that repairs the failing output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CellRepair {
    pub core: u32,
    pub array: u32,
    pub edit: CellEdit,
}

impl CellRepair {
    /// The cause it names, as used in signatures (`crossbar cells transposed`, …).
    pub(crate) fn label(&self) -> &'static str {
        match self.edit {
            CellEdit::Transpose { .. } => "crossbar cells transposed",
            CellEdit::CopyFrom { .. } => "crossbar tile on the wrong array",
        }
    }

    /// The edit in words, for a suspect's `fix`.
    pub(crate) fn fix(&self) -> String {
        let (c, a) = (self.core, self.array);
        match self.edit {
            CellEdit::Transpose { side } => {
                format!("xbar core {c} array {a}: transpose cells [0..{side}, 0..{side}]")
            }
            CellEdit::CopyFrom { from } => {
                format!("xbar core {c} array {a}: the cells of array {from}")
            }
        }
    }

    /// The first `mvmul` of the core whose group reads the array, as `(core, pc)`.
    pub(crate) fn reader(&self, bundle: &Bundle) -> Option<(u32, u32)> {
        let xb = bundle.xbars.cores.get(&self.core)?;
        let groups: Vec<u32> = xb
            .groups
            .iter()
            .filter(|g| g.arrays.contains(&self.array))
            .map(|g| g.group)
            .collect();
        let insts = bundle.program.cores.get(self.core as usize)?;
        insts.iter().enumerate().find_map(|(pc, inst)| match inst {
            Inst::Mvmul { group, .. } if groups.contains(group) => Some((self.core, pc as u32)),
            _ => None,
        })
    }
}

/// Every candidate edit of `bundle`'s export, in search order.
fn candidates(bundle: &Bundle) -> Vec<CellRepair> {
    let mut transposes = Vec::new();
    let mut copies = Vec::new();
    for (&core, xb) in &bundle.xbars.cores {
        let (_, array_rows, array_cols) = xb.cells.dim();
        // The used block of each array: rows of its group, columns of its slice.
        let mut used: Vec<(u32, usize, usize)> = Vec::new();
        for g in &xb.groups {
            for (j, &a) in g.arrays.iter().enumerate() {
                let cols = (g.cols as usize)
                    .saturating_sub(j * array_cols)
                    .min(array_cols);
                let rows = (g.rows as usize).min(array_rows);
                if (a as usize) < xb.cells.dim().0 && !used.iter().any(|u| u.0 == a) {
                    used.push((a, rows, cols));
                }
            }
        }
        for &(a, rows, cols) in &used {
            let side = rows.min(cols);
            if side >= 2 {
                transposes.push(CellRepair {
                    core,
                    array: a,
                    edit: CellEdit::Transpose { side },
                });
            }
            for &(b, _, _) in &used {
                if b != a {
                    copies.push(CellRepair {
                        core,
                        array: a,
                        edit: CellEdit::CopyFrom { from: b },
                    });
                }
            }
        }
    }
    transposes.into_iter().chain(copies).collect()
}

/// Applies `r` to `work`'s export in place and returns the edited array's cells as they
/// were, for [`undo`]; `None` (and `work` unchanged) when the edit changes nothing.
fn apply(work: &mut Bundle, r: &CellRepair) -> Option<Array2<i32>> {
    let xb = work.xbars.cores.get_mut(&r.core)?;
    let a = r.array as usize;
    let before = xb.cells.index_axis(Axis(0), a).to_owned();
    match r.edit {
        CellEdit::Transpose { side } => {
            let mut block = xb.cells.slice_mut(ndarray::s![a, ..side, ..side]);
            let t = block.t().to_owned();
            block.assign(&t);
        }
        CellEdit::CopyFrom { from } => {
            let src = xb.cells.index_axis(Axis(0), from as usize).to_owned();
            xb.cells.index_axis_mut(Axis(0), a).assign(&src);
        }
    }
    if xb.cells.index_axis(Axis(0), a) == before {
        return None;
    }
    Some(before)
}

/// Restores the array that [`apply`] edited.
fn undo(work: &mut Bundle, r: &CellRepair, before: &Array2<i32>) {
    if let Some(xb) = work.xbars.cores.get_mut(&r.core) {
        xb.cells
            .index_axis_mut(Axis(0), r.array as usize)
            .assign(before);
    }
}

/// Searches the crossbar catalog on a mismatch; returns the first repair, the runs spent and
/// whether the limits ended the search early.
pub(crate) fn search(
    failure: &Failure,
    cfg: &RunConfig,
    limits: &Limits,
    cancel: &AtomicBool,
) -> (Option<CellRepair>, u64, bool) {
    if !matches!(failure.outcome, crate::check::outcome::Outcome::Mismatch(_)) {
        return (None, 0, false);
    }
    let mut runs = 0;
    // One copy of the bundle, edited and restored per candidate (as instruction edits are).
    let mut work = failure.bundle.clone();
    for r in candidates(failure.bundle) {
        if runs >= limits.max_runs
            || limits.deadline.is_some_and(|d| Instant::now() >= d)
            || cancel.load(Ordering::Relaxed)
        {
            return (None, runs, true);
        }
        let Some(before) = apply(&mut work, &r) else {
            continue;
        };
        runs += 1;
        let effect = judge_bundle(failure, &work, cfg);
        undo(&mut work, &r, &before);
        if effect == Effect::Repaired {
            return (Some(r), runs, false);
        }
    }
    (None, runs, false)
}
