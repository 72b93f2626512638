//! pimdiff's description of a PUMA network: the inputs, constant matrices, values and outputs a
//! model written against the PUMA compiler's `include/puma.h` declares, as serde JSON, and the
//! check that a description is a program the API promises to compile.
//!
//! The description mirrors the API one to one, so that the driver (`scripts/puma-driver/`) and
//! a standalone `model.cpp` ([`super::model_cpp`]) make exactly the calls it lists:
//!
//! | description | API call (`include/puma.h`) |
//! |---|---|
//! | [`Input::Vector`] | `InputVector::create(model, name, length)` |
//! | [`Input::Image`] | `InputImagePixelStream::create(model, name, width, height, channels, stride)` |
//! | [`Matrix::Dense`] | `ConstantMatrix::create(model, name, width, height)` (`width` = input length) |
//! | [`Matrix::Conv`] | `ConvolutionalConstantMatrix::create(model, name, kw, kh, cin, cout, stride, out_w, out_h)` |
//! | [`Op::Input`] | `Vector(InputVector)`, `ImagePixelStream(InputImagePixelStream)` |
//! | [`Op::Mvm`], [`Op::Conv`] | `ConstantMatrix * Vector`, `ConvolutionalConstantMatrix * ImagePixelStream` |
//! | [`Op::Add`], [`Op::Sub`], [`Op::Mul`] | `Vector + Vector`, `-`, `*` (element-wise) |
//! | [`Op::Scale`] | `float * Vector` |
//! | [`Op::Relu`], [`Op::Tanh`], [`Op::Sig`] | `relu`, `tanh`, `sig` (`sig` also of a stream) |
//! | [`Op::MaxPool`] | `maxpool(ImagePixelStream, hspan, wspan)` |
//! | [`Output`] | `OutputVector::create` / `OutputImagePixelStream::create`, then `out = value` |
//!
//! # What the API promises ([`PumaNetwork::check`])
//!
//! The rules below are read from the compiler snapshot (c2ef1ac; paths relative to its root),
//! its `test/` programs and the PUMA paper; each is cited where it is checked. In short:
//! every size is at least 1; operand kinds match the C++ overloads; element-wise operands have
//! equal lengths; a matrix's width is its vector's length; a convolution's input channels are
//! its stream's channels, and it declares the output size `(n + 2p − k)/stride + 1` of a
//! padding `p` on each side (`⌊k/2⌋` unless the description says otherwise: the snapshot's
//! test takes the padding as an argument), which must divide exactly; an output has its
//! value's shape; the model holds at least one matrix. Kernels may be non-square or even, any
//! padding may be declared, input streams may be strided and a strided stream pooled or
//! output, a matrix may be used by several operations and a value by several users, the
//! compiler may print its debug graphs: the API allows all of these, so they stay in (the
//! compiler's handling of them is what a hunt looks at). Names are identifiers (they become
//! file names and C++ string literals), and a scale factor is an integer (exact checking, see
//! `docs/puma.md`).
//!
//! Sizes are bounded ([`limits`]) before anything is computed from them, so a hostile
//! description is an error, not an allocation failure.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Elements one MVMU (crossbar) holds per side: the compiler cuts every vector, channel
/// dimension and matrix into pieces of this size (snapshot `src/common.h:15`).
pub const MVMU_DIM: u32 = 128;

/// Size limits of a description, checked before anything is computed or allocated from it.
///
/// They are far above what the generator produces (a few thousand elements per tensor) and
/// far below what would take the reference more than a few seconds.
pub mod limits {
    /// Any single size: a length, width, height, channel count, kernel side, stride or span.
    pub const MAX_DIM: u32 = 1 << 16;
    /// Elements of one vector or image (`width · height · channels`).
    pub const MAX_TENSOR_ELEMENTS: u64 = 1 << 22;
    /// Elements of one matrix (`width · height`, or `kw · kh · cin · cout`).
    pub const MAX_MATRIX_ELEMENTS: u64 = 1 << 22;
    /// Multiply-accumulates of the whole network (every MVM and convolution).
    pub const MAX_MACS: u64 = 1 << 30;
    /// Inputs, matrices, values and outputs, each.
    pub const MAX_ITEMS: usize = 1 << 12;
    /// Characters of a name.
    pub const MAX_NAME_LEN: usize = 64;
    /// Magnitude of a scale factor: the largest 16-bit word.
    pub const MAX_FACTOR: i32 = i16::MAX as i32;
}

