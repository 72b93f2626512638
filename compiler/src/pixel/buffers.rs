//! Bufferization of the pixel-wise lowering: every core's local-memory map for one output
//! pixel at a time, checked against `local_memory_bytes`.
//!
//! A core holds, in this order: the bias of the classes it owns; its input *patch* (the
//! kernel positions `[kh][kw]` × the channel span its crossbars read, int8), or, when
//! gathering, a slot of the tallest crossbar's rows; one int32 accumulator per run of
//! consecutive owned classes (`[width]`, the run's output channels side by side); one
//! accumulator per class it only contributes to; the scratch rows of further crossbars'
//! products; a receive row for partial sums from other cores.
//!
//! Scratch is *staged* when it fits: one row per further crossbar of each class, so that a
//! pixel's `mvmul`s all run before its `vvadd`s and the widths are switched twice per
//! pixel, not twice per crossbar. Otherwise one row, reused by each crossbar in turn. The
//! fallbacks, in order: staged scratch with a patch, one scratch row with a patch, one
//! scratch row with gathering; only when the last does not fit is the case unsupported.

use std::fmt::Write as _;
use std::ops::Range;

use pimdiff_isa::bundle::IoManifest;
use pimdiff_oracle::Case;

use crate::gmem;
use crate::mapping::Mapping;
use crate::tiling::Spatial;
use crate::{CompileError, Unsupported};

/// The kernel positions and channels a core's crossbars read: the shape of its patch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Patch {
    /// `used[i * kw + j]`: some crossbar of the core sits at kernel position `(i, j)`.
    pub used: Vec<bool>,
    /// First input channel read.
    pub c0: usize,
    /// Channels read (`c0..c0 + span`); a position occupies `span` bytes of the patch.
    pub span: usize,
}

/// Consecutive classes owned by one core: their output channels `k0..k0 + width` are
/// contiguous, so they are finalized and stored together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedRun {
    pub classes: Range<usize>,
    pub k0: usize,
    pub width: usize,
    /// LMem address of the run's accumulator (`width` int32).
    pub acc: u32,
    /// LMem address of the run's bias (`width` int32), when the op has one.
    pub bias: u32,
}

/// One core's local-memory map.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreMap {
    /// The patch shape; `None` for a core without crossbars.
    pub patch: Option<Patch>,
    /// LMem address of the patch (or the gather slot) and its size in bytes.
    pub input: u32,
    pub input_bytes: u32,
    pub runs: Vec<OwnedRun>,
    /// `(class, accumulator address)` of each class the core contributes to but does not own.
    pub contrib: Vec<(usize, u32)>,
    /// With staged scratch, `(class, address)` of each class's first scratch row (its further
    /// crossbars' rows follow); empty with a single scratch row at `scratch`.
    pub staged: Vec<(usize, u32)>,
    pub scratch: u32,
    pub recv: u32,
    /// Bytes used in total.
    pub used: u32,
}

impl CoreMap {
    /// The accumulator of `class` on this core.
    pub fn acc_of(&self, spatial: &Spatial, class: usize) -> u32 {
        if let Some(r) = self.runs.iter().find(|r| r.classes.contains(&class)) {
            return r.acc + (spatial.classes[class].k0 - r.k0) as u32 * 4;
        }
        self.contrib
            .iter()
            .find(|&&(c, _)| c == class)
            .map_or(0, |&(_, a)| a)
    }
}

/// The whole pixel-wise bufferization.
#[derive(Clone, Debug)]
pub struct Buffers {
    /// Crossbar inputs are loaded one tile at a time (no patch fits).
    pub gather: bool,
    /// Further crossbars' products have a scratch row each (see the module doc).
    pub staged: bool,
    pub cores: Vec<CoreMap>,
    pub manifest: IoManifest,
    /// GMem address of the bias segment (meaningful when the op has a bias).
    pub bias_addr: u32,
}

/// What a core holds, independent of where it goes.
#[derive(Clone, Debug, Default)]
struct Needs {
    patch: Option<Patch>,
    /// Rows of the tallest crossbar: the gather slot.
    slot: usize,
    owned: Vec<usize>,
    contrib: Vec<usize>,
    scratch_width: usize,
    /// `(class, width, rows)`: scratch rows for the further crossbars of each class here.
    staged: Vec<(usize, usize, usize)>,
    recv_width: usize,
}

/// Where crossbar inputs come from and how products are added: the fallbacks in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scheme {
    StagedPatch,
    Patch,
    Gather,
}

