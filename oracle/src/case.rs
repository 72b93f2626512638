//! The case: one operator, one set of tensors, one target architecture
//! (`docs/case-format.md`, version 1).
//!
//! These types are the vocabulary shared by the generator, the compiler, the oracle and
//! the corpus. A [`Case`] value is always *valid* (shapes agree, sizes within
//! [`limits`]); the reader and [`Case::new`] are the only ways to build one
//! from untrusted parts.

use ndarray::{Array1, ArrayD};
use serde::{Deserialize, Serialize};

use crate::error::{
    CaseError, OracleError, BIAS_NPY, CASE_JSON, EXPECTED_NPY, INPUT_NPY, WEIGHT_NPY,
};
use crate::limits;

/// The operator of a case (`op` in `case.json`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Op {
    Conv2d(Conv2d),
    Mvm(Mvm),
}

/// A 2-D convolution over NCHW input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Conv2d {
    pub in_channels: usize,
    pub out_channels: usize,
    /// `[kh, kw]`.
    pub kernel: [usize; 2],
    /// `[along H, along W]`, each >= 1.
    pub stride: [usize; 2],
    /// `[top, left, bottom, right]` (ONNX `pads` order).
    pub padding: [usize; 4],
    /// `[along H, along W]`, each >= 1.
    pub dilation: [usize; 2],
    pub groups: usize,
    pub bias: bool,
    pub relu: bool,
}

/// A matrix-vector multiplication `y = W x (+ b)` over `N` input rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Mvm {
    pub in_features: usize,
    pub out_features: usize,
    pub bias: bool,
    pub relu: bool,
}

/// The target architecture (`arch` in `case.json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CaseArch {
    pub cores: usize,
    pub arrays_per_core: usize,
    pub array_rows: usize,
    pub array_cols: usize,
    pub local_memory_bytes: usize,
}

/// Everything `case.json` says: operator, input shape, architecture.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CaseSpec {
    pub op: Op,
    /// conv2d: `[N, C, H, W]`; mvm: `[N, in_features]`.
    pub input_shape: Vec<usize>,
    pub arch: CaseArch,
}

/// A whole case: the spec and its tensors. Shapes agree with the spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    pub spec: CaseSpec,
    /// conv2d `[N, C, H, W]`, mvm `[N, in_features]`.
    pub input: ArrayD<i8>,
    /// conv2d `[K, C/groups, kh, kw]`, mvm `[out_features, in_features]`.
    pub weight: ArrayD<i8>,
    /// Present exactly when the op has `bias: true`; length K / out_features.
    pub bias: Option<Array1<i32>>,
    /// `expected.npy`, when the case carries one.
    pub expected: Option<ArrayD<i32>>,
}

impl Conv2d {
    /// Output `(OH, OW)` for an `h × w` input, as in ONNX and PyTorch:
    /// `OH = floor((H + top + bottom - dilation_h·(kh-1) - 1) / stride_h) + 1`.
    ///
    /// `None` when the output would be below 1 in either direction (the dilated kernel is
    /// larger than the padded input), or when a stride is 0 or the arithmetic overflows.
    pub fn output_hw(&self, h: usize, w: usize) -> Option<(usize, usize)> {
        let oh = output_extent(
            h,
            self.padding[0],
            self.padding[2],
            self.kernel[0],
            self.stride[0],
            self.dilation[0],
        )
        .ok()?;
        let ow = output_extent(
            w,
            self.padding[1],
            self.padding[3],
            self.kernel[1],
            self.stride[1],
            self.dilation[1],
        )
        .ok()?;
        Some((oh, ow))
    }

