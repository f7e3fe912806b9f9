//! Green-aware anonymous pipes.
//!
//! Owns: [`pipe`] and its two ends, whose reads and writes wait like a
//! socket's (`io::source`). Must not: wait any other way than through
//! `Source`, or raise what std's pipes would not (a write to a closed
//! pipe raises `SIGPIPE` as std's does; Rust programs ignore it).

use crate::io::source::Source;
use std::fs::File;
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::os::fd::OwnedFd;

/// Creates an anonymous pipe (`pipe2(O_NONBLOCK | O_CLOEXEC)`): bytes
/// written to the [`PipeWriter`] are read from the [`PipeReader`].
///
/// Both ends block like `std::io::pipe`'s — a green thread parks only
/// itself, an OS thread blocks — so green threads and OS threads can talk
/// through a pipe. When every writer is gone, reads return 0 (end of file);
/// when the reader is gone, writes fail with `BrokenPipe`.
///
/// ```
/// use std::io::{Read, Write};
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let (mut r, mut w) = eevdf_rt::io::pipe()?;
/// let writer = rt.spawn(move || w.write_all(b"hello through a pipe"));
/// let text = rt.block_on(move || {
///     let mut s = String::new();
///     r.read_to_string(&mut s).map(|_| s) // parks until the writer closes
/// })?;
/// writer.join().unwrap()?;
/// assert_eq!(text, "hello through a pipe");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn pipe() -> io::Result<(PipeReader, PipeWriter)> {
    let (tx, rx) = mio::unix::pipe::new()?;
    // `File` gives `Read`/`Write` on `&File` and `try_clone` for any fd
    // (std's `PipeReader`/`PipeWriter` need Rust 1.87; the MSRV is 1.85).
    let r = File::from(OwnedFd::from(rx));
    let w = File::from(OwnedFd::from(tx));
    Ok((
        PipeReader {
            inner: Source::new(r, mio::Interest::READABLE),
        },
        PipeWriter {
            inner: Source::new(w, mio::Interest::WRITABLE),
        },
    ))
}

/// The reading end of a [`pipe`]. `Read` is implemented for `PipeReader`
/// and `&PipeReader`.
///
/// ```
/// use std::io::{Read, Write};
/// let (mut r, mut w) = eevdf_rt::io::pipe()?;
/// w.write_all(b"abc")?;
/// drop(w);
/// let mut buf = Vec::new();
/// r.read_to_end(&mut buf)?; // an OS thread: blocks until EOF
/// assert_eq!(buf, b"abc");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct PipeReader {
    inner: Source<File>,
}

/// The writing end of a [`pipe`]. `Write` is implemented for `PipeWriter`
/// and `&PipeWriter`.
///
/// ```
/// use std::io::{Read, Write};
/// let (mut r, mut w) = eevdf_rt::io::pipe()?;
/// let w2 = w.try_clone()?;
/// (&w2).write_all(b"x")?;
/// w.write_all(b"y")?;
/// let mut buf = [0u8; 2];
/// r.read_exact(&mut buf)?;
/// assert_eq!(&buf, b"xy");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct PipeWriter {
    inner: Source<File>,
}

impl PipeReader {
    /// A second handle to the same reading end (a `dup` of the fd).
    ///
    /// ```
    /// let (r, _w) = eevdf_rt::io::pipe()?;
    /// let r2 = r.try_clone()?;
    /// # let _ = r2;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn try_clone(&self) -> io::Result<PipeReader> {
        Ok(PipeReader {
            inner: Source::new(self.inner.get_ref().try_clone()?, mio::Interest::READABLE),
        })
    }
}

impl PipeWriter {
    /// A second handle to the same writing end (a `dup` of the fd).
    ///
    /// ```
    /// let (_r, w) = eevdf_rt::io::pipe()?;
    /// let w2 = w.try_clone()?;
    /// # let _ = w2;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn try_clone(&self) -> io::Result<PipeWriter> {
        Ok(PipeWriter {
            inner: Source::new(self.inner.get_ref().try_clone()?, mio::Interest::WRITABLE),
        })
    }
}

impl Read for &PipeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_with(buf, None, |r, b| (&*r).read(b))
    }

    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        self.inner
            .read_vectored_with(bufs, None, |r, b| (&*r).read_vectored(b))
    }
}

impl Write for &PipeWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner
            .write_with(buf, None, false, |w, b| (&*w).write(b))
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.inner
            .write_vectored_with(bufs, None, false, |w, b| (&*w).write_vectored(b))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

crate::io::source::impl_read_via_ref!(PipeReader);
crate::io::source::impl_write_via_ref!(PipeWriter);
crate::io::source::impl_fd_traits!(PipeReader, PipeWriter);
crate::io::poll::impl_poll_io!(PipeReader => std::fs::File: pipe, PipeWriter => std::fs::File: pipe);
