//! Readiness for futures: nonblocking I/O that returns `Poll::Pending` and
//! is woken through a [`Waker`] instead of parking the caller.
//!
//! Owns: [`Source::poll_io`], the one loop behind every `poll_read` /
//! `poll_write` of the async traits (`crate::compat`) and behind
//! [`AsyncFd`](crate::io::AsyncFd), and [`PollIo`], how a net or pipe type
//! hands its [`Source`] to that loop. Must not: park or block — a future's
//! caller decides how to wait (`block_on_future` parks its green thread).
//!
//! # The loop
//!
//! ```text
//! snap = readiness word (tick + bits)        reactor, on an event
//! op() → WouldBlock                          publish bits, tick += 1 (SeqCst RMW)
//! clear(snap): CAS off this direction's bits lock waiters; take the waker
//!   (fails if an event came since: retry)    unlock; waker.wake()
//! lock waiters; waker slot = cx.waker()
//! unlock; re-read readiness (SeqCst): ready → retry, else Pending
//! ```
//!
//! **No lost wakeup.** The waker is stored under the record's waiter lock,
//! and the reactor takes it under that lock *after* publishing the
//! readiness. If the store comes first, the reactor finds the waker; if
//! the reactor's critical section comes first, its publication precedes
//! our lock acquisition, so the re-read sees the bits. An event between
//! the snapshot and the clear bumps the tick, so the clear fails and we
//! retry instead of erasing it (see `io::reactor`, "Readiness word").
//! One waker per direction: the task that polled last is woken, as with
//! every `AsyncRead`/`AsyncWrite` object.
//!
//! # Registration
//!
//! As for the blocking path, lazily: the first `WouldBlock` registers the
//! descriptor with the reactor of the calling green thread's runtime. An
//! object that was never registered and is polled outside a green thread
//! gets an error (there is no reactor to wake it) rather than a hang. Once
//! registered, it may be polled from anywhere — another runtime's green
//! thread, or `block_on_future` on an OS thread: the reactor wakes the
//! waker, whoever it belongs to.

use crate::io::reactor;
use crate::io::source::{Direction, Source};
use std::io;
use std::os::fd::AsRawFd;
use std::task::{Context, Poll};

/// The error of a future polled outside any runtime on an I/O object that
/// is not registered with a reactor yet.
pub(crate) fn no_reactor_error() -> io::Error {
    io::Error::other(
        "eevdf-rt: this I/O object would block, but it is not registered with a runtime's \
         reactor and the future is not polled in a green thread; poll it first inside a \
         runtime (e.g. in Runtime::block_on or spawn_future)",
    )
}

impl<T: AsRawFd> Source<T> {
    /// Runs `op` once (more if readiness arrives meanwhile): its result,
    /// or `Pending` with `cx`'s waker registered for `dir`'s next
    /// readiness when it reports `WouldBlock`. Module docs: the protocol.
    pub(crate) fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
        mut op: impl FnMut(&T) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        // As in the blocking path (`Source::do_io`): an I/O call is a
        // preemption point, so a future that never waits cannot keep its
        // worker; it comes before the call, so that a green thread unwound
        // there drops no completed result. Inside `block_on_future` it does
        // not switch: a due preemption makes the poll yield instead
        // (`future`, "No switch inside a poll").
        if crate::future::poll_preempt_point() {
            // Registered first, as a call that found nothing to do would
            // have left it: a `Pending` from a green thread means the
            // stream is registered (the caller may go on polling it from
            // an OS thread, `io` module docs).
            if let Err(e) = self.register_current() {
                return Poll::Ready(Err(e));
            }
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        loop {
            let reg = self.registered();
            let snap = reg.map_or(0, |(_, sched)| sched.snapshot());
            match op(self.get_ref()) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => return Poll::Ready(r),
            }
            let Some((reactor, sched)) = reg else {
                // Registering queues an event if the fd became ready since
                // `op`, and we retry at once anyway.
                match self.register_current() {
                    Ok(true) => continue,
                    Ok(false) => return Poll::Ready(Err(no_reactor_error())),
                    Err(e) => return Poll::Ready(Err(e)),
                }
            };
            if reactor.is_shutdown() {
                return Poll::Ready(Err(reactor::shutdown_error()));
            }
            if sched.clear(snap, dir) {
                continue; // an event arrived since the snapshot
            }
            sched.set_task_waker(dir, cx.waker());
            if sched.is_ready(dir) {
                continue;
            }
            return Poll::Pending;
        }
    }

    /// Waits (as a future) for `dir` readiness without doing I/O: `Ready`
    /// with the readiness word to pass to `clear` once the caller's
    /// operation reports `WouldBlock`.
    pub(crate) fn poll_ready(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
    ) -> Poll<io::Result<usize>> {
        loop {
            let Some((reactor, sched)) = self.registered() else {
                match self.register_current() {
                    // A fresh registration: the kernel queues an event if
                    // the fd is ready; until the reactor dispatches it,
                    // assume it is (the caller's operation finds out).
                    Ok(true) => return Poll::Ready(Ok(0)),
                    Ok(false) => return Poll::Ready(Err(no_reactor_error())),
                    Err(e) => return Poll::Ready(Err(e)),
                }
            };
            if reactor.is_shutdown() {
                return Poll::Ready(Err(reactor::shutdown_error()));
            }
            let snap = sched.snapshot();
            if snap & dir.ready_mask() != 0 {
                return Poll::Ready(Ok(snap));
            }
            sched.set_task_waker(dir, cx.waker());
            if sched.is_ready(dir) {
                continue;
            }
            return Poll::Pending;
        }
    }

    /// Forgets `dir`'s readiness observed in `snap` (the operation after
    /// [`poll_ready`](Self::poll_ready) reported `WouldBlock`), unless an
    /// event arrived since.
    pub(crate) fn clear_ready(&self, snap: usize, dir: Direction) {
        if let Some((_, sched)) = self.registered() {
            sched.clear(snap, dir);
        }
    }
}

/// A type whose I/O goes through a [`Source`]: what the async-trait
/// implementations need. Implemented next to each type with
/// [`impl_poll_io!`].
#[cfg_attr(
    not(any(feature = "tokio-io", feature = "futures-io")),
    allow(dead_code)
)]
pub(crate) trait PollIo {
    /// The wrapped std or mio object.
    type Io: AsRawFd;
    /// Whether the descriptor is a socket: writes then send with
    /// `MSG_NOSIGNAL` (`sys::send`), as the blocking ones do.
    const SOCKET: bool;
    /// The descriptor and its registration.
    fn source(&self) -> &Source<Self::Io>;
}

/// `PollIo` for wrappers whose `inner` field is a `Source<$io>`; `socket`
/// or `pipe` says which kind of descriptor it is.
macro_rules! impl_poll_io {
    ($($t:ty => $io:ty: $kind:ident),+ $(,)?) => {$(
        impl crate::io::poll::PollIo for $t {
            type Io = $io;
            const SOCKET: bool = crate::io::poll::impl_poll_io!(@socket $kind);
            fn source(&self) -> &crate::io::source::Source<$io> {
                &self.inner
            }
        }
    )+};
    (@socket socket) => { true };
    (@socket pipe) => { false };
}
pub(crate) use impl_poll_io;
