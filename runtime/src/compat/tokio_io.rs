//! `tokio::io::AsyncRead` / `AsyncWrite` for the net and pipe types
//! (feature `tokio-io`).
//!
//! Owns: the trait impls only; the polling is `compat::stream`'s. Must
//! not: need a tokio runtime (only tokio's trait definitions are used).
//!
//! ```
//! use eevdf_rt::net::{TcpListener, TcpStream};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
//! let echoed = rt.block_on(|| {
//!     let l = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = l.local_addr().unwrap();
//!     let server = eevdf_rt::spawn_future(async move {
//!         let (mut s, _) = l.accept().unwrap();
//!         let mut buf = [0u8; 5];
//!         s.read_exact(&mut buf).await.unwrap();
//!         s.write_all(&buf).await.unwrap();
//!     });
//!     let mut c = TcpStream::connect(addr).unwrap();
//!     let got = eevdf_rt::block_on_future(async move {
//!         c.write_all(b"hello").await.unwrap();
//!         let mut buf = [0u8; 5];
//!         c.read_exact(&mut buf).await.unwrap();
//!         buf
//!     });
//!     server.join().unwrap();
//!     got
//! });
//! assert_eq!(&echoed, b"hello");
//! ```

use super::stream::{self, ShutdownWrite};
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

macro_rules! impl_async_read {
    ($($t:ty),+) => {$(
        impl AsyncRead for $t {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<()>> {
                // `initialize_unfilled` zeroes what was never initialised
                // (all of a fresh `ReadBuf::uninit`: a memset, small next
                // to the syscall) so that safe `Read` can fill it.
                let n = ready!(stream::poll_read(&*self, cx, buf.initialize_unfilled()))?;
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
        }
    )+};
}

macro_rules! impl_async_write {
    ($($t:ty),+) => {$(
        impl AsyncWrite for $t {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                stream::poll_write(&*self, cx, buf)
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                stream::poll_write_vectored(&*self, cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                true
            }

            fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(())) // writes go straight to the kernel
            }

            fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(self.shutdown_write())
            }
        }
    )+};
}

impl_async_read!(
    crate::net::TcpStream,
    crate::net::UnixStream,
    crate::io::PipeReader
);
impl_async_write!(
    crate::net::TcpStream,
    crate::net::UnixStream,
    crate::io::PipeWriter
);
