//! The tensors of one PUMA case: every input's data and every matrix's weights, as exact
//! integers, with the check that they fit a network.
//!
//! Layouts follow the network's ([`super::network`]): an input vector is `[length]`, an input
//! image the streamed pixel grid `[rows, columns, channels]`; a dense matrix is `[height,
//! width]` (row = output), a conv matrix `[kernel_height, kernel_width, out_channels,
//! in_channels]`. Flattened row-major these are the orders the driver's weights file and the
//! placement file use.

use ndarray::ArrayD;

use super::network::PumaNetwork;

/// Inputs and weights, index-aligned with [`PumaNetwork::inputs`] and
/// [`PumaNetwork::matrices`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkData {
    pub inputs: Vec<ArrayD<i64>>,
    pub weights: Vec<ArrayD<i64>>,
}

/// Why tensors do not fit a network.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DataError {
    #[error("{what}: the network has {expected}, the data {found}")]
    Count {
        what: &'static str,
        expected: usize,
        found: usize,
    },
    #[error("{what} `{name}`: the network's shape is {expected:?}, the data's {found:?}")]
    Shape {
        what: &'static str,
        name: String,
        expected: Vec<usize>,
        found: Vec<usize>,
    },
    #[error("{what} `{name}`: element {index} is {value}, outside ±{limit}")]
    Range {
        what: &'static str,
        name: String,
        index: usize,
        value: i64,
        limit: i64,
    },
}

impl NetworkData {
    /// Checks the counts and shapes against `net`, and every element against `±max_magnitude`.
    pub fn check(&self, net: &PumaNetwork, max_magnitude: i64) -> Result<(), DataError> {
        let lists = [
            (
                "inputs",
                "input",
                &self.inputs,
                net.inputs
                    .iter()
                    .map(|i| (i.name(), i.data_shape()))
                    .collect::<Vec<_>>(),
            ),
            (
                "matrices",
                "matrix",
                &self.weights,
                net.matrices
                    .iter()
                    .map(|m| (m.name(), m.data_shape()))
                    .collect(),
            ),
        ];
        for (plural, what, tensors, declared) in lists {
            if tensors.len() != declared.len() {
                return Err(DataError::Count {
                    what: plural,
                    expected: declared.len(),
                    found: tensors.len(),
                });
            }
            for (t, (name, shape)) in tensors.iter().zip(declared) {
                if t.shape() != shape.as_slice() {
                    return Err(DataError::Shape {
                        what,
                        name: name.to_string(),
                        expected: shape,
                        found: t.shape().to_vec(),
                    });
                }
                if let Some((index, &value)) = t
                    .iter()
                    .enumerate()
                    .find(|(_, v)| v.unsigned_abs() > max_magnitude.unsigned_abs())
                {
                    return Err(DataError::Range {
                        what,
                        name: name.to_string(),
                        index,
                        value,
                        limit: max_magnitude,
                    });
                }
            }
        }
        Ok(())
    }
}
