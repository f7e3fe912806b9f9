//! The idle state of a worker and the park/kick protocol.
//!
//! Owns: the per-worker futex word saying whether the worker is running,
//! polling for work, or parked in the kernel; the rule that a waker makes
//! the wake syscall only for a parked worker. Must not: look at run queues
//! (callers re-check their own work sources between `prepare_park` and
//! `park`).
//!
//! # Protocol (a Dekker pair)
//!
//! ```text
//!   worker (going idle)                 waker (publishing work)
//!   state.store(PARKED); fence(SeqCst)  publish work (wakelist CAS / counter)
//!   if has_work()                       fence(SeqCst); if state.load() == PARKED
//!       set_running(); run it               && CAS(PARKED → RUNNING) wins
//!   else futex_wait(state, PARKED)              futex_wake(state)
//! ```
//!
//! Each side stores, then a `SeqCst` fence, then loads; the two fences are
//! totally ordered, so either the worker's re-check sees the work, or the
//! waker's load sees `PARKED` and wakes it: no lost wakeup. (Fences rather
//! than `SeqCst` accesses: the same guarantee, and loom can check it.) A worker that is merely `POLLING`
//! needs no syscall — it sees the work on its next poll. The CAS makes sure
//! only one waker pays for the syscall; `futex_wait` returns at once if the
//! word is no longer `PARKED`.
//!
//! # Parked in the reactor (I/O)
//!
//! One idle worker at a time may park in the I/O reactor's `epoll_pwait2`
//! instead of the futex (`PARKED_REACTOR`, announced with the same `SeqCst`
//! store and followed by the same re-check). A kick that finds it wins the
//! same CAS and writes the reactor's eventfd waker instead of
//! `futex_wake`; an eventfd write that precedes the `epoll_pwait2` stays
//! queued on epoll's ready list, so the Dekker argument above carries over
//! unchanged. See `crate::io` for the whole argument.

