//! `mapping.svg`: which core and array holds which weight tile, and what the cores send each
//! other (see [`crate::report::chipmap`] for where the facts come from).
//!
//! One box per core (at most [`MAX_CORES_DRAWN`], in a grid), one smaller box per array group
//! inside it (at most [`MAX_GROUPS_DRAWN`] per core), labelled with the group, its arrays, its
//! tile or shape and the `mvmul`s that use it; problems are written in red (cells that are not
//! the tile's weights, a group the program's map sizes differently, a group no `mvmul` uses).
//! Every ordered pair of cores with messages gets an arrow labelled with the message count and
//! bytes, red when the `send` and `recv` sides disagree. Transfers that involve a core not
//! drawn are listed below the grid.

use plotters::prelude::*;

use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::report::chipmap::{ChipMap, CoreMap, GroupTile, Transfer};

/// Cores drawn, at most.
pub const MAX_CORES_DRAWN: usize = 16;
/// Groups drawn per core, at most.
pub const MAX_GROUPS_DRAWN: usize = 24;

const FONT: &str = "sans-serif";
const GROUP_W: i32 = 150;
const GROUP_H: i32 = 78;
/// Text lines a group box has room for.
const GROUP_LINES: usize = 5;
/// Group boxes per row inside a core box, at most.
const MAX_GROUPS_PER_ROW: i32 = 3;
/// The narrowest core box (room for its title).
const CORE_TITLE_W: i32 = 240;
const GAP_X: i32 = 190;
const GAP_Y: i32 = 120;
const TOP: i32 = 50;
const LINE: i32 = 14;
const WARN: RGBColor = RGBColor(200, 0, 0);

/// One line of text in a group box; `warning` lines are red.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    pub warning: bool,
}

/// The text lines of a group's box.
pub fn group_lines(g: &GroupTile, mvm: bool, grouped: bool) -> Vec<Line> {
    let plain = |text: String| Line {
        text,
        warning: false,
    };
    let warn = |text: String| Line {
        text,
        warning: true,
    };
    let arrays = match g.arrays.as_slice() {
        [] => format!("{} arrays (map)", g.map_arrays.unwrap_or(0)),
        [a] => format!("array {a}"),
        list => {
            let names: Vec<String> = list.iter().map(u32::to_string).collect();
            format!("arrays {}", names.join(","))
        }
    };
    let mut lines = vec![plain(format!("group {} · {arrays}", g.group))];
    let shape = g.shape.map(|(r, c)| format!("{r}×{c}"));
    match &g.tile {
        Some(t) => {
            lines.push(plain(t.channels_label(mvm, grouped)));
            let kernel = t.kernel.map(|(i, j)| format!("kernel ({i}, {j}) · "));
            lines.push(plain(format!(
                "{}{} · {} mvmul",
                kernel.unwrap_or_default(),
                shape.unwrap_or_default(),
                g.mvmuls
            )));
        }
        None => lines.push(plain(format!(
            "{} · {} mvmul",
            shape.unwrap_or_else(|| "no export".into()),
            g.mvmuls
        ))),
    }
    if g.cells_match == Some(false) {
        lines.push(warn("cells ≠ the tile's weights".into()));
    }
    if let (Some(n), false) = (g.map_arrays, g.arrays.is_empty()) {
        lines.push(warn(format!("program map: {n} arrays")));
    }
    if g.mvmuls == 0 {
        lines.push(warn("no mvmul uses it".into()));
    }
    lines
}

/// Sizes and positions of the boxes, the same for every core so the grid stays regular.
struct Layout {
    /// Cores drawn.
    shown: usize,
    grid_cols: i32,
    grid_rows: i32,
    /// Group boxes per row inside a core box.
    per_row: i32,
    box_w: i32,
    box_h: i32,
}

impl Layout {
    fn of(map: &ChipMap) -> Layout {
        let shown = map.cores.len().min(MAX_CORES_DRAWN);
        let grid_cols = (1..=4).find(|c| c * c >= shown).unwrap_or(4) as i32;
        let grid_rows = (shown as i32 + grid_cols - 1) / grid_cols;
        let cores = || map.cores.iter().take(shown);
        let max_groups = cores()
            .map(|c| c.groups.len().min(MAX_GROUPS_DRAWN) as i32)
            .max()
            .unwrap_or(0);
        let per_row = max_groups.clamp(1, MAX_GROUPS_PER_ROW);
        let group_rows = (max_groups + per_row - 1) / per_row;
        let overfull = cores().any(|c| c.groups.len() > MAX_GROUPS_DRAWN);
        let box_w = (per_row * GROUP_W + 20).max(CORE_TITLE_W);
        let box_h = 34 + group_rows * (GROUP_H + 6) + if overfull { LINE } else { 0 } + 4;
        Layout {
            shown,
            grid_cols,
            grid_rows,
            per_row,
            box_w,
            box_h,
        }
    }

