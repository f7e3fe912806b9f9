//! Unix domain stream sockets: [`UnixListener`] and [`UnixStream`].
//!
//! Owns: the std-shaped Unix stream types and their timeouts. Must not:
//! wait any other way than through `io::source`.

use super::Timeout;
use crate::io::source::{would_block, Direction, Source};
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::net::Shutdown;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

const INTEREST: mio::Interest = mio::Interest::READABLE.add(mio::Interest::WRITABLE);

/// A Unix domain socket server — `std::os::unix::net::UnixListener` whose
/// `accept` parks only the calling green thread.
///
/// ```
/// use std::io::{Read, Write};
/// let dir = std::env::temp_dir().join(format!("eevdf-rt-doc-ul-{}", std::process::id()));
/// let _ = std::fs::remove_file(&dir);
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let path = dir.clone();
/// let got = rt.block_on(move || -> std::io::Result<Vec<u8>> {
///     let l = eevdf_rt::net::UnixListener::bind(&path)?;
///     let p2 = path.clone();
///     let client = eevdf_rt::spawn(move || -> std::io::Result<()> {
///         eevdf_rt::net::UnixStream::connect(&p2)?.write_all(b"over a unix socket")
///     });
///     let (mut s, _) = l.accept()?;
///     let mut v = Vec::new();
///     s.read_to_end(&mut v)?;
///     client.join().unwrap()?;
///     Ok(v)
/// })?;
/// assert_eq!(got, b"over a unix socket");
/// std::fs::remove_file(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct UnixListener {
    inner: Source<mio::net::UnixListener>,
}

impl UnixListener {
    /// Binds to the filesystem path `path` (which must not exist) and listens.
    ///
    /// ```
    /// let p = std::env::temp_dir().join(format!("eevdf-rt-doc-bind-{}", std::process::id()));
    /// let _ = std::fs::remove_file(&p);
    /// let l = eevdf_rt::net::UnixListener::bind(&p)?;
    /// assert_eq!(l.local_addr()?.as_pathname(), Some(p.as_path()));
    /// std::fs::remove_file(&p)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixListener> {
        Ok(UnixListener {
            inner: Source::new(mio::net::UnixListener::bind(path)?, INTEREST),
        })
    }

    /// Wraps a listener from the standard library (switched to nonblocking mode).
    ///
    /// ```
    /// let p = std::env::temp_dir().join(format!("eevdf-rt-doc-fstd-{}", std::process::id()));
    /// let _ = std::fs::remove_file(&p);
    /// let l = eevdf_rt::net::UnixListener::from_std(std::os::unix::net::UnixListener::bind(&p)?)?;
    /// # let _ = l;
    /// std::fs::remove_file(&p)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_std(l: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        l.set_nonblocking(true)?;
        Ok(UnixListener {
            inner: Source::new(mio::net::UnixListener::from_std(l), INTEREST),
        })
    }

    /// Accepts a connection: parks the calling green thread (blocks an OS
    /// thread) until one arrives.
    ///
    /// ```
    /// let p = std::env::temp_dir().join(format!("eevdf-rt-doc-acc-{}", std::process::id()));
    /// let _ = std::fs::remove_file(&p);
    /// let l = eevdf_rt::net::UnixListener::bind(&p)?;
    /// let _c = std::os::unix::net::UnixStream::connect(&p)?;
    /// let (s, _addr) = l.accept()?;
    /// # let _ = s;
    /// std::fs::remove_file(&p)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        if let Some(r) = self.inner.ring_accept() {
            // The peer's address is asked of the new socket (std's unix
            // `SocketAddr` cannot be built from raw bytes).
            let s = std::os::unix::net::UnixStream::from(r?.0);
            let addr = s.peer_addr()?;
            return Ok((UnixStream::new(s, None, None), addr));
        }
        let (s, addr) = self
            .inner
            .do_io(Direction::Read, None, would_block, |l| l.accept())?;
        Ok((UnixStream::new(s.into(), None, None), addr))
    }

    /// An iterator over incoming connections (`accept` in a loop; never `None`).
    ///
    /// ```
    /// let p = std::env::temp_dir().join(format!("eevdf-rt-doc-inc-{}", std::process::id()));
    /// let _ = std::fs::remove_file(&p);
    /// let l = eevdf_rt::net::UnixListener::bind(&p)?;
    /// let _c = std::os::unix::net::UnixStream::connect(&p)?;
    /// let s = l.incoming().next().unwrap()?;
    /// # let _ = s;
    /// std::fs::remove_file(&p)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn incoming(&self) -> UnixIncoming<'_> {
        UnixIncoming { listener: self }
    }

    /// The address the listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().local_addr()
    }

    /// A second handle to the same listening socket (a `dup` of the fd).
    pub fn try_clone(&self) -> io::Result<UnixListener> {
        let fd = self.inner.get_ref().as_fd().try_clone_to_owned()?;
        Ok(UnixListener {
            inner: Source::new(mio::net::UnixListener::from(fd), INTEREST),
        })
    }

    /// Takes the pending `SO_ERROR`, if any.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.inner.get_ref().take_error()
    }
}

