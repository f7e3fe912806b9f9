//! The ticker: one thread that delivers ticks and due timers to busy workers.
//!
//! Owns: the tick period and the "someone must look at this worker's
//! timers" duty for workers that are running green threads. Every period it
//! sets `TICK` on each running worker; whenever a running worker's earliest
//! timer is due it sets `TIMER`. The worker's next preemption point sees the
//! flag (one relaxed load when nothing is pending) and acts: charge and
//! apply the policy's tick rules, or switch so the scheduler fires the
//! timers. The ticker sleeps until the earlier of the next tick and the
//! earliest timer of any running worker, with 1 ns timer slack, so a sleep
//! on a busy worker ends within a few µs of its deadline plus the distance
//! to the next preemption point. Idle workers handle their own timers
//! (polling, or a futex timeout while parked). When every worker is parked
//! the ticker parks too; the first worker to unpark wakes it. While some
//! worker is busy and none is blocked in the I/O reactor, it also polls the
//! reactor without blocking once per tick, and while every worker is busy
//! it sleeps in the reactor as its poller, with readiness coalesced over
//! `REACTOR_COALESCE_NS` under a stream of events (see `sleep`). The
//! thread asks the kernel for nice −10 (`Builder::ticker_nice`): whatever
//! it delivers waits whenever it waits for a CPU. Must not: touch run
//! queues.
//!
//! # Two Dekker pairs
//!
//! * Timer arming: the ticker publishes its planned wake time
//!   (`ticker_deadline`, `SeqCst`) and then re-reads every running worker's
//!   `next_timer`; a worker publishes `next_timer` (`SeqCst`, when it arms
//!   a timer) and, before resuming a task, reads `ticker_deadline`: if its
//!   timer is earlier it pokes the ticker (`ticker_seq += 1`, futex wake).
//!   Either the ticker's re-read sees the timer or the worker sees the new
//!   plan; the ticker waits on `ticker_seq` with the value it read before
//!   scanning, so a poke that lands before it sleeps is not lost.
//! * Parking: the ticker moves `ticker_state` to `PARKED` and then checks
//!   that every worker is parked; a worker stores `RUNNING` after its futex
//!   sleep and then reads `ticker_state`.

use crate::runtime::shared::Shared;
use crate::sys::futex;
use crate::time::clock;
use crate::worker::idle;
use crate::worker::{TICK, TIMER};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Ticker state: ticking.
pub(crate) const RUNNING: u32 = 0;
/// Ticker state: parked until a worker unparks.
pub(crate) const PARKED: u32 = 1;
/// Ticker state: exit.
pub(crate) const STOP: u32 = 2;

/// The earliest timer of a running worker, setting `TIMER` on workers whose
/// timer is already due at `now`.
fn scan_timers(sh: &Shared, now: u64) -> u64 {
    let mut earliest = u64::MAX;
    for w in sh.workers.iter() {
        if w.idle().get() != idle::RUNNING {
            continue;
        }
        let t = w.next_timer.load(Ordering::SeqCst);
        if t <= now {
            w.set_flags(TIMER);
        } else {
            earliest = earliest.min(t);
        }
        let p = w.preempt_at.load(Ordering::SeqCst);
        if p <= now {
            // Deliver once; the worker re-arms when it charges or switches.
            let _ = w
                .preempt_at
                .compare_exchange(p, u64::MAX, Ordering::SeqCst, Ordering::Relaxed);
            w.set_flags(TICK);
        } else {
            earliest = earliest.min(p);
        }
    }
    earliest
}

/// The ticker thread's body.
pub(crate) fn ticker_main(sh: Arc<Shared>) {
    let period = sh.config.tick.as_nanos() as u64;
    let mut next_tick = clock::now() + period;
    let mut idle_ticks = 0u32;
    let mut coalesce = Coalesce::default();
    loop {
        let seq = sh.ticker_seq.load(Ordering::SeqCst);
        if sh.ticker_state.load(Ordering::SeqCst) == STOP {
            return;
        }
        let now = clock::now();
        if now >= next_tick {
            next_tick = now + period;
            // I/O: poll the reactor first, so the wakes it issues are seen
            // below (a no-op while a worker is the reactor's poller).
            crate::io::reactor::tick(&sh);
            let mut busy = 0;
            for w in sh.workers.iter() {
                match w.idle().get() {
                    idle::RUNNING => {
                        // (A wake queued on a busy worker's wakelist needs no
                        // help from here: the push set its WAKELIST flag,
                        // which its next preemption point drains.)
                        w.set_flags(TICK);
                        busy += 1;
                    }
                    idle::POLLING => busy += 1,
                    _ => {}
                }
            }
            idle_ticks = if busy == 0 { idle_ticks + 1 } else { 0 };
            if idle_ticks >= 2 {
                idle_ticks = 0;
                park(&sh, seq);
                next_tick = clock::now() + period;
                continue;
            }
        }
        ensure_poller(&sh);
        let mut wake_at = next_tick.min(scan_timers(&sh, now));
        loop {
            sh.ticker_deadline.store(wake_at, Ordering::SeqCst);
            let again = next_tick.min(scan_timers(&sh, now));
            if again >= wake_at {
                break;
            }
            wake_at = again;
        }
        let now = clock::now();
        if wake_at > now {
            sleep(
                &sh,
                seq,
                now,
                Duration::from_nanos(wake_at - now),
                &mut coalesce,
            );
        }
    }
}

