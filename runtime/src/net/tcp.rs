//! TCP: [`TcpListener`] and [`TcpStream`].
//!
//! Owns: the std-shaped TCP types and their timeouts; connect and accept
//! through the ring where there is one. Must not: wait any other way than
//! through `io::source` and `io::uring`.

use super::{connect_timed_out, Timeout};
use crate::io::source::{would_block, Direction, Source};
use crate::io::uring;
use io_uring::{opcode, types};
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd};
use std::os::fd::{FromRawFd, OwnedFd};
use std::time::Duration;

const INTEREST: mio::Interest = mio::Interest::READABLE.add(mio::Interest::WRITABLE);

/// A TCP socket server, listening for connections — `std::net::TcpListener`
/// whose `accept` parks only the calling green thread.
///
/// Dropping it closes the socket (and deregisters it from the reactor).
///
/// ```
/// use std::io::{Read, Write};
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let reply = rt.block_on(|| -> std::io::Result<String> {
///     let l = eevdf_rt::net::TcpListener::bind("127.0.0.1:0")?;
///     let addr = l.local_addr()?;
///     let server = eevdf_rt::spawn(move || -> std::io::Result<()> {
///         let (mut s, _peer) = l.accept()?; // parks this green thread
///         let mut buf = [0u8; 5];
///         s.read_exact(&mut buf)?;
///         s.write_all(&buf)
///     });
///     let mut c = eevdf_rt::net::TcpStream::connect(addr)?;
///     c.write_all(b"hello")?;
///     let mut back = String::new();
///     c.read_to_string(&mut back)?; // until the server closes
///     server.join().unwrap()?;
///     Ok(back)
/// })?;
/// assert_eq!(reply, "hello");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct TcpListener {
    inner: Source<mio::net::TcpListener>,
}

impl TcpListener {
    /// Binds to `addr` (every resolved address is tried in turn) and
    /// listens, like `std::net::TcpListener::bind`. Port 0 asks the OS for
    /// a free port; see [`local_addr`](Self::local_addr).
    ///
    /// ```
    /// let l = eevdf_rt::net::TcpListener::bind("127.0.0.1:0")?;
    /// assert_ne!(l.local_addr()?.port(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        TcpListener::from_std(std::net::TcpListener::bind(addr)?)
    }

    /// Wraps a listener from the standard library (it is switched to
    /// nonblocking mode; blocking behaviour is provided by this type).
    ///
    /// ```
    /// let std_l = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let l = eevdf_rt::net::TcpListener::from_std(std_l)?;
    /// # let _ = l;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_std(l: std::net::TcpListener) -> io::Result<TcpListener> {
        l.set_nonblocking(true)?;
        Ok(TcpListener {
            inner: Source::new(mio::net::TcpListener::from_std(l), INTEREST),
        })
    }

    /// Accepts a new connection: parks the calling green thread (blocks an
    /// OS thread) until one arrives. The new stream is nonblocking inside,
    /// blocking outside, like every stream of this module.
    ///
    /// ```
    /// let l = eevdf_rt::net::TcpListener::bind("127.0.0.1:0")?;
    /// let c = std::net::TcpStream::connect(l.local_addr()?)?;
    /// let (s, peer) = l.accept()?;
    /// assert_eq!(peer, c.local_addr()?);
    /// assert_eq!(s.peer_addr()?, c.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        if let Some(r) = self.inner.ring_accept() {
            let (fd, addr) = r?;
            let s = TcpStream::with_timeouts(std::net::TcpStream::from(fd), None, None);
            // The accepted connection is never dropped over its address: an
            // address the ring gave in a form we do not read is asked again.
            let addr = super::from_sockaddr(&addr).or_else(|_| s.peer_addr())?;
            return Ok((s, addr));
        }
        let (s, addr) = self
            .inner
            .do_io(Direction::Read, None, would_block, |l| l.accept())?;
        Ok((TcpStream::from_mio(s), addr))
    }

    /// An iterator over incoming connections (`accept` in a loop; it never
    /// returns `None`).
    ///
    /// ```no_run
    /// use std::io::Write;
    /// let rt = eevdf_rt::Builder::new().build().unwrap();
    /// rt.block_on(|| -> std::io::Result<()> {
    ///     let l = eevdf_rt::net::TcpListener::bind("127.0.0.1:8080")?;
    ///     for s in l.incoming() {
    ///         let mut s = s?;
    ///         eevdf_rt::spawn(move || s.write_all(b"hi\n"));
    ///     }
    ///     Ok(())
    /// }).unwrap();
    /// ```
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { listener: self }
    }

    /// The local address the listener is bound to.
    ///
    /// ```
    /// let l = eevdf_rt::net::TcpListener::bind("127.0.0.1:0")?;
    /// assert!(l.local_addr()?.ip().is_loopback());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().local_addr()
    }

    /// A second handle to the same listening socket (a `dup` of the fd).
    ///
    /// ```
    /// let l = eevdf_rt::net::TcpListener::bind("127.0.0.1:0")?;
    /// let l2 = l.try_clone()?;
    /// assert_eq!(l.local_addr()?, l2.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn try_clone(&self) -> io::Result<TcpListener> {
        let fd = self.inner.get_ref().as_fd().try_clone_to_owned()?;
        Ok(TcpListener {
            inner: Source::new(mio::net::TcpListener::from(fd), INTEREST),
        })
    }

    /// Sets `IP_TTL`.
    ///
    /// ```
    /// let l = eevdf_rt::net::TcpListener::bind("127.0.0.1:0")?;
    /// l.set_ttl(64)?;
    /// assert_eq!(l.ttl()?, 64);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.inner.get_ref().set_ttl(ttl)
    }

    /// `IP_TTL` (see [`set_ttl`](Self::set_ttl)).
    pub fn ttl(&self) -> io::Result<u32> {
        self.inner.get_ref().ttl()
    }

    /// Takes the pending `SO_ERROR`, if any.
    ///
    /// ```
    /// let l = eevdf_rt::net::TcpListener::bind("127.0.0.1:0")?;
    /// assert!(l.take_error()?.is_none());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.inner.get_ref().take_error()
    }
}

