//! The wake-up token between a message thread and a worker, as an interface, and its
//! futex implementation for OS threads.
//!
//! This module owns the post/wait protocol of the original: a one-token semaphore on a
//! futex word. It must not know lists, statistics or backends; each backend supplies
//! its own [`Token`] (tokio: `Notify`; green: the runtime's futex).
//!
//! Protocol on a `u32` word (0 = no token, 1 = token):
//! - `arm`: store 0 before publishing yourself, so a token left over from an earlier
//!   round cannot satisfy the coming wait.
//! - `post`: CAS 0→1; only if that succeeded, `FUTEX_WAKE(1)`. A post that finds 1 does
//!   nothing: the token is already there and its poster does the wake.
//! - `wait`: loop { CAS 1→0 succeeds → return; else `FUTEX_WAIT(expect 0)` }. The
//!   kernel re-checks the word under its hash-bucket lock, so a post landing between
//!   the failed CAS and the sleep makes the wait return at once (`EAGAIN`).
//!
//! Orderings: `post`'s CAS is `Release` and `wait`'s CAS `Acquire`, so what the poster
//! wrote before posting (the wake stamp, a pipe message) is visible to the woken side.
//! `arm` is relaxed: it is always followed by a release that publishes it (the push on
//! the wait list, or the `AcqRel` swap that takes the list; see `list`).

use linux_futex::{Futex, Private};
use std::sync::atomic::{AtomicU32, Ordering};

/// A one-token wake-up channel that any thread may post.
pub trait Token: Send + Sync + Default + 'static {
    /// Clears a leftover token. Called by the waiter before it publishes itself.
    fn arm(&self);
    /// Deposits the token and wakes the waiter if it sleeps.
    fn post(&self);
}

/// A [`Token`] whose waiter blocks its thread (OS threads; green threads).
pub trait BlockingToken: Token {
    /// Blocks until the token is there and consumes it.
    fn wait(&self);
}

/// The original's futex semaphore. Aligned so tokens do not share cache lines.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct FutexToken {
    word: Futex<Private>,
}

impl FutexToken {
    /// The raw futex word (0 or 1), for tests and diagnostics.
    pub fn raw(&self) -> &AtomicU32 {
        &self.word.value
    }

    /// Consumes the token if it is there, without blocking.
    #[inline]
    pub fn try_take(&self) -> bool {
        self.word
            .value
            .compare_exchange(1, 0, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }
}

impl Token for FutexToken {
    #[inline]
    fn arm(&self) {
        self.word.value.store(0, Ordering::Relaxed);
    }

    #[inline]
    fn post(&self) {
        if self
            .word
            .value
            .compare_exchange(0, 1, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            self.word.wake(1);
        }
    }
}

impl BlockingToken for FutexToken {
    #[inline]
    fn wait(&self) {
        while !self.try_take() {
            // WrongValue (a post raced us) and Interrupted both mean: try again.
            let _ = self.word.wait(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn post_before_wait_is_not_lost() {
        let t = FutexToken::default();
        t.post();
        t.post(); // one token only
        t.wait();
        assert_eq!(t.raw().load(Ordering::Relaxed), 0);
        assert!(!t.try_take());
    }

    #[test]
    fn arm_clears_a_stale_token() {
        let t = FutexToken::default();
        t.post();
        t.arm();
        assert!(!t.try_take());
    }

    #[test]
    fn ping_pong_across_threads() {
        let (a, b) = (
            Arc::new(FutexToken::default()),
            Arc::new(FutexToken::default()),
        );
        let (a2, b2) = (a.clone(), b.clone());
        let peer = std::thread::spawn(move || {
            for _ in 0..1000 {
                a2.wait();
                b2.post();
            }
        });
        for _ in 0..1000 {
            a.post();
            b.wait();
        }
        peer.join().unwrap();
    }
}
