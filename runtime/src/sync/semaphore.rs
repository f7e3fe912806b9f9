//! A green-aware counting semaphore.
//!
//! Owns: [`Semaphore`] and [`SemaphorePermit`]: a state word (permits and a
//! "someone sleeps" flag) and a FIFO wait list. Must not: switch while its
//! internal lock is held.
//!
//! # Design
//!
//! The word is `permits << 1 | PARKED`. Acquire and release are one CAS
//! while nobody sleeps. Sleepers are served strictly FIFO: a release that
//! finds `PARKED` takes the internal lock and hands its permit directly
//! to the oldest sleeper (the permit never becomes visible, so nobody
//! barges past a sleeper). `PARKED` is set — by a CAS that fails if the
//! word changed — under the internal lock in the same critical section
//! that queues the sleeper, and cleared under it when the list empties, so
//! a release either sees the flag and finds the sleeper, or made its
//! permit visible before the sleeper's CAS (which then fails, and the
//! sleeper takes the permit).

use super::platform::{self, AtomicUsize, Lock, Ordering};
use super::waitlist::{self, List, Node};
use std::fmt;
use std::time::{Duration, Instant};

const PARKED: usize = 1;
const ONE: usize = 2;

/// Wake token: a permit was handed to you.
const HANDOFF: u32 = 1;

/// A counting semaphore for green threads and OS threads.
///
/// Permits are handed to sleepers in FIFO order. `acquire` is a
/// preemption point.
///
/// ```
/// use eevdf_rt::sync::{Mutex, Semaphore};
/// use std::sync::Arc;
///
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let sem = Arc::new(Semaphore::new(2)); // at most two at a time
/// let inside = Arc::new(Mutex::new((0, 0))); // (now, max)
/// let hs: Vec<_> = (0..8)
///     .map(|_| {
///         let (sem, inside) = (sem.clone(), inside.clone());
///         rt.spawn(move || {
///             let _permit = sem.acquire();
///             {
///                 let mut g = inside.lock();
///                 g.0 += 1;
///                 g.1 = g.1.max(g.0);
///             }
///             eevdf_rt::yield_now();
///             inside.lock().0 -= 1;
///         })
///     })
///     .collect();
/// for h in hs {
///     h.join().unwrap();
/// }
/// assert!(inside.lock().1 <= 2);
/// ```
pub struct Semaphore {
    state: AtomicUsize,
    list: Lock<List>,
}

impl Semaphore {
    platform::const_unless_loom! {
        /// A semaphore with `permits` permits available (a `const fn`: usable
        /// in statics).
        ///
        /// # Panics
        /// If `permits` exceeds `usize::MAX / 2` (one bit of the state word is a flag).
        ///
        /// ```
        /// let s = eevdf_rt::sync::Semaphore::new(3);
        /// assert_eq!(s.available_permits(), 3);
        /// ```
        pub fn new(permits: usize) -> Self {
            assert!(
                permits <= usize::MAX >> 1,
                "Semaphore::new: too many permits (at most usize::MAX / 2)"
            );
            Semaphore {
                state: AtomicUsize::new(permits * ONE),
                list: Lock::new(List::new()),
            }
        }
    }

    /// Permits available right now (a racy snapshot).
    ///
    /// ```
    /// let s = eevdf_rt::sync::Semaphore::new(1);
    /// let p = s.acquire();
    /// assert_eq!(s.available_permits(), 0);
    /// drop(p);
    /// assert_eq!(s.available_permits(), 1);
    /// ```
    pub fn available_permits(&self) -> usize {
        self.state.load(Ordering::Relaxed) / ONE
    }

