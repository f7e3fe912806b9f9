//! Green-aware networking: TCP and Unix domain stream sockets with the
//! blocking API of `std::net` / `std::os::unix::net`.
//!
//! A call that would block parks only the calling green thread (its worker
//! runs other green threads meanwhile) and resumes it when the runtime's
//! reactor reports the socket ready; on a plain OS thread the same call
//! simply blocks. So a program written against `std::net` ports by
//! changing imports, and green threads and OS threads can be the two ends
//! of one connection. How waiting works is described in [`crate::io`].
//!
//! Owns: the socket types and what they share (addresses for the ring,
//! timeouts). Must not: wait or poll themselves (`io` does).
//!
//! Three differences from `std::net`:
//! - A read (or `peek`) into an empty buffer returns `Ok(0)` at once. The kernel would
//!   make it wait until data arrives (and then still return 0); a runtime
//!   read of nothing does not wait, on either I/O driver, blocking or
//!   async.
//! - Every write sends with `MSG_NOSIGNAL`: a write to a closed peer is an
//!   `EPIPE` error, never a `SIGPIPE`, even in a program that does not
//!   ignore that signal (std's `UnixStream` writes and its vectored writes
//!   raise it).
//! - The socket is in nonblocking mode (this type waits for it), and that
//!   mode belongs to the open socket, not to one descriptor: a duplicate
//!   (`as_fd().try_clone_to_owned()`, a descriptor handed to a child
//!   process, the std socket a `from_std` came from) answers `EAGAIN`
//!   where a std socket would wait.
//!
//! ```
//! use std::io::{Read, Write};
//! use eevdf_rt::net::{TcpListener, TcpStream};
//! let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
//! let total = rt.block_on(|| -> std::io::Result<usize> {
//!     let l = TcpListener::bind("127.0.0.1:0")?;
//!     let addr = l.local_addr()?;
//!     // An echo server: one green thread per connection.
//!     eevdf_rt::spawn(move || {
//!         for s in l.incoming() {
//!             let mut s = s.unwrap();
//!             eevdf_rt::spawn(move || {
//!                 let mut buf = [0u8; 1024];
//!                 while let Ok(n) = s.read(&mut buf) {
//!                     if n == 0 || s.write_all(&buf[..n]).is_err() { break; }
//!                 }
//!             });
//!         }
//!     });
//!     let clients: Vec<_> = (0..4).map(|i| eevdf_rt::spawn(move || -> std::io::Result<usize> {
//!         let mut c = TcpStream::connect(addr)?;
//!         let msg = format!("client {i}");
//!         c.write_all(msg.as_bytes())?;
//!         let mut back = vec![0u8; msg.len()];
//!         c.read_exact(&mut back)?;
//!         assert_eq!(back, msg.as_bytes());
//!         Ok(back.len())
//!     })).collect();
//!     let mut total = 0;
//!     for c in clients { total += c.join().unwrap()?; }
//!     Ok(total)
//! })?;
//! assert_eq!(total, 4 * 8);
//! drop(rt); // the server green threads still blocked in accept/read are unwound
//! # Ok::<(), std::io::Error>(())
//! ```

mod tcp;
mod unix;

pub use tcp::{Incoming, TcpListener, TcpStream};
pub use unix::{UnixIncoming, UnixListener, UnixStream};

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// `addr` as a C socket address, for io_uring's connect.
pub(crate) fn to_sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero bytes are a valid sockaddr_storage.
    let mut st: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write(&mut st as *mut _ as *mut libc::sockaddr_in, sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write(&mut st as *mut _ as *mut libc::sockaddr_in6, sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (st, len as libc::socklen_t)
}

/// A C socket address (from io_uring's accept) as a `SocketAddr`.
pub(crate) fn from_sockaddr(st: &libc::sockaddr_storage) -> io::Result<SocketAddr> {
    match st.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a = unsafe { &*(st as *const _ as *const libc::sockaddr_in) };
            let ip = std::net::Ipv4Addr::from(a.sin_addr.s_addr.to_ne_bytes());
            Ok(SocketAddr::from((ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a = unsafe { &*(st as *const _ as *const libc::sockaddr_in6) };
            Ok(SocketAddr::V6(std::net::SocketAddrV6::new(
                std::net::Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        f => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("accept returned an address of family {f}"),
        )),
    }
}

/// The error of a connect timeout (`ErrorKind::TimedOut`, like std's
/// `connect_timeout`).
pub(crate) fn connect_timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "connection timed out")
}

/// Timeout setting shared by the socket types: `None`, or a non-zero
/// duration (std refuses zero with `InvalidInput`).
#[derive(Debug, Default)]
pub(crate) struct Timeout {
    /// Nanoseconds; 0 means none.
    ns: std::sync::atomic::AtomicU64,
}

impl Timeout {
    pub(crate) fn new(d: Option<Duration>) -> Self {
        let t = Timeout::default();
        t.ns.store(Self::encode(d), std::sync::atomic::Ordering::Relaxed);
        t
    }

    fn encode(d: Option<Duration>) -> u64 {
        d.map_or(0, |d| d.as_nanos().clamp(1, u64::MAX as u128) as u64)
    }

    pub(crate) fn set(&self, d: Option<Duration>) -> io::Result<()> {
        if d == Some(Duration::ZERO) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot set a 0 duration timeout",
            ));
        }
        self.ns
            .store(Self::encode(d), std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    #[inline]
    pub(crate) fn get(&self) -> Option<Duration> {
        match self.ns.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }
}
