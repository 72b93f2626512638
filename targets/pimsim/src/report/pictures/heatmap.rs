//! `diff.svg`: where a mismatch is, as a heatmap of machine − oracle.
//!
//! A conv2d output gets one panel per batch entry that differs (at most [`MAX_PANELS`]):
//! output channels up, output pixels across (row-major, `oh·OW + ow`). An MVM output gets one
//! panel: output features up, batch entries across. The colour is machine − oracle on a
//! diverging scale, blue below zero, white at zero, red above, symmetric around zero; a colour
//! bar on the right gives the scale. Axes larger than [`MAX_BINS_X`] / [`MAX_BINS_Y`] cells are
//! binned, each bin showing its largest difference by magnitude, so the picture stays small
//! for any output.

use ndarray::ArrayD;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

/// Batch entries drawn, at most.
pub const MAX_PANELS: usize = 4;
/// Cells across a panel, at most (pixels or batch entries are binned beyond).
pub const MAX_BINS_X: usize = 256;
/// Cells up a panel, at most (channels are binned beyond).
pub const MAX_BINS_Y: usize = 64;
/// Steps of the colour bar.
pub const COLORBAR_STEPS: usize = 21;

const WIDTH: u32 = 960;
const BAR_WIDTH: u32 = 130;
const FONT: &str = "sans-serif";

/// One heatmap: `values[y * cols + x]` is machine − oracle of cell `(x, y)` after binning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Panel {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub cols: usize,
    pub rows: usize,
    /// Elements per bin along each axis (1 when not binned).
    pub x_bin: usize,
    pub y_bin: usize,
    pub values: Vec<i64>,
}

/// The panels of a mismatch; empty when the shapes differ or nothing differs.
pub fn panels(oracle: &ArrayD<i32>, machine: &ArrayD<i32>) -> Vec<Panel> {
    if oracle.shape() != machine.shape() {
        return Vec::new();
    }
    let diff = |i: &[usize]| i64::from(machine[i]) - i64::from(oracle[i]);
    match *oracle.shape() {
        [n, k, oh, ow] => (0..n)
            .map(|b| {
                let count = (0..k * oh * ow)
                    .filter(|&e| diff(&[b, e / (oh * ow), e / ow % oh, e % ow]) != 0)
                    .count();
                (b, count)
            })
            .filter(|&(_, count)| count > 0)
            .take(MAX_PANELS)
            .map(|(b, count)| {
                let title = format!(
                    "batch entry {b} of {n}: {count} of {} elements differ",
                    k * oh * ow
                );
                let x_desc = format!("output pixel (oh·{ow} + ow, {oh}×{ow} pixels)");
                binned(title, x_desc, "output channel", oh * ow, k, &|x, y| {
                    diff(&[b, y, x / ow, x % ow])
                })
            })
            .collect(),
        [n, f] => {
            let count = machine.iter().zip(oracle).filter(|(m, o)| m != o).count();
            let title = format!("{count} of {} elements differ", n * f);
            vec![binned(
                title,
                "batch entry".to_string(),
                "output feature",
                n,
                f,
                &|x, y| diff(&[x, y]),
            )]
        }
        _ => Vec::new(),
    }
}

/// A panel of `cols × rows` elements, binned to at most [`MAX_BINS_X`] × [`MAX_BINS_Y`].
fn binned(
    title: String,
    x_desc: String,
    y_desc: &str,
    cols: usize,
    rows: usize,
    value: &dyn Fn(usize, usize) -> i64,
) -> Panel {
    let x_bin = cols.div_ceil(MAX_BINS_X).max(1);
    let y_bin = rows.div_ceil(MAX_BINS_Y).max(1);
    let (bx, by) = (cols.div_ceil(x_bin), rows.div_ceil(y_bin));
    let mut values = vec![0i64; bx * by];
    for y in 0..rows {
        for x in 0..cols {
            let v = value(x, y);
            let cell = &mut values[(y / y_bin) * bx + x / x_bin];
            if v.unsigned_abs() > cell.unsigned_abs() {
                *cell = v;
            }
        }
    }
    let mut x_desc = x_desc;
    if x_bin > 1 {
        x_desc.push_str(&format!(", bins of {x_bin}"));
    }
    let mut y_desc = y_desc.to_string();
    if y_bin > 1 {
        y_desc.push_str(&format!(", bins of {y_bin}"));
    }
    Panel {
        title,
        x_desc,
        y_desc,
        cols: bx,
        rows: by,
        x_bin,
        y_bin,
        values,
    }
}

