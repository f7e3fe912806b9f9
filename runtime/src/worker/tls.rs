//! Thread-local access to "the worker I run on" ("the task I am" is
//! `task::current`).
//!
//! Owns: the worker thread-local and the rule that makes it safe with
//! migrating green threads: every read goes through an `#[inline(never)]`
//! function, so no caller can keep a thread-local address computed before
//! a switch (LLVM may otherwise cache the TLS base across a call that, for
//! a green thread, resumes on another OS thread). Callers must not hold the
//! returned references across a switch either: re-fetch after every call
//! that may block, yield or preempt. Must not: be read on behalf of
//! another thread.

use crate::shared::Shared;
use crate::worker::Worker;
use std::cell::Cell;
use std::ptr;

thread_local! {
    static WORKER: Cell<(*const Shared, usize)> = const { Cell::new((ptr::null(), 0)) };
    /// This thread's value of its worker's ownership word (`worker::owner`):
    /// odd while it runs a green thread as the owner.
    static OWN: Cell<u64> = const { Cell::new(0) };
}

/// This thread's expected ownership value (see `worker::owner`).
#[inline(never)]
pub(crate) fn own() -> u64 {
    OWN.with(|o| o.get())
}

/// Records this thread's ownership value.
#[inline(never)]
pub(crate) fn set_own(v: u64) {
    OWN.with(|o| o.set(v));
}

/// [`worker`] and [`own`] in one call (the preemption point's fast path).
#[inline(never)]
pub(crate) fn worker_own() -> Option<(&'static Shared, usize, u64)> {
    let (p, i) = WORKER.with(|w| w.get());
    if p.is_null() {
        None
    } else {
        // SAFETY: as in `worker`.
        Some((unsafe { &*p }, i, OWN.with(|o| o.get())))
    }
}

/// Marks this OS thread as worker `index` of `shared` until [`leave_worker`].
///
/// The caller (the worker thread) keeps an `Arc<Shared>` alive until it
/// calls `leave_worker`.
pub(crate) fn enter_worker(shared: &Shared, index: usize) {
    WORKER.with(|w| w.set((shared as *const Shared, index)));
}

/// Clears the worker mark.
pub(crate) fn leave_worker() {
    WORKER.with(|w| w.set((ptr::null(), 0)));
}

/// This thread's worker mark and ownership value, saved by [`suspend`].
pub(crate) struct Saved {
    worker: (*const Shared, usize),
    own: u64,
    current: *const crate::task::Tcb,
}

/// Clears this thread's worker mark, ownership value and current task, and
/// returns them for [`resume`]. For code that runs another runtime's green
/// threads' destructors on this thread (a runtime's shutdown, called from a
/// green thread or a worker of another runtime): its preemption points and
/// wakeups must not act on this thread's own worker or task.
pub(crate) fn suspend() -> Saved {
    let saved = Saved {
        worker: WORKER.with(|w| w.replace((ptr::null(), 0))),
        own: OWN.with(|o| o.replace(0)),
        current: current().map_or(ptr::null(), |t| t as *const crate::task::Tcb),
    };
    set_current(ptr::null());
    saved
}

/// Puts back what [`suspend`] cleared.
pub(crate) fn resume(saved: Saved) {
    WORKER.with(|w| w.set(saved.worker));
    OWN.with(|o| o.set(saved.own));
    set_current(saved.current);
}

/// The runtime and worker index this OS thread serves, if it is a worker.
#[inline(never)]
pub(crate) fn worker() -> Option<(&'static Shared, usize)> {
    let (p, i) = WORKER.with(|w| w.get());
    if p.is_null() {
        None
    } else {
        // SAFETY: set by `enter_worker` from a `Shared` the worker thread
        // keeps alive (it owns an `Arc`) until `leave_worker`; green code
        // only runs on the worker thread in between. The `'static` is a
        // promise callers keep by not holding the reference across a switch
        // (module docs).
        Some((unsafe { &*p }, i))
    }
}

/// This OS thread's worker, if it is one.
#[inline]
pub(crate) fn this_worker() -> Option<(&'static Shared, &'static Worker)> {
    worker().map(|(s, i)| (s, &s.workers[i]))
}

pub(crate) use crate::task::current::{current, current_ref, set_current};
