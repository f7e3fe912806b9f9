//! Waiters: who to wake — a green thread or an OS thread — and how to park
//! the caller until woken.
//!
//! Owns: the one abstraction every blocking primitive (join, futex, mutex,
//! channels, I/O) uses so that green threads and plain OS threads can wait
//! for each other: [`Waiter`] (what a waker holds) and [`park`] (how the
//! current context sleeps, green-aware). Must not: keep wait queues (the
//! primitives do).
//!
//! # Protocol
//!
//! ```text
//! sleeper                                   waker
//! register Waiter::current() (under lock)   make the condition true (SeqCst or under that lock)
//! park(|| condition(), deadline)            take the waiter (under the lock), then waiter.wake()
//! ```
//!
//! `park` marks a green thread `BLOCKED` *before* evaluating the condition
//! (task::state rule 1), so a wake that lands between the check and the
//! switch turns the switch into a no-op; OS threads rely on `park`/`unpark`
//! token semantics. Either may return spuriously: callers loop.

use crate::context::Switch;
use crate::task::{TaskRef, Tcb};
use crate::time::clock;
use crate::worker::tls;
use std::thread::Thread;
use std::time::Instant;

/// Something that can be woken.
#[derive(Clone, Debug)]
pub(crate) enum Waiter {
    /// A green thread.
    Green(TaskRef),
    /// An OS thread (outside the runtime, or any thread that is not running a green thread).
    Thread(Thread),
}

impl Waiter {
    /// The current green thread, or the current OS thread.
    pub(crate) fn current() -> Waiter {
        match tls::current_ref() {
            Some(t) => Waiter::Green(t),
            None => Waiter::Thread(std::thread::current()),
        }
    }

    /// Wakes it. Returns whether a green thread was actually woken by this
    /// call (OS threads always report `true`).
    pub(crate) fn wake(&self) -> bool {
        match self {
            Waiter::Green(t) => super::wake_task(t),
            Waiter::Thread(th) => {
                th.unpark();
                true
            }
        }
    }

    /// Wakes it, returning the clock reading the wake made, if any (for
    /// the caller's preemption point). `sync`: the caller usually blocks
    /// next (see the WA_SYNC feature).
    pub(crate) fn wake_reporting_clock(&self, sync: bool) -> Option<u64> {
        match self {
            Waiter::Green(t) => super::wake_task_reporting_clock(t, sync),
            Waiter::Thread(th) => {
                th.unpark();
                None
            }
        }
    }
}

/// Parks the caller until woken, `ready()` is true, or `deadline` passes
/// (spurious returns allowed). Returns `false` if the deadline passed.
pub(crate) fn park(ready: impl Fn() -> bool, deadline: Option<Instant>) -> bool {
    park_reporting(ready, deadline).0
}

/// [`park`], also telling whether the green thread switched out (`false`
/// when `ready()` held or the deadline had passed before it could, and
/// always on an OS thread): a caller that owes a preemption point when it
/// did not switch passes one itself.
pub(crate) fn park_reporting(ready: impl Fn() -> bool, deadline: Option<Instant>) -> (bool, bool) {
    park_reporting_or_cancel(&ready, deadline, &ready)
}

/// [`park`] with [`park_reporting_or_cancel`]'s `on_cancel`.
pub(crate) fn park_or_cancel(
    ready: impl Fn() -> bool,
    deadline: Option<Instant>,
    on_cancel: impl FnOnce() -> bool,
) -> bool {
    park_reporting_or_cancel(ready, deadline, on_cancel).0
}

/// [`park_reporting`] for a wait whose "served" test must be exact when
/// shutdown unwinds the green thread: `on_cancel` runs (at most once)
/// only then, and answers whether the wait was served, so that the thread
/// keeps what it was handed (`task::resumed_by_shutdown`). If it answers
/// `false`, the wait must be over for good — no waker may serve it later —
/// because the thread unwinds (a wait list unlinks the node under its
/// lock). [`park_reporting`] uses `ready()`.
pub(crate) fn park_reporting_or_cancel(
    ready: impl Fn() -> bool,
    deadline: Option<Instant>,
    on_cancel: impl FnOnce() -> bool,
) -> (bool, bool) {
    match tls::current() {
        Some(me) => park_green(me, ready, deadline.map(clock::from_instant), on_cancel),
        None => {
            if ready() {
                return (true, false);
            }
            let awake = match deadline {
                None => {
                    std::thread::park();
                    true
                }
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return (ready(), false);
                    }
                    std::thread::park_timeout(d - now);
                    ready() || Instant::now() < d
                }
            };
            (awake, false)
        }
    }
}

/// A green thread's [`park_reporting`], with its deadline (if any) on the
/// runtime's clock (`time::clock`), so that a caller that has one already
/// (a sleep) converts nothing. Returns (`false` if the deadline passed,
/// whether it switched out).
fn park_green(
    me: &Tcb,
    ready: impl Fn() -> bool,
    dl: Option<u64>,
    on_cancel: impl FnOnce() -> bool,
) -> (bool, bool) {
    if crate::task::cancel_deferred(me) {
        // Shutdown is unwinding this thread, which runs on after a served
        // wait (`task::resumed_by_shutdown`): this wait ends it, unless it
        // is served already. (Not marked blocked: it stays dead to wakers.)
        if on_cancel() {
            return (true, false);
        }
        crate::task::raise_cancellation(me);
    }
    if let Some(dl) = dl {
        if clock::now() >= dl {
            return (ready(), false);
        }
    }
    me.st.set_blocked();
    // A condition that holds already ends the block here, unless a waker
    // claimed the task first (task::state rule 5): then it switches out as
    // blocked all the same, and that waker enqueues it.
    if ready() && me.st.cancel_block() {
        return (true, false);
    }
    let why = match dl {
        Some(dl) => Switch::BlockUntil(dl),
        None => Switch::Block,
    };
    // SAFETY: `me` is `tls::current()` (every caller reads it just before);
    // `ready()` is a condition check that does not switch.
    unsafe { crate::task::switch_out_waiting(me, why, on_cancel) };
    // Re-fetch: we may be on another worker now.
    if let Some(dl) = dl {
        if let Some(me) = tls::current() {
            me.bump_timer_seq();
        }
        return (ready() || clock::now() < dl, true);
    }
    (true, true)
}

/// Blocks the current green thread until the runtime's clock reaches
/// `dl` (`time::clock` nanoseconds) or it is woken. Returns `None` on an
/// OS thread (the caller waits another way), else whether the deadline is
/// still ahead (a spurious return: callers loop).
pub(crate) fn park_green_until(dl: u64) -> Option<bool> {
    tls::current().map(|me| park_green(me, || false, Some(dl), || false).0)
}
