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
use crate::io::try_first::TryFirst;
use crate::io::uring;
use crate::shared::Shared;
use crate::wake::waiter::{self, Waiter};
use crate::worker::tls;
use io_uring::{opcode, types};
use parking_lot::Mutex;
use std::io;
use std::io::{IoSlice, IoSliceMut};
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
    /// For a foreign descriptor ([`Source::foreign`]): the duplicate that
    /// was registered instead of it, closed after the deregistration.
    dup: Option<std::os::fd::OwnedFd>,
}

/// A nonblocking descriptor, registered with the reactor of the first
/// green thread that has to wait on it.
pub(crate) struct Source<T: AsRawFd> {
    io: T,
    interest: mio::Interest,
    reg: OnceLock<Registration>,
    /// Serialises the registration (epoll refuses a second `ADD`).
    init: Mutex<()>,
    /// Register a duplicate this source owns, not `io`'s descriptor.
    foreign: bool,
    /// io_uring path: whether reads, and writes, try the nonblocking call
    /// before the ring (`io::try_first`).
    try_first: [TryFirst; 2],
}

impl<T: AsRawFd> Source<T> {
    /// Wraps `io`, which must already be in nonblocking mode.
    pub(crate) fn new(io: T, interest: mio::Interest) -> Self {
        Source {
            io,
            interest,
            reg: OnceLock::new(),
            init: Mutex::new(()),
            foreign: false,
            try_first: [TryFirst::new(), TryFirst::new()],
        }
    }

    /// Wraps `io`, whose descriptor this crate does not control (a user's
    /// type behind `AsyncFd`, maybe a bare `RawFd` that is closed, or whose
    /// number is reused, while the source lives). The reactor's epoll
    /// entry carries the address of the readiness record, so it must be
    /// removed before the record is freed; a `DEL` by a number that no
    /// longer names the registered file would fail (or remove another
    /// file's entry) and leave events that point at freed memory. So the
    /// source registers a duplicate of the descriptor that it owns: the
    /// entry is keyed by that duplicate, which nothing else can close, and
    /// it is removed through it, always, before the duplicate is closed.
    pub(crate) fn foreign(io: T, interest: mio::Interest) -> Self {
        let mut s = Source::new(io, interest);
        s.foreign = true;
        s
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
        let dup = if self.foreign {
            Some(dup_cloexec(self.io.as_raw_fd())?)
        } else {
            None
        };
        let fd = dup.as_ref().map_or(self.io.as_raw_fd(), |d| d.as_raw_fd());
        let sched = reactor.register(fd, self.interest)?;
        Ok(self.reg.get_or_init(|| Registration {
            reactor,
            sched,
            dup,
        }))
    }

    /// The registration's reactor and readiness record, if registered.
    #[inline]
    pub(crate) fn registered(&self) -> Option<(&Arc<Reactor>, &Arc<ScheduledIo>)> {
        self.reg.get().map(|r| (&r.reactor, &r.sched))
    }

    /// Registers with the reactor of the calling green thread's runtime
    /// (no-op if registered). Returns `false` outside a green thread (no
    /// runtime to register with).
    pub(crate) fn register_current(&self) -> io::Result<bool> {
        if self.reg.get().is_some() {
            return Ok(true);
        }
        match tls::current() {
            Some(me) => self.registration(&me.shared).map(|_| true),
            None => Ok(false),
        }
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
        // An I/O call is a preemption point like every runtime call that can
        // block: a loop of reads and writes that never block must not keep
        // its worker forever. It comes before the call, never between a
        // completed call and its return: a green thread unwound there (at
        // runtime shutdown) would drop the bytes it had read or the
        // connection it had accepted.
        crate::preempt_point();
        loop {
            let snap = self.reg.get().map_or(0, |r| r.sched.snapshot());
            match op(&self.io) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => return r,
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
            // Stay cooperative if readiness keeps flapping (before the
            // next call, as above).
            crate::preempt_point();
        }
    }
}

/// A buffer length as an io_uring length (a longer buffer is a short
/// read or write, which the `Read`/`Write` contracts allow).
fn ring_len(len: usize) -> u32 {
    len.min(u32::MAX as usize) as u32
}

/// An iovec count as an io_uring length (`IOV_MAX` is far below it).
fn ring_iovs(n: usize) -> u32 {
    n.min(libc::UIO_MAXIOV as usize) as u32
}

