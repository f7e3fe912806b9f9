//! Running a `Future` to completion from a green thread (or an OS thread),
//! and running one as a green task.
//!
//! Owns: [`block_on_future`] and its waker (an atomic "notified" flag plus
//! the [`Waiter`] to wake), and [`spawn_future`] (a green thread that
//! block-on's the future). Must not: poll from more than the calling
//! thread. There is no separate async executor: every future task is a
//! green thread, scheduled by EEVDF like any other (its nice and slice
//! apply), parked while its future is `Pending`. The runtime's I/O
//! (`io::poll`, `compat`) and the timer futures (`time`) wake these
//! wakers, so futures written against tokio's I/O traits run here too.
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

use crate::runtime::join::JoinHandle;
use crate::runtime::spawn;
use crate::shared::Shared;
use crate::task::builder::SpawnOpts;
use crate::wake::waiter::{self, Waiter};
use std::future::Future;
use std::io;
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
/// `std::future::ready`, …). This crate's own async I/O (the net and pipe
/// types with the `tokio-io` / `futures-io` features, [`io::AsyncFd`](crate::io::AsyncFd))
/// and timer futures ([`time`](crate::time)) do; *tokio's* own types
/// (`tokio::net`, `tokio::time`) need a tokio runtime and do not work here.
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

/// Runs `fut` as a green task on the calling green thread's runtime and
/// returns its [`JoinHandle`]: join it from a green thread or an OS
/// thread, like any green thread's, or `.await` it from another future
/// (the handle is a future too).
///
/// The task is an ordinary green thread that polls the future and parks
/// while it is `Pending` ([`block_on_future`]): nice, slice and the other
/// per-task options apply to it (use [`task::Builder`](crate::task::Builder)
/// with `block_on_future` inside to set them, or
/// [`set_nice`](crate::set_nice) / [`set_slice`](crate::set_slice) from
/// within the future).
///
/// # Panics
/// Outside the runtime (neither a green thread nor one of its pool
/// threads), or if the runtime is shut down (like [`spawn`](crate::spawn)).
///
/// ```
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let v = rt.block_on(|| {
///     let h = eevdf_rt::spawn_future(async {
///         eevdf_rt::time::sleep(std::time::Duration::from_millis(1)).await;
///         42
///     });
///     h.join().unwrap()
/// });
/// assert_eq!(v, 42);
/// ```
pub fn spawn_future<F>(fut: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let Some(sh) = spawn::current_shared() else {
        panic!("eevdf_rt::spawn_future called outside a runtime; use Runtime::spawn");
    };
    // A preemption point, as every spawn from a green thread is.
    match spawn_future_on(&sh, SpawnOpts::default_opts(), fut, true) {
        Ok(h) => h,
        Err(e) => panic!("eevdf_rt::spawn_future: {e}"),
    }
}

/// Spawns a green thread on `sh` that runs `fut` to completion; then, with
/// `preempt` and on a green thread, passes a preemption point (see
/// `spawn::spawn_green` and `spawn_green_no_preempt` for when not to).
///
/// The green thread's closure is moved onto its new stack at the first
/// switch, which takes at most 1 KiB (corosensei's limit); a larger future
/// (hyper's connection futures are several KiB) travels boxed.
pub(crate) fn spawn_future_on<F>(
    sh: &Arc<Shared>,
    opts: SpawnOpts,
    fut: F,
    preempt: bool,
) -> io::Result<JoinHandle<F::Output>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let h = if std::mem::size_of::<F>() <= INLINE_FUTURE_MAX {
        spawn::spawn_green_no_preempt(sh, opts, move || block_on_future(fut))
    } else {
        let fut = Box::pin(fut);
        spawn::spawn_green_no_preempt(sh, opts, move || block_on_future(fut))
    }?;
    if preempt {
        crate::runtime::api::preempt_point();
    }
    Ok(h)
}

/// The largest future moved onto a green stack unboxed (the closure around
/// it, its result packet and the context's own state share the 1 KiB).
const INLINE_FUTURE_MAX: usize = 256;
