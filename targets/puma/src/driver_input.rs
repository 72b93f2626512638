//! The two files `puma-driver` reads (`scripts/puma-driver/puma-driver.cpp`): a network
//! description in its line-oriented text format, and the weights of every matrix.
//!
//! # Network file (version 1)
//!
//! ```text
//! pimdiff-puma-network 1                      first line
//! model NAME                                  Model::create
//! option coalesce on|off                      CompilerOptions::coalesceMVMOperations_
//! option partition row-major|col-major|random CompilerOptions::gp_ (the driver also takes kahip)
//! option debug on|off                         CompilerOptions::printDebugInfo_ (.dot graphs)
//! input-vector NAME LENGTH                    InputVector::create
//! input-image NAME WIDTH HEIGHT CHANNELS STRIDE
//! output-vector NAME LENGTH                   OutputVector::create
//! output-image NAME WIDTH HEIGHT CHANNELS
//! matrix NAME WIDTH HEIGHT                    ConstantMatrix::create (WIDTH = input length)
//! conv-matrix NAME KW KH IN_CHANNELS OUT_CHANNELS STRIDE OUT_WIDTH OUT_HEIGHT
//! let %V = input NAME                         Vector(InputVector) / ImagePixelStream(...)
//! let %V = mvm MATRIX %X                      ConstantMatrix * Vector
//! let %V = conv MATRIX %X                     ConvolutionalConstantMatrix * ImagePixelStream
//! let %V = add|sub|mul %A %B                  element-wise Vector + - *
//! let %V = scale FACTOR %X                    FACTOR * Vector
//! let %V = relu|tanh %X                       relu(Vector), tanh(Vector)
//! let %V = sig %X                             sig(Vector) or sig(ImagePixelStream)
//! let %V = maxpool HSPAN WSPAN %X             maxpool(ImagePixelStream, HSPAN, WSPAN)
//! assign NAME %X                              OutputVector = Vector, OutputImagePixelStream = ...
//! end                                         last line
//! ```
//!
//! `#` starts a comment; statements run in file order, one API call each; value names start
//! with `%`, tensor names do not. This module writes the inputs, then the outputs, the
//! matrices, the values (`%0`, `%1`, … in [`PumaNetwork::values`] order) and the assignments,
//! and the options first. Numbers are decimal (a scale factor is an integer here).
//!
//! # Weights file (version 1)
//!
//! ```text
//! pimdiff-puma-weights 1
//! matrix NAME COUNT                           then COUNT decimal values
//! end
//! ```
//!
//! Once per matrix, in [`PumaNetwork::matrices`] order, its weights row-major in the order
//! `generateData` reads them: a dense matrix `[height][width]`, a conv matrix
//! `[kernel_height][kernel_width][out_channels][in_channels]`; one line per innermost row.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use super::network::{Input, Matrix, Op, Output, PumaNetwork};
use super::tensors::NetworkData;

/// The network file's name in a case directory.
pub const NETWORK_FILE: &str = "network.txt";

/// The weights file's name in a case directory.
pub const WEIGHTS_FILE: &str = "weights.txt";

