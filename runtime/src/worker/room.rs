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
//! The storage grows geometrically (to at least 1.5 times the previous
//! room), so the slow path runs a logarithmic number of times; each run
//! reallocates every worker's arrays under that worker's run-queue lock,
//! which the worker then waits for (a `memcpy` of what is stored, or a
//! `mremap`).
//!
//! # The price
//!
//! Each worker reserves about 210 bytes per slot of room: the run queue's
//! slot (88), tree node (56), recency links and free-list entry (16), and
//! two timer entries (48), since the heap sweeps its stale entries only
//! when it doubles. The room is at most 1.5 times the registry's capacity,
//! which is the sum of its shards' capacities, each at most twice that
//! shard's peak (tasks are registered in the shard of the worker that
//! spawned them). So a task costs about `210 × workers` bytes, up to three
//! times that after rounding. Pages that nothing writes are never backed
//! by memory, so the resident size does not change (measured:
//! `results/2026-12-06/room`), but the reservation counts against an
//! address-space limit (`RLIMIT_AS`) and against the commit limit under
//! `vm.overcommit_memory=2`: under `prlimit --as` with 16 KiB stacks on two
//! workers, 2–5% fewer green threads fit than before, and on many workers
//! with small stacks the room can be as large as a stack.
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

    /// Forgets the room made so far: at shutdown, which replaces the run
    /// queues with empty ones, and in tests of the growth's failure (the
    /// next spawn grows it again).
    pub(crate) fn forget(&self) {
        let _serialised = self.grow.lock();
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
    // Geometric growth: few slow paths, at most 1.5 times the bound.
    let have = room.tasks.load(Ordering::Relaxed);
    let target = tasks.max(have + have / 2).max(MIN_ROOM);
    for w in sh.workers.iter() {
        let mut rq = w.lock();
        let grown = rq.q.try_reserve(target).is_ok() && rq.timers.try_reserve(target).is_ok();
        #[cfg(debug_assertions)]
        if grown {
            rq.reserved = Some((rq.q.capacity(), rq.timers.capacity()));
        }
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
    /// nothing, drops the closure (nothing leaks), leaves nothing
    /// registered, and the runtime goes on.
    #[test]
    fn a_spawn_that_cannot_make_room_fails_and_runs_nothing() {
        struct Dropped(Arc<AtomicBool>);
        impl Drop for Dropped {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let rt = crate::Builder::new().workers(2).build().unwrap();
        let ran = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicBool::new(false));
        let (r, d) = (ran.clone(), Dropped(dropped.clone()));
        let (err, live) = rt.block_on(move || {
            let sh = crate::runtime::spawn::current_shared().unwrap().clone();
            let before = sh.registry.len();
            sh.room.forget();
            crate::task::fail_next::arm(crate::task::fail_next::Alloc::Room);
            let err = crate::task::Builder::new()
                .spawn(move || {
                    let _d = d;
                    r.store(true, Ordering::SeqCst)
                })
                .map(|_| ())
                .expect_err("the room was made to fail");
            (err, sh.registry.len() - before)
        });
        assert_eq!(err.kind(), ErrorKind::OutOfMemory);
        assert_eq!(live, 0, "nothing stays registered");
        assert!(
            dropped.load(Ordering::SeqCst),
            "the refused closure was dropped"
        );
        assert_eq!(rt.spawn(|| 5).join().unwrap(), 5);
        assert!(!ran.load(Ordering::SeqCst), "the refused closure never ran");
    }

    /// The room grows geometrically: a registry growing a few slots at a
    /// time (a second shard's first slab) does not regrow every worker for
    /// each of them.
    #[test]
    fn the_room_grows_geometrically() {
        let rt = crate::Builder::new().workers(2).build().unwrap();
        let sh = rt.shared().clone();
        super::make(&sh, 10).unwrap();
        assert!(sh.room.covers(super::MIN_ROOM));
        assert!(!sh.room.covers(super::MIN_ROOM + 1));
        super::make(&sh, super::MIN_ROOM + 4).unwrap();
        assert!(sh.room.covers(super::MIN_ROOM + super::MIN_ROOM / 2));
        let cap = sh.workers[1].lock().q.capacity();
        super::make(&sh, super::MIN_ROOM + 8).unwrap();
        assert_eq!(sh.workers[1].lock().q.capacity(), cap, "no regrowth");
    }
}