/// The options of the one `Model::compile` call (`CompilerOptions`, snapshot
/// `include/puma.h:15-23`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompileOptions {
    /// `coalesceMVMOperations_`: run the MVM coalescing pass.
    pub coalesce: bool,
    /// `gp_`: how matrix tiles are laid out on MVMUs, cores and tiles.
    pub partition: Partition,
    /// `printDebugInfo_`: the compiler also prints its graph as a `.dot` file before the first
    /// pass and after five of them (snapshot `include/puma.h:21`, `src/model.cpp:216-265`).
    /// A path of its own through every tensor and operation class (`printNodeAndEdges`), which
    /// the generator takes in a share of its networks. Absent from the JSON when off, so that
    /// descriptions written before the option existed read the same.
    #[serde(default, skip_serializing_if = "is_false")]
    pub debug: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for CompileOptions {
    /// The library's defaults (snapshot `include/puma.h:19-20`).
    fn default() -> CompileOptions {
        CompileOptions {
            coalesce: true,
            partition: Partition::RowMajor,
            debug: false,
        }
    }
}

/// A graph partitioning scheme. KaHIP (`GP_KAHIP`) is left out: it runs an external program
/// the compiler does not ship (snapshot `src/partitioner.cpp:387-389`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Partition {
    RowMajor,
    ColMajor,
    /// `std::random_shuffle` with the C library's default seed: the same layout every run.
    Random,
}

impl Partition {
    /// The spelling of the driver's `option partition` and of the description's JSON.
    pub fn name(self) -> &'static str {
        match self {
            Partition::RowMajor => "row-major",
            Partition::ColMajor => "col-major",
            Partition::Random => "random",
        }
    }

    /// The `CompilerOptions::GraphPartitioningScheme` constant.
    pub fn cpp_name(self) -> &'static str {
        match self {
            Partition::RowMajor => "GP_ROW_MAJOR",
            Partition::ColMajor => "GP_COL_MAJOR",
            Partition::Random => "GP_RANDOM",
        }
    }
}

/// An input tensor the caller fills before the run (`Input*::create`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Input {
    Vector {
        name: String,
        length: u32,
    },
    /// An image fed pixel by pixel. With `stride` s the stream carries `⌈height/s⌉ ×
    /// ⌈width/s⌉` pixels (snapshot `src/tensors.cpp:141-146`); the reference reads stream pixel
    /// `(i, j)` as image pixel `(i·s, j·s)` and the others as unknown (see `docs/puma.md`).
    Image {
        name: String,
        width: u32,
        height: u32,
        channels: u32,
        stride: u32,
    },
}

/// A constant matrix, programmed into MVMUs by `ModelInstance::generateData`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Matrix {
    /// `height × width`, applied as `y = M x` to a vector of length `width`.
    Dense {
        name: String,
        width: u32,
        height: u32,
    },
    /// A convolution's weights, `[kernel_height][kernel_width][out_channels][in_channels]`
    /// (the order `generateData` reads, snapshot `src/instance.cpp:98`).
    ///
    /// `padding_width` and `padding_height` are not arguments of the API: they are the
    /// `padding` the snapshot's test derives the declared output size from
    /// (`test/conv-layer.cpp:28`, `:38`, `:48-51`), kept in the description so that the
    /// reference knows what the size means and a minimizer can re-derive the size after an
    /// edit. Absent, a side pads `⌊k/2⌋`, the compiler's own centring.
    Conv {
        name: String,
        kernel_width: u32,
        kernel_height: u32,
        in_channels: u32,
        out_channels: u32,
        stride: u32,
        out_width: u32,
        out_height: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        padding_width: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        padding_height: Option<u32>,
    },
}

/// One value of the network: an operation over earlier values (indices into
/// [`PumaNetwork::values`]), inputs or matrices (indices into their lists).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Op {
    /// The input's data as a vector or a stream, by the input's kind.
    Input {
        input: usize,
    },
    Mvm {
        matrix: usize,
        x: usize,
    },
    Conv {
        matrix: usize,
        x: usize,
    },
    Add {
        a: usize,
        b: usize,
    },
    Sub {
        a: usize,
        b: usize,
    },
    Mul {
        a: usize,
        b: usize,
    },
    /// `factor * x` (the API's `float * Vector`, with an integer factor).
    Scale {
        factor: i32,
        x: usize,
    },
    Relu {
        x: usize,
    },
    Tanh {
        x: usize,
    },
    /// Of a vector or of a stream.
    Sig {
        x: usize,
    },
    MaxPool {
        hspan: u32,
        wspan: u32,
        x: usize,
    },
}

