//! Transports: how one receiver's channel is made, and blocking I/O on it.
//!
//! Owns: the list of transports ([`TransportKind`]), creating the fd pair
//! behind each receiver (UNIX socket pair, pipe, or a TCP connection over
//! 127.0.0.1) and the raw, allocation-free `read`/`write` wrappers the
//! blocking backends use on those fds, and the rule that the fd-less
//! `channel` transport belongs to the green backend only
//! ([`require_fds`]). Must not: know about groups, senders, loops or
//! verification; async and green backends take the fds made here (or make
//! their own) and wrap them in their own types.

use std::io;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Which kind of channel connects the senders of a group to one receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportKind {
    /// `socketpair(AF_UNIX, SOCK_STREAM)`: hackbench's default.
    UnixSocket,
    /// `pipe()`: hackbench `-p`.
    Pipe,
    /// A TCP connection over 127.0.0.1 with `TCP_NODELAY`: hackbench `-i`.
    Tcp,
    /// No file descriptor: a bounded `eevdf_rt::sync::channel` per
    /// receiver (`--transport channel`, green only).
    Channel,
}

impl TransportKind {
    /// A short human name for reports ("unix sockets", "pipes", "tcp").
    pub fn describe(self) -> &'static str {
        match self {
            TransportKind::UnixSocket => "unix sockets",
            TransportKind::Pipe => "pipes",
            TransportKind::Tcp => "tcp loopback",
            TransportKind::Channel => "eevdf-rt channels",
        }
    }
}

/// The check every fd-based backend makes first: `--transport channel`
/// exists only on the green backend, so anything else is a usage error
/// (exit 2) naming `backend`.
pub fn require_fds(kind: TransportKind, backend: &str) -> Result<(), crate::error::BenchError> {
    if kind == TransportKind::Channel {
        return Err(crate::error::BenchError::Usage(format!(
            "--transport channel is green-only: the {backend} backend moves bytes through file descriptors"
        )));
    }
    Ok(())
}

/// One receiver's channel: every sender of the group writes into `tx`, the
/// receiver reads `rx`. Both ends are blocking and close-on-exec.
#[derive(Debug)]
pub struct Channel {
    /// The end the receiver reads.
    pub rx: OwnedFd,
    /// The end the group's senders share.
    pub tx: OwnedFd,
}

/// Makes `n` channels of kind `kind`.
///
/// `TransportKind::Channel` has no fds and is an `Unsupported` error.
///
/// For TCP, the pairs come from [`tcp_pairs`].
pub fn make_channels(kind: TransportKind, n: usize) -> io::Result<Vec<Channel>> {
    let mut out = Vec::with_capacity(n);
    match kind {
        TransportKind::UnixSocket => {
            for _ in 0..n {
                let (rx, tx) = socketpair()?;
                out.push(Channel { rx, tx });
            }
        }
        TransportKind::Pipe => {
            for _ in 0..n {
                let (rx, tx) = pipe()?;
                out.push(Channel { rx, tx });
            }
        }
        TransportKind::Tcp => {
            for (rx, tx) in tcp_pairs(n)? {
                out.push(Channel {
                    rx: OwnedFd::from(rx),
                    tx: OwnedFd::from(tx),
                });
            }
        }
        TransportKind::Channel => {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the channel transport has no file descriptors (green backend only)",
            ))
        }
    }
    Ok(out)
}

/// `n` connected TCP pairs over 127.0.0.1, as (accepted end, connecting
/// end), both blocking with `TCP_NODELAY` so that Nagle's algorithm does
/// not batch small messages. One listener on an ephemeral port accepts all
/// of them and is closed before returning.
pub fn tcp_pairs(n: usize) -> io::Result<Vec<(TcpStream, TcpStream)>> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let addr = listener.local_addr()?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let tx = TcpStream::connect(addr)?;
        let (rx, _) = listener.accept()?;
        tx.set_nodelay(true)?;
        rx.set_nodelay(true)?;
        out.push((rx, tx));
    }
    Ok(out)
}

/// `socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC)`; returns (read end, write end).
pub fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for the kernel to fill.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: on success both fds are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `pipe2(O_CLOEXEC)`; returns (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for the kernel to fill.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: on success both fds are open and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Writes all of `buf` to `fd` with blocking `write(2)` calls, retrying on
/// `EINTR` and after partial writes. Allocation-free and async-signal-safe,
/// so forked children may call it.
pub fn write_all(fd: BorrowedFd<'_>, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: `buf` is valid for `buf.len()` bytes; `fd` is open.
        let n = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// One blocking `read(2)` into `buf`, retrying on `EINTR`; `Ok(0)` is end of
/// file. Allocation-free and async-signal-safe.
pub fn read_some(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes; `fd` is open.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn every_transport_carries_bytes_and_reports_eof() {
        for kind in [
            TransportKind::UnixSocket,
            TransportKind::Pipe,
            TransportKind::Tcp,
        ] {
            let mut chans = make_channels(kind, 2).unwrap();
            let c = chans.pop().unwrap();
            write_all(c.tx.as_fd(), b"hello").unwrap();
            drop(c.tx);
            let mut buf = [0u8; 16];
            let mut got = Vec::new();
            loop {
                let n = read_some(c.rx.as_fd(), &mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            assert_eq!(got, b"hello", "{kind:?}");
        }
    }
}
