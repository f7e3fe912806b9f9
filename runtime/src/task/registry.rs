//! The registry of live tasks.
//!
//! Owns: one strong reference to every task from spawn to exit, sharded by
//! the spawning worker so spawns on different workers never share a lock.
//! It exists for shutdown: blocked tasks are reachable from nowhere else
//! (their wakers hold them in wait queues that may themselves live on
//! blocked stacks), and shutdown must unwind and free them. Must not: be
//! used on the switch path.

use crate::lock::ShortLock;
use crate::task::TaskRef;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Slab {
    entries: Vec<Option<TaskRef>>,
    /// Free indexes. Its capacity is kept at least `entries.len()`, so that
    /// `remove` (at a task's exit, where an error has nowhere to go) never
    /// allocates.
    free: Vec<u32>,
    /// Set by [`Registry::drain`]: shutdown has taken every task, and no
    /// task may be registered after it (nobody would unwind it).
    closed: bool,
}

/// Why [`Registry::insert`] registered nothing.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Shutdown has drained the registry.
    Closed,
    /// The slab could not grow (the allocator has no memory).
    NoMemory,
}

/// Sharded slab of live tasks.
pub(crate) struct Registry {
    shards: Box<[CachePadded<ShortLock<Slab>>]>,
    /// The sum of the shards' slab capacities: never less than the number
    /// of live tasks. Written only when a slab reallocates (its capacity
    /// doubles), so it is read-mostly; a spawn reads it to check that every
    /// run queue has room for every task (`worker::room`).
    slots: AtomicUsize,
}

impl Registry {
    pub(crate) fn new(shards: usize) -> Self {
        Registry {
            shards: (0..shards.max(1))
                .map(|_| {
                    CachePadded::new(ShortLock::new(Slab {
                        entries: Vec::new(),
                        free: Vec::new(),
                        closed: false,
                    }))
                })
                .collect(),
            slots: AtomicUsize::new(0),
        }
    }

    /// Registers `task` (the registry's own reference, handed over) in
    /// shard `shard` and records its key in the task.
    /// Registers nothing, and says why, once shutdown has drained the
    /// registry (a spawn from outside the workers that raced with it) or
    /// when the slab cannot grow: a spawn reports running out of memory as
    /// an error, where a plain `Vec::push` would abort the process.
    pub(crate) fn insert(&self, shard: usize, task: TaskRef) -> Result<(), Refused> {
        #[cfg(test)]
        if crate::task::fail_next::take(crate::task::fail_next::Alloc::Registry) {
            return Err(Refused::NoMemory);
        }
        let shard = shard % self.shards.len();
        let mut s = self.shards[shard].lock();
        if s.closed {
            return Err(Refused::Closed);
        }
        let index = match s.free.pop() {
            Some(i) => i,
            None => {
                let grown = s.entries.len() + 1;
                let free_len = s.free.len();
                let before = s.entries.capacity();
                let entries = s.entries.try_reserve(1);
                // Counted whether or not the free list's reservation below
                // succeeds: the slab keeps the capacity either way, and
                // later inserts fill it without growing it again.
                // Relaxed: the count needs no ordering with other memory.
                // It is one atomic, so a spawner reading it after its own
                // insert sees every growth that happened before that insert
                // on its shard (the shard lock orders them), and the
                // largest value any spawner read covers every shard's
                // growth that spawner's predecessors made (`worker::room`).
                let after = s.entries.capacity();
                if after > before {
                    self.slots.fetch_add(after - before, Ordering::Relaxed);
                }
                #[cfg(test)]
                if crate::task::fail_next::take(crate::task::fail_next::Alloc::RegistryFree) {
                    return Err(Refused::NoMemory);
                }
                if entries.is_err() || s.free.try_reserve(grown - free_len).is_err() {
                    // Not the last reference (the spawner holds others):
                    // dropping it here frees nothing under the lock.
                    return Err(Refused::NoMemory);
                }
                s.entries.push(None);
                (s.entries.len() - 1) as u32
            }
        };
        task.reg_key
            .store(((shard as u64) << 32) | index as u64, Ordering::Relaxed);
        s.entries[index as usize] = Some(task);
        Ok(())
    }

    /// An upper bound on the number of live tasks: the slabs' capacity.
    #[inline]
    pub(crate) fn slots(&self) -> usize {
        self.slots.load(Ordering::Relaxed)
    }