    /// Checks the operator on its own: every size at least 1 and within
    /// [`limits`], `groups` dividing both channel counts. Field names in the
    /// errors are those of `case.json` (`op.kernel[0]`, ...).
    pub fn validate(&self) -> Result<(), CaseError> {
        dim("op.in_channels", self.in_channels)?;
        dim("op.out_channels", self.out_channels)?;
        dim("op.kernel[0]", self.kernel[0])?;
        dim("op.kernel[1]", self.kernel[1])?;
        for (i, &s) in self.stride.iter().enumerate() {
            window_param(&format!("op.stride[{i}]"), s, true)?;
        }
        for (i, &d) in self.dilation.iter().enumerate() {
            window_param(&format!("op.dilation[{i}]"), d, true)?;
        }
        for (i, &p) in self.padding.iter().enumerate() {
            window_param(&format!("op.padding[{i}]"), p, false)?;
        }
        dim("op.groups", self.groups)?;
        for (field, value) in [
            ("op.in_channels", self.in_channels),
            ("op.out_channels", self.out_channels),
        ] {
            if value % self.groups != 0 {
                return Err(CaseError::GroupsDoNotDivide {
                    field,
                    value,
                    groups: self.groups,
                });
            }
        }
        Ok(())
    }

    /// Weight shape `[K, C/groups, kh, kw]` (0 channels when `groups` is 0).
    pub fn weight_shape(&self) -> [usize; 4] {
        let per_group = self.in_channels.checked_div(self.groups).unwrap_or(0);
        [self.out_channels, per_group, self.kernel[0], self.kernel[1]]
    }
}

impl Mvm {
    /// Checks both feature counts: at least 1 and within [`limits::MAX_DIM`].
    pub fn validate(&self) -> Result<(), CaseError> {
        dim("op.in_features", self.in_features)?;
        dim("op.out_features", self.out_features)
    }
}

impl Op {
    /// Checks the operator on its own (see [`Conv2d::validate`], [`Mvm::validate`]).
    pub fn validate(&self) -> Result<(), CaseError> {
        match self {
            Op::Conv2d(c) => c.validate(),
            Op::Mvm(m) => m.validate(),
        }
    }

    /// Whether the operator adds a bias (and so whether `bias.npy` belongs to the case).
    pub fn has_bias(&self) -> bool {
        match self {
            Op::Conv2d(c) => c.bias,
            Op::Mvm(m) => m.bias,
        }
    }

    /// Whether ReLU is applied to the final result.
    pub fn has_relu(&self) -> bool {
        match self {
            Op::Conv2d(c) => c.relu,
            Op::Mvm(m) => m.relu,
        }
    }

    /// `"conv2d"` or `"mvm"`, as in `op.kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Op::Conv2d(_) => "conv2d",
            Op::Mvm(_) => "mvm",
        }
    }
}

impl CaseArch {
    /// Checks every field: at least 1 and within [`limits`], including the
    /// chip-wide totals of local memory and crossbar cells.
    pub fn validate(&self) -> Result<(), CaseError> {
        let fields = [
            ("arch.cores", self.cores, limits::MAX_CORES, "MAX_CORES"),
            (
                "arch.arrays_per_core",
                self.arrays_per_core,
                limits::MAX_ARRAYS_PER_CORE,
                "MAX_ARRAYS_PER_CORE",
            ),
            (
                "arch.array_rows",
                self.array_rows,
                limits::MAX_ARRAY_DIM,
                "MAX_ARRAY_DIM",
            ),
            (
                "arch.array_cols",
                self.array_cols,
                limits::MAX_ARRAY_DIM,
                "MAX_ARRAY_DIM",
            ),
            (
                "arch.local_memory_bytes",
                self.local_memory_bytes,
                limits::MAX_LOCAL_MEMORY_BYTES,
                "MAX_LOCAL_MEMORY_BYTES",
            ),
        ];
        for (field, value, limit, name) in fields {
            nonzero(CASE_JSON, field, value)?;
            within(CASE_JSON, field, value as u128, limit as u128, name)?;
        }
        let memory = self.cores as u128 * self.local_memory_bytes as u128;
        within(
            CASE_JSON,
            "arch.cores × arch.local_memory_bytes",
            memory,
            limits::MAX_TOTAL_LOCAL_MEMORY_BYTES as u128,
            "MAX_TOTAL_LOCAL_MEMORY_BYTES",
        )?;
        let cells = self.cores as u128
            * self.arrays_per_core as u128
            * self.array_rows as u128
            * self.array_cols as u128;
        within(
            CASE_JSON,
            "crossbar cells (cores × arrays_per_core × array_rows × array_cols)",
            cells,
            limits::MAX_TOTAL_CROSSBAR_CELLS as u128,
            "MAX_TOTAL_CROSSBAR_CELLS",
        )
    }
}

