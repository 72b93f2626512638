//! Where a bundle put the weights and what its cores send each other: the data behind
//! `mapping.svg`.
//!
//! Every array group of every core comes from the crossbar export, checked against the
//! program's `array_group_map` (a group the map sizes differently is flagged). Which weight
//! tile a group holds is not in the bundle; when the export's group table is exactly the one
//! the in-repo compiler's tiling and mapping give for the case (under some combination of its
//! optimizations), each group is labelled with its tile — conv2d group, input channels, output
//! channels, kernel position — and its cells are compared with the case's weights for that
//! tile, so a corrupted crossbar shows as such. Other compilers' groups are labelled by group.
//!
//! NoC transfers are read from the program: the k-th `send` from core A to core B pairs with
//! the k-th `recv` on B naming A (docs/isa.md), so per ordered pair of cores the counts and
//! byte totals of both sides are known before running, and a pair whose sides disagree is
//! visible.

use std::collections::BTreeMap;
use std::ops::Range;

use pimdiff_compiler::{mapping, tiling, CompileOptions};
use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::{ArrayGroup, CrossbarExport, GroupSpec, Inst};
use pimdiff_oracle::{Case, Op};

/// Everything `mapping.svg` shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChipMap {
    /// Every core of the program, idle ones included, in order.
    pub cores: Vec<CoreMap>,
    /// One entry per ordered pair of cores with a `send` or a `recv` between them.
    pub transfers: Vec<Transfer>,
    /// Whether the tiles come from the in-repo compiler's layout (else groups are unlabelled).
    pub tiles_inferred: bool,
    /// Cores the crossbar export has but the program does not.
    pub stray_export_cores: Vec<u32>,
}

/// One core's array groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreMap {
    pub core: u32,
    /// Arrays the core has (the case's architecture).
    pub arrays_per_core: usize,
    pub groups: Vec<GroupTile>,
}

/// One array group and what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupTile {
    pub group: u32,
    /// The arrays of the group (empty when the group is known only from the program's map).
    pub arrays: Vec<u32>,
    /// Logical shape from the export (`None` when the group is known only from the map).
    pub shape: Option<(u32, u32)>,
    /// Arrays the program's `array_group_map` gives the group, when it disagrees with the
    /// export (or when there is no export for the group).
    pub map_arrays: Option<u32>,
    /// The weight tile, when inferred.
    pub tile: Option<Tile>,
    /// Whether the cells equal the case's weights for the tile (known only with a tile).
    pub cells_match: Option<bool>,
    /// `mvmul` instructions of the core that name the group.
    pub mvmuls: usize,
}

/// A weight tile of the channel-wise layout: rows are input channels, columns output channels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tile {
    /// The conv2d group (0 for an MVM).
    pub conv_group: usize,
    /// Global input channel (or feature) indices of the rows.
    pub in_channels: Range<usize>,
    /// Global output channel (or feature) indices of the columns.
    pub out_channels: Range<usize>,
    /// Kernel position `(i, j)`; `None` for an MVM.
    pub kernel: Option<(usize, usize)>,
}

/// Messages from one core to another.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transfer {
    pub from: u32,
    pub to: u32,
    /// `send`s on `from` naming `to`, and their bytes.
    pub sends: usize,
    pub send_bytes: u64,
    /// `recv`s on `to` naming `from`, and their bytes.
    pub recvs: usize,
    pub recv_bytes: u64,
}

impl Transfer {
    /// Whether both sides agree on the count and the sizes, pair by pair.
    pub fn balanced(&self) -> bool {
        self.sends == self.recvs && self.send_bytes == self.recv_bytes
    }

    /// `2 msgs, 128 B`, or `3× send, 192 B ≠ 2× recv, 128 B` when the sides disagree.
    pub fn label(&self) -> String {
        if self.balanced() {
            let s = if self.sends == 1 { "" } else { "s" };
            format!("{} msg{s}, {} B", self.sends, self.send_bytes)
        } else {
            format!(
                "{}× send, {} B ≠ {}× recv, {} B",
                self.sends, self.send_bytes, self.recvs, self.recv_bytes
            )
        }
    }
}

