//! [`AsyncFd`]: readiness of any file descriptor as futures.
//!
//! Owns: the public wrapper that lets async code wait for an arbitrary
//! nonblocking descriptor (an eventfd, a device, a socket of another
//! library) through the runtime's reactor, and its readiness guard. Must
//! not: do I/O itself (the caller's closure does), or block.
//!
//! The shape follows what async Rust users know from tokio's `AsyncFd`:
//! wait for readiness, try the operation, and if it reports `WouldBlock`
//! clear the readiness and wait again — or let [`AsyncFd::read_with`] /
//! [`AsyncFd::write_with`] run that loop.

use crate::io::source::{Direction, Source};
use std::future::poll_fn;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::task::{Context, Poll};

/// A nonblocking file descriptor whose readiness can be awaited.
///
/// The descriptor must already be in nonblocking mode (`O_NONBLOCK`);
/// operations that would block must report `WouldBlock`. It is registered
/// (edge-triggered, readable and writable) with the reactor of the runtime
/// whose green thread first waits on it, and deregistered on drop — before
/// `T` is dropped, so `T` may own the descriptor.
///
/// Waiting works in any future driven on this runtime: under
/// [`block_on_future`](crate::block_on_future), [`spawn_future`](crate::spawn_future),
/// or hyper through `compat::hyper`. One waker per direction: if two tasks
/// wait for the same direction, the last one to poll is woken.
///
/// ```
/// use eevdf_rt::io::AsyncFd;
/// use std::io::{Read, Write};
/// use std::os::unix::net::UnixStream;
///
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let got = rt.block_on(|| {
///     let (a, mut b) = UnixStream::pair().unwrap();
///     a.set_nonblocking(true).unwrap();
///     let a = AsyncFd::new(a).unwrap();
///     let writer = std::thread::spawn(move || b.write_all(b"ping").unwrap());
///     let mut buf = [0u8; 4];
///     eevdf_rt::block_on_future(async {
///         let mut got = 0;
///         while got < 4 {
///             got += a.read_with(|s| (&*s).read(&mut buf[got..])).await.unwrap();
///         }
///     });
///     writer.join().unwrap();
///     buf
/// });
/// assert_eq!(&got, b"ping");
/// ```
pub struct AsyncFd<T: AsRawFd> {
    inner: Source<T>,
}

impl<T: AsRawFd> AsyncFd<T> {
    /// Wraps `io` (already nonblocking). Registration with a reactor
    /// happens at the first wait, inside a green thread.
    ///
    /// The reactor registers a duplicate of the descriptor that the
    /// `AsyncFd` owns (one `fcntl` at the first wait, and one descriptor
    /// more while registered), so a `T` that closes or swaps its
    /// descriptor early — a bare `RawFd` closed elsewhere — cannot leave a
    /// stale epoll entry that points at freed memory; the first wait on a
    /// descriptor that is not open fails with `EBADF`. The duplicate keeps
    /// the open file alive until the `AsyncFd` is dropped. Operations
    /// (`read_with`, `try_io`) act on whatever descriptor `T` gives, so an
    /// owning `T` (a socket, an `OwnedFd`) is still the right choice.
    pub fn new(io: T) -> io::Result<Self> {
        Ok(AsyncFd {
            inner: Source::foreign(io, mio::Interest::READABLE | mio::Interest::WRITABLE),
        })
    }

    /// The wrapped object.
    pub fn get_ref(&self) -> &T {
        self.inner.get_ref()
    }

    /// Polls for read readiness: `Ready` with a guard once the reactor
    /// reported the descriptor readable (or closed, or in error), else
    /// `Pending` with `cx`'s waker registered.
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<ReadyGuard<'_, T>>> {
        self.poll_ready(cx, Direction::Read)
    }

    /// Polls for write readiness, like [`poll_read_ready`](Self::poll_read_ready).
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<ReadyGuard<'_, T>>> {
        self.poll_ready(cx, Direction::Write)
    }

    fn poll_ready(
        &self,
        cx: &mut Context<'_>,
        dir: Direction,
    ) -> Poll<io::Result<ReadyGuard<'_, T>>> {
        self.inner.poll_ready(cx, dir).map_ok(|snap| ReadyGuard {
            fd: self,
            dir,
            snap,
        })
    }

    /// Waits until the descriptor is readable.
    pub async fn readable(&self) -> io::Result<ReadyGuard<'_, T>> {
        poll_fn(|cx| self.poll_read_ready(cx)).await
    }

    /// Waits until the descriptor is writable.
    pub async fn writable(&self) -> io::Result<ReadyGuard<'_, T>> {
        poll_fn(|cx| self.poll_write_ready(cx)).await
    }

    /// Runs `op` until it does not report `WouldBlock`, waiting for read
    /// readiness in between.
    pub async fn read_with<R>(&self, mut op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        poll_fn(|cx| self.inner.poll_io(cx, Direction::Read, &mut op)).await
    }

    /// Runs `op` until it does not report `WouldBlock`, waiting for write
    /// readiness in between.
    pub async fn write_with<R>(&self, mut op: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        poll_fn(|cx| self.inner.poll_io(cx, Direction::Write, &mut op)).await
    }
}

