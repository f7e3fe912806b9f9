//! Sets of workers: task affinity masks and the idle-worker bitmap.
//!
//! Owns: a fixed-size bit set over worker indices (up to [`MAX_WORKERS`])
//! and its atomic twin for the idle bitmap. Must not: know what a worker is.

use std::sync::atomic::{AtomicU64, Ordering};

/// The largest number of workers a runtime may have.
pub const MAX_WORKERS: usize = 256;
const WORDS: usize = MAX_WORKERS / 64;

/// A set of worker indices.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct WorkerMask {
    bits: [u64; WORDS],
}

impl WorkerMask {
    /// The empty set.
    pub(crate) const fn empty() -> Self {
        WorkerMask { bits: [0; WORDS] }
    }

    /// Every worker index below `n`.
    pub(crate) fn first(n: usize) -> Self {
        let mut m = Self::empty();
        for i in 0..n.min(MAX_WORKERS) {
            m.insert(i);
        }
        m
    }

    /// Adds `i`.
    pub(crate) fn insert(&mut self, i: usize) {
        self.bits[i / 64] |= 1 << (i % 64);
    }

    /// Whether `i` is in the set.
    #[inline]
    pub(crate) fn contains(&self, i: usize) -> bool {
        i < MAX_WORKERS && self.bits[i / 64] & (1 << (i % 64)) != 0
    }

    /// Number of members.
    pub(crate) fn count(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The lowest member.
    pub(crate) fn lowest(&self) -> Option<usize> {
        self.bits
            .iter()
            .enumerate()
            .find(|(_, w)| **w != 0)
            .map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
    }

    /// Members in increasing order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..MAX_WORKERS).filter(move |i| self.contains(*i))
    }
}

impl std::fmt::Debug for WorkerMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// An atomic set of worker indices (the idle bitmap).
pub(crate) struct AtomicMask {
    bits: [AtomicU64; WORDS],
}

impl AtomicMask {
    pub(crate) fn new() -> Self {
        AtomicMask {
            bits: Default::default(),
        }
    }

    /// Adds `i`.
    pub(crate) fn insert(&self, i: usize) {
        self.bits[i / 64].fetch_or(1 << (i % 64), Ordering::SeqCst);
    }

    /// Removes `i`.
    pub(crate) fn remove(&self, i: usize) {
        self.bits[i / 64].fetch_and(!(1 << (i % 64)), Ordering::SeqCst);
    }

    /// Whether `i` is in the set.
    #[inline]
    pub(crate) fn contains(&self, i: usize) -> bool {
        self.bits[i / 64].load(Ordering::Relaxed) & (1 << (i % 64)) != 0
    }

    /// The 64-bit word holding indices `64·w .. 64·w+63`.
    #[inline]
    pub(crate) fn word(&self, w: usize) -> u64 {
        self.bits[w].load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_basics() {
        let mut m = WorkerMask::empty();
        m.insert(3);
        m.insert(200);
        assert!(m.contains(3) && m.contains(200) && !m.contains(4));
        assert_eq!(m.count(), 2);
        assert_eq!(m.lowest(), Some(3));
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![3, 200]);
        assert_eq!(WorkerMask::first(5).count(), 5);
        let a = AtomicMask::new();
        a.insert(70);
        assert!(a.contains(70));
        assert_eq!(a.word(1), 1 << 6);
        a.remove(70);
        assert!(!a.contains(70));
    }
}
