//! Whether a stream operation on the io_uring path should try the
//! nonblocking call before it submits to the ring.
//!
//! Owns: [`TryFirst`], one descriptor's and one direction's record of how
//! its recent nonblocking calls went. Must not: make any call itself, or
//! change what an operation returns (it only chooses between two ways of
//! getting the same result).
//!
//! # Why
//!
//! With data or buffer space at hand, the nonblocking call completes with
//! no park and no submission; that is the common case for writes, and for
//! reads under load. But on a request/response stream (an echo, an RPC
//! connection, a ping-pong) almost every read finds nothing yet: the call
//! answers `EAGAIN`, and only then does the read go to the ring. That
//! failed call is a whole system call per message (about 0.3 µs of the
//! 11–13 µs TCP echo round trip on the development VM).
//!
//! # The rule
//!
//! After [`SKIP_AFTER`] calls in a row that would have blocked, the
//! operation goes straight to the ring. While skipping, every
//! [`PROBE_EVERY`]th operation tries the call anyway, and one that finds
//! data or space ends the skipping. So a stream that turns busy pays at
//! most `PROBE_EVERY − 1` ring round trips (each a park until the
//! completion is reaped) before it is back on the direct path, and a
//! stream that keeps waiting saves all but one failed call in
//! `PROBE_EVERY`.
//!
//! The record is a heuristic shared by every thread that uses the
//! descriptor: plain relaxed loads and stores, no read-modify-write. Two
//! threads racing on it can only lose an update, which changes the choice
//! of path for a call or two, never a result.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// Calls in a row that would have blocked before the operation skips the
/// nonblocking try.
pub(crate) const SKIP_AFTER: u8 = 2;
/// While skipping, one operation in this many tries the call anyway.
pub(crate) const PROBE_EVERY: u8 = 8;

/// One descriptor's record for one direction (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct TryFirst {
    /// Tries in a row that would have blocked, up to [`SKIP_AFTER`].
    waits: AtomicU8,
    /// Operations that skipped the try since the last probe.
    skipped: AtomicU8,
}

impl TryFirst {
    /// A record with no history: the next call is tried.
    pub(crate) const fn new() -> Self {
        TryFirst {
            waits: AtomicU8::new(0),
            skipped: AtomicU8::new(0),
        }
    }

    /// Whether the next operation should try the nonblocking call first
    /// (`false`: straight to the ring). Counts the skip.
    #[inline]
    pub(crate) fn should_try(&self) -> bool {
        if self.waits.load(Relaxed) < SKIP_AFTER {
            return true;
        }
        let s = self.skipped.load(Relaxed);
        if s + 1 >= PROBE_EVERY {
            self.skipped.store(0, Relaxed);
            return true;
        }
        self.skipped.store(s + 1, Relaxed);
        false
    }

    /// The try completed (or failed with anything but `WouldBlock`).
    #[inline]
    pub(crate) fn completed(&self) {
        if self.waits.load(Relaxed) != 0 {
            self.waits.store(0, Relaxed);
        }
    }

    /// The try answered `WouldBlock`.
    #[inline]
    pub(crate) fn would_block(&self) {
        let w = self.waits.load(Relaxed);
        if w < SKIP_AFTER {
            self.waits.store(w + 1, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives the record with a stream whose calls would block or not, as
    /// `blocks` says, and returns which operations were tried.
    fn run(blocks: impl Fn(usize) -> bool, n: usize) -> Vec<bool> {
        let t = TryFirst::new();
        (0..n)
            .map(|i| {
                let tried = t.should_try();
                if tried {
                    if blocks(i) {
                        t.would_block();
                    } else {
                        t.completed();
                    }
                }
                tried
            })
            .collect()
    }

    #[test]
    fn a_stream_with_data_is_always_tried() {
        assert!(run(|_| false, 100).iter().all(|&t| t));
    }

    #[test]
    fn a_stream_that_always_waits_is_tried_once_in_probe_every() {
        let tried = run(|_| true, 2 + 8 * 10);
        // the first SKIP_AFTER are tried, then one in PROBE_EVERY
        assert!(tried[..SKIP_AFTER as usize].iter().all(|&t| t));
        let rest = &tried[SKIP_AFTER as usize..];
        assert_eq!(
            rest.iter().filter(|&&t| t).count(),
            rest.len() / PROBE_EVERY as usize
        );
        for chunk in rest.chunks(PROBE_EVERY as usize) {
            assert_eq!(
                chunk,
                [false, false, false, false, false, false, false, true]
            );
        }
    }

    #[test]
    fn a_stream_that_turns_busy_is_back_on_the_try_within_probe_every() {
        // waits for 20 operations, then always has data
        let tried = run(|i| i < 20, 60);
        let first_skip_after_busy = (20..60).position(|i| tried[i]).unwrap();
        assert!(first_skip_after_busy < PROBE_EVERY as usize);
        let back = 20 + first_skip_after_busy;
        assert!(tried[back..].iter().all(|&t| t), "{tried:?}");
    }

    #[test]
    fn one_wait_between_successes_never_skips() {
        // alternating: the run of waits never reaches SKIP_AFTER
        assert!(run(|i| i % 2 == 0, 100).iter().all(|&t| t));
    }
}
