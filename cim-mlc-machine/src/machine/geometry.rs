//! Which output pixel a convolution's input belongs to, read off the input's addresses.
//!
//! A wordline-level convolution loads each pixel's input window in `MaxRC`-row chunks and
//! names no destination (codegen/WordlineWise.py:196-297); its schedule does not order the
//! chunks by pixel either (a chunk's cycle is its data's ready time, 0 for padding only,
//! :274-282). What does identify a chunk's pixel is what it gathers: the value on wordline
//! `t` of row block `rb` meets weight row `r = rb·MaxRC + t`, which is kernel position
//! `(kh, kw)` and input channel `c` (`r = (kh·K + kw)·C_in + c`, the windows' order); it came
//! from buffer address `a`, which is input position `(h, w, c')` of the map at `memoryaddr[0]`
//! (channel-fastest). Then `c' = c`, and the pixel is `oh = (h + P_h − kh) / S_h`,
//! `ow = (w + P_w − kw) / S_w` with `P`, `S` the node's `pads` and `strides` as CIM-MLC reads
//! them (`P[0]`, `P[1]`; WordlineWise.py:176-180). Every non-padding value of a chunk must name
//! the same pixel; a chunk of padding only adds nothing to any.

use std::ops::Range;

use super::weights::Placed;
use super::{FaultKind, Stop};
use crate::layout::Node;

/// A convolution's geometry as CIM-MLC's attributes give it.
pub(crate) struct ConvGeometry {
    batch: usize,
    ic: usize,
    ih: usize,
    iw: usize,
    oh: usize,
    ow: usize,
    stride: (usize, usize),
    pad: (usize, usize),
    kw: usize,
    src: i64,
}

fn missing(attr: &'static str) -> Stop {
    Stop::Fault(FaultKind::MissingAttribute { attr })
}

fn window(what: String) -> Stop {
    Stop::Fault(FaultKind::Window { what })
}

impl ConvGeometry {
    pub(crate) fn of(node: &Node, w: &Placed) -> Result<ConvGeometry, Stop> {
        let Placed::Conv { cin, kw, .. } = *w else {
            return Err(missing("kernel_shape"));
        };
        let dims = |attr: &'static str| -> Result<Vec<usize>, Stop> {
            node.ints(attr)
                .and_then(|v| v.iter().map(|d| usize::try_from(*d).ok()).collect())
                .ok_or_else(|| missing(attr))
        };
        let ifm = dims("ifmsize")?;
        let ofm = dims("ofmsize")?;
        let (&[n, _, ih, iw], &[_, _, oh, ow]) = (&ifm[..], &ofm[..]) else {
            return Err(missing("ifmsize"));
        };
        // Sizes a buffer can hold keep every product below in range.
        let limit = crate::layout::MAX_BUFFER_ELEMENTS as usize;
        let fits = |v: &[usize]| {
            v.iter()
                .try_fold(1usize, |n, d| n.checked_mul(*d))
                .is_some_and(|n| n <= limit)
        };
        if !fits(&ifm) || !fits(&ofm) {
            return Err(window(format!(
                "the node's ifmsize {ifm:?} or ofmsize {ofm:?} is larger than any buffer"
            )));
        }
        let s = dims("strides")?;
        let p = node
            .ints("pads")
            .map(|v| v.iter().map(|d| usize::try_from(*d).unwrap_or(0)).collect())
            .unwrap_or_else(|| vec![0, 0]);
        let src = node
            .ints("memoryaddr")
            .and_then(|m| m.first().copied())
            .ok_or_else(|| missing("memoryaddr"))?;
        Ok(ConvGeometry {
            batch: n,
            ic: cin,
            ih,
            iw,
            oh,
            ow,
            stride: (
                s.first().copied().unwrap_or(1).clamp(1, limit),
                s.get(1).copied().unwrap_or(1).clamp(1, limit),
            ),
            pad: (
                p.first().copied().unwrap_or(0).min(limit),
                p.get(1).copied().unwrap_or(0).min(limit),
            ),
            kw,
            src,
        })
    }

    /// Kernel position and channel of weight row `r`.
    fn row(&self, r: usize) -> (usize, usize, usize) {
        let (pos, c) = (r / self.ic, r % self.ic);
        (pos / self.kw, pos % self.kw, c)
    }

    /// The pixel (`(n·OH + oh)·OW + ow`) every non-padding value of an input that meets weight
    /// rows `r0 …` belongs to; `None` for padding only.
    pub(crate) fn pixel_of(&self, addrs: &[Option<u64>], r0: usize) -> Result<Option<usize>, Stop> {
        let mut found: Option<(usize, usize)> = None; // (pixel, wordline)
        for (t, addr) in addrs.iter().enumerate() {
            let Some(a) = *addr else { continue };
            let (kh, kw, c) = self.row(r0 + t);
            let rel = a as i64 - self.src;
            let plane = self.ih * self.iw * self.ic;
            if rel < 0 || rel as usize >= plane * self.batch {
                return Err(window(format!(
                    "wordline {t} holds address {a}, outside the input map at {} ({} elements)",
                    self.src,
                    plane * self.batch
                )));
            }
            let rel = rel as usize;
            let (n, rem) = (rel / plane, rel % plane);
            let (h, w, c2) = (
                rem / (self.iw * self.ic),
                (rem / self.ic) % self.iw,
                rem % self.ic,
            );
            if c2 != c {
                return Err(window(format!(
                    "wordline {t} holds channel {c2} of input ({h}, {w}), where the weights \
                     expect channel {c}"
                )));
            }
            let at = |x: usize, k: usize, p: usize, s: usize, out: usize| {
                (x + p)
                    .checked_sub(k)
                    .filter(|v| v % s == 0)
                    .map(|v| v / s)
                    .filter(|o| *o < out)
            };
            let (Some(oy), Some(ox)) = (
                at(h, kh, self.pad.0, self.stride.0, self.oh),
                at(w, kw, self.pad.1, self.stride.1, self.ow),
            ) else {
                return Err(window(format!(
                    "wordline {t} holds input ({h}, {w}), which kernel position ({kh}, {kw}) of \
                     no output pixel reads"
                )));
            };
            let pixel = (n * self.oh + oy) * self.ow + ox;
            match found {
                Some((p, first)) if p != pixel => {
                    return Err(window(format!(
                        "wordlines {first} and {t} hold inputs of output pixels {p} and {pixel}"
                    )))
                }
                Some(_) => {}
                None => found = Some((pixel, t)),
            }
        }
        Ok(found.map(|(p, _)| p))
    }

    /// True when any of weight rows `rows` meets an input of `pixel` (not padding).
    pub(crate) fn has_input(&self, pixel: usize, rows: Range<usize>) -> bool {
        let (oy, ox) = ((pixel / self.ow) % self.oh.max(1), pixel % self.ow.max(1));
        rows.into_iter().any(|r| {
            let (kh, kw, _) = self.row(r);
            let h = (oy * self.stride.0 + kh).checked_sub(self.pad.0);
            let w = (ox * self.stride.1 + kw).checked_sub(self.pad.1);
            h.is_some_and(|h| h < self.ih) && w.is_some_and(|w| w < self.iw)
        })
    }
}
