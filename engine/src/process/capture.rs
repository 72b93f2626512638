//! Bounded capture of one output stream: the last bytes a program wrote, and how many it wrote.
//!
//! The tail is what is kept because that is where a compiler's verdict is: its final error
//! line, a sanitizer report, the crash frames an LD_PRELOAD shim prints as the program dies.

use serde::{Deserialize, Serialize};

/// What a program wrote to one stream, at most a limit of it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Captured {
    /// The last bytes written (at most the limit; all of them when not truncated).
    pub bytes: Vec<u8>,
    /// How many bytes the program wrote in all.
    pub total: u64,
}

impl Captured {
    /// Whether the program wrote more than was kept (the start is missing).
    pub fn truncated(&self) -> bool {
        self.total > self.bytes.len() as u64
    }

    /// The kept bytes as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// A capture in progress: appends chunks, keeping at most `2 * limit` bytes between trims so
/// that trimming costs amortized O(1) per byte.
#[derive(Debug)]
pub(super) struct Tail {
    kept: Vec<u8>,
    total: u64,
    limit: usize,
}

impl Tail {
    pub(super) fn new(limit: usize) -> Tail {
        Tail {
            kept: Vec::new(),
            total: 0,
            limit,
        }
    }

    pub(super) fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        if chunk.len() >= self.limit {
            self.kept.clear();
            self.kept
                .extend_from_slice(&chunk[chunk.len() - self.limit..]);
            return;
        }
        self.kept.extend_from_slice(chunk);
        if self.kept.len() > 2 * self.limit {
            self.kept.drain(..self.kept.len() - self.limit);
        }
    }

    pub(super) fn finish(mut self) -> Captured {
        if self.kept.len() > self.limit {
            self.kept.drain(..self.kept.len() - self.limit);
        }
        Captured {
            bytes: self.kept,
            total: self.total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the chunking, the capture is the last `limit` bytes of the concatenation,
        /// and the total is its length.
        #[test]
        fn keeps_the_last_limit_bytes(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..20),
            limit in 0usize..700,
        ) {
            let mut tail = Tail::new(limit);
            for c in &chunks {
                tail.push(c);
            }
            let all: Vec<u8> = chunks.concat();
            let captured = tail.finish();
            let start = all.len().saturating_sub(limit);
            prop_assert_eq!(&captured.bytes, &all[start..].to_vec());
            prop_assert_eq!(captured.total, all.len() as u64);
            prop_assert_eq!(captured.truncated(), all.len() > limit);
        }
    }
}
