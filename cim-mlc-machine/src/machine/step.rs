//! The meta-operators that work on the global buffer alone: the core-level convolution and
//! fully-connected reads (their weights on cores), copies, pooling, activations, ALU
//! operations and the layout operators. `docs/cim-mlc-isa.md` gives each one's meaning and
//! evidence.

use super::arith::{self, Pads, Shape4};
use super::weights::Placed;
use super::{Access, Exec, FaultKind, NodeRef, Stop};
use crate::flow::{Alu, ConvCore, Extent, FcCore, Func, Pair, Pool, Relayout, ShapeOp};
use crate::layout::Node;
use crate::tensor::{element_count, from_buffer_order, to_buffer_order};

fn bad(what: impl Into<String>) -> Stop {
    Stop::Fault(FaultKind::BadOperand { what: what.into() })
}

fn mismatch(what: impl Into<String>) -> Stop {
    Stop::Fault(FaultKind::ShapeMismatch { what: what.into() })
}

/// A feature-map shape `[N, C, H, W]` of positive sizes.
fn shape4(v: &[i64], what: &str) -> Result<Shape4, Stop> {
    match v {
        [n, c, h, w] if v.iter().all(|d| *d > 0) => {
            Ok([*n as usize, *c as usize, *h as usize, *w as usize])
        }
        _ => Err(bad(format!(
            "{what} {v:?} is not a shape [N, C, H, W] of positive sizes"
        ))),
    }
}

/// The element count of a shape, which must not overflow.
fn count(shape: &[usize]) -> Result<u64, Stop> {
    shape
        .iter()
        .try_fold(1u64, |n, d| n.checked_mul(*d as u64))
        .ok_or_else(|| {
            bad(format!(
                "{shape:?} has more elements than the machine counts"
            ))
        })
}

/// A shape of non-negative sizes, and its element count.
fn shape(v: &[i64], what: &str) -> Result<(Vec<usize>, usize), Stop> {
    let s: Option<Vec<usize>> = v.iter().map(|d| usize::try_from(*d).ok()).collect();
    let s = s.ok_or_else(|| bad(format!("{what} {v:?} has a negative size")))?;
    let n = element_count(&s).ok_or_else(|| bad(format!("{what} {v:?} overflows")))?;
    Ok((s, n))
}

/// Two positive integers (a stride, a kernel); one stands for both.
fn two(v: &[i64], what: &str) -> Result<(usize, usize), Stop> {
    match v {
        [a] if *a > 0 => Ok((*a as usize, *a as usize)),
        [a, b] if *a > 0 && *b > 0 => Ok((*a as usize, *b as usize)),
        _ => Err(bad(format!(
            "{what} {v:?} is not one or two positive integers"
        ))),
    }
}

fn non_negative(v: &[i64], what: &str) -> Result<Vec<usize>, Stop> {
    v.iter()
        .map(|p| usize::try_from(*p).ok())
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| bad(format!("{what} {v:?} has a negative entry")))
}