/// Bufferize for the pixel-wise lowering.
pub fn bufferize(
    case: &Case,
    spatial: &Spatial,
    mapping: &Mapping,
) -> Result<Buffers, CompileError> {
    let p = &spatial.problem;
    gmem::check_instruction_bound(spatial, mapping)?;
    let needs = core_needs(spatial, mapping);
    let lmem = case.spec.arch.local_memory_bytes as u64;
    let (scheme, cores) = choose_scheme(spatial, &needs, lmem)?;
    let gmem::Layout {
        manifest,
        bias_addr,
    } = gmem::layout(case, p)?;
    Ok(Buffers {
        gather: scheme == Scheme::Gather,
        staged: scheme == Scheme::StagedPatch,
        cores,
        manifest,
        bias_addr,
    })
}

/// The local memory at which each scheme starts to be chosen (staged patch, patch, gather):
/// the largest core map of each. Testing reads these to put local memory at a scheme's edge.
pub(crate) fn thresholds(spatial: &Spatial, mapping: &Mapping) -> Vec<u64> {
    let needs = core_needs(spatial, mapping);
    [Scheme::StagedPatch, Scheme::Patch, Scheme::Gather]
        .into_iter()
        .map(|scheme| {
            needs
                .iter()
                .map(|n| lay_out(spatial, n, scheme).used as u64)
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// The first scheme under which every core's map fits `lmem`.
fn choose_scheme(
    spatial: &Spatial,
    needs: &[Needs],
    lmem: u64,
) -> Result<(Scheme, Vec<CoreMap>), CompileError> {
    let mut worst = (0, 0);
    for scheme in [Scheme::StagedPatch, Scheme::Patch, Scheme::Gather] {
        let maps: Vec<CoreMap> = needs.iter().map(|n| lay_out(spatial, n, scheme)).collect();
        match maps.iter().enumerate().max_by_key(|(_, m)| m.used) {
            Some((core, m)) if m.used as u64 > lmem => worst = (core, m.used as u64),
            _ => return Ok((scheme, maps)),
        }
    }
    Err(CompileError::Unsupported(Unsupported::LocalMemory {
        core: worst.0,
        needed: worst.1,
        available: lmem,
    }))
}

/// Every core's patch, owned and contributed classes and buffer widths, from the mapping.
fn core_needs(spatial: &Spatial, mapping: &Mapping) -> Vec<Needs> {
    let p = &spatial.problem;
    let mut needs = vec![Needs::default(); mapping.cores];
    // Channel bounds per core, folded into the patches at the end.
    let mut channels = vec![(usize::MAX, 0usize); mapping.cores];
    for (ci, red) in mapping.reductions.iter().enumerate() {
        let width = spatial.classes[ci].width;
        for part in &red.parts {
            let n = &mut needs[part.core];
            let patch = n.patch.get_or_insert_with(|| Patch {
                used: vec![false; p.kh * p.kw],
                c0: 0,
                span: 0,
            });
            for &pi in &part.placements {
                let x = spatial.xbars[mapping.placements[pi].xbar];
                patch.used[x.i * p.kw + x.j] = true;
                let ch = &mut channels[part.core];
                *ch = (ch.0.min(x.c0), ch.1.max(x.c0 + x.rows));
                n.slot = n.slot.max(x.rows);
            }
            if part.placements.len() >= 2 {
                n.scratch_width = n.scratch_width.max(width);
                n.staged.push((ci, width, part.placements.len() - 1));
            }
            if part.core != red.owner {
                n.contrib.push(ci);
            }
        }
        let o = &mut needs[red.owner];
        o.owned.push(ci);
        if red.parts.iter().any(|part| part.core != red.owner) {
            o.recv_width = o.recv_width.max(width);
        }
    }
    for (n, &(lo, hi)) in needs.iter_mut().zip(&channels) {
        if let Some(patch) = &mut n.patch {
            patch.c0 = lo;
            patch.span = hi - lo;
        }
    }
    needs
}

/// The owned classes cut into runs of consecutive indices: `(first, last + 1)`.
fn owned_runs(owned: &[usize]) -> Vec<Range<usize>> {
    let mut runs: Vec<Range<usize>> = Vec::new();
    for &c in owned {
        match runs.last_mut() {
            Some(r) if r.end == c => r.end += 1,
            _ => runs.push(c..c + 1),
        }
    }
    runs
}

fn align4(x: u64) -> u64 {
    x.div_ceil(4) * 4
}

/// One core's map under `scheme`. `used` may exceed the local memory: the caller checks.
/// Sizes are bounded by the case limits, far below 2^32.
fn lay_out(spatial: &Spatial, n: &Needs, scheme: Scheme) -> CoreMap {
    let p = &spatial.problem;
    let runs = owned_runs(&n.owned);
    let run_width =
        |r: &Range<usize>| -> usize { r.clone().map(|c| spatial.classes[c].width).sum() };
    let mut m = CoreMap {
        patch: n.patch.clone(),
        ..CoreMap::default()
    };
    let mut at = 0u64;
    let mut biases = Vec::with_capacity(runs.len());
    for r in &runs {
        biases.push(at as u32);
        if p.bias {
            at += run_width(r) as u64 * 4;
        }
    }
    if let Some(patch) = &n.patch {
        let bytes = if scheme == Scheme::Gather {
            n.slot as u64
        } else {
            (p.kh * p.kw * patch.span) as u64
        };
        m.input = at as u32;
        m.input_bytes = bytes as u32;
        at = align4(at + bytes);
    }
    for (r, bias) in runs.into_iter().zip(biases) {
        let width = run_width(&r);
        m.runs.push(OwnedRun {
            k0: spatial.classes[r.start].k0,
            classes: r,
            width,
            acc: at as u32,
            bias,
        });
        at += width as u64 * 4;
    }
    for &c in &n.contrib {
        m.contrib.push((c, at as u32));
        at += spatial.classes[c].width as u64 * 4;
    }
    m.scratch = at as u32;
    if scheme == Scheme::StagedPatch {
        for &(c, width, rows) in &n.staged {
            m.staged.push((c, at as u32));
            at += (width * rows) as u64 * 4;
        }
    } else {
        at += n.scratch_width as u64 * 4;
    }
    m.recv = at as u32;
    at += n.recv_width as u64 * 4;
    m.used = at.min(u32::MAX as u64) as u32;
    m
}

/// Text of the pixel-wise bufferization and transfer order (`--emit pim`).
pub fn describe(spatial: &Spatial, mapping: &Mapping, b: &Buffers, out: &mut String) {
    let p = &spatial.problem;
    gmem::describe(&b.manifest, out);
    let _ = writeln!(
        out,
        "pixel-wise: {} pixel(s), one at a time; crossbar inputs {}; {}",
        p.pixels(),
        if b.gather {
            "gathered tile by tile"
        } else {
            "from a per-pixel patch"
        },
        if b.staged {
            "a scratch row per further crossbar"
        } else {
            "one scratch row"
        }
    );
    for (core, m) in b.cores.iter().enumerate() {
        if m.used == 0 {
            continue;
        }
        let _ = write!(out, "core {core} lmem {} bytes:", m.used);
        for r in &m.runs {
            if p.bias {
                let _ = write!(out, " bias[k{}..{}]@{}", r.k0, r.k0 + r.width, r.bias);
            }
        }
        if let Some(patch) = &m.patch {
            let name = if b.gather { "gather slot" } else { "patch" };
            let positions = patch.used.iter().filter(|&&u| u).count();
            let _ = write!(
                out,
                " {name}[{positions} position(s) x c{}..{}]@{}+{}",
                patch.c0,
                patch.c0 + patch.span,
                m.input,
                m.input_bytes
            );
        }
        for r in &m.runs {
            let _ = write!(out, " acc[k{}..{}]@{}", r.k0, r.k0 + r.width, r.acc);
        }
        for &(c, a) in &m.contrib {
            let _ = write!(out, " partial[class {c}]@{a}");
        }
        for &(c, a) in &m.staged {
            let _ = write!(out, " scratch[class {c}]@{a}");
        }
        if m.recv > m.scratch && m.staged.is_empty() {
            let _ = write!(out, " scratch@{}", m.scratch);
        }
        if m.used > m.recv {
            let _ = write!(out, " recv@{}", m.recv);
        }
        out.push('\n');
    }
    let _ = writeln!(out, "per pixel, in this order:");
    for (ci, red) in mapping.reductions.iter().enumerate() {
        let w = spatial.classes[ci].width;
        for part in red.parts.iter().filter(|part| part.core != red.owner) {
            let _ = writeln!(
                out,
                "  class {ci}: core {} sends {w} int32 partial sums to core {} (recv + vvadd), unless none of its crossbars is inside the input",
                part.core, red.owner
            );
        }
    }
    for (core, m) in b.cores.iter().enumerate() {
        for r in &m.runs {
            let _ = writeln!(
                out,
                "  core {core} finalizes k{}..{} (classes {}..{}): {}st",
                r.k0,
                r.k0 + r.width,
                r.classes.start,
                r.classes.end,
                match (p.bias, p.relu) {
                    (true, true) => "bias, relu, ",
                    (true, false) => "bias, ",
                    (false, true) => "relu, ",
                    (false, false) => "",
                }
            );
        }
    }
}
