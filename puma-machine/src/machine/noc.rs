//! The network between tiles (node.py, tile_modules.py `receive_buffer`): a send puts a packet
//! at the back of its tile's send queue and completes; each round the packet at the head of
//! every queue moves into its destination's receive buffer, whose one entry per `vtile_id`
//! holds one packet; a receive takes the packet out of its entry.
//!
//! So packets between one pair of tiles with one tag arrive in order, a queue's head blocks
//! the packets behind it while its buffer entry is occupied (head-of-line blocking, as in the
//! simulator), and a tile halts only once its queue is empty. The simulator's NoC latency
//! (a packet waits a few cycles before it may move) changes no value and is left out.

use std::collections::{BTreeMap, VecDeque};

use super::fault::{StuckPacket, Writer};

/// One word of a packet: the value and where it came from (the origin and the word it wrote).
pub(crate) type PacketWord = (Option<i64>, Option<(Writer, u32)>);

pub(crate) struct Packet {
    pub to: u32,
    pub vtile: u32,
    pub words: Vec<PacketWord>,
}

pub(crate) struct Noc {
    queues: Vec<VecDeque<Packet>>,
    /// `(destination tile, vtile) → packet`.
    buffers: BTreeMap<(u32, u32), Packet>,
}

impl Noc {
    pub fn new(tiles: u32) -> Noc {
        Noc {
            queues: (0..tiles).map(|_| VecDeque::new()).collect(),
            buffers: BTreeMap::new(),
        }
    }

    pub fn send(&mut self, from: u32, packet: Packet) {
        self.queues[from as usize].push_back(packet);
    }

    pub fn queued(&self, tile: u32) -> usize {
        self.queues[tile as usize].len()
    }

    /// Moves the head of every queue, in tile order, into its free buffer entry. Says
    /// whether any moved.
    pub fn deliver(&mut self) -> bool {
        let mut moved = false;
        for q in &mut self.queues {
            let Some(head) = q.front() else {
                continue;
            };
            let key = (head.to, head.vtile);
            if let std::collections::btree_map::Entry::Vacant(slot) = self.buffers.entry(key) {
                if let Some(p) = q.pop_front() {
                    slot.insert(p);
                    moved = true;
                }
            }
        }
        moved
    }

    /// Takes the packet tagged `vtile` out of `tile`'s receive buffer.
    pub fn take(&mut self, tile: u32, vtile: u32) -> Option<Packet> {
        self.buffers.remove(&(tile, vtile))
    }

    /// Whether a packet tagged `vtile` for `tile` is in its buffer or on its way.
    pub fn has_packet_for(&self, tile: u32, vtile: u32) -> bool {
        self.buffers.contains_key(&(tile, vtile))
            || self
                .queues
                .iter()
                .flatten()
                .any(|p| p.to == tile && p.vtile == vtile)
    }

    /// Packets still in queues or buffers.
    pub fn packets_left(&self) -> u64 {
        (self.queues.iter().map(VecDeque::len).sum::<usize>() + self.buffers.len()) as u64
    }

    /// The queue heads that cannot move.
    pub fn stuck(&self) -> Vec<StuckPacket> {
        let mut out = Vec::new();
        for (from, q) in self.queues.iter().enumerate() {
            if let Some(p) = q.front() {
                if self.buffers.contains_key(&(p.to, p.vtile)) {
                    out.push(StuckPacket {
                        from: from as u32,
                        to: p.to,
                        vtile: p.vtile,
                        words: p.words.len() as u32,
                    });
                }
            }
        }
        out
    }
}
