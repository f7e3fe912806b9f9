//! The poll functions both async-trait families share: read into a byte
//! slice, write, write vectored, and shut down, for any type whose I/O
//! goes through a `Source` (`io::poll::PollIo`).
//!
//! Owns: turning `Read`/`Write` on the wrapped std object into `poll_*`
//! through `Source::poll_io`. Must not: know about tokio or futures-rs.

use crate::io::poll::PollIo;
use crate::io::source::Direction;
use std::io::{self, IoSlice, Read, Write};
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::task::{Context, Poll};

/// Reads into `buf`.
pub(crate) fn poll_read<T>(t: &T, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>>
where
    T: PollIo,
    for<'a> &'a T::Io: Read,
{
    // Nothing to read into: done at once, as the blocking read does
    // (`Source::read_with`).
    if buf.is_empty() {
        return Poll::Ready(Ok(0));
    }
    t.source()
        .poll_io(cx, Direction::Read, |io| (&mut &*io).read(buf))
}

/// Writes from `buf`.
pub(crate) fn poll_write<T>(t: &T, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>>
where
    T: PollIo,
    for<'a> &'a T::Io: Write,
{
    t.source().poll_io(cx, Direction::Write, |io| {
        if T::SOCKET {
            crate::sys::send(io.as_raw_fd(), buf)
        } else {
            (&mut &*io).write(buf)
        }
    })
}

/// Writes from `bufs` (one `writev`, or `sendmsg` on a socket).
pub(crate) fn poll_write_vectored<T>(
    t: &T,
    cx: &mut Context<'_>,
    bufs: &[IoSlice<'_>],
) -> Poll<io::Result<usize>>
where
    T: PollIo,
    for<'a> &'a T::Io: Write,
{
    t.source().poll_io(cx, Direction::Write, |io| {
        if T::SOCKET {
            crate::sys::send_vectored(io.as_raw_fd(), bufs)
        } else {
            (&mut &*io).write_vectored(bufs)
        }
    })
}

/// A socket whose writing half can be shut down.
pub(crate) trait ShutdownWrite {
    /// `shutdown(SHUT_WR)`; a socket that is not connected (any more)
    /// counts as shut down.
    fn shutdown_write(&self) -> io::Result<()>;
}

impl ShutdownWrite for crate::net::TcpStream {
    fn shutdown_write(&self) -> io::Result<()> {
        not_connected_is_ok(self.shutdown(Shutdown::Write))
    }
}

impl ShutdownWrite for crate::net::UnixStream {
    fn shutdown_write(&self) -> io::Result<()> {
        not_connected_is_ok(self.shutdown(Shutdown::Write))
    }
}

impl ShutdownWrite for crate::io::PipeWriter {
    fn shutdown_write(&self) -> io::Result<()> {
        Ok(())
    }
}

fn not_connected_is_ok(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
        r => r,
    }
}