/// The diverging colour of `v` on a scale of ±`max`: white at 0 and only there (the smallest
/// difference still gets a visible tint, so no differing cell looks equal).
pub fn color(v: i64, max: u64) -> RGBColor {
    if v == 0 || max == 0 {
        return WHITE;
    }
    let t = 0.15 + 0.85 * (v.unsigned_abs() as f64 / max as f64).min(1.0);
    let (r, g, b) = if v > 0 {
        (178.0, 24.0, 43.0)
    } else {
        (33.0, 102.0, 172.0)
    };
    let mix = |c: f64| (255.0 + (c - 255.0) * t).round() as u8;
    RGBColor(mix(r), mix(g), mix(b))
}

/// The SVG text of the panels.
pub fn draw(panels: &[Panel]) -> Result<String, String> {
    let max = panels
        .iter()
        .flat_map(|p| p.values.iter())
        .map(|v| v.unsigned_abs())
        .max()
        .unwrap_or(0);
    let rows = panels.iter().map(|p| p.rows).max().unwrap_or(1);
    let panel_height = 110 + 14 * rows.clamp(6, 48) as u32;
    let height = panel_height * panels.len().max(1) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (main, bar) = root.split_horizontally(WIDTH - BAR_WIDTH);
        for (area, panel) in main.split_evenly((panels.len(), 1)).iter().zip(panels) {
            draw_panel(area, panel, max)?;
        }
        draw_colorbar(&bar, max)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn draw_panel(area: &Area, panel: &Panel, max: u64) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let (cols, rows) = (panel.cols as i32, panel.rows as i32);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, 16))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(
            (0..cols - 1).into_segmented(),
            (0..rows - 1).into_segmented(),
        )
        .map_err(|e| err(&e))?;
    let (x_bin, y_bin) = (panel.x_bin as i32, panel.y_bin as i32);
    let x_fmt = move |v: &SegmentValue<i32>| tick(v, x_bin);
    let y_fmt = move |v: &SegmentValue<i32>| tick(v, y_bin);
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(cols.min(16) as usize)
        .y_labels(rows.min(16) as usize)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .x_desc(panel.x_desc.as_str())
        .y_desc(panel.y_desc.as_str())
        .label_style((FONT, 11))
        .axis_desc_style((FONT, 13))
        .draw()
        .map_err(|e| err(&e))?;
    let cells = (0..rows).flat_map(|y| (0..cols).map(move |x| (x, y)));
    chart
        .draw_series(cells.map(|(x, y)| {
            let v = panel.values[(y * cols + x) as usize];
            Rectangle::new(
                [
                    (SegmentValue::Exact(x), SegmentValue::Exact(y)),
                    (SegmentValue::Exact(x + 1), SegmentValue::Exact(y + 1)),
                ],
                color(v, max).filled(),
            )
        }))
        .map_err(|e| err(&e))?;
    // The extent of the panel, so that white (equal) cells at its edge still show.
    let frame = [
        (SegmentValue::Exact(0), SegmentValue::Exact(0)),
        (SegmentValue::Exact(cols), SegmentValue::Exact(rows)),
    ];
    chart
        .draw_series(std::iter::once(Rectangle::new(
            frame,
            RGBColor(190, 190, 190),
        )))
        .map_err(|e| err(&e))?;
    Ok(())
}

/// A tick label: the first element of the bin under it.
fn tick(v: &SegmentValue<i32>, bin: i32) -> String {
    match v {
        SegmentValue::Exact(b) | SegmentValue::CenterOf(b) => (b * bin).to_string(),
        SegmentValue::Last => String::new(),
    }
}

fn draw_colorbar(area: &Area, max: u64) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let (_, h) = area.dim_in_pixel();
    let top = 40i32;
    let bottom = (h as i32 - 40).max(top + COLORBAR_STEPS as i32);
    let step = (bottom - top) as f64 / COLORBAR_STEPS as f64;
    let half = (COLORBAR_STEPS / 2) as f64;
    for s in 0..COLORBAR_STEPS {
        // Top step = +max, middle = 0, bottom = −max.
        let v = ((half - s as f64) / half * max as f64).round() as i64;
        let y0 = top + (s as f64 * step).round() as i32;
        let y1 = top + ((s + 1) as f64 * step).round() as i32;
        area.draw(&Rectangle::new(
            [(20, y0), (44, y1)],
            color(v, max).filled(),
        ))
        .map_err(|e| err(&e))?;
    }
    let label = |text: String, y: i32| Text::new(text, (50, y), (FONT, 12));
    let middle = (top + bottom) / 2;
    for (text, y) in [
        (format!("+{max}"), top),
        ("0".to_string(), middle - 6),
        (format!("−{max}"), bottom - 12),
    ] {
        area.draw(&label(text, y)).map_err(|e| err(&e))?;
    }
    area.draw(&Text::new("machine − oracle", (4, 12), (FONT, 12)))
        .map_err(|e| err(&e))?;
    Ok(())
}
