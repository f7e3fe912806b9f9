//! The two ends of one receiver's channel on the green backend.
//!
//! Owns: making a group's channels with the runtime's own types —
//! `eevdf_rt::net::UnixStream::pair`, `eevdf_rt::io::pipe`,
//! `eevdf_rt::net::TcpListener`/`TcpStream` over 127.0.0.1 with
//! `TCP_NODELAY` (connected by `transport`), or a bounded
//! `eevdf_rt::sync::channel` — and one write ([`Sink`] for [`Writer`]) and
//! one read ([`Source`] for [`Reader`]) for each, so `workload`'s sender
//! and receiver loops drive every transport. After each message the loops
//! call `eevdf_rt::preempt_point()` through `after_message`. Must not:
//! allocate per message, loop over messages, or count anything.
//!
//! # The channel transport
//!
//! A message is an `Arc<[u8]>` of `s` bytes made once per sender: a send
//! is a reference-count increment, never an allocation. The receiver
//! treats what it receives as a byte stream and copies it into its own
//! buffer, as `read(2)` would, so short and extra messages are detected by
//! the same byte accounting as on fds. The channel is bounded like a
//! socket's send buffer: [`channel_capacity`] messages.

use eevdf_rt::io::{PipeReader, PipeWriter};
use eevdf_rt::net::{TcpStream, UnixStream};
use eevdf_rt::sync::channel;
use std::io::{self, Read, Write};
use std::sync::Arc;

use crate::transport::{tcp_pairs, TransportKind};
use crate::workload::{Sink, Source};

/// One message as the channel transport carries it.
pub type Msg = Arc<[u8]>;

/// The default `SO_SNDBUF` of a UNIX socket (`net.core.wmem_default`), bytes.
const UNIX_SNDBUF: usize = 212_992;
/// What the kernel charges an `AF_UNIX` stream skb beyond its payload
/// (its truesize overhead on Linux 6.x x86-64), bytes.
const UNIX_SKB_OVERHEAD: usize = 666;

/// Capacity, in messages, of a channel-transport channel for `datasize`-byte
/// messages: as many as a nonblocking UNIX socket pair accepts before
/// `EAGAIN`, `212992 / (s + 666)`, at least 1. That is 278 messages at the
/// default 100 bytes (measured on this machine class: 278; a pipe holds
/// 640), 44 at 4 KiB.
pub fn channel_capacity(datasize: usize) -> usize {
    (UNIX_SNDBUF / (datasize.saturating_add(UNIX_SKB_OVERHEAD))).max(1)
}

/// The end a group's senders share.
#[derive(Debug)]
pub enum Writer {
    /// A UNIX socket pair's sending socket.
    Unix(UnixStream),
    /// A pipe's write end.
    Pipe(PipeWriter),
    /// The connecting side of a 127.0.0.1 TCP connection.
    Tcp(TcpStream),
    /// A bounded channel.
    Chan(channel::Sender<Msg>),
}

impl Sink for Writer {
    type Msg = Msg;

    /// Writes the whole message (blocking the green thread, not its worker,
    /// while the channel is full). A receiver that is gone is `BrokenPipe`.
    #[inline]
    fn send(&self, msg: &Msg) -> io::Result<()> {
        match self {
            Writer::Unix(s) => (&*s).write_all(msg),
            Writer::Pipe(p) => (&*p).write_all(msg),
            Writer::Tcp(s) => (&*s).write_all(msg),
            Writer::Chan(tx) => tx
                .send(Arc::clone(msg))
                .map_err(|_| io::ErrorKind::BrokenPipe.into()),
        }
    }

    #[inline]
    fn after_message(&self) {
        eevdf_rt::preempt_point();
    }
}