/// Readiness coalescing while the ticker is the reactor's poller: after a
/// reactor wait that dispatched readiness within this long of the previous
/// dispatch (a burst), the ticker sleeps this long on its futex (or less,
/// for a tick or timer) before it blocks in the reactor again. Each
/// wake-up of the ticker is a kernel context switch on a CPU that a busy
/// worker is using; under a stream of readiness (every worker busy with
/// I/O-bound tasks) waking once per event cost more than the I/O itself:
/// in three interleaved pairs `echo_server` (50 clients, 2 workers) did
/// 84–90 k requests/s without coalescing and 127–135 k with it, with a
/// lower p99 (1.1 ms → 0.74 ms); `hackbench` green did not change (its 160
/// tasks keep the reactor busy either way). Sparse readiness is delivered
/// at once; readiness in a burst waits at most this long, about two
/// `preempt_point` distances of a well-behaved CPU loop.
const REACTOR_COALESCE_NS: u64 = 100_000;

/// The ticker's readiness-coalescing state (see [`REACTOR_COALESCE_NS`]).
#[derive(Default)]
struct Coalesce {
    /// When the ticker last dispatched readiness.
    last_dispatch: u64,
    /// Don't block in the reactor again before this time.
    hold_until: u64,
}

impl Coalesce {
    /// The ticker dispatched readiness at `now`. Only a *burst* — a
    /// dispatch within `REACTOR_COALESCE_NS` of the previous one — holds
    /// the next reactor wait back: sparse readiness keeps costing one
    /// wake-up per event (no extra wake-up to end a hold) and is delivered
    /// at once.
    fn dispatched(&mut self, now: u64) {
        self.hold_until = if now.saturating_sub(self.last_dispatch) < REACTOR_COALESCE_NS {
            now + REACTOR_COALESCE_NS
        } else {
            0
        };
        self.last_dispatch = now;
    }
}

/// The ticker's sleep until its next tick or timer. While some worker is
/// busy and no worker holds the reactor's poller role, the ticker sleeps *in*
/// the reactor as its poller: readiness then reaches a busy worker within
/// microseconds (the ticker dispatches it: a wakelist push and the worker's
/// WAKELIST flag, seen at its next preemption point) instead of at the next
/// tick's non-blocking poll. A poke interrupts that sleep through the
/// reactor's eventfd (`poke`); the `ticker_seq` re-check under the poll lock
/// closes the window before the eventfd is armed (the same pairing as a
/// worker parked in the reactor, see `crate::io`).
fn sleep(sh: &Shared, seq: u32, now: u64, timeout: Duration, coalesce: &mut Coalesce) {
    if let Some(r) = crate::io::reactor::get(sh) {
        // Only while every worker is running: an idle worker is the better
        // poller (readiness then wakes it directly, with no thread between),
        // and one going idle must find the role free.
        let all_busy = sh.workers.iter().all(|w| w.idle().get() == idle::RUNNING);
        if all_busy && r.has_registrations() {
            if now < coalesce.hold_until {
                // In a burst of readiness: let more of it queue up in the
                // kernel (cheap) instead of being woken for each event,
                // then collect it in one poll.
                let wait = Duration::from_nanos(coalesce.hold_until - now).min(timeout);
                futex::wait(&sh.ticker_seq, seq, Some(wait));
                return;
            }
            if r.try_claim_poller() {
                sh.ticker_in_reactor.store(true, Ordering::SeqCst);
                let io = r.park(
                    Some(timeout),
                    || {
                        sh.ticker_seq.load(Ordering::SeqCst) == seq
                            && sh.ticker_state.load(Ordering::SeqCst) != STOP
                    },
                    || {},
                );
                sh.ticker_in_reactor.store(false, Ordering::Relaxed);
                r.release_poller();
                if io > 0 {
                    coalesce.dispatched(clock::now());
                }
                return;
            }
        }
    }
    futex::wait(&sh.ticker_seq, seq, Some(timeout));
}

