//! Localization by provenance: which `mvmul` gathered the wrong input, and which instruction
//! put the wrong element there.
//!
//! A mismatching node says *that* a layer is wrong, not *where*. The side table says, for every
//! `mvmul`, which input elements it must multiply: its node, its AG (rows of the GEMM matrix,
//! `(kh, kw, cin)` order) and its output pixel give, row by row, an element of the provider's
//! output or a padding zero. The interpreter's [`Provenance`] observer follows every byte of
//! the run to where it came from: a global address (the image, a preloaded provider tensor), an
//! immediate, or — in element mode — a node's output, tagged where the rewritten program stores
//! its `VER` probe. A window is *checked* when every row's expected source is known, *wrong*
//! when some gathered byte did not come from there; for the first wrong window (lowest core,
//! then instruction index, so the answer does not depend on the schedule) the differing rows
//! and the instructions that last wrote them are reported.

use std::collections::BTreeSet;

use pimdiff_isa::machine::{
    ByteOrigin, Bytes, Event, InstAt, Machine, Observer, Origin, Provenance, RunStart, Site, Space,
    View,
};
use pimdiff_isa::{Inst, Program};
use pimdiff_oracle::graph::NodeOp;

use super::align::Alignment;
use super::model::{Mode, Model};
use super::rewrite::Layout;
use super::table::{AgInfo, TInst};
use super::verdict::{InstRef, NodeVerdict, SourceDiff};

/// Runs `machine` (the rewritten program, preloads written) under a [`Localizer`] and fills
/// each verdict's localization fields.
pub fn localize(ctx: &Context, mut machine: Machine, verdicts: &mut [NodeVerdict]) {
    let mut localizer = Localizer::new(ctx);
    machine.run_observed(&mut localizer);
    for (v, w) in verdicts.iter_mut().zip(localizer.finish()) {
        v.windows_checked = w.checked;
        v.windows_wrong = w.wrong;
        v.first_wrong_mvmul = w.first_wrong;
        v.writers = w.writers;
        v.first_wrong_sources = w.sources;
    }
}

/// Where an `mvmul` input row must come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// A global byte as preloaded (the image, or a provider tensor in batch mode).
    Gmem(u32),
    /// Element `.1` of node `.0`'s output (element mode, tagged at its probe).
    Node(u32, u32),
    /// A padding position: the immediate 0.
    Pad,
}

/// What the localization found for one node.
#[derive(Clone, Debug, Default)]
pub struct NodeWindows {
    pub checked: u64,
    pub wrong: u64,
    pub first_wrong: Option<InstRef>,
    pub sources: Vec<SourceDiff>,
    pub writers: Vec<InstRef>,
}

/// Everything the localizer needs to know besides the run.
pub struct Context<'a> {
    pub program: &'a Program,
    pub table: &'a [Option<Vec<TInst>>],
    pub alignment: &'a Alignment,
    /// Per core, each rewritten instruction's index in `program` (`None`: inserted).
    pub origin: &'a [Vec<Option<u32>>],
    pub ags: &'a [AgInfo],
    pub model: &'a Model,
    pub layout: &'a Layout,
    pub mode: Mode,
}

/// The observer: provenance plus a check of every `mvmul`'s input window.
pub struct Localizer<'a> {
    ctx: &'a Context<'a>,
    prov: Provenance,
    /// Per core, per rewritten instruction: its table index (`u32::MAX`: none).
    table_of: Vec<Vec<u32>>,
    /// `(start, end, node)` of each probe region, sorted.
    probes: Vec<(u32, u32, u32)>,
    nodes: Vec<NodeWindows>,
    /// The first wrong window per node, as `(core, index)` to keep the lowest.
    first: Vec<Option<(u32, u32)>>,
    buf: Vec<ByteOrigin>,
}

impl<'a> Localizer<'a> {
    pub fn new(ctx: &'a Context<'a>) -> Self {
        let table_of = ctx
            .origin
            .iter()
            .enumerate()
            .map(|(c, origin)| {
                let mut by_index = vec![u32::MAX; ctx.program.cores[c].len()];
                for &(i, j) in &ctx.alignment.pairs[c] {
                    by_index[i as usize] = j;
                }
                origin
                    .iter()
                    .map(|o| o.map_or(u32::MAX, |i| by_index[i as usize]))
                    .collect()
            })
            .collect();
        let mut probes: Vec<(u32, u32, u32)> = ctx
            .layout
            .probe
            .iter()
            .map(|(&n, &base)| (base, base + ctx.model.nodes[n].shape.len() as u32, n as u32))
            .collect();
        probes.sort_unstable();
        let n = ctx.model.nodes.len();
        Localizer {
            ctx,
            prov: Provenance::new(),
            table_of,
            probes,
            nodes: vec![NodeWindows::default(); n],
            first: vec![None; n],
            buf: Vec::new(),
        }
    }

