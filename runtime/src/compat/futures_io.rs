//! `futures_io::AsyncRead` / `AsyncWrite` (the futures-rs traits) for the
//! net and pipe types (feature `futures-io`).
//!
//! Owns: the trait impls only; the polling is `compat::stream`'s. Must
//! not: depend on any executor.

use super::stream::{self, ShutdownWrite};
use futures_io::{AsyncRead, AsyncWrite};
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

macro_rules! impl_async_read {
    ($($t:ty),+) => {$(
        impl AsyncRead for $t {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut [u8],
            ) -> Poll<io::Result<usize>> {
                stream::poll_read(&*self, cx, buf)
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

            fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(())) // writes go straight to the kernel
            }

            fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
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
