//! Stage 6, the crossbar export and the program's configuration: before the weights are
//! forgotten, every placed crossbar's matrix is written into its array's cells, with one
//! array group per array (the group number is the array index), and the same groups are
//! stated as pimsim-nn's `array_group_map`.

use std::collections::BTreeMap;

use ndarray::Array3;
use pimdiff_isa::{ArrayGroup, CoreCrossbars, CrossbarExport, GroupSpec};
use pimdiff_oracle::Case;

use crate::mapping::Mapping;
use crate::tiling::{flat_weights, weight_at, Spatial};

/// The export of every core that holds a crossbar.
pub fn export(case: &Case, spatial: &Spatial, mapping: &Mapping) -> CrossbarExport {
    let arch = &case.spec.arch;
    let p = &spatial.problem;
    let weights = flat_weights(case);
    let mut cores: BTreeMap<u32, CoreCrossbars> = BTreeMap::new();
    for pl in &mapping.placements {
        let x = spatial.xbars[pl.xbar];
        let class = spatial.classes[x.class];
        let core = cores
            .entry(pl.core as u32)
            .or_insert_with(|| CoreCrossbars {
                mbiw: 8,
                cells: Array3::zeros((arch.arrays_per_core, arch.array_rows, arch.array_cols)),
                groups: Vec::new(),
            });
        let ci0 = x.c0 - class.group * p.cg;
        for r in 0..x.rows {
            for col in 0..class.width {
                core.cells[[pl.array, r, col]] =
                    weight_at(p, &weights, class.k0 + col, ci0 + r, x.i, x.j) as i32;
            }
        }
        core.groups.push(ArrayGroup {
            group: pl.array as u32,
            arrays: vec![pl.array as u32],
            rows: x.rows as u32,
            cols: class.width as u32,
        });
    }
    CrossbarExport { cores }
}

/// `array_group_map`: every core (idle ones too) lists one array per group.
pub fn group_map(mapping: &Mapping) -> GroupSpec {
    GroupSpec::ArrayGroupMap(mapping.arrays_used.iter().map(|&n| vec![1u32; n]).collect())
}