    /// The per-node results.
    pub fn finish(self) -> Vec<NodeWindows> {
        self.nodes
    }

    fn inst_ref(&self, at: InstAt) -> Option<InstRef> {
        let index = self.ctx.origin[at.core as usize][at.pc as usize]?;
        Some(InstRef {
            core: at.core,
            index,
            text: self.ctx.program.cores[at.core as usize][index as usize].to_string(),
        })
    }

    fn check_window(&mut self, at: &Site, src: Bytes) {
        let j = self.table_of[at.core as usize][at.pc as usize];
        let Some(t) = self
            .ctx
            .table
            .get(at.core as usize)
            .and_then(|t| t.as_ref())
            .and_then(|t| t.get(j as usize))
        else {
            return;
        };
        let node = t.node.max(0) as usize;
        let Some(row0) = self
            .ctx
            .ags
            .get(t.peer.max(0) as usize)
            .map(|a| a.height_start)
        else {
            return;
        };
        let mut expected = Vec::with_capacity(src.len as usize);
        for k in 0..src.len {
            match expect(self.ctx, t, node, (row0 + k) as usize) {
                Some(e) => expected.push(e),
                None => return,
            }
        }
        let mut origins = std::mem::take(&mut self.buf);
        self.prov.origins(src, &mut origins);
        let wrong: Vec<usize> = (0..expected.len())
            .filter(|&k| !agrees(expected[k], origins[k]))
            .collect();
        let w = &mut self.nodes[node];
        w.checked += 1;
        if !wrong.is_empty() {
            w.wrong += 1;
            let index = self.ctx.origin[at.core as usize][at.pc as usize].unwrap_or(at.pc);
            let key = (at.core, index);
            if self.first[node].is_none_or(|f| key < f) {
                self.first[node] = Some(key);
                self.record_first(at, node, &wrong, &expected, &origins);
            }
        }
        self.buf = origins;
    }

    fn record_first(
        &mut self,
        at: &Site,
        node: usize,
        wrong: &[usize],
        expected: &[Expect],
        origins: &[ByteOrigin],
    ) {
        let sources: Vec<SourceDiff> = wrong
            .iter()
            .map(|&k| SourceDiff {
                element: k as u32,
                expected: describe_expect(self.ctx, expected[k]),
                actual: describe_origin(self.ctx, origins[k]),
                writer: origins[k].writer.and_then(|w| self.inst_ref(w)),
            })
            .collect();
        let writers: BTreeSet<(u32, u32)> = sources
            .iter()
            .filter_map(|s| s.writer.as_ref().map(|w| (w.core, w.index)))
            .collect();
        let program = self.ctx.program;
        let index = self.ctx.origin[at.core as usize][at.pc as usize].unwrap_or(at.pc);
        let w = &mut self.nodes[node];
        w.first_wrong = Some(InstRef {
            core: at.core,
            index,
            text: program.cores[at.core as usize]
                .get(index as usize)
                .map_or_else(|| at.inst.to_string(), Inst::to_string),
        });
        w.writers = writers
            .into_iter()
            .map(|(core, index)| InstRef {
                core,
                index,
                text: program.cores[core as usize][index as usize].to_string(),
            })
            .collect();
        w.sources = sources;
    }
}

impl Observer for Localizer<'_> {
    fn start(&mut self, run: &RunStart<'_>) {
        self.prov.start(run);
    }

    fn event(&mut self, at: &Site, event: &Event<'_>, view: &View<'_>) {
        if let (Event::Compute { srcs, .. }, Inst::Mvmul { .. }) = (event, at.inst) {
            if let Some(&src) = srcs.first() {
                self.check_window(at, src);
            }
        }
        self.prov.event(at, event, view);
        // A probe store (an inserted `st` into a probe region): its local bytes are node
        // outputs from now on.
        if let Event::Copy { srcs, dst } = event {
            let inserted = self.ctx.origin[at.core as usize][at.pc as usize].is_none();
            if inserted && dst.space == Space::Gmem && srcs.len() == 1 {
                let i = self.probes.partition_point(|p| p.0 <= dst.start);
                if let Some(&(base, end, node)) = i.checked_sub(1).map(|i| &self.probes[i]) {
                    if dst.end() <= end as u64 {
                        self.prov.tag(srcs[0], node, dst.start - base);
                    }
                }
            }
        }
    }
}