    /// Removes `task`, at its exit or when its spawn fails after
    /// registering it. Returns the registry's reference, or `None` if the
    /// task is not registered or shutdown has drained the registry (the
    /// task is then shutdown's, which unwinds it: a failed spawn must not
    /// touch its context).
    ///
    /// Called once per task, by the thread that ran it to its end (or that
    /// spawned it); shutdown drains the registry only after every worker
    /// thread is joined. So nothing races for the key: a load and a store,
    /// not a swap.
    pub(crate) fn remove(&self, task: &crate::task::Tcb) -> Option<TaskRef> {
        let key = task.reg_key.load(Ordering::Relaxed);
        if key == u64::MAX {
            return None;
        }
        let (shard, index) = ((key >> 32) as usize, (key & 0xffff_ffff) as u32);
        let mut s = self.shards[shard].lock();
        if s.closed {
            return None;
        }
        task.reg_key.store(u64::MAX, Ordering::Relaxed);
        let t = s.entries[index as usize].take();
        debug_assert!(s.free.len() < s.free.capacity(), "insert reserves it");
        s.free.push(index);
        t
    }

    /// Takes every registered task and closes the registry (shutdown).
    pub(crate) fn drain(&self) -> Vec<TaskRef> {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            let mut s = shard.lock();
            out.extend(s.entries.drain(..).flatten());
            s.free.clear();
            s.closed = true;
        }
        for t in &out {
            t.reg_key.store(u64::MAX, Ordering::Relaxed);
        }
        out
    }

    /// Whether shutdown has drained shard `shard` (see [`Registry::insert`]).
    pub(crate) fn is_closed(&self, shard: usize) -> bool {
        self.shards[shard % self.shards.len()].lock().closed
    }

    /// Number of live tasks.
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let s = s.lock();
                s.entries.len() - s.free.len()
            })
            .sum()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::io::ErrorKind;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// A slab whose entries grew but whose free list could not is still
    /// counted in `slots`, which must never be less than the live tasks
    /// (the room every worker makes for them depends on it).
    #[test]
    fn slots_count_a_growth_whose_insert_failed() {
        let rt = crate::Builder::new().workers(1).build().unwrap();
        let task = || crate::task::taskref::unspawned(&rt, 1);
        let reg = super::Registry::new(1);
        let mut live = Vec::new();
        // fill the slab to its capacity
        loop {
            let t = task();
            reg.insert(0, t.clone()).unwrap();
            live.push(t);
            if reg.slots() == live.len() {
                break;
            }
        }
        // the next insert grows the entries, then the free list fails
        crate::task::fail_next::arm(crate::task::fail_next::Alloc::RegistryFree);
        assert_eq!(reg.insert(0, task()), Err(super::Refused::NoMemory));
        let grown = reg.slots();
        assert!(grown > live.len(), "the entries' growth is counted");
        // later inserts use that capacity without growing again
        while live.len() < grown {
            let t = task();
            reg.insert(0, t.clone()).unwrap();
            live.push(t);
            assert!(reg.slots() >= live.len(), "fewer slots than live tasks");
        }
        for t in &live {
            drop(reg.remove(t));
        }
    }

    /// A spawn the registry refuses for lack of memory is an error, runs
    /// nothing, registers nothing, and leaves the runtime usable.
    #[test]
    fn a_refused_registration_is_a_spawn_error_that_runs_nothing() {
        let rt = crate::Builder::new().workers(1).build().unwrap();
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        let (err, live) = rt.block_on(move || {
            let sh = crate::runtime::spawn::current_shared().unwrap().clone();
            let before = sh.registry.len();
            crate::task::fail_next::arm(crate::task::fail_next::Alloc::Registry);
            let err = crate::task::Builder::new()
                .spawn(move || r.store(true, Ordering::SeqCst))
                .map(|_| ())
                .expect_err("the registry was made to refuse");
            (err, sh.registry.len() - before)
        });
        assert_eq!(err.kind(), ErrorKind::OutOfMemory);
        assert_eq!(live, 0, "nothing stays registered");
        assert_eq!(rt.spawn(|| 5).join().unwrap(), 5);
        assert!(!ran.load(Ordering::SeqCst), "the refused closure never ran");
    }
}
