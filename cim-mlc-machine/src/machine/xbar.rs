//! The meta-operators on crossbars: loads of inputs, activations of whole crossbars
//! (`CIM.read_xb`) or of wordline slices (`CIM.read_wl`), and read-outs of results.
//!
//! A crossbar holds inputs loaded into it until an activation takes them, oldest first
//! ([`super::InputQueue`]). No convolution's activation names a destination; CIM-MLC's records
//! say where its result goes. At the crossbar level the `k`-th activation of copy `d` of a
//! node's weights computes output unit `d + k·dup` — pixel `u` of a convolution has its `OC`
//! channels at `memoryaddr[-1] + u·OC` ("data layerout: (H,W,CHANNEL)",
//! `cycle_record[ComNum*OC:(ComNum+1)*OC]`, codegen/CrossbarWise.py:198, :271), input row `u` of
//! a Gemm its results at `memoryaddr[-1] + u·K` (CrossbarWise.py:319-338) — and a convolution's
//! window must be that pixel's. At the wordline level a convolution's chunk is found the pixel
//! it belongs to by its addresses (`super::geometry`), and the pixel's channels are written once
//! every row block of the matrix meeting its inputs arrived; a Gemm's results stay in the
//! crossbars until a `load - [x]` or `Add-[..]` reads them out (WordlineWise.py:379-391).

use std::rc::Rc;

use super::weights::Placed;
use super::{Access, Exec, FaultKind, InputQueue, Loaded, NodeRef, PixelSum, Stop, XbResult};
use crate::flow::{Level, Pair, Piece};
use crate::layout::Node;

fn fault(kind: FaultKind) -> Stop {
    Stop::Fault(kind)
}

fn attr(node: &Node, name: &'static str) -> Result<Vec<i64>, Stop> {
    node.ints(name)
        .ok_or(Stop::Fault(FaultKind::MissingAttribute { attr: name }))
}

