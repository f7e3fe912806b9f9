//! Per-worker timers for `sleep`, `sleep_until` and timed waits.
//!
//! Owns: a min-heap of `(deadline, task, sequence)` entries, kept under the
//! worker's run-queue lock (it is only touched at switches and ticks, when
//! that lock is held anyway). Cancellation is lazy: a task that stops
//! waiting bumps its timer sequence, and an entry whose sequence no longer
//! matches is dropped when it surfaces. Must not: wake tasks itself (expired
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
            sweep_at: 1024,
        }
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

    /// Moves every live entry due at `now` into `out`, dropping stale ones.
    pub(crate) fn expire(&mut self, now: u64, out: &mut Vec<TaskRef>) {
        while let Some(e) = self.heap.peek() {
            if e.deadline > now {
                break;
            }
            let e = self.heap.pop().expect("peeked");
            if e.task.timer_seq() == e.seq {
                out.push(e.task);
            }
        }
    }

    /// Drops stale entries; amortised O(1) per insert (runs when the heap
    /// has doubled since the last sweep).
    fn sweep(&mut self) {
        let entries = std::mem::take(&mut self.heap).into_vec();
        self.heap = entries
            .into_iter()
            .filter(|e| e.task.timer_seq() == e.seq)
            .collect();
        self.sweep_at = (self.heap.len() * 2).max(1024);
    }

    /// Removes every entry (shutdown).
    pub(crate) fn clear(&mut self) {
        self.heap.clear();
    }
}
