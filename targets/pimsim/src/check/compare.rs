//! Exact comparison of the machine's output with the oracle's, and the abstract shape class
//! of a difference.
//!
//! Outputs are `[N, K, OH, OW]` (conv2d) or `[N, features]` (MVM). The class says which
//! output channels, pixels and batch entries differ in words that do not depend on the sizes
//! (`all`, `some`, `border only`, `interior only`), so that one bug on different cases has
//! one signature: a padding bug differs on border pixels only, a dropped partial sum on some
//! channels at all pixels, a wrong input offset for the second image on some batch entries.

use ndarray::{ArrayD, Dimension};

use crate::check::outcome::{Extent, Mismatch, MismatchClass, MismatchWhat, PixelExtent};

/// `None` when both tensors are equal; otherwise the mismatch.
pub fn compare(oracle: &ArrayD<i32>, machine: &ArrayD<i32>) -> Option<Mismatch> {
    if oracle.shape() != machine.shape() {
        return Some(Mismatch {
            differing: oracle.len(),
            total: oracle.len(),
            first: Vec::new(),
            class: MismatchClass {
                what: MismatchWhat::OutputShape,
                channels: Extent::All,
                pixels: PixelExtent::All,
                batch: Extent::All,
            },
        });
    }
    let shape = oracle.shape().to_vec();
    let mut differing = 0usize;
    let mut first = Vec::new();
    // Which coordinates along each axis class have a difference.
    let rank = shape.len();
    let batch_n = shape.first().copied().unwrap_or(1);
    let chan_n = shape.get(1).copied().unwrap_or(1);
    let (oh, ow) = if rank == 4 {
        (shape[2], shape[3])
    } else {
        (1, 1)
    };
    let mut batch_hit = vec![false; batch_n];
    let mut chan_hit = vec![false; chan_n];
    let mut pixel_hit = vec![false; oh * ow];
    for ((index, &o), &m) in oracle.indexed_iter().zip(machine.iter()) {
        if o == m {
            continue;
        }
        differing += 1;
        let idx = index.slice().to_vec();
        if first.len() < Mismatch::FIRST {
            first.push((idx.clone(), o, m));
        }
        if let Some(&b) = idx.first() {
            batch_hit[b] = true;
        }
        if let Some(&c) = idx.get(1) {
            chan_hit[c] = true;
        }
        if rank == 4 {
            pixel_hit[idx[2] * ow + idx[3]] = true;
        }
    }
    if differing == 0 {
        return None;
    }
    let all_or_some = |hits: &[bool]| {
        if hits.iter().all(|&h| h) {
            Extent::All
        } else {
            Extent::Some
        }
    };
    let pixels = if rank == 4 {
        pixel_class(&pixel_hit, oh, ow)
    } else {
        PixelExtent::NotApplicable
    };
    Some(Mismatch {
        differing,
        total: oracle.len(),
        first,
        class: MismatchClass {
            what: MismatchWhat::Values,
            channels: all_or_some(&chan_hit),
            pixels,
            batch: all_or_some(&batch_hit),
        },
    })
}

/// `all` when every pixel differs; `border only` when only pixels on the output's border
/// (first/last row or column) differ; `interior only` when only pixels off the border differ;
/// `some` otherwise.
fn pixel_class(hit: &[bool], oh: usize, ow: usize) -> PixelExtent {
    if hit.iter().all(|&h| h) {
        return PixelExtent::All;
    }
    let border = |i: usize| {
        let (r, c) = (i / ow, i % ow);
        r == 0 || c == 0 || r + 1 == oh || c + 1 == ow
    };
    let hits = || hit.iter().enumerate().filter(|(_, &h)| h).map(|(i, _)| i);
    if hits().all(border) {
        PixelExtent::BorderOnly
    } else if hits().all(|i| !border(i)) {
        PixelExtent::InteriorOnly
    } else {
        PixelExtent::Some
    }
}
