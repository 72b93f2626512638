//! Stage 1, tiling (the Spatial level): the operator as channel-wise tiles and crossbar
//! matrices.
//!
//! Input channels of each group are cut into tiles of at most `array_rows`, output channels
//! into tiles of at most `array_cols`. One crossbar matrix per (group, input tile, output
//! tile, kernel position): `W[k0..k1, c0..c1, i, j]` transposed to rows = input channels,
//! cols = output channels. An MVM is lowered as the 1×1 convolution of `N` one-pixel images,
//! so the rest of the pipeline has one shape of problem only.
//!
//! The output tiles are the *classes* of the crossbar dependency table: every crossbar of a
//! class adds into the same output channels. Each class is one `applyFilters` of the Spatial
//! IR. Crossbars that can never contribute are marked here (all-zero weights; a kernel
//! position that lies in the padding for every output pixel) and left out by mapping when
//! the corresponding optimization is on.

use pimdiff_oracle::{Case, CaseSpec, Conv2d, Mvm, Op};

fn inconsistent(what: String) -> CompileError {
    CompileError::Internal(format!("inconsistent case: {what}"))
}

use crate::{CompileError, CompileOptions, Unsupported};

/// The operator reduced to a grouped, padded, strided, dilated 2-D convolution over
/// NHWC data. All sizes are in elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The case is an MVM (shapes `[N, features]`); the problem is its 1×1 convolution.
    pub mvm: bool,
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub k: usize,
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    /// Padding top, left, bottom, right.
    pub pt: usize,
    pub pl: usize,
    pub pb: usize,
    pub pr: usize,
    pub dh: usize,
    pub dw: usize,
    pub groups: usize,
    /// Input channels per group.
    pub cg: usize,
    /// Output channels per group.
    pub kg: usize,
    pub oh: usize,
    pub ow: usize,
    pub bias: bool,
    pub relu: bool,
}

impl Problem {
    /// The problem of a case, with its shapes checked against the tensors (a [`Case`] is
    /// valid by construction, but the compiler must not panic on one built by hand).
    pub fn of(case: &Case) -> Result<Problem, CompileError> {
        let s = &case.spec;
        let p = match &s.op {
            Op::Conv2d(cv) => Problem::conv(s, cv)?,
            Op::Mvm(m) => Problem::mvm(s, m)?,
        };
        p.check_tensors(case)?;
        Ok(p)
    }

    fn conv(s: &CaseSpec, cv: &Conv2d) -> Result<Problem, CompileError> {
        let [n, c, h, w] = s.input_shape[..] else {
            return Err(inconsistent(format!(
                "conv2d input_shape {:?} is not [N, C, H, W]",
                s.input_shape
            )));
        };
        let [kh, kw] = cv.kernel;
        let [sh, sw] = cv.stride;
        let [dh, dw] = cv.dilation;
        let [pt, pl, pb, pr] = cv.padding;
        let g = cv.groups;
        if g == 0
            || c != cv.in_channels
            || !c.is_multiple_of(g)
            || !cv.out_channels.is_multiple_of(g)
        {
            return Err(inconsistent(format!(
                "channels {} -> {} with {} groups and input_shape {:?}",
                cv.in_channels, cv.out_channels, g, s.input_shape
            )));
        }
        if [n, c, h, w, kh, kw, sh, sw, dh, dw, cv.out_channels].contains(&0) {
            return Err(inconsistent("a zero size, stride or dilation".into()));
        }
        let ext_h = dh * (kh - 1) + 1;
        let ext_w = dw * (kw - 1) + 1;
        if h + pt + pb < ext_h || w + pl + pr < ext_w {
            return Err(inconsistent(
                "the dilated kernel is larger than the padded input".into(),
            ));
        }
        Ok(Problem {
            mvm: false,
            n,
            c,
            h,
            w,
            k: cv.out_channels,
            kh,
            kw,
            sh,
            sw,
            pt,
            pl,
            pb,
            pr,
            dh,
            dw,
            groups: g,
            cg: c / g,
            kg: cv.out_channels / g,
            oh: (h + pt + pb - ext_h) / sh + 1,
            ow: (w + pl + pr - ext_w) / sw + 1,
            bias: cv.bias,
            relu: cv.relu,
        })
    }

