//! `<model>-placement.json`, written by the PUMA compiler with pimdiff's patch
//! (`scripts/puma-patches/0001-placement-file.patch`): where every input and output lives in
//! tile memory. Read hardened (it comes from the compiler under test), checked against the
//! network, and turned into the memory writes that place a case's inputs and the reads that
//! collect its outputs.
//!
//! # Format (version 1)
//!
//! ```json
//! {"format": "pimdiff-puma-placement", "version": 1, "model": "net",
//!  "tiles": 3, "cores_per_tile": 8, "mvmus_per_core": 2, "mvmu_dim": 128,
//!  "tensors": [
//!    {"name": "in0", "role": "input", "kind": "vector", "length": 5,
//!     "pieces": [{"first": 0, "length": 5, "tile": 0, "address": 0, "counter": 1}]},
//!    {"name": "img1", "role": "input", "kind": "image", "width": 4, "height": 3,
//!     "channels": 130, "stride": 1, "rows": 3, "columns": 4, "pieces": [...]}]}
//! ```
//!
//! A tensor is flattened row-major: a vector by index, an image by (row, column, channel) over
//! the pixel grid its stream carries (`rows × columns`: `⌈height/stride⌉ × ⌈width/stride⌉` for
//! an input, `height × width` for an output). A piece is one compiler tile of the tensor (at
//! most `mvmu_dim` elements of a vector, or of one pixel's channels): elements `first ..
//! first + length` live at `address .. address + length` of tile `tile`'s memory. `counter`
//! is how many reads the emitted program makes of them (the input tile's sends of an input
//! piece; the users of an output piece's receive), which the memory's valid/counter protocol
//! needs. An input piece no operation uses, or an output piece nothing is assigned to, has
//! `tile` and `address` null. An output assigned several times has one piece per assignment.

use std::path::Path;

use ndarray::{ArrayD, IxDyn};
use pimdiff_input::{read, Limit};
use serde::Deserialize;

use super::network::{PumaNetwork, Shape};
use super::tensors::NetworkData;

/// The largest placement file read: 64 MiB, about 800 000 pieces (a 512×512 image of 128
/// channels has 262 144).
pub const MAX_PLACEMENT_BYTES: Limit = Limit {
    name: "MAX_PLACEMENT_BYTES",
    bytes: 64 << 20,
};

