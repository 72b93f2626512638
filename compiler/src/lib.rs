//! The in-repo compiler: conv2d / MVM cases lowered to the PIMSim ISA, with the crossbar
//! export and the io manifest (`docs/design.md`, "The compiler"). Two lowerings share the
//! stages that do not depend on how output pixels are grouped: the thesis's channel-wise one
//! (the default) and the pixel-wise baseline it is measured against ([`Lowering`]).
//!
//! One module per stage, each with a printable intermediate form ([`emit`]):
//!
//! | stage | module | what it decides |
//! |---|---|---|
//! | Spatial | [`tiling`] | channel tiles, crossbar matrices, `applyFilters` per output tile |
//! | Mapping | [`mapping`] | cores and arrays of every crossbar; owners and contributors of each reduction |
//! | Pim | [`gmem`]; [`buffers`] or [`pixel::buffers`] | GMem layout (io manifest); output-pixel chunks or one pixel at a time, every core's LMem map |
//! | Asm | [`codegen`] or [`pixel::codegen`], [`export`] | the instructions; the crossbar export and `array_group_map` |
//!
//! The compiler reads only the case *types* of `pimdiff-oracle`, never its arithmetic. It is
//! complete for every case the case format allows; when a case cannot fit the architecture
//! it returns [`Unsupported`] with the numbers (needed vs. available), and it never panics.
//! The same case and options always give the byte-identical bundle.

pub mod buffers;
pub mod codegen;
pub mod emit;
mod emitter;
pub mod export;
pub mod gmem;
pub mod mapping;
pub mod pixel;
pub mod provenance;
pub mod tiling;
pub mod workloads;

use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::{ArchHints, Program};
use pimdiff_oracle::Case;

pub use emit::{emit, Stage};
pub use provenance::Provenance;

/// How convolutions are lowered once the weights are tiled and mapped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Lowering {
    /// Channel-wise (the thesis's): output pixels grouped into chunks, each crossbar's work
    /// over a chunk expressed at once ([`buffers`], [`codegen`]).
    #[default]
    Channel,
    /// Pixel-wise (the original RAPTOR scheme, the baseline): one output pixel at a time,
    /// its input patch gathered and multiplied by the same crossbars ([`pixel`]).
    Pixel,
}

impl Lowering {
    /// Both lowerings, channel-wise first.
    pub const ALL: [Lowering; 2] = [Lowering::Channel, Lowering::Pixel];

    /// `channel` or `pixel`, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Lowering::Channel => "channel",
            Lowering::Pixel => "pixel",
        }
    }
}

impl std::fmt::Display for Lowering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Lowering {
    type Err = String;
    fn from_str(s: &str) -> Result<Lowering, String> {
        Lowering::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| format!("unknown lowering {s:?} (expected channel or pixel)"))
    }
}

/// How partial sums of one output tile computed on several cores are brought together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// Over the NoC: each contributor `send`s its partial sum, the owner `recv`s and adds it,
    /// in one global order (deadlock-free by construction).
    #[default]
    Noc,
    /// Through global memory, as PIMCOMP-NN's programs do: each contributor `st`s its partial
    /// sums to a GMem slot of its own and `sync`s the owner; the owner `wait`s for every
    /// contributor, `ld`s and adds (see [`codegen`]). Channel-wise lowering only; the
    /// pixel-wise lowering and programs of more than 16 cores reduce over the NoC.
    Gmem,
    /// One of the two per case, as a fixed function of the case's specification (about half
    /// of the cases with a cross-core reduction each way): what hunts use, so that both
    /// strategies get tested while a case always compiles the same way. A hunt resolves it
    /// when a case is generated ([`Reduction::for_case`]) and keeps the result through
    /// minimization and in the saved finding.
    PerCase,
}

impl Reduction {
    /// Both strategies, NoC first.
    pub const ALL: [Reduction; 2] = [Reduction::Noc, Reduction::Gmem];

    /// `noc`, `gmem` or `per-case`, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Reduction::Noc => "noc",
            Reduction::Gmem => "gmem",
            Reduction::PerCase => "per-case",
        }
    }

    /// The strategy `case` is compiled with: this one, or for [`Reduction::PerCase`] the one
    /// a hash of the case's operation, input shape and architecture picks (splitmix64 over
    /// their numbers: stable across platforms and releases).
    pub fn for_case(self, case: &Case) -> Reduction {
        if self != Reduction::PerCase {
            return self;
        }
        let spec = &case.spec;
        let mut numbers: Vec<u64> = match &spec.op {
            pimdiff_oracle::Op::Conv2d(c) => [
                c.in_channels,
                c.out_channels,
                c.kernel[0],
                c.kernel[1],
                c.stride[0],
                c.stride[1],
                c.padding[0],
                c.padding[1],
                c.padding[2],
                c.padding[3],
                c.dilation[0],
                c.dilation[1],
                c.groups,
                c.bias as usize,
                c.relu as usize,
            ]
            .iter()
            .map(|&v| v as u64)
            .collect(),
            pimdiff_oracle::Op::Mvm(m) => [
                m.in_features,
                m.out_features,
                m.bias as usize,
                m.relu as usize,
            ]
            .iter()
            .map(|&v| v as u64 | 1 << 40)
            .collect(),
        };
        numbers.extend(spec.input_shape.iter().map(|&v| v as u64));
        let a = &spec.arch;
        numbers.extend(
            [
                a.cores,
                a.arrays_per_core,
                a.array_rows,
                a.array_cols,
                a.local_memory_bytes,
            ]
            .iter()
            .map(|&v| v as u64),
        );
        let h = numbers
            .into_iter()
            .fold(0x0070_6572_6361_7365_u64, |h, v| splitmix64(h ^ v));
        if h & 1 == 0 {
            Reduction::Noc
        } else {
            Reduction::Gmem
        }
    }
}

