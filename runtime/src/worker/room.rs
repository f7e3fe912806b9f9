//! Room for every task on every worker, made at spawn.
//!
//! Owns: the promise that a wakeup, a migration or a timer never has to
//! allocate. A run queue stores its entities in arrays that would otherwise
//! grow at an enqueue, and a worker's timer heap at a timed block; both
//! happen after the spawn has returned, where an allocation failure has
//! nowhere to go but an abort. So a spawn, which can still fail with
//! `OutOfMemory`, first makes sure that every worker's run queue has room
//! for every live task, and its timer heap for their timers.
//!
//! # The bound
//!
//! Any task can end up on any worker, so each worker needs room for all of
//! them. The registry's capacity ([`Registry::slots`]) is an upper bound on
//! the live tasks that changes only when a registry slab reallocates, i.e.
//! doubles: the bound is read with one relaxed load per spawn, and the slow
//! path below runs a logarithmic number of times. A spawn, after
//! registering its task and before publishing it, checks that the room
//! published here covers the bound it reads; if not, it grows every
//! worker's storage to that bound under each worker's run-queue lock, one
//! worker at a time, and only then publishes the larger room.
//!
//! Why the room covers the tasks that are queued at any moment: every
//! queued task's spawner passed the check, each with a bound read after its
//! own registration, and the bound is a single counter that only grows. So
//! the largest bound any of those spawners read includes every slab growth
//! that preceded any of their registrations, hence counts all of them; and
//! the room is at least that largest bound.
//!
//! The price is address space, not memory: each worker reserves about
//! 210 bytes per registry slot (the run queue's slot, tree node, recency
//! links and free-list entry, and two timer entries, since the heap sweeps
//! its stale entries only when it doubles), and the registry has at most
//! twice as many slots as it ever had live tasks. Pages of a reservation
//! that nothing writes are never backed by memory.
//!
//! Must not: reserve anything on the switch path, or hold one worker's lock
//! while taking another's (the growth takes them one at a time).
//!
//! [`Registry::slots`]: crate::task::registry::Registry::slots

use crate::shared::Shared;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The room every worker has (in tasks), and the lock that serialises its
/// growth.
pub(crate) struct Room {
    /// Every worker's run queue and timer heap have room for this many
    /// tasks. Only grows.
    tasks: AtomicUsize,
    grow: parking_lot::Mutex<()>,
}

/// The smallest room made: the first spawn reserves this much at once.
pub(crate) const MIN_ROOM: usize = 1024;

impl Room {
    /// No room yet: the first spawn makes it.
    pub(crate) fn new() -> Self {
        Room {
            tasks: AtomicUsize::new(0),
            grow: parking_lot::Mutex::new(()),
        }
    }

    /// Whether every worker has room for `tasks` tasks. Acquire: pairs
    /// with the Release store after the growth, so the reservations
    /// happen before the caller publishes its task.
    #[inline]
    pub(crate) fn covers(&self, tasks: usize) -> bool {
        tasks <= self.tasks.load(Ordering::Acquire)
    }

    /// Forgets the room made so far, so that the next spawn grows it again
    /// (tests of the growth's failure).
    #[cfg(test)]
    pub(crate) fn forget(&self) {
        self.tasks.store(0, Ordering::Release);
    }
}

/// Gives every worker's run queue and timer heap room for `tasks` tasks
/// (at least [`MIN_ROOM`]). Fails with `OutOfMemory`, changing no promise,
/// if any worker's storage cannot grow; the workers that did grow keep
/// their larger storage.
#[cold]
pub(crate) fn make(sh: &Shared, tasks: usize) -> io::Result<()> {
    let room = &sh.room;
    let _serialised = room.grow.lock();
    if room.covers(tasks) {
        return Ok(());
    }
    #[cfg(test)]
    if crate::task::fail_next::take(crate::task::fail_next::Alloc::Room) {
        return Err(io::ErrorKind::OutOfMemory.into());
    }
    let target = tasks.max(MIN_ROOM);
    for w in sh.workers.iter() {
        let mut rq = w.lock();
        let grown = rq.q.try_reserve(target).is_ok() && rq.timers.try_reserve(target).is_ok();
        drop(rq);
        if !grown {
            // `From<ErrorKind>` does not allocate.
            return Err(io::ErrorKind::OutOfMemory.into());
        }
    }
    room.tasks.store(target, Ordering::Release);
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::io::ErrorKind;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// Every worker, not only the ones that ran the spawns, has room for
    /// every live task in its run queue and its timer heap once the spawns
    /// return: nothing the tasks do later (wake up anywhere, sleep) grows
    /// a worker's storage.
    #[test]
    fn every_worker_has_room_for_every_task() {
        let rt = crate::Builder::new().workers(2).build().unwrap();
        let (tx, rx) = crate::sync::channel::unbounded::<()>();
        let n = 3 * super::MIN_ROOM;
        let handles: Vec<_> = (0..n)
            .map(|_| {
                let rx = rx.clone();
                // all on worker 0: worker 1 holds none of them
                crate::task::Builder::new()
                    .pin(0)
                    .spawn_on(&rt, move || rx.recv().is_ok())
                    .unwrap()
            })
            .collect();
        let sh = rt.shared().clone();
        let live = sh.registry.len();
        assert!(live >= n);
        for w in sh.workers.iter() {
            let rq = w.lock();
            assert!(
                rq.q.capacity() >= live,
                "worker {}: {}",
                w.index,
                rq.q.capacity()
            );
            assert!(rq.timers.capacity() >= 2 * live, "worker {}", w.index);
        }
        for _ in 0..n {
            tx.send(()).unwrap();
        }
        for h in handles {
            assert!(h.join().unwrap());
        }
    }

    /// When the room cannot grow, the spawn fails with `OutOfMemory`, runs
    /// nothing, leaves nothing registered, and the runtime goes on.
    #[test]
    fn a_spawn_that_cannot_make_room_fails_and_runs_nothing() {
        let rt = crate::Builder::new().workers(2).build().unwrap();
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        let (err, live) = rt.block_on(move || {
            let sh = crate::runtime::spawn::current_shared().unwrap().clone();
            let before = sh.registry.len();
            sh.room.forget();
            crate::task::fail_next::arm(crate::task::fail_next::Alloc::Room);
            let err = crate::task::Builder::new()
                .spawn(move || r.store(true, Ordering::SeqCst))
                .map(|_| ())
                .expect_err("the room was made to fail");
            (err, sh.registry.len() - before)
        });
        assert_eq!(err.kind(), ErrorKind::OutOfMemory);
        assert_eq!(live, 0, "nothing stays registered");
        assert_eq!(rt.spawn(|| 5).join().unwrap(), 5);
        assert!(!ran.load(Ordering::SeqCst), "the refused closure never ran");
    }
}