impl CaseSpec {
    /// Checks everything `case.json` can get wrong on its own: zero sizes, `groups`,
    /// `input_shape` against the operator, an output below 1, the architecture, and every
    /// [`limits`] bound (dimensions, element counts of input, weight and
    /// output, total multiply-accumulates).
    pub fn validate(&self) -> Result<(), CaseError> {
        validate_operator(&self.op, &self.input_shape)?;
        self.arch.validate()
    }

    /// Output shape: conv2d `[N, K, OH, OW]`, mvm `[N, out_features]`.
    ///
    /// Meaningful for a valid spec; for an invalid one, sizes that cannot be computed
    /// (a missing dimension, an output below 1) are 0.
    pub fn output_shape(&self) -> Vec<usize> {
        let n = self.input_shape.first().copied().unwrap_or(0);
        match &self.op {
            Op::Conv2d(c) => {
                let (h, w) = (self.input_shape.get(2), self.input_shape.get(3));
                let (oh, ow) = match (h, w) {
                    (Some(&h), Some(&w)) => c.output_hw(h, w).unwrap_or((0, 0)),
                    _ => (0, 0),
                };
                vec![n, c.out_channels, oh, ow]
            }
            Op::Mvm(m) => vec![n, m.out_features],
        }
    }

    /// Weight shape: conv2d `[K, C/groups, kh, kw]`, mvm `[out_features, in_features]`.
    pub fn weight_shape(&self) -> Vec<usize> {
        match &self.op {
            Op::Conv2d(c) => c.weight_shape().to_vec(),
            Op::Mvm(m) => vec![m.out_features, m.in_features],
        }
    }

    /// Length of the bias vector when the operator has one.
    pub fn bias_len(&self) -> Option<usize> {
        match &self.op {
            Op::Conv2d(c) => c.bias.then_some(c.out_channels),
            Op::Mvm(m) => m.bias.then_some(m.out_features),
        }
    }

    /// Multiply-accumulates of the operator (0 for an invalid spec whose output is empty).
    pub fn macs(&self) -> u128 {
        let out: u128 = self.output_shape().iter().map(|&d| d as u128).product();
        out * self.terms_per_output()
    }

    /// Products summed into each output value (at most: padding contributes zeros).
    pub fn terms_per_output(&self) -> u128 {
        match &self.op {
            Op::Conv2d(c) => {
                let [_, cg, kh, kw] = c.weight_shape();
                cg as u128 * kh as u128 * kw as u128
            }
            Op::Mvm(m) => m.in_features as u128,
        }
    }
}

impl Case {
    /// Builds a case from untrusted parts: validates the spec, checks every tensor's shape
    /// against it (and that `bias` is present exactly when the operator has one), and
    /// computes the exact result to make sure it fits int32 (before and after ReLU).
    ///
    /// `expected` is only checked for shape: whether it equals the oracle's output is a
    /// finding to report, not a malformed case (see `pimdiff oracle`).
    ///
    /// Tensors are stored in standard (row-major) layout whatever layout they came in.
    pub fn new(
        spec: CaseSpec,
        input: ArrayD<i8>,
        weight: ArrayD<i8>,
        bias: Option<Array1<i32>>,
        expected: Option<ArrayD<i32>>,
    ) -> Result<Case, CaseError> {
        let case = Case {
            spec,
            input: standard(input),
            weight: standard(weight),
            bias: bias.map(standard),
            expected: expected.map(standard),
        };
        case.check_shapes()?;
        if case.cannot_overflow() {
            return Ok(case);
        }
        match crate::reference(&case) {
            Ok(_) => Ok(case),
            Err(OracleError::Overflow { index, value }) => {
                Err(CaseError::ResultOverflow { index, value })
            }
            Err(OracleError::Invalid(e)) => Err(e),
            Err(OracleError::Internal(m)) => Err(CaseError::Internal(m)),
        }
    }
}

