//! What one run of a case reached in the compiler under test, as a set of edge ids: the
//! feedback of coverage-guided hunts (`engine::guided`).
//!
//! An id is whatever the feedback source numbers: a branch of an instrumented compiler's
//! coverage map, an LLVM profile counter with its hit-count bucket, or a hashed feature of a
//! stand-in source ([`Edges::from_features`]). The engine only asks one question of them:
//! does a run reach an id that no earlier run reached? So ids must be stable within a hunt,
//! and nothing else.

use std::hash::Hash;

/// The sorted, deduplicated edge ids one run (or several, merged) reached. The one edge-set
/// type: guided hunts compare runs by it, and a coverage build's per-case edge map is read
/// into it (`coverage::EdgeMap::read`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Edges(Vec<u32>);

impl Edges {
    /// The edges of `ids`, in any order, repeats allowed.
    pub fn new(mut ids: Vec<u32>) -> Edges {
        ids.sort_unstable();
        ids.dedup();
        Edges(ids)
    }

    /// Edges named by features: each feature's stable 32-bit hash (FNV-1a over its
    /// `Debug` text, the same on every platform and build), for feedback sources that
    /// describe what a run reached in words rather than numbers.
    pub fn from_features<F: Hash + std::fmt::Debug>(
        features: impl IntoIterator<Item = F>,
    ) -> Edges {
        Edges::new(
            features
                .into_iter()
                .map(|f| fnv1a(format!("{f:?}").as_bytes()))
                .collect(),
        )
    }

    /// The ids, ascending.
    pub fn ids(&self) -> &[u32] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds every edge of `other`; returns how many were new.
    pub fn union_with(&mut self, other: &Edges) -> usize {
        let before = self.0.len();
        let mut merged = Vec::with_capacity(before + other.0.len());
        let (mut a, mut b) = (self.0.iter().peekable(), other.0.iter().peekable());
        while let (Some(&&x), Some(&&y)) = (a.peek(), b.peek()) {
            if x <= y {
                merged.push(x);
                a.next();
                if x == y {
                    b.next();
                }
            } else {
                merged.push(y);
                b.next();
            }
        }
        merged.extend(a);
        merged.extend(b);
        self.0 = merged;
        self.0.len() - before
    }

    /// How many edges of `self` are not in `seen` (what a guided hunt rewards).
    pub fn new_against(&self, seen: &Edges) -> usize {
        self.0
            .iter()
            .filter(|id| seen.0.binary_search(id).is_err())
            .count()
    }
}

/// A hit count in libFuzzer's buckets (1, 2, 3, 4–7, 8–15, 16–31, 32–127, 128+) as 1..=8, 0
/// for none: a counter whose count moves to another bucket is new feedback, as a branch
/// taken for the first time is (see `targets::tensor::counters`).
pub fn hit_bucket(count: u64) -> u32 {
    match count {
        0 => 0,
        1 => 1,
        2 => 2,
        3 => 3,
        4..=7 => 4,
        8..=15 => 5,
        16..=31 => 6,
        32..=127 => 7,
        _ => 8,
    }
}

/// 32-bit FNV-1a: tiny, stable, good enough to spread feature names over ids.
fn fnv1a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_sorted_and_unique() {
        assert_eq!(Edges::new(vec![5, 1, 5, 3]).ids(), &[1, 3, 5]);
        assert!(Edges::new(vec![]).is_empty());
    }

    #[test]
    fn union_counts_only_new_edges() {
        let mut a = Edges::new(vec![5, 1, 3, 3]);
        assert_eq!(a.ids(), &[1, 3, 5]);
        let b = Edges::new(vec![3, 4, 9]);
        assert_eq!(b.new_against(&a), 2);
        assert_eq!(a.union_with(&b), 2);
        assert_eq!(a.ids(), &[1, 3, 4, 5, 9]);
        assert_eq!(a.union_with(&b), 0);
    }

    #[test]
    fn feature_ids_are_stable() {
        // FNV-1a of the Debug text `"a"` (with its quotes) and of `1`.
        assert_eq!(fnv1a(b""), 0x811c_9dc5);
        assert_eq!(fnv1a(b"a"), 0xe40c_292c);
        let e = Edges::from_features(["a", "a", "b"]);
        assert_eq!(e.len(), 2);
        assert_eq!(e, Edges::from_features(["b", "a"]));
    }

    #[test]
    fn hit_buckets() {
        let got: Vec<u32> = [0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 127, 128, u64::MAX]
            .into_iter()
            .map(hit_bucket)
            .collect();
        assert_eq!(got, vec![0, 1, 2, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8]);
    }
}
