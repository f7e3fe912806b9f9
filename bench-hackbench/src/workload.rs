//! The hackbench sender and receiver loops on blocking file descriptors.
//!
//! Owns: what a sender does (each loop writes one `s`-byte message to every
//! receiver of its group) and what a receiver does (reads `s`-byte messages
//! until end of file), for the backends whose tasks block in the kernel
//! (`processes`, `threads`). Both loops are allocation-free and
//! async-signal-safe, so forked children can run them. Must not: create
//! fds, spawn tasks, time anything or judge the counts (`verify` does).

use crate::transport::{read_some, write_all};
use crate::verify::Received;
use std::io;
use std::os::fd::BorrowedFd;
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

/// A sender's loop, as a plain function so tests can substitute a broken
/// one. Returns the number of loops completed.
pub type SendFn = fn(&[BorrowedFd<'_>], &[u8], Loops<'_>) -> io::Result<u64>;

/// The real sender: each loop writes `msg` once to every fd in `writers`.
pub fn send_messages(writers: &[BorrowedFd<'_>], msg: &[u8], loops: Loops<'_>) -> io::Result<u64> {
    let mut done = 0u64;
    loop {
        match loops {
            Loops::Fixed(n) if done == n => break,
            Loops::UntilStopped(stop) if stop.load(Ordering::Relaxed) => break,
            _ => {}
        }
        for &fd in writers {
            write_all(fd, msg)?;
        }
        done += 1;
    }
    Ok(done)
}

/// The receiver: reads `buf.len()`-byte messages from `reader` until end of
/// file, like hackbench's receiver (each `read` asks for the rest of the
/// current message). Returns the tally for `verify`.
pub fn receive_messages(reader: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Received> {
    let size = buf.len();
    let mut got = Received::default();
    loop {
        let n = read_some(reader, &mut buf[got.partial_bytes..])?;
        if n == 0 {
            return Ok(got);
        }
        got.add(n, size);
    }
}
