//! A standalone `model.cpp` for a PUMA network: the program a person would write against the
//! compiler's `include/puma.h`, making the same API calls in the same order as `puma-driver`
//! makes for the network, with the weights inline. Saved with a finding, it reproduces the
//! compile (and the weight files) with nothing of pimdiff's; [`BUILD_SCRIPT`] builds and runs
//! it against a tree of `scripts/build-puma.sh`.

use std::fmt::Write as _;

use super::network::{Input, Matrix, Op, Output, PumaNetwork};
use super::tensors::NetworkData;

/// `build.sh`, written next to `model.cpp`: builds it against `$PUMA_DIR` (a tree of
/// `scripts/build-puma.sh`) and runs it in its own directory.
pub const BUILD_SCRIPT: &str = r#"#!/bin/sh
# Builds model.cpp against the PUMA compiler and runs it here; the compiler writes its
# programs, weights and placement next to this script.
#   PUMA_DIR=$(scripts/build-puma.sh | tail -1) ./build.sh
set -eu
: "${PUMA_DIR:?set PUMA_DIR to a tree of scripts/build-puma.sh}"
cd "$(dirname "$0")"
# The tree's own flags: a sanitizer tree's library needs the sanitizer runtime linked first.
flags=$(cat "$PUMA_DIR/cxxflags" 2>/dev/null || echo -g)
g++ -std=c++11 $flags -I"$PUMA_DIR/include" model.cpp -L"$PUMA_DIR/src" -lpuma \
    -Wl,-rpath,"$PUMA_DIR/src" -o model
./model
"#;

/// The `model.cpp` of `net`; with `data`, it also binds the weights and calls
/// `generateData` (as the driver does with a weights file).
pub fn model_cpp(net: &PumaNetwork, data: Option<&NetworkData>) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "// PUMA network `{}`, written by pimdiff: the API calls puma-driver makes for it.\n\
         // Build and run with build.sh (PUMA_DIR = a tree of scripts/build-puma.sh).\n\
         #include \"puma.h\"\n\nint main() {{\n    Model model = Model::create(\"{}\");",
        net.model, net.model
    );
    declarations(&mut t, net);
    for (i, op) in net.values.iter().enumerate() {
        let _ = writeln!(t, "    {}", statement(net, i, op));
    }
    for output in &net.outputs {
        let _ = writeln!(t, "    t_{} = v{};", output.name(), output.value());
    }
    let _ = writeln!(
        t,
        "    CompilerOptions options;\n    options.coalesceMVMOperations_ = {};\n    \
         options.gp_ = CompilerOptions::{};",
        net.options.coalesce,
        net.options.partition.cpp_name()
    );
    if net.options.debug {
        let _ = writeln!(t, "    options.printDebugInfo_ = true;");
    }
    let _ = writeln!(t, "    model.compile(options);");
    if let Some(data) = data {
        let _ = writeln!(
            t,
            "    ModelInstance instance = ModelInstance::create(model);"
        );
        for (matrix, w) in net.matrices.iter().zip(&data.weights) {
            let name = matrix.name();
            let _ = writeln!(t, "    static float w_{name}[] = {{");
            let flat: Vec<String> = w.iter().map(|v| v.to_string()).collect();
            for chunk in flat.chunks(16) {
                let _ = writeln!(t, "        {},", chunk.join(", "));
            }
            let _ = writeln!(t, "    }};\n    instance.bind(\"{name}\", w_{name});");
        }
        let _ = writeln!(t, "    instance.generateData();");
    }
    t.push_str("    model.destroy();\n    return 0;\n}\n");
    t
}

/// The `create` calls: inputs, outputs, matrices (the driver's order).
fn declarations(t: &mut String, net: &PumaNetwork) {
    for input in &net.inputs {
        let _ = match input {
            Input::Vector { name, length } => writeln!(
                t,
                "    InputVector t_{name} = InputVector::create(model, \"{name}\", {length});"
            ),
            Input::Image {
                name,
                width,
                height,
                channels,
                stride,
            } => writeln!(
                t,
                "    InputImagePixelStream t_{name} = InputImagePixelStream::create(model, \"{name}\", {width}, {height}, {channels}, {stride});"
            ),
        };
    }
    for output in &net.outputs {
        let _ = match output {
            Output::Vector { name, length, .. } => writeln!(
                t,
                "    OutputVector t_{name} = OutputVector::create(model, \"{name}\", {length});"
            ),
            Output::Image {
                name,
                width,
                height,
                channels,
                ..
            } => writeln!(
                t,
                "    OutputImagePixelStream t_{name} = OutputImagePixelStream::create(model, \"{name}\", {width}, {height}, {channels});"
            ),
        };
    }
    for matrix in &net.matrices {
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
                let _ = writeln!(
                    t,
                    "    // `{}`: the output size of padding {w} × {h} (width × height)",
                    matrix.name()
                );
            }
        }
        let class = match matrix {
            Matrix::Dense { .. } => "ConstantMatrix",
            Matrix::Conv { .. } => "ConvolutionalConstantMatrix",
        };
        let name = matrix.name();
        let args: Vec<String> = matrix.create_args().iter().map(u32::to_string).collect();
        let _ = writeln!(
            t,
            "    {class} t_{name} = {class}::create(model, \"{name}\", {});",
            args.join(", ")
        );
    }
}

/// The C++ statement defining value `i`.
fn statement(net: &PumaNetwork, i: usize, op: &Op) -> String {
    let image = |v: usize| is_image(net, v);
    let ty = if image(i) {
        "ImagePixelStream"
    } else {
        "Vector"
    };
    let m = |k: usize| net.matrices[k].name();
    let expr = match *op {
        Op::Input { input } => format!("t_{}", net.inputs[input].name()),
        Op::Mvm { matrix, x } | Op::Conv { matrix, x } => format!("t_{} * v{x}", m(matrix)),
        Op::Add { a, b } => format!("v{a} + v{b}"),
        Op::Sub { a, b } => format!("v{a} - v{b}"),
        Op::Mul { a, b } => format!("v{a} * v{b}"),
        Op::Scale { factor, x } => format!("{factor}.0f * v{x}"),
        Op::Relu { x } | Op::Tanh { x } | Op::Sig { x } => format!("{}(v{x})", op.name()),
        Op::MaxPool { hspan, wspan, x } => format!("maxpool(v{x}, {hspan}, {wspan})"),
    };
    format!("{ty} v{i} = {expr};")
}

/// Whether value `v` is an image stream (by its operation's kind, as the C++ types say).
fn is_image(net: &PumaNetwork, mut v: usize) -> bool {
    loop {
        match net.values[v] {
            Op::Input { input } => return matches!(net.inputs[input], Input::Image { .. }),
            Op::Conv { .. } | Op::MaxPool { .. } => return true,
            Op::Sig { x } => v = x,
            _ => return false,
        }
    }
}