impl Tile {
    /// `ci 0–3 → co 4–5`, with `g1 · ` in front for grouped convolutions.
    pub fn channels_label(&self, mvm: bool, grouped: bool) -> String {
        let (i, o) = if mvm { ("in", "out") } else { ("ci", "co") };
        let g = if grouped {
            format!("g{} · ", self.conv_group)
        } else {
            String::new()
        };
        format!(
            "{g}{i} {} → {o} {}",
            range_text(&self.in_channels),
            range_text(&self.out_channels)
        )
    }
}

/// `3` or `0–15`.
fn range_text(r: &Range<usize>) -> String {
    if r.end == r.start + 1 {
        r.start.to_string()
    } else {
        format!("{}–{}", r.start, r.end.saturating_sub(1))
    }
}

/// The chip map of a bundle compiled for `case`.
pub fn chip_map(case: &Case, bundle: &Bundle) -> ChipMap {
    let program = &bundle.program;
    let map = match &program.groups {
        GroupSpec::ArrayGroupMap(m) => Some(m),
        _ => None,
    };
    let inferred = infer_tiles(case, &bundle.xbars);
    let mut cores = Vec::with_capacity(program.cores.len());
    for (core, insts) in program.cores.iter().enumerate() {
        let core = core as u32;
        let mut mvmuls: BTreeMap<u32, usize> = BTreeMap::new();
        if !matches!(program.groups, GroupSpec::ArrayCount) {
            for inst in insts {
                if let Inst::Mvmul { group, .. } = inst {
                    *mvmuls.entry(*group).or_default() += 1;
                }
            }
        }
        let map_sizes = map.and_then(|m| m.get(core as usize));
        let mut groups = Vec::new();
        if let Some(x) = bundle.xbars.cores.get(&core) {
            for g in &x.groups {
                let key = (core, g.group);
                let map_arrays = map_sizes
                    .and_then(|s| s.get(g.group as usize))
                    .copied()
                    .filter(|&n| n as usize != g.arrays.len());
                let (tile, cells_match) = match inferred.as_ref().and_then(|t| t.get(&key)) {
                    Some((tile, ok)) => (Some(tile.clone()), Some(*ok)),
                    None => (None, None),
                };
                groups.push(GroupTile {
                    group: g.group,
                    arrays: g.arrays.clone(),
                    shape: Some((g.rows, g.cols)),
                    map_arrays,
                    tile,
                    cells_match,
                    mvmuls: mvmuls.get(&g.group).copied().unwrap_or(0),
                });
            }
        } else if let Some(sizes) = map_sizes {
            for (g, &n) in sizes.iter().enumerate() {
                groups.push(GroupTile {
                    group: g as u32,
                    arrays: Vec::new(),
                    shape: None,
                    map_arrays: Some(n),
                    tile: None,
                    cells_match: None,
                    mvmuls: mvmuls.get(&(g as u32)).copied().unwrap_or(0),
                });
            }
        }
        cores.push(CoreMap {
            core,
            arrays_per_core: case.spec.arch.arrays_per_core,
            groups,
        });
    }
    let stray_export_cores = bundle
        .xbars
        .cores
        .keys()
        .copied()
        .filter(|&c| c as usize >= program.cores.len())
        .collect();
    ChipMap {
        cores,
        transfers: transfers(&program.cores),
        tiles_inferred: inferred.is_some(),
        stray_export_cores,
    }
}

/// Per ordered pair of cores, the `send`s and `recv`s between them, sorted by `(from, to)`.
pub fn transfers(cores: &[Vec<Inst>]) -> Vec<Transfer> {
    let mut pairs: BTreeMap<(u32, u32), Transfer> = BTreeMap::new();
    for (core, insts) in cores.iter().enumerate() {
        let core = core as u32;
        for inst in insts {
            let (key, sent, size) = match *inst {
                Inst::Send { core: to, size, .. } => ((core, to), true, size),
                Inst::Recv {
                    core: from, size, ..
                } => ((from, core), false, size),
                _ => continue,
            };
            let t = pairs.entry(key).or_insert_with(|| Transfer {
                from: key.0,
                to: key.1,
                ..Transfer::default()
            });
            if sent {
                t.sends += 1;
                t.send_bytes += u64::from(size);
            } else {
                t.recvs += 1;
                t.recv_bytes += u64::from(size);
            }
        }
    }
    pairs.into_values().collect()
}