/// The nonblocking call comes first on the ring path too: with data or
/// buffer space at hand it completes with no park and no submission (the
/// common case for writes, and for reads under load). Only a call that
/// would block goes to the ring, where the kernel arms its own poll and
/// performs the transfer itself: one completion instead of epoll's
/// `EAGAIN` → park → `epoll_wait` → wake → retry. `Some`: done.
fn without_blocking<R>(r: io::Result<R>) -> Option<io::Result<R>> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
        r => Some(r),
    }
}

/// Counts an operation that went to the ring without the nonblocking try,
/// on the worker this thread owns (the external row if it lost it in a
/// hand-off: the counters have one writer each).
#[inline(never)]
fn count_skip() {
    if let Some((sh, _)) = tls::worker() {
        crate::wake::count(
            sh,
            crate::wake::waker_index(sh),
            crate::stats::Counter::io_tries_skipped,
        );
    }
}

/// A ring operation's outcome as a read/write result; a timeout is
/// `would_block()`, like the epoll path.
fn ring_result(r: Option<Result<i32, uring::TimedOut>>) -> Option<io::Result<usize>> {
    r.map(|r| match r {
        Ok(res) => uring::cvt(res),
        Err(uring::TimedOut) => Err(would_block()),
    })
}

/// The blocking operations of streams (sockets and pipes): through the
/// worker's io_uring when the caller is a green thread of a runtime that
/// uses it (`io::uring`), else `do_io` with the given nonblocking call.
///
/// The buffers are borrowed for the whole call, and a ring operation
/// returns only after its completion was reaped, so the kernel never
/// writes into memory the caller got back.
impl<T: AsRawFd> Source<T> {
    /// One stream operation: without a ring, `do_io` with the nonblocking
    /// call `f`; with one, `f` first, then (if it would block) the ring
    /// operation `entry` builds, waiting for `dir` readiness with a poll
    /// op if the kernel answers `EAGAIN`. `buf` is handed to both. A
    /// descriptor whose calls keep finding nothing to do skips `f` for
    /// most operations and goes straight to the ring (`io::try_first`).
    fn stream<B: ?Sized>(
        &self,
        dir: Direction,
        timeout: Option<Duration>,
        buf: &mut B,
        mut f: impl FnMut(&T, &mut B) -> io::Result<usize>,
        entry: impl Fn(types::Fd, &mut B) -> io_uring::squeue::Entry,
    ) -> io::Result<usize> {
        if uring::active() {
            // The call's preemption point, before it (see `do_io`).
            crate::preempt_point();
            let tries = &self.try_first[dir as usize];
            let tried = tries.should_try();
            if tried {
                match without_blocking(f(&self.io, buf)) {
                    Some(r) => {
                        tries.completed();
                        return r;
                    }
                    None => tries.would_block(),
                }
            }
            let fd = self.io.as_raw_fd();
            let events = match dir {
                Direction::Read => libc::POLLIN,
                Direction::Write => libc::POLLOUT,
            };
            let deadline = uring::deadline(timeout);
            let r = uring::stream_op(fd, events, deadline, || entry(types::Fd(fd), buf));
            if let Some(r) = ring_result(r) {
                if !tried {
                    count_skip();
                }
                return r;
            }
        }
        self.do_io(dir, timeout, would_block, |io| f(io, buf))
    }