    /// Takes a permit, parking while none is available. The permit goes
    /// back when the returned guard drops (or call
    /// [`SemaphorePermit::forget`] and [`release`](Semaphore::release) by hand).
    ///
    /// ```
    /// let s = eevdf_rt::sync::Semaphore::new(1);
    /// let p = s.acquire();
    /// assert!(s.try_acquire().is_none());
    /// drop(p);
    /// ```
    pub fn acquire(&self) -> SemaphorePermit<'_> {
        platform::preempt();
        if !self.try_take() {
            self.acquire_slow(None);
        }
        SemaphorePermit { sem: self }
    }

    /// Takes a permit if one is available, without waiting.
    ///
    /// ```
    /// let s = eevdf_rt::sync::Semaphore::new(1);
    /// let p = s.try_acquire().unwrap();
    /// assert!(s.try_acquire().is_none());
    /// drop(p);
    /// ```
    pub fn try_acquire(&self) -> Option<SemaphorePermit<'_>> {
        if self.try_take() {
            Some(SemaphorePermit { sem: self })
        } else {
            None
        }
    }

    /// Takes a permit, waiting at most `timeout`; `None` if it timed out.
    ///
    /// ```
    /// use std::time::Duration;
    /// let s = eevdf_rt::sync::Semaphore::new(0);
    /// assert!(s.acquire_timeout(Duration::from_millis(1)).is_none());
    /// s.release();
    /// assert!(s.acquire_timeout(Duration::from_millis(1)).is_some());
    /// ```
    pub fn acquire_timeout(&self, timeout: Duration) -> Option<SemaphorePermit<'_>> {
        platform::preempt();
        if self.try_take() || self.acquire_slow(platform::deadline_after(timeout)) {
            Some(SemaphorePermit { sem: self })
        } else {
            None
        }
    }

    /// Adds a permit: hands it to the oldest sleeper if there is one.
    /// Use with [`SemaphorePermit::forget`], or to grow the semaphore.
    ///
    /// # Panics
    /// If the semaphore already has `usize::MAX / 2` permits available
    /// (the most [`new`](Self::new) accepts); the count is left unchanged.
    ///
    /// ```
    /// let s = eevdf_rt::sync::Semaphore::new(0);
    /// s.release();
    /// s.acquire().forget();
    /// assert_eq!(s.available_permits(), 0);
    /// ```
    pub fn release(&self) {
        let mut s = self.state.load(Ordering::Relaxed);
        while s & PARKED == 0 {
            let Some(next) = s.checked_add(ONE) else {
                too_many_permits()
            };
            match self
                .state
                .compare_exchange_weak(s, next, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(x) => s = x,
            }
        }
        self.release_slow();
    }

    #[inline]
    fn try_take(&self) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if s < ONE {
                return false;
            }
            match self
                .state
                .compare_exchange_weak(s, s - ONE, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(x) => s = x,
            }
        }
    }

    /// Returns whether a permit was taken (false: timed out).
    #[cold]
    fn acquire_slow(&self, deadline: Option<Instant>) -> bool {
        loop {
            if self.try_take() {
                return true;
            }
            let g = self.list.lock();
            let s = self.state.load(Ordering::Relaxed);
            if s >= ONE {
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
            let node = Node::new(0, None);
            match waitlist::block(&self.list, g, |l| l, &node, false, || {}, deadline) {
                Some(_) => return true, // HANDOFF: the releaser's permit is ours
                None => {
                    // Timed out and unlinked: clear the flag if we were the last.
                    let l = self.list.lock();
                    if l.is_empty() {
                        self.state.fetch_and(!PARKED, Ordering::Relaxed);
                    }
                    return false;
                }
            }
        }
    }

    #[cold]
    fn release_slow(&self) {
        let w = {
            let mut l = self.list.lock();
            let more = l.len() > 1;
            match l.wake_front(HANDOFF) {
                Some(w) => {
                    if !more {
                        self.state.fetch_and(!PARKED, Ordering::Relaxed);
                    }
                    Some(w)
                }
                None => {
                    // A stale flag (the sleepers timed out): the permit
                    // becomes visible.
                    let r = self
                        .state
                        .fetch_update(Ordering::Release, Ordering::Relaxed, |s| {
                            (s & !PARKED).checked_add(ONE)
                        });
                    if r.is_err() {
                        drop(l);
                        too_many_permits();
                    }
                    None
                }
            }
        };
        if let Some(w) = w {
            platform::wake_then_preempt(w);
        }
    }
}

/// `release` beyond the most permits a semaphore can count.
#[cold]
#[inline(never)]
fn too_many_permits() -> ! {
    panic!("Semaphore::release: too many permits (at most usize::MAX / 2)")
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("available_permits", &self.available_permits())
            .finish_non_exhaustive()
    }
}

/// A permit taken from a [`Semaphore`]; gives it back when dropped.
///
/// Dropping it is a [`Semaphore::release`], so it panics like `release`
/// if extra `release` calls have already filled the semaphore to its limit
/// (`usize::MAX / 2` permits).
///
/// ```
/// let s = eevdf_rt::sync::Semaphore::new(1);
/// {
///     let _p = s.acquire();
///     assert_eq!(s.available_permits(), 0);
/// }
/// assert_eq!(s.available_permits(), 1);
/// ```
#[must_use = "the permit is released at once if unused"]
pub struct SemaphorePermit<'a> {
    sem: &'a Semaphore,
}

impl SemaphorePermit<'_> {
    /// Keeps the permit taken: dropping no longer releases it (release it
    /// later with [`Semaphore::release`], or never).
    ///
    /// ```
    /// let s = eevdf_rt::sync::Semaphore::new(1);
    /// s.acquire().forget();
    /// assert_eq!(s.available_permits(), 0);
    /// s.release();
    /// assert_eq!(s.available_permits(), 1);
    /// ```
    pub fn forget(self) {
        std::mem::forget(self);
    }
}

impl Drop for SemaphorePermit<'_> {
    fn drop(&mut self) {
        self.sem.release();
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit").finish_non_exhaustive()
    }
}