impl<'c> Exec<'c, '_> {
    /// The crossbars `[a, b]`, on the chip.
    fn crossbars(&self, xbs: Pair) -> Result<std::ops::RangeInclusive<usize>, Stop> {
        let total = self.chip.layout.chip.crossbars();
        let Pair(a, b) = xbs;
        if a < 0 || b < a {
            return Err(fault(FaultKind::BadOperand {
                what: format!("crossbars [{a}, {b}] are no range"),
            }));
        }
        if b >= total as i64 {
            return Err(fault(FaultKind::CrossbarOutOfChip {
                xb: b,
                crossbars: total,
            }));
        }
        Ok(a as usize..=b as usize)
    }

    /// Note that `node` uses crossbars `xbs`: no other node of its flow segment may.
    fn claim(
        &mut self,
        node: Option<&Node>,
        xbs: std::ops::RangeInclusive<usize>,
    ) -> Result<(), Stop> {
        self.charge(xbs.clone().count() as u64)?;
        let Some(node) = node.filter(|n| n.is_weighted()) else {
            return Ok(());
        };
        let layout = self.chip.layout;
        let key = layout
            .segment_of(node.index)
            .unwrap_or(usize::MAX - node.index);
        for x in xbs {
            match self.claims.get(&(key, x)) {
                Some(&m) if m != node.index => {
                    return Err(fault(FaultKind::Conflict {
                        resource: format!("crossbar {x}"),
                        other: NodeRef {
                            index: m,
                            name: layout.nodes[m].name.clone(),
                        },
                    }))
                }
                Some(_) => {}
                None => {
                    self.claims.insert((key, x), node.index);
                }
            }
        }
        Ok(())
    }

    /// Loads one crossbar holds at once.
    fn queue_depth(&self) -> usize {
        match (self.chip.options.input_queue, self.level) {
            (InputQueue::Unbounded, _) => usize::MAX,
            (InputQueue::Hardware, Level::Wordline) => {
                let c = &self.chip.layout.chip;
                (c.xb_rows / c.max_rows).max(1) as usize
            }
            (InputQueue::Hardware, _) => 1,
        }
    }

    fn push(
        &mut self,
        xbs: std::ops::RangeInclusive<usize>,
        values: Vec<i64>,
        addrs: Vec<Option<u64>>,
    ) -> Result<(), Stop> {
        let depth = self.queue_depth();
        let loaded = Loaded {
            line: self.line,
            id: self.next_load,
            values: Rc::new(values),
            addrs: Rc::new(addrs),
        };
        self.next_load += 1;
        for x in xbs {
            let q = self.queues.entry(x).or_default();
            if q.len() >= depth {
                return Err(fault(FaultKind::InputOverrun {
                    xb: x,
                    pending: q.len(),
                    first: q.front().map_or(0, |l| l.line),
                }));
            }
            q.push_back(loaded.clone());
            self.writes.push(Access::CrossbarInput { xb: x });
        }
        Ok(())
    }

    /// `load - <window> - [x0, x1] - …`: the window's pieces in order (`'pad-N'` N zeros,
    /// `[a, b]` the buffer's `[a, b)`) into each crossbar.
    pub(crate) fn load_window(
        &mut self,
        pieces: &[Piece],
        xbs: Pair,
        node: Option<&Node>,
    ) -> Result<(), Stop> {
        let range = self.crossbars(xbs)?;
        self.claim(node, range.clone())?;
        self.window_fits(pieces, range.clone())?;
        let mut values = Vec::new();
        let mut addrs = Vec::new();
        for piece in pieces {
            match *piece {
                Piece::Zeros(n) => {
                    let n = usize::try_from(n).map_err(|_| {
                        fault(FaultKind::Negative {
                            what: "padding",
                            value: n,
                        })
                    })?;
                    self.charge(n as u64)?;
                    values.resize(values.len() + n, 0);
                    addrs.resize(addrs.len() + n, None);
                }
                Piece::Range(a, b) => {
                    if b < a {
                        return Err(fault(FaultKind::BadOperand {
                            what: format!("the window piece [{a}, {b}] ends before it starts"),
                        }));
                    }
                    values.extend(self.read(a, b - a)?);
                    addrs.extend((a..b).map(|x| Some(x as u64)));
                }
            }
        }
        self.push(range, values, addrs)
    }

    /// A window no longer than the wordlines of the crossbars it is loaded into (checked before
    /// it is gathered).
    fn window_fits(
        &self,
        pieces: &[Piece],
        xbs: std::ops::RangeInclusive<usize>,
    ) -> Result<(), Stop> {
        let mut len: i128 = 0;
        for piece in pieces {
            len += match *piece {
                Piece::Zeros(n) => i128::from(n.max(0)),
                Piece::Range(a, b) => i128::from(b) - i128::from(a),
            };
        }
        let rows = self.chip.layout.chip.xb_rows;
        let capacity = i128::from(rows) * xbs.clone().count() as i128;
        if len > capacity {
            return Err(fault(FaultKind::BadOperand {
                what: format!(
                    "a load of {len} values into {} crossbar(s) of {rows} wordlines",
                    xbs.count()
                ),
            }));
        }
        Ok(())
    }

    /// `load - source - [x0, x1] - length`: `length` buffer elements into each crossbar.
    pub(crate) fn load_vector(
        &mut self,
        src: i64,
        xbs: Pair,
        len: i64,
        node: Option<&Node>,
    ) -> Result<(), Stop> {
        let range = self.crossbars(xbs)?;
        self.claim(node, range.clone())?;
        let values = self.read(src, len)?;
        let addrs = (0..values.len() as i64)
            .map(|k| Some((src + k) as u64))
            .collect();
        self.push(range, values, addrs)
    }

    fn pop(&mut self, x: usize) -> Result<Loaded, Stop> {
        let loaded = self
            .queues
            .get_mut(&x)
            .and_then(|q| q.pop_front())
            .ok_or(Stop::Fault(FaultKind::InputNotLoaded { xb: x }))?;
        self.reads.push(Access::CrossbarInput { xb: x });
        Ok(loaded)
    }

    /// The output unit the next activation of wordline slice `slice` of the crossbar at
    /// `offset` from the node's first crossbar computes, and how many units the node has. Copy
    /// `d` of the weights (crossbars `d·g …` of the node's, `g` its `xb_num` product) serves
    /// units `d, d + dup, d + 2·dup, …` in order (the round robin of CrossbarWise.py:283-286,
    /// WordlineWise.py:302-305), so the `n`-th activation of one slice computes unit
    /// `d + n·dup`.
    fn next_unit(
        &mut self,
        node: &Node,
        w: &Placed,
        offset: usize,
        slice: usize,
    ) -> Result<(usize, usize), Stop> {
        let ofm = attr(node, "ofmsize")?;
        let elements = ofm
            .iter()
            .try_fold(1i64, |n, d| n.checked_mul(*d))
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0);
        let units = elements / w.cols().max(1);
        let per_copy = attr(node, "xb_num")?.iter().product::<i64>().max(1) as usize;
        let dup = node
            .int("dup")
            .ok_or(Stop::Fault(FaultKind::MissingAttribute { attr: "dup" }))?
            .max(1) as usize;
        let copy = offset / per_copy;
        if copy >= dup {
            return Err(fault(FaultKind::NoCopy {
                offset,
                copies: dup,
                per_copy,
            }));
        }
        let n = self.units.entry((node.index, offset, slice)).or_insert(0);
        let unit = copy + *n * dup;
        *n += 1;
        Ok((unit, units))
    }

    /// `CIM.read_xb - [x0, x1]`: the crossbars holding one copy of the node's weights take
    /// their input and compute its product with the whole matrix: the node's next output unit.
    pub(crate) fn read_xb(&mut self, xbs: Pair, node: Option<&'c Node>) -> Result<(), Stop> {
        let w = self.weights_of(node)?;
        let node = node.ok_or(FaultKind::NoWeights)?;
        let range = self.crossbars(xbs)?;
        let xb_num = attr(node, "xb_num")?;
        let expected: i64 = xb_num.iter().product();
        let named = (xbs.1 - xbs.0) + 1;
        if named < expected || (named != expected && self.chip.options.exact_crossbar_ranges) {
            return Err(fault(FaultKind::CrossbarCount { named, expected }));
        }
        self.claim(Some(node), range.clone())?;
        let mut first: Option<Loaded> = None;
        for x in range.clone() {
            let l = self.pop(x)?;
            match &first {
                Some(f) if f.id != l.id => {
                    return Err(fault(FaultKind::InputsDiffer {
                        xb: x,
                        lines: (f.line, l.line),
                    }))
                }
                Some(_) => {}
                None => first = Some(l),
            }
        }
        let Some(input) = first else {
            return Err(fault(FaultKind::InputNotLoaded { xb: *range.start() }));
        };
        let v = &input.values;
        if v.len() != w.rows() {
            return Err(fault(FaultKind::LoadLength {
                loaded: v.len(),
                expected: w.rows(),
            }));
        }
        self.reads.push(Access::Crossbars {
            first: *range.start(),
            last: *range.end(),
        });
        let base = self.base(node, *range.start());
        let offset = range.start() - base;
        if !offset.is_multiple_of(expected.max(1) as usize) {
            return Err(fault(FaultKind::NoCopy {
                offset,
                copies: node.int("dup").unwrap_or(1).max(1) as usize,
                per_copy: expected.max(1) as usize,
            }));
        }
        let (unit, units) = self.next_unit(node, w, offset, 0)?;
        if unit >= units {
            return Err(fault(FaultKind::ExtraCompute { unit, units }));
        }
        if let Placed::Conv { .. } = w {
            // The window's addresses must be the unit's: else its result lands on another pixel.
            let geo = super::geometry::ConvGeometry::of(node, w)?;
            if let Some(pixel) = geo.pixel_of(&input.addrs, 0)? {
                if pixel != unit {
                    return Err(fault(FaultKind::Window {
                        what: format!(
                            "the input is the window of output pixel {pixel}, but this \
                             activation computes pixel {unit}"
                        ),
                    }));
                }
            }
        }
        self.charge((w.rows() * w.cols()) as u64)?;
        let out = w.multiply(v, 0, 0..w.cols()).ok_or(FaultKind::Overflow)?;
        let dst = Self::output_addr(node)? + (unit * w.cols()) as i64;
        self.write(dst, &out)
    }

    /// The node's first crossbar: the lowest any of its lines names (`first` if none).
    fn base(&self, node: &Node, first: usize) -> usize {
        self.chip
            .bases
            .get(&self.level)
            .and_then(|b| b[node.index])
            .unwrap_or(first)
            .min(first)
    }

    /// Which wordlines `[r0, r1)` open: inside the crossbar, at most `MaxRC` of them.
    fn wordlines(&self, rows: Pair) -> Result<(usize, usize), Stop> {
        let c = &self.chip.layout.chip;
        let Pair(r0, r1) = rows;
        if r0 < 0 || r1 <= r0 || r1 as u64 > c.xb_rows {
            return Err(fault(FaultKind::Wordlines {
                what: format!(
                    "wordlines [{r0}, {r1}) are no range inside a crossbar of {} rows",
                    c.xb_rows
                ),
            }));
        }
        if (r1 - r0) as u64 > c.max_rows {
            return Err(fault(FaultKind::Wordlines {
                what: format!(
                    "opens {} wordlines at once; MaxRC is {}",
                    r1 - r0,
                    c.max_rows
                ),
            }));
        }
        Ok((r0 as usize, r1 as usize))
    }

    /// `CIM.read_wl- [r0, r1] - [x0, x1]`: each crossbar opens wordlines `[r0, r1)` on the
    /// input loaded for them.
    pub(crate) fn read_wl(
        &mut self,
        rows: Pair,
        xbs: Pair,
        node: Option<&'c Node>,
    ) -> Result<(), Stop> {
        let w = self.weights_of(node)?;
        let node = node.ok_or(FaultKind::NoWeights)?;
        let (r0, r1) = self.wordlines(rows)?;
        let range = self.crossbars(xbs)?;
        self.claim(Some(node), range.clone())?;
        let base = self.base(node, *range.start());
        for x in range {
            let input = self.pop(x)?;
            self.reads.push(Access::Crossbars { first: x, last: x });
            match w {
                Placed::Conv { .. } => self.wl_conv(node, w, x - base, (r0, r1), &input)?,
                Placed::Linear { .. } => {
                    self.wl_linear(node, w, x, x - base, (r0, r1), &input.values)?
                }
            }
        }
        Ok(())
    }

    /// One wordline slice of a convolution's crossbar: every weight block `weight_reorder`
    /// puts in the slice meets the input. Block `b` is row block `b mod W_R`, column block
    /// `b div W_R` of the `[k·k·C_in, C_out]` matrix cut in `MaxRC × MaxRC` blocks
    /// (WordlineRemap.py:48-49, :89; `W_R`, `W_C` as `weight_block` gives them). Which output pixel the partial sums are for, the flow
    /// does not say, nor does its order (a window of padding only is scheduled at cycle 0,
    /// WordlineWise.py:274-282): the input's addresses do ([`super::geometry`]). A pixel's
    /// channels are written once every `MaxRC`-row block of the matrix that meets any of its
    /// inputs arrived.
    fn wl_conv(
        &mut self,
        node: &Node,
        w: &Placed,
        offset: usize,
        rows: (usize, usize),
        input: &Loaded,
    ) -> Result<(), Stop> {
        let (dims, reorder) = node
            .tensor("weight_reorder")
            .filter(|(d, r)| d.len() == 4 && d.iter().product::<usize>() == r.len())
            .ok_or(Stop::Fault(FaultKind::MissingAttribute {
                attr: "weight_reorder",
            }))?;
        let wb = attr(node, "weight_block")?;
        let &[wr, wc] = &wb[..] else {
            return Err(fault(FaultKind::MissingAttribute {
                attr: "weight_block",
            }));
        };
        let (wr, wc) = (wr.max(1) as usize, wc.max(0) as usize);
        let [dx, dy, slices, slots] = dims[..] else {
            return Err(fault(FaultKind::MissingAttribute {
                attr: "weight_reorder",
            }));
        };
        let chip = self.chip.layout.chip;
        let slice_rows = (chip.xb_rows as usize / slices.max(1)).max(1);
        let k = rows.0 / slice_rows;
        if !rows.0.is_multiple_of(slice_rows) || rows.1 != rows.0 + slice_rows || k >= slices {
            return Err(fault(FaultKind::Wordlines {
                what: format!(
                    "wordlines [{}, {}) are not one of the {slices} slices of {slice_rows} rows \
                     weight_reorder gives the crossbar",
                    rows.0, rows.1
                ),
            }));
        }
        // Crossbar `dst + j·xb_num[0] + i` holds block row i, column j (WordlineWise.py:290).
        let local = offset % (dx * dy).max(1);
        let (i, j) = (local % dx.max(1), local / dx.max(1));
        let geo = super::geometry::ConvGeometry::of(node, w)?;
        let mr = chip.max_rows as usize;
        for m in 0..slots {
            let b = reorder[((i * dy + j) * slices + k) * slots + m];
            if b == -1 {
                continue;
            }
            let (rb, cb) = (b.max(0) as usize % wr, b.max(0) as usize / wr);
            let (r_lo, c_lo) = (rb * mr, cb * mr);
            if b < 0 || cb >= wc || r_lo >= w.rows() || c_lo >= w.cols() {
                return Err(fault(FaultKind::Block {
                    what: format!(
                        "weight_reorder names block {b}, which the {}x{} matrix in {wr}x{wc} \
                         blocks of {mr} does not have",
                        w.rows(),
                        w.cols()
                    ),
                }));
            }
            let r_n = mr.min(w.rows() - r_lo);
            if input.values.len() != r_n {
                return Err(fault(FaultKind::LoadLength {
                    loaded: input.values.len(),
                    expected: r_n,
                }));
            }
            let Some(pixel) = geo.pixel_of(&input.addrs, r_lo)? else {
                continue; // padding only: it adds nothing to any pixel
            };
            let c_n = mr.min(w.cols() - c_lo);
            self.charge((r_n * c_n) as u64)?;
            let partial = w
                .multiply(&input.values, r_lo, c_lo..c_lo + c_n)
                .ok_or(FaultKind::Overflow)?;
            // Every row block of the matrix (whatever W_R says) that meets an input of the pixel.
            let needed: Vec<bool> = (0..w.rows().div_ceil(mr))
                .map(|rb| geo.has_input(pixel, rb * mr..((rb + 1) * mr).min(w.rows())))
                .collect();
            self.add_block(node, w.cols(), pixel, (rb, cb, needed), c_lo, &partial)?;
        }
        Ok(())
    }

    /// Add one block's partial sums to `pixel`; write its channels when complete.
    fn add_block(
        &mut self,
        node: &Node,
        oc: usize,
        pixel: usize,
        (rb, cb, needed): (usize, usize, Vec<bool>),
        c_lo: usize,
        partial: &[i64],
    ) -> Result<(), Stop> {
        let wc = oc.div_ceil(partial.len().max(1)).max(cb + 1);
        let sum = self
            .pixels
            .entry((node.index, pixel))
            .or_insert_with(|| PixelSum {
                values: vec![0; oc],
                got: vec![vec![false; needed.len()]; wc],
                needed,
            });
        if cb >= sum.got.len() {
            sum.got.resize(cb + 1, vec![false; sum.needed.len()]);
        }
        if sum.got[cb][rb] {
            return Err(fault(FaultKind::Block {
                what: format!(
                    "row block {rb} of column block {cb} arrives twice for output pixel {pixel}"
                ),
            }));
        }
        sum.got[cb][rb] = true;
        for (t, p) in partial.iter().enumerate() {
            let slot = &mut sum.values[c_lo + t];
            *slot = slot.checked_add(*p).ok_or(FaultKind::Overflow)?;
        }
        let complete = sum.got[cb].iter().zip(&sum.needed).all(|(g, n)| *g || !*n);
        if complete {
            let out = sum.values[c_lo..c_lo + partial.len()].to_vec();
            let dst = Self::output_addr(node)? + (pixel * oc + c_lo) as i64;
            self.write(dst, &out)?;
        }
        Ok(())
    }

    /// One wordline slice of a Gemm's crossbar `(xbr, xbc)` (crossbar `dst + xbc·xbr_n + xbr`,
    /// WordlineWise.py:370): rows `xbr·XBSize[0] + [r0, r0 + len)` of the matrix meet the input,
    /// columns `xbc·XBSize[1] …`; the results add up in the crossbar.
    fn wl_linear(
        &mut self,
        node: &Node,
        w: &Placed,
        x: usize,
        offset: usize,
        rows: (usize, usize),
        v: &[i64],
    ) -> Result<(), Stop> {
        let xb_num = attr(node, "xb_num")?;
        let [xbr_n, xbc_n] = xb_num[..] else {
            return Err(fault(FaultKind::MissingAttribute { attr: "xb_num" }));
        };
        let (xbr_n, xbc_n) = (xbr_n.max(1) as usize, xbc_n.max(1) as usize);
        let chip = self.chip.layout.chip;
        if v.len() > rows.1 - rows.0 {
            return Err(fault(FaultKind::LoadLength {
                loaded: v.len(),
                expected: rows.1 - rows.0,
            }));
        }
        let local = offset % (xbr_n * xbc_n);
        let (xbr, xbc) = (local % xbr_n, local / xbr_n);
        let row0 = xbr * chip.xb_rows as usize + rows.0;
        let c_lo = xbc * chip.xb_cols as usize;
        let c_n = (chip.xb_cols as usize).min(w.cols().saturating_sub(c_lo));
        let useful = v.len().min(w.rows().saturating_sub(row0));
        self.charge((useful * c_n) as u64)?;
        let partial = w
            .multiply(&v[..useful], row0.min(w.rows()), c_lo..c_lo + c_n)
            .ok_or(FaultKind::Overflow)?;
        let width = chip.xb_cols as usize;
        let r = self.results.entry(x).or_insert_with(|| XbResult {
            values: vec![0; width],
            read_out: false,
        });
        if r.read_out {
            r.values = vec![0; width];
            r.read_out = false;
        }
        for (t, p) in partial.iter().enumerate() {
            r.values[t] = r.values[t].checked_add(*p).ok_or(FaultKind::Overflow)?;
        }
        self.writes.push(Access::CrossbarOutput { xb: x });
        Ok(())
    }

    fn result(&mut self, x: usize, len: i64) -> Result<Vec<i64>, Stop> {
        let len = usize::try_from(len).map_err(|_| {
            fault(FaultKind::Negative {
                what: "length",
                value: len,
            })
        })?;
        let width = self.chip.layout.chip.xb_cols as usize;
        if len > width {
            return Err(fault(FaultKind::BadOperand {
                what: format!("reads {len} results of a crossbar of {width} columns"),
            }));
        }
        let r = self
            .results
            .get(&x)
            .ok_or(Stop::Fault(FaultKind::OutputNotComputed { xb: x }))?;
        self.reads.push(Access::CrossbarOutput { xb: x });
        Ok(r.values[..len].to_vec())
    }

    /// `load - [x] - destination - length`: crossbar `x`'s first `length` results into the
    /// buffer; its next activation starts a new sum.
    pub(crate) fn store(
        &mut self,
        xb: i64,
        dst: i64,
        len: i64,
        node: Option<&Node>,
    ) -> Result<(), Stop> {
        let x = *self.crossbars(Pair(xb, xb))?.start();
        self.claim(node, x..=x)?;
        let out = self.result(x, len)?;
        self.write(dst, &out)?;
        if let Some(r) = self.results.get_mut(&x) {
            r.read_out = true;
        }
        Ok(())
    }

    /// `Add-[x0, x1]-destination-length`: the sum of the crossbars' first `length` results into
    /// the buffer.
    pub(crate) fn sum_xb(
        &mut self,
        xbs: Pair,
        dst: i64,
        len: i64,
        node: Option<&Node>,
    ) -> Result<(), Stop> {
        let range = self.crossbars(xbs)?;
        self.claim(node, range.clone())?;
        let mut total: Option<Vec<i64>> = None;
        for x in range {
            let r = self.result(x, len)?;
            total = Some(match total {
                None => r,
                Some(t) => t
                    .iter()
                    .zip(&r)
                    .map(|(a, b)| a.checked_add(*b).ok_or(FaultKind::Overflow))
                    .collect::<Result<_, _>>()?,
            });
        }
        self.write(dst, &total.unwrap_or_default())
    }
}
