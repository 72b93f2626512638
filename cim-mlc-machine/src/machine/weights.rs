//! A weighted node's weights as the caller hands them over, and as the crossbars hold them.
//!
//! No line of CIM-MLC places a weight value anywhere: the passes read weights only for their
//! shapes (optimization/CoreMapping.py:13-36 counts crossbars for a `[k·k·C_in, C_out]`
//! matrix; WordlineRemap.py:33 reshapes `w.reshape(C_out, -1).T` to count weight blocks and
//! never stores the values). So the machine places the one matrix of that shape that computes
//! the node:
//!
//! - **Conv**: rows in the order the input windows load them, `(kh, kw, c_in)` (the windows are
//!   runs of `K·C_in` channel-fastest elements per kernel row, CrossbarWise.py:206-221), one
//!   column per output channel. A grouped convolution is held as its dense equivalent
//!   `[C_out, C_in, kh, kw]` (zero where an output channel reads no input channel), which is
//!   what a `[k·k·C_in, C_out]` mapping that ignores `group` (CIM-MLC never reads it) can only
//!   mean; the core level reads the same dense kernel. A bias is accepted and placed nowhere:
//!   no meta-operator of any level adds one (`docs/cim-mlc-isa.md`).
//! - **Gemm, MatMul**: the `[in, out]` matrix `x · W` multiplies by (`N = ifm[-1]` rows,
//!   `K = ofm[-1]` columns, CoreMapping.py:54); [`NodeWeights::gemm`] transposes ONNX's `B` when
//!   `transB` is set. `alpha`, `beta`, `transA` and `C` are read by no pass and applied by no
//!   meta-operator, so the machine takes none of them.

use crate::tensor::{element_count, Tensor};

/// A weighted node's weights.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeWeights {
    /// A Conv's `W` in ONNX's `[C_out, C_in / group, kh, kw]` and its bias `B` (unused).
    Conv {
        weights: Tensor,
        bias: Option<Tensor>,
    },
    /// A Gemm's or MatMul's matrix as `[in, out]`, and a Gemm's `C` (unused).
    Linear {
        matrix: Tensor,
        bias: Option<Tensor>,
    },
}

impl NodeWeights {
    /// A Conv's weights (OIHW) and optional bias.
    pub fn conv(weights: Tensor, bias: Option<Tensor>) -> NodeWeights {
        NodeWeights::Conv { weights, bias }
    }

    /// A Gemm's `B` as ONNX declares it (`[in, out]`, or `[out, in]` with `transB = 1`), and its
    /// `C`. A `B` that is not two-dimensional is kept as given and refused by `Chip::build`.
    pub fn gemm(b: Tensor, trans_b: bool, c: Option<Tensor>) -> NodeWeights {
        let matrix = if trans_b && b.shape.len() == 2 {
            let (rows, cols) = (b.shape[0], b.shape[1]);
            let mut values = vec![0; b.values.len()];
            for r in 0..rows {
                for col in 0..cols {
                    values[col * rows + r] = b.values[r * cols + col];
                }
            }
            Tensor {
                shape: vec![cols, rows],
                values,
            }
        } else {
            b
        };
        NodeWeights::Linear { matrix, bias: c }
    }

    /// A MatMul's second input `B` (`[in, out]`).
    pub fn matmul(b: Tensor) -> NodeWeights {
        NodeWeights::Linear {
            matrix: b,
            bias: None,
        }
    }
}

/// Weights as the machine holds them: a matrix of `rows × cols` exact integers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Placed {
    /// The dense-equivalent kernel `[oc][cin][kh][kw]`.
    Conv {
        kernel: Vec<i64>,
        oc: usize,
        cin: usize,
        kh: usize,
        kw: usize,
    },
    /// `[rows][cols]`, row-major.
    Linear {
        matrix: Vec<i64>,
        rows: usize,
        cols: usize,
    },
}

impl Placed {
    /// A Conv's weights, with `cin` input channels (the node's `ifmsize[1]`).
    pub(crate) fn conv(
        w: &Tensor,
        cin: usize,
        ofm_channels: Option<usize>,
    ) -> Result<Placed, String> {
        let [oc, cg, kh, kw] = w.shape[..] else {
            return Err(format!(
                "shape {:?}, expected [C_out, C_in/group, kh, kw]",
                w.shape
            ));
        };
        if element_count(&w.shape) != Some(w.values.len()) || oc == 0 || cg == 0 {
            return Err(format!(
                "{} values for the shape {:?}",
                w.values.len(),
                w.shape
            ));
        }
        if !cin.is_multiple_of(cg) || !oc.is_multiple_of(cin / cg) {
            return Err(format!(
                "{cg} input channels per group do not divide the node's {cin} input channels \
                 and {oc} output channels into groups"
            ));
        }
        if let Some(c) = ofm_channels.filter(|c| *c != oc) {
            return Err(format!("{oc} output channels, the node's ofmsize has {c}"));
        }
        let groups = cin / cg;
        let per_group = oc / groups;
        let mut kernel = vec![0; oc * cin * kh * kw];
        for o in 0..oc {
            let first = (o / per_group) * cg;
            for c in 0..cg {
                for k in 0..kh * kw {
                    kernel[(o * cin + first + c) * kh * kw + k] =
                        w.values[(o * cg + c) * kh * kw + k];
                }
            }
        }
        Ok(Placed::Conv {
            kernel,
            oc,
            cin,
            kh,
            kw,
        })
    }

