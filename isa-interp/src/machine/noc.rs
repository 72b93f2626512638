//! The network: synchronous `send` / `recv` matched FIFO per ordered core pair.
//!
//! A `send` posts its message (a copy of the bytes, taken when it executes: the sender cannot
//! change them while it waits) and blocks; the k-th `recv` on B naming A takes the k-th
//! message A posted to B. Because the sender blocks until its message is taken, a pair never
//! holds more than one message, and the sender learns completion from the pair's delivery count.

use std::collections::HashMap;

use crate::inst::Inst;

/// A posted, not yet received message.
pub(crate) struct Message {
    /// Where the bytes start in the sender's local memory.
    pub src: u32,
    pub data: Vec<u8>,
    pub sender_pc: u32,
    pub sender_inst: Inst,
}

/// One ordered pair's channel.
#[derive(Default)]
pub(crate) struct Channel {
    pub pending: Option<Message>,
    /// Messages posted so far (the next message's sequence number).
    pub posted: u64,
    /// Messages received so far.
    pub delivered: u64,
}

/// All channels, created on first use.
#[derive(Default)]
pub(crate) struct Noc {
    channels: HashMap<(u32, u32), Channel>,
}

impl Noc {
    pub fn channel(&mut self, from: u32, to: u32) -> &mut Channel {
        self.channels.entry((from, to)).or_default()
    }

    pub fn delivered(&self, from: u32, to: u32) -> u64 {
        self.channels.get(&(from, to)).map_or(0, |c| c.delivered)
    }
}