/// One step of splitmix64 (a well-mixed, fixed 64-bit hash step).
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl std::fmt::Display for Reduction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Reduction {
    type Err = String;
    fn from_str(s: &str) -> Result<Reduction, String> {
        [Reduction::Noc, Reduction::Gmem, Reduction::PerCase]
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| format!("unknown reduction {s:?} (expected noc, gmem or per-case)"))
    }
}

/// The lowering and the optimizations of the thesis, each of which can be switched off so
/// that optimized and unoptimized programs can be compared against each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CompileOptions {
    /// Skip kernel positions that fall in the padding for an output pixel (and crossbars
    /// whose kernel position is in the padding for every pixel). Off: the input window is
    /// zero-padded in local memory and the padding zeros are multiplied.
    pub skip_padding: bool,
    /// Leave out crossbars whose weights are all zero.
    pub weight_skipping: bool,
    /// Channel-wise (default) or pixel-wise.
    pub lowering: Lowering,
    /// Cross-core reduction over the NoC (default) or through global memory.
    pub reduction: Reduction,
}

impl Default for CompileOptions {
    /// Both optimizations on, channel-wise, as the thesis's compiler runs.
    fn default() -> Self {
        CompileOptions {
            skip_padding: true,
            weight_skipping: true,
            lowering: Lowering::Channel,
            reduction: Reduction::Noc,
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
    pub buffers: Bufferized,
}

/// The bufferization of one lowering.
pub(crate) enum Bufferized {
    Channel(buffers::Buffers),
    Pixel(pixel::buffers::Buffers),
}

impl Bufferized {
    fn into_manifest(self) -> pimdiff_isa::bundle::IoManifest {
        match self {
            Bufferized::Channel(b) => b.manifest,
            Bufferized::Pixel(b) => b.manifest,
        }
    }
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
    let buffers = match options.lowering {
        Lowering::Channel => Bufferized::Channel(buffers::bufferize(
            case,
            &spatial,
            &mapping,
            options.skip_padding,
        )?),
        Lowering::Pixel => Bufferized::Pixel(pixel::buffers::bufferize(case, &spatial, &mapping)?),
    };
    Ok(Compiled {
        spatial,
        mapping,
        buffers,
    })
}

/// The values of `local_memory_bytes` at which the bufferization of `options.lowering`
/// changes mode for this case (its other fields as they are): from each one up, a coarser
/// chunking or scheme fits; one byte below the smallest, the case is unsupported. Hunts put
/// local memory at and around these edges, where the gathering and chunked code paths run,
/// which ample memory never reaches. Unordered, possibly repeated.
pub fn local_memory_thresholds(
    case: &Case,
    options: &CompileOptions,
) -> Result<Vec<u64>, CompileError> {
    let arch = &case.spec.arch;
    if arch.cores == 0 {
        return Err(CompileError::Internal("arch.cores must be >= 1".into()));
    }
    let spatial = tiling::tile(case, options)?;
    let mapping = mapping::map(&spatial, arch.cores, arch.arrays_per_core)?;
    Ok(match options.lowering {
        Lowering::Channel => buffers::thresholds(
            &spatial.problem,
            &buffers::core_needs(&spatial, &mapping),
            options.skip_padding,
        ),
        Lowering::Pixel => pixel::buffers::thresholds(&spatial, &mapping),
    })
}

/// Compile a case into a bundle: program, crossbar export, io manifest.
pub fn compile(case: &Case, options: &CompileOptions) -> Result<Bundle, CompileError> {
    lower(case, options, false).map(|(bundle, _)| bundle)
}

/// [`compile`], also saying which stage and function emitted each instruction.
pub fn compile_with_provenance(
    case: &Case,
    options: &CompileOptions,
) -> Result<(Bundle, Provenance), CompileError> {
    lower(case, options, true)
}

/// Every stage; provenance is recorded only when `record` (else it is empty).
fn lower(
    case: &Case,
    options: &CompileOptions,
    record: bool,
) -> Result<(Bundle, Provenance), CompileError> {
    let c = plan(case, options)?;
    let clip = options.skip_padding;
    let emitters = match &c.buffers {
        Bufferized::Channel(b) => {
            let gmem = options.reduction.for_case(case) == Reduction::Gmem
                && c.mapping.cores <= codegen::GMEM_REDUCTION_MAX_CORES;
            codegen::generate(&c.spatial, &c.mapping, b, clip, gmem, record)
        }
        Bufferized::Pixel(b) => pixel::codegen::generate(&c.spatial, &c.mapping, b, clip, record),
    };
    let (cores, spans): (Vec<_>, Vec<_>) = emitters.into_iter().map(|e| e.finish()).unzip();
    let provenance = Provenance::new(spans.into_iter().zip(cores.iter().map(Vec::len)).collect());
    let xbars = export::export(case, &c.spatial, &c.mapping);
    let program = program(case, &c, cores);
    let bundle = Bundle {
        program,
        xbars,
        manifest: c.buffers.into_manifest(),
    };
    Ok((bundle, provenance))
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
