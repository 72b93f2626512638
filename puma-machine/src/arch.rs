//! The PUMA architecture as the compiler and the simulator configure it: the core's register
//! map, the memory sizes, the widths of the datapaths. Every constant names the line it comes
//! from (`include/config.py` of the simulator, `src/common.h` of the compiler); both tools
//! agree on every value here, and the interpreter checks programs against them.

/// Rows and columns of one MVMU (a logical crossbar): `xbar_size` (config.py),
/// `MVMU_DIM` (common.h).
pub const MVMU_DIM: u32 = 128;

/// MVMUs per core: `num_matrix` (config.py), `N_CONSTANT_MVMUS_PER_CORE` (common.h).
pub const MVMUS_PER_CORE: u32 = 2;

/// Cores per tile: `num_ima` (config.py), `N_CORES_PER_TILE` (common.h).
pub const CORES_PER_TILE: u32 = 8;

/// First crossbar input register; MVMU `m` reads `m·128 .. m·128 + 128`
/// (ima.py `getXbarAddr`, common.h `INPUT_REGISTERS_START_ADDRESS`).
pub const XBAR_IN_START: u32 = 0;

/// First crossbar output register; MVMU `m` writes `256 + m·128 ..`
/// (ima.py `getXbarAddr`, common.h `OUTPUT_REGISTERS_START_ADDRESS`).
pub const XBAR_OUT_START: u32 = MVMU_DIM * MVMUS_PER_CORE;

/// First data-memory register: `datamem_off = xbar_size · num_matrix · 2` (config.py),
/// `REGISTER_FILE_START_ADDRESS` (common.h).
pub const DATA_MEM_START: u32 = 2 * MVMU_DIM * MVMUS_PER_CORE;

/// Data-memory registers: `dataMem_size` (config.py). The compiler allocates only the first
/// 512 (`REGISTER_FILE_SIZE`, common.h); the simulator accepts all of them.
pub const DATA_MEM_WORDS: u32 = 2048;

/// One past the last register address of a core.
pub const REGISTERS: u32 = DATA_MEM_START + DATA_MEM_WORDS;

/// Words of a tile's shared memory: `edram_size · 1024 · 8 / data_width` = 64 KiB of 16-bit
/// words (config.py, tile_modules.py `edram_controller`).
pub const TILE_MEMORY_WORDS: u32 = 64 * 1024 * 8 / 16;

/// Widest load or store, in words: `edram_buswidth / data_width` (config.py, asserted in
/// instrn_proto.py `i_load`/`i_store`), `MAX_LOAD_STORE_WIDTH` (common.h).
pub const MAX_LOAD_STORE_WIDTH: u32 = 16;

/// Widest send, in words: `receive_buffer_width` (config.py, asserted in tile.py `send`),
/// `MAX_SEND_RECV_WIDTH` (common.h).
pub const MAX_SEND_WIDTH: u32 = 16;

/// The register stride between the chunks of a vector store in the simulator: the bus width
/// in words, whatever the store width (ima.py, `st_data_addr`).
pub const STORE_BUS_STRIDE: u32 = 16;

/// Receive-buffer entries per tile, one per sending virtual tile: `receive_buffer_depth`
/// (config.py); a `vtile_id` indexes them.
pub const RECEIVE_BUFFER_DEPTH: u32 = 150;

/// Instruction-memory entries of a core (`instrnMem_size`, config.py): the simulator refuses
/// a longer core program (ima_modules.py `instrn_memory.load`).
pub const CORE_INSTRUCTION_MEMORY: u32 = 512;

/// Instruction-memory entries of a tile (`tile_instrnMem_size`, config.py).
pub const TILE_INSTRUCTION_MEMORY: u32 = 2048;

/// Bits of a data word in the simulator (`num_bits`, config.py): results outside this width
/// wrap there and are counted here (see `Stats::beyond_word`).
pub const WORD_BITS: u32 = 16;

/// Fractional bits of the simulator's fixed-point words (`frac_bits = num_bits - int_bits`,
/// config.py): the default of `MachineOptions::frac_bits`.
pub const FRAC_BITS: u32 = 12;

/// The counter the simulator's node gives every input word (`dpe.py` copies it from
/// `input.npy`, which the simulator's input generator fills with 100 and valid bits of 1).
pub const INPUT_COUNTER: u32 = 100;