impl Case {
    /// Whether no output can leave int32 whatever the values: every product of two int8 values
    /// is at most 2^14 in magnitude, so `terms · 2^14 + max |bias|` bounds every output before
    /// ReLU. True for every case the generators make (a case would need over 131,000 terms
    /// per output to fail it), so [`Case::new`] computes the whole result only for the rare
    /// case where the bound says nothing; a hunt builds, and a compile server reads, one case
    /// per few hundred microseconds, and computing each result twice was a few per cent of it.
    fn cannot_overflow(&self) -> bool {
        const MAX_PRODUCT: u128 = 1 << 14; // (-128) · (-128)
        let max_bias = self.bias.as_ref().map_or(0, |b| {
            b.iter()
                .map(|&v| (v as i64).unsigned_abs())
                .max()
                .unwrap_or(0)
        });
        let bound = self.spec.terms_per_output() * MAX_PRODUCT + max_bias as u128;
        bound <= i32::MAX as u128
    }

    /// The checks of [`Case::new`] except the result's range, which needs the whole
    /// computation: the spec is valid, every tensor has the shape it implies, and `bias` is
    /// present exactly when the operator has one. A `Case`'s fields are public, so code that
    /// changes them can re-check with this.
    pub fn check_shapes(&self) -> Result<(), CaseError> {
        let spec = &self.spec;
        spec.validate()?;
        check_shape(INPUT_NPY, &spec.input_shape, self.input.shape())?;
        check_shape(WEIGHT_NPY, &spec.weight_shape(), self.weight.shape())?;
        check_bias(spec.bias_len(), self.bias.as_ref().map(|b| b.shape()))?;
        if let Some(e) = &self.expected {
            check_shape(EXPECTED_NPY, &spec.output_shape(), e.shape())?;
        }
        Ok(())
    }
}

/// Checks the operator against the input shape: the operator itself, `input_shape`'s rank,
/// sizes and channel count, the output size, and every element-count and MAC limit.
pub(crate) fn validate_operator(op: &Op, input_shape: &[usize]) -> Result<(), CaseError> {
    op.validate()?;
    let (rank, described, channels, channel_field) = match op {
        Op::Conv2d(c) => (
            4,
            "4 dimensions [N, C, H, W]",
            c.in_channels,
            "op.in_channels",
        ),
        Op::Mvm(m) => (
            2,
            "2 dimensions [N, in_features]",
            m.in_features,
            "op.in_features",
        ),
    };
    if input_shape.len() != rank {
        return Err(CaseError::FieldType {
            field: "input_shape".into(),
            expected: described,
            found: format!("{} dimensions {input_shape:?}", input_shape.len()),
        });
    }
    for (i, &d) in input_shape.iter().enumerate() {
        dim(&format!("input_shape[{i}]"), d)?;
    }
    if input_shape[1] != channels {
        return Err(CaseError::Inconsistent {
            field: "input_shape[1]",
            value: input_shape[1],
            other: channel_field,
            other_value: channels,
        });
    }
    let spec_like = CaseSpec {
        op: op.clone(),
        input_shape: input_shape.to_vec(),
        arch: CaseArch {
            cores: 1,
            arrays_per_core: 1,
            array_rows: 1,
            array_cols: 1,
            local_memory_bytes: 1,
        },
    };
    if let Op::Conv2d(c) = op {
        for (axis, i) in [("height", 0), ("width", 1)] {
            output_extent(
                input_shape[2 + i],
                c.padding[i],
                c.padding[i + 2],
                c.kernel[i],
                c.stride[i],
                c.dilation[i],
            )
            .map_err(|(padded, window)| CaseError::EmptyOutput {
                axis,
                padded,
                window,
            })?;
        }
    }
    let count = |shape: &[usize]| shape.iter().map(|&d| d as u128).product::<u128>();
    within(
        CASE_JSON,
        "the input element count",
        count(input_shape),
        limits::MAX_INPUT_ELEMENTS as u128,
        "MAX_INPUT_ELEMENTS",
    )?;
    within(
        CASE_JSON,
        "the weight element count",
        count(&spec_like.weight_shape()),
        limits::MAX_WEIGHT_ELEMENTS as u128,
        "MAX_WEIGHT_ELEMENTS",
    )?;
    within(
        CASE_JSON,
        "the output element count",
        count(&spec_like.output_shape()),
        limits::MAX_OUTPUT_ELEMENTS as u128,
        "MAX_OUTPUT_ELEMENTS",
    )?;
    within(
        CASE_JSON,
        "the multiply-accumulate count",
        spec_like.macs(),
        limits::MAX_MACS as u128,
        "MAX_MACS",
    )
}