    /// Top-left corner of core `i`'s box.
    fn origin(&self, i: usize) -> (i32, i32) {
        let (r, c) = (i as i32 / self.grid_cols, i as i32 % self.grid_cols);
        (
            GAP_X / 2 + c * (self.box_w + GAP_X),
            TOP + r * (self.box_h + GAP_Y),
        )
    }

    fn grid_bottom(&self) -> i32 {
        TOP + self.grid_rows * (self.box_h + GAP_Y) - GAP_Y
    }
}

/// The SVG text of a chip map; `mvm` and `grouped` choose the tile wording.
pub fn draw(map: &ChipMap, mvm: bool, grouped: bool) -> Result<String, String> {
    let layout = Layout::of(map);
    let notes = notes(map, layout.shown);
    let width = (layout.grid_cols * (layout.box_w + GAP_X)) as u32;
    let height = (layout.grid_bottom() + 20 + notes.len() as i32 * (LINE + 4)) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        let err = |e: &dyn std::fmt::Display| e.to_string();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let title = format!(
            "{} cores · {}",
            map.cores.len(),
            if map.tiles_inferred {
                "tiles from the in-repo compiler's layout"
            } else {
                "groups as exported (tiles not inferred)"
            }
        );
        root.draw(&Text::new(title, (10, 10), (FONT, 16)))
            .map_err(|e| err(&e))?;
        for (i, core) in map.cores.iter().take(layout.shown).enumerate() {
            draw_core(&root, &layout, layout.origin(i), core, mvm, grouped)?;
        }
        for t in map.transfers.iter().filter(|t| drawn(t, layout.shown)) {
            draw_arrow(&root, &layout, t)?;
        }
        let mut y = layout.grid_bottom() + 12;
        for note in notes {
            root.draw(&Text::new(
                note,
                (10, y),
                (FONT, 12).into_font().color(&WARN),
            ))
            .map_err(|e| err(&e))?;
            y += LINE + 4;
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

/// Whether both ends of a transfer are drawn cores.
fn drawn(t: &Transfer, shown: usize) -> bool {
    (t.from as usize) < shown && (t.to as usize) < shown && t.from != t.to
}

/// Lines under the grid: cores left out, crossbars of cores the program does not have,
/// transfers with an end that is not drawn.
fn notes(map: &ChipMap, shown: usize) -> Vec<String> {
    let mut notes = Vec::new();
    if map.cores.len() > shown {
        notes.push(format!("cores {}–{} not drawn", shown, map.cores.len() - 1));
    }
    for core in &map.stray_export_cores {
        notes.push(format!(
            "the crossbar export has core {core}; the program has {} cores",
            map.cores.len()
        ));
    }
    for t in map.transfers.iter().filter(|t| !drawn(t, shown)) {
        let end = |c: u32| {
            if (c as usize) < map.cores.len() {
                format!("core {c}")
            } else {
                format!("core {c} (no such core)")
            }
        };
        notes.push(format!("{} → {}: {}", end(t.from), end(t.to), t.label()));
    }
    notes
}

type Root<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn draw_core(
    root: &Root,
    layout: &Layout,
    (x, y): (i32, i32),
    core: &CoreMap,
    mvm: bool,
    grouped: bool,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let used: usize = core.groups.iter().map(|g| g.arrays.len()).sum();
    let outline = RGBColor(90, 90, 90).stroke_width(2);
    root.draw(&Rectangle::new(
        [(x, y), (x + layout.box_w, y + layout.box_h)],
        outline,
    ))
    .map_err(|e| err(&e))?;
    let title = format!(
        "core {} · {used} of {} arrays in groups",
        core.core, core.arrays_per_core
    );
    root.draw(&Text::new(title, (x + 8, y + 8), (FONT, 14)))
        .map_err(|e| err(&e))?;
    for (k, g) in core.groups.iter().take(MAX_GROUPS_DRAWN).enumerate() {
        let (r, c) = (k as i32 / layout.per_row, k as i32 % layout.per_row);
        let (gx, gy) = (x + 10 + c * GROUP_W, y + 30 + r * (GROUP_H + 6));
        let corners = [(gx, gy), (gx + GROUP_W - 6, gy + GROUP_H)];
        let lines = group_lines(g, mvm, grouped);
        let edge = if lines.iter().any(|l| l.warning) {
            WARN
        } else {
            RGBColor(150, 150, 150)
        };
        root.draw(&Rectangle::new(corners, tile_color(g).filled()))
            .map_err(|e| err(&e))?;
        root.draw(&Rectangle::new(corners, edge.stroke_width(1)))
            .map_err(|e| err(&e))?;
        for (i, (text, warning)) in fit_lines(&lines).into_iter().enumerate() {
            let color = if warning { WARN } else { BLACK };
            let style = (FONT, 11).into_font().color(&color);
            let at = (gx + 4, gy + 4 + i as i32 * LINE);
            root.draw(&Text::new(text, at, style))
                .map_err(|e| err(&e))?;
        }
    }
    if core.groups.len() > MAX_GROUPS_DRAWN {
        let more = format!("+{} more groups", core.groups.len() - MAX_GROUPS_DRAWN);
        let at = (x + 10, y + layout.box_h - LINE - 4);
        root.draw(&Text::new(more, at, (FONT, 11)))
            .map_err(|e| err(&e))?;
    }
    Ok(())
}

/// At most [`GROUP_LINES`] lines: the last one joins whatever does not fit.
fn fit_lines(lines: &[Line]) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = lines
        .iter()
        .take(GROUP_LINES - 1)
        .map(|l| (l.text.clone(), l.warning))
        .collect();
    let rest = &lines[out.len()..];
    if !rest.is_empty() {
        let text: Vec<&str> = rest.iter().map(|l| l.text.as_str()).collect();
        out.push((text.join("; "), rest.iter().any(|l| l.warning)));
    }
    out
}

/// A pale colour per output tile (per group when the tile is unknown), so the arrays that
/// feed one output tile look alike across cores.
fn tile_color(g: &GroupTile) -> RGBColor {
    const PALETTE: [RGBColor; 6] = [
        RGBColor(222, 235, 247),
        RGBColor(229, 245, 224),
        RGBColor(254, 230, 206),
        RGBColor(239, 237, 245),
        RGBColor(255, 247, 188),
        RGBColor(253, 224, 239),
    ];
    let key = g
        .tile
        .as_ref()
        .map_or(g.group as usize, |t| t.out_channels.start + t.conv_group);
    PALETTE[key % PALETTE.len()]
}

/// An arrow from the sender's box to the receiver's, offset to the right of its direction so
/// that the two directions between a pair of cores stay apart, labelled beside its middle.
fn draw_arrow(root: &Root, layout: &Layout, t: &Transfer) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let center = |i: u32| {
        let (x, y) = layout.origin(i as usize);
        (
            f64::from(x + layout.box_w / 2),
            f64::from(y + layout.box_h / 2),
        )
    };
    let ((ax, ay), (bx, by)) = (center(t.from), center(t.to));
    let (dx, dy) = (bx - ax, by - ay);
    let len = (dx * dx + dy * dy).sqrt().max(1.0);
    let (ux, uy) = (dx / len, dy / len);
    // Leave each box where the centre line crosses its border.
    let hw = f64::from(layout.box_w) / 2.0 + 4.0;
    let hh = f64::from(layout.box_h) / 2.0 + 4.0;
    let exit = (hw / ux.abs().max(1e-9)).min(hh / uy.abs().max(1e-9));
    let (nx, ny) = (-uy, ux);
    let at = |s: f64, side: f64| {
        (
            (ax + ux * s + nx * side).round() as i32,
            (ay + uy * s + ny * side).round() as i32,
        )
    };
    let (start, end) = (at(exit, 8.0), at(len - exit, 8.0));
    let color = if t.balanced() {
        RGBColor(40, 40, 40)
    } else {
        WARN
    };
    root.draw(&PathElement::new(vec![start, end], color.stroke_width(2)))
        .map_err(|e| err(&e))?;
    let head = vec![end, at(len - exit - 10.0, 13.0), at(len - exit - 10.0, 3.0)];
    root.draw(&Polygon::new(head, color.filled()))
        .map_err(|e| err(&e))?;
    // The label sits on the arrow's right-hand side, anchored away from the line.
    let h = match nx {
        v if v > 0.3 => HPos::Left,
        v if v < -0.3 => HPos::Right,
        _ => HPos::Center,
    };
    let v = match ny {
        v if v > 0.3 => VPos::Top,
        v if v < -0.3 => VPos::Bottom,
        _ => VPos::Center,
    };
    let style = (FONT, 11).into_font().color(&color).pos(Pos::new(h, v));
    let label = format!("{} → {}: {}", t.from, t.to, t.label());
    root.draw(&Text::new(label, at(len / 2.0, 14.0), style))
        .map_err(|e| err(&e))?;
    Ok(())
}
