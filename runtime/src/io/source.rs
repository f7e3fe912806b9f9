//! A nonblocking file descriptor with a blocking-style, green-aware API.
//!
//! Owns: [`Source`] — the fd (inside a std or mio type, always in
//! nonblocking mode), its lazy registration with a runtime's reactor, and
//! `do_io`, the loop every blocking operation of `net` and `io` runs:
//! try the syscall; on `EAGAIN` wait for readiness (a green thread parks
//! through the reactor, an OS thread blocks in `ppoll` on the fd) or the
//! deadline; retry. Must not: hold a lock or a thread-local reference while
//! parking.

use crate::io::reactor::{self, Reactor, ScheduledIo};
use crate::shared::Shared;
use crate::wake::waiter::{self, Waiter};
use crate::worker::tls;
use parking_lot::Mutex;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Which readiness an operation waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Readable (also: accept, and a peer's close).
    Read,
    /// Writable (also: a finished connect).
    Write,
}

/// A descriptor's registration with one reactor.
struct Registration {
    reactor: Arc<Reactor>,
    sched: Arc<ScheduledIo>,
}

/// A nonblocking descriptor, registered with the reactor of the first
/// green thread that has to wait on it.
pub(crate) struct Source<T: AsRawFd> {
    io: T,
    interest: mio::Interest,
    reg: OnceLock<Registration>,
    /// Serialises the registration (epoll refuses a second `ADD`).
    init: Mutex<()>,
}

impl<T: AsRawFd> Source<T> {
    /// Wraps `io`, which must already be in nonblocking mode.
    pub(crate) fn new(io: T, interest: mio::Interest) -> Self {
        Source {
            io,
            interest,
            reg: OnceLock::new(),
            init: Mutex::new(()),
        }
    }

    /// The wrapped descriptor.
    #[inline]
    pub(crate) fn get_ref(&self) -> &T {
        &self.io
    }

    fn registration(&self, sh: &Shared) -> io::Result<&Registration> {
        if let Some(r) = self.reg.get() {
            return Ok(r);
        }
        let _g = self.init.lock();
        if let Some(r) = self.reg.get() {
            return Ok(r);
        }
        let reactor = reactor::get_or_init(sh)?.clone();
        let sched = reactor.register(self.io.as_raw_fd(), self.interest)?;
        Ok(self.reg.get_or_init(|| Registration { reactor, sched }))
    }

    /// Runs `op` until it does not report `WouldBlock`, waiting for `dir`
    /// readiness in between: a green thread parks (only itself) until the
    /// reactor reports readiness, an OS thread blocks in `ppoll`. With a
    /// `timeout` (counted from the first `WouldBlock`), returns
    /// `timed_out()` once it has passed.
    pub(crate) fn do_io<R>(
        &self,
        dir: Direction,
        timeout: Option<Duration>,
        timed_out: fn() -> io::Error,
        mut op: impl FnMut(&T) -> io::Result<R>,
    ) -> io::Result<R> {
        let mut deadline: Option<Instant> = None;
        loop {
            let snap = self.reg.get().map_or(0, |r| r.sched.snapshot());
            match op(&self.io) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => {
                    // A completed I/O call is a preemption point like every
                    // runtime call that can block: a loop of reads and writes
                    // that never block must not keep its worker forever.
                    crate::preempt_point();
                    return r;
                }
            }
            if let (Some(t), None) = (timeout, deadline) {
                deadline = Instant::now().checked_add(t);
            }
            // Re-fetched on every iteration: a green thread may resume on
            // another worker after a park (worker::tls rules).
            let Some(me) = tls::current() else {
                if !poll_fd(self.io.as_raw_fd(), dir, deadline)? {
                    return Err(timed_out());
                }
                continue;
            };
            let reg = match self.reg.get() {
                Some(r) => r,
                None => {
                    // Registering queues an event if the fd became ready
                    // since `op`: retry at once.
                    self.registration(&me.shared)?;
                    continue;
                }
            };
            if reg.reactor.is_shutdown() {
                return Err(reactor::shutdown_error());
            }
            if !reg.sched.clear(snap, dir) {
                // Not ready: wait for the next event (wake::waiter protocol:
                // register, then park re-checks after marking us blocked).
                reg.sched.add_waiter(dir, Waiter::current());
                let ready = || reg.sched.is_ready(dir) || reg.reactor.is_shutdown();
                if !waiter::park(ready, deadline) {
                    reg.sched.remove_waiter(dir, &Waiter::current());
                    return Err(timed_out());
                }
            }
            // Stay cooperative if readiness keeps flapping.
            crate::preempt_point();
        }
    }
}