/// The placement file's name for a model.
pub fn placement_file(model: &str) -> String {
    format!("{model}-placement.json")
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    pub format: String,
    pub version: u32,
    pub model: String,
    pub tiles: u32,
    pub cores_per_tile: u32,
    pub mvmus_per_core: u32,
    pub mvmu_dim: u32,
    pub tensors: Vec<PlacedTensor>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    Input,
    Output,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Vector,
    Image,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacedTensor {
    pub name: String,
    pub role: Role,
    pub kind: Kind,
    pub length: Option<u32>,
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub channels: Option<u32>,
    pub stride: Option<u32>,
    pub rows: Option<u32>,
    pub columns: Option<u32>,
    pub pieces: Vec<Piece>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Piece {
    pub first: u64,
    pub length: u32,
    pub tile: Option<u32>,
    pub address: Option<u64>,
    pub counter: u32,
}

/// One write into tile memory that places part of an input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryWrite {
    pub tile: u32,
    pub address: u64,
    pub values: Vec<i64>,
    /// Reads the program makes before the words may be written again.
    pub counter: u32,
}

/// What is wrong with a placement file, naming the tensor and piece where there is one.
#[derive(Debug, thiserror::Error)]
pub enum PlacementError {
    #[error("cannot read the placement file: {0}")]
    Read(#[from] pimdiff_input::InputError),
    #[error("not a placement file: {0}")]
    Json(String),
    #[error("format `{format}` version {version}, expected `pimdiff-puma-placement` version 1")]
    Format { format: String, version: u32 },
    #[error("placement of model `{found}`, expected `{expected}`")]
    Model { expected: String, found: String },
    #[error("{role:?} `{name}` is placed {count} times")]
    Count {
        role: Role,
        name: String,
        count: usize,
    },
    #[error("{role:?} `{name}`: the network says {expected}, the placement {found}")]
    Shape {
        role: Role,
        name: String,
        expected: String,
        found: String,
    },
    #[error("`{name}` piece {piece}: {problem}")]
    Piece {
        name: String,
        piece: usize,
        problem: String,
    },
    #[error("`{name}`: elements {first}..{end} are in no placed piece")]
    Unplaced { name: String, first: u64, end: u64 },
}

impl Placement {
    pub fn from_json(text: &str) -> Result<Placement, PlacementError> {
        let p: Placement =
            serde_json::from_str(text).map_err(|e| PlacementError::Json(e.to_string()))?;
        if p.format != "pimdiff-puma-placement" || p.version != 1 {
            return Err(PlacementError::Format {
                format: p.format,
                version: p.version,
            });
        }
        Ok(p)
    }

    /// Reads `path`, at most [`MAX_PLACEMENT_BYTES`].
    pub fn read(path: &Path) -> Result<Placement, PlacementError> {
        let bytes = read(path, MAX_PLACEMENT_BYTES)?;
        Placement::from_json(&String::from_utf8_lossy(&bytes))
    }

    /// Checks the placement against `net`: the model, every input and output exactly once
    /// with the network's shape, and every piece inside its tensor and its tile count.
    pub fn check(&self, net: &PumaNetwork) -> Result<(), PlacementError> {
        if self.model != net.model {
            return Err(PlacementError::Model {
                expected: net.model.clone(),
                found: self.model.clone(),
            });
        }
        let declared = net
            .inputs
            .iter()
            .map(|i| (Role::Input, i.name(), i.shape(), i.data_shape()))
            .chain(
                net.outputs
                    .iter()
                    .map(|o| (Role::Output, o.name(), o.shape(), o.data_shape())),
            );
        for (role, name, shape, data_shape) in declared {
            let t = self.tensor(role, name)?;
            let found = t.shape_text();
            let expected = shape_text(shape, &data_shape);
            if found != expected {
                return Err(PlacementError::Shape {
                    role,
                    name: name.to_string(),
                    expected,
                    found,
                });
            }
            let elements: u64 = data_shape.iter().map(|&d| d as u64).product();
            self.check_pieces(t, elements)?;
        }
        Ok(())
    }

    fn tensor(&self, role: Role, name: &str) -> Result<&PlacedTensor, PlacementError> {
        let found: Vec<&PlacedTensor> = self
            .tensors
            .iter()
            .filter(|t| t.role == role && t.name == name)
            .collect();
        match found[..] {
            [t] => Ok(t),
            _ => Err(PlacementError::Count {
                role,
                name: name.to_string(),
                count: found.len(),
            }),
        }
    }

    fn check_pieces(&self, t: &PlacedTensor, elements: u64) -> Result<(), PlacementError> {
        for (i, p) in t.pieces.iter().enumerate() {
            let bad = |problem: String| PlacementError::Piece {
                name: t.name.clone(),
                piece: i,
                problem,
            };
            if p.length == 0 || p.length > self.mvmu_dim || p.first + u64::from(p.length) > elements
            {
                return Err(bad(format!(
                    "elements {}..{} of a tensor of {elements} (pieces hold 1 to {})",
                    p.first,
                    p.first + u64::from(p.length),
                    self.mvmu_dim
                )));
            }
            match (p.tile, p.address) {
                (Some(tile), Some(_)) if tile >= self.tiles => {
                    return Err(bad(format!("tile {tile} of {}", self.tiles)))
                }
                (Some(_), Some(_)) | (None, None) => {}
                _ => return Err(bad("a tile without an address or the reverse".to_string())),
            }
        }
        Ok(())
    }

    /// The writes that place `data`'s inputs (every placed piece of every input).
    pub fn input_writes(
        &self,
        net: &PumaNetwork,
        data: &NetworkData,
    ) -> Result<Vec<MemoryWrite>, PlacementError> {
        let mut writes = Vec::new();
        for (input, values) in net.inputs.iter().zip(&data.inputs) {
            let t = self.tensor(Role::Input, input.name())?;
            let flat: Vec<i64> = values.iter().copied().collect();
            for p in &t.pieces {
                let (Some(tile), Some(address)) = (p.tile, p.address) else {
                    continue;
                };
                let first = p.first as usize;
                let Some(slice) = flat.get(first..first + p.length as usize) else {
                    return Err(PlacementError::Unplaced {
                        name: t.name.clone(),
                        first: p.first,
                        end: p.first + u64::from(p.length),
                    });
                };
                writes.push(MemoryWrite {
                    tile,
                    address,
                    values: slice.to_vec(),
                    counter: p.counter,
                });
            }
        }
        Ok(writes)
    }

    /// Every output of `net`, collected with `read(tile, address, length)` (the words of tile
    /// memory after the run). An element in no placed piece is an error; where an output has
    /// several pieces for the same elements, the last one wins.
    pub fn gather_outputs(
        &self,
        net: &PumaNetwork,
        mut read: impl FnMut(u32, u64, u32) -> Vec<i64>,
    ) -> Result<Vec<ArrayD<i64>>, PlacementError> {
        let mut outputs = Vec::new();
        for output in &net.outputs {
            let t = self.tensor(Role::Output, output.name())?;
            let shape = output.data_shape();
            let n: usize = shape.iter().product();
            let mut flat = vec![0i64; n];
            let mut seen = vec![false; n];
            for p in &t.pieces {
                let (Some(tile), Some(address)) = (p.tile, p.address) else {
                    continue;
                };
                let first = p.first as usize;
                let words = read(tile, address, p.length);
                for (k, w) in words.into_iter().take(p.length as usize).enumerate() {
                    if let Some(slot) = flat.get_mut(first + k) {
                        *slot = w;
                        seen[first + k] = true;
                    }
                }
            }
            if let Some(hole) = seen.iter().position(|s| !s) {
                let end = seen[hole..].iter().position(|s| *s).map_or(n, |e| hole + e);
                return Err(PlacementError::Unplaced {
                    name: t.name.clone(),
                    first: hole as u64,
                    end: end as u64,
                });
            }
            outputs.push(ArrayD::from_shape_vec(IxDyn(&shape), flat).expect("the output's shape"));
        }
        Ok(outputs)
    }
}

impl PlacedTensor {
    fn shape_text(&self) -> String {
        let f = |v: Option<u32>| v.map_or("?".to_string(), |v| v.to_string());
        match self.kind {
            Kind::Vector => format!("vector of {}", f(self.length)),
            Kind::Image => format!(
                "image {}×{}×{} stride {} grid {}×{}",
                f(self.width),
                f(self.height),
                f(self.channels),
                f(self.stride),
                f(self.rows),
                f(self.columns)
            ),
        }
    }
}

fn shape_text(shape: Shape, data_shape: &[usize]) -> String {
    match shape {
        Shape::Vector(n) => format!("vector of {n}"),
        Shape::Image(s) => format!(
            "image {}×{}×{} stride {} grid {}×{}",
            s.width, s.height, s.channels, s.stride, data_shape[0], data_shape[1]
        ),
    }
}
