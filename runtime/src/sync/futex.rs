//! Futexes: wait on and wake an `AtomicU32` by address, for green threads
//! and OS threads alike.
//!
//! Owns: the address-hashed bucket table (like the kernel's futex hash: a
//! fixed array of buckets, each an internal lock plus a wait list of
//! `(address, waiter, token)` nodes), and [`Futex`], its public face. Must
//! not: allocate on the wait or wake path (nodes live on the sleeper's
//! stack; only a wake of more than eight waiters at once spills), or hold
//! a bucket lock across a switch.
//!
//! # The protocol (the kernel's, `kernel/futex/waitwake.c`)
//!
//! ```text
//! waiter                                     waker
//! waiters += 1                               *addr = new value          (the caller)
//! fence(SeqCst)                  [A]         fence(SeqCst)              [B]
//! lock bucket                                if waiters == 0: return 0
//! if *addr != expected: waiters -= 1; return lock bucket
//! push node(addr), unlock, park              take up to n nodes with this address,
//!                                            waiters -= taken, unlock, wake them
//! ```
//!
//! *No lost wakeup.* The value check happens under the bucket lock, so a
//! waker that takes the lock after the waiter pushed its node finds it,
//! and one that took it before has stored the new value before its lock
//! (the waiter then sees it and does not sleep). The lock-free "nobody
//! waits" early-out of the waker is the kernel's `futex_hb_waiters_pending`:
//! with the two `SeqCst` fences, either fence [A] precedes [B] in their
//! total order — then the waker's load sees the increment and takes the
//! lock — or [B] precedes [A] — then the waiter's value load, after [A],
//! sees the caller's new value (C++ [atomics.fences]: fence-to-fence
//! ordering). Both cannot miss. The waiter count is decremented by
//! whoever unlinks a node, after it is unlinked, so it never
//! under-counts the nodes in a bucket. The sleep itself is
//! `waitlist::block`, whose token handshake is documented there; a timed
//! out waiter removes its own node under the lock, and if a waker had
//! already dequeued it, it counts as woken (so `wake`'s count is exact).
//!
//! Modelled under loom (`sync/loom_tests.rs`).

use super::platform::{self, fence, AtomicUsize, Lock, Ordering};
use super::waitlist::{self, List, Node, WakeSet};
use crossbeam_utils::CachePadded;
use std::time::Instant;

/// Token a woken futex waiter receives.
const WOKEN: u32 = 1;

/// Number of buckets of the process-wide table (a power of two). The
/// kernel uses 256 per CPU; green threads block on few distinct words at
/// once, and a collision only costs a longer list walk.
#[cfg(not(loom))]
const BUCKETS: usize = 256;

/// One hash bucket.
struct Bucket {
    /// Waiters queued here or about to check the value (kernel:
    /// `futex_hash_bucket::waiters`).
    waiters: AtomicUsize,
    list: Lock<List>,
}

impl Bucket {
    #[cfg(not(loom))]
    const fn new() -> Self {
        Bucket {
            waiters: AtomicUsize::new(0),
            list: Lock::new(List::new()),
        }
    }

    #[cfg(loom)]
    fn new() -> Self {
        Bucket {
            waiters: AtomicUsize::new(0),
            list: Lock::new(List::new()),
        }
    }
}

/// Gives a waiter's count back when it leaves, unless a waker (which
/// handed the node a token) already did.
struct Uncount<'a> {
    waiters: &'a AtomicUsize,
    node: &'a Node,
}

