//! The tile controller's transfers (tile.py `tile_run`): `send` reads tile memory into
//! packets, `receive` writes packets into tile memory. Both go chunk by chunk (`vec` packets
//! of `width` words).

use super::{chunk_step, Step, TileCx};
use crate::arch::RECEIVE_BUFFER_DEPTH;
use crate::machine::fault::{FaultKind, WaitingFor, Writer};
use crate::machine::memory::TileMemory;
use crate::machine::noc::Packet;

fn check_vtile(vtile: u32) -> Result<(), FaultKind> {
    if vtile >= RECEIVE_BUFFER_DEPTH {
        return Err(FaultKind::VtileRange {
            vtile,
            depth: RECEIVE_BUFFER_DEPTH,
        });
    }
    Ok(())
}

/// One chunk of `send(mem_addr, vtile_id, send_width, target_addr, vec)`: waits until every
/// word of the chunk is valid, reads them (each read counts down), queues the packet.
pub(super) fn send(
    cx: &mut TileCx<'_>,
    mem_addr: u32,
    vtile: u32,
    width: u32,
    target: u32,
    vec: u32,
) -> Result<Step, FaultKind> {
    if target >= cx.tiles {
        return Err(FaultKind::NoSuchTile {
            target,
            tiles: cx.tiles,
        });
    }
    check_vtile(vtile)?;
    let chunk = cx.state.chunk;
    let start = mem_addr as u64 + chunk as u64 * width as u64;
    TileMemory::check(start, width as u64)?;
    let addr = start as u32;
    if let Some(a) = cx.mem.first_invalid(addr, width) {
        return Ok(Step::Blocked(WaitingFor::SendWord { addr: a }));
    }
    for a in addr..addr + width {
        let counter = cx.mem.get(a).counter;
        if counter <= 0 {
            return Err(FaultKind::CounterUnderflow { addr: a, counter });
        }
    }
    let mut words = Vec::with_capacity(width as usize);
    for a in addr..addr + width {
        let w = cx.mem.consume(a)?;
        words.push((w.value, w.origin.zip(w.origin_word)));
    }
    cx.noc.send(
        cx.at.tile,
        Packet {
            to: target,
            vtile,
            words,
        },
    );
    cx.stats.packets_sent += 1;
    Ok(chunk_step(chunk, vec))
}

/// One chunk of `receive(mem_addr, vtile_id, receive_width, counter, vec)`: takes the packet
/// tagged `vtile_id` out of the buffer as soon as it is there (freeing the entry), waits
/// until every destination word is invalid, writes them valid with `counter` reads left.
pub(super) fn receive(
    cx: &mut TileCx<'_>,
    mem_addr: u32,
    vtile: u32,
    width: u32,
    counter: u32,
    vec: u32,
) -> Result<Step, FaultKind> {
    check_vtile(vtile)?;
    let chunk = cx.state.chunk;
    let start = mem_addr as u64 + chunk as u64 * width as u64;
    TileMemory::check(start, width as u64)?;
    let addr = start as u32;
    let mut took = false;
    if cx.state.latched.is_none() {
        match cx.noc.take(cx.at.tile, vtile) {
            Some(p) => {
                cx.state.latched = Some(p);
                took = true;
            }
            None => return Ok(Step::Blocked(WaitingFor::Packet { vtile })),
        }
    }
    if let Some(a) = cx.mem.first_valid(addr, width) {
        if took {
            return Ok(Step::Progress);
        }
        let counter = cx.mem.get(a).counter;
        return Ok(Step::Blocked(WaitingFor::ReceiveWord { addr: a, counter }));
    }
    let sent = cx
        .state
        .latched
        .as_ref()
        .map_or(0, |p| p.words.len() as u32);
    if sent != width {
        return Err(FaultKind::WidthMismatch {
            receive_width: width,
            sent,
        });
    }
    let writer = Writer::Inst(cx.at);
    if let Some(p) = cx.state.latched.take() {
        for (i, (value, origin)) in p.words.into_iter().enumerate() {
            let origin = origin.unwrap_or((writer, addr + i as u32));
            cx.mem
                .write(addr + i as u32, value, counter as i64, writer, origin);
        }
    }
    cx.stats.packets_received += 1;
    Ok(chunk_step(chunk, vec))
}
