//! Stage 2, crossbar mapping: the dependency table placed on cores and arrays, and the
//! reduction plan that follows from it.
//!
//! Placement walks the classes (output tiles) in order and fills cores one after another:
//! a class goes whole into the current core when it fits; when it does not but it would fit
//! an empty core, and leaving the current core's remaining arrays unused still leaves room
//! for every crossbar not yet placed, it starts on the next core; otherwise it is split
//! across consecutive cores. So the crossbars of one class stay on one core whenever the
//! capacity allows, and a case that fits at all is always placed.
//!
//! Each placed crossbar is one array and one array group of its own (group number = array
//! index on the core); a group of one array keeps the export and the `array_group_map`
//! trivially consistent.
//!
//! Reduction: the *owner* of a class is the first (lowest) core holding any of its
//! crossbars; every other core holding some (a *contributor*) sends its partial sums to the
//! owner, which adds them. A class without any crossbar left (all skipped) is owned by the
//! core the fill had reached, and produces bias (or zero) alone.

use crate::tiling::Spatial;
use crate::{CompileError, Unsupported};

/// Where one crossbar lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub xbar: usize,
    pub core: usize,
    /// Array index on the core, which is also the group number.
    pub array: usize,
}

/// One core's share of a class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    pub core: usize,
    /// Indices into [`Mapping::placements`], in crossbar order.
    pub placements: Vec<usize>,
}

/// How one class is computed and reduced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reduction {
    pub owner: usize,
    /// The cores holding crossbars of the class, ascending; the owner's part (if any) first.
    pub parts: Vec<Part>,
    /// Total crossbars of the class over all cores.
    pub total: usize,
}

/// The mapping of a Spatial IR onto the chip.
#[derive(Clone, Debug)]
pub struct Mapping {
    pub cores: usize,
    /// Placed crossbars, in crossbar order.
    pub placements: Vec<Placement>,
    /// Arrays used on each core.
    pub arrays_used: Vec<usize>,
    /// One per class.
    pub reductions: Vec<Reduction>,
}

/// Place every crossbar that is not skipped; `Unsupported` when the chip has too few arrays.
pub fn map(
    spatial: &Spatial,
    cores: usize,
    arrays_per_core: usize,
) -> Result<Mapping, CompileError> {
    let kept = |r: &std::ops::Range<usize>| {
        spatial.xbars[r.clone()]
            .iter()
            .filter(|x| x.skip.is_none())
            .count()
    };
    let needed: usize = spatial.class_xbars.iter().map(kept).sum();
    let available = cores.saturating_mul(arrays_per_core);
    if needed > available {
        return Err(CompileError::Unsupported(Unsupported::NotEnoughArrays {
            needed,
            available,
        }));
    }
    let mut placements = Vec::with_capacity(needed);
    let mut arrays_used = vec![0usize; cores];
    let mut reductions = Vec::with_capacity(spatial.classes.len());
    let mut core = 0usize;
    let mut remaining = needed;
    for range in &spatial.class_xbars {
        let size = kept(range);
        let free_here = arrays_per_core - arrays_used[core];
        if size > free_here && size <= arrays_per_core && core + 1 < cores {
            let capacity_after = (cores - core - 1) * arrays_per_core;
            if capacity_after >= remaining {
                core += 1;
            }
        }
        let mut parts: Vec<Part> = Vec::new();
        for xi in range.clone().filter(|&xi| spatial.xbars[xi].skip.is_none()) {
            while arrays_used[core] == arrays_per_core {
                core += 1; // cannot run past the end: `needed <= available`
            }
            let array = arrays_used[core];
            arrays_used[core] += 1;
            if parts.last().map(|p| p.core) != Some(core) {
                parts.push(Part {
                    core,
                    placements: Vec::new(),
                });
            }
            parts
                .last_mut()
                .expect("just pushed")
                .placements
                .push(placements.len());
            placements.push(Placement {
                xbar: xi,
                core,
                array,
            });
        }
        remaining -= size;
        // An empty class is owned by the core the fill has reached (never past the last core).
        let owner = parts.first().map_or(core.min(cores - 1), |p| p.core);
        reductions.push(Reduction {
            owner,
            parts,
            total: size,
        });
        if arrays_used[core] == arrays_per_core && core + 1 < cores {
            core += 1;
        }
    }
    Ok(Mapping {
        cores,
        placements,
        arrays_used,
        reductions,
    })
}
