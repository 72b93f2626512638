//! The case: one operator, one set of tensors, one target architecture
//! (`shared/docs/case-format.md`, version 1).
//!
//! These types are the vocabulary shared by the generator, the compiler, the oracle and
//! the corpus. A [`Case`] value is always *valid* (shapes agree, sizes within
//! [`limits`](crate::limits)); the reader and [`Case::new`] are the only ways to build one
//! from untrusted parts.

use ndarray::{Array1, ArrayD};
use serde::{Deserialize, Serialize};

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