    /// `read(2)` of a stream. An empty buffer reads `Ok(0)` at once: the
    /// kernel would make a socket read of nothing wait for data (and then
    /// still return 0), and the two drivers would disagree on whether it
    /// waits.
    pub(crate) fn read_with(
        &self,
        buf: &mut [u8],
        timeout: Option<Duration>,
        f: impl FnMut(&T, &mut [u8]) -> io::Result<usize>,
    ) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.stream(Direction::Read, timeout, buf, f, |fd, b| {
            opcode::Read::new(fd, b.as_mut_ptr(), ring_len(b.len()))
                .offset(u64::MAX)
                .build()
        })
    }

    /// `readv(2)` of a stream; buffers with no room at all read `Ok(0)` at
    /// once, as in `read_with`.
    pub(crate) fn read_vectored_with(
        &self,
        bufs: &mut [IoSliceMut<'_>],
        timeout: Option<Duration>,
        f: impl FnMut(&T, &mut [IoSliceMut<'_>]) -> io::Result<usize>,
    ) -> io::Result<usize> {
        if bufs.iter().all(|b| b.is_empty()) {
            return Ok(0);
        }
        // `IoSliceMut` is ABI-compatible with `iovec` on Unix.
        self.stream(Direction::Read, timeout, bufs, f, |fd, b| {
            opcode::Readv::new(fd, b.as_ptr() as *const libc::iovec, ring_iovs(b.len()))
                .offset(u64::MAX)
                .build()
        })
    }

    /// `write(2)` of a stream; on the ring, `socket` sends with
    /// `MSG_NOSIGNAL` (a closed peer is `EPIPE`, never `SIGPIPE`; the
    /// socket types' `f` is `sys::send`, which does the same).
    pub(crate) fn write_with(
        &self,
        mut buf: &[u8],
        timeout: Option<Duration>,
        socket: bool,
        mut f: impl FnMut(&T, &[u8]) -> io::Result<usize>,
    ) -> io::Result<usize> {
        let g = |io: &T, b: &mut &[u8]| f(io, b);
        self.stream(Direction::Write, timeout, &mut buf, g, |fd, b| {
            let (ptr, len) = (b.as_ptr(), ring_len(b.len()));
            if socket {
                opcode::Send::new(fd, ptr, len)
                    .flags(libc::MSG_NOSIGNAL)
                    .build()
            } else {
                opcode::Write::new(fd, ptr, len).offset(u64::MAX).build()
            }
        })
    }

    /// `writev(2)` of a stream; `socket` sends with `sendmsg(2)` and
    /// `MSG_NOSIGNAL` instead, as `write_with` does.
    pub(crate) fn write_vectored_with(
        &self,
        mut bufs: &[IoSlice<'_>],
        timeout: Option<Duration>,
        socket: bool,
        mut f: impl FnMut(&T, &[IoSlice<'_>]) -> io::Result<usize>,
    ) -> io::Result<usize> {
        // Lives, with `bufs` it points into, until the ring operation's
        // completion was reaped (`stream` returns only then).
        let hdr = crate::sys::msghdr_of(bufs);
        let g = |io: &T, b: &mut &[IoSlice<'_>]| f(io, b);
        self.stream(Direction::Write, timeout, &mut bufs, g, |fd, b| {
            if socket {
                opcode::SendMsg::new(fd, &hdr)
                    .flags(libc::MSG_NOSIGNAL as u32)
                    .build()
            } else {
                // `IoSlice` is ABI-compatible with `iovec` on Unix.
                opcode::Writev::new(fd, b.as_ptr() as *const libc::iovec, ring_iovs(b.len()))
                    .offset(u64::MAX)
                    .build()
            }
        })
    }

    /// `accept4(2)` through the ring: the new descriptor (nonblocking,
    /// close-on-exec) and the peer's raw address. `None`: use the epoll
    /// path.
    pub(crate) fn ring_accept(
        &self,
    ) -> Option<io::Result<(std::os::fd::OwnedFd, libc::sockaddr_storage)>> {
        if !uring::active() {
            return None;
        }
        let fd = self.io.as_raw_fd();
        // SAFETY: all-zero bytes are a valid sockaddr_storage.
        let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        let (ap, lp) = (
            &mut addr as *mut libc::sockaddr_storage as *mut libc::sockaddr,
            &mut len as *mut libc::socklen_t,
        );
        let r = uring::stream_op(fd, libc::POLLIN, None, || {
            opcode::Accept::new(types::Fd(fd), ap, lp)
                .flags(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
                .build()
        });
        let r = ring_result(r)?;
        Some(r.map(|newfd| {
            // SAFETY: a successful accept returned a new descriptor that
            // nothing else owns.
            let owned = unsafe {
                <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(newfd as RawFd)
            };
            (owned, addr)
        }))
    }
}

/// A close-on-exec duplicate of `fd`, or the OS error (`EBADF` for a
/// descriptor that is not open).
fn dup_cloexec(fd: RawFd) -> io::Result<std::os::fd::OwnedFd> {
    // SAFETY: `fcntl(F_DUPFD_CLOEXEC)` reads no memory; on any number it
    // either duplicates an open descriptor or fails with EBADF.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a successful F_DUPFD_CLOEXEC returned a new descriptor that
    // nothing else owns.
    Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(new) })
}

impl<T: AsRawFd> Drop for Source<T> {
    fn drop(&mut self) {
        // Deregister before `io` (a field) closes the fd.
        if let Some(r) = self.reg.take() {
            let fd = r
                .dup
                .as_ref()
                .map_or(self.io.as_raw_fd(), |d| d.as_raw_fd());
            r.reactor.deregister(fd, r.sched);
            // `r.dup`, if any, closes here, after its epoll entry is gone.
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