/// The iterator of [`UnixListener::incoming`].
#[derive(Debug)]
pub struct UnixIncoming<'a> {
    listener: &'a UnixListener,
}

impl Iterator for UnixIncoming<'_> {
    type Item = io::Result<UnixStream>;

    fn next(&mut self) -> Option<io::Result<UnixStream>> {
        Some(self.listener.accept().map(|(s, _)| s))
    }
}

/// A Unix domain stream connection — `std::os::unix::net::UnixStream`
/// whose reads and writes park only the calling green thread.
///
/// `Read`/`Write` are implemented for `UnixStream` and `&UnixStream`;
/// timeouts are kept by this object, as for [`TcpStream`](super::TcpStream).
///
/// ```
/// use std::io::{Read, Write};
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let (mut a, mut b) = eevdf_rt::net::UnixStream::pair()?;
/// // A green thread echoes; this OS thread talks to it.
/// let echo = rt.spawn(move || -> std::io::Result<()> {
///     let mut buf = [0u8; 64];
///     loop {
///         let n = b.read(&mut buf)?;
///         if n == 0 { return Ok(()); }
///         b.write_all(&buf[..n])?;
///     }
/// });
/// a.write_all(b"marco")?;
/// let mut r = [0u8; 5];
/// a.read_exact(&mut r)?;
/// assert_eq!(&r, b"marco");
/// a.shutdown(std::net::Shutdown::Write)?;
/// echo.join().unwrap()?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct UnixStream {
    inner: Source<std::os::unix::net::UnixStream>,
    read_timeout: Timeout,
    write_timeout: Timeout,
}

impl UnixStream {
    fn new(
        s: std::os::unix::net::UnixStream,
        read: Option<Duration>,
        write: Option<Duration>,
    ) -> UnixStream {
        UnixStream {
            inner: Source::new(s, INTEREST),
            read_timeout: Timeout::new(read),
            write_timeout: Timeout::new(write),
        }
    }