impl<T: AsRawFd> Drop for Source<T> {
    fn drop(&mut self) {
        // Deregister before `io` (a field) closes the fd.
        if let Some(r) = self.reg.take() {
            r.reactor.deregister(self.io.as_raw_fd(), r.sched);
        }
    }
}

impl<T: AsRawFd + std::fmt::Debug> std::fmt::Debug for Source<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.io.fmt(f)
    }
}

/// An OS thread's wait: `ppoll` on the fd until `dir` readiness (or a
/// hang-up / error, which the retried operation reports) or `deadline`.
/// Returns `false` if the deadline passed.
fn poll_fd(fd: RawFd, dir: Direction, deadline: Option<Instant>) -> io::Result<bool> {
    let events = match dir {
        Direction::Read => libc::POLLIN | libc::POLLRDHUP,
        Direction::Write => libc::POLLOUT,
    };
    loop {
        let ts = match deadline {
            None => None,
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return Ok(false);
                }
                let left = d - now;
                Some(libc::timespec {
                    tv_sec: left.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
                    tv_nsec: left.subsec_nanos() as _,
                })
            }
        };
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        let mut pfd = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one valid `pollfd` and an optional timespec, both on this
        // stack frame for the duration of the call; a null sigmask keeps
        // the thread's mask.
        let r = unsafe { libc::ppoll(&mut pfd, 1, tsp, std::ptr::null()) };
        if r > 0 {
            return Ok(true);
        }
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// The error of a read or write timeout: `EAGAIN`, as `std` reports an
/// expired `SO_RCVTIMEO`/`SO_SNDTIMEO` on Linux (`ErrorKind::WouldBlock`).
pub(crate) fn would_block() -> io::Error {
    io::Error::from_raw_os_error(libc::EAGAIN)
}

/// `AsRawFd` and `AsFd` for wrappers whose `inner` field is a [`Source`]:
/// the descriptor is the wrapped std or mio object's.
macro_rules! impl_fd_traits {
    ($($t:ty),+ $(,)?) => {$(
        impl std::os::fd::AsRawFd for $t {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                std::os::fd::AsRawFd::as_raw_fd(self.inner.get_ref())
            }
        }

        impl std::os::fd::AsFd for $t {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                std::os::fd::AsFd::as_fd(self.inner.get_ref())
            }
        }
    )+};
}
pub(crate) use impl_fd_traits;

/// `Read` for an owned stream through its `Read for &T` (the blocking logic
/// lives there, as for `std::net::TcpStream`).
macro_rules! impl_read_via_ref {
    ($($t:ty),+ $(,)?) => {$(
        impl std::io::Read for $t {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                std::io::Read::read(&mut &*self, buf)
            }

            fn read_vectored(
                &mut self,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::io::Result<usize> {
                std::io::Read::read_vectored(&mut &*self, bufs)
            }
        }
    )+};
}
pub(crate) use impl_read_via_ref;

/// `Write` for an owned stream through its `Write for &T`; `flush` has
/// nothing to do (writes go straight to the kernel).
macro_rules! impl_write_via_ref {
    ($($t:ty),+ $(,)?) => {$(
        impl std::io::Write for $t {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                std::io::Write::write(&mut &*self, buf)
            }

            fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
                std::io::Write::write_vectored(&mut &*self, bufs)
            }

            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
    )+};
}
pub(crate) use impl_write_via_ref;
