//! Integer tensors as the harness hands them over (ONNX's order: NCHW for a feature map,
//! row-major for anything else) and their order in CIM-MLC's global buffer.
//!
//! CIM-MLC keeps a four-dimensional feature map channel-fastest, "data layerout: (H,W,CHANNEL)"
//! (codegen/CrossbarWise.py:198, WordlineWise.py:173), as its simulator reads and writes it
//! (simulator/Program_interface.py:15 reshapes `(N, H, W, C)`, :20 writes `transpose(0,2,3,1)`).
//! Every tensor of another rank is kept in its own row-major order: nothing in CIM-MLC
//! reorders one.

use std::fmt;

/// A dense tensor of exact integers in ONNX's order (NCHW for rank 4, row-major otherwise).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub values: Vec<i64>,
}

/// A tensor whose values do not fill its shape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ShapeError {
    pub shape: Vec<usize>,
    pub values: usize,
    /// The shape's element count (`None`: it overflows).
    pub expected: Option<usize>,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} values for the shape {:?}", self.values, self.shape)?;
        match self.expected {
            Some(n) => write!(f, " ({n} elements)"),
            None => write!(f, " (its element count overflows)"),
        }
    }
}

impl Tensor {
    /// A tensor of `shape` holding `values` in ONNX's order.
    pub fn new(shape: Vec<usize>, values: Vec<i64>) -> Result<Tensor, ShapeError> {
        let expected = element_count(&shape);
        if expected != Some(values.len()) {
            return Err(ShapeError {
                shape,
                values: values.len(),
                expected,
            });
        }
        Ok(Tensor { shape, values })
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The values in the order the global buffer keeps them ([`to_buffer_order`]).
    pub fn buffer_order(&self) -> Vec<i64> {
        to_buffer_order(&self.shape, &self.values)
    }
}

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} {:?}", self.shape, self.values)
    }
}

/// The product of `shape`, or `None` when it overflows.
pub fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// The index in the buffer's order of the element at `[n, c, h, w]` of an NCHW shape.
fn hwc_index(shape: &[usize], n: usize, c: usize, h: usize, w: usize) -> usize {
    ((n * shape[2] + h) * shape[3] + w) * shape[1] + c
}

/// Values in ONNX's order → the global buffer's: NCHW → NHWC for rank 4, unchanged otherwise.
pub fn to_buffer_order<T: Copy + Default>(shape: &[usize], values: &[T]) -> Vec<T> {
    if shape.len() != 4 {
        return values.to_vec();
    }
    let mut out = vec![T::default(); values.len()];
    let mut i = 0;
    for n in 0..shape[0] {
        for c in 0..shape[1] {
            for h in 0..shape[2] {
                for w in 0..shape[3] {
                    out[hwc_index(shape, n, c, h, w)] = values[i];
                    i += 1;
                }
            }
        }
    }
    out
}

/// Values in the global buffer's order → ONNX's: NHWC → NCHW for rank 4, unchanged otherwise.
pub fn from_buffer_order<T: Copy + Default>(shape: &[usize], values: &[T]) -> Vec<T> {
    if shape.len() != 4 {
        return values.to_vec();
    }
    let mut out = vec![T::default(); values.len()];
    let mut i = 0;
    for n in 0..shape[0] {
        for c in 0..shape[1] {
            for h in 0..shape[2] {
                for w in 0..shape[3] {
                    out[i] = values[hwc_index(shape, n, c, h, w)];
                    i += 1;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nchw_to_nhwc_and_back() {
        // [1, 2, 1, 3]: channel 0 = 0 1 2, channel 1 = 10 11 12.
        let shape = [1, 2, 1, 3];
        let nchw = [0, 1, 2, 10, 11, 12];
        let hwc = to_buffer_order(&shape, &nchw);
        assert_eq!(hwc, vec![0, 10, 1, 11, 2, 12]);
        assert_eq!(from_buffer_order(&shape, &hwc), nchw.to_vec());
        assert_eq!(to_buffer_order(&[2, 3], &nchw), nchw.to_vec());
    }

    #[test]
    fn a_tensor_must_fill_its_shape() {
        let e = Tensor::new(vec![2, 2], vec![1, 2, 3]).unwrap_err();
        assert_eq!(e.expected, Some(4));
        assert_eq!(e.to_string(), "3 values for the shape [2, 2] (4 elements)");
        assert_eq!(Tensor::new(vec![2], vec![1, 2]).unwrap().len(), 2);
    }
}