    fn mvm(s: &CaseSpec, m: &Mvm) -> Result<Problem, CompileError> {
        let [n, f] = s.input_shape[..] else {
            return Err(inconsistent(format!(
                "mvm input_shape {:?} is not [N, features]",
                s.input_shape
            )));
        };
        if n == 0 || f == 0 || f != m.in_features || m.out_features == 0 {
            return Err(inconsistent(format!(
                "mvm {} -> {} with input_shape {:?}",
                m.in_features, m.out_features, s.input_shape
            )));
        }
        Ok(Problem {
            mvm: true,
            n,
            c: f,
            h: 1,
            w: 1,
            k: m.out_features,
            kh: 1,
            kw: 1,
            sh: 1,
            sw: 1,
            pt: 0,
            pl: 0,
            pb: 0,
            pr: 0,
            dh: 1,
            dw: 1,
            groups: 1,
            cg: f,
            kg: m.out_features,
            oh: 1,
            ow: 1,
            bias: m.bias,
            relu: m.relu,
        })
    }

    /// The weight, input and bias tensors have the shapes the problem says.
    fn check_tensors(&self, case: &Case) -> Result<(), CompileError> {
        let p = self;
        let s = &case.spec;
        let weight_shape: Vec<usize> = if p.mvm {
            vec![p.k, p.c]
        } else {
            vec![p.k, p.cg, p.kh, p.kw]
        };
        if case.weight.shape() != weight_shape.as_slice() {
            return Err(inconsistent(format!(
                "weight shape {:?}, expected {:?}",
                case.weight.shape(),
                weight_shape
            )));
        }
        if case.input.shape() != s.input_shape.as_slice() {
            return Err(inconsistent(format!(
                "input shape {:?}, expected {:?}",
                case.input.shape(),
                s.input_shape
            )));
        }
        match (&case.bias, p.bias) {
            (Some(b), true) if b.len() == p.k => {}
            (None, false) => {}
            _ => {
                return Err(inconsistent(format!(
                    "bias presence/length disagrees with op.bias = {}",
                    p.bias
                )))
            }
        }
        Ok(())
    }

    /// Output pixels (all images).
    pub fn pixels(&self) -> usize {
        self.n * self.oh * self.ow
    }

    /// Input row read by output row `oh` at kernel row `i`, in padded coordinates
    /// (negative or `>= h` means padding).
    pub fn in_row(&self, oh: usize, i: usize) -> i64 {
        (oh * self.sh + i * self.dh) as i64 - self.pt as i64
    }

    /// Input column read by output column `ow` at kernel column `j`.
    pub fn in_col(&self, ow: usize, j: usize) -> i64 {
        (ow * self.sw + j * self.dw) as i64 - self.pl as i64
    }

    /// Kernel row `i` reads a real input row for at least one output row.
    fn row_ever_valid(&self, i: usize) -> bool {
        (0..self.oh).any(|oh| (0..self.h as i64).contains(&self.in_row(oh, i)))
    }

    fn col_ever_valid(&self, j: usize) -> bool {
        (0..self.ow).any(|ow| (0..self.w as i64).contains(&self.in_col(ow, j)))
    }
}

/// An output tile: `width` consecutive output channels from `k0`, inside group `group`.
/// All crossbars of a class add into the same outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Class {
    pub group: usize,
    /// First output channel (global index).
    pub k0: usize,
    pub width: usize,
}

/// Why a crossbar is left out of the mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// Every weight is zero (weight skipping).
    ZeroWeights,
    /// The kernel position lies in the padding for every output pixel (padding skipping).
    AlwaysPadding,
}

/// One crossbar matrix: rows = input channels `c0..c0+rows`, cols = the class's output
/// channels, at kernel position `(i, j)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crossbar {
    pub class: usize,
    /// First input channel (global index, i.e. `group * cg + tile start`).
    pub c0: usize,
    pub rows: usize,
    pub i: usize,
    pub j: usize,
    /// `Some` when the options leave this crossbar out.
    pub skip: Option<Skip>,
}

/// The Spatial IR: one `applyFilters` per class over its crossbars.
#[derive(Clone, Debug)]
pub struct Spatial {
    pub problem: Problem,
    pub classes: Vec<Class>,
    /// Ordered by class, then input tile, then kernel position; `class_xbars[c]` indexes it.
    pub xbars: Vec<Crossbar>,
    pub class_xbars: Vec<std::ops::Range<usize>>,
}