/// An output tensor and the value assigned to it (`Output*::create`, then `operator=`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Output {
    Vector {
        name: String,
        length: u32,
        value: usize,
    },
    Image {
        name: String,
        width: u32,
        height: u32,
        channels: u32,
        value: usize,
    },
}

/// A whole network. The driver creates its inputs, outputs and matrices in list order, then
/// its values, then assigns the outputs: the order of the API calls, which the compiler's
/// layout follows (matrices are laid out in creation order, snapshot
/// `src/partitioner.cpp:107-144`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PumaNetwork {
    /// The model's name, the prefix of every file the compiler writes.
    pub model: String,
    #[serde(default)]
    pub options: CompileOptions,
    pub inputs: Vec<Input>,
    pub matrices: Vec<Matrix>,
    pub values: Vec<Op>,
    pub outputs: Vec<Output>,
}

/// The shape of an image stream: the image's size, channels and the stream's stride.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ImageShape {
    pub width: u32,
    pub height: u32,
    pub channels: u32,
    pub stride: u32,
}

impl ImageShape {
    /// Pixel rows the stream carries: `⌈height / stride⌉`.
    pub fn rows(&self) -> u32 {
        self.height.div_ceil(self.stride.max(1))
    }

    /// Pixel columns the stream carries: `⌈width / stride⌉`.
    pub fn columns(&self) -> u32 {
        self.width.div_ceil(self.stride.max(1))
    }
}

/// The shape of a value: a vector's length or an image stream's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Shape {
    Vector(u32),
    Image(ImageShape),
}

impl Shape {
    fn kind(&self) -> &'static str {
        match self {
            Shape::Vector(_) => "a vector",
            Shape::Image(_) => "an image stream",
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Vector(n) => write!(f, "vector of {n}"),
            Shape::Image(s) => write!(
                f,
                "image {}×{}×{} (stride {})",
                s.width, s.height, s.channels, s.stride
            ),
        }
    }
}

/// Why a description is not a network the API promises to compile. Every variant names its
/// culprit: `values[i]`, or an input, matrix or output by name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NetworkError {
    #[error("not valid JSON for a PUMA network: {0}")]
    Json(String),
    #[error("{what} name `{name}` is not an identifier of 1 to 64 ASCII letters, digits and `_` starting with a letter or `_`")]
    BadName { what: &'static str, name: String },
    #[error("the name `{0}` is used twice (inputs, outputs and matrices share one namespace)")]
    DuplicateName(String),
    #[error("{culprit}: {field} is 0 (every size is at least 1)")]
    Zero {
        culprit: String,
        field: &'static str,
    },
    #[error("{culprit}: {what} is {value}, above the limit of {limit}")]
    TooLarge {
        culprit: String,
        what: &'static str,
        value: u64,
        limit: u64,
    },
    #[error("values[{value}] refers to {field} {index}, which is not {defined}")]
    BadReference {
        value: usize,
        field: &'static str,
        index: usize,
        defined: &'static str,
    },
    #[error("output `{output}` is assigned values[{value}], which does not exist")]
    BadOutputValue { output: String, value: usize },
    #[error("{culprit}: expected {expected}, found {found}")]
    WrongKind {
        culprit: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("values[{value}]: lengths differ ({left} and {right})")]
    LengthMismatch { value: usize, left: u32, right: u32 },
    #[error("values[{value}]: matrix `{matrix}` has {expected} {what}, its operand has {found}")]
    OperandMismatch {
        value: usize,
        matrix: String,
        what: &'static str,
        expected: u32,
        found: u32,
    },
    #[error("values[{value}]: matrix `{matrix}` declares output {axis} {declared}, but a {extent}-pixel {axis} with kernel {kernel} and stride {stride} gives {expected}")]
    ConvOutputSize {
        value: usize,
        matrix: String,
        axis: &'static str,
        declared: u32,
        expected: u32,
        extent: u32,
        kernel: u32,
        stride: u32,
    },
    #[error("values[{value}]: matrix `{matrix}`: the {axis} of {extent} pixels padded by {padding} on each side is narrower than the kernel's {kernel}")]
    ConvPadding {
        value: usize,
        matrix: String,
        axis: &'static str,
        extent: u32,
        padding: u32,
        kernel: u32,
    },
    #[error("values[{value}]: matrix `{matrix}`: stride {stride} does not divide {span} (the padded {axis} less the kernel)")]
    ConvStride {
        value: usize,
        matrix: String,
        axis: &'static str,
        stride: u32,
        span: u32,
    },
    #[error(
        "values[{value}]: scale factor {factor} is outside ±{}",
        limits::MAX_FACTOR
    )]
    Factor { value: usize, factor: i32 },
    #[error("output `{output}` is a {declared}, but its value is a {found}")]
    OutputShape {
        output: String,
        declared: Shape,
        found: Shape,
    },
    #[error("the model has no matrix (the compiler lays out only models with constant matrices)")]
    NoMatrix,
}