/// The iterator of [`TcpListener::incoming`].
///
/// ```
/// let l = eevdf_rt::net::TcpListener::bind("127.0.0.1:0")?;
/// let _c = std::net::TcpStream::connect(l.local_addr()?)?;
/// let first = l.incoming().next().unwrap()?;
/// # let _ = first;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Incoming<'a> {
    listener: &'a TcpListener,
}

impl Iterator for Incoming<'_> {
    type Item = io::Result<TcpStream>;

    fn next(&mut self) -> Option<io::Result<TcpStream>> {
        Some(self.listener.accept().map(|(s, _)| s))
    }
}

/// A TCP connection — `std::net::TcpStream` whose reads, writes and
/// connects park only the calling green thread (an OS thread blocks).
///
/// `Read` and `Write` are implemented for `TcpStream` and `&TcpStream`, so
/// one green thread can read while another writes through a shared
/// reference (or a [`try_clone`](Self::try_clone)). A closed peer reads as
/// `Ok(0)`. Read and write timeouts are kept by this object (not in the
/// socket as `SO_RCVTIMEO`): a `try_clone` starts with a copy of them.
///
/// ```
/// use std::io::{Read, Write};
/// let l = std::net::TcpListener::bind("127.0.0.1:0")?;
/// let mut c = eevdf_rt::net::TcpStream::connect(l.local_addr()?)?;
/// let (mut s, _) = l.accept()?;
/// c.write_all(b"ping")?;
/// let mut buf = [0u8; 4];
/// s.read_exact(&mut buf)?;
/// assert_eq!(&buf, b"ping");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct TcpStream {
    inner: Source<std::net::TcpStream>,
    read_timeout: Timeout,
    write_timeout: Timeout,
}

/// Whether a nonblocking connect has finished: `Ok` when connected, its
/// error if it failed, `WouldBlock` while in progress.
fn connected(s: &std::net::TcpStream) -> io::Result<()> {
    if let Some(e) = s.take_error()? {
        return Err(e);
    }
    match s.peer_addr() {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => Err(io::ErrorKind::WouldBlock.into()),
        Err(e) => Err(e),
    }
}

impl TcpStream {
    fn from_mio(s: mio::net::TcpStream) -> TcpStream {
        TcpStream::with_timeouts(std::net::TcpStream::from(s), None, None)
    }

    fn with_timeouts(
        s: std::net::TcpStream,
        read: Option<Duration>,
        write: Option<Duration>,
    ) -> TcpStream {
        TcpStream {
            inner: Source::new(s, INTEREST),
            read_timeout: Timeout::new(read),
            write_timeout: Timeout::new(write),
        }
    }

    fn connect_addr(addr: SocketAddr, timeout: Option<Duration>) -> io::Result<TcpStream> {
        if uring::active() {
            if let Some(r) = TcpStream::ring_connect(addr, timeout) {
                return r;
            }
        }
        let s = TcpStream::from_mio(mio::net::TcpStream::connect(addr)?);
        s.inner
            .do_io(Direction::Write, timeout, connect_timed_out, connected)?;
        Ok(s)
    }

