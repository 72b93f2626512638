//! Generates the ONNX protobuf types (`onnx.rs` in `OUT_DIR`) from the official schema in
//! `onnx/proto/onnx.proto`, for `onnx/src/lib.rs`.
//!
//! The schema is compiled by `protox`, a protobuf compiler written in Rust, so building pimdiff
//! needs no system `protoc`; `prost-build` turns the descriptors into Rust types.

fn main() {
    let schema = "proto/onnx.proto";
    println!("cargo:rerun-if-changed={schema}");
    println!("cargo:rerun-if-changed=build.rs");
    let descriptors = match protox::compile([schema], ["proto"]) {
        Ok(d) => d,
        Err(e) => panic!("cannot compile {schema}: {e}"),
    };
    if let Err(e) = prost_build::Config::new().compile_fds(descriptors) {
        panic!("cannot generate Rust types from {schema}: {e}");
    }
}
