//! The lock for short critical sections: run queues, the worker's stack
//! cache, the task registry and the wait lists of the sync primitives.
//!
//! Owns: [`ShortLock`], a test-and-test-and-set spin lock whose unlock is a
//! plain release store. Must not: be held across a green-thread switch or
//! a blocking call (nothing here could then make progress for a waiter).
//!
//! # Why not `parking_lot::Mutex`
//!
//! Every runtime critical section lasts well under a microsecond, and a
//! switch or a spawn takes several of them. A parking mutex must remember
//! whether a waiter sleeps, so its unlock is a read-modify-write (a
//! `lock`-prefixed instruction, ~4 ns here), on top of the lock's own
//! compare-and-swap. This lock never lets a waiter sleep on it, so nobody
//! needs waking and the unlock is a store: one locked instruction per
//! critical section instead of two (results/2026-12-04/atomics counts
//! them per operation).
//!
//! # Waiting
//!
//! A contended `lock` spins in user space — a plain load (waiters read the
//! line, they do not keep stealing it from the holder) and, when it looks
//! free, a compare-and-swap, with a `pause` between tries — for up to
//! [`SPIN_LIMIT`] tries (tens of µs). Past that the holder is most likely
//! preempted by the OS, and the waiter calls `sched_yield` between tries:
//! the kernel then runs the holder if it waits on the same CPU, and the
//! waiter costs a few hundred nanoseconds of CPU per try otherwise. It
//! never sleeps, so a holder that is itself waiting for the waiter's CPU
//! gets it.
//!
//! # Orderings
//!
//! The compare-and-swap that takes the lock is `Acquire` and the store
//! that releases it is `Release`: everything a holder wrote happens before
//! the next holder's section. The failed loads of a waiter are `Relaxed`:
//! they only decide when to try the compare-and-swap again.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// Tries before a waiter starts yielding its CPU between tries (each try
/// is one load and a `pause`, ~10–40 ns).
pub(crate) const SPIN_LIMIT: u32 = 1 << 11;

/// A lock for critical sections of a few hundred nanoseconds.
pub(crate) struct ShortLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock gives one holder at a time access to `value` (module
// docs, "Orderings"), so sharing the lock between threads shares `T` by
// mutual exclusion, which needs only `T: Send` (as `std::sync::Mutex`).
unsafe impl<T: Send> Sync for ShortLock<T> {}

impl<T> ShortLock<T> {
    /// A new, unlocked lock around `value`.
    pub(crate) const fn new(value: T) -> Self {
        ShortLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Locks, spinning (then yielding the CPU) while another thread holds it.
    #[inline]
    pub(crate) fn lock(&self) -> ShortGuard<'_, T> {
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return ShortGuard::new(self);
        }
        self.lock_contended()
    }

    /// Locks only if the lock is free now.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<ShortGuard<'_, T>> {
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| ShortGuard::new(self))
    }

    #[cold]
    fn lock_contended(&self) -> ShortGuard<'_, T> {
        let mut tries = 0u32;
        loop {
            // Test before test-and-set (module docs, "Waiting").
            if !self.locked.load(Ordering::Relaxed) {
                if let Some(g) = self.try_lock() {
                    return g;
                }
            }
            if tries < SPIN_LIMIT {
                tries += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

impl<T: Default> Default for ShortLock<T> {
    fn default() -> Self {
        ShortLock::new(T::default())
    }
}

impl<T> std::fmt::Debug for ShortLock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShortLock")
            .field("locked", &self.locked.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Access to a [`ShortLock`]'s value; dropping it unlocks. Not `Send`: a
/// section ends on the thread that began it, before any switch.
pub(crate) struct ShortGuard<'a, T> {
    lock: &'a ShortLock<T>,
    _not_send: PhantomData<*const ()>,
}

impl<'a, T> ShortGuard<'a, T> {
    #[inline]
    fn new(lock: &'a ShortLock<T>) -> Self {
        ShortGuard {
            lock,
            _not_send: PhantomData,
        }
    }
}

impl<T> Deref for ShortGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock (taken with Acquire), so no
        // other reference to the value exists until it is dropped.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for ShortGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only access.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for ShortGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn contended_counting_is_exact() {
        let l = Arc::new(ShortLock::new(0u64));
        let ts: Vec<_> = (0..4)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        *l.lock() += 1;
                    }
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(*l.lock(), 80_000);
    }

    #[test]
    fn try_lock_fails_while_held_and_unlock_frees_it() {
        let l = ShortLock::new(1u32);
        let g = l.lock();
        assert!(l.try_lock().is_none());
        drop(g);
        *l.try_lock().expect("free after the guard is dropped") += 1;
        assert_eq!(*l.lock(), 2);
    }

    /// A holder that keeps the lock far longer than the spin phase (as if
    /// the OS had preempted it): the waiter goes on trying, yielding its
    /// CPU, and gets the lock once it is released, never before.
    #[test]
    fn a_waiter_outlasts_a_long_holder() {
        let l = Arc::new(ShortLock::new(0u32));
        let g = l.lock();
        let l2 = l.clone();
        let waiter = std::thread::spawn(move || {
            let t = std::time::Instant::now();
            let v = *l2.lock();
            (v, t.elapsed())
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut g = g;
        *g = 7;
        drop(g);
        let (seen, waited) = waiter.join().unwrap();
        assert_eq!(seen, 7, "the waiter entered before the holder left");
        assert!(waited >= std::time::Duration::from_millis(90), "{waited:?}");
    }
}
