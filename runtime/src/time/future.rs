//! Timer futures: [`sleep`], [`sleep_until`], [`timeout`], [`interval`].
//!
//! Owns: the public future types and their poll logic on top of the timer
//! driver (`time::driver`). Must not: block or park — the blocking
//! versions are the crate-root [`crate::sleep`] / [`crate::sleep_until`],
//! which park a green thread on its worker's timer heap.
//!
//! A timer is armed at its first `Pending` poll, not at creation (a
//! `timeout` around an operation that completes at once costs nothing),
//! disarmed when the future is dropped, and moved when it is reset (a task
//! already waiting is then woken at the new deadline). The futures work
//! wherever they are polled: under [`block_on_future`](crate::block_on_future)
//! in a green thread or on an OS thread, in [`spawn_future`](crate::spawn_future)
//! tasks, or inside hyper through `compat::hyper::Timer`.

use crate::time::driver::{self, Entry};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// A future that completes at a deadline; made by [`sleep`] and [`sleep_until`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Sleep {
    deadline: Instant,
    /// The armed timer, after the first `Pending` poll.
    entry: Option<Arc<Entry>>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("fired", &self.fired())
            .finish()
    }
}

/// Completes after `duration` (from now).
///
/// ```
/// use std::time::{Duration, Instant};
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// let waited = rt.block_on(|| {
///     let t = Instant::now();
///     eevdf_rt::block_on_future(eevdf_rt::time::sleep(Duration::from_millis(5)));
///     t.elapsed()
/// });
/// assert!(waited >= Duration::from_millis(5));
/// ```
pub fn sleep(duration: Duration) -> Sleep {
    sleep_until(
        Instant::now()
            .checked_add(duration)
            .unwrap_or_else(far_future),
    )
}

/// Completes at `deadline` (at once if it has passed).
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        entry: None,
    }
}

/// About 30 years from now: the deadline of a duration too long for `Instant`.
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86400 * 365 * 30)
}

impl Sleep {
    /// The deadline.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the deadline has passed.
    pub fn is_elapsed(&self) -> bool {
        self.entry.as_ref().is_some_and(|e| e.fired()) || Instant::now() >= self.deadline
    }

    /// Moves the deadline (earlier or later); the future can be polled
    /// again, even after it completed. A task waiting on it (it returned
    /// `Pending` to that task) is woken at the new deadline without
    /// polling again, as with tokio's `Sleep::reset`, or at once if that
    /// deadline has passed.
    pub fn reset(&mut self, deadline: Instant) {
        let waiting = self.entry.take().and_then(|e| e.cancel());
        self.deadline = deadline;
        if let Some(waker) = waiting {
            if Instant::now() >= deadline {
                crate::wake::wake_foreign(waker);
            } else {
                let e = self.entry.insert(driver::arm(deadline));
                e.set_waker(&waker);
                if e.fired() {
                    crate::wake::wake_foreign(waker);
                }
            }
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let entry = match &self.entry {
            Some(e) => e,
            None => {
                if Instant::now() >= self.deadline {
                    return Poll::Ready(());
                }
                let deadline = self.deadline;
                self.entry.insert(driver::arm(deadline))
            }
        };
        if entry.fired() {
            return Poll::Ready(());
        }
        entry.set_waker(cx.waker());
        if entry.fired() {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(e) = self.entry.take() {
            drop(e.cancel());
        }
    }
}

/// The error of a [`timeout`] whose time ran out first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed(());

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(_: Elapsed) -> std::io::Error {
        std::io::ErrorKind::TimedOut.into()
    }
}

/// A future with a time limit; made by [`timeout`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Timeout<F> {
    value: F,
    delay: Sleep,
}

/// Runs `fut` for at most `duration`: `Ok(output)` if it completes first,
/// `Err(Elapsed)` otherwise (and `fut` is dropped with the `Timeout`).
/// `fut` is polled first, so a ready future wins even with a zero duration.
///
/// ```
/// use std::time::Duration;
/// use eevdf_rt::time::{sleep, timeout};
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// rt.block_on(|| {
///     let slow = timeout(Duration::from_millis(1), sleep(Duration::from_secs(10)));
///     assert!(eevdf_rt::block_on_future(slow).is_err());
///     let fast = timeout(Duration::from_secs(10), async { 7 });
///     assert_eq!(eevdf_rt::block_on_future(fast), Ok(7));
/// });
/// ```
pub fn timeout<F: Future>(duration: Duration, fut: F) -> Timeout<F> {
    Timeout {
        value: fut,
        delay: sleep(duration),
    }
}

/// Like [`timeout`], with a deadline.
pub fn timeout_at<F: Future>(deadline: Instant, fut: F) -> Timeout<F> {
    Timeout {
        value: fut,
        delay: sleep_until(deadline),
    }
}

impl<F> Timeout<F> {
    /// The wrapped future.
    pub fn get_ref(&self) -> &F {
        &self.value
    }

    /// Gives the wrapped future back (dropping the timer).
    pub fn into_inner(self) -> F {
        self.value
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `value` is structurally pinned and `delay` is not: no
        // method moves `value` out of a pinned `Timeout` (`into_inner`
        // takes it by value, which needs `Timeout: Unpin` once pinned, i.e.
        // `F: Unpin`), `Timeout` has no `Drop` impl, and it is `Unpin`
        // exactly when `F` is (`Sleep` is `Unpin`).
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: see above; `value` stays where it is for as long as
        // `self` is pinned.
        let value = unsafe { Pin::new_unchecked(&mut this.value) };
        if let Poll::Ready(v) = value.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match Pin::new(&mut this.delay).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed(()))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Ticks at a fixed period; made by [`interval`].
///
/// The first tick completes at once; tick `n` is due at `start + n ×
/// period`. A tick that is late does not move the schedule: the ticks
/// missed meanwhile complete back to back (tokio's default, "burst"), so
/// the long-run rate is the period's.
#[derive(Debug)]
pub struct Interval {
    period: Duration,
    next: Instant,
    sleep: Sleep,
}

/// Ticks every `period` (which must be non-zero), starting now.
///
/// ```
/// use std::time::{Duration, Instant};
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// rt.block_on(|| eevdf_rt::block_on_future(async {
///     let t = Instant::now();
///     let mut iv = eevdf_rt::time::interval(Duration::from_millis(2));
///     for _ in 0..4 { iv.tick().await; }
///     assert!(t.elapsed() >= Duration::from_millis(6));
/// }));
/// ```
///
/// # Panics
/// If `period` is zero.
pub fn interval(period: Duration) -> Interval {
    assert!(
        !period.is_zero(),
        "eevdf_rt::time::interval: the period must be non-zero"
    );
    let now = Instant::now();
    Interval {
        period,
        next: now,
        sleep: sleep_until(now),
    }
}

impl Interval {
    /// Waits for the next tick; returns its scheduled time.
    pub async fn tick(&mut self) -> Instant {
        std::future::poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        match Pin::new(&mut self.sleep).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => {
                let at = self.next;
                self.next = at.checked_add(self.period).unwrap_or_else(far_future);
                self.sleep.reset(self.next);
                Poll::Ready(at)
            }
        }
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }
}