    /// Connects to the socket at `path`. Unix connects complete at once
    /// unless the listener's backlog is full; then this retries every
    /// millisecond (sleeping, green-aware) until there is room, as a
    /// blocking connect would wait.
    ///
    /// ```
    /// let p = std::env::temp_dir().join(format!("eevdf-rt-doc-conn-{}", std::process::id()));
    /// let _ = std::fs::remove_file(&p);
    /// let l = std::os::unix::net::UnixListener::bind(&p)?;
    /// let s = eevdf_rt::net::UnixStream::connect(&p)?;
    /// # let _ = (s, l);
    /// std::fs::remove_file(&p)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn connect<P: AsRef<Path>>(path: P) -> io::Result<UnixStream> {
        loop {
            match mio::net::UnixStream::connect(path.as_ref()) {
                Ok(s) => return Ok(UnixStream::new(s.into(), None, None)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    crate::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A connected pair of sockets (`socketpair`).
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// let (mut a, mut b) = eevdf_rt::net::UnixStream::pair()?;
    /// a.write_all(b"hi")?;
    /// let mut buf = [0u8; 2];
    /// b.read_exact(&mut buf)?;
    /// assert_eq!(&buf, b"hi");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = mio::net::UnixStream::pair()?;
        Ok((
            UnixStream::new(a.into(), None, None),
            UnixStream::new(b.into(), None, None),
        ))
    }

    /// Wraps a connected stream from the standard library (switched to
    /// nonblocking mode). Its read and write timeouts carry over: the
    /// kernel ignores them on a nonblocking socket, so this type enforces
    /// them.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (a, _b) = std::os::unix::net::UnixStream::pair()?;
    /// a.set_write_timeout(Some(Duration::from_millis(250)))?;
    /// let kept = a.write_timeout()?; // 250 ms rounded up to a clock tick
    /// let a = eevdf_rt::net::UnixStream::from_std(a)?;
    /// assert_eq!(a.write_timeout()?, kept);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_std(s: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        let (read, write) = (s.read_timeout()?, s.write_timeout()?);
        s.set_nonblocking(true)?;
        Ok(UnixStream::new(s, read, write))
    }

    /// Sets the read timeout: a read that waits longer fails with
    /// `ErrorKind::WouldBlock`, like std. `Some(Duration::ZERO)` is
    /// `InvalidInput`.
    ///
    /// ```
    /// use std::io::Read;
    /// use std::time::Duration;
    /// let (mut a, _b) = eevdf_rt::net::UnixStream::pair()?;
    /// a.set_read_timeout(Some(Duration::from_millis(5)))?;
    /// assert_eq!(a.read(&mut [0u8; 1]).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn set_read_timeout(&self, dur: Option<Duration>) -> io::Result<()> {
        self.read_timeout.set(dur)
    }

    /// Sets the write timeout (see [`set_read_timeout`](Self::set_read_timeout)).
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

    /// Shuts down the read half, the write half or both.
    ///
    /// ```
    /// use std::io::Read;
    /// let (a, mut b) = eevdf_rt::net::UnixStream::pair()?;
    /// a.shutdown(std::net::Shutdown::Write)?;
    /// assert_eq!(b.read(&mut [0u8; 4])?, 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.get_ref().shutdown(how)
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().local_addr()
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().peer_addr()
    }

    /// Takes the pending `SO_ERROR`, if any.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.inner.get_ref().take_error()
    }

    /// A second handle to the same connection (a `dup` of the fd), with a
    /// copy of this handle's timeouts.
    ///
    /// ```
    /// let (a, _b) = eevdf_rt::net::UnixStream::pair()?;
    /// let a2 = a.try_clone()?;
    /// # let _ = a2;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn try_clone(&self) -> io::Result<UnixStream> {
        Ok(UnixStream::new(
            self.inner.get_ref().try_clone()?,
            self.read_timeout.get(),
            self.write_timeout.get(),
        ))
    }
}

impl Read for &UnixStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner
            .read_with(buf, self.read_timeout.get(), |s, b| (&*s).read(b))
    }

    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        self.inner
            .read_vectored_with(bufs, self.read_timeout.get(), |s, b| (&*s).read_vectored(b))
    }
}

impl Write for &UnixStream {
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

crate::io::source::impl_read_via_ref!(UnixStream);
crate::io::source::impl_write_via_ref!(UnixStream);
crate::io::source::impl_fd_traits!(UnixListener, UnixStream);
crate::io::poll::impl_poll_io!(UnixStream => std::os::unix::net::UnixStream: socket);
