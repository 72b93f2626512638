//! `load` and `store`: chunks between registers and tile memory (ima.py `ld`/`st` in decode
//! and execute, tile_modules.py `edram_controller.propagate`).
//!
//! Each chunk of `width` words waits on its *first* word only, as the simulator's memory
//! controller does (`self.valid[addr_list[idx]]`): a load while it is invalid, a store while
//! it is valid. The later words of the chunk are not waited on; where they are not in the
//! state the first word is, the simulator would read stale data or clobber unread data, and
//! the machine stops with a fault instead ([`FaultKind::ReadInvalidWord`],
//! [`FaultKind::ReadNeverWritten`], [`FaultKind::StoreOverValidWord`]).

use super::{chunk_step, CoreCx, Step};
use crate::arch::{DATA_MEM_START, STORE_BUS_STRIDE};
use crate::machine::fault::{FaultKind, WaitingFor};
use crate::machine::memory::TileMemory;
use crate::machine::registers::Registers;

/// The tile-memory address held in data-memory register `reg` (the simulator reads it as an
/// `addr_width`-bit integer and asserts it is not negative).
fn address(cx: &CoreCx<'_>, operand: &'static str, reg: u32) -> Result<u32, FaultKind> {
    Registers::check(operand, reg as u64, 1)?;
    if reg < DATA_MEM_START {
        return Err(FaultKind::NotDataMemory { operand, reg });
    }
    let value = cx.state.regs.operand(reg)?;
    if value < 0 {
        return Err(FaultKind::BadAddress { reg, value });
    }
    u32::try_from(value).map_err(|_| FaultKind::TileMemoryRange {
        start: value as u64,
        len: 0,
    })
}

/// One chunk of `load(d1, r1, load_width, vec)`: tile memory at `[r1] + chunk · width` to
/// registers `d1 + chunk · width ..`.
pub(super) fn load(
    cx: &mut CoreCx<'_>,
    d1: u32,
    r1: u32,
    width: u32,
    vec: u32,
) -> Result<Step, FaultKind> {
    let chunk = cx.state.chunk;
    if chunk == 0 {
        cx.state.base = address(cx, "r1", r1)?;
    }
    let offset = chunk as u64 * width as u64;
    let start = cx.state.base as u64 + offset;
    TileMemory::check(start, width as u64)?;
    let addr = start as u32;
    let dst = Registers::check("d1", d1 as u64 + offset, width)?;
    let first = cx.mem.get(addr);
    if !first.valid {
        return Ok(Step::Blocked(WaitingFor::LoadWord { addr }));
    }
    for a in addr..addr + width {
        let w = cx.mem.get(a);
        if !w.valid && w.was_written() {
            return Err(FaultKind::ReadInvalidWord { addr: a });
        }
        if !w.valid {
            return Err(FaultKind::ReadNeverWritten { addr: a });
        }
        if w.counter <= 0 {
            return Err(FaultKind::CounterUnderflow {
                addr: a,
                counter: w.counter,
            });
        }
    }
    let pc = cx.at.pc;
    for i in 0..width {
        let w = cx.mem.consume(addr + i)?;
        cx.state.regs.set(dst + i, w.value, pc);
    }
    cx.stats.words_loaded += width as u64;
    Ok(chunk_step(chunk, vec))
}

/// One chunk of `store(d1, r1, counter, store_width, vec)`: registers
/// `r1 + chunk · stride ..` to tile memory at `[d1] + chunk · width`, each word valid with
/// `counter` reads left. The register stride is the bus width (16) with
/// `Quirks::store_bus_stride`, as in the simulator (ima.py `st_data_addr`), else `width`.
pub(super) fn store(
    cx: &mut CoreCx<'_>,
    d1: u32,
    r1: u32,
    counter: u32,
    width: u32,
    vec: u32,
) -> Result<Step, FaultKind> {
    let chunk = cx.state.chunk;
    if chunk == 0 {
        cx.state.base = address(cx, "d1", d1)?;
    }
    let start = cx.state.base as u64 + chunk as u64 * width as u64;
    TileMemory::check(start, width as u64)?;
    let addr = start as u32;
    let stride = if cx.options.quirks.store_bus_stride {
        STORE_BUS_STRIDE
    } else {
        width
    };
    let src = Registers::check("r1", r1 as u64 + chunk as u64 * stride as u64, width)?;
    if cx.options.quirks.store_bus_stride && src >= DATA_MEM_START {
        // The simulator reads a whole bus of data-memory registers, whatever the width
        // (ima.py, `for num in range (cfg.edram_buswidth / cfg.data_width)`).
        Registers::check("r1", src as u64, STORE_BUS_STRIDE)?;
    }
    let first = cx.mem.get(addr);
    if first.valid {
        return Ok(Step::Blocked(WaitingFor::StoreWord {
            addr,
            counter: first.counter,
        }));
    }
    if let Some(a) = cx.mem.first_valid(addr, width) {
        return Err(FaultKind::StoreOverValidWord {
            addr: a,
            counter: cx.mem.get(a).counter,
        });
    }
    let writer = cx.writer();
    for i in 0..width {
        let value = cx.state.regs.get(src + i);
        if value.is_none() {
            cx.stats.undefined_words_stored += 1;
        }
        cx.mem
            .write(addr + i, value, counter as i64, writer, (writer, addr + i));
    }
    cx.stats.words_stored += width as u64;
    Ok(chunk_step(chunk, vec))
}