use crate::loom::{fence, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Running a task or the scheduler.
pub(crate) const RUNNING: u32 = 0;
/// Idle, spinning on its work sources; no syscall needed to wake it.
pub(crate) const POLLING: u32 = 1;
/// Idle and (about to be) blocked in `futex_wait`.
pub(crate) const PARKED: u32 = 2;
/// Idle and (about to be) blocked in the I/O reactor's `epoll_pwait2`
/// (the reactor's poller); woken through the reactor's eventfd.
pub(crate) const PARKED_REACTOR: u32 = 3;

/// A worker's idle state word.
pub(crate) struct IdleState {
    word: AtomicU32,
    /// The reactor's waker, set when the runtime's reactor is created
    /// (before any worker can park in it).
    reactor_waker: OnceLock<Arc<mio::Waker>>,
}

impl IdleState {
    pub(crate) fn new() -> Self {
        IdleState {
            word: AtomicU32::new(RUNNING),
            reactor_waker: OnceLock::new(),
        }
    }

    /// The current state (`RUNNING`, `POLLING`, `PARKED` or `PARKED_REACTOR`).
    #[inline]
    pub(crate) fn get(&self) -> u32 {
        self.word.load(Ordering::SeqCst)
    }

    /// Announces that the worker is polling.
    pub(crate) fn start_polling(&self) {
        self.word.store(POLLING, Ordering::SeqCst);
    }

    /// Back to running (after polling found work, or instead of a park).
    /// `Release`: nothing is paired with it (a waker that still reads the
    /// old idle state only pays for a kick it did not need).
    pub(crate) fn set_running(&self) {
        if self.word.load(Ordering::Relaxed) != RUNNING {
            self.word.store(RUNNING, Ordering::Release);
        }
    }

    /// First half of parking: announce it. The caller must re-check every
    /// work source with `SeqCst` loads afterwards, then call `park` or
    /// `set_running`.
    pub(crate) fn prepare_park(&self) {
        self.word.store(PARKED, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// Second half: sleep until kicked, `timeout` passes, or a spurious
    /// wakeup. Returns with the state set back to `RUNNING`.
    pub(crate) fn park(&self, timeout: Option<Duration>) {
        if self.word.load(Ordering::Acquire) == PARKED {
            futex::wait(&self.word, PARKED, timeout);
        }
        // Release, as in `set_running`.
        self.word.store(RUNNING, Ordering::Release);
    }

    /// Hands over the reactor's waker (`io::reactor::get_or_init`).
    pub(crate) fn set_reactor_waker(&self, waker: Arc<mio::Waker>) {
        let _ = self.reactor_waker.set(waker);
    }

    /// First half of parking in the reactor (the poller): like
    /// [`prepare_park`](Self::prepare_park), the caller re-checks every work
    /// source afterwards, then polls the reactor or calls
    /// [`unpark_reactor`](Self::unpark_reactor).
    pub(crate) fn prepare_park_reactor(&self) {
        self.word.store(PARKED_REACTOR, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// Back to running after parking in the reactor (call as soon as the
    /// epoll wait returns, so wakers stop paying for eventfd writes).
    /// `Release`, as in `set_running`.
    pub(crate) fn unpark_reactor(&self) {
        self.word.store(RUNNING, Ordering::Release);
    }

    /// Wakes the worker if it is parked (on its futex, or in the reactor).
    /// Returns whether a wake syscall was made. Call after publishing the
    /// work with a `SeqCst` operation.
    pub(crate) fn kick(&self) -> bool {
        fence(Ordering::SeqCst);
        let s = self.word.load(Ordering::Relaxed);
        if s != PARKED && s != PARKED_REACTOR {
            return false;
        }
        if self
            .word
            .compare_exchange(s, RUNNING, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
        {
            if s == PARKED {
                futex::wake(&self.word);
            } else if let Some(w) = self.reactor_waker.get() {
                // An eventfd write: ends (or pre-empts) the poller's epoll wait.
                let _ = w.wake();
            }
            true
        } else {
            false
        }
    }
}

/// The futex calls, or loom's stand-in for them.
#[cfg(not(loom))]
pub(crate) use crate::sys::futex;

/// Loom model of a futex: waiting spins (yielding to the model) until the
/// word changes, so a lost wakeup shows up as a livelock loom reports.
#[cfg(loom)]
pub(crate) mod futex {
    use crate::loom::{AtomicU32, Ordering};
    use std::time::Duration;

    pub(crate) fn wait(word: &AtomicU32, expected: u32, _timeout: Option<Duration>) {
        while word.load(Ordering::SeqCst) == expected {
            loom::thread::yield_now();
        }
    }

    pub(crate) fn wake(_word: &AtomicU32) {}
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn kick_wakes_a_parked_worker() {
        let idle = Arc::new(IdleState::new());
        let work = Arc::new(AtomicBool::new(false));
        let (i2, w2) = (idle.clone(), work.clone());
        let t = std::thread::spawn(move || loop {
            i2.prepare_park();
            if w2.load(Ordering::SeqCst) {
                i2.set_running();
                return;
            }
            i2.park(Some(Duration::from_secs(10)));
        });
        std::thread::sleep(Duration::from_millis(20));
        work.store(true, Ordering::SeqCst);
        idle.kick();
        t.join().unwrap();
    }

    #[test]
    fn kick_interrupts_a_worker_parked_in_the_reactor() {
        let mut poll = mio::Poll::new().unwrap();
        let waker = Arc::new(mio::Waker::new(poll.registry(), mio::Token(7)).unwrap());
        let idle = IdleState::new();
        idle.set_reactor_waker(waker);
        idle.prepare_park_reactor();
        assert_eq!(idle.get(), PARKED_REACTOR);
        // The kick lands before the wait: the wait must still return.
        assert!(idle.kick());
        assert_eq!(idle.get(), RUNNING);
        assert!(!idle.kick());
        let mut events = mio::Events::with_capacity(4);
        poll.poll(&mut events, Some(Duration::from_secs(10)))
            .unwrap();
        assert!(events.iter().any(|e| e.token() == mio::Token(7)));
    }

    #[test]
    fn kick_is_free_for_a_running_worker() {
        let idle = IdleState::new();
        assert!(!idle.kick());
        idle.start_polling();
        assert!(!idle.kick());
        idle.prepare_park();
        assert!(idle.kick());
        assert_eq!(idle.get(), RUNNING);
    }
}

/// Loom model of the park/kick protocol:
/// `RUSTFLAGS="--cfg loom" cargo test -p eevdf-rt --lib --release loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::loom::AtomicBool;
    use loom::sync::Arc;

    /// A worker going idle and a waker publishing work concurrently: the
    /// worker always ends up seeing the work (a lost wakeup would leave it
    /// spinning in the modelled futex wait, which loom reports), and the
    /// waker pays for a wake only if the worker really announced PARKED.
    #[test]
    fn loom_park_kick_no_lost_wakeup() {
        loom::model(|| {
            let idle = Arc::new(IdleState::new());
            let work = Arc::new(AtomicBool::new(false));
            let (i2, w2) = (idle.clone(), work.clone());
            let worker = loom::thread::spawn(move || {
                i2.start_polling();
                if w2.load(Ordering::SeqCst) {
                    i2.set_running();
                    return;
                }
                i2.prepare_park();
                if w2.load(Ordering::SeqCst) {
                    i2.set_running();
                    return;
                }
                i2.park(None);
                assert!(w2.load(Ordering::SeqCst), "woken without work");
            });
            work.store(true, Ordering::SeqCst);
            idle.kick();
            worker.join().unwrap();
        });
    }
}
