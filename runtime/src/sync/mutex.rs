//! A green-aware mutual-exclusion lock.
//!
//! Owns: [`Mutex`] and [`MutexGuard`], and the raw lock they share with
//! [`Condvar`](super::Condvar) (a state byte plus a wait list). Must not:
//! poison (a panic while locked simply unlocks), or switch while its
//! internal list lock is held.
//!
//! # Design
//!
//! The state byte has two bits: `LOCKED` and `PARKED` (someone sleeps in
//! the list). Lock and unlock are one CAS when uncontended. A contended
//! locker spins briefly (only while nobody is parked: spinning green
//! threads hold their worker, so the budget is small), then, under the
//! internal list lock, sets `PARKED` — only while `LOCKED` is still set,
//! else it retries — and sleeps. An unlocker whose CAS fails because
//! `PARKED` is set takes the list lock and wakes the oldest sleeper. All
//! state changes are read-modify-writes on the one byte, and every change
//! of `PARKED` happens under the list lock, so a sleeper is never left
//! behind: either its `PARKED` CAS happens before the unlock (which then
//! takes the slow path and finds it in the list), or the unlock happened
//! first and the CAS fails on the changed byte.
//!
//! # Fairness: barging with one lost race at most
//!
//! Handing the lock to every woken waiter (strict FIFO) makes a lock
//! convoy: the lock stays held, unused, for a whole wake-up latency on
//! every contended release. Pure barging (std's futex mutex) keeps the
//! lock busy but lets a thread that re-locks in a loop starve a sleeper
//! for ever — likely with cooperative green threads, where the releasing
//! thread keeps running. This mutex does both: a woken waiter competes
//! with running threads, but if it loses that race it goes back to the
//! *front* of the list marked as a retrier, and the next unlock that
//! finds a retrier at the front hands the lock over directly (the byte
//! stays `LOCKED`; the new owner is told by its wake token). So the list
//! is FIFO and a waiter loses at most one race after reaching its front:
//! no starvation, and most releases still let running threads through.

use super::platform::{self, AtomicU8, Lock, Ordering};
use super::waitlist::{self, List, Node};
use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};

const LOCKED: u8 = 1;
const PARKED: u8 = 2;

/// Wake token: the lock is yours (it was handed over, still `LOCKED`).
const HANDOFF: u32 = 1;
/// Wake token: the lock was released; compete for it.
const RETRY: u32 = 2;

/// Spin rounds (each 2^i pause hints, i < SPIN_ROUNDS) before sleeping.
/// (Under loom one round: a spin hint is a model yield, and the parking
/// paths are what the models are for.)
const SPIN_ROUNDS: u32 = if cfg!(loom) { 1 } else { 5 };

/// The lock without the data: a state byte and a wait list.
pub(crate) struct RawMutex {
    state: AtomicU8,
    list: Lock<List>,
}

impl RawMutex {
    platform::const_unless_loom! {
        pub(crate) fn new() -> Self {
            RawMutex {
                state: AtomicU8::new(0),
                list: Lock::new(List::new()),
            }
        }
    }

    #[inline]
    pub(crate) fn try_lock(&self) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if s & LOCKED != 0 {
                return false;
            }
            match self.state.compare_exchange_weak(
                s,
                s | LOCKED,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(x) => s = x,
            }
        }
    }

    #[inline]
    pub(crate) fn lock(&self) {
        // The kernel's might_sleep(): honour a pending reschedule before
        // (not while) holding the lock.
        platform::preempt();
        if self
            .state
            .compare_exchange_weak(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_slow();
        }
    }

    #[cold]
    fn lock_slow(&self) {
        let mut spin = 0;
        let mut retrier = false;
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if s & LOCKED == 0 {
                if self
                    .state
                    .compare_exchange_weak(s, s | LOCKED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return;
                }
                continue;
            }
            if s & PARKED == 0 && spin < SPIN_ROUNDS {
                for _ in 0..(1u32 << spin) {
                    platform::spin_hint();
                }
                spin += 1;
                continue;
            }
            let g = self.list.lock();
            let s = self.state.load(Ordering::Relaxed);
            if s & LOCKED == 0 {
                continue;
            }
            if s & PARKED == 0
                && self
                    .state
                    .compare_exchange(s, s | PARKED, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
            {
                continue;
            }
            let node = Node::new(retrier as usize, None);
            match waitlist::block(&self.list, g, |l| l, &node, retrier, || {}, None) {
                // The unlocker kept LOCKED set for us; its token store
                // (SeqCst, after its critical section) is our acquire.
                Some(HANDOFF) => return,
                _ => {
                    retrier = true;
                    spin = 0;
                }
            }
        }
    }

    #[inline]
    pub(crate) fn unlock(&self) {
        if self
            .state
            .compare_exchange(LOCKED, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            self.unlock_slow();
        }
    }

    #[cold]
    fn unlock_slow(&self) {
        let waiter = {
            let mut l = self.list.lock();
            // Nobody changes the byte while we hold LOCKED and the list
            // lock: lockers only CAS it when LOCKED is clear, and PARKED is
            // only set under the list lock.
            let Some(front) = l.front() else {
                self.state.store(0, Ordering::Release);
                return;
            };
            let handoff = front.key() != 0;
            let parked = if l.len() > 1 { PARKED } else { 0 };
            // Publish the new byte before the token (the token store is the
            // new owner's acquire, so it sees this state).
            if handoff {
                self.state.store(LOCKED | parked, Ordering::Relaxed);
            } else {
                self.state.store(parked, Ordering::Release);
            }
            l.wake_front(if handoff { HANDOFF } else { RETRY })
        };
        match waiter {
            Some(w) => platform::wake_then_preempt(w),
            None => platform::preempt(),
        }
    }

    pub(crate) fn is_locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) & LOCKED != 0
    }
}