    /// `connect(2)` through the worker's io_uring (`None`: no ring, use
    /// the epoll path).
    fn ring_connect(addr: SocketAddr, timeout: Option<Duration>) -> Option<io::Result<TcpStream>> {
        let domain = if addr.is_ipv4() {
            libc::AF_INET
        } else {
            libc::AF_INET6
        };
        let flags = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
        // SAFETY: socket(2) takes no pointers.
        let fd = unsafe { libc::socket(domain, flags, 0) };
        if fd < 0 {
            return Some(Err(io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a new descriptor nothing else owns.
        let s = std::net::TcpStream::from(unsafe { OwnedFd::from_raw_fd(fd) });
        let (sa, len) = super::to_sockaddr(&addr);
        let deadline = uring::deadline(timeout);
        let sa_ptr = &sa as *const libc::sockaddr_storage as *const libc::sockaddr;
        let op = opcode::Connect::new(types::Fd(fd), sa_ptr, len).build();
        // SAFETY: `sa` lives on this frame until `submit` returns, which is
        // after the completion.
        let res = match unsafe { uring::submit(op, deadline) }? {
            Err(uring::TimedOut) => return Some(Err(connect_timed_out())),
            Ok(res) => res,
        };
        let r = match -res {
            0 | libc::EISCONN => Ok(()),
            libc::EINPROGRESS | libc::EALREADY | libc::EAGAIN => {
                // Still connecting (a kernel that did not wait): wait until
                // writable through the ring, then ask the socket.
                let poll = opcode::PollAdd::new(types::Fd(fd), libc::POLLOUT as u32).build();
                // SAFETY: a poll points to no memory.
                match unsafe { uring::submit(poll, deadline) }? {
                    Err(uring::TimedOut) => Err(connect_timed_out()),
                    Ok(_) => connected(&s),
                }
            }
            e => Err(io::Error::from_raw_os_error(e)),
        };
        Some(r.map(|()| TcpStream::with_timeouts(s, None, None)))
    }

    /// Connects to `addr` (each resolved address in turn, like std),
    /// parking the calling green thread until the connection is
    /// established or fails. A refused connection is an error
    /// (`ConnectionRefused`) as soon as the kernel knows.
    ///
    /// ```
    /// let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let addr = l.local_addr()?;
    /// let s = eevdf_rt::net::TcpStream::connect(addr)?;
    /// assert_eq!(s.peer_addr()?, addr);
    /// drop(l);
    /// let err = eevdf_rt::net::TcpStream::connect(addr).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            match TcpStream::connect_addr(a, None) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "could not resolve to any addresses",
            )
        }))
    }

    /// Connects to `addr`, giving up with `ErrorKind::TimedOut` after
    /// `timeout` (a zero timeout is `InvalidInput`, like std).
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let s = eevdf_rt::net::TcpStream::connect_timeout(&l.local_addr()?, Duration::from_secs(1))?;
    /// # let _ = s;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect_timeout(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
        if timeout.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot set a 0 duration timeout",
            ));
        }
        TcpStream::connect_addr(*addr, Some(timeout))
    }

    /// Wraps a connected stream from the standard library (it is switched
    /// to nonblocking mode; blocking behaviour is provided by this type).
    /// Its read and write timeouts carry over: the kernel ignores them on
    /// a nonblocking socket, so this type enforces them.
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let c = std::net::TcpStream::connect(l.local_addr()?)?;
    /// c.set_read_timeout(Some(Duration::from_millis(250)))?;
    /// let kept = c.read_timeout()?; // 250 ms rounded up to a clock tick
    /// let c = eevdf_rt::net::TcpStream::from_std(c)?;
    /// assert_eq!(c.read_timeout()?, kept);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_std(s: std::net::TcpStream) -> io::Result<TcpStream> {
        let (read, write) = (s.read_timeout()?, s.write_timeout()?);
        s.set_nonblocking(true)?;
        Ok(TcpStream::with_timeouts(s, read, write))
    }

    /// Sets the read timeout: a read that waits longer fails with
    /// `ErrorKind::WouldBlock` (`EAGAIN`, what std reports on Linux).
    /// `None` waits forever; `Some(Duration::ZERO)` is `InvalidInput`.
    ///
    /// ```
    /// use std::io::Read;
    /// use std::time::Duration;
    /// let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let mut c = eevdf_rt::net::TcpStream::connect(l.local_addr()?)?;
    /// c.set_read_timeout(Some(Duration::from_millis(10)))?;
    /// assert_eq!(c.read_timeout()?, Some(Duration::from_millis(10)));
    /// let err = c.read(&mut [0u8; 8]).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_read_timeout(&self, dur: Option<Duration>) -> io::Result<()> {
        self.read_timeout.set(dur)
    }

    /// Sets the write timeout (see [`set_read_timeout`](Self::set_read_timeout)).
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let c = eevdf_rt::net::TcpStream::connect(l.local_addr()?)?;
    /// c.set_write_timeout(Some(Duration::from_secs(1)))?;
    /// assert_eq!(c.write_timeout()?, Some(Duration::from_secs(1)));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_write_timeout(&self, dur: Option<Duration>) -> io::Result<()> {
        self.write_timeout.set(dur)
    }

    /// The read timeout.
    pub fn read_timeout(&self) -> io::Result<Option<Duration>> {
        Ok(self.read_timeout.get())
    }

    /// The write timeout.
    pub fn write_timeout(&self) -> io::Result<Option<Duration>> {
        Ok(self.write_timeout.get())
    }

    /// Shuts down the read half, the write half or both. After
    /// `Shutdown::Write` the peer reads end of file.
    ///
    /// ```
    /// use std::io::Read;
    /// use std::net::Shutdown;
    /// let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let c = eevdf_rt::net::TcpStream::connect(l.local_addr()?)?;
    /// let (mut s, _) = l.accept()?;
    /// c.shutdown(Shutdown::Write)?;
    /// assert_eq!(s.read(&mut [0u8; 8])?, 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.get_ref().shutdown(how)
    }

    /// The local address of this end.
    ///
    /// ```
    /// let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let c = eevdf_rt::net::TcpStream::connect(l.local_addr()?)?;
    /// assert!(c.local_addr()?.ip().is_loopback());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().local_addr()
    }

    /// The address of the peer.
    ///
    /// ```
    /// let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let c = eevdf_rt::net::TcpStream::connect(l.local_addr()?)?;
    /// assert_eq!(c.peer_addr()?, l.local_addr()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().peer_addr()
    }

    /// Sets `TCP_NODELAY` (disables Nagle's algorithm).
    ///
    /// ```
    /// let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let c = eevdf_rt::net::TcpStream::connect(l.local_addr()?)?;
    /// c.set_nodelay(true)?;
    /// assert!(c.nodelay()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.inner.get_ref().set_nodelay(nodelay)
    }

    /// `TCP_NODELAY` (see [`set_nodelay`](Self::set_nodelay)).
    pub fn nodelay(&self) -> io::Result<bool> {
        self.inner.get_ref().nodelay()
    }

    /// Sets `IP_TTL`.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.inner.get_ref().set_ttl(ttl)
    }

    /// `IP_TTL`.
    pub fn ttl(&self) -> io::Result<u32> {
        self.inner.get_ref().ttl()
    }

    /// Takes the pending `SO_ERROR`, if any.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.inner.get_ref().take_error()
    }

    /// Reads without removing the data from the queue (waits like `read`).
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let mut c = eevdf_rt::net::TcpStream::connect(l.local_addr()?)?;
    /// let (mut s, _) = l.accept()?;
    /// s.write_all(b"x")?;
    /// let mut b = [0u8; 1];
    /// assert_eq!(c.peek(&mut b)?, 1);
    /// assert_eq!(c.read(&mut b)?, 1);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        // Nothing to peek into: at once, as an empty read (module docs).
        if buf.is_empty() {
            return Ok(0);
        }
        self.inner
            .do_io(Direction::Read, self.read_timeout.get(), would_block, |s| {
                s.peek(buf)
            })
    }

    /// A second handle to the same connection (a `dup` of the fd), with a
    /// copy of this handle's timeouts.
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    /// let c = eevdf_rt::net::TcpStream::connect(l.local_addr()?)?;
    /// let (mut s, _) = l.accept()?;
    /// let mut c2 = c.try_clone()?;
    /// c2.write_all(b"!")?;
    /// let mut b = [0u8; 1];
    /// s.read_exact(&mut b)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn try_clone(&self) -> io::Result<TcpStream> {
        Ok(TcpStream::with_timeouts(
            self.inner.get_ref().try_clone()?,
            self.read_timeout.get(),
            self.write_timeout.get(),
        ))
    }
}

impl Read for &TcpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner
            .read_with(buf, self.read_timeout.get(), |s, b| (&*s).read(b))
    }

    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        self.inner
            .read_vectored_with(bufs, self.read_timeout.get(), |s, b| (&*s).read_vectored(b))
    }
}

impl Write for &TcpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner
            .write_with(buf, self.write_timeout.get(), true, |s, b| {
                crate::sys::send(s.as_raw_fd(), b)
            })
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.inner
            .write_vectored_with(bufs, self.write_timeout.get(), true, |s, b| {
                crate::sys::send_vectored(s.as_raw_fd(), b)
            })
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

crate::io::source::impl_read_via_ref!(TcpStream);
crate::io::source::impl_write_via_ref!(TcpStream);
crate::io::source::impl_fd_traits!(TcpListener, TcpStream);
crate::io::poll::impl_poll_io!(TcpStream => std::net::TcpStream: socket);
