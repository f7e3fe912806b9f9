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
//! # No switch inside a poll
//!
//! A future's `poll` runs on one OS thread from start to end: while a
//! green thread is inside [`block_on_future`]'s poll, the runtime's own
//! preemption points (a spawn or [`spawn_future`] from an executor, a
//! wake, an I/O poll, the join of a task that has finished) do not switch, so the green thread cannot move to another worker thread
//! in the middle of the poll. Async libraries keep per-thread caches
//! (hyper's date header is a `thread_local!` `RefCell`), and the compiler
//! may compute a thread-local's address once for a whole function: a
//! switch inside the poll, then a resume on another thread, would make
//! the rest of that poll use the first thread's copy while that thread
//! uses it too. (For the same reason each poll is a call of its own, never
//! inlined into the loop that parks between polls.) Instead, a runtime I/O
//! poll that finds a preemption due wakes its own waker and returns `Pending` (as tokio's cooperative
//! budget does), and `block_on_future` passes the preemption point
//! between polls. Only a blocking call inside a poll (a lock, a channel,
//! the join of a task that has not finished) and an explicit
//! [`yield_now`](crate::yield_now) or [`preempt_point`](crate::preempt_point)
//! still switch there; async code awaits [`preempt_point_async`] instead.
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
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
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
        let polled = {
            let _inside = Polling::enter();
            poll_once(fut.as_mut(), &mut cx)
        };
        if let Poll::Ready(v) = polled {
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

/// One poll, never inlined into [`block_on_future`]'s loop: the compiler
/// would otherwise be free to compute the address of a thread-local the
/// future uses once, before the loop, and use it after the park in between
/// resumed the green thread on another worker thread (module docs).
#[inline(never)]
fn poll_once<F: Future>(fut: std::pin::Pin<&mut F>, cx: &mut Context<'_>) -> Poll<F::Output> {
    fut.poll(cx)
}

/// Marks the calling green thread as inside a poll while it lives (module
/// docs, "No switch inside a poll"); nothing on an OS thread.
struct Polling(Option<&'static AtomicU32>);

impl Polling {
    fn enter() -> Polling {
        Polling(crate::worker::tls::current().map(|me| {
            me.polling.fetch_add(1, Ordering::Relaxed);
            &me.polling
        }))
    }
}

impl Drop for Polling {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            p.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Whether the calling green thread is inside a [`block_on_future`] poll.
#[inline]
pub(crate) fn polling_now() -> bool {
    crate::worker::tls::current().is_some_and(|me| me.polling.load(Ordering::Relaxed) != 0)
}

/// The preemption point of a runtime I/O poll, before its system call.
/// Inside a [`block_on_future`] poll it does not switch: it answers
/// whether a preemption is due, and then the poll wakes its waker and
/// returns `Pending`, so that `block_on_future` switches between polls
/// (module docs). Under another executor it is an ordinary preemption
/// point and answers `false`.
pub(crate) fn poll_preempt_point() -> bool {
    if polling_now() {
        return crate::runtime::api::preempt_due();
    }
    crate::preempt_point();
    false
}

/// The preemption point for async code: what
/// [`preempt_point`](crate::preempt_point) is to a loop on a green thread.
/// Await it in a long computation inside a future. Under
/// [`block_on_future`] (and so in [`spawn_future`] tasks and hyper's
/// connections), if a reschedule or a duty of the worker is due, the
/// future it is part of returns `Pending` once and is polled again at once
/// after `block_on_future` has passed the preemption point between polls;
/// otherwise it completes at once. A switch never happens inside the poll
/// (module docs). Elsewhere it is [`preempt_point`](crate::preempt_point).
///
/// ```
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// let sum = rt.block_on(|| {
///     eevdf_rt::block_on_future(async {
///         let mut sum = 0u64;
///         for i in 0..1_000u64 {
///             sum += i;
///             eevdf_rt::preempt_point_async().await;
///         }
///         sum
///     })
/// });
/// assert_eq!(sum, 499_500);
/// ```
pub fn preempt_point_async() -> impl Future<Output = ()> {
    let mut yielded = false;
    std::future::poll_fn(move |cx| {
        if !yielded && poll_preempt_point() {
            yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(())
    })
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
/// threads), or if the runtime is shut down, with the same exception as
/// [`spawn`](crate::spawn): in a destructor that runs while shutdown
/// unwinds the calling green thread, the future is dropped unpolled and
/// the handle's join reports [`Cancelled`](crate::Cancelled).
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
        // As `spawn`: refused quietly in a destructor that shutdown's
        // unwinding runs, where a panic would abort the process.
        Err(_) if crate::runtime::api::unwound_by_shutdown() => JoinHandle::cancelled(),
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
        // The runtime's own point, which does not switch inside a poll
        // (module docs): `spawn_future` is called from async code.
        crate::runtime::api::preempt_point_at(None);
    }
    Ok(h)
}

/// The largest future moved onto a green stack unboxed (the closure around
/// it, its result packet and the context's own state share the 1 KiB).
const INLINE_FUTURE_MAX: usize = 256;