impl<'c> Exec<'c, '_> {
    /// The cores `[c0, c1]` must be on the chip and be one copy of `node`'s weights, which no
    /// other node of its flow segment shares (optimization/CoreDup.py:154-162: copy `d` on
    /// cores `corestart + d·core_num …`).
    fn check_cores(&mut self, cores: Pair, node: &Node) -> Result<(), Stop> {
        let Pair(c0, c1) = cores;
        let on_chip = self.chip.layout.chip.cores;
        if c0 < 0 || c1 < c0 {
            return Err(bad(format!("cores [{c0}, {c1}] are no range")));
        }
        if c1 >= on_chip as i64 {
            return Err(Stop::Fault(FaultKind::CoreOutOfChip {
                core: c1,
                cores: on_chip,
            }));
        }
        let copies = core_copies(node)?;
        if !copies.contains(&(c0, c1)) {
            return Err(Stop::Fault(FaultKind::NotACopy {
                named: (c0, c1),
                copies,
            }));
        }
        let layout = self.chip.layout;
        if let Some(seg) = layout.segment_of(node.index) {
            for &m in &layout.segments[seg] {
                let other = &layout.nodes[m];
                if m == node.index || !other.is_weighted() {
                    continue;
                }
                for (a, b) in core_copies(other).unwrap_or_default() {
                    if a <= c1 && c0 <= b {
                        return Err(Stop::Fault(FaultKind::Conflict {
                            resource: format!("core {}", a.max(c0)),
                            other: NodeRef {
                                index: m,
                                name: other.name.clone(),
                            },
                        }));
                    }
                }
            }
        }
        self.reads.push(Access::Cores {
            first: c0 as usize,
            last: c1 as usize,
        });
        Ok(())
    }

    /// `CIM.read_core-conv`: the sub-IFM at `source` (channel-fastest), padded by `padding`
    /// read as torch's `F.pad` order `[left, right, top, bottom]` (simulator/Program_interface.py:17),
    /// convolved with the kernel on the named cores at `stride`, written at `destination`.
    pub(crate) fn conv_core(&mut self, c: &ConvCore, node: Option<&'c Node>) -> Result<(), Stop> {
        let w = self.weights_of(node)?;
        let node = node.ok_or(FaultKind::NoWeights)?;
        let Placed::Conv {
            oc, cin, kh, kw, ..
        } = *w
        else {
            return Err(Stop::Fault(FaultKind::NoWeights));
        };
        self.check_cores(c.cores, node)?;
        let placed = vec![oc, cin, kh, kw];
        if c.kernel.len() != 4 || c.kernel.iter().zip(&placed).any(|(p, q)| *p != *q as i64) {
            return Err(Stop::Fault(FaultKind::KernelShape {
                printed: c.kernel.clone(),
                placed,
            }));
        }
        let s = shape4(&c.ifmsize, "ifmsize")?;
        if s[1] != cin {
            return Err(mismatch(format!(
                "the sub-IFM has {} channels, the kernel {cin}",
                s[1]
            )));
        }
        let stride = two(&c.stride, "stride")?;
        let p = non_negative(&c.padding, "padding")?;
        let [left, right, top, bottom] = p[..] else {
            return Err(bad(format!("padding {:?} is not four entries", c.padding)));
        };
        let pads = Pads {
            top,
            bottom,
            left,
            right,
        };
        let oh = arith::out_extent(s[2], top, bottom, kh, stride.0).unwrap_or(0);
        let ow = arith::out_extent(s[3], left, right, kw, stride.1).unwrap_or(0);
        let out = count(&[s[0], oc, oh, ow])?;
        self.fits(c.dst, out)?;
        self.charge(out.saturating_mul((kh * kw * cin) as u64))?;
        let input = self.read(c.src, count(&s)? as i64)?;
        let (out, _) = arith::conv2d(&input, s, w, stride, pads)?;
        self.write(c.dst, &out)
    }

    /// `CIM.read_core-fc`: each of the `M` rows of `ifmsize[-1]` inputs at `source` times the
    /// `[in, out]` matrix on the named cores, the `M` result rows at `destination`.
    pub(crate) fn fc_core(&mut self, f: &FcCore, node: Option<&'c Node>) -> Result<(), Stop> {
        let w = self.weights_of(node)?;
        let node = node.ok_or(FaultKind::NoWeights)?;
        if !matches!(w, Placed::Linear { .. }) {
            return Err(Stop::Fault(FaultKind::NoWeights));
        }
        self.check_cores(f.cores, node)?;
        let (s, n) = shape(&f.ifmsize, "ifmsize")?;
        let Some(&width) = s.last() else {
            return Err(bad("an empty ifmsize"));
        };
        if width != w.rows() {
            return Err(mismatch(format!(
                "rows of {width} inputs, the matrix has {} rows",
                w.rows()
            )));
        }
        let rows = n / width.max(1);
        self.fits(f.dst, count(&[rows, w.cols()])?)?;
        self.charge((n as u64).saturating_mul(w.cols() as u64))?;
        let input = self.read(f.src, n as i64)?;
        let mut out = Vec::new();
        for r in 0..rows {
            let v = &input[r * width..(r + 1) * width];
            out.extend(w.multiply(v, 0, 0..w.cols()).ok_or(FaultKind::Overflow)?);
        }
        self.write(f.dst, &out)
    }

    /// `MaxPool`/`AveragePool` over the map at `source` (channel-fastest), written at
    /// `destination`. `padding` is ONNX's `pads` as printed (`[top, left, bottom, right]`);
    /// `None` padding is none, and `None` stride is the kernel, as the simulator's
    /// `F.max_pool2d(inp, kernel, stride, padding)` reads `stride=None` (simulator/Program_interface.py:82).
    pub(crate) fn pool(&mut self, p: &Pool) -> Result<(), Stop> {
        let s = shape4(&p.ifmsize, "ifmsize")?;
        let k = two(
            p.kernel.as_deref().ok_or_else(|| bad("no kernel"))?,
            "kernel",
        )?;
        let stride = match &p.stride {
            Some(st) => two(st, "stride")?,
            None => k,
        };
        let pads = match p
            .padding
            .as_deref()
            .map(|v| non_negative(v, "padding"))
            .transpose()?
        {
            None => Pads {
                top: 0,
                bottom: 0,
                left: 0,
                right: 0,
            },
            Some(v) => match v[..] {
                [top, left, bottom, right] => Pads {
                    top,
                    bottom,
                    left,
                    right,
                },
                [h, w] => Pads {
                    top: h,
                    bottom: h,
                    left: w,
                    right: w,
                },
                [a] => Pads {
                    top: a,
                    bottom: a,
                    left: a,
                    right: a,
                },
                _ => return Err(bad(format!("padding {v:?} is not 1, 2 or 4 entries"))),
            },
        };
        let n = count(&s)?;
        let oh = arith::out_extent(s[2], pads.top, pads.bottom, k.0, stride.0).unwrap_or(0);
        let ow = arith::out_extent(s[3], pads.left, pads.right, k.1, stride.1).unwrap_or(0);
        let out = count(&[s[0], s[1], oh, ow])?;
        self.fits(p.dst, out)?;
        self.charge(out.saturating_mul(k.0 as u64).saturating_mul(k.1 as u64))?;
        let input = self.read(p.src, n as i64)?;
        let (out, _) = arith::pool(p.kind, &input, s, k, stride, pads)?;
        self.write(p.dst, &out)
    }

    /// `Relu - length - source -destination`; the other activations are not integer-valued.
    pub(crate) fn activation(
        &mut self,
        func: Func,
        len: i64,
        src: i64,
        dst: i64,
    ) -> Result<(), Stop> {
        if func != Func::Relu {
            return Err(Stop::Unsupported(format!(
                "`{func:?}` does not map integers to integers"
            )));
        }
        let v = self.read(src, len)?;
        let out: Vec<i64> = v.iter().map(|x| (*x).max(0)).collect();
        self.write(dst, &out)
    }

    /// `Add - source1 - source2 - extent1 - extent2 - destination` and the other ALU
    /// operations: element by element when both operands have one size; otherwise with ONNX's
    /// broadcasting over their shapes — printed at the core level, and at the lower levels (which
    /// print element counts, CrossbarWise.py:507) the node's own: its `ifmsize` and its constant
    /// operand's (`srcinit`), when their counts are the printed ones.
    pub(crate) fn alu(&mut self, a: &Alu, node: Option<&Node>) -> Result<(), Stop> {
        let (s1, s2) = match (&a.extent1, &a.extent2) {
            (Extent::Len(n1), Extent::Len(n2)) if n1 == n2 => {
                let x = self.read(a.src1, *n1)?;
                let y = self.read(a.src2, *n2)?;
                let out = x
                    .iter()
                    .zip(&y)
                    .map(|(p, q)| arith::alu(a.op, *p, *q))
                    .collect::<Result<Vec<_>, _>>()?;
                return self.write(a.dst, &out);
            }
            (Extent::Len(n1), Extent::Len(n2)) => {
                self.node_shapes(node, *n1, *n2).ok_or_else(|| {
                    Stop::Unsupported(format!(
                        "operands of {n1} and {n2} elements, and no shapes of the node's that \
                         say how one broadcasts to the other"
                    ))
                })?
            }
            (Extent::Shape(s1), Extent::Shape(s2)) => (s1.clone(), s2.clone()),
            _ => {
                return Err(Stop::Unsupported(
                    "one operand given by its shape, the other by its length".into(),
                ))
            }
        };
        let (s1, n1) = shape(&s1, "extent1")?;
        let (s2, n2) = shape(&s2, "extent2")?;
        let out_shape = arith::broadcast_shape(&s1, &s2)
            .ok_or_else(|| mismatch(format!("shapes {s1:?} and {s2:?} do not broadcast")))?;
        let x = from_buffer_order(&s1, &self.read(a.src1, n1 as i64)?);
        let y = from_buffer_order(&s2, &self.read(a.src2, n2 as i64)?);
        let n = element_count(&out_shape)
            .ok_or_else(|| bad(format!("the broadcast shape {out_shape:?} overflows")))?;
        self.fits(a.dst, n as u64)?;
        self.charge(n as u64)?;
        let out = arith::alu_broadcast(a.op, (&x, &s1), (&y, &s2), &out_shape)?;
        self.write(a.dst, &to_buffer_order(&out_shape, &out))
    }

    /// An ALU node's operand shapes, `ifmsize` and its constant's (`srcinit`,
    /// utils/util.py:354-355; the initializer's shape in layout.json), if they hold `n1` and
    /// `n2` elements.
    fn node_shapes(&self, node: Option<&Node>, n1: i64, n2: i64) -> Option<(Vec<i64>, Vec<i64>)> {
        let node = node?;
        let first = node.ints("ifmsize")?;
        let init = node.attrs.get("srcinit")?.as_str()?;
        let second = &self
            .chip
            .layout
            .initializers
            .iter()
            .find(|i| i.name == init)?
            .shape;
        let count = |s: &[i64]| s.iter().try_fold(1i64, |n, d| n.checked_mul(*d));
        (count(&first) == Some(n1) && count(second) == Some(n2)).then(|| (first, second.clone()))
    }

    /// `Flatten`, `Reshape`, `Transpose`: the tensor at `source` (its `ifmsize`, in the buffer's
    /// order for its rank) rearranged as ONNX's operator does, written at `destination` in the
    /// buffer's order for `ofmsize`. `Expand` is not modelled.
    pub(crate) fn relayout(&mut self, r: &Relayout) -> Result<(), Stop> {
        let (ifm, n) = shape(&r.ifmsize, "ifmsize")?;
        let (ofm, m) = shape(&r.ofmsize, "ofmsize")?;
        if r.len != n as i64 {
            return Err(mismatch(format!(
                "length {}, but ifmsize {ifm:?} holds {n}",
                r.len
            )));
        }
        let values = from_buffer_order(&ifm, &self.read(r.src, r.len)?);
        let (out, out_shape) = match r.op {
            ShapeOp::Flatten | ShapeOp::Reshape => (values, ofm.clone()),
            ShapeOp::Transpose => {
                let perm = r.perm.as_deref().ok_or_else(|| bad("no perm"))?;
                let mut sorted: Vec<i64> = perm.to_vec();
                sorted.sort_unstable();
                if sorted != (0..ifm.len() as i64).collect::<Vec<_>>() {
                    return Err(bad(format!("perm {perm:?} is no permutation of {ifm:?}")));
                }
                let perm: Vec<usize> = perm.iter().map(|p| *p as usize).collect();
                arith::transpose(&values, &ifm, &perm)
            }
            ShapeOp::Expand => return Err(Stop::Unsupported("`Expand` is not modelled".into())),
        };
        if out_shape != ofm || out.len() != m {
            return Err(mismatch(format!(
                "{ifm:?} becomes {out_shape:?}, but ofmsize is {ofm:?}"
            )));
        }
        self.write(r.dst, &to_buffer_order(&ofm, &out))
    }
}

/// The core ranges of a node's weight copies (`corestart`, `core_num`, `dup`).
fn core_copies(node: &Node) -> Result<Vec<(i64, i64)>, Stop> {
    let attr = |attr: &'static str| {
        node.int(attr)
            .ok_or(Stop::Fault(FaultKind::MissingAttribute { attr }))
    };
    let (start, num, dup) = (attr("corestart")?, attr("core_num")?, attr("dup")?);
    Ok((0..dup.clamp(0, 1 << 16))
        .map(|d| {
            let first = start.saturating_add(d.saturating_mul(num));
            (first, first.saturating_add(num).saturating_sub(1))
        })
        .collect())
}