/// `(core, group)` → the tile the in-repo compiler's layout puts there, and whether the
/// export's cells hold exactly that tile's weights. `None` unless the export's group table is
/// the layout's for some combination of the compiler's optimizations.
///
/// Only the compiler's tiling and mapping are used (they decide which crossbar goes where);
/// the expected cells are read from the case's weights here, without building an export.
fn infer_tiles(case: &Case, xbars: &CrossbarExport) -> Option<BTreeMap<(u32, u32), (Tile, bool)>> {
    let arch = &case.spec.arch;
    let base = CompileOptions::default();
    let combos = [(true, true), (true, false), (false, true), (false, false)];
    for (skip_padding, weight_skipping) in combos {
        let mut options = base;
        options.skip_padding = skip_padding;
        options.weight_skipping = weight_skipping;
        let Ok(spatial) = tiling::tile(case, &options) else {
            continue;
        };
        let Ok(mapping) = mapping::map(&spatial, arch.cores, arch.arrays_per_core) else {
            continue;
        };
        let layout = layout_groups(case, &spatial, &mapping);
        if !same_groups(&layout, xbars) {
            continue;
        }
        let tiles = layout
            .into_iter()
            .map(|(key, (tile, _))| {
                let ok = xbars
                    .cores
                    .get(&key.0)
                    .is_some_and(|x| cells_hold(case, &tile, &x.cells, key.1 as usize));
                (key, (tile, ok))
            })
            .collect();
        return Some(tiles);
    }
    None
}

/// The layout's groups: one array per crossbar, the group number being the array index.
fn layout_groups(
    case: &Case,
    spatial: &tiling::Spatial,
    mapping: &mapping::Mapping,
) -> BTreeMap<(u32, u32), (Tile, ArrayGroup)> {
    let mvm = matches!(case.spec.op, Op::Mvm(_));
    let mut groups = BTreeMap::new();
    for pl in &mapping.placements {
        let x = spatial.xbars[pl.xbar];
        let class = spatial.classes[x.class];
        let tile = Tile {
            conv_group: class.group,
            in_channels: x.c0..x.c0 + x.rows,
            out_channels: class.k0..class.k0 + class.width,
            kernel: (!mvm).then_some((x.i, x.j)),
        };
        let group = ArrayGroup {
            group: pl.array as u32,
            arrays: vec![pl.array as u32],
            rows: x.rows as u32,
            cols: class.width as u32,
        };
        groups.insert((pl.core as u32, pl.array as u32), (tile, group));
    }
    groups
}

/// Whether the export has exactly the layout's cores and groups (cells aside).
fn same_groups(layout: &BTreeMap<(u32, u32), (Tile, ArrayGroup)>, xbars: &CrossbarExport) -> bool {
    let exported: usize = xbars.cores.values().map(|x| x.groups.len()).sum();
    exported == layout.len()
        && xbars.cores.iter().all(|(&core, x)| {
            x.groups
                .iter()
                .all(|g| layout.get(&(core, g.group)).is_some_and(|(_, l)| l == g))
        })
}

/// Whether array `array` of `cells` holds the tile's weights: cell `[array, r, c]` is the
/// weight from input channel `in_channels.start + r` to output channel `out_channels.start + c`.
fn cells_hold(case: &Case, tile: &Tile, cells: &ndarray::Array3<i32>, array: usize) -> bool {
    let Some(cells) = (array < cells.shape()[0]).then(|| cells.index_axis(ndarray::Axis(0), array))
    else {
        return false;
    };
    let (rows, cols) = (tile.in_channels.len(), tile.out_channels.len());
    if rows > cells.shape()[0] || cols > cells.shape()[1] {
        return false;
    }
    let per_group = match &case.spec.op {
        Op::Conv2d(c) => c.in_channels / c.groups.max(1),
        Op::Mvm(m) => m.in_features,
    };
    let first_in = tile.conv_group * per_group;
    (0..rows).all(|r| {
        (0..cols).all(|c| {
            let (k, ci) = (
                tile.out_channels.start + c,
                tile.in_channels.start + r - first_in,
            );
            let weight = match tile.kernel {
                Some((i, j)) => case.weight.get([k, ci, i, j].as_slice()),
                None => case.weight.get([k, ci].as_slice()),
            };
            weight.is_some_and(|&w| i32::from(w) == cells[[r, c]])
        })
    })
}
