//! `<model>-graph.json`, written by the PUMA compiler with pimdiff's patch
//! (`scripts/puma-patches/0002-model-graph.patch`): the model a program built through
//! `include/puma.h`, as the compiler itself holds it, and where the compiler put its tensors
//! and matrices. `pimdiff puma MODEL.cpp` checks a program's compile against it
//! ([`super::user_check`]); nothing here is derived from the program's C++ source.
//!
//! # Format (version 1)
//!
//! ```json
//! {"format": "pimdiff-puma-graph", "version": 1,
//!  "operations": [
//!    {"id": 7, "length": 5, "op": "input", "piece": 3, "operands": []},
//!    {"id": 9, "length": 5, "op": "mvm", "operands": [7]},
//!    {"id": 11, "length": 5, "op": "alu", "alu": "muli", "imm": 2, "operands": [9]},
//!    {"id": 12, "length": 5, "op": "set", "imm": 0, "operands": []},
//!    {"id": 13, "length": 5, "op": "output", "piece": 4, "operands": [11]}],
//!  "matrix_tiles": [{"id": 5, "users": [9]}],
//!  "model_id": 2, "model": "simple", "tiles": 3, "cores_per_tile": 8, "mvmus_per_core": 2, "mvmu_dim": 128,
//!  "inputs": [{"id": 1, "name": "in", "kind": "vector", "length": 5, "pieces": [
//!    {"id": 3, "first": 0, "length": 5, "tile": 0, "address": 0, "counter": 1}]}],
//!  "outputs": [{"id": 6, "name": "out", "kind": "vector", "length": 5, "pieces": [
//!    {"id": 4, "first": 0, "length": 5, "places": [{"tile": 1, "address": 0, "counter": 1}]}]}],
//!  "matrices": [{"id": 8, "name": "m", "kind": "dense", "width": 5, "height": 5, "tiles": [
//!    {"id": 5, "height": 5, "width": 5, "tile": 2, "core": 0, "mvmu": 0, "row": 0, "column": 0}]}]}
//! ```
//!
//! Identifiers are the objects' addresses in the compiler. `operations` is the graph as the
//! API calls built it (read before the first pass): the pseudo input and output operations
//! (a piece of an input or output tensor), `mvm` (the matrix tile is the one whose `users`
//! name the operation), `alu` with the opcode's name and, for `muli`, its immediate, `set`
//! (a vector of one immediate: a convolution's padding), and `other` for anything else (a
//! training operation), with its C++ type. A tensor is flattened row-major as in the
//! placement file ([`super::placement`]): a vector by index, an image by (row, column,
//! channel) over the pixel grid its stream carries. An input piece has at most one place (the
//! tile memory words the program reads it from), an output piece one per read of it. A matrix
//! tile is the block at (`row`, `column`) of a dense matrix (row = output), or of the
//! `[kernel_row][kernel_column]` slice `[out_channels][in_channels]` of a convolution, and
//! sits in MVMU `mvmu` of core `core` of tile `tile`.
//!
//! [`ModelGraph::read`] checks everything a check relies on (identifiers resolve, lengths and
//! positions agree, places lie inside the machine, the operations form no cycle) and returns
//! the operations in an order in which every operand comes first.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use pimdiff_input::{read, Limit};
use serde::Deserialize;

/// The largest graph file read: 512 MiB (a dump holds about 100 bytes per operation and per
/// piece; the snapshot's largest test networks have a few million of each).
pub const MAX_GRAPH_BYTES: Limit = Limit {
    name: "MAX_GRAPH_BYTES",
    bytes: 512 << 20,
};

