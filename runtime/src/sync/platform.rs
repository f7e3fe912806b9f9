//! What the wait lists are built from: the internal lock, atomics, who to
//! wake and how to park — the runtime's own pieces in a normal build,
//! loom's under `--cfg loom` so the wait-list protocol can be model-checked.
//!
//! Owns: the one switch between `parking_lot` + `wake::waiter` (normal
//! build) and `loom::sync` + `loom::thread` park/unpark (model checking).
//! Must not: contain logic — every primitive above it is the same code in
//! both builds.

use std::time::Instant;

/// Defines a constructor that is a `const fn` in a normal build (usable in
/// a `static`, as std's are) and a plain `fn` under loom, whose atomics and
/// locks cannot be made in a constant. The body is written once.
macro_rules! const_unless_loom {
    ($(#[$attr:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty $body:block) => {
        $(#[$attr])*
        #[cfg(not(loom))]
        $vis const fn $name($($arg: $ty),*) -> $ret $body

        $(#[$attr])*
        #[cfg(loom)]
        $vis fn $name($($arg: $ty),*) -> $ret $body
    };
}
pub(crate) use const_unless_loom;

#[cfg(not(loom))]
mod imp {
    use std::time::Instant;

    pub(crate) use std::sync::atomic::{fence, AtomicU32, AtomicU8, AtomicUsize, Ordering};

    /// The internal lock of a primitive: short critical sections only, never
    /// held across a green-thread switch.
    pub(crate) type Lock<T> = crate::lock::ShortLock<T>;
    /// Its guard.
    pub(crate) type LockGuard<'a, T> = crate::lock::ShortGuard<'a, T>;

    /// Who to wake: a green thread or an OS thread.
    pub(crate) type Waiter = crate::wake::waiter::Waiter;

    #[inline]
    pub(crate) fn current() -> Waiter {
        Waiter::current()
    }

    #[inline]
    pub(crate) fn wake(w: Waiter) {
        w.wake();
    }

    /// Wakes, returning the clock reading the wake made, if any, for the
    /// waker's preemption point (one `rdtsc` fewer per futex wake).
    #[inline]
    pub(crate) fn wake_reporting_clock(w: Waiter) -> Option<u64> {
        w.wake_reporting_clock(false)
    }

    /// Wakes, then passes the caller's preemption point, reusing the clock
    /// reading the wake made (a lock's or a condition variable's hand-over).
    #[inline]
    pub(crate) fn wake_then_preempt(w: Waiter) {
        crate::runtime::api::preempt_point_at(w.wake_reporting_clock(false));
    }

    /// Wakes with the sync hint (the caller usually blocks next: WA_SYNC),
    /// then passes the caller's preemption point, reusing the clock
    /// reading the wake made (one `rdtsc` fewer per channel message).
    #[inline]
    pub(crate) fn wake_sync_then_preempt(w: Waiter) {
        crate::runtime::api::preempt_point_at(w.wake_reporting_clock(true));
    }

    #[inline]
    pub(crate) fn park(ready: impl Fn() -> bool, deadline: Option<Instant>) -> bool {
        crate::wake::waiter::park(ready, deadline)
    }

    /// [`park`], also telling whether a green thread switched out; the
    /// "served" test, if shutdown unwinds the green thread, is `on_cancel`
    /// (`wake::waiter::park_reporting_or_cancel`).
    #[inline]
    pub(crate) fn park_reporting_or_cancel(
        ready: impl Fn() -> bool,
        deadline: Option<Instant>,
        on_cancel: impl FnOnce() -> bool,
    ) -> (bool, bool) {
        crate::wake::waiter::park_reporting_or_cancel(ready, deadline, on_cancel)
    }

    /// The runtime's own preemption point (after a release that woke
    /// others): it does not switch inside a future's poll.
    #[inline]
    pub(crate) fn preempt() {
        crate::runtime::api::preempt_point_at(None);
    }

    #[inline]
    pub(crate) fn spin_hint() {
        std::hint::spin_loop();
    }
}

#[cfg(loom)]
mod imp {
    use std::time::Instant;

    pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU8, AtomicUsize, Ordering};

    /// loom's mutex behind parking_lot's `lock()` signature.
    pub(crate) struct Lock<T>(loom::sync::Mutex<T>);
    pub(crate) type LockGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> Lock<T> {
        pub(crate) fn new(v: T) -> Self {
            Lock(loom::sync::Mutex::new(v))
        }
        pub(crate) fn lock(&self) -> LockGuard<'_, T> {
            self.0.lock().unwrap()
        }
    }

    impl<T: std::fmt::Debug> std::fmt::Debug for Lock<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Lock")
        }
    }

    pub(crate) type Waiter = loom::thread::Thread;

    pub(crate) fn current() -> Waiter {
        loom::thread::current()
    }

    pub(crate) fn wake(w: Waiter) {
        w.unpark();
    }

    pub(crate) fn wake_reporting_clock(w: Waiter) -> Option<u64> {
        w.unpark();
        None
    }

    pub(crate) fn wake_then_preempt(w: Waiter) {
        w.unpark();
    }

    pub(crate) fn wake_sync_then_preempt(w: Waiter) {
        w.unpark();
    }

    /// A deadline is modelled as "already passed": the waiter gives up at
    /// once, which exercises the timeout path against concurrent wakers.
    pub(crate) fn park(ready: impl Fn() -> bool, deadline: Option<Instant>) -> bool {
        if ready() {
            return true;
        }
        if deadline.is_some() {
            return false;
        }
        loom::thread::park();
        true
    }

    /// No green threads under loom: nothing ever switches.
    pub(crate) fn park_reporting(
        ready: impl Fn() -> bool,
        deadline: Option<Instant>,
    ) -> (bool, bool) {
        (park(ready, deadline), false)
    }

    /// No runtime shutdown under loom: `on_cancel` never runs.
    pub(crate) fn park_reporting_or_cancel(
        ready: impl Fn() -> bool,
        deadline: Option<Instant>,
        _on_cancel: impl FnOnce() -> bool,
    ) -> (bool, bool) {
        park_reporting(ready, deadline)
    }

    pub(crate) fn preempt() {}

    pub(crate) fn spin_hint() {
        loom::thread::yield_now();
    }
}

pub(crate) use imp::*;

/// `now + d`, saturating to "no deadline" when it overflows.
#[inline]
pub(crate) fn deadline_after(d: std::time::Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}