impl Drop for Uncount<'_> {
    fn drop(&mut self) {
        if !self.node.was_woken() {
            self.waiters.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// A futex hash table: `N` buckets (a power of two) of wait lists keyed by
/// address. The process has one ([`Futex`] uses it); loom models build
/// their own.
pub(crate) struct FutexTable<const N: usize> {
    buckets: [CachePadded<Bucket>; N],
}

impl<const N: usize> FutexTable<N> {
    /// An empty table.
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        assert!(N.is_power_of_two());
        FutexTable {
            buckets: [const { CachePadded::new(Bucket::new()) }; N],
        }
    }

    /// An empty table.
    #[cfg(loom)]
    #[allow(clippy::new_without_default)]
    pub(crate) fn new() -> Self {
        assert!(N.is_power_of_two());
        FutexTable {
            buckets: std::array::from_fn(|_| CachePadded::new(Bucket::new())),
        }
    }

    /// The bucket of `key` (Fibonacci hashing of the address; the low bits
    /// of an aligned address carry no information).
    #[inline]
    fn bucket(&self, key: usize) -> &Bucket {
        let bits = N.trailing_zeros();
        let h = if bits == 0 {
            0
        } else {
            ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
        };
        &self.buckets[h]
    }

    /// Sleeps on `key` if `still_expected()` holds under the bucket lock,
    /// until woken by [`wake`](Self::wake) on the same key or until
    /// `deadline`. Returns `true` if it timed out (queued, not woken, and
    /// the deadline passed); `false` if it was woken or did not sleep.
    pub(crate) fn wait(
        &self,
        key: usize,
        still_expected: impl Fn() -> bool,
        deadline: Option<Instant>,
    ) -> bool {
        let b = self.bucket(key);
        b.waiters.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst); // [A]
        let g = b.list.lock();
        if !still_expected() {
            drop(g);
            b.waiters.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        let node = Node::new(key, None);
        // Whoever unlinks the node gives its count back: a waker does it
        // under the lock; if we unlinked it ourselves (timeout, or the
        // unwinding of a parked green thread at shutdown), this guard.
        let _uncount = Uncount {
            waiters: &b.waiters,
            node: &node,
        };
        waitlist::block(&b.list, g, |l| l, &node, false, || {}, deadline).is_none()
    }

    /// Wakes up to `n` sleepers on `key`, oldest first; returns how many
    /// it woke. Call after making the condition the sleepers wait for true.
    /// (The loom models' entry; [`Futex::wake`] uses the reporting form.)
    #[cfg(loom)]
    pub(crate) fn wake(&self, key: usize, n: usize) -> usize {
        self.wake_reporting_clock(key, n).0
    }

    /// [`wake`](Self::wake), also returning the clock reading a one-waiter
    /// wake made, if any, for the waker's preemption point.
    pub(crate) fn wake_reporting_clock(&self, key: usize, n: usize) -> (usize, Option<u64>) {
        if n == 0 {
            return (0, None);
        }
        let b = self.bucket(key);
        fence(Ordering::SeqCst); // [B]
        if b.waiters.load(Ordering::Relaxed) == 0 {
            return (0, None);
        }
        if n == 1 {
            // The common case (a token, a lock): no wake set to fill and drop.
            let w = {
                let mut l = b.list.lock();
                let w = l.wake_key_one(key, WOKEN);
                if w.is_some() {
                    b.waiters.fetch_sub(1, Ordering::Relaxed);
                }
                w
            };
            return match w {
                Some(w) => (1, platform::wake_reporting_clock(w)),
                None => (0, None),
            };
        }
        let mut set = WakeSet::new();
        let woken = {
            let mut l = b.list.lock();
            let k = l.wake_key(key, n, WOKEN, &mut set);
            b.waiters.fetch_sub(k, Ordering::Relaxed);
            k
        };
        set.wake();
        (woken, None)
    }
}

#[cfg(not(loom))]
pub use public::Futex;

#[cfg(not(loom))]
mod public {
    use super::{FutexTable, BUCKETS};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    static TABLE: FutexTable<BUCKETS> = FutexTable::new();

    #[inline]
    fn key(a: &AtomicU32) -> usize {
        a as *const AtomicU32 as usize
    }

    /// Wait on and wake a 32-bit atomic by address, like the Linux futex
    /// (`FUTEX_WAIT` / `FUTEX_WAKE`), for green threads and OS threads
    /// alike: a green thread parks only itself, an OS thread blocks.
    ///
    /// Waiters live in a process-wide table of address-hashed buckets; the
    /// value is checked under the bucket's lock, so a wake between the
    /// check and the sleep is never lost. Waking is FIFO per address.
    /// Waiting and waking do not allocate. A waker calls
    /// [`preempt_point`](crate::preempt_point) after waking (the resched
    /// flag its wake may have set is honoured there).
    ///
    /// The one-token semaphore schbench uses (post: CAS 0→1, wake only if
    /// the CAS succeeded; wait: CAS 1→0 or futex-wait while 0):
    ///
    /// ```
    /// use eevdf_rt::sync::Futex;
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    ///
    /// fn post(w: &AtomicU32) {
    ///     if w.compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
    ///         Futex::wake(w, 1);
    ///     }
    /// }
    /// fn wait(w: &AtomicU32) {
    ///     while w.compare_exchange(1, 0, Ordering::SeqCst, Ordering::SeqCst).is_err() {
    ///         Futex::wait(w, 0);
    ///     }
    /// }
    ///
    /// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
    /// let word = Arc::new(AtomicU32::new(0));
    /// let w2 = word.clone();
    /// let h = rt.spawn(move || wait(&w2)); // a green thread sleeps
    /// post(&word);                          // an OS thread wakes it
    /// h.join().unwrap();
    /// ```
    #[derive(Debug, Clone, Copy)]
    pub struct Futex {
        _private: (),
    }

    impl Futex {
        /// Sleeps while `*atomic == expected`: returns at once if the value
        /// differs, otherwise when a [`wake`](Futex::wake) on the same
        /// atomic picks this waiter. Spurious returns are allowed by the
        /// contract (callers re-check the value in a loop), though this
        /// implementation only returns on a wake or a changed value.
        ///
        /// ```
        /// use eevdf_rt::sync::Futex;
        /// use std::sync::atomic::AtomicU32;
        /// let a = AtomicU32::new(1);
        /// Futex::wait(&a, 0); // value differs: returns at once
        /// ```
        pub fn wait(atomic: &AtomicU32, expected: u32) {
            Self::wait_inner(atomic, expected, None);
        }

        /// Like [`wait`](Futex::wait), but gives up after `timeout`.
        /// Returns `true` if it **timed out** (it slept and no wake picked
        /// it before the timeout); `false` if it was woken or the value
        /// already differed. A waiter that a wake dequeued just as its
        /// timeout passed counts as woken (and was counted by that wake).
        ///
        /// ```
        /// use eevdf_rt::sync::Futex;
        /// use std::sync::atomic::AtomicU32;
        /// use std::time::Duration;
        /// let a = AtomicU32::new(0);
        /// assert!(Futex::wait_timeout(&a, 0, Duration::from_millis(1)));  // nobody wakes it
        /// assert!(!Futex::wait_timeout(&a, 7, Duration::from_millis(1))); // value differs
        /// ```
        pub fn wait_timeout(atomic: &AtomicU32, expected: u32, timeout: Duration) -> bool {
            Self::wait_inner(atomic, expected, Instant::now().checked_add(timeout))
        }

        /// Like [`wait_timeout`](Futex::wait_timeout) with an absolute
        /// deadline. Returns `true` if it timed out.
        ///
        /// ```
        /// use eevdf_rt::sync::Futex;
        /// use std::sync::atomic::AtomicU32;
        /// use std::time::{Duration, Instant};
        /// let a = AtomicU32::new(0);
        /// assert!(Futex::wait_until(&a, 0, Instant::now() + Duration::from_millis(1)));
        /// ```
        pub fn wait_until(atomic: &AtomicU32, expected: u32, deadline: Instant) -> bool {
            Self::wait_inner(atomic, expected, Some(deadline))
        }

        fn wait_inner(atomic: &AtomicU32, expected: u32, deadline: Option<Instant>) -> bool {
            TABLE.wait(
                key(atomic),
                || atomic.load(Ordering::SeqCst) == expected,
                deadline,
            )
        }

        /// Wakes up to `n` threads waiting on `atomic` (oldest first) and
        /// returns exactly how many it woke. Change the value before
        /// calling. Costs a fence and a load when nobody waits in the
        /// atomic's bucket.
        ///
        /// ```
        /// use eevdf_rt::sync::Futex;
        /// use std::sync::atomic::AtomicU32;
        /// let a = AtomicU32::new(0);
        /// assert_eq!(Futex::wake(&a, 1), 0); // nobody waits
        /// ```
        pub fn wake(atomic: &AtomicU32, n: usize) -> usize {
            let (k, now) = TABLE.wake_reporting_clock(key(atomic), n);
            if k > 0 {
                // Reuses the wake's clock reading when it made one.
                crate::runtime::api::preempt_point_at(now);
            }
            k
        }

        /// Wakes every thread waiting on `atomic`; returns how many.
        ///
        /// ```
        /// use eevdf_rt::sync::Futex;
        /// use std::sync::atomic::AtomicU32;
        /// let a = AtomicU32::new(0);
        /// assert_eq!(Futex::wake_all(&a), 0);
        /// ```
        pub fn wake_all(atomic: &AtomicU32) -> usize {
            Self::wake(atomic, usize::MAX)
        }
    }
}
