//! Per-worker timers for `sleep`, `sleep_until` and timed waits.
//!
//! Owns: a min-heap of `(deadline, task, sequence)` entries, kept under the
//! worker's run-queue lock (it is only touched at switches and ticks, when
//! that lock is held anyway). Cancellation is lazy: a task that stops
//! waiting bumps its timer sequence, and an entry whose sequence no longer
//! matches is dropped when it surfaces, or by a sweep once the heap has
//! doubled. Room for a given number of tasks can be reserved ahead
//! ([`Timers::try_reserve`]) so that arming never allocates. Must not:
//! wake tasks itself (expired
//! entries are handed to the caller, who wakes them after dropping the lock,
//! keeping the lock order task → run queue).

use crate::task::TaskRef;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry {
    deadline: u64,
    seq: u64,
    task: TaskRef,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.deadline == other.deadline
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap, we want the earliest deadline on top.
    fn cmp(&self, other: &Self) -> Ordering {
        other.deadline.cmp(&self.deadline)
    }
}

/// The smallest heap size at which a sweep runs.
const MIN_SWEEP: usize = 1024;

/// A worker's timer heap.
pub(crate) struct Timers {
    heap: BinaryHeap<Entry>,
    /// Heap size at which the next stale-entry sweep runs.
    sweep_at: usize,
}

impl Timers {
    pub(crate) fn new() -> Self {
        Timers {
            heap: BinaryHeap::new(),
            sweep_at: MIN_SWEEP,
        }
    }

    /// Makes room for the timers of `tasks` tasks, so that arming never
    /// allocates while at most that many tasks exist.
    ///
    /// Each task has at most one live entry (its sequence changes when it
    /// stops waiting), and a sweep runs when the heap reaches `sweep_at`,
    /// which is at most `max(2 × the live entries at the last sweep,
    /// 1024)`. So the heap never holds more than `max(2 × tasks, 1024)`
    /// entries. An error leaves the heap unchanged.
    pub(crate) fn try_reserve(
        &mut self,
        tasks: usize,
    ) -> Result<(), std::collections::TryReserveError> {
        let total = tasks.saturating_mul(2).max(MIN_SWEEP);
        match total.checked_sub(self.heap.len()) {
            Some(more) if self.heap.capacity() < total => self.heap.try_reserve_exact(more),
            _ => Ok(()),
        }
    }

    /// The number of entries that fit without allocating.
    #[cfg(any(test, debug_assertions))]
    pub(crate) fn capacity(&self) -> usize {
        self.heap.capacity()
    }

    /// Arms a timer for `task` at `deadline` (ns) with the task's current timer sequence.
    pub(crate) fn insert(&mut self, deadline: u64, task: TaskRef) {
        let seq = task.timer_seq();
        self.heap.push(Entry {
            deadline,
            seq,
            task,
        });
        if self.heap.len() >= self.sweep_at {
            self.sweep();
        }
    }

    /// The earliest deadline, if any entry is armed (stale ones included).
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.deadline)
    }

    /// Moves live entries due at `now` into `out`, dropping stale ones: as
    /// many as `out` has spare capacity for, so that a caller that passes
    /// a buffer with spare room never makes it grow (one with none gets
    /// one entry, so every call makes progress). Returns whether entries
    /// due at `now` may remain (the caller comes back for them).
    pub(crate) fn expire(&mut self, now: u64, out: &mut Vec<TaskRef>) -> bool {
        let room = out.capacity().saturating_sub(out.len()).max(1);
        let mut taken = 0;
        while let Some(e) = self.heap.peek() {
            if e.deadline > now {
                return false;
            }
            if taken == room {
                return true;
            }
            let e = self.heap.pop().expect("peeked");
            if e.task.timer_seq() == e.seq {
                out.push(e.task);
                taken += 1;
            }
        }
        false
    }

    /// Drops stale entries in place (the heap keeps its capacity);
    /// amortised O(1) per insert (runs when the heap has doubled since the
    /// last sweep).
    fn sweep(&mut self) {
        self.heap.retain(|e| e.task.timer_seq() == e.seq);
        self.sweep_at = (self.heap.len() * 2).max(MIN_SWEEP);
    }

    /// Removes every entry (shutdown).
    pub(crate) fn clear(&mut self) {
        self.heap.clear();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn tasks(rt: &crate::Runtime, n: usize) -> Vec<TaskRef> {
        (0..n as u64)
            .map(|i| crate::task::taskref::unspawned(rt, i))
            .collect()
    }

    /// With room reserved for n tasks, any number of timed waits by those
    /// tasks, most of them cancelled (stale entries), never grows the heap.
    #[test]
    fn reserved_room_covers_stale_entries() {
        let rt = crate::Builder::new().workers(1).build().unwrap();
        let ts = tasks(&rt, 1500);
        let mut timers = Timers::new();
        timers.try_reserve(ts.len()).unwrap();
        let cap = timers.capacity();
        assert!(cap >= 2 * ts.len());
        for round in 0..20u64 {
            for t in &ts {
                // a wait that ends early leaves a stale entry behind
                timers.insert(1_000_000 + round, t.clone());
                t.bump_timer_seq();
            }
        }
        for t in &ts {
            timers.insert(5, t.clone());
        }
        assert_eq!(timers.capacity(), cap, "the heap reallocated");
        let mut out = Vec::with_capacity(64);
        assert!(timers.expire(10, &mut out), "more are due than fit");
        assert_eq!(out.len(), 64);
        assert_eq!(out.capacity(), 64, "expiry never grows the buffer");
        let mut fired = out.len();
        out.clear();
        while timers.expire(10, &mut out) {
            fired += out.len();
            out.clear();
        }
        fired += out.len();
        assert_eq!(fired, ts.len(), "every live timer fires once");
    }
}
