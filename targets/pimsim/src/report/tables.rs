//! Markdown tables of small tensors, so that a minimized finding can be checked by hand.
//!
//! A tensor with at most [`MAX_TABLE_ELEMENTS`] elements is printed in full: a 4-D tensor
//! (`[N, C, H, W]` feature maps, `[K, C/groups, kh, kw]` weights) as one 2-D table per leading
//! index pair, or as a single table over its two leading axes when its last two are 1×1; a
//! 2-D tensor (MVM input, weight and output) as one table with a row per leading index; a
//! vector (the bias) as one row. Larger tensors get one line naming the file that holds them.
//!
//! The output table shows the oracle's value in each cell and, where the machine disagrees,
//! **oracle → machine** in bold, so the pattern of a mismatch is visible at a glance.

use std::fmt::Write as _;

use ndarray::ArrayD;
use pimdiff_oracle::{Case, Op};

/// Tensors with more elements than this are not printed as tables.
pub const MAX_TABLE_ELEMENTS: usize = 64;

/// What a table shows: a name, a shape with a short name per axis, and the text of a cell.
struct Tensor<'a> {
    name: &'a str,
    file: &'a str,
    shape: &'a [usize],
    axes: &'a [&'a str],
    cell: &'a dyn Fn(&[usize]) -> String,
}

/// Appends the case's input, weight and bias (tables when small, a line each otherwise).
pub fn write_case_tensors(r: &mut String, case: &Case) {
    let (input_axes, weight_axes): (&[&str], &[&str]) = match case.spec.op {
        Op::Conv2d(_) => (&["n", "c", "h", "w"], &["k", "c", "i", "j"]),
        Op::Mvm(_) => (&["n", "f"], &["o", "f"]),
    };
    let _ = writeln!(r, "### Tensors\n");
    let input = |i: &[usize]| case.input[i].to_string();
    write_tensor(
        r,
        &Tensor {
            name: "input",
            file: "input.npy",
            shape: case.input.shape(),
            axes: input_axes,
            cell: &input,
        },
    );
    let weight = |i: &[usize]| case.weight[i].to_string();
    write_tensor(
        r,
        &Tensor {
            name: "weight",
            file: "weight.npy",
            shape: case.weight.shape(),
            axes: weight_axes,
            cell: &weight,
        },
    );
    if let Some(bias) = &case.bias {
        let cell = |i: &[usize]| bias[i[0]].to_string();
        write_tensor(
            r,
            &Tensor {
                name: "bias",
                file: "bias.npy",
                shape: bias.shape(),
                axes: &["k"],
                cell: &cell,
            },
        );
    }
}

/// Appends the oracle's output against the machine's when the output is small enough; returns
/// whether it did.
pub fn write_output_comparison(
    r: &mut String,
    op: &Op,
    oracle: &ArrayD<i32>,
    machine: &ArrayD<i32>,
) -> bool {
    if oracle.len() > MAX_TABLE_ELEMENTS || oracle.shape() != machine.shape() {
        return false;
    }
    let axes: &[&str] = match op {
        Op::Conv2d(_) => &["n", "k", "h", "w"],
        Op::Mvm(_) => &["n", "o"],
    };
    let _ = writeln!(
        r,
        "### Output, oracle vs machine\n\nCells that differ show **oracle → machine**.\n"
    );
    let cell = |i: &[usize]| {
        let (o, m) = (oracle[i], machine[i]);
        if o == m {
            o.to_string()
        } else {
            format!("**{o} → {m}**")
        }
    };
    write_tensor(
        r,
        &Tensor {
            name: "output",
            file: "expected.npy",
            shape: oracle.shape(),
            axes,
            cell: &cell,
        },
    );
    true
}

fn write_tensor(r: &mut String, t: &Tensor) {
    let elements: usize = t.shape.iter().product();
    if elements > MAX_TABLE_ELEMENTS || t.shape.len() != t.axes.len() {
        let _ = writeln!(
            r,
            "{} {:?}: {elements} elements, in `{}` (tables are printed up to \
             {MAX_TABLE_ELEMENTS} elements).\n",
            t.name, t.shape, t.file
        );
        return;
    }
    match *t.shape {
        [a, b, 1, 1] => {
            let _ = writeln!(r, "{} {:?}:\n", t.name, t.shape);
            grid(r, a, b, [t.axes[0], t.axes[1]], &|x, y| {
                (t.cell)(&[x, y, 0, 0])
            });
        }
        [a, b, h, w] => {
            for x in 0..a {
                for y in 0..b {
                    let _ = writeln!(r, "{} {}{x} {}{y}:\n", t.name, t.axes[0], t.axes[1]);
                    grid(r, h, w, [t.axes[2], t.axes[3]], &|i, j| {
                        (t.cell)(&[x, y, i, j])
                    });
                }
            }
        }
        [a, b] => {
            let _ = writeln!(r, "{} {:?}:\n", t.name, t.shape);
            grid(r, a, b, [t.axes[0], t.axes[1]], &|x, y| (t.cell)(&[x, y]));
        }
        [n] => {
            let _ = writeln!(r, "{} {:?}:\n", t.name, t.shape);
            header(r, n, t.axes[0]);
            let cells: Vec<String> = (0..n).map(|x| (t.cell)(&[x])).collect();
            let _ = writeln!(r, "| {} | {} |\n", t.name, cells.join(" | "));
        }
        _ => {}
    }
}

/// A `rows × cols` table; row labels `{axes[0]}{i}`, column labels `{axes[1]}{j}`.
fn grid(
    r: &mut String,
    rows: usize,
    cols: usize,
    axes: [&str; 2],
    cell: &dyn Fn(usize, usize) -> String,
) {
    header(r, cols, axes[1]);
    for i in 0..rows {
        let cells: Vec<String> = (0..cols).map(|j| cell(i, j)).collect();
        let _ = writeln!(r, "| {}{i} | {} |", axes[0], cells.join(" | "));
    }
    let _ = writeln!(r);
}

fn header(r: &mut String, cols: usize, axis: &str) {
    let names: Vec<String> = (0..cols).map(|j| format!("{axis}{j}")).collect();
    let _ = writeln!(r, "| | {} |", names.join(" | "));
    let _ = writeln!(r, "|---|{}", "---:|".repeat(cols));
}
