//! A whole multi-core program, as loaded from any of the formats, and the architecture
//! it runs on.

use crate::inst::Inst;

/// A loaded program: one instruction stream per core, plus what its config said about
/// array groups and the architecture.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Program {
    /// `cores[i]` is core `i`'s instruction stream; its length is the program's `core_cnt`.
    pub cores: Vec<Vec<Inst>>,
    /// How `mvmul`'s `group` field is read.
    pub groups: GroupSpec,
    /// Architecture parameters the program file carried, if any (ours carry all of them,
    /// PIMCOMP-NN's carry the crossbar size and array count).
    pub arch: ArchHints,
}

/// How the program's config describes array groups.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum GroupSpec {
    /// No `array_group_map` and no PIMCOMP-NN crossbar fields: groups come only from a
    /// crossbar export.
    #[default]
    ExportOnly,
    /// pimsim-nn's `array_group_map`: `map[core][g]` = number of arrays in group `g`.
    /// `mvmul`'s `group` is an index into that core's list.
    ArrayGroupMap(Vec<Vec<u32>>),
    /// PIMCOMP-NN's form (config has `xbar_size`, no map): `mvmul`'s `group` is the
    /// *number of arrays* used, and the group is `array_rows × group·array_cols`.
    ArrayCount,
}

/// Architecture parameters a program file may state. `None` means "not stated":
/// the CLI flags or defaults fill them in (see [`Arch::resolve`]).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ArchHints {
    pub arrays_per_core: Option<u32>,
    pub array_rows: Option<u32>,
    pub array_cols: Option<u32>,
    pub local_memory_bytes: Option<u32>,
    /// `[rows, cols]` of the NoC mesh.
    pub mesh: Option<[u32; 2]>,
    /// Fraction bits for `vtanh` / `vsigm`.
    pub frac_bits: Option<u32>,
    /// PIMCOMP-NN's `cell_precision` and `adc_count`, kept so a program writes back as read.
    pub cell_precision: Option<u32>,
    pub adc_count: Option<u32>,
}

/// The architecture a program runs on, fully resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arch {
    pub cores: u32,
    pub arrays_per_core: u32,
    pub array_rows: u32,
    pub array_cols: u32,
    pub local_memory_bytes: u32,
    pub mesh_rows: u32,
    pub mesh_cols: u32,
    pub frac_bits: u32,
}

impl Arch {
    /// Defaults large enough for every PIMCOMP-NN program we test against:
    /// 128×128 crossbars, 64 arrays per core (their `xbar_array_count`).
    pub const DEFAULT_ARRAYS_PER_CORE: u32 = 64;
    pub const DEFAULT_ARRAY_ROWS: u32 = 128;
    pub const DEFAULT_ARRAY_COLS: u32 = 128;
    /// 1 MiB of scratchpad per core. The largest local memory address any of the ten
    /// PIMCOMP-NN programs touches is 179,600 bytes (squeezenet-element; the others stay under
    /// 76 KiB), so 1 MiB leaves more than 5× headroom while costing nothing until touched
    /// (`vec![0; n]` maps zero pages lazily).
    pub const DEFAULT_LOCAL_MEMORY_BYTES: u32 = 1 << 20;
    pub const DEFAULT_FRAC_BITS: u32 = 0;
}

impl Arch {
    /// The fully resolved architecture for a program of `cores` cores: each parameter comes
    /// from `overrides` (the CLI flags, which win because the user asked for them explicitly),
    /// else from what the program file stated (`hints`), else from the documented default.
    /// The mesh defaults to the most square grid that holds every core (`cols = ceil(sqrt(cores))`).
    ///
    /// The result is not validated here (a zero-sized array, a mesh too small for the cores);
    /// [`crate::machine::Machine::new`] rejects those with a typed `SetupError`.
    pub fn resolve(hints: &ArchHints, cores: u32, overrides: &ArchHints) -> Arch {
        let pick = |o: Option<u32>, h: Option<u32>, d: u32| o.or(h).unwrap_or(d);
        let [mesh_rows, mesh_cols] = overrides
            .mesh
            .or(hints.mesh)
            .unwrap_or_else(|| Arch::default_mesh(cores));
        Arch {
            cores,
            arrays_per_core: pick(
                overrides.arrays_per_core,
                hints.arrays_per_core,
                Self::DEFAULT_ARRAYS_PER_CORE,
            ),
            array_rows: pick(
                overrides.array_rows,
                hints.array_rows,
                Self::DEFAULT_ARRAY_ROWS,
            ),
            array_cols: pick(
                overrides.array_cols,
                hints.array_cols,
                Self::DEFAULT_ARRAY_COLS,
            ),
            local_memory_bytes: pick(
                overrides.local_memory_bytes,
                hints.local_memory_bytes,
                Self::DEFAULT_LOCAL_MEMORY_BYTES,
            ),
            mesh_rows,
            mesh_cols,
            frac_bits: pick(
                overrides.frac_bits,
                hints.frac_bits,
                Self::DEFAULT_FRAC_BITS,
            ),
        }
    }

    /// The most square `[rows, cols]` mesh holding `cores` cores (at least 1 × 1).
    pub fn default_mesh(cores: u32) -> [u32; 2] {
        let cores = cores.max(1);
        let mut cols = (cores as f64).sqrt().ceil() as u32;
        while cols.saturating_mul(cols) < cores {
            cols += 1;
        }
        let rows = cores.div_ceil(cols);
        [rows, cols]
    }

    /// The default architecture for `cores` cores (no hints, no overrides).
    pub fn with_defaults(cores: u32) -> Arch {
        Arch::resolve(&ArchHints::default(), cores, &ArchHints::default())
    }
}
