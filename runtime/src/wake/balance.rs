//! Newidle balance: an idle worker pulls one task from the busiest worker.
//!
//! Owns: the minimal faithful version of docs/eevdf.md §13 — find the worker
//! with the most queued tasks (at least two), lock both run queues in index
//! order, ask the policy for a task that may move (`steal_candidate`: not
//! running, not delayed, eligible, not cache-hot within 500 µs unless
//! balancing keeps failing, allowed on this worker), and migrate it with
//! its lag and relative deadline (dequeue without SLEEP, enqueue MIGRATED).
//! Also the two balance steps a busy worker takes at its tick: WA_STALE's
//! pull from a worker that is not serving its queue, and the kick that
//! wakes a parked worker to balance when tasks wait. Must not: move pinned
//! tasks, delayed tasks, or the running task.

use crate::lock::ShortGuard;
use crate::sched::{Dequeue, DequeueFlags, EnqueueFlags, Feature, WakeFlags};
use crate::shared::Shared;
use crate::stats::Counter;
use crate::worker::Worker;
use std::sync::atomic::Ordering;

/// Failed attempts after which cache-hot and ineligible tasks may be moved
/// too (the kernel's `cache_nice_tries` escalation).
const CACHE_NICE_TRIES: u32 = 2;

/// The busiest other worker with at least two queued tasks, if any.
pub(crate) fn busiest(sh: &Shared, me: usize) -> Option<usize> {
    // Cheap gate: nobody has two tasks, nothing to pull (the flags share
    // one read-mostly line, instead of reading every worker's).
    if !sh.overloaded.iter().any(|f| f.load(Ordering::Relaxed)) {
        return None;
    }
    let mut best = None;
    let mut best_n = 1;
    for (i, w) in sh.workers.iter().enumerate() {
        if i == me {
            continue;
        }
        let n = w.nr_running();
        if n > best_n {
            best_n = n;
            best = Some(i);
        }
    }
    best
}

/// Newidle balancing state of one worker (owned by its scheduler context).
#[derive(Debug, Default)]
pub(crate) struct BalanceState {
    /// Consecutive attempts that found a busiest worker but nothing to move.
    failures: u32,
    /// No attempt before this time (ns): after failures, attempts back off
    /// exponentially (the kernel gates newidle balancing by its measured
    /// cost against the idle time it can expect; a scan that keeps failing —
    /// pinned tasks, say — must not keep taking another worker's lock).
    next_attempt: u64,
}

/// First back-off after a failed attempt, and its cap.
const BACKOFF_MIN: u64 = 20_000;
const BACKOFF_MAX: u64 = 4_000_000;

/// Tries to pull one task onto `w` (which holds no lock). Returns whether
/// one was moved.
pub(crate) fn newidle(sh: &Shared, w: &Worker, now: u64, st: &mut BalanceState) -> bool {
    if now < st.next_attempt {
        return false;
    }
    let Some(src_i) = busiest(sh, w.index) else {
        return false;
    };
    let failures = &mut st.failures;
    let src = &sh.workers[src_i];
    let (mut dst_rq, mut src_rq) = lock_pair(w, src);
    let balance_failed = *failures >= CACHE_NICE_TRIES;
    let dst_busy = dst_rq.q.nr_queued() > 0;
    let me = w.index;
    let Some(slot) = src_rq
        .q
        .steal_candidate(now, dst_busy, balance_failed, |t| t.affinity.contains(me))
    else {
        *failures = failures.saturating_add(1);
        let backoff = (BACKOFF_MIN << (*failures - 1).min(16)).min(BACKOFF_MAX);
        st.next_attempt = now + backoff;
        return false;
    };
    // An idle worker: the preemption check has no running task to stop.
    let _ = migrate(sh, w, &mut dst_rq, src, &mut src_rq, slot, now);
    *failures = 0;
    true
}

