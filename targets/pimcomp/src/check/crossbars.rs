//! The crossbar export (AG → array group) and the group-index form of `mvmul`.
//!
//! PIMCOMP-NN writes `mvmul.group` as the number of crossbars its AG uses, which does not say
//! which AG it is (several AGs of a core share each count) and reads as the wrong shape
//! (`docs/pimcomp-numerics.md` §3). The side table names the AG (`source`), so each core's AGs
//! get local indices (in global AG order), the export holds each as one group — its matrix rows
//! `height_start..=height_end`, all `Cout` columns over `crossbar_num` arrays side by side — and
//! the program is rewritten to pimsim-nn's `array_group_map` form with `group` = that index.

use std::collections::BTreeMap;

use ndarray::{s, Array2, Array3, Axis};
use pimdiff_isa::xbar::{ArrayGroup, CoreCrossbars, CrossbarExport};
use rayon::prelude::*;

use super::error::PimcompError;
use super::table::{AgInfo, TInst, TOp};

/// Per core, the global AGs it multiplies, in local group order.
pub struct GroupAssignment {
    pub per_core: Vec<Vec<u32>>,
    /// `(core, global AG)` → local group index.
    pub local: BTreeMap<(u32, u32), u32>,
    /// The most arrays any core needs.
    pub arrays_per_core: u32,
}

impl GroupAssignment {
    pub fn new(
        table: &[Option<Vec<TInst>>],
        cores: usize,
        ags: &[AgInfo],
    ) -> Result<GroupAssignment, PimcompError> {
        let mut per_core = vec![Vec::new(); cores];
        for (c, list) in table.iter().enumerate().take(cores) {
            let mut used: Vec<u32> = list
                .iter()
                .flatten()
                .filter(|t| t.op == TOp::Mvmul)
                .map(|t| t.peer as u32)
                .collect();
            used.sort_unstable();
            used.dedup();
            if let Some(&bad) = used.iter().find(|&&a| a as usize >= ags.len()) {
                return Err(PimcompError::Model(format!(
                    "core {c}: MVMUL names AG {bad}, the table has {} AGs",
                    ags.len()
                )));
            }
            per_core[c] = used;
        }
        let mut local = BTreeMap::new();
        let mut arrays_per_core = 1;
        for (c, list) in per_core.iter().enumerate() {
            let mut arrays = 0u32;
            for (g, &a) in list.iter().enumerate() {
                local.insert((c as u32, a), g as u32);
                arrays += ags[a as usize].crossbar_num;
            }
            arrays_per_core = arrays_per_core.max(arrays);
        }
        Ok(GroupAssignment {
            per_core,
            local,
            arrays_per_core,
        })
    }

    /// `array_group_map`: per core, the crossbar count of each local group.
    pub fn group_map(&self, ags: &[AgInfo]) -> Vec<Vec<u32>> {
        self.per_core
            .iter()
            .map(|l| l.iter().map(|&a| ags[a as usize].crossbar_num).collect())
            .collect()
    }
}

/// The export: every AG's rows and columns of its node's matrix. `matrix_of(name)` gives a
/// weighted node's GEMM matrix. Cores are filled in parallel (each owns its cells).
pub fn export<'m>(
    assignment: &GroupAssignment,
    ags: &[AgInfo],
    array_rows: u32,
    array_cols: u32,
    matrix_of: impl Fn(&str) -> Option<&'m Array2<i8>> + Sync,
) -> Result<CrossbarExport, PimcompError> {
    let shape = (
        assignment.arrays_per_core as usize,
        array_rows as usize,
        array_cols as usize,
    );
    let cores: Vec<Result<(u32, CoreCrossbars), PimcompError>> = assignment
        .per_core
        .par_iter()
        .enumerate()
        .filter(|(_, list)| !list.is_empty())
        .map(|(c, list)| Ok((c as u32, core_crossbars(list, ags, shape, &matrix_of)?)))
        .collect();
    // The first bad core in order, whichever thread found it first.
    Ok(CrossbarExport {
        cores: cores.into_iter().collect::<Result<_, _>>()?,
    })
}

/// One core's cells and groups: its AGs `list`, in local group order.
fn core_crossbars<'m>(
    list: &[u32],
    ags: &[AgInfo],
    (arrays, ar, ac): (usize, usize, usize),
    matrix_of: &impl Fn(&str) -> Option<&'m Array2<i8>>,
) -> Result<CoreCrossbars, PimcompError> {
    let mut cells = Array3::<i32>::zeros((arrays, ar, ac));
    let mut groups = Vec::with_capacity(list.len());
    let mut next = 0u32;
    for (g, &a) in list.iter().enumerate() {
        let ag = &ags[a as usize];
        let bad = |what: String| PimcompError::Model(format!("AG {a} ({}): {what}", ag.node_name));
        let m = matrix_of(&ag.node_name)
            .ok_or_else(|| bad("not a CONV/FC node of node_list".into()))?;
        let (r0, r1) = (ag.height_start as usize, ag.height_end as usize + 1);
        if r0 >= r1 || r1 > m.nrows() || r1 - r0 > ar {
            return Err(bad(format!(
                "rows {r0}..{r1} do not fit a {}-row matrix and {ar}-row arrays",
                m.nrows()
            )));
        }
        let arrays: Vec<u32> = (next..next + ag.crossbar_num).collect();
        let mut cols = 0usize;
        for (k, xb) in ag.crossbar.iter().enumerate() {
            let (c0, c1) = (xb.width_start as usize, xb.width_end as usize + 1);
            if c0 != cols
                || c0 != k * ac
                || c1 <= c0
                || c1 - c0 > ac
                || c1 > m.ncols()
                || k >= arrays.len()
            {
                return Err(bad(format!(
                    "crossbar {k} columns {c0}..{c1} are not the next ≤ {ac} of {} columns",
                    m.ncols()
                )));
            }
            let mut array = cells.index_axis_mut(Axis(0), arrays[k] as usize);
            array
                .slice_mut(s![..r1 - r0, ..c1 - c0])
                .zip_mut_with(&m.slice(s![r0..r1, c0..c1]), |cell, &v| *cell = v as i32);
            cols = c1;
        }
        next += ag.crossbar_num;
        groups.push(ArrayGroup {
            group: g as u32,
            arrays,
            rows: (r1 - r0) as u32,
            cols: cols as u32,
        });
    }
    Ok(CoreCrossbars {
        mbiw: 8,
        cells,
        groups,
    })
}
