//! Tasks (green threads): the control block, the wake-protocol state, the
//! user-facing handle and builder, and the way a green thread hands control
//! back to its worker.
//!
//! Owns: `Tcb`, its counted reference `TaskRef` (`taskref`) and `state`, task ids (`id`), [`Task`] (a handle to a green thread),
//! [`TaskStats`] (per-task accounting, `stats`),
//! [`Builder`] (spawn options), and `switch_out`. Must not: schedule.

pub(crate) mod builder;
pub(crate) mod current;
#[cfg(test)]
pub(crate) mod fail_next;
pub(crate) mod handle;
pub(crate) mod id;
pub(crate) mod registry;
pub(crate) mod state;
pub(crate) mod stats;
pub(crate) mod taskref;
pub(crate) mod tcb;

pub use builder::Builder;
pub use handle::Task;
pub use stats::TaskStats;
pub(crate) use taskref::TaskRef;
pub(crate) use tcb::Tcb;

pub use crate::runtime::join::JoinHandle;

/// Runs the blocking closure `f` on the runtime's pool of OS threads,
/// outside the workers, and returns a handle to join it — shaped like
/// tokio's `spawn_blocking`. Use it for calls that block the OS thread:
/// `std::fs`, DNS lookups, a `std::sync::Mutex`, C libraries. Joining the
/// handle from a green thread parks only that green thread.
///
/// The pool starts threads on demand, up to
/// [`Builder::max_blocking_threads`](crate::Builder::max_blocking_threads)
/// (default 512); further jobs wait in FIFO order. A thread idle for
/// [`Builder::blocking_keep_alive`](crate::Builder::blocking_keep_alive)
/// (default 10 s) exits. Shutdown does not wait for running jobs (see
/// [`Runtime::shutdown`](crate::Runtime::shutdown)). Code running in the
/// pool may call `spawn` and `spawn_blocking` for the same runtime.
///
/// ```
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// let len = rt.block_on(|| {
///     let h = eevdf_rt::task::spawn_blocking(|| std::fs::read("/proc/self/status").map(|b| b.len()));
///     h.join().unwrap().unwrap()   // parks this green thread only
/// });
/// assert!(len > 0);
/// ```
///
/// # Panics
/// Outside the runtime — on an OS thread that is neither a green thread nor
/// a pool thread (use [`Runtime::spawn_blocking`](crate::Runtime::spawn_blocking)
/// there) — or if the runtime is shut down, or no pool thread can be
/// started while none is running. The exception is [`spawn`](crate::spawn)'s:
/// in a destructor that runs while shutdown unwinds the calling green
/// thread, `f` is dropped unrun and the handle's join reports
/// [`Cancelled`](crate::Cancelled).
pub fn spawn_blocking<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let Some(sh) = crate::runtime::spawn::current_shared() else {
        panic!(
            "eevdf_rt::task::spawn_blocking called outside a runtime; use Runtime::spawn_blocking"
        );
    };
    match crate::runtime::blocking::spawn_blocking(&sh, f) {
        Ok(h) => h,
        // As `spawn`: refused quietly in a destructor that shutdown's
        // unwinding runs, where a panic would abort the process.
        Err(_) if crate::runtime::api::unwound_by_shutdown() => JoinHandle::cancelled(),
        Err(e) => panic!("eevdf_rt::task::spawn_blocking: {e}"),
    }
}

use crate::context::Switch;

/// Hands the worker back to its scheduler with `why`; returns when a
/// worker resumes this green thread (maybe another worker: re-fetch any
/// thread-local state afterwards).
///
/// Panics if called outside a green thread.
#[inline]
pub(crate) fn switch_out(why: Switch) {
    let me = current::current().expect("switch_out called outside a green thread");
    // SAFETY: `me` is `current()`, just read.
    unsafe { switch_out_of(me, why) };
}

