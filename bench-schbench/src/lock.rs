//! The per-CPU spin locks a request holds around its math (unless `-L`).
//!
//! This module owns the lock array and the two ways of choosing a lock: by the CPU the
//! caller runs on (`sched_getcpu`, for OS threads; retried if the caller migrated) or
//! by an index the caller supplies (a tokio worker thread, a green worker). It must not
//! sleep or block in the kernel: waiters spin on a try-lock, as in the original.
//!
//! Orderings: a successful try-lock is an `Acquire` swap and unlock a `Release` store,
//! so the math of one holder happens-before that of the next (the lock protects no data
//! here, but it must still be a lock). Waiters spin on a relaxed load, which keeps the
//! line shared until the holder releases it.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::cpus;

#[derive(Debug, Default)]
#[repr(align(128))]
struct SpinLock {
    held: AtomicBool,
}

impl SpinLock {
    #[inline]
    fn try_lock(&self) -> bool {
        !self.held.load(Ordering::Relaxed) && !self.held.swap(true, Ordering::Acquire)
    }
}

/// An array of spin locks, one per CPU (or per runtime worker).
#[derive(Debug)]
pub struct SpinLocks {
    locks: Box<[SpinLock]>,
}

/// Proof that lock `index` is held; give it back to [`SpinLocks::unlock`].
#[derive(Debug)]
#[must_use = "a held lock must be unlocked"]
pub struct Held(usize);

impl SpinLocks {
    /// `n` locks (at least one).
    pub fn new(n: usize) -> Self {
        SpinLocks {
            locks: (0..n.max(1)).map(|_| SpinLock::default()).collect(),
        }
    }

    /// Locks for every CPU id the kernel may report.
    pub fn per_cpu() -> Self {
        Self::new(cpus::configured_cpus())
    }

    /// Number of locks.
    pub fn len(&self) -> usize {
        self.locks.len()
    }

    /// Whether there are no locks (never: `new` makes at least one).
    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    /// Takes the lock of the CPU the caller runs on: spin on try-lock; if the caller
    /// migrated meanwhile, drop what it holds and start over on its new CPU.
    pub fn lock_current_cpu(&self) -> Held {
        loop {
            let cpu = cpus::current_cpu() % self.locks.len();
            let lock = &self.locks[cpu];
            while !lock.try_lock() {
                spin_loop();
            }
            if cpus::current_cpu() % self.locks.len() == cpu {
                return Held(cpu);
            }
            lock.held.store(false, Ordering::Release);
        }
    }

    /// Takes lock `key % len()`, spinning on try-lock.
    pub fn lock_index(&self, key: usize) -> Held {
        let index = key % self.locks.len();
        while !self.locks[index].try_lock() {
            spin_loop();
        }
        Held(index)
    }

    /// Releases a lock taken by `lock_current_cpu` or `lock_index`.
    pub fn unlock(&self, held: Held) {
        self.locks[held.0].held.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn index_locks_exclude_each_other() {
        let locks = SpinLocks::new(2);
        let h = locks.lock_index(3);
        assert!(!locks.locks[1].try_lock());
        assert!(locks.locks[0].try_lock());
        locks.unlock(h);
        assert!(locks.locks[1].try_lock());
    }

    #[test]
    fn cpu_locks_serialise_a_counter() {
        let locks = Arc::new(SpinLocks::new(1)); // every CPU maps to lock 0
        let counter = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (locks, counter) = (locks.clone(), counter.clone());
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        let h = locks.lock_current_cpu();
                        // Non-atomic read-modify-write: correct only under the lock.
                        let v = counter.load(Ordering::Relaxed);
                        counter.store(v + 1, Ordering::Relaxed);
                        locks.unlock(h);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(counter.load(Ordering::Relaxed), 40_000);
    }
}