impl PumaNetwork {
    /// Parses a description (JSON). Unknown fields are errors.
    pub fn from_json(text: &str) -> Result<PumaNetwork, NetworkError> {
        serde_json::from_str(text).map_err(|e| NetworkError::Json(e.to_string()))
    }

    /// The description as pretty JSON (the form saved with a finding).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a network always serializes")
    }

    /// Checks the description against the API's rules (module docs) and returns the shape of
    /// every value.
    pub fn check(&self) -> Result<Vec<Shape>, NetworkError> {
        self.check_names()?;
        for input in &self.inputs {
            check_input(input)?;
        }
        for matrix in &self.matrices {
            check_matrix(matrix)?;
        }
        // A model without matrices is never INFERENCE, and partitioning divides by the MVMUs
        // per core of its type, 0 otherwise (snapshot src/model.cpp:134-149,
        // src/partitioner.cpp:344-345).
        if self.matrices.is_empty() {
            return Err(NetworkError::NoMatrix);
        }
        let mut shapes = Vec::with_capacity(self.values.len());
        let mut macs = 0u64;
        for (i, op) in self.values.iter().enumerate() {
            let (shape, op_macs) = self.value_shape(i, op, &shapes)?;
            macs = macs.saturating_add(op_macs);
            limit(
                &format!("values[{i}]"),
                "the network's multiply-accumulates",
                macs,
                limits::MAX_MACS,
            )?;
            shapes.push(shape);
        }
        for output in &self.outputs {
            self.check_output(output, &shapes)?;
        }
        Ok(shapes)
    }

    /// Names: identifiers, unique across inputs, matrices and outputs (they are bound and
    /// placed by name), and the lists within [`limits::MAX_ITEMS`].
    fn check_names(&self) -> Result<(), NetworkError> {
        check_name("model", &self.model)?;
        for (what, n) in [
            ("inputs", self.inputs.len()),
            ("matrices", self.matrices.len()),
            ("values", self.values.len()),
            ("outputs", self.outputs.len()),
        ] {
            limit("the network", what, n as u64, limits::MAX_ITEMS as u64)?;
        }
        let names = self
            .inputs
            .iter()
            .map(|i| ("input", i.name()))
            .chain(self.matrices.iter().map(|m| ("matrix", m.name())))
            .chain(self.outputs.iter().map(|o| ("output", o.name())));
        let mut seen = BTreeSet::new();
        for (what, name) in names {
            check_name(what, name)?;
            if !seen.insert(name) {
                return Err(NetworkError::DuplicateName(name.to_string()));
            }
        }
        Ok(())
    }

    /// The shape of `values[i]` and its multiply-accumulates, after checking its operands.
    fn value_shape(
        &self,
        i: usize,
        op: &Op,
        shapes: &[Shape],
    ) -> Result<(Shape, u64), NetworkError> {
        let operand = |index: usize| -> Result<Shape, NetworkError> {
            shapes
                .get(index)
                .copied()
                .ok_or(NetworkError::BadReference {
                    value: i,
                    field: "value",
                    index,
                    defined: "an earlier value",
                })
        };
        let vector = |index: usize| -> Result<u32, NetworkError> {
            match operand(index)? {
                Shape::Vector(n) => Ok(n),
                s => Err(wrong_kind(i, "a vector", s.kind())),
            }
        };
        let image = |index: usize| -> Result<ImageShape, NetworkError> {
            match operand(index)? {
                Shape::Image(s) => Ok(s),
                s => Err(wrong_kind(i, "an image stream", s.kind())),
            }
        };
        Ok(match *op {
            Op::Input { input } => {
                let inp = self.inputs.get(input).ok_or(NetworkError::BadReference {
                    value: i,
                    field: "input",
                    index: input,
                    defined: "an input",
                })?;
                (inp.shape(), 0)
            }
            Op::Mvm { matrix, x } => self.mvm_shape(i, matrix, vector(x)?)?,
            Op::Conv { matrix, x } => self.conv_shape(i, matrix, image(x)?)?,
            Op::Add { a, b } | Op::Sub { a, b } | Op::Mul { a, b } => {
                // Element-wise operands have equal lengths (snapshot src/operations.cpp:131-133,
                // src/tensors.cpp:302-305).
                let (left, right) = (vector(a)?, vector(b)?);
                if left != right {
                    return Err(NetworkError::LengthMismatch {
                        value: i,
                        left,
                        right,
                    });
                }
                (Shape::Vector(left), 0)
            }
            Op::Scale { factor, x } => {
                if factor.unsigned_abs() > limits::MAX_FACTOR as u32 {
                    return Err(NetworkError::Factor { value: i, factor });
                }
                (Shape::Vector(vector(x)?), 0)
            }
            Op::Relu { x } | Op::Tanh { x } => (Shape::Vector(vector(x)?), 0),
            // `sig` has a vector and a stream overload (snapshot include/puma.h:234, :265).
            Op::Sig { x } => (operand(x)?, 0),
            Op::MaxPool { hspan, wspan, x } => {
                let s = image(x)?;
                let culprit = format!("values[{i}]");
                nonzero(&culprit, "hspan", hspan)?;
                nonzero(&culprit, "wspan", wspan)?;
                dim(&culprit, "hspan", hspan)?;
                dim(&culprit, "wspan", wspan)?;
                // Non-overlapping windows, the last one cut at the edge, keeping the stream's
                // stride (snapshot src/operations.cpp:237-239, :258).
                let pooled = ImageShape {
                    width: s.width.div_ceil(wspan),
                    height: s.height.div_ceil(hspan),
                    ..s
                };
                (Shape::Image(pooled), 0)
            }
        })
    }

    fn dense(&self, i: usize, matrix: usize) -> Result<(&str, u32, u32), NetworkError> {
        match self.matrices.get(matrix) {
            Some(Matrix::Dense {
                name,
                width,
                height,
            }) => Ok((name, *width, *height)),
            Some(m) => Err(wrong_kind(i, "a dense matrix", m.kind())),
            None => Err(NetworkError::BadReference {
                value: i,
                field: "matrix",
                index: matrix,
                defined: "a matrix",
            }),
        }
    }

    fn mvm_shape(
        &self,
        i: usize,
        matrix: usize,
        length: u32,
    ) -> Result<(Shape, u64), NetworkError> {
        let (name, width, height) = self.dense(i, matrix)?;
        // The matrix's width is the vector's length (snapshot src/tensors.cpp:314-317); the
        // result has the matrix's height (src/operations.cpp:271).
        if width != length {
            return Err(NetworkError::OperandMismatch {
                value: i,
                matrix: name.to_string(),
                what: "columns",
                expected: width,
                found: length,
            });
        }
        Ok((Shape::Vector(height), width as u64 * height as u64))
    }

    fn conv_shape(
        &self,
        i: usize,
        matrix: usize,
        x: ImageShape,
    ) -> Result<(Shape, u64), NetworkError> {
        let Some(Matrix::Conv {
            name,
            kernel_width,
            kernel_height,
            in_channels,
            out_channels,
            stride,
            out_width,
            out_height,
            padding_width,
            padding_height,
        }) = self.matrices.get(matrix)
        else {
            return Err(match self.matrices.get(matrix) {
                Some(m) => wrong_kind(i, "a conv matrix", m.kind()),
                None => NetworkError::BadReference {
                    value: i,
                    field: "matrix",
                    index: matrix,
                    defined: "a matrix",
                },
            });
        };
        // Input channels are the stream's channels (snapshot src/tensors.cpp:335-338).
        if *in_channels != x.channels {
            return Err(NetworkError::OperandMismatch {
                value: i,
                matrix: name.clone(),
                what: "input channels",
                expected: *in_channels,
                found: x.channels,
            });
        }
        let axis = |axis, extent, kernel, padding: &Option<u32>, declared| ConvAxis {
            axis,
            extent,
            kernel,
            padding: padding.unwrap_or(kernel / 2),
            stride: *stride,
            declared,
        };
        let out_w =
            axis("width", x.width, *kernel_width, padding_width, *out_width).extent(i, name)?;
        let out_h = axis(
            "height",
            x.height,
            *kernel_height,
            padding_height,
            *out_height,
        )
        .extent(i, name)?;
        let out = ImageShape {
            width: out_w,
            height: out_h,
            channels: *out_channels,
            // A convolution's result is a stride-1 stream (snapshot src/operations.cpp:309).
            stride: 1,
        };
        tensor_limit(&format!("values[{i}]"), &out)?;
        let macs = out_w as u64
            * out_h as u64
            * *out_channels as u64
            * *in_channels as u64
            * *kernel_width as u64
            * *kernel_height as u64;
        Ok((Shape::Image(out), macs))
    }

    fn check_output(&self, output: &Output, shapes: &[Shape]) -> Result<(), NetworkError> {
        let (declared, value) = match output {
            Output::Vector {
                name,
                length,
                value,
            } => {
                nonzero(name, "length", *length)?;
                dim(name, "length", *length)?;
                (Shape::Vector(*length), *value)
            }
            Output::Image {
                name,
                width,
                height,
                channels,
                value,
            } => {
                for (field, v) in [("width", width), ("height", height), ("channels", channels)] {
                    nonzero(name, field, *v)?;
                    dim(name, field, *v)?;
                }
                let s = ImageShape {
                    width: *width,
                    height: *height,
                    channels: *channels,
                    stride: 1,
                };
                tensor_limit(name, &s)?;
                (Shape::Image(s), *value)
            }
        };
        let found = *shapes.get(value).ok_or(NetworkError::BadOutputValue {
            output: output.name().to_string(),
            value,
        })?;
        // An output has its value's length, or its width, height and channels (snapshot
        // src/operations.cpp:21, :32 and src/tensors.cpp:302-312; a stream's stride is not
        // compared).
        let agrees = match (declared, found) {
            (Shape::Vector(a), Shape::Vector(b)) => a == b,
            (Shape::Image(a), Shape::Image(b)) => {
                (a.width, a.height, a.channels) == (b.width, b.height, b.channels)
            }
            _ => false,
        };
        if !agrees {
            return Err(NetworkError::OutputShape {
                output: output.name().to_string(),
                declared,
                found,
            });
        }
        Ok(())
    }
}