/// [`switch_out`] for a caller that has just read `me = current()` (and
/// holds it no further: after the switch it must re-fetch).
///
/// # Safety
/// `me` must be `current()`, read with no switch since: the call suspends
/// the green thread `me` names, which must be the one running this code.
#[inline]
pub(crate) unsafe fn switch_out_of(me: &Tcb, why: Switch) {
    // SAFETY: the caller's contract, passed on.
    unsafe { switch_out_waiting(me, why, || false) }
}

/// [`switch_out_of`] for a wait. `satisfied` runs only when shutdown
/// resumes the green thread to unwind it, and answers whether the wait
/// was already served — a waker handed it a lock, a permit or a message —
/// so that the thread keeps what it was handed instead of dropping it with
/// its stack (see [`resumed_by_shutdown`]).
///
/// # Safety
/// As [`switch_out_of`].
#[inline]
pub(crate) unsafe fn switch_out_waiting(me: &Tcb, why: Switch, satisfied: impl FnOnce() -> bool) {
    debug_assert!(current::current().is_some_and(|c| std::ptr::eq(c, me)));
    if cancel_deferred(me) {
        // A deferred cancellation (only such a thread runs while marked
        // cancelled: shutdown marks them while all are suspended) is
        // raised at its next switch, unless this wait is served already
        // (then it returns at once, as a spurious wakeup would).
        if satisfied() {
            return;
        }
        raise_cancellation(me);
    }
    // SAFETY: `me` is `tls::current()` (the caller's contract), which is
    // only set while `me` runs on this very stack (the worker sets it
    // around the resume), so we are on `me`'s context.
    unsafe { me.suspend.suspend(why) };
    if me.cancelled.load(std::sync::atomic::Ordering::Relaxed) {
        resumed_by_shutdown(me, satisfied);
    }
}

/// The green thread `me` was resumed by its runtime's shutdown, which
/// unwinds it (`runtime::shutdown`, "Unwinding the green threads"). The
/// first such resume raises the cancellation: a panic with a
/// [`Cancelled`](crate::Cancelled) payload, which runs the thread's
/// destructors as it unwinds. A destructor that then blocks (a join, a
/// lock, a sleep, a channel) switches out like any wait, and shutdown
/// resumes it again after giving the others a turn: those later resumes
/// return here as spurious wakeups, and the wait re-checks its condition.
///
/// # A wait already served
///
/// A thread unwound earlier may have released a lock, a permit or sent a
/// message to this one while it slept, handing it over (a mutex's
/// hand-off leaves the lock held *for* the sleeper). Unwinding the
/// sleeper then would drop what it was handed: nobody else would ever
/// get the lock. So when `satisfied()` says the wait was served, the
/// cancellation is deferred: the wait returns normally, the thread runs
/// on with what it got, and its next runtime call that could switch —
/// any switch ([`switch_out_waiting`]) or preemption point
/// ([`raise_deferred_cancellation`]) — raises the cancellation there; its
/// destructors then give back what it holds.
#[cold]
#[inline(never)]
fn resumed_by_shutdown(me: &Tcb, satisfied: impl FnOnce() -> bool) {
    use std::sync::atomic::Ordering::Relaxed;
    if me.unwinding.load(Relaxed) || satisfied() {
        return;
    }
    raise_cancellation(me);
}

/// Whether `me` runs with a deferred cancellation ([`resumed_by_shutdown`]).
#[inline]
pub(crate) fn cancel_deferred(me: &Tcb) -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    me.cancelled.load(Relaxed) && !me.unwinding.load(Relaxed)
}

/// Raises the cancellation of `me` (once: later resumes are spurious).
#[cold]
#[inline(never)]
pub(crate) fn raise_cancellation(me: &Tcb) -> ! {
    me.unwinding
        .store(true, std::sync::atomic::Ordering::Relaxed);
    std::panic::resume_unwind(Box::new(crate::Cancelled));
}

/// Raises a deferred cancellation ([`resumed_by_shutdown`]) at a
/// preemption point of a green thread that runs outside every worker,
/// which only shutdown's unwinding does.
#[cold]
#[inline(never)]
pub(crate) fn raise_deferred_cancellation() {
    if let Some(me) = current::current() {
        if cancel_deferred(me) {
            raise_cancellation(me);
        }
    }
}