/// WA_STALE, at a busy worker's tick: pulls the task EEVDF would run next
/// from a worker that is not serving its queue (its OS thread preempted by
/// the host, or a green thread running without preemption points: see
/// `placement::is_stale`) — the one that waits longest for nothing, most
/// often a woken latency task. Never waits for the stalled worker's lock.
/// Returns whether the pulled task should preempt the running one.
pub(crate) fn pull_from_stale(sh: &Shared, w: &Worker, now: u64) -> bool {
    if sh.workers.len() < 2 || !sh.feature(Feature::WaStale) {
        return false;
    }
    let me = w.index;
    let Some(src_i) = (0..sh.workers.len())
        .filter(|&i| {
            i != me && sh.workers[i].nr_running() >= 2 && super::placement::is_stale(sh, i, now)
        })
        .max_by_key(|&i| sh.workers[i].nr_running())
    else {
        return false;
    };
    let src = &sh.workers[src_i];
    let mut dst_rq = w.lock();
    let Some(mut src_rq) = src.try_lock() else {
        return false;
    };
    // The task EEVDF would run next there (no side effects) if it is not
    // the one the stalled thread runs, not delayed and allowed here; else
    // the one that has waited longest.
    let next = src_rq.q.pick_eevdf(false).filter(|&slot| {
        src_rq.q.curr() != Some(slot)
            && !src_rq.q.entity(slot).is_delayed()
            && src_rq.q.payload(slot).affinity.contains(me)
    });
    let Some(slot) = next.or_else(|| {
        src_rq
            .q
            .steal_candidate(now, true, true, |t| t.affinity.contains(me))
    }) else {
        return false;
    };
    migrate(sh, w, &mut dst_rq, src, &mut src_rq, slot, now)
}

/// Moves the queued task in `slot` from `src` to `w` (both locked): a
/// migration's dequeue there, an enqueue with `MIGRATED` here, both queue
/// lengths published, counted and traced. Returns whether it should preempt
/// `w`'s running task.
fn migrate(
    sh: &Shared,
    w: &Worker,
    dst_rq: &mut crate::worker::Rq,
    src: &Worker,
    src_rq: &mut crate::worker::Rq,
    slot: crate::sched::Slot,
    now: u64,
) -> bool {
    let Dequeue::Removed(entity, task) = src_rq.q.dequeue(slot, DequeueFlags::NONE, now) else {
        unreachable!("a task that is not delayed is removed")
    };
    task.recent_cpu.store(src.index as u32, Ordering::Relaxed);
    task.cpu.store(w.index as u32, Ordering::Relaxed);
    let t = task.clone();
    let new_slot = dst_rq.q.enqueue(entity, task, EnqueueFlags::MIGRATED, now);
    t.set_slot(new_slot);
    src.publish_nr_running(sh, src_rq);
    let preempt = dst_rq.q.curr() != Some(new_slot)
        && dst_rq.q.wakeup_preempt(new_slot, WakeFlags::NONE, now);
    w.publish_nr_running(sh, dst_rq);
    w.stats.inc(Counter::steals);
    w.stats.inc(Counter::migrations);
    crate::task::stats::migrated(&t.acct);
    crate::trace::steal(sh, w.index, &t, src.index, now);
    preempt
}

/// Called at a tick of busy worker `w` whose queue holds `queued` tasks:
/// if it has tasks to spare and some worker sleeps in the kernel, kick one
/// so it wakes and runs newidle balance (the kernel's nohz idle-balance
/// kick: a parked worker cannot notice an imbalance by itself). At most one
/// kick per `interval` per busy worker. Returns whether it kicked.
pub(crate) fn kick_idle_for_balance(sh: &Shared, w: &Worker, queued: u32, now: u64) -> bool {
    if queued < 2 || sh.workers.len() < 2 {
        return false;
    }
    let interval = 4 * sh.config.tick.as_nanos() as u64;
    let last = w.last_balance_kick.load(Ordering::Relaxed);
    if now.saturating_sub(last) < interval {
        return false;
    }
    w.last_balance_kick.store(now, Ordering::Relaxed);
    let n = sh.workers.len();
    for k in 1..n {
        let i = (w.index + k) % n;
        let other = &sh.workers[i];
        if other.idle().get() == crate::worker::idle::PARKED && other.idle().kick() {
            w.stats.inc(Counter::kicks);
            return true;
        }
    }
    false
}

/// Locks two workers' run queues in index order (the global lock order);
/// returns `(a's, b's)` guards.
pub(crate) fn lock_pair<'a>(
    a: &'a Worker,
    b: &'a Worker,
) -> (
    ShortGuard<'a, crate::worker::Rq>,
    ShortGuard<'a, crate::worker::Rq>,
) {
    debug_assert_ne!(a.index, b.index);
    if a.index < b.index {
        let ga = a.lock();
        let gb = b.lock();
        (ga, gb)
    } else {
        let gb = b.lock();
        let ga = a.lock();
        (ga, gb)
    }
}
