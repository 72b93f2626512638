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
    /// Defaults large enough for every PIMCOMP-NN program in `shared/external/pimcomp`:
    /// 128×128 crossbars, 64 arrays per core (their `xbar_array_count`).
    pub const DEFAULT_ARRAYS_PER_CORE: u32 = 64;
    pub const DEFAULT_ARRAY_ROWS: u32 = 128;
    pub const DEFAULT_ARRAY_COLS: u32 = 128;
    /// 1 MiB of scratchpad per core.
    pub const DEFAULT_LOCAL_MEMORY_BYTES: u32 = 1 << 20;
    pub const DEFAULT_FRAC_BITS: u32 = 0;
}