/// One output extent, or `(padded input, dilated kernel span)` when it would be below 1.
fn output_extent(
    size: usize,
    pad_before: usize,
    pad_after: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
) -> Result<usize, (usize, usize)> {
    let padded = size as u128 + pad_before as u128 + pad_after as u128;
    let window = (dilation as u128 * (kernel as u128).saturating_sub(1)) + 1;
    let sat = |v: u128| usize::try_from(v).unwrap_or(usize::MAX);
    if stride == 0 || kernel == 0 || window > padded {
        return Err((sat(padded), sat(window)));
    }
    Ok(sat((padded - window) / stride as u128 + 1))
}

fn nonzero(file: &'static str, field: &str, value: usize) -> Result<(), CaseError> {
    if value == 0 {
        return Err(CaseError::ZeroSize {
            file,
            field: field.to_string(),
        });
    }
    Ok(())
}

fn within(
    file: &'static str,
    what: &str,
    value: u128,
    limit: u128,
    name: &'static str,
) -> Result<(), CaseError> {
    if value > limit {
        return Err(CaseError::BeyondLimit {
            file,
            what: what.to_string(),
            value,
            limit,
            name,
        });
    }
    Ok(())
}

/// A tensor dimension of `case.json`: at least 1, at most [`limits::MAX_DIM`].
fn dim(field: &str, value: usize) -> Result<(), CaseError> {
    nonzero(CASE_JSON, field, value)?;
    within(
        CASE_JSON,
        &format!("field `{field}`"),
        value as u128,
        limits::MAX_DIM as u128,
        "MAX_DIM",
    )
}

/// A stride, dilation (`positive`) or padding value.
fn window_param(field: &str, value: usize, positive: bool) -> Result<(), CaseError> {
    if positive {
        nonzero(CASE_JSON, field, value)?;
    }
    within(
        CASE_JSON,
        &format!("field `{field}`"),
        value as u128,
        limits::MAX_WINDOW_PARAM as u128,
        "MAX_WINDOW_PARAM",
    )
}

/// `bias` (its shape) is present exactly when the operator has a bias of length `len`.
pub(crate) fn check_bias(len: Option<usize>, bias: Option<&[usize]>) -> Result<(), CaseError> {
    match (len, bias) {
        (Some(len), Some(shape)) => check_shape(BIAS_NPY, &[len], shape),
        (None, None) => Ok(()),
        (len, _) => Err(CaseError::BiasMismatch {
            op_bias: len.is_some(),
        }),
    }
}

pub(crate) fn check_shape(
    file: &'static str,
    expected: &[usize],
    found: &[usize],
) -> Result<(), CaseError> {
    if expected != found {
        return Err(CaseError::ShapeMismatch {
            file,
            expected: expected.to_vec(),
            found: found.to_vec(),
        });
    }
    Ok(())
}

fn standard<A: Clone, D: ndarray::Dimension>(a: ndarray::Array<A, D>) -> ndarray::Array<A, D> {
    if a.is_standard_layout() {
        a
    } else {
        a.as_standard_layout().into_owned()
    }
}
