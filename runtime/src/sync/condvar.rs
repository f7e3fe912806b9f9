//! A green-aware condition variable.
//!
//! Owns: [`Condvar`] — a wait list of sleepers and the count notifiers
//! read to skip the list when nobody waits. Must not: hold its internal
//! lock while releasing or taking the user's mutex, or switch while it is
//! held.
//!
//! # No lost notification
//!
//! A waiter pushes its node (under the condvar's internal lock) *before*
//! it releases the user's mutex (`waitlist::block`'s `before_park`). A
//! notifier that changed the condition under that mutex therefore either
//! ran before the waiter took the mutex (the waiter sees the condition and
//! does not wait) or after the waiter released it — by then the node is in
//! the list, and the waiter count, incremented before the release, is
//! visible to the notifier (the mutex release/acquire orders them), so the
//! notifier does not skip the list.

use super::mutex::MutexGuard;
use super::platform::{self, AtomicUsize, Lock, Ordering};
use super::waitlist::{self, List, Node, WakeSet};
use std::fmt;
use std::time::{Duration, Instant};

const NOTIFIED: u32 = 1;

/// A condition variable for green threads and OS threads, used with
/// [`Mutex`](super::Mutex), like `std::sync::Condvar`.
///
/// Waiting parks only the calling green thread. Notifications wake
/// waiters in FIFO order. `wait` may return spuriously only in the sense
/// std allows (always re-check the condition, or use
/// [`wait_while`](Condvar::wait_while)). Notifying calls
/// [`preempt_point`](crate::preempt_point) after waking someone.
///
/// ```
/// use eevdf_rt::sync::{Condvar, Mutex};
/// use std::sync::Arc;
///
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let pair = Arc::new((Mutex::new(false), Condvar::new()));
/// let p2 = pair.clone();
/// let h = rt.spawn(move || {
///     let (m, cv) = &*p2;
///     let mut ready = m.lock();
///     while !*ready {
///         ready = cv.wait(ready);
///     }
/// });
/// let (m, cv) = &*pair;
/// *m.lock() = true;
/// cv.notify_one();
/// h.join().unwrap();
/// ```
pub struct Condvar {
    /// Nodes in `list` (maintained under its lock; read without it by
    /// notifiers, see the module docs).
    waiters: AtomicUsize,
    list: Lock<List>,
}

impl Condvar {
    platform::const_unless_loom! {
        /// A new condition variable (a `const fn`: usable in statics).
        ///
        /// ```
        /// let cv = eevdf_rt::sync::Condvar::new();
        /// cv.notify_all(); // nobody waits: a no-op
        /// ```
        pub fn new() -> Self {
            Condvar {
                waiters: AtomicUsize::new(0),
                list: Lock::new(List::new()),
            }
        }
    }

