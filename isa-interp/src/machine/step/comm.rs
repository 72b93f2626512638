//! Communication and synchronisation: the synchronous `send` / `recv` pair (matched by
//! [`Noc`](super::super::noc::Noc)) and the event registers' `sync` / `wait`.

use super::super::core::{Exec, Step};
use super::super::fault::{FaultKind, Operand, WaitingFor};
use super::super::noc::Message;
use super::super::observe::{Bytes, Event, Sink, Space};
use super::super::stats::mesh_hops;
use crate::inst::Reg;

/// First attempt: posts a copy of `size` bytes at `rs1 + offset` to core `to` (progress, same
/// pc). Later attempts: done once `to` received it, blocked until then.
pub(super) fn send<O: Sink>(
    x: &mut Exec<'_, O>,
    rs1: Reg,
    to: u32,
    size: u32,
    offset: i32,
) -> Result<Step, FaultKind> {
    x.peer(to)?;
    if let Some(seq) = x.core.posted {
        if x.sh.noc.delivered(x.id, to) > seq {
            x.core.posted = None;
            return Ok(Step::Done);
        }
        return Ok(Step::Blocked(WaitingFor::Send {
            to,
            peer_finished: false,
        }));
    }
    let s = x.lm(Operand::Rs1, rs1, offset as i64, size as u64)?;
    if let Some(src) = x.local(&s) {
        x.emit(&Event::Read { src });
    }
    let msg = Message {
        src: s.start as u32,
        data: x.core.lmem[s].to_vec(),
        sender_pc: x.core.pc,
        sender_inst: *x.inst,
    };
    let ch = x.sh.noc.channel(x.id, to);
    debug_assert!(
        ch.pending.is_none(),
        "a sender blocks until its message is taken"
    );
    ch.pending = Some(msg);
    x.core.posted = Some(ch.posted);
    ch.posted += 1;
    Ok(Step::Posted)
}

/// Takes the next message from core `from` into `rd + offset`; blocked until there is one.
/// A message of another size is a fault (reported with both sides).
pub(super) fn recv<O: Sink>(
    x: &mut Exec<'_, O>,
    rd: Reg,
    from: u32,
    size: u32,
    offset: i32,
) -> Result<Step, FaultKind> {
    x.peer(from)?;
    let d = x.lm(Operand::Rd, rd, offset as i64, size as u64)?;
    let id = x.id;
    let receiver_pc = x.core.pc;
    let ch = x.sh.noc.channel(from, id);
    let Some(msg) = ch.pending.take() else {
        return Ok(Step::Blocked(WaitingFor::Recv {
            from,
            peer_finished: false,
        }));
    };
    if msg.data.len() != size as usize {
        let kind = FaultKind::SizeMismatch {
            sender: from,
            sender_pc: msg.sender_pc,
            sender_inst: msg.sender_inst,
            send_size: msg.data.len() as u32,
            receiver: id,
            receiver_pc,
            recv_size: size,
        };
        ch.pending = Some(msg);
        return Err(kind);
    }
    ch.delivered += 1;
    // Emitted for a message of no bytes too: it is still a rendezvous (a barrier), and the
    // race detector's happens-before edges come from this event.
    let dst = x.local(&d).unwrap_or(Bytes {
        space: Space::Lmem(id),
        start: d.start as u32,
        len: 0,
    });
    x.emit(&Event::Receive {
        from,
        from_pc: msg.sender_pc,
        src: Bytes {
            space: Space::Lmem(from),
            start: msg.src,
            len: size,
        },
        dst,
    });
    x.core.lmem[d].copy_from_slice(&msg.data);
    let hops = mesh_hops(from, id, x.sh.arch.mesh_cols);
    let noc = &mut x.sh.stats.noc;
    noc.messages += 1;
    noc.bytes += size as u64;
    noc.hop_bytes += size as u64 * hops as u64;
    let pair = noc.pairs.entry((from, id)).or_default();
    pair.messages += 1;
    pair.bytes += size as u64;
    pair.hops = hops;
    Ok(Step::Done)
}

/// Blocks until event register `event` equals `value`, then resets it to 0.
pub(super) fn wait<O: Sink>(
    x: &mut Exec<'_, O>,
    event: Reg,
    value: i32,
) -> Result<Step, FaultKind> {
    let current = x.sh.events[x.id as usize][event.index()];
    if current != value {
        return Ok(Step::Blocked(WaitingFor::Event {
            event: event.index() as u32,
            want: value,
            current,
        }));
    }
    x.emit(&Event::Wait {
        event: event.index() as u8,
        value,
    });
    x.sh.events[x.id as usize][event.index()] = 0;
    Ok(Step::Done)
}

/// Adds 1 (wrapping) to event register `event` of core `target`.
pub(super) fn sync<O: Sink>(
    x: &mut Exec<'_, O>,
    event: Reg,
    target: u32,
) -> Result<Step, FaultKind> {
    if target >= x.sh.arch.cores {
        return Err(FaultKind::BadCore {
            core: target,
            cores: x.sh.arch.cores,
        });
    }
    let old = x.sh.events[target as usize][event.index()];
    x.emit(&Event::Sync {
        target,
        event: event.index() as u8,
        old,
    });
    x.sh.events[target as usize][event.index()] = old.wrapping_add(1);
    Ok(Step::Done)
}