/// One axis of a convolution: the operand's extent, the kernel's side, the padding on each
/// side, the stride and the declared output size.
struct ConvAxis {
    axis: &'static str,
    extent: u32,
    kernel: u32,
    padding: u32,
    stride: u32,
    declared: u32,
}

impl ConvAxis {
    /// The output extent, checked against the declared one.
    ///
    /// The API takes the output size, not a padding (`include/puma.h:163`); the snapshot's
    /// test computes the size from its `padding` argument as `(n − k + 2·padding)/stride + 1`
    /// and asserts that the division is exact (`test/conv-layer.cpp:48-51`), and the compiler
    /// checks nothing of it (`src/tensors.cpp:225-250`, `:335-338`). So any padding is
    /// allowed, the test's way: the declared size must be what the padding gives, and the
    /// padded image at least as large as the kernel (else the formula's numerator is
    /// negative). The compiler itself always pads `⌊k/2⌋` and centres tap `⌊k/2⌋` on the
    /// output pixel (`src/operations.cpp:316-319`); another padding is what the declared size
    /// says, and the reference follows the size, not the compiler.
    fn extent(&self, value: usize, matrix: &str) -> Result<u32, NetworkError> {
        let padded = u64::from(self.extent) + 2 * u64::from(self.padding);
        let Some(span) = padded
            .checked_sub(u64::from(self.kernel))
            .and_then(|s| u32::try_from(s).ok())
        else {
            return Err(NetworkError::ConvPadding {
                value,
                matrix: matrix.to_string(),
                axis: self.axis,
                extent: self.extent,
                padding: self.padding,
                kernel: self.kernel,
            });
        };
        if !span.is_multiple_of(self.stride) {
            return Err(NetworkError::ConvStride {
                value,
                matrix: matrix.to_string(),
                axis: self.axis,
                stride: self.stride,
                span,
            });
        }
        let expected = span / self.stride + 1;
        if self.declared != expected {
            return Err(NetworkError::ConvOutputSize {
                value,
                matrix: matrix.to_string(),
                axis: self.axis,
                declared: self.declared,
                expected,
                extent: self.extent,
                kernel: self.kernel,
                stride: self.stride,
            });
        }
        Ok(expected)
    }
}