/// A mutual-exclusion lock for green threads and OS threads, like
/// `std::sync::Mutex` without poisoning.
///
/// A contended `lock` spins briefly, then parks only the calling green
/// thread (an OS thread blocks). Waiters are served in FIFO order with
/// bounded barging: a woken waiter that loses the race to a running thread
/// is handed the lock on the next release (no starvation; see the module
/// docs of `sync::mutex`). A panic while the lock is held unlocks it (no
/// poisoning). `lock` is a preemption point: it honours a pending
/// reschedule before taking the lock.
///
/// ```
/// use eevdf_rt::sync::Mutex;
/// use std::sync::Arc;
///
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let m = Arc::new(Mutex::new(0u64));
/// let hs: Vec<_> = (0..4)
///     .map(|_| {
///         let m = m.clone();
///         rt.spawn(move || {
///             for _ in 0..1000 {
///                 *m.lock() += 1;
///             }
///         })
///     })
///     .collect();
/// for _ in 0..1000 {
///     *m.lock() += 1; // an OS thread takes part too
/// }
/// for h in hs {
///     h.join().unwrap();
/// }
/// assert_eq!(*m.lock(), 5000);
/// ```
pub struct Mutex<T: ?Sized> {
    raw: RawMutex,
    data: UnsafeCell<T>,
}

// SAFETY: the mutex hands out access to `T` to one thread at a time, so it
// may be shared between threads as soon as `T` may be sent between them
// (std's rule).
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}
// SAFETY: owning the mutex is owning the `T`.
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}

impl<T> Mutex<T> {
    platform::const_unless_loom! {
        /// A new unlocked mutex holding `value` (a `const fn`: usable in statics).
        ///
        /// ```
        /// use eevdf_rt::sync::Mutex;
        /// static COUNT: Mutex<u32> = Mutex::new(0);
        /// *COUNT.lock() += 5;
        /// assert_eq!(*COUNT.lock(), 5);
        /// ```
        pub fn new(value: T) -> Self {
            Mutex {
                raw: RawMutex::new(),
                data: UnsafeCell::new(value),
            }
        }
    }

    /// Consumes the mutex and returns the data.
    ///
    /// ```
    /// let m = eevdf_rt::sync::Mutex::new(String::from("x"));
    /// assert_eq!(m.into_inner(), "x");
    /// ```
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks the mutex, parking the caller while another holds it.
    ///
    /// ```
    /// let m = eevdf_rt::sync::Mutex::new(vec![1]);
    /// m.lock().push(2);
    /// assert_eq!(*m.lock(), [1, 2]);
    /// ```
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.raw.lock();
        MutexGuard { mutex: self }
    }

    /// Locks the mutex if it is free; never waits.
    ///
    /// ```
    /// let m = eevdf_rt::sync::Mutex::new(1);
    /// let g = m.try_lock().unwrap();
    /// assert!(m.try_lock().is_none());
    /// drop(g);
    /// assert!(m.try_lock().is_some());
    /// ```
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        if self.raw.try_lock() {
            Some(MutexGuard { mutex: self })
        } else {
            None
        }
    }

    /// Whether the mutex is held right now (a racy snapshot).
    ///
    /// ```
    /// let m = eevdf_rt::sync::Mutex::new(());
    /// let g = m.lock();
    /// assert!(m.is_locked());
    /// drop(g);
    /// assert!(!m.is_locked());
    /// ```
    pub fn is_locked(&self) -> bool {
        self.raw.is_locked()
    }

    #[doc(hidden)]
    pub fn debug_state(&self) -> (u8, usize) {
        (
            self.raw.state.load(Ordering::SeqCst),
            self.raw.list.lock().len(),
        )
    }

    /// Mutable access without locking (the borrow proves exclusivity).
    ///
    /// ```
    /// let mut m = eevdf_rt::sync::Mutex::new(1);
    /// *m.get_mut() += 1;
    /// assert_eq!(*m.lock(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Mutex::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(v: T) -> Self {
        Mutex::new(v)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Mutex");
        match self.try_lock() {
            Some(g) => d.field("data", &&*g),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish_non_exhaustive()
    }
}

/// Access to the data of a locked [`Mutex`]; unlocks when dropped.
///
/// ```
/// let m = eevdf_rt::sync::Mutex::new(0);
/// {
///     let mut g = m.lock();
///     *g += 1;
/// } // unlocked here
/// assert_eq!(*m.lock(), 1);
/// ```
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MutexGuard<'a, T: ?Sized> {
    mutex: &'a Mutex<T>,
}

// SAFETY: sharing a guard shares `&T` (std's rule: `T: Sync`).
unsafe impl<T: ?Sized + Sync> Sync for MutexGuard<'_, T> {}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// The mutex this guard locks (for `Condvar`).
    pub(crate) fn mutex(&self) -> &'a Mutex<T> {
        self.mutex
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while this thread holds the lock.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard exists only while this thread holds the lock,
        // and `&mut self` makes this the only access through it.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        self.mutex.raw.unlock();
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}
