//! The lock for short critical sections: run queues and the wait lists of
//! the sync primitives.
//!
//! Owns: [`ShortLock`], a `parking_lot::Mutex` acquired by spinning first.
//! `parking_lot`'s own slow path yields the thread (`sched_yield`, a
//! syscall) after a handful of spins, then parks; the runtime's critical
//! sections last well under a microsecond, so a contended acquisition
//! should wait in user space: test (a plain load) and test-and-set, with a
//! `pause` between tries, for up to [`SPIN_LIMIT`] tries (tens of µs), and
//! only then fall back to the parking lock (the holder was probably
//! preempted by the OS). Must not: be held across a green-thread switch or
//! a blocking call.

use parking_lot::{Mutex, MutexGuard};

/// Tries before falling back to the parking lock (each try is one load and
/// a `pause`, ~10–40 ns).
pub(crate) const SPIN_LIMIT: u32 = 1 << 11;

/// A mutex for critical sections of a few hundred nanoseconds.
#[derive(Debug, Default)]
pub(crate) struct ShortLock<T> {
    inner: Mutex<T>,
}

impl<T> ShortLock<T> {
    /// A new lock around `value`.
    pub(crate) const fn new(value: T) -> Self {
        ShortLock {
            inner: Mutex::new(value),
        }
    }

    /// Locks, spinning before it parks.
    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        if let Some(g) = self.inner.try_lock() {
            return g;
        }
        self.lock_contended()
    }

    /// Locks only if the lock is free now.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.inner.try_lock()
    }

    #[cold]
    fn lock_contended(&self) -> MutexGuard<'_, T> {
        for _ in 0..SPIN_LIMIT {
            std::hint::spin_loop();
            // Test before test-and-set: waiters read the line, they do not
            // keep stealing it from the holder.
            if !self.inner.is_locked() {
                if let Some(g) = self.inner.try_lock() {
                    return g;
                }
            }
        }
        self.inner.lock()
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
}