impl<T: AsRawFd> AsRawFd for AsyncFd<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.get_ref().as_raw_fd()
    }
}

impl<T: AsRawFd + AsFd> AsFd for AsyncFd<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.get_ref().as_fd()
    }
}

impl<T: AsRawFd + std::fmt::Debug> std::fmt::Debug for AsyncFd<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncFd")
            .field("inner", self.get_ref())
            .finish()
    }
}

/// Readiness reported by [`AsyncFd`] for one direction. Dropping it keeps
/// the readiness (the next wait returns at once); call
/// [`clear_ready`](Self::clear_ready) after an operation reported
/// `WouldBlock`, or use [`try_io`](Self::try_io), which does.
#[must_use = "dropping the guard keeps the readiness; clear it after a WouldBlock"]
pub struct ReadyGuard<'a, T: AsRawFd> {
    fd: &'a AsyncFd<T>,
    dir: Direction,
    snap: usize,
}

/// [`ReadyGuard::try_io`]'s error: the operation would have blocked, and
/// the readiness has been cleared — wait again.
#[derive(Debug)]
pub struct TryIoError(());

impl std::fmt::Display for TryIoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the operation would block; readiness cleared")
    }
}

impl std::error::Error for TryIoError {}

impl<T: AsRawFd> ReadyGuard<'_, T> {
    /// Forgets this readiness: the next wait waits for a new event (unless
    /// one arrived since the guard was made).
    pub fn clear_ready(&mut self) {
        self.fd.inner.clear_ready(self.snap, self.dir);
    }

    /// Runs `op`; if it reports `WouldBlock`, clears the readiness and
    /// returns `Err(TryIoError)`, otherwise `Ok` with its result.
    pub fn try_io<R>(
        &mut self,
        op: impl FnOnce(&T) -> io::Result<R>,
    ) -> Result<io::Result<R>, TryIoError> {
        match op(self.fd.get_ref()) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.clear_ready();
                Err(TryIoError(()))
            }
            r => Ok(r),
        }
    }

    /// The wrapped object.
    pub fn get_inner(&self) -> &T {
        self.fd.get_ref()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::AsyncFd;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    /// The epoll entries of `epfd` (`tfd:` lines of its fdinfo).
    fn epoll_entries(epfd: i32) -> usize {
        std::fs::read_to_string(format!("/proc/self/fdinfo/{epfd}"))
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("tfd:"))
            .count()
    }

    /// An `AsyncFd` over a bare descriptor number whose owner closes it
    /// while a duplicate keeps the file open: dropping the `AsyncFd` must
    /// still remove its epoll entry (which names the readiness record the
    /// drop frees). Registering the number itself, the removal by that
    /// number fails with `EBADF` and the entry stays.
    #[test]
    fn a_foreign_descriptor_closed_early_leaves_no_epoll_entry() {
        let rt = crate::Builder::new()
            .workers(1)
            .io_driver(crate::io::IoDriver::Epoll)
            .build()
            .unwrap();
        rt.block_on(|| {
            let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
            a.set_nonblocking(true).unwrap();
            let keep = a.try_clone().unwrap();
            let fd = AsyncFd::new(a.as_raw_fd()).unwrap();
            (&b).write_all(b"x").unwrap();
            // The first wait registers.
            drop(crate::block_on_future(fd.readable()).unwrap());
            let sh = crate::worker::tls::current().unwrap().shared.clone();
            let epfd = crate::io::reactor::get(&sh).unwrap().epoll_fd();
            let registered = epoll_entries(epfd);
            drop(a);
            drop(fd);
            assert_eq!(epoll_entries(epfd), registered - 1);
            drop(keep);
        });
    }

    /// The first wait on a number that is not open is an error, not a
    /// registration.
    #[test]
    fn waiting_on_a_closed_number_is_ebadf() {
        let rt = crate::Builder::new().workers(1).build().unwrap();
        let err = rt.block_on(|| {
            let fd = AsyncFd::new(1 << 20).unwrap();
            crate::block_on_future(fd.readable()).map(drop).unwrap_err()
        });
        assert_eq!(err.raw_os_error(), Some(libc::EBADF));
    }
}
