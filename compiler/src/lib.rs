//! The channel-wise compiler: conv2d / MVM cases lowered to the PIMSim ISA, with the
//! crossbar export and the io manifest (`shared/docs/design.md`, "The compiler").
//!
//! One module per stage, each with a printable intermediate form ([`emit`]):
//!
//! | stage | module | what it decides |
//! |---|---|---|
//! | Spatial | [`tiling`] | channel tiles, crossbar matrices, `applyFilters` per output tile |
//! | Mapping | [`mapping`] | cores and arrays of every crossbar; owners and contributors of each reduction |
//! | Pim | [`buffers`] | GMem layout (io manifest), output-pixel chunks, every core's LMem map |
//! | Asm | [`codegen`], [`export`] | the instructions; the crossbar export and `array_group_map` |
//!
//! The compiler reads only the case *types* of `pimdiff-oracle`, never its arithmetic. It is
//! complete for every case the case format allows; when a case cannot fit the architecture
//! it returns [`Unsupported`] with the numbers (needed vs. available), and it never panics.
//! The same case and options always give the byte-identical bundle.

pub mod buffers;
pub mod codegen;
pub mod emit;
pub mod export;
pub mod mapping;
pub mod tiling;

use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::{ArchHints, Program};
use pimdiff_oracle::Case;

pub use emit::{emit, Stage};

/// The optimizations of the thesis, each of which can be switched off so that optimized and
/// unoptimized programs can be compared against each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CompileOptions {
    /// Skip kernel positions that fall in the padding for an output pixel (and crossbars
    /// whose kernel position is in the padding for every pixel). Off: the input window is
    /// zero-padded in local memory and the padding zeros are multiplied.
    pub skip_padding: bool,
    /// Leave out crossbars whose weights are all zero.
    pub weight_skipping: bool,
}

impl Default for CompileOptions {
    /// Both optimizations on, as the thesis's compiler runs.
    fn default() -> Self {
        CompileOptions {
            skip_padding: true,
            weight_skipping: true,
        }
    }
}

/// Why compilation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// The case is valid but does not fit the architecture.
    #[error("unsupported: {0}")]
    Unsupported(Unsupported),
    /// A bug in the compiler, or a hand-built case whose parts disagree.
    #[error("internal compiler error: {0}")]
    Internal(String),
}

/// A valid case the compiler declines, with the numbers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unsupported {
    #[error("not enough crossbar arrays: {needed} needed, {available} available (cores × arrays_per_core)")]
    NotEnoughArrays { needed: usize, available: usize },
    #[error(
        "local memory too small on core {core}: even a one-pixel chunk needs {needed} bytes, {available} available"
    )]
    LocalMemory {
        core: usize,
        needed: u64,
        available: u64,
    },
    #[error("program too large: at least {needed} instructions, the limit is {limit}")]
    TooManyInstructions { needed: u64, limit: u64 },
    #[error("arch.{field} = {value} does not fit the program's 32-bit configuration")]
    ArchTooLarge { field: &'static str, value: usize },
}

/// Everything the stages produced, for [`emit`] and [`compile`].
pub(crate) struct Compiled {
    pub spatial: tiling::Spatial,
    pub mapping: mapping::Mapping,
    pub buffers: buffers::Buffers,
}

fn arch_u32(field: &'static str, value: usize) -> Result<u32, CompileError> {
    u32::try_from(value)
        .map_err(|_| CompileError::Unsupported(Unsupported::ArchTooLarge { field, value }))
}

/// Run stages 1 to 4 (tiling, mapping, bufferization).
pub(crate) fn plan(case: &Case, options: &CompileOptions) -> Result<Compiled, CompileError> {
    let arch = &case.spec.arch;
    if arch.cores == 0 {
        return Err(CompileError::Internal("arch.cores must be >= 1".into()));
    }
    for (field, value) in [
        ("cores", arch.cores),
        ("arrays_per_core", arch.arrays_per_core),
        ("array_rows", arch.array_rows),
        ("array_cols", arch.array_cols),
        ("local_memory_bytes", arch.local_memory_bytes),
    ] {
        arch_u32(field, value)?;
    }
    let spatial = tiling::tile(case, options)?;
    let mapping = mapping::map(&spatial, arch.cores, arch.arrays_per_core)?;
    let buffers = buffers::bufferize(case, &spatial, &mapping, options.skip_padding)?;
    Ok(Compiled {
        spatial,
        mapping,
        buffers,
    })
}

/// Compile a case into a bundle: program, crossbar export, io manifest.
pub fn compile(case: &Case, options: &CompileOptions) -> Result<Bundle, CompileError> {
    let c = plan(case, options)?;
    let cores = codegen::generate(&c.spatial, &c.mapping, &c.buffers, options.skip_padding);
    let xbars = export::export(case, &c.spatial, &c.mapping);
    Ok(Bundle {
        program: program(case, &c, cores),
        xbars,
        manifest: c.buffers.manifest,
    })
}

pub(crate) fn program(case: &Case, c: &Compiled, cores: Vec<Vec<pimdiff_isa::Inst>>) -> Program {
    let arch = &case.spec.arch;
    let n = arch.cores as u32;
    let hints = ArchHints {
        arrays_per_core: Some(arch.arrays_per_core as u32),
        array_rows: Some(arch.array_rows as u32),
        array_cols: Some(arch.array_cols as u32),
        local_memory_bytes: Some(arch.local_memory_bytes as u32),
        // The same most-square mesh the interpreter assumes for a program without one.
        mesh: Some(pimdiff_isa::Arch::default_mesh(n)),
        frac_bits: Some(0),
        cell_precision: None,
        adc_count: None,
    };
    Program {
        cores,
        groups: export::group_map(&c.mapping),
        arch: hints,
    }
}