fn check_input(input: &Input) -> Result<(), NetworkError> {
    match input {
        Input::Vector { name, length } => {
            // A zero length wraps the tile count (snapshot src/tensors.h:49, :120).
            nonzero(name, "length", *length)?;
            dim(name, "length", *length)
        }
        Input::Image {
            name,
            width,
            height,
            channels,
            stride,
        } => {
            // The stride divides the image size (snapshot src/tensors.cpp:141-143).
            for (field, v) in [
                ("width", width),
                ("height", height),
                ("channels", channels),
                ("stride", stride),
            ] {
                nonzero(name, field, *v)?;
                dim(name, field, *v)?;
            }
            tensor_limit(
                name,
                &ImageShape {
                    width: *width,
                    height: *height,
                    channels: *channels,
                    stride: *stride,
                },
            )
        }
    }
}

fn check_matrix(matrix: &Matrix) -> Result<(), NetworkError> {
    let name = matrix.name();
    let fields: Vec<(&'static str, u32)> = match matrix {
        Matrix::Dense { width, height, .. } => vec![("width", *width), ("height", *height)],
        Matrix::Conv {
            kernel_width,
            kernel_height,
            in_channels,
            out_channels,
            stride,
            out_width,
            out_height,
            padding_width,
            padding_height,
            ..
        } => {
            // A padding may be 0; it is bounded like any size.
            for (field, p) in [
                ("padding_width", padding_width),
                ("padding_height", padding_height),
            ] {
                if let Some(p) = p {
                    dim(name, field, *p)?;
                }
            }
            vec![
                ("kernel_width", *kernel_width),
                ("kernel_height", *kernel_height),
                ("in_channels", *in_channels),
                ("out_channels", *out_channels),
                ("stride", *stride),
                ("out_width", *out_width),
                ("out_height", *out_height),
            ]
        }
    };
    for (field, v) in fields {
        nonzero(name, field, v)?;
        dim(name, field, v)?;
    }
    limit(
        name,
        "the element count",
        matrix.elements(),
        limits::MAX_MATRIX_ELEMENTS,
    )
}