/// The end one receiver reads.
#[derive(Debug)]
pub enum Reader {
    /// A UNIX socket pair's receiving socket.
    Unix(UnixStream),
    /// A pipe's read end.
    Pipe(PipeReader),
    /// The accepted side of a 127.0.0.1 TCP connection.
    Tcp(TcpStream),
    /// A bounded channel, with the part of a message not yet copied out.
    Chan {
        /// The channel.
        rx: channel::Receiver<Msg>,
        /// The message being read and how much of it was copied already.
        pending: Option<(Msg, usize)>,
    },
}

impl Source for Reader {
    /// One read into `buf` (not empty), like `read(2)`: at least one byte,
    /// or `Ok(0)` at end of stream (every writer gone).
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Reader::Unix(s) => s.read(buf),
            Reader::Pipe(p) => p.read(buf),
            Reader::Tcp(s) => s.read(buf),
            Reader::Chan { rx, pending } => {
                if pending.is_none() {
                    match rx.recv() {
                        Ok(m) => *pending = Some((m, 0)),
                        Err(_) => return Ok(0),
                    }
                }
                let Some((msg, off)) = pending.as_mut() else {
                    unreachable!("a message was just received")
                };
                let n = (msg.len() - *off).min(buf.len());
                buf[..n].copy_from_slice(&msg[*off..*off + n]);
                *off += n;
                if *off == msg.len() {
                    *pending = None;
                }
                Ok(n)
            }
        }
    }

    #[inline]
    fn after_message(&self) {
        eevdf_rt::preempt_point();
    }
}

/// Makes `n` channels of kind `kind` for `datasize`-byte messages: the
/// writers (one per receiver, shared by the group's senders) and the
/// readers, in the same order. Callable from any thread.
pub fn make(
    kind: TransportKind,
    n: usize,
    datasize: usize,
) -> io::Result<(Vec<Writer>, Vec<Reader>)> {
    let mut writers = Vec::with_capacity(n);
    let mut readers = Vec::with_capacity(n);
    match kind {
        TransportKind::UnixSocket => {
            for _ in 0..n {
                let (rx, tx) = UnixStream::pair()?;
                writers.push(Writer::Unix(tx));
                readers.push(Reader::Unix(rx));
            }
        }
        TransportKind::Pipe => {
            for _ in 0..n {
                let (rx, tx) = eevdf_rt::io::pipe()?;
                writers.push(Writer::Pipe(tx));
                readers.push(Reader::Pipe(rx));
            }
        }
        TransportKind::Tcp => {
            for (rx, tx) in tcp_pairs(n)? {
                writers.push(Writer::Tcp(TcpStream::from_std(tx)?));
                readers.push(Reader::Tcp(TcpStream::from_std(rx)?));
            }
        }
        TransportKind::Channel => {
            let cap = channel_capacity(datasize);
            for _ in 0..n {
                let (tx, rx) = channel::bounded(cap);
                writers.push(Writer::Chan(tx));
                readers.push(Reader::Chan { rx, pending: None });
            }
        }
    }
    Ok((writers, readers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_mimics_a_unix_socket_buffer() {
        assert_eq!(channel_capacity(100), 278);
        assert_eq!(channel_capacity(4096), 44);
        assert_eq!(channel_capacity(1 << 20), 1);
    }

    #[test]
    fn every_transport_carries_a_byte_stream_to_end_of_file_from_os_threads() {
        for kind in [
            TransportKind::UnixSocket,
            TransportKind::Pipe,
            TransportKind::Tcp,
            TransportKind::Channel,
        ] {
            let (mut ws, mut rs) = make(kind, 2, 4).unwrap();
            let (w, mut r) = (ws.pop().unwrap(), rs.pop().unwrap());
            let msg: Msg = Arc::from(&b"abcd"[..]);
            w.send(&msg).unwrap();
            w.send(&msg).unwrap();
            drop(w);
            let mut got = Vec::new();
            let mut buf = [0u8; 3];
            loop {
                let n = r.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            assert_eq!(got, b"abcdabcd", "{kind:?}");
        }
    }
}
