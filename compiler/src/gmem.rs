//! Global memory, the same for both lowerings: the int8 input in NHWC at 0 (a pixel's
//! channels contiguous, so a crossbar's input vector is a plain address), the int32 output
//! in NHWC after it, the int32 bias vector (a constant segment) after that, each 64-byte
//! aligned; and the io manifest that states it.

use std::fmt::Write as _;

use pimdiff_isa::bundle::{ConstSegment, Dtype, IoManifest, Layout as TensorLayout, TensorSlot};
use pimdiff_oracle::Case;

use crate::mapping::Mapping;
use crate::tiling::{Problem, Spatial};
use crate::{CompileError, Unsupported};

/// The global-memory layout of a compiled case.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Where input, output and constants live (part of the bundle).
    pub manifest: IoManifest,
    /// GMem address of the bias segment (meaningful when the op has a bias).
    pub bias_addr: u32,
}

/// An upper bound of the instructions a program may have before compiling it is refused
/// (32 Mi, about 640 MiB of instructions), so that a legal but enormous case is declined
/// instead of exhausting memory.
pub const MAX_INSTRUCTIONS: u64 = 1 << 25;

/// Decline a case whose program would certainly exceed [`MAX_INSTRUCTIONS`], before any
/// instruction is generated.
pub(crate) fn check_instruction_bound(
    spatial: &Spatial,
    mapping: &Mapping,
) -> Result<(), CompileError> {
    let p = &spatial.problem;
    // A lower bound of the instruction count: every kept crossbar's mvmul for every pixel
    // (minus nothing: padding skipping only removes a border), with its address set-up.
    let mvmuls = mapping.placements.len() as u64 * p.pixels() as u64;
    // Plus the per-pixel stores (and bias additions) of each output tile.
    let finals = spatial.classes.len() as u64 * p.pixels() as u64 * (1 + p.bias as u64);
    let estimate = mvmuls.saturating_mul(2).saturating_add(finals);
    if estimate > MAX_INSTRUCTIONS {
        return Err(CompileError::Unsupported(
            Unsupported::TooManyInstructions {
                needed: estimate,
                limit: MAX_INSTRUCTIONS,
            },
        ));
    }
    Ok(())
}

/// Lay out global memory for a problem.
pub(crate) fn layout(case: &Case, p: &Problem) -> Result<Layout, CompileError> {
    let in_bytes = (p.n * p.h * p.w * p.c) as u64;
    let out_addr = align64(in_bytes);
    let out_bytes = p.pixels() as u64 * p.k as u64 * 4;
    let bias_addr = align64(out_addr + out_bytes);
    let end = bias_addr + if p.bias { p.k as u64 * 4 } else { 0 };
    if end > 1 << 32 {
        // Unreachable for a case within the limits (tensors of at most 2^26 bytes).
        return Err(CompileError::Internal(format!(
            "global memory layout needs {end} bytes, more than 2^32"
        )));
    }
    let (in_shape, out_shape, layout) = if p.mvm {
        (vec![p.n, p.c], vec![p.n, p.k], TensorLayout::Nc)
    } else {
        (
            vec![p.n, p.c, p.h, p.w],
            vec![p.n, p.k, p.oh, p.ow],
            TensorLayout::Nhwc,
        )
    };
    let mut constants = Vec::new();
    if let Some(bias) = &case.bias {
        let mut data = Vec::with_capacity(p.k * 4);
        for v in bias.iter() {
            data.extend_from_slice(&v.to_le_bytes());
        }
        constants.push(ConstSegment {
            name: "bias".into(),
            addr: bias_addr as u32,
            file: "bias.bin".into(),
            data,
        });
    }
    let manifest = IoManifest {
        input: TensorSlot {
            addr: 0,
            shape: in_shape,
            layout,
            dtype: Dtype::Int8,
        },
        output: TensorSlot {
            addr: out_addr as u32,
            shape: out_shape,
            layout,
            dtype: Dtype::Int32,
        },
        constants,
    };
    Ok(Layout {
        manifest,
        bias_addr: bias_addr as u32,
    })
}

fn align64(x: u64) -> u64 {
    x.div_ceil(64) * 64
}

/// Text of the global-memory layout (part of `--emit pim`).
pub fn describe(m: &IoManifest, out: &mut String) {
    let _ = writeln!(
        out,
        "gmem input  @{} {:?} {:?} {:?}",
        m.input.addr, m.input.shape, m.input.layout, m.input.dtype
    );
    let _ = writeln!(
        out,
        "gmem output @{} {:?} {:?} {:?}",
        m.output.addr, m.output.shape, m.output.layout, m.output.dtype
    );
    for c in &m.constants {
        let _ = writeln!(
            out,
            "gmem const {} @{} {} bytes ({})",
            c.name,
            c.addr,
            c.data.len(),
            c.file
        );
    }
}
