//! Running a `Future` to completion from a green thread (or an OS thread).
//!
//! Owns: [`block_on_future`] and its waker (an atomic "notified" flag plus
//! the [`Waiter`] to wake). Must not: poll from more than the calling
//! thread, or spawn anything — it is not an async executor, only a bridge
//! that lets runtime-agnostic futures (futures-rs channels, `join_all`,
//! hand-written state machines) be awaited by blocking code.
//!
//! # No lost wakeup
//!
//! The waker stores `notified = true` (`SeqCst`) and then wakes the
//! waiter; the poller, after a `Pending`, parks with `notified` as its
//! wait condition (`wake::waiter::park` marks a green thread blocked
//! before checking it) and consumes it with a swap before polling again.
//! A wake during the poll, between the poll and the park, or long before
//! (even before the first poll) leaves the flag set, so the next check
//! sees it; a wake after the future finished is a spurious wake of a later
//! park, which every `park` caller tolerates.

use crate::wake::waiter::{self, Waiter};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

struct Signal {
    notified: AtomicBool,
    /// Set when the future completed: later wakes need not wake anyone.
    done: AtomicBool,
    waiter: Waiter,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Only the first wake after a consume needs to wake the thread.
        if !self.notified.swap(true, Ordering::SeqCst) && !self.done.load(Ordering::Relaxed) {
            self.waiter.wake();
        }
    }
}

/// Polls `fut` to completion on the calling thread and returns its output.
///
/// Inside a green thread, a `Pending` future parks only this green thread;
/// its [`Waker`] (which may be called from any thread, any number of
/// times, before or after the park) makes it runnable again. On an OS
/// thread, it blocks the thread (thread park/unpark). The future does not
/// need any particular async runtime: it must only wake its waker when it
/// can make progress (futures-rs channels and combinators,
/// `std::future::ready`, …). Futures that need a tokio reactor or timer
/// do not work here (there is none).
///
/// ```
/// use futures::channel::oneshot;
/// use std::time::Duration;
///
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let (tx, rx) = oneshot::channel();
/// std::thread::spawn(move || {
///     std::thread::sleep(Duration::from_millis(2));
///     tx.send(42).unwrap(); // wakes the green thread from an OS thread
/// });
/// let v = rt.block_on(move || eevdf_rt::block_on_future(async move { rx.await.unwrap() + 1 }));
/// assert_eq!(v, 43);
/// assert_eq!(eevdf_rt::block_on_future(async { 7 }), 7); // on an OS thread
/// ```
pub fn block_on_future<F: Future>(fut: F) -> F::Output {
    let signal = Arc::new(Signal {
        notified: AtomicBool::new(false),
        done: AtomicBool::new(false),
        waiter: Waiter::current(),
    });
    let waker = Waker::from(signal.clone());
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            signal.done.store(true, Ordering::Relaxed);
            return v;
        }
        // The poll may have woken others: honour a pending reschedule.
        crate::preempt_point();
        while !signal.notified.swap(false, Ordering::SeqCst) {
            waiter::park(|| signal.notified.load(Ordering::SeqCst), None);
        }
    }
}