/// The graph file's name for a model.
pub fn graph_file(model: &str) -> String {
    format!("{model}-graph.json")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGraph {
    format: String,
    version: u32,
    operations: Vec<RawOp>,
    matrix_tiles: Vec<RawTileUsers>,
    #[serde(default)]
    model_id: u64,
    model: String,
    tiles: u32,
    cores_per_tile: u32,
    mvmus_per_core: u32,
    mvmu_dim: u32,
    inputs: Vec<RawTensor>,
    outputs: Vec<RawTensor>,
    matrices: Vec<RawMatrix>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOp {
    id: u64,
    length: u32,
    op: String,
    #[serde(default)]
    piece: Option<u64>,
    #[serde(default)]
    alu: Option<String>,
    #[serde(default)]
    imm: Option<f64>,
    #[serde(default, rename = "type")]
    type_name: Option<String>,
    operands: Vec<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTileUsers {
    id: u64,
    users: Vec<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTensor {
    #[serde(default)]
    id: u64,
    name: String,
    kind: String,
    #[serde(default)]
    length: Option<u32>,
    #[serde(default)]
    width: Option<u32>,
    #[serde(default)]
    height: Option<u32>,
    #[serde(default)]
    channels: Option<u32>,
    #[serde(default)]
    stride: Option<u32>,
    #[serde(default)]
    rows: Option<u32>,
    #[serde(default)]
    columns: Option<u32>,
    pieces: Vec<RawPiece>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPiece {
    id: u64,
    first: u64,
    length: u32,
    #[serde(default)]
    tile: Option<u32>,
    #[serde(default)]
    address: Option<u64>,
    #[serde(default)]
    counter: Option<u32>,
    #[serde(default)]
    places: Option<Vec<Place>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatrix {
    #[serde(default)]
    id: u64,
    name: String,
    kind: String,
    #[serde(default)]
    width: Option<u32>,
    #[serde(default)]
    height: Option<u32>,
    #[serde(default)]
    kernel_width: Option<u32>,
    #[serde(default)]
    kernel_height: Option<u32>,
    #[serde(default)]
    in_channels: Option<u32>,
    #[serde(default)]
    out_channels: Option<u32>,
    #[serde(default)]
    stride: Option<u32>,
    #[serde(default)]
    out_width: Option<u32>,
    #[serde(default)]
    out_height: Option<u32>,
    tiles: Vec<RawMatrixTile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatrixTile {
    id: u64,
    height: u32,
    width: u32,
    tile: u32,
    core: u32,
    mvmu: u32,
    row: u32,
    column: u32,
    #[serde(default)]
    kernel_row: Option<u32>,
    #[serde(default)]
    kernel_column: Option<u32>,
}

/// Words of one tile's memory: `address .. address + length` of tile `tile`, read `counter`
/// times by the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Place {
    pub tile: u32,
    pub address: u64,
    pub counter: u32,
}

/// The shape of an input or output tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorShape {
    Vector {
        length: u32,
    },
    /// An image stream; `rows × columns` pixels of `channels` are its elements.
    Image {
        width: u32,
        height: u32,
        channels: u32,
        stride: u32,
        rows: u32,
        columns: u32,
    },
}

impl TensorShape {
    /// `[length]` or `[rows, columns, channels]`.
    pub fn dims(&self) -> Vec<usize> {
        match *self {
            TensorShape::Vector { length } => vec![length as usize],
            TensorShape::Image {
                rows,
                columns,
                channels,
                ..
            } => vec![rows as usize, columns as usize, channels as usize],
        }
    }

    /// Elements of the tensor.
    pub fn elements(&self) -> u64 {
        self.dims().iter().map(|&d| d as u64).product()
    }
}

/// A piece of a tensor: elements `first .. first + length`, at its places.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub first: u64,
    pub length: u32,
    pub places: Vec<Place>,
}

/// An input or output tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphTensor {
    /// The compiler's identifier (the tensor's address), as the API log names it.
    pub id: u64,
    pub name: String,
    pub shape: TensorShape,
    pub pieces: Vec<Piece>,
}

/// A matrix's kind and dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatrixShape {
    /// `height × width`, row = output.
    Dense { width: u32, height: u32 },
    /// Weights `[kernel_height][kernel_width][out_channels][in_channels]`.
    Conv {
        kernel_width: u32,
        kernel_height: u32,
        in_channels: u32,
        out_channels: u32,
        stride: u32,
        out_width: u32,
        out_height: u32,
    },
    /// A training matrix (the API's other model kind), which the check does not model.
    Training { width: u32, height: u32 },
}

impl MatrixShape {
    /// The shape of its weights: `[height, width]` or `[kh, kw, out, in]`; empty for
    /// training matrices.
    pub fn dims(&self) -> Vec<usize> {
        match *self {
            MatrixShape::Dense { width, height } => vec![height as usize, width as usize],
            MatrixShape::Conv {
                kernel_width,
                kernel_height,
                in_channels,
                out_channels,
                ..
            } => vec![
                kernel_height as usize,
                kernel_width as usize,
                out_channels as usize,
                in_channels as usize,
            ],
            MatrixShape::Training { .. } => Vec::new(),
        }
    }

    /// Rows (outputs) and columns (inputs) of one kernel position.
    fn rows_columns(&self) -> (u32, u32) {
        match *self {
            MatrixShape::Dense { width, height } | MatrixShape::Training { width, height } => {
                (height, width)
            }
            MatrixShape::Conv {
                in_channels,
                out_channels,
                ..
            } => (out_channels, in_channels),
        }
    }
}

/// One tile of a matrix and the MVMU holding it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixTile {
    /// `(kernel_row, kernel_column)` of a convolution's tile.
    pub kernel: Option<(u32, u32)>,
    pub row: u32,
    pub column: u32,
    pub height: u32,
    pub width: u32,
    pub tile: u32,
    pub core: u32,
    pub mvmu: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphMatrix {
    /// The compiler's identifier (the matrix's address), as the API log names it.
    pub id: u64,
    pub name: String,
    pub shape: MatrixShape,
    pub tiles: Vec<MatrixTile>,
}

/// What an operation computes; operands are indices into [`ModelGraph::ops`].
#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// Piece `piece` of input `input`.
    Input { input: usize, piece: usize },
    /// Tile `tile` of matrix `matrix` times `x`.
    Mvm {
        matrix: usize,
        tile: usize,
        x: usize,
    },
    /// An ALU operation by its opcode's name (`src/operations.h:257-265`); `imm` of `muli`.
    Alu {
        alu: String,
        operands: Vec<usize>,
        imm: Option<f64>,
    },
    /// A vector of `imm`.
    Set { imm: f64 },
    /// `x` assigned to piece `piece` of output `output`.
    Output {
        output: usize,
        piece: usize,
        x: usize,
    },
    /// An operation the dump does not describe (its C++ type).
    Other {
        type_name: String,
        operands: Vec<usize>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct GraphOp {
    /// The compiler's identifier (the operation's address).
    pub id: u64,
    pub length: u32,
    pub kind: OpKind,
}

impl GraphOp {
    /// Its operands (indices into [`ModelGraph::ops`]).
    pub fn operands(&self) -> Vec<usize> {
        match &self.kind {
            OpKind::Input { .. } | OpKind::Set { .. } => Vec::new(),
            OpKind::Mvm { x, .. } | OpKind::Output { x, .. } => vec![*x],
            OpKind::Alu { operands, .. } | OpKind::Other { operands, .. } => operands.clone(),
        }
    }

    /// `input`, `mvm`, `alu add`, `set`, `output`, or the other operation's type.
    pub fn name(&self) -> String {
        match &self.kind {
            OpKind::Input { .. } => "input".into(),
            OpKind::Mvm { .. } => "mvm".into(),
            OpKind::Alu { alu, .. } => format!("alu {alu}"),
            OpKind::Set { .. } => "set".into(),
            OpKind::Output { .. } => "output".into(),
            OpKind::Other { type_name, .. } => format!("other {type_name}"),
        }
    }
}

/// A checked graph: operations in an order where operands come first.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelGraph {
    /// The compiler's identifier of the model, as the API log names it.
    pub model_id: u64,
    pub model: String,
    pub tiles: u32,
    pub cores_per_tile: u32,
    pub mvmus_per_core: u32,
    pub mvmu_dim: u32,
    pub inputs: Vec<GraphTensor>,
    pub outputs: Vec<GraphTensor>,
    pub matrices: Vec<GraphMatrix>,
    pub ops: Vec<GraphOp>,
}

/// A graph's data: the inputs (flat, per tensor) and weights (flat, per matrix, in its `dims`
/// order), index-aligned with [`ModelGraph::inputs`] and [`ModelGraph::matrices`]. Drawn by
/// [`super::user_check`]; [`super::api`] computes what the calls ask on the same data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphData {
    pub inputs: Vec<Vec<i64>>,
    pub weights: Vec<Vec<i8>>,
}

/// What is wrong with a graph file.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    #[error("cannot read the graph file: {0}")]
    Read(#[from] pimdiff_input::InputError),
    #[error("not a graph file: {0}")]
    Json(String),
    #[error("format `{format}` version {version}, expected `pimdiff-puma-graph` version 1")]
    Format { format: String, version: u32 },
    #[error("{0}")]
    Invalid(String),
}

fn invalid(message: impl Into<String>) -> GraphError {
    GraphError::Invalid(message.into())
}

/// Where a piece's identifier leads: input or output `tensor`, piece `piece`.
#[derive(Clone, Copy)]
struct PieceRef {
    output: bool,
    tensor: usize,
    piece: usize,
}

impl ModelGraph {
    /// Reads and checks `path` (at most [`MAX_GRAPH_BYTES`]).
    pub fn read(path: &Path) -> Result<ModelGraph, GraphError> {
        let bytes = read(path, MAX_GRAPH_BYTES)?;
        ModelGraph::from_json(&String::from_utf8_lossy(&bytes))
    }

    /// Parses and checks a graph (module docs).
    pub fn from_json(text: &str) -> Result<ModelGraph, GraphError> {
        let raw: RawGraph =
            serde_json::from_str(text).map_err(|e| GraphError::Json(e.to_string()))?;
        if raw.format != "pimdiff-puma-graph" || raw.version != 1 {
            return Err(GraphError::Format {
                format: raw.format,
                version: raw.version,
            });
        }
        if raw.mvmu_dim == 0 || raw.tiles == 0 {
            return Err(invalid("the machine has no tiles or MVMUs of size 0"));
        }
        let mut pieces = BTreeMap::new();
        let inputs = tensors(&raw.inputs, false, raw.mvmu_dim, &mut pieces)?;
        let outputs = tensors(&raw.outputs, true, raw.mvmu_dim, &mut pieces)?;
        let (matrices, tile_ids) = matrices(&raw)?;
        for t in inputs.iter().chain(&outputs) {
            for p in t.pieces.iter().flat_map(|p| &p.places) {
                if p.tile >= raw.tiles {
                    return Err(invalid(format!(
                        "`{}` is placed on tile {} of {}",
                        t.name, p.tile, raw.tiles
                    )));
                }
            }
        }
        let ops = operations(&raw, &pieces, &tile_ids, &inputs, &outputs, &matrices)?;
        Ok(ModelGraph {
            model_id: raw.model_id,
            model: raw.model,
            tiles: raw.tiles,
            cores_per_tile: raw.cores_per_tile,
            mvmus_per_core: raw.mvmus_per_core,
            mvmu_dim: raw.mvmu_dim,
            inputs,
            outputs,
            matrices,
            ops,
        })
    }
}

/// The tensors of one role, their pieces' identifiers recorded in `ids`.
fn tensors(
    raw: &[RawTensor],
    output: bool,
    mvmu_dim: u32,
    ids: &mut BTreeMap<u64, PieceRef>,
) -> Result<Vec<GraphTensor>, GraphError> {
    let mut out = Vec::with_capacity(raw.len());
    for (tensor, t) in raw.iter().enumerate() {
        let missing = |field: &str| invalid(format!("`{}` has no {field}", t.name));
        let shape = match t.kind.as_str() {
            "vector" => TensorShape::Vector {
                length: t.length.ok_or_else(|| missing("length"))?,
            },
            "image" => TensorShape::Image {
                width: t.width.ok_or_else(|| missing("width"))?,
                height: t.height.ok_or_else(|| missing("height"))?,
                channels: t.channels.ok_or_else(|| missing("channels"))?,
                stride: t.stride.ok_or_else(|| missing("stride"))?,
                rows: t.rows.ok_or_else(|| missing("rows"))?,
                columns: t.columns.ok_or_else(|| missing("columns"))?,
            },
            other => return Err(invalid(format!("`{}` is of kind `{other}`", t.name))),
        };
        let elements = shape.elements();
        let mut pieces = Vec::with_capacity(t.pieces.len());
        for p in &t.pieces {
            if p.length == 0 || p.length > mvmu_dim || p.first + u64::from(p.length) > elements {
                return Err(invalid(format!(
                    "`{}`: a piece of elements {}..{} in a tensor of {elements} (pieces hold 1 to {mvmu_dim})",
                    t.name,
                    p.first,
                    p.first + u64::from(p.length)
                )));
            }
            let places = if output {
                p.places.clone().unwrap_or_default()
            } else {
                match (p.tile, p.address) {
                    (Some(tile), Some(address)) => vec![Place {
                        tile,
                        address,
                        counter: p.counter.unwrap_or(0),
                    }],
                    _ => Vec::new(),
                }
            };
            let at = PieceRef {
                output,
                tensor,
                piece: pieces.len(),
            };
            if ids.insert(p.id, at).is_some() {
                return Err(invalid(format!("piece {} appears twice", p.id)));
            }
            pieces.push(Piece {
                first: p.first,
                length: p.length,
                places,
            });
        }
        out.push(GraphTensor {
            id: t.id,
            name: t.name.clone(),
            shape,
            pieces,
        });
    }
    Ok(out)
}

/// The matrices, and where each matrix tile's identifier leads: `(matrix, tile)`.
type TileIds = BTreeMap<u64, (usize, usize)>;

fn matrices(raw: &RawGraph) -> Result<(Vec<GraphMatrix>, TileIds), GraphError> {
    let mut ids = BTreeMap::new();
    let mut out = Vec::with_capacity(raw.matrices.len());
    for (m, r) in raw.matrices.iter().enumerate() {
        let missing = |field: &str| invalid(format!("matrix `{}` has no {field}", r.name));
        let get = |v: Option<u32>, field: &str| v.ok_or_else(|| missing(field));
        let shape = match r.kind.as_str() {
            "dense" => MatrixShape::Dense {
                width: get(r.width, "width")?,
                height: get(r.height, "height")?,
            },
            "training" => MatrixShape::Training {
                width: get(r.width, "width")?,
                height: get(r.height, "height")?,
            },
            "conv" => MatrixShape::Conv {
                kernel_width: get(r.kernel_width, "kernel_width")?,
                kernel_height: get(r.kernel_height, "kernel_height")?,
                in_channels: get(r.in_channels, "in_channels")?,
                out_channels: get(r.out_channels, "out_channels")?,
                stride: get(r.stride, "stride")?,
                out_width: get(r.out_width, "out_width")?,
                out_height: get(r.out_height, "out_height")?,
            },
            other => return Err(invalid(format!("matrix `{}` is of kind `{other}`", r.name))),
        };
        let mut tiles = Vec::with_capacity(r.tiles.len());
        for t in &r.tiles {
            let tile = matrix_tile(raw, &r.name, shape, t)?;
            if ids.insert(t.id, (m, tiles.len())).is_some() {
                return Err(invalid(format!("matrix tile {} appears twice", t.id)));
            }
            tiles.push(tile);
        }
        out.push(GraphMatrix {
            id: r.id,
            name: r.name.clone(),
            shape,
            tiles,
        });
    }
    Ok((out, ids))
}

/// One matrix tile, checked against its matrix and the machine.
fn matrix_tile(
    raw: &RawGraph,
    name: &str,
    shape: MatrixShape,
    t: &RawMatrixTile,
) -> Result<MatrixTile, GraphError> {
    let (rows, columns) = shape.rows_columns();
    let kernel = match (shape, t.kernel_row, t.kernel_column) {
        (
            MatrixShape::Conv {
                kernel_width,
                kernel_height,
                ..
            },
            Some(kh),
            Some(kw),
        ) if kh < kernel_height && kw < kernel_width => Some((kh, kw)),
        (MatrixShape::Dense { .. }, None, None) => None,
        _ => {
            return Err(invalid(format!(
                "matrix `{name}`: tile {} has no place in the kernel of its matrix",
                t.id
            )))
        }
    };
    let inside = t.height >= 1
        && t.width >= 1
        && t.height <= raw.mvmu_dim
        && t.width <= raw.mvmu_dim
        && u64::from(t.row) + u64::from(t.height) <= u64::from(rows)
        && u64::from(t.column) + u64::from(t.width) <= u64::from(columns);
    if !inside {
        return Err(invalid(format!(
            "matrix `{name}`: tile {} of {}×{} at ({}, {}) is not inside the {rows}×{columns} matrix",
            t.id, t.height, t.width, t.row, t.column
        )));
    }
    if t.tile >= raw.tiles || t.core >= raw.cores_per_tile || t.mvmu >= raw.mvmus_per_core {
        return Err(invalid(format!(
            "matrix `{name}`: tile {} is placed on MVMU {} of core {} of tile {}, outside the machine",
            t.id, t.mvmu, t.core, t.tile
        )));
    }
    Ok(MatrixTile {
        kernel,
        row: t.row,
        column: t.column,
        height: t.height,
        width: t.width,
        tile: t.tile,
        core: t.core,
        mvmu: t.mvmu,
    })
}

/// The operations, resolved and checked, in an order where operands come first.
fn operations(
    raw: &RawGraph,
    pieces: &BTreeMap<u64, PieceRef>,
    tile_ids: &TileIds,
    inputs: &[GraphTensor],
    outputs: &[GraphTensor],
    matrices: &[GraphMatrix],
) -> Result<Vec<GraphOp>, GraphError> {
    let mut index = BTreeMap::new();
    for (i, op) in raw.operations.iter().enumerate() {
        if index.insert(op.id, i).is_some() {
            return Err(invalid(format!("operation {} appears twice", op.id)));
        }
    }
    // The matrix tile of every MVM, from the tiles' users.
    let mut mvm_tile: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    for t in &raw.matrix_tiles {
        let at = *tile_ids
            .get(&t.id)
            .ok_or_else(|| invalid(format!("matrix tile {} is in no matrix", t.id)))?;
        for u in &t.users {
            if mvm_tile.insert(*u, at).is_some() {
                return Err(invalid(format!("operation {u} uses two matrix tiles")));
            }
        }
    }
    let mut ops = Vec::with_capacity(raw.operations.len());
    for op in &raw.operations {
        let kind = op_kind(op, &index, pieces, &mvm_tile)?;
        let resolved = GraphOp {
            id: op.id,
            length: op.length,
            kind,
        };
        ops.push(resolved);
    }
    for op in &ops {
        check_lengths(op, &ops, inputs, outputs, matrices)?;
    }
    topological(ops)
}

/// One operation's kind with its references resolved (operands as indices in file order).
fn op_kind(
    op: &RawOp,
    index: &BTreeMap<u64, usize>,
    pieces: &BTreeMap<u64, PieceRef>,
    mvm_tile: &BTreeMap<u64, (usize, usize)>,
) -> Result<OpKind, GraphError> {
    let operands =
        op.operands
            .iter()
            .map(|o| {
                index.get(o).copied().ok_or_else(|| {
                    invalid(format!("operation {}: operand {o} is no operation", op.id))
                })
            })
            .collect::<Result<Vec<usize>, GraphError>>()?;
    let arity = |n: usize| {
        if operands.len() == n {
            Ok(())
        } else {
            Err(invalid(format!(
                "operation {} ({}) has {} operands, expected {n}",
                op.id,
                op.op,
                operands.len()
            )))
        }
    };
    let piece = |output: bool| -> Result<PieceRef, GraphError> {
        op.piece
            .and_then(|p| pieces.get(&p))
            .filter(|p| p.output == output)
            .copied()
            .ok_or_else(|| {
                invalid(format!(
                    "operation {}: piece {:?} is no {} piece",
                    op.id,
                    op.piece,
                    if output { "output" } else { "input" }
                ))
            })
    };
    Ok(match op.op.as_str() {
        "input" => {
            arity(0)?;
            let p = piece(false)?;
            OpKind::Input {
                input: p.tensor,
                piece: p.piece,
            }
        }
        "output" => {
            arity(1)?;
            let p = piece(true)?;
            OpKind::Output {
                output: p.tensor,
                piece: p.piece,
                x: operands[0],
            }
        }
        "mvm" => {
            arity(1)?;
            let (matrix, tile) = *mvm_tile
                .get(&op.id)
                .ok_or_else(|| invalid(format!("MVM {} uses no matrix tile", op.id)))?;
            OpKind::Mvm {
                matrix,
                tile,
                x: operands[0],
            }
        }
        "alu" => OpKind::Alu {
            alu: op
                .alu
                .clone()
                .ok_or_else(|| invalid(format!("ALU operation {} has no opcode", op.id)))?,
            operands,
            imm: op.imm,
        },
        "set" => {
            arity(0)?;
            OpKind::Set {
                imm: op
                    .imm
                    .ok_or_else(|| invalid(format!("set {} has no immediate", op.id)))?,
            }
        }
        "other" => OpKind::Other {
            type_name: op.type_name.clone().unwrap_or_default(),
            operands,
        },
        other => return Err(invalid(format!("operation {}: kind `{other}`", op.id))),
    })
}

/// The lengths of `op` agree with its operands, pieces and matrix tile.
fn check_lengths(
    op: &GraphOp,
    ops: &[GraphOp],
    inputs: &[GraphTensor],
    outputs: &[GraphTensor],
    matrices: &[GraphMatrix],
) -> Result<(), GraphError> {
    let len = |k: usize| ops[k].length;
    let disagree = |what: String| {
        Err(invalid(format!(
            "operation {} ({}) of length {}: {what}",
            op.id,
            op.name(),
            op.length
        )))
    };
    match &op.kind {
        OpKind::Input { input, piece } => {
            let p = &inputs[*input].pieces[*piece];
            if p.length != op.length {
                return disagree(format!("its input piece has {}", p.length));
            }
        }
        OpKind::Output { output, piece, x } => {
            let p = &outputs[*output].pieces[*piece];
            if p.length != op.length || len(*x) != op.length {
                return disagree(format!(
                    "its output piece has {}, its operand {}",
                    p.length,
                    len(*x)
                ));
            }
        }
        OpKind::Mvm { matrix, tile, x } => {
            let t = &matrices[*matrix].tiles[*tile];
            if t.width != len(*x) || t.height != op.length {
                return disagree(format!(
                    "its {}×{} matrix tile multiplies an operand of {}",
                    t.height,
                    t.width,
                    len(*x)
                ));
            }
        }
        OpKind::Alu { operands, .. } => {
            if let Some(&o) = operands.iter().find(|&&o| len(o) != op.length) {
                return disagree(format!("operand {} has length {}", ops[o].id, len(o)));
            }
        }
        OpKind::Set { .. } | OpKind::Other { .. } => {}
    }
    Ok(())
}

/// `ops` reordered so that operands come first (Kahn's algorithm, smallest file index first
/// among the ready ones); a cycle is an error.
fn topological(ops: Vec<GraphOp>) -> Result<Vec<GraphOp>, GraphError> {
    let n = ops.len();
    let mut pending = vec![0usize; n];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, op) in ops.iter().enumerate() {
        for o in op.operands() {
            pending[i] += 1;
            users[o].push(i);
        }
    }
    let mut ready: BTreeSet<usize> = (0..n).filter(|&i| pending[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &u in &users[i] {
            pending[u] -= 1;
            if pending[u] == 0 {
                ready.insert(u);
            }
        }
    }
    if order.len() != n {
        let stuck = (0..n).find(|&i| pending[i] > 0).map_or(0, |i| ops[i].id);
        return Err(invalid(format!(
            "the operations form a cycle (operation {stuck} is on it or depends on it)"
        )));
    }
    let mut position = vec![0usize; n];
    for (at, &i) in order.iter().enumerate() {
        position[i] = at;
    }
    let mut slots: Vec<Option<GraphOp>> = ops.into_iter().map(Some).collect();
    let mut sorted = Vec::with_capacity(n);
    for &i in &order {
        let mut op = slots[i].take().expect("each operation once");
        remap(&mut op.kind, &position);
        sorted.push(op);
    }
    Ok(sorted)
}

fn remap(kind: &mut OpKind, position: &[usize]) {
    match kind {
        OpKind::Mvm { x, .. } | OpKind::Output { x, .. } => *x = position[*x],
        OpKind::Alu { operands, .. } | OpKind::Other { operands, .. } => {
            for o in operands {
                *o = position[*o];
            }
        }
        OpKind::Input { .. } | OpKind::Set { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn simple(ops: &str) -> String {
        format!(
            r#"{{"format": "pimdiff-puma-graph", "version": 1, "operations": [{ops}],
            "matrix_tiles": [{{"id": 5, "users": [9]}}],
            "model": "simple", "tiles": 3, "cores_per_tile": 8, "mvmus_per_core": 2, "mvmu_dim": 128,
            "inputs": [{{"name": "in", "kind": "vector", "length": 5, "pieces": [
                {{"id": 3, "first": 0, "length": 5, "tile": 0, "address": 0, "counter": 1}}]}}],
            "outputs": [{{"name": "out", "kind": "vector", "length": 5, "pieces": [
                {{"id": 4, "first": 0, "length": 5, "places": [{{"tile": 1, "address": 0, "counter": 1}}]}}]}}],
            "matrices": [{{"name": "m", "kind": "dense", "width": 5, "height": 5, "tiles": [
                {{"id": 5, "height": 5, "width": 5, "tile": 2, "core": 0, "mvmu": 0, "row": 0, "column": 0}}]}}]}}"#
        )
    }

    const OPS: &str = r#"{"id": 13, "length": 5, "op": "output", "piece": 4, "operands": [11]},
        {"id": 11, "length": 5, "op": "alu", "alu": "muli", "imm": 2, "operands": [9]},
        {"id": 9, "length": 5, "op": "mvm", "operands": [7]},
        {"id": 7, "length": 5, "op": "input", "piece": 3, "operands": []}"#;

    #[test]
    fn operations_come_after_their_operands() {
        let g = ModelGraph::from_json(&simple(OPS)).expect("valid");
        let names: Vec<String> = g.ops.iter().map(GraphOp::name).collect();
        assert_eq!(names, ["input", "mvm", "alu muli", "output"]);
        assert_eq!(
            g.ops[1].kind,
            OpKind::Mvm {
                matrix: 0,
                tile: 0,
                x: 0
            }
        );
        assert_eq!(
            g.ops[3].kind,
            OpKind::Output {
                output: 0,
                piece: 0,
                x: 2
            }
        );
    }

    #[test]
    fn broken_graphs_are_refused_with_their_culprit() {
        let err = |ops: &str| {
            ModelGraph::from_json(&simple(ops))
                .expect_err("refused")
                .to_string()
        };
        assert_eq!(
            err(&OPS.replace(r#""operands": [9]"#, r#""operands": [8]"#)),
            "operation 11: operand 8 is no operation"
        );
        assert_eq!(
            err(&OPS.replace(r#""operands": [7]"#, r#""operands": [13]"#)),
            "the operations form a cycle (operation 13 is on it or depends on it)"
        );
        assert_eq!(
            err(&OPS.replace(
                r#""length": 5, "op": "input""#,
                r#""length": 4, "op": "input""#
            )),
            "operation 9 (mvm) of length 5: its 5×5 matrix tile multiplies an operand of 4"
        );
        assert_eq!(
            err(&OPS.replace(r#""piece": 3"#, r#""piece": 4"#)),
            "operation 7: piece Some(4) is no input piece"
        );
    }
}