/// The source of row `row` of `t`'s window, `None` when it cannot be known (the provider is
/// neither the image, a preloaded tensor nor a probed node).
fn expect(ctx: &Context, t: &TInst, node: usize, row: usize) -> Option<Expect> {
    let g = &ctx.model.graph.nodes[node];
    let provider = *g.inputs.first()?;
    let element = match &g.op {
        NodeOp::Conv(c) => {
            let in_shape = ctx.model.nodes[provider].shape;
            let out_w = ctx.model.nodes[node].shape.w.max(1);
            let cycle = t.cycle.max(0) as usize;
            let (oh, ow) = (cycle / out_w, cycle % out_w);
            let cin = c.in_channels.max(1);
            let kw = c.kernel[1].max(1);
            let (i, j, ch) = (row / (kw * cin), (row / cin) % kw, row % cin);
            let ih = (oh * c.stride[0] + i) as i64 - c.padding[0] as i64;
            let iw = (ow * c.stride[1] + j) as i64 - c.padding[1] as i64;
            if ih < 0 || iw < 0 || ih >= in_shape.h as i64 || iw >= in_shape.w as i64 {
                return Some(Expect::Pad);
            }
            (ih as usize * in_shape.w + iw as usize) * cin + ch
        }
        NodeOp::FullyConnected(_) => row,
        _ => return None,
    };
    source(ctx, provider, element as u32)
}

/// Where element `e` of node `p`'s output is found, following identity-like nodes back.
fn source(ctx: &Context, mut p: usize, e: u32) -> Option<Expect> {
    loop {
        match ctx.mode {
            Mode::Batch => {
                if let Some(&base) = ctx.layout.input_region.get(&p) {
                    return Some(Expect::Gmem(base + e));
                }
            }
            Mode::Element => {
                if ctx.layout.probe.contains_key(&p) {
                    return Some(Expect::Node(p as u32, e));
                }
            }
        }
        let g = &ctx.model.graph.nodes[p];
        match g.op {
            NodeOp::Input(_) => return Some(Expect::Gmem(e)),
            NodeOp::Identity | NodeOp::Flatten if g.inputs.len() == 1 => p = g.inputs[0],
            _ => return None,
        }
    }
}

fn agrees(e: Expect, b: ByteOrigin) -> bool {
    match (e, b.origin) {
        (Expect::Gmem(a), Origin::Gmem(g)) => a == g,
        (Expect::Node(n, i), Origin::Tag(tn, ti)) => n == tn && i == ti,
        (Expect::Pad, Origin::Imm(0)) => true,
        (Expect::Pad, Origin::Unknown) => b.writer.is_none(),
        _ => false,
    }
}

/// A global address in words: which region it falls in.
fn describe_gmem(ctx: &Context, a: u32) -> String {
    let l = ctx.layout;
    if a < l.image_len {
        return format!("gmem {a} (image element {a})");
    }
    let regions = l
        .input_region
        .iter()
        .map(|(&n, &b)| (n, b, "preloaded"))
        .chain(l.output_region.iter().map(|(&n, &b)| (n, b, "stored")))
        .chain(l.probe.iter().map(|(&n, &b)| (n, b, "probe")));
    for (n, base, what) in regions {
        let len = ctx.model.nodes[n].shape.len() as u32;
        if a >= base && a < base + len {
            return format!(
                "gmem {a} ({what} node {n} `{}` element {})",
                ctx.model.nodes[n].name,
                a - base
            );
        }
    }
    format!("gmem {a}")
}

fn describe_expect(ctx: &Context, e: Expect) -> String {
    match e {
        Expect::Gmem(a) => describe_gmem(ctx, a),
        Expect::Node(n, i) => format!(
            "node {n} `{}` element {i}",
            ctx.model.nodes[n as usize].name
        ),
        Expect::Pad => "padding (immediate 0)".into(),
    }
}

fn describe_origin(ctx: &Context, b: ByteOrigin) -> String {
    match b.origin {
        Origin::Unknown => "never written".into(),
        Origin::Gmem(a) => describe_gmem(ctx, a),
        Origin::Imm(v) => format!("immediate {}", v as i8),
        Origin::Computed => "computed (not a tagged node output)".into(),
        Origin::Tag(n, i) => describe_expect(ctx, Expect::Node(n, i)),
    }
}