/// The driver's network file for `net`; with `debug` (or the network's own
/// [`super::network::CompileOptions::debug`]), the compiler also writes its `.dot` graphs
/// (which it cannot do for strided input streams: see `docs/puma.md`). A convolution that
/// declares a padding has it in a comment after its matrix (the API does not take it).
pub fn network_text(net: &PumaNetwork, debug: bool) -> String {
    let mut t = String::new();
    let on = |b: bool| if b { "on" } else { "off" };
    let _ = writeln!(
        t,
        "# PUMA network `{}`, written by pimdiff for puma-driver",
        net.model
    );
    let _ = writeln!(t, "pimdiff-puma-network 1");
    let _ = writeln!(t, "model {}", net.model);
    let _ = writeln!(t, "option coalesce {}", on(net.options.coalesce));
    let _ = writeln!(t, "option partition {}", net.options.partition.name());
    let _ = writeln!(t, "option debug {}", on(debug || net.options.debug));
    for input in &net.inputs {
        let _ = match input {
            Input::Vector { name, length } => writeln!(t, "input-vector {name} {length}"),
            Input::Image {
                name,
                width,
                height,
                channels,
                stride,
            } => writeln!(t, "input-image {name} {width} {height} {channels} {stride}"),
        };
    }
    for output in &net.outputs {
        let _ = match output {
            Output::Vector { name, length, .. } => writeln!(t, "output-vector {name} {length}"),
            Output::Image {
                name,
                width,
                height,
                channels,
                ..
            } => writeln!(t, "output-image {name} {width} {height} {channels}"),
        };
    }
    for matrix in &net.matrices {
        let keyword = match matrix {
            Matrix::Dense { .. } => "matrix",
            Matrix::Conv { .. } => "conv-matrix",
        };
        let args: Vec<String> = matrix.create_args().iter().map(u32::to_string).collect();
        let _ = writeln!(t, "{keyword} {} {}", matrix.name(), args.join(" "));
        if let (
            Matrix::Conv {
                padding_width,
                padding_height,
                ..
            },
            Some((w, h)),
        ) = (matrix, matrix.padding())
        {
            if padding_width.is_some() || padding_height.is_some() {
                let _ = writeln!(t, "# padding {w} {h} (the output size's; not an argument)");
            }
        }
    }
    for (i, op) in net.values.iter().enumerate() {
        let _ = writeln!(t, "let %{i} = {}", operation(net, op));
    }
    for output in &net.outputs {
        let _ = writeln!(t, "assign {} %{}", output.name(), output.value());
    }
    t.push_str("end\n");
    t
}

/// `OPERATION OPERANDS` of one `let`.
fn operation(net: &PumaNetwork, op: &Op) -> String {
    let m = |i: usize| net.matrices[i].name();
    match *op {
        Op::Input { input } => format!("input {}", net.inputs[input].name()),
        Op::Mvm { matrix, x } => format!("mvm {} %{x}", m(matrix)),
        Op::Conv { matrix, x } => format!("conv {} %{x}", m(matrix)),
        Op::Add { a, b } | Op::Sub { a, b } | Op::Mul { a, b } => {
            format!("{} %{a} %{b}", op.name())
        }
        Op::Scale { factor, x } => format!("scale {factor} %{x}"),
        Op::Relu { x } | Op::Tanh { x } | Op::Sig { x } => format!("{} %{x}", op.name()),
        Op::MaxPool { hspan, wspan, x } => format!("maxpool {hspan} {wspan} %{x}"),
    }
}

/// The driver's weights file: every matrix of `net` with its weights in `data`.
pub fn weights_text(net: &PumaNetwork, data: &NetworkData) -> String {
    let mut t = String::from("pimdiff-puma-weights 1\n");
    for (matrix, w) in net.matrices.iter().zip(&data.weights) {
        let _ = writeln!(t, "matrix {} {}", matrix.name(), w.len());
        let row = w.shape().last().copied().unwrap_or(1).max(1);
        let flat: Vec<i64> = w.iter().copied().collect();
        for chunk in flat.chunks(row) {
            let line: Vec<String> = chunk.iter().map(i64::to_string).collect();
            t.push_str(&line.join(" "));
            t.push('\n');
        }
    }
    t.push_str("end\n");
    t
}

/// Writes [`NETWORK_FILE`] and [`WEIGHTS_FILE`] into `dir`.
pub fn write_driver_files(
    dir: &Path,
    net: &PumaNetwork,
    data: &NetworkData,
    debug: bool,
) -> io::Result<()> {
    std::fs::write(dir.join(NETWORK_FILE), network_text(net, debug))?;
    std::fs::write(dir.join(WEIGHTS_FILE), weights_text(net, data))
}
