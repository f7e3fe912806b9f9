//! "The green thread I am": the thread-local pointer to the running task.
//!
//! Owns: the `CURRENT` thread-local, set by a worker around each resume,
//! and the rule that makes it safe with migrating green threads: every
//! read goes through an `#[inline(never)]` function, so no caller can keep
//! a thread-local address computed before a switch (LLVM may otherwise
//! cache the TLS base across a call that, for a green thread, resumes on
//! another OS thread; `runtime/tests/rt_regressions.rs` has a test that
//! migrates a task in a loop and reads its identity after every park).
//! Callers must not hold the returned references across a switch either:
//! re-fetch after every call that may block, yield or preempt. Must not:
//! know about workers (that is `worker::tls`).

use super::{TaskRef, Tcb};
use std::cell::Cell;
use std::ptr;

thread_local! {
    static CURRENT: Cell<*const Tcb> = const { Cell::new(ptr::null()) };
}

/// Sets the running task (the worker does this around each resume).
#[inline(never)]
pub(crate) fn set_current(t: *const Tcb) {
    CURRENT.with(|c| c.set(t));
}

/// The green thread running on this OS thread, if any.
#[inline(never)]
pub(crate) fn current() -> Option<&'static Tcb> {
    let p = CURRENT.with(|c| c.get());
    if p.is_null() {
        None
    } else {
        // SAFETY: the worker sets CURRENT to a task it holds a strong
        // reference to for the whole resume and clears it afterwards; only
        // code running on that task's stack, during that resume, reads it.
        Some(unsafe { &*p })
    }
}

/// A strong reference to the running green thread, if any.
#[inline(never)]
pub(crate) fn current_ref() -> Option<TaskRef> {
    let p = CURRENT.with(|c| c.get());
    if p.is_null() {
        None
    } else {
        // SAFETY: `p` comes from `TaskRef::as_ptr` of a task the worker
        // holds a reference to for the whole resume (see `current`).
        Some(unsafe { TaskRef::clone_from_ptr(p) })
    }
}