fn check_name(what: &'static str, name: &str) -> Result<(), NetworkError> {
    let mut chars = name.chars();
    let ok = name.len() <= limits::MAX_NAME_LEN
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(NetworkError::BadName {
            what,
            name: name.to_string(),
        })
    }
}

fn nonzero(culprit: &str, field: &'static str, v: u32) -> Result<(), NetworkError> {
    if v == 0 {
        return Err(NetworkError::Zero {
            culprit: culprit.to_string(),
            field,
        });
    }
    Ok(())
}

fn dim(culprit: &str, what: &'static str, v: u32) -> Result<(), NetworkError> {
    limit(culprit, what, v as u64, limits::MAX_DIM as u64)
}

fn tensor_limit(culprit: &str, s: &ImageShape) -> Result<(), NetworkError> {
    let elements = s.width as u64 * s.height as u64 * s.channels as u64;
    limit(
        culprit,
        "the element count",
        elements,
        limits::MAX_TENSOR_ELEMENTS,
    )
}

fn limit(culprit: &str, what: &'static str, value: u64, limit: u64) -> Result<(), NetworkError> {
    if value > limit {
        return Err(NetworkError::TooLarge {
            culprit: culprit.to_string(),
            what,
            value,
            limit,
        });
    }
    Ok(())
}

fn wrong_kind(value: usize, expected: &'static str, found: &'static str) -> NetworkError {
    NetworkError::WrongKind {
        culprit: format!("values[{value}]"),
        expected,
        found,
    }
}

impl Input {
    pub fn name(&self) -> &str {
        match self {
            Input::Vector { name, .. } | Input::Image { name, .. } => name,
        }
    }

    /// The value's shape `Op::Input` gives it.
    pub fn shape(&self) -> Shape {
        match *self {
            Input::Vector { length, .. } => Shape::Vector(length),
            Input::Image {
                width,
                height,
                channels,
                stride,
                ..
            } => Shape::Image(ImageShape {
                width,
                height,
                channels,
                stride,
            }),
        }
    }

    /// The shape of the data the caller provides: `[length]`, or the streamed pixel grid
    /// `[⌈height/stride⌉, ⌈width/stride⌉, channels]` (row, column, channel).
    pub fn data_shape(&self) -> Vec<usize> {
        match self.shape() {
            Shape::Vector(n) => vec![n as usize],
            Shape::Image(s) => vec![s.rows() as usize, s.columns() as usize, s.channels as usize],
        }
    }
}