/// If I/O is registered, no thread holds the reactor's poller role and some
/// worker sleeps on its futex (it parked while the ticker held the role),
/// wake that worker: it idles again and parks in the reactor, so readiness
/// reaches a sleeping worker directly. Cheap (a few loads) when not needed.
fn ensure_poller(sh: &Shared) {
    if let Some(r) = crate::io::reactor::get(sh) {
        if r.has_registrations() && !r.poller_held() {
            if let Some(w) = sh.workers.iter().find(|w| w.idle().get() == idle::PARKED) {
                w.idle().kick();
            }
        }
    }
}

/// Parks the ticker while every worker is parked.
fn park(sh: &Shared, seq: u32) {
    if sh
        .ticker_state
        .compare_exchange(RUNNING, PARKED, Ordering::SeqCst, Ordering::Relaxed)
        .is_err()
    {
        return; // STOP
    }
    sh.ticker_deadline.store(u64::MAX, Ordering::SeqCst);
    // Readiness must keep reaching someone while everything sleeps: if I/O
    // is registered but no worker holds the reactor's poller role (the
    // ticker held it when they parked), wake one worker; it idles again and
    // parks in the reactor, and the next round finds every worker parked.
    if let Some(r) = crate::io::reactor::get(sh) {
        if r.has_registrations() && !r.poller_held() {
            if let Some(w) = sh.workers.iter().find(|w| w.idle().get() == idle::PARKED) {
                w.idle().kick();
                let _ = sh.ticker_state.compare_exchange(
                    PARKED,
                    RUNNING,
                    Ordering::SeqCst,
                    Ordering::Relaxed,
                );
                return;
            }
        }
    }
    // A worker parked in the I/O reactor counts as parked: it wakes on its
    // own (readiness, kick, timer) and then calls `worker_unparked`.
    if sh
        .workers
        .iter()
        .all(|w| matches!(w.idle().get(), idle::PARKED | idle::PARKED_REACTOR))
    {
        futex::wait(&sh.ticker_seq, seq, None);
    }
    let _ = sh
        .ticker_state
        .compare_exchange(PARKED, RUNNING, Ordering::SeqCst, Ordering::Relaxed);
}

/// Wakes the ticker so it re-plans (a timer earlier than its plan, or stop):
/// a futex wake, or an eventfd write if it sleeps in the reactor.
pub(crate) fn poke(sh: &Shared) {
    sh.ticker_seq.fetch_add(1, Ordering::SeqCst);
    if sh.ticker_in_reactor.load(Ordering::SeqCst) {
        if let Some(r) = crate::io::reactor::get(sh) {
            r.wake_poller();
        }
    }
    futex::wake(&sh.ticker_seq);
}

/// Called by a worker after it returns from a futex park.
pub(crate) fn worker_unparked(sh: &Shared) {
    if sh.ticker_state.load(Ordering::SeqCst) == PARKED
        && sh
            .ticker_state
            .compare_exchange(PARKED, RUNNING, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    {
        poke(sh);
    }
}

/// Called by a worker before it resumes a task (and by wakers that changed
/// its preemption time): make sure the ticker will wake up by `deadline`.
#[inline]
pub(crate) fn check_deadline(sh: &Shared, next_timer: u64) {
    if next_timer < sh.ticker_deadline.load(Ordering::SeqCst) {
        poke(sh);
    }
}

/// Stops the ticker.
pub(crate) fn stop(sh: &Shared) {
    sh.ticker_state.store(STOP, Ordering::SeqCst);
    poke(sh);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Coalesce, REACTOR_COALESCE_NS};

    #[test]
    fn only_a_burst_holds_the_reactor_wait_back() {
        let mut c = Coalesce::default();
        // The first dispatch, and any after a quiet interval: no hold.
        c.dispatched(10 * REACTOR_COALESCE_NS);
        assert_eq!(c.hold_until, 0);
        c.dispatched(12 * REACTOR_COALESCE_NS);
        assert_eq!(c.hold_until, 0);
        // A second dispatch within the interval: hold for one interval.
        let t = 12 * REACTOR_COALESCE_NS + REACTOR_COALESCE_NS / 2;
        c.dispatched(t);
        assert_eq!(c.hold_until, t + REACTOR_COALESCE_NS);
        // Quiet again: the hold ends.
        c.dispatched(t + 3 * REACTOR_COALESCE_NS);
        assert_eq!(c.hold_until, 0);
    }
}
