//! A tile's shared memory (the simulator's eDRAM with its controller, tile_modules.py
//! `edram_controller`): 32768 words, each with a valid bit and a counter of reads left.
//!
//! The rules (docs/puma-isa.md, "Tile memory"):
//! - a store or receive writes a word, sets it valid and sets its counter to the
//!   instruction's `counter`;
//! - a load or send reads a valid word and decrements its counter; at 0 (or below) the word
//!   becomes invalid;
//! - a load waits while the first word of its chunk is invalid, a send while any word is; a
//!   store waits while the first word of its chunk is valid, a receive while any word is.
//!
//! Each word also keeps who last wrote it and where its value came from (the store or host
//! write that first put it into a tile memory, carried along by sends), so that a wrong
//! output leads back to the instruction that computed it. The vector grows to the highest
//! word written; words beyond it are unwritten.

use super::fault::{FaultKind, Writer};
use crate::arch::TILE_MEMORY_WORDS;

/// One word of tile memory as the caller reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word {
    /// The raw value; `None` when never written, or written from registers that held none.
    pub value: Option<i64>,
    pub valid: bool,
    /// Reads left (meaningful while valid).
    pub counter: i64,
    /// The instruction (or the host) that last wrote the word.
    pub writer: Option<Writer>,
    /// The store (or host write) that produced the value, through any sends and receives.
    pub origin: Option<Writer>,
    /// The word of its own tile's memory that `origin` wrote (the same as this word's address
    /// unless the value travelled): with the store's instruction it says which of the
    /// store's registers held the value.
    pub origin_word: Option<u32>,
}

impl Word {
    pub const UNWRITTEN: Word = Word {
        value: None,
        valid: false,
        counter: 0,
        writer: None,
        origin: None,
        origin_word: None,
    };

    /// Whether anything ever wrote the word.
    pub fn was_written(&self) -> bool {
        self.writer.is_some()
    }
}

#[derive(Default)]
pub(crate) struct TileMemory {
    words: Vec<Word>,
}

impl TileMemory {
    /// `Ok` when words `start .. start + len` are in the memory.
    pub fn check(start: u64, len: u64) -> Result<(), FaultKind> {
        if start + len > TILE_MEMORY_WORDS as u64 {
            return Err(FaultKind::TileMemoryRange { start, len });
        }
        Ok(())
    }

    pub fn get(&self, addr: u32) -> Word {
        self.words
            .get(addr as usize)
            .copied()
            .unwrap_or(Word::UNWRITTEN)
    }

    /// Writes a word (in the memory, checked by [`TileMemory::check`]) and makes it valid;
    /// `origin` is the store (or host write) that produced the value and the word it wrote.
    pub fn write(
        &mut self,
        addr: u32,
        value: Option<i64>,
        counter: i64,
        writer: Writer,
        origin: (Writer, u32),
    ) {
        let i = addr as usize;
        if i >= self.words.len() {
            self.words.resize(i + 1, Word::UNWRITTEN);
        }
        self.words[i] = Word {
            value,
            valid: true,
            counter,
            writer: Some(writer),
            origin: Some(origin.0),
            origin_word: Some(origin.1),
        };
    }

    /// Reads a valid word: its counter drops by one and the word becomes invalid at 0. A word
    /// with no reads left is a [`FaultKind::CounterUnderflow`].
    pub fn consume(&mut self, addr: u32) -> Result<Word, FaultKind> {
        let w = self.get(addr);
        if w.counter <= 0 {
            return Err(FaultKind::CounterUnderflow {
                addr,
                counter: w.counter,
            });
        }
        let word = &mut self.words[addr as usize];
        word.counter -= 1;
        if word.counter <= 0 {
            word.valid = false;
        }
        Ok(w)
    }

    /// The first word of `start .. start + len` that is invalid.
    pub fn first_invalid(&self, start: u32, len: u32) -> Option<u32> {
        (start..start + len).find(|&a| !self.get(a).valid)
    }

    /// The first word of `start .. start + len` that is valid.
    pub fn first_valid(&self, start: u32, len: u32) -> Option<u32> {
        (start..start + len).find(|&a| self.get(a).valid)
    }
}