/// The weights of a case as a flat `[K, C/groups, kh, kw]` slice (an MVM's `[out, in]` is
/// the same with `kh = kw = 1`).
pub(crate) fn flat_weights(case: &Case) -> std::borrow::Cow<'_, [i8]> {
    match case.weight.as_slice() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(case.weight.iter().copied().collect()),
    }
}

/// Weight `W[k][ci][i][j]` (ci within the group) of the flat slice.
#[inline]
pub(crate) fn weight_at(p: &Problem, w: &[i8], k: usize, ci: usize, i: usize, j: usize) -> i8 {
    w[((k * p.cg + ci) * p.kh + i) * p.kw + j]
}

/// Above this many crossbar matrices the tiler counts the kept ones before building the IR.
pub const MAX_CROSSBARS_BUILT: u64 = 1 << 20;

/// Build the Spatial IR: tiles, classes and crossbars, with skip marks per the options.
pub fn tile(case: &Case, options: &CompileOptions) -> Result<Spatial, CompileError> {
    let p = Problem::of(case)?;
    let rows = case.spec.arch.array_rows;
    let cols = case.spec.arch.array_cols;
    if rows == 0 || cols == 0 {
        return Err(CompileError::Internal(
            "arch: array_rows and array_cols must be >= 1".into(),
        ));
    }
    let weights = flat_weights(case);
    let row_ok: Vec<bool> = (0..p.kh).map(|i| p.row_ever_valid(i)).collect();
    let col_ok: Vec<bool> = (0..p.kw).map(|j| p.col_ever_valid(j)).collect();
    let skip_of = |class: &Class, it: usize, n_rows: usize, i: usize, j: usize| {
        if options.skip_padding && !(row_ok[i] && col_ok[j]) {
            Some(Skip::AlwaysPadding)
        } else if options.weight_skipping
            && (class.k0..class.k0 + class.width)
                .all(|k| (it..it + n_rows).all(|ci| weight_at(&p, &weights, k, ci, i, j) == 0))
        {
            Some(Skip::ZeroWeights)
        } else {
            None
        }
    };
    // Every (class, input tile, kernel position), in IR order.
    let each = |f: &mut dyn FnMut(usize, Class, usize, usize, usize, usize)| {
        let mut id = 0;
        for g in 0..p.groups {
            for ot in (0..p.kg).step_by(cols) {
                let class = Class {
                    group: g,
                    k0: g * p.kg + ot,
                    width: cols.min(p.kg - ot),
                };
                for it in (0..p.cg).step_by(rows) {
                    for i in 0..p.kh {
                        for j in 0..p.kw {
                            f(id, class, it, rows.min(p.cg - it), i, j);
                        }
                    }
                }
                id += 1;
            }
        }
    };
    // A case with very many crossbar matrices (tiny arrays, huge channel counts) is first
    // counted without building the IR, so that one that cannot fit is declined cheaply.
    let total = p.groups as u64
        * p.cg.div_ceil(rows) as u64
        * p.kg.div_ceil(cols) as u64
        * (p.kh * p.kw) as u64;
    if total > MAX_CROSSBARS_BUILT {
        let available = case
            .spec
            .arch
            .cores
            .saturating_mul(case.spec.arch.arrays_per_core);
        let mut needed = 0usize;
        each(&mut |_, class, it, n_rows, i, j| {
            needed += skip_of(&class, it, n_rows, i, j).is_none() as usize;
        });
        if needed > available {
            return Err(CompileError::Unsupported(Unsupported::NotEnoughArrays {
                needed,
                available,
            }));
        }
    }
    let mut classes: Vec<Class> = Vec::new();
    let mut xbars = Vec::new();
    let mut class_xbars: Vec<std::ops::Range<usize>> = Vec::new();
    each(&mut |id, class, it, n_rows, i, j| {
        if id == classes.len() {
            classes.push(class);
            class_xbars.push(xbars.len()..xbars.len());
        }
        let skip = skip_of(&class, it, n_rows, i, j);
        xbars.push(Crossbar {
            class: id,
            c0: class.group * p.cg + it,
            rows: n_rows,
            i,
            j,
            skip,
        });
        class_xbars[id].end = xbars.len();
    });
    Ok(Spatial {
        problem: p,
        classes,
        xbars,
        class_xbars,
    })
}
