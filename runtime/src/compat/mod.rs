//! Bridges to the async ecosystem: the `AsyncRead`/`AsyncWrite` traits of
//! tokio and futures-rs for the net and pipe types, and hyper's runtime
//! traits.
//!
//! Owns: the trait implementations (one file per ecosystem, each behind
//! its cargo feature) and the poll helpers they share. Must not: do I/O
//! any other way than `io::poll` (readiness through the runtime's reactor
//! and nonblocking syscalls), or depend on a tokio runtime — none runs.
//!
//! | cargo feature | gives |
//! |---|---|
//! | `tokio-io` | `tokio::io::{AsyncRead, AsyncWrite}` for [`TcpStream`](crate::net::TcpStream), [`UnixStream`](crate::net::UnixStream), [`PipeReader`](crate::io::PipeReader) / [`PipeWriter`](crate::io::PipeWriter) |
//! | `futures-io` | `futures_io::{AsyncRead, AsyncWrite}` for the same types |
//! | `hyper` | `compat::hyper::{Executor, Timer}`, implementing `hyper::rt::Executor` and `hyper::rt::Timer` |
//!
//! The read and write timeouts of the blocking API (`set_read_timeout`)
//! do not apply to the async traits; wrap the future in
//! [`time::timeout`](crate::time::timeout) instead. Closing (`poll_shutdown`
//! / `poll_close`) shuts down the writing half of a socket and does
//! nothing for a pipe (dropping the writer closes it).

#[cfg(feature = "futures-io")]
mod futures_io;
#[cfg(feature = "hyper")]
pub mod hyper;
#[cfg(feature = "tokio-io")]
mod tokio_io;

#[cfg(any(feature = "tokio-io", feature = "futures-io"))]
mod stream;