    /// Releases the guard's mutex, sleeps until notified, and locks the
    /// mutex again.
    ///
    /// ```
    /// use eevdf_rt::sync::{Condvar, Mutex};
    /// use std::sync::Arc;
    /// let pair = Arc::new((Mutex::new(0), Condvar::new()));
    /// let p2 = pair.clone();
    /// let t = std::thread::spawn(move || {
    ///     *p2.0.lock() = 1;
    ///     p2.1.notify_all();
    /// });
    /// let mut g = pair.0.lock();
    /// while *g == 0 {
    ///     g = pair.1.wait(g);
    /// }
    /// t.join().unwrap();
    /// ```
    pub fn wait<'a, T: ?Sized>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.wait_deadline(guard, None).0
    }

    /// Waits until `condition` returns `false` (checked before the first
    /// wait and after each wake, with the mutex held).
    ///
    /// ```
    /// use eevdf_rt::sync::{Condvar, Mutex};
    /// use std::sync::Arc;
    /// let pair = Arc::new((Mutex::new(true), Condvar::new()));
    /// let p2 = pair.clone();
    /// let t = std::thread::spawn(move || {
    ///     *p2.0.lock() = false;
    ///     p2.1.notify_one();
    /// });
    /// let g = pair.1.wait_while(pair.0.lock(), |pending| *pending);
    /// assert!(!*g);
    /// drop(g);
    /// t.join().unwrap();
    /// ```
    pub fn wait_while<'a, T: ?Sized, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        mut condition: F,
    ) -> MutexGuard<'a, T>
    where
        F: FnMut(&mut T) -> bool,
    {
        while condition(&mut *guard) {
            guard = self.wait(guard);
        }
        guard
    }

    /// Like [`wait`](Condvar::wait), giving up after `timeout`. Returns the
    /// guard and whether it **timed out** (no notification picked it
    /// before the timeout).
    ///
    /// ```
    /// use eevdf_rt::sync::{Condvar, Mutex};
    /// use std::time::Duration;
    /// let (m, cv) = (Mutex::new(()), Condvar::new());
    /// let (_g, timed_out) = cv.wait_timeout(m.lock(), Duration::from_millis(1));
    /// assert!(timed_out);
    /// ```
    pub fn wait_timeout<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> (MutexGuard<'a, T>, bool) {
        self.wait_deadline(guard, platform::deadline_after(timeout))
    }

    /// Waits until `condition` returns `false` or `timeout` passes. Returns
    /// the guard and whether it timed out (the condition still held when
    /// the time ran out).
    ///
    /// ```
    /// use eevdf_rt::sync::{Condvar, Mutex};
    /// use std::time::Duration;
    /// let (m, cv) = (Mutex::new(1), Condvar::new());
    /// let (g, timed_out) = cv.wait_timeout_while(m.lock(), Duration::from_millis(1), |v| *v == 1);
    /// assert!(timed_out);
    /// assert_eq!(*g, 1);
    /// ```
    pub fn wait_timeout_while<'a, T: ?Sized, F>(
        &self,
        mut guard: MutexGuard<'a, T>,
        timeout: Duration,
        mut condition: F,
    ) -> (MutexGuard<'a, T>, bool)
    where
        F: FnMut(&mut T) -> bool,
    {
        let deadline = platform::deadline_after(timeout);
        loop {
            if !condition(&mut *guard) {
                return (guard, false);
            }
            if let Some(d) = deadline {
                if Instant::now() >= d {
                    return (guard, true);
                }
            }
            guard = self.wait_deadline(guard, deadline).0;
        }
    }

    fn wait_deadline<'a, T: ?Sized>(
        &self,
        guard: MutexGuard<'a, T>,
        deadline: Option<Instant>,
    ) -> (MutexGuard<'a, T>, bool) {
        let mutex = guard.mutex();
        let g = self.list.lock();
        self.waiters.fetch_add(1, Ordering::Relaxed);
        let node = Node::new(0, None);
        // Counts us out if we leave unnotified: a timeout, or shutdown
        // unwinding this green thread while it sleeps.
        let leave = Leave {
            waiters: &self.waiters,
            node: &node,
        };
        let timed_out = waitlist::block(
            &self.list,
            g,
            |l| l,
            &node,
            false,
            // Release the user's mutex only once our node is in the list.
            move || drop(guard),
            deadline,
        )
        .is_none();
        drop(leave);
        // A notification we took but cannot act on — shutdown unwinds us
        // while we wait for the mutex — goes to the next waiter.
        let pass_on = node.was_woken().then_some(PassOn(self));
        let g = mutex.lock();
        std::mem::forget(pass_on);
        (g, timed_out)
    }

    /// Wakes one waiter, if any (the oldest).
    ///
    /// ```
    /// let cv = eevdf_rt::sync::Condvar::new();
    /// cv.notify_one();
    /// ```
    pub fn notify_one(&self) {
        if self.waiters.load(Ordering::Relaxed) == 0 {
            return;
        }
        let w = {
            let mut l = self.list.lock();
            let w = l.wake_front(NOTIFIED);
            if w.is_some() {
                self.waiters.fetch_sub(1, Ordering::Relaxed);
            }
            w
        };
        if let Some(w) = w {
            platform::wake_then_preempt(w);
        }
    }

    /// Wakes every waiter.
    ///
    /// ```
    /// let cv = eevdf_rt::sync::Condvar::new();
    /// cv.notify_all();
    /// ```
    pub fn notify_all(&self) {
        if self.waiters.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut set = WakeSet::new();
        {
            let mut l = self.list.lock();
            let n = l.wake_all(NOTIFIED, &mut set);
            self.waiters.fetch_sub(n, Ordering::Relaxed);
        }
        if !set.is_empty() {
            set.wake();
            platform::preempt();
        }
    }
}

impl Default for Condvar {
    fn default() -> Self {
        Condvar::new()
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condvar").finish_non_exhaustive()
    }
}

/// Counts a waiter out of [`Condvar`]'s `waiters` if it leaves its wait
/// without a notification (the notifier counts the others out).
struct Leave<'a> {
    waiters: &'a AtomicUsize,
    node: &'a Node,
}

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        if !self.node.was_woken() {
            self.waiters.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Passes a notification on if dropped (forgotten once the notified
/// waiter holds the mutex again).
struct PassOn<'a>(&'a Condvar);

impl Drop for PassOn<'_> {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}
