//! The hackbench sender and receiver loops, written once for every backend
//! whose tasks block (`processes`, `threads`, `green`).
//!
//! Owns: what a sender does (each loop writes one `s`-byte message to every
//! receiver of its group), what a receiver does (reads `s`-byte messages
//! until end of file), when a sender stops ([`Loops`]), and the two small
//! traits a backend's channel ends implement so the loops can drive them
//! ([`Sink`], [`Source`]). On raw fds the loops are allocation-free and
//! async-signal-safe, so forked children can run them. Must not: create
//! channels, spawn tasks, time anything or judge the counts (`verify`).

use crate::transport::{read_some, write_all};
use crate::verify::Received;
use std::io;
use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// How long a sender keeps going.
#[derive(Clone, Copy, Debug)]
pub enum Loops<'a> {
    /// Exactly this many loops (`-l`).
    Fixed(u64),
    /// Until the flag is set; checked once per loop, so a sender always
    /// stops on a loop boundary (every receiver got the same count from it).
    UntilStopped(&'a AtomicBool),
}

impl<'a> Loops<'a> {
    /// `Fixed(n)` for `Some(n)`, else until `stop` is set.
    pub fn new(loops: Option<u64>, stop: &'a AtomicBool) -> Self {
        match loops {
            Some(n) => Loops::Fixed(n),
            None => Loops::UntilStopped(stop),
        }
    }

    /// Whether a sender that completed `done` loops must stop now.
    #[inline]
    pub fn finished(&self, done: u64) -> bool {
        match *self {
            Loops::Fixed(n) => done >= n,
            Loops::UntilStopped(stop) => stop.load(Ordering::Relaxed),
        }
    }
}

/// The end of a channel that senders write whole messages into.
pub trait Sink {
    /// A message as this end takes it (bytes for fds, a shared `Arc<[u8]>`
    /// for the green channel transport, so a send never allocates).
    type Msg: Deref<Target = [u8]> + for<'b> From<&'b [u8]> + Send + Sync + 'static;

    /// Writes all of `msg`; a receiver that is gone is an error.
    fn send(&self, msg: &Self::Msg) -> io::Result<()>;

    /// Called after every message: green threads offer the worker to others
    /// here (`eevdf_rt::preempt_point`, the analogue of the kernel's
    /// reschedule check on return from a syscall). OS tasks do nothing.
    #[inline]
    fn after_message(&self) {}
}

/// The end of a channel one receiver reads.
pub trait Source {
    /// One read into `buf` (not empty), like `read(2)`: at least one byte,
    /// or `Ok(0)` at end of stream.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize>;

    /// Called after every read that returned bytes (see [`Sink::after_message`]).
    #[inline]
    fn after_message(&self) {}
}

impl Sink for OwnedFd {
    type Msg = Vec<u8>;

    #[inline]
    fn send(&self, msg: &Vec<u8>) -> io::Result<()> {
        write_all(self.as_fd(), msg)
    }
}

impl Source for BorrowedFd<'_> {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        read_some(*self, buf)
    }
}

impl Source for OwnedFd {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        read_some(self.as_fd(), buf)
    }
}

/// A sender's loop, as a plain function so tests can substitute a broken
/// one. Returns the number of loops completed.
pub type SendFn<W> = fn(&[W], &<W as Sink>::Msg, Loops<'_>) -> io::Result<u64>;

/// The real sender: each loop writes `msg` once to every end in `writers`.
pub fn send_messages<W: Sink>(writers: &[W], msg: &W::Msg, loops: Loops<'_>) -> io::Result<u64> {
    let mut done = 0u64;
    while !loops.finished(done) {
        for w in writers {
            w.send(msg)?;
            w.after_message();
        }
        done += 1;
    }
    Ok(done)
}

/// The receiver: reads `buf.len()`-byte messages from `reader` until end of
/// file, like hackbench's receiver (each read asks for the rest of the
/// current message). Returns the tally for `verify`.
pub fn receive_messages<R: Source>(reader: &mut R, buf: &mut [u8]) -> io::Result<Received> {
    let size = buf.len();
    let mut got = Received::default();
    loop {
        let n = reader.read(&mut buf[got.partial_bytes..])?;
        if n == 0 {
            return Ok(got);
        }
        got.add(n, size);
        reader.after_message();
    }
}