impl Matrix {
    pub fn name(&self) -> &str {
        match self {
            Matrix::Dense { name, .. } | Matrix::Conv { name, .. } => name,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Matrix::Dense { .. } => "a dense matrix",
            Matrix::Conv { .. } => "a conv matrix",
        }
    }

    /// The numbers its `create` call takes after the model and the name, in the API's order
    /// (`ConstantMatrix::create`, `ConvolutionalConstantMatrix::create`): the driver's file and
    /// a finding's `model.cpp` both write them, and must agree.
    pub fn create_args(&self) -> Vec<u32> {
        match *self {
            Matrix::Dense { width, height, .. } => vec![width, height],
            Matrix::Conv {
                kernel_width,
                kernel_height,
                in_channels,
                out_channels,
                stride,
                out_width,
                out_height,
                ..
            } => vec![
                kernel_width,
                kernel_height,
                in_channels,
                out_channels,
                stride,
                out_width,
                out_height,
            ],
        }
    }

    /// The shape of its weights: `[height, width]`, or `[kernel_height, kernel_width,
    /// out_channels, in_channels]` (the orders `generateData` reads).
    pub fn data_shape(&self) -> Vec<usize> {
        match *self {
            Matrix::Dense { width, height, .. } => vec![height as usize, width as usize],
            Matrix::Conv {
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
        }
    }

    /// A conv matrix's padding on each side, `(width, height)`: as described, else `⌊k/2⌋`
    /// (the compiler's own centring); `None` for a dense matrix.
    pub fn padding(&self) -> Option<(u32, u32)> {
        match *self {
            Matrix::Dense { .. } => None,
            Matrix::Conv {
                kernel_width,
                kernel_height,
                padding_width,
                padding_height,
                ..
            } => Some((
                padding_width.unwrap_or(kernel_width / 2),
                padding_height.unwrap_or(kernel_height / 2),
            )),
        }
    }

    /// Elements of its weights.
    pub fn elements(&self) -> u64 {
        self.data_shape().iter().map(|&d| d as u64).product()
    }
}

impl Output {
    pub fn name(&self) -> &str {
        match self {
            Output::Vector { name, .. } | Output::Image { name, .. } => name,
        }
    }

    /// The value assigned to it.
    pub fn value(&self) -> usize {
        match self {
            Output::Vector { value, .. } | Output::Image { value, .. } => *value,
        }
    }

    /// The declared shape (an output stream has stride 1).
    pub fn shape(&self) -> Shape {
        match *self {
            Output::Vector { length, .. } => Shape::Vector(length),
            Output::Image {
                width,
                height,
                channels,
                ..
            } => Shape::Image(ImageShape {
                width,
                height,
                channels,
                stride: 1,
            }),
        }
    }

    /// The shape of the data the run produces: `[length]`, or `[height, width, channels]`.
    pub fn data_shape(&self) -> Vec<usize> {
        match *self {
            Output::Vector { length, .. } => vec![length as usize],
            Output::Image {
                width,
                height,
                channels,
                ..
            } => vec![height as usize, width as usize, channels as usize],
        }
    }
}

impl Op {
    /// The values it reads.
    pub fn operands(&self) -> Vec<usize> {
        match *self {
            Op::Input { .. } => vec![],
            Op::Mvm { x, .. }
            | Op::Conv { x, .. }
            | Op::Scale { x, .. }
            | Op::Relu { x }
            | Op::Tanh { x }
            | Op::Sig { x }
            | Op::MaxPool { x, .. } => vec![x],
            Op::Add { a, b } | Op::Sub { a, b } | Op::Mul { a, b } => vec![a, b],
        }
    }

    /// The operation's name in the driver's format (`let %V = NAME ...`).
    pub fn name(&self) -> &'static str {
        match self {
            Op::Input { .. } => "input",
            Op::Mvm { .. } => "mvm",
            Op::Conv { .. } => "conv",
            Op::Add { .. } => "add",
            Op::Sub { .. } => "sub",
            Op::Mul { .. } => "mul",
            Op::Scale { .. } => "scale",
            Op::Relu { .. } => "relu",
            Op::Tanh { .. } => "tanh",
            Op::Sig { .. } => "sig",
            Op::MaxPool { .. } => "maxpool",
        }
    }
}
