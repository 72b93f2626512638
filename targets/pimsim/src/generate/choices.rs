//! Where the generator's choices come from: a seeded stream (hunts), fuzzer bytes (cargo-fuzz),
//! or proptest's bytes (through the same decoder). One trait, so that one function defines a
//! valid case for every caller.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A source of choices. `int(lo, hi)` returns a value in `lo..=hi`; the lowest value must be
/// what an exhausted or all-zero source gives, so that shrinking a source shrinks the case.
pub trait Choices {
    /// A value in `lo..=hi` (`lo` when `hi <= lo`).
    fn int(&mut self, lo: u64, hi: u64) -> u64;

    /// `true` with probability about `p` (`false` for an exhausted source).
    fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        const SCALE: u64 = 1 << 16;
        let threshold = (p.min(1.0) * SCALE as f64) as u64;
        // Compare against the top of the range so that the lowest value means `false`.
        self.int(0, SCALE - 1) >= SCALE - threshold
    }

    /// A value in `lo..=hi` as `usize`.
    fn size(&mut self, lo: usize, hi: usize) -> usize {
        self.int(lo as u64, hi.max(lo) as u64) as usize
    }

    /// One of `options`, the first for an exhausted source. `options` must not be empty.
    fn pick<T: Copy>(&mut self, options: &[T]) -> T {
        options[self.size(0, options.len() - 1)]
    }
}

/// Choices from a seeded ChaCha8 stream (hunts).
pub struct SeedChoices(ChaCha8Rng);

impl SeedChoices {
    pub fn new(seed: u64) -> SeedChoices {
        SeedChoices(ChaCha8Rng::seed_from_u64(seed))
    }

    /// Choices from a stream already seeded (another stream of a seed, for instance).
    pub fn from_rng(rng: ChaCha8Rng) -> SeedChoices {
        SeedChoices(rng)
    }
}

impl Choices for SeedChoices {
    fn int(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        self.0.random_range(lo..=hi)
    }
}

/// Choices from fuzzer bytes. An exhausted buffer gives the lowest value of every range, so
/// every byte string decodes to a valid case.
pub struct UnstructuredChoices<'a, 'b>(pub &'a mut arbitrary::Unstructured<'b>);

impl Choices for UnstructuredChoices<'_, '_> {
    fn int(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        self.0.int_in_range(lo..=hi).unwrap_or(lo)
    }
}