    /// A Gemm's or MatMul's `[in, out]` matrix.
    pub(crate) fn linear(
        m: &Tensor,
        rows: Option<usize>,
        cols: Option<usize>,
    ) -> Result<Placed, String> {
        let [r, c] = m.shape[..] else {
            return Err(format!("shape {:?}, expected a matrix [in, out]", m.shape));
        };
        if element_count(&m.shape) != Some(m.values.len()) {
            return Err(format!(
                "{} values for the shape {:?}",
                m.values.len(),
                m.shape
            ));
        }
        if rows.is_some_and(|x| x != r) || cols.is_some_and(|x| x != c) {
            return Err(format!(
                "matrix [{r}, {c}], but the node maps {} inputs to {} outputs (ifmsize[-1], \
                 ofmsize[-1])",
                rows.map_or("?".into(), |x| x.to_string()),
                cols.map_or("?".into(), |x| x.to_string())
            ));
        }
        Ok(Placed::Linear {
            matrix: m.values.clone(),
            rows: r,
            cols: c,
        })
    }

    /// Rows of the matrix a crossbar holds (`k·k·C_in`, or `in`).
    pub(crate) fn rows(&self) -> usize {
        match self {
            Placed::Conv { cin, kh, kw, .. } => kh * kw * cin,
            Placed::Linear { rows, .. } => *rows,
        }
    }

    /// Columns (`C_out`, or `out`).
    pub(crate) fn cols(&self) -> usize {
        match self {
            Placed::Conv { oc, .. } => *oc,
            Placed::Linear { cols, .. } => *cols,
        }
    }

    /// The matrix element at row `r` (for a Conv `(kh·kw_size + kw)·C_in + c`), column `col`.
    pub(crate) fn at(&self, r: usize, col: usize) -> i64 {
        match self {
            Placed::Conv {
                kernel,
                cin,
                kh,
                kw,
                ..
            } => {
                let (pos, c) = (r / cin, r % cin);
                kernel[((col * cin + c) * kh + pos / kw) * kw + pos % kw]
            }
            Placed::Linear { matrix, cols, .. } => matrix[r * cols + col],
        }
    }

    /// `v · M` over rows `[row0, row0 + v.len())` and columns `cols`, exactly.
    pub(crate) fn multiply(
        &self,
        v: &[i64],
        row0: usize,
        cols: std::ops::Range<usize>,
    ) -> Option<Vec<i64>> {
        let mut out = Vec::with_capacity(cols.len());
        for col in cols {
            let mut acc: i64 = 0;
            for (t, &x) in v.iter().enumerate() {
                if x != 0 {
                    acc = acc.checked_add(x.checked_mul(self.at(row0 + t, col))?)?;
                }
            }
            out.push(acc);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_depthwise_kernel_is_held_dense() {
        // Two channels, one output per channel, 1x1 kernels 5 and 7.
        let w = Tensor::new(vec![2, 1, 1, 1], vec![5, 7]).unwrap();
        let p = Placed::conv(&w, 2, Some(2)).unwrap();
        assert_eq!(p.rows(), 2);
        assert_eq!(
            (p.at(0, 0), p.at(1, 0), p.at(0, 1), p.at(1, 1)),
            (5, 0, 0, 7)
        );
        assert!(Placed::conv(&w, 3, None).is_err());
    }

    #[test]
    fn conv_rows_are_kernel_row_kernel_column_channel() {
        // [1 out, 2 in, 1, 2]: W[0][c][0][kw] = 10c + kw.
        let w = Tensor::new(vec![1, 2, 1, 2], vec![0, 1, 10, 11]).unwrap();
        let p = Placed::conv(&w, 2, None).unwrap();
        // rows: (kw0,c0) (kw0,c1) (kw1,c0) (kw1,c1)
        assert_eq!(
            (0..4).map(|r| p.at(r, 0)).collect::<Vec<_>>(),
            vec![0, 10, 1, 11]
        );
        assert_eq!(p.multiply(&[1, 2, 3, 4], 0, 0..1), Some(vec![20 + 3 + 44]));
    }

    #[test]
    fn gemm_trans_b_is_transposed_to_in_out() {
        let b = Tensor::new(vec![2, 3], vec![1, 2, 3, 4, 5, 6]).unwrap(); // [out=2, in=3]
        let NodeWeights::Linear { matrix, .. } = NodeWeights::gemm(b, true, None) else {
            unreachable!()
        };
        assert_eq!(matrix.shape, vec![3, 2]);
        assert_eq!(matrix.values, vec![1, 4, 2, 5, 3, 6]);
    }
}
