//! Which OS thread owns a worker: the ownership word of the hand-off.
//!
//! Owns: one `u64` per worker that says whether its owner thread is inside
//! a green thread (and which resume of one), and the three transitions on
//! it — the owner entering a task, the owner coming back into the runtime,
//! and the monitor taking the worker away from an owner that has stayed
//! inside one task too long (`worker::handoff`). Must not: know what a
//! hand-off does to run queues or threads (that is `handoff`); this file is
//! only the claim, so that loom can check it on its own.
//!
//! # The word
//!
//! An even value means "the owner is in the runtime" (its scheduler loop, a
//! preemption point's slow path, a park); an odd value means "the owner is
//! running a green thread". Values only grow, so a value names one stretch
//! of one owner's time in one task, and never comes back (2⁶³ transitions
//! are centuries at one per nanosecond).
//!
//! ```text
//! owner thread                               monitor (under the worker's rq lock)
//! enter:   store(v + 1)          [v even]    v odd, unchanged for the threshold:
//! resume the green thread ...                CAS(v → v + 1)   ok: taken over;
//! leave:   CAS(v + 1 → v + 2)                                  the new owner starts
//!          fails: the worker was taken over                    from v + 1 (even)
//! ```
//!
//! Exactly one of the owner's `leave` and the monitor's `take` succeeds on
//! an odd value (both are read-modify-writes of one atomic, so they are
//! totally ordered and the second sees the first's value). So either the
//! owner comes back into the runtime as owner and the monitor leaves the
//! worker alone, or the monitor owns the worker and the old thread knows,
//! at its very next runtime step, that it no longer does: no window exists
//! in which both act as owner.
//!
//! The old thread keeps its expected value in a thread-local
//! (`worker::tls`), not a fresh load: after a takeover the new owner's
//! values are odd and even again, and only an exact match proves ownership.
//!
//! # Orderings
//!
//! The word publishes no data of its own; run-queue data is handed over by
//! the run-queue lock. The monitor's CAS is made *while it holds that
//! lock* and is `Release`; a failed `leave` is `Acquire`. So a thread that
//! learns it was taken over has the monitor's lock acquisition
//! happening-before its next lock attempt, which therefore waits for the
//! monitor's whole critical section (its dequeue of the old thread's task).
//! The owner's `enter` is a plain store: only the owner writes an even
//! word, and the monitor's CAS only succeeds on the exact odd value it read.

use crate::loom::{AtomicU64, Ordering};

/// A worker's ownership word (see the module docs).
pub(crate) struct Ownership {
    word: AtomicU64,
}

impl Ownership {
    /// A worker whose first owner is in the runtime (value 0).
    pub(crate) fn new() -> Self {
        Ownership {
            word: AtomicU64::new(0),
        }
    }

    /// The current value (the monitor's look; the owner's check).
    #[inline]
    pub(crate) fn load(&self) -> u64 {
        self.word.load(Ordering::Relaxed)
    }

    /// The owner, in the runtime at `v` (even), starts running a green
    /// thread. Returns the new (odd) value.
    #[inline]
    pub(crate) fn enter(&self, v: u64) -> u64 {
        debug_assert!(v & 1 == 0);
        self.word.store(v + 1, Ordering::Relaxed);
        v + 1
    }

    /// The owner, in a green thread at `v` (odd), comes back into the
    /// runtime. Returns the new (even) value, or `None` if the worker was
    /// taken over (the caller no longer owns it).
    #[inline]
    pub(crate) fn leave(&self, v: u64) -> Option<u64> {
        debug_assert!(v & 1 == 1);
        self.word
            .compare_exchange(v, v + 1, Ordering::Acquire, Ordering::Acquire)
            .ok()
            .map(|_| v + 1)
    }

    /// The monitor takes the worker from an owner seen in a green thread
    /// at `v` (odd). Call with the worker's run-queue lock held. Returns
    /// the new owner's starting value (even), or `None` if the owner has
    /// moved on since.
    pub(crate) fn take(&self, v: u64) -> Option<u64> {
        if v & 1 == 0 {
            return None;
        }
        self.word
            .compare_exchange(v, v + 1, Ordering::Release, Ordering::Relaxed)
            .ok()
            .map(|_| v + 1)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_owner_cycles_while_nobody_takes_it() {
        let o = Ownership::new();
        let mut v = o.load();
        for _ in 0..3 {
            v = o.enter(v);
            v = o.leave(v).expect("still the owner");
        }
        assert_eq!(v, 6);
        assert_eq!(o.take(v), None, "never taken in the runtime");
    }

    #[test]
    fn a_takeover_locks_the_old_owner_out_for_good() {
        let o = Ownership::new();
        let old = o.enter(0);
        let new = o.take(old).expect("seen in a task");
        assert_eq!(o.leave(old), None);
        // The new owner cycles; the old value never matches again.
        let v = o.enter(new);
        assert_eq!(o.leave(old), None);
        assert_eq!(o.take(old), None);
        assert!(o.leave(v).is_some());
    }

    #[test]
    fn a_stale_look_does_not_take() {
        let o = Ownership::new();
        let seen = o.enter(0);
        let v = o.leave(seen).unwrap();
        let _ = o.enter(v);
        assert_eq!(o.take(seen), None, "the owner has moved on");
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::atomic::AtomicUsize;
    use loom::sync::Arc;

    /// The owner's `leave` races the monitor's `take` on the same odd
    /// value: exactly one wins, and the loser knows.
    #[test]
    fn leave_and_take_exclude_each_other() {
        loom::model(|| {
            let o = Arc::new(Ownership::new());
            let owners = Arc::new(AtomicUsize::new(0));
            let v = o.enter(0);
            let (o2, n2) = (o.clone(), owners.clone());
            let monitor = loom::thread::spawn(move || {
                if o2.take(v).is_some() {
                    n2.fetch_add(1, Ordering::SeqCst);
                }
            });
            if o.leave(v).is_some() {
                owners.fetch_add(1, Ordering::SeqCst);
            }
            monitor.join().unwrap();
            assert_eq!(owners.load(Ordering::SeqCst), 1);
        });
    }

    /// The takeover as `worker::handoff` makes it: claim under the
    /// run-queue lock, then dequeue the stuck task (here: a flag) before
    /// unlocking. An old owner whose `leave` fails and then takes the lock
    /// always finds the dequeue done; one whose `leave` succeeds never
    /// finds its task dequeued, at that point or later.
    #[test]
    fn a_failed_leave_finds_the_takeover_complete() {
        loom::model(|| {
            let o = Arc::new(Ownership::new());
            let rq = Arc::new(loom::sync::Mutex::new(false));
            let v = o.enter(0);
            let (o2, rq2) = (o.clone(), rq.clone());
            let monitor = loom::thread::spawn(move || {
                let mut dequeued = rq2.lock().unwrap();
                if o2.take(v).is_some() {
                    *dequeued = true;
                }
            });
            let owner = o.leave(v).is_some();
            let dequeued = *rq.lock().unwrap();
            if owner {
                assert!(!dequeued);
            } else {
                assert!(dequeued);
            }
            monitor.join().unwrap();
            assert_eq!(*rq.lock().unwrap(), !owner);
        });
    }
}
