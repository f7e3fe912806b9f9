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
use std::time::Duration;

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
