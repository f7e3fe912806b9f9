//! Task ids: unique in the process, handed out without a shared atomic
//! per spawn.
//!
//! Owns: the process-wide id counter and each OS thread's block of ids.
//! A thread takes [`BLOCK`] ids at a time from the shared counter (one
//! relaxed `fetch_add` per block) and hands them out from a thread-local
//! cell, so a spawn costs a thread-local increment, not a contended RMW on
//! a line every spawner shares. Ids therefore grow per thread, not in
//! spawn order across threads. Must not: give an id twice.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Ids a thread reserves at a time.
const BLOCK: u64 = 1024;

/// The first id of the next unreserved block. Ids start at 1.
static NEXT_BLOCK: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's block: the next id to hand out and the end of the
    /// block (exclusive). Empty (`0, 0`) until the first spawn.
    static RESERVED: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A fresh task id, unique in the process.
///
/// `#[inline(never)]`: a green thread may resume on another OS thread after
/// any call that switches, so a thread-local's address must not be kept
/// across one; here it is read and written inside this call only.
#[inline(never)]
pub(crate) fn next_id() -> u64 {
    RESERVED.with(|r| {
        let (next, end) = r.get();
        if next < end {
            r.set((next + 1, end));
            next
        } else {
            // Relaxed: only uniqueness matters, which the RMW gives.
            let first = NEXT_BLOCK.fetch_add(BLOCK, Ordering::Relaxed);
            r.set((first + 1, first + BLOCK));
            first
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_across_threads_and_blocks() {
        let per_thread = BLOCK as usize * 3 + 5;
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(move || (0..per_thread).map(|_| next_id()).collect::<Vec<_>>())
            })
            .collect();
        let mut seen = HashSet::new();
        for t in threads {
            for id in t.join().unwrap() {
                assert!(id > 0);
                assert!(seen.insert(id), "id {id} given twice");
            }
        }
        assert_eq!(seen.len(), 4 * per_thread);
    }
}
