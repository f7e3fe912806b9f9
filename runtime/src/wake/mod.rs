//! Waking tasks: the runtime's `try_to_wake_up`.
//!
//! Owns: the wake protocol of docs/architecture.md ("The life of a wakeup") and docs/eevdf.md §11
//! — serialise wakers on the task, un-delay a still-queued task in place
//! (`ttwu_runnable`), otherwise claim it (`WAKING`), choose a worker
//! (`placement`), and either push it on that worker's wakelist and kick it
//! if parked, or enqueue it inline under that worker's lock
//! (`ttwu_queue_cond`); plus `activate`, the enqueue both paths end in, and
//! newidle balancing (`balance`). Must not: switch (a waker that made its
//! own worker's current task reschedulable only sets the flag; the public
//! API honours it at its next preemption point, after releasing its locks).
//!
//! # Stats attribution
//!
//! Wake counters are charged to the *waker's* worker (single-writer
//! counters); wakers outside the runtime use the shared external row.

pub(crate) mod balance;
pub(crate) mod placement;
pub(crate) mod waiter;

use crate::sched::{Dequeue, DequeueFlags, EnqueueFlags, Feature, WakeFlags};
use crate::shared::Shared;
use crate::stats::Counter;
use crate::task::state::{BLOCKED, DEAD, NOT_QUEUED, QUEUED, RUNNING};
use crate::task::tcb::activation;
use crate::task::TaskRef;
use crate::time::clock;
use crate::worker::{tls, Rq, Worker};

/// Wakes a `Waker` that came from outside the runtime (a future's
/// context under another executor, a user's own waker) and may panic. The
/// panic ends here, reported by the panic hook: the caller is a worker, the
/// timer thread, the reactor or a blocking-pool thread, which must go on
/// (a dead worker strands its run queue; a dead pool thread its slot).
pub(crate) fn wake_foreign(w: std::task::Waker) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.wake()));
}

/// The waker's worker index if this thread is a worker of `sh` and still
/// owns it. A thread whose worker was handed to another thread while it
/// ran a green thread (`worker::handoff`) wakes and spawns as an outsider
/// (through wakelists, with kicks) until that green thread reaches the
/// runtime again: a "local" enqueue onto the worker would not kick its new
/// owner, which may be parked.
#[inline]
pub(crate) fn waker_index(sh: &Shared) -> Option<usize> {
    match tls::worker_own() {
        Some((s, i, own)) if std::ptr::eq(s, sh) && s.workers[i].own.load() == own => Some(i),
        _ => None,
    }
}

/// Whether this thread is one of `sh`'s worker threads (owner or not).
#[inline]
pub(crate) fn on_worker_thread(sh: &Shared) -> bool {
    matches!(tls::worker(), Some((s, _)) if std::ptr::eq(s, sh))
}

/// Charges `c` to the waker: its worker's row, or the external row.
#[inline]
pub(crate) fn count(sh: &Shared, waker: Option<usize>, c: Counter) {
    match waker {
        Some(i) => sh.workers[i].stats.inc(c),
        None => sh.external.inc_shared(c),
    }
}

/// Wakes `t` if it is blocked. Returns whether this call woke it.
///
/// Callers publish their wake condition (with a `SeqCst` store, or under a
/// lock the sleeper also takes before blocking) before calling.
pub(crate) fn wake_task(t: &TaskRef) -> bool {
    wake(t, false, &mut None, activation::WAKE)
}

/// Puts back a task that yielded or was preempted on a worker that was
/// handed off meanwhile (`worker::handoff::detach`, which marks it blocked
/// for this): the wake path places and enqueues it, but it was runnable
/// all along, so its accounting counts no wakeup.
pub(crate) fn requeue_task(t: &TaskRef) -> bool {
    wake(t, false, &mut None, activation::REQUEUE)
}

/// [`wake_task`], returning the clock reading the wake made, if it read
/// the clock, so that the waker's preemption point right after it need not
/// read it again. `sync`: the caller (a channel operation) usually blocks
/// next, so the wakee may be placed on its worker (WA_SYNC).
pub(crate) fn wake_task_reporting_clock(t: &TaskRef, sync: bool) -> Option<u64> {
    let mut now = None;
    wake(t, sync, &mut now, activation::WAKE);
    now
}

/// `clock_read`: set to the clock reading the wake used, if it read one.
/// `kind`: `activation::WAKE`, or `REQUEUE` (see [`requeue_task`]) for
/// an enqueue of a task found off every run queue.
#[inline]
fn wake(t: &TaskRef, sync: bool, clock_read: &mut Option<u64>, kind: u8) -> bool {
    // Lock-free early out (task::state rule 1): a task that is not blocked
    // either never slept or is already being woken.
    if !t.st.is_blocked() {
        return false;
    }
    let sh: &Shared = &t.shared;
    let _guard = t.st.lock_wake();
    if t.st.state() != BLOCKED {
        return false;
    }
    let waker = waker_index(sh);
    // Still queued: running (about to block), or delayed.
    if t.st.on_rq() != NOT_QUEUED {
        match ttwu_runnable(sh, t, waker, clock_read) {
            Runnable::Woken => return true,
            Runnable::Left => {}
            Runnable::Claimed => {
                *clock_read = None;
                return place_claimed(sh, t, waker, sync, clock_read);
            }
        }
    }
    // The reading is reported only if it is this wake's last step: what
    // follows may wait (for the task to get off its CPU) before an enqueue
    // that reads the clock afresh, or before a wakelist push that does not.
    *clock_read = None;
    // Off every run queue: take the wake (task::state rule 5). A task
    // that ended its block itself since our read runs on: nothing to do.
    if !t.st.claim() {
        return true;
    }
    let prev = t.cpu();
    // Still switching out on its worker: let that worker enqueue it. Not
    // if its worker was handed off (worker::handoff): then the thread
    // switching it out is not the one that drains that wakelist.
    if t.st.on_cpu()
        && t.handed_off.load(std::sync::atomic::Ordering::Acquire) == 0
        && try_wakelist(sh, t, prev, waker, kind)
    {
        return true;
    }
    wait_off_cpu(t);
    place_off_queue(sh, t, prev, waker, sync, clock_read, kind);
    true
}

/// Waits until the claimed task `t` is off its CPU (task::state rule 4).
fn wait_off_cpu(t: &TaskRef) {
    if t.handed_off.load(std::sync::atomic::Ordering::Relaxed) != 0 {
        // Its thread may share a CPU with ours (the worker's new thread):
        // give it the CPU to finish switching out instead of spinning.
        while t.st.on_cpu() {
            std::thread::yield_now();
        }
    }
    t.st.wait_off_cpu();
}

/// The delayed path of [`ttwu_runnable`] claimed `t` on a stale view: it
/// is on a CPU again, blocking anew (maybe on the thread its worker was
/// handed off from, where a wakelist push would let the worker's new
/// thread enqueue a task whose stack is still live). Wait until it is off
/// that CPU, then: still queued, its block was completed as a sleep
/// (delayed; `worker::run::handle_prev`), so its worker un-delays it from
/// the wakelist; off every queue, place it like any claimed wake.
fn place_claimed(
    sh: &Shared,
    t: &TaskRef,
    waker: Option<usize>,
    sync: bool,
    clock_read: &mut Option<u64>,
) -> bool {
    wait_off_cpu(t);
    let prev = t.cpu();
    if t.st.on_rq() == QUEUED {
        t.activation
            .store(activation::WAKE, std::sync::atomic::Ordering::Relaxed);
        push_wakelist(sh, t, &sh.workers[prev], waker);
        return true;
    }
    place_off_queue(sh, t, prev, waker, sync, clock_read, activation::WAKE);
    true
}

/// Places the claimed task `t`, off every queue and off its CPU, and
/// queues or enqueues it there.
fn place_off_queue(
    sh: &Shared,
    t: &TaskRef,
    prev: usize,
    waker: Option<usize>,
    sync: bool,
    clock_read: &mut Option<u64>,
    mut kind: u8,
) {
    let target = placement::select_worker(sh, t, prev, waker, sync);
    if target != prev {
        kind |= activation::MIGRATED;
        t.recent_cpu
            .store(prev as u32, std::sync::atomic::Ordering::Relaxed);
        t.cpu
            .store(target as u32, std::sync::atomic::Ordering::Relaxed);
        count(sh, waker, Counter::migrations);
        crate::trace::migrate(sh, waker, t, prev, target);
    }
    ttwu_queue(sh, t, target, waker, kind, clock_read);
}

/// What [`ttwu_runnable`] did.
enum Runnable {
    /// Made runnable where it is queued, or found running or exited.
    Woken,
    /// It left its queue before we got the lock: the caller claims it.
    Left,
    /// The delayed path claimed it, but it is on a CPU: the caller places
    /// it once it is off ([`place_claimed`]).
    Claimed,
}

/// The task is still accounted by a run queue (it has not switched out
/// yet, or it is delayed): make it runnable where it is (docs/eevdf.md §11.1).
fn ttwu_runnable(
    sh: &Shared,
    t: &TaskRef,
    waker: Option<usize>,
    clock_read: &mut Option<u64>,
) -> Runnable {
    loop {
        let cpu = t.cpu();
        let w = &sh.workers[cpu];
        // WA_STALE: a delayed task whose worker is not serving its queue is
        // taken off it (its delayed dequeue completed as a migration's), so
        // that placement can wake it where it will run.
        if waker != Some(cpu) && !t.st.on_cpu() && placement::should_leave(sh, t, cpu) {
            let now = clock::now();
            *clock_read = Some(now);
            let mut rq = w.lock_rq_from(sh, now, waker);
            if t.cpu() != cpu {
                continue;
            }
            if t.st.state() == DEAD {
                // It ended its block itself and exited (see below).
                return Runnable::Woken;
            }
            if t.st.on_rq() != QUEUED {
                return Runnable::Left;
            }
            let slot = t.slot();
            if rq.q.curr() != Some(slot) && rq.q.entity(slot).is_delayed() {
                match rq.q.dequeue(slot, DequeueFlags::NONE, now) {
                    Dequeue::Removed(entity, task) => task.save_entity(entity),
                    Dequeue::Delayed => unreachable!("only sleeping dequeues are delayed"),
                }
                // Off every queue: the caller claims the wake and places it.
                return Runnable::Left;
            }
        }
        // A blocked task that is queued but not on a CPU is delayed. With
        // TTWU_QUEUE_DELAYED its owner un-delays it from its wakelist, so a
        // remote waker never takes the owner's lock [D] (docs/kernel-discussions.md §1).
        if waker != Some(cpu)
            && !t.st.on_cpu()
            && sh.feature(Feature::TtwuQueue)
            && sh.feature(Feature::TtwuQueueDelayed)
        {
            // The read of BLOCKED may be stale (rule 5): if the task ended
            // its block and runs on, the claim fails and there is nothing
            // to do. If it won, the task may have run again since our
            // reads and blocked anew: if it is on a CPU now (the claim's
            // Acquire sees the `on_cpu` its worker set before resuming it),
            // the caller waits for it to get off ([`place_claimed`]); off
            // its CPU, its worker has completed the block as a sleep
            // (`handle_prev` treats a claimed block like a blocked one), so
            // the owner's activation finds it delayed or dequeued.
            if !t.st.claim() {
                return Runnable::Woken;
            }
            if t.st.on_cpu() {
                return Runnable::Claimed;
            }
            t.activation
                .store(activation::WAKE, std::sync::atomic::Ordering::Relaxed);
            // Stamped before the hand-over: the wakee may run at once.
            let stamp = crate::trace::wakeup_stamp(sh);
            push_wakelist(sh, t, w, waker);
            count(sh, waker, Counter::delayed_wakeups);
            let how = crate::trace::how::DELAYED_WAKELIST;
            crate::trace::wakeup_at(sh, waker, t, how, cpu, stamp);
            return Runnable::Woken;
        }
        let now = clock::now();
        *clock_read = Some(now);
        let mut rq = w.lock_rq_from(sh, now, waker);
        if t.cpu() != cpu {
            continue; // moved while we waited for the lock; retry on its new worker
        }
        // Our BLOCKED read may be stale (task::state rule 5): the task may
        // have ended its block itself and exited. Its exit frees its slot
        // and publishes DEAD under this lock, but leaves `on_rq` QUEUED.
        if t.st.state() == DEAD {
            return Runnable::Woken;
        }
        if t.st.on_rq() != QUEUED {
            return Runnable::Left;
        }
        let slot = t.slot();
        if rq.q.entity(slot).is_delayed() {
            rq.q.requeue_delayed(slot, now);
            count(sh, waker, Counter::delayed_wakeups);
        }
        // Otherwise the guard re-arms HRTICK: the wakee may have shortened
        // the running task's protection.
        if rq.q.curr() != Some(slot) && rq.q.wakeup_preempt(slot, WakeFlags::NONE, now) {
            rq.request_resched();
            count(sh, waker, Counter::wakeup_preemptions);
        }
        t.st.set_state(RUNNING);
        crate::task::stats::woken(&t.acct, now, false);
        drop(rq);
        // Stamped with the reading taken before the lock: after the drop,
        // its worker may already run it.
        crate::trace::wakeup_at(sh, waker, t, crate::trace::how::IN_PLACE, cpu, now);
        count(
            sh,
            waker,
            if waker == Some(cpu) {
                Counter::wakeups_local
            } else {
                Counter::wakeups_remote_inline
            },
        );
        return Runnable::Woken;
    }
}

/// `ttwu_queue_cond` (docs/eevdf.md §11.2) over a flat topology (one LLC) [D]:
/// queue on the target's wakelist when the waker is outside the runtime
/// (it shares no run queue with anyone) or the target is idle — or, with
/// TTWU_QUEUE_DEFAULT, whenever the target is another worker; enqueue
/// inline when the target is the waker's own worker, or (without
/// TTWU_QUEUE_DEFAULT) when it is busy, as the kernel does.
#[inline]
fn ttwu_queue_cond(sh: &Shared, target: usize, waker: Option<usize>) -> bool {
    match waker {
        None => true,
        Some(i) if i == target => false,
        Some(_) => sh.feature(Feature::TtwuQueueDefault) || sh.workers[target].nr_running() == 0,
    }
}

fn try_wakelist(sh: &Shared, t: &TaskRef, target: usize, waker: Option<usize>, kind: u8) -> bool {
    if !sh.feature(Feature::TtwuQueue) || !ttwu_queue_cond(sh, target, waker) {
        return false;
    }
    t.activation
        .store(kind, std::sync::atomic::Ordering::Relaxed);
    // Stamped before the hand-over: the kicked worker may run it at once.
    let stamp = crate::trace::wakeup_stamp(sh);
    push_wakelist(sh, t, &sh.workers[target], waker);
    crate::trace::wakeup_at(sh, waker, t, crate::trace::how::WAKELIST, target, stamp);
    true
}

/// Hands `t` to `w`'s wakelist and kicks `w` if it is parked.
fn push_wakelist(sh: &Shared, t: &TaskRef, w: &Worker, waker: Option<usize>) {
    count(sh, waker, Counter::wakeups_remote_queued);
    if w.post(t.clone()) {
        count(sh, waker, Counter::kicks);
    }
}

/// Enqueue `t` on `target`: through its wakelist when the rule says so,
/// otherwise inline under its lock (docs/eevdf.md §11.1 `ttwu_queue`).
fn ttwu_queue(
    sh: &Shared,
    t: &TaskRef,
    target: usize,
    waker: Option<usize>,
    kind: u8,
    clock_read: &mut Option<u64>,
) {
    if try_wakelist(sh, t, target, waker, kind) {
        return;
    }
    let w = &sh.workers[target];
    let now = clock::now();
    *clock_read = Some(now);
    let mut rq = w.lock_rq_from(sh, now, waker);
    let preempt = activate(sh, w, &mut rq, t.clone(), kind, now);
    crate::trace::wakeup(
        sh,
        waker,
        t,
        crate::trace::inline_how(waker, target),
        target,
    );
    if preempt {
        rq.request_resched();
        count(sh, waker, Counter::wakeup_preemptions);
    }
    drop(rq);
    count(
        sh,
        waker,
        if waker == Some(target) {
            Counter::wakeups_local
        } else {
            Counter::wakeups_remote_inline
        },
    );
    // Inline enqueue onto a parked worker (TTWU_QUEUE off): wake it. The
    // SeqCst store of nr_running above pairs with its park-time re-check.
    if waker != Some(target) && w.idle().kick() {
        count(sh, waker, Counter::kicks);
    }
}

/// Makes a claimed task runnable on `w` (under `w`'s lock): un-delays it in
/// place if it is still queued there (a delayed wake that came through the
/// wakelist), otherwise enqueues its saved entity (`ttwu_do_activate`,
/// §11.4; `NEW`: the first enqueue of a spawned task, §11.6). Returns
/// whether the wakeup-preemption check asks the running task to reschedule.
pub(crate) fn activate(
    sh: &Shared,
    w: &Worker,
    rq: &mut Rq,
    t: TaskRef,
    kind: u8,
    now: u64,
) -> bool {
    if t.cpu() != w.index {
        // A delayed task pushed here by a remote waker (TTWU_QUEUE_DELAYED)
        // that ran again, moved to another worker and blocked there before
        // this drain (the waker's reads were stale; its claim was not): it
        // is that worker's to activate.
        let _ = sh.workers[t.cpu()].post(t);
        return false;
    }
    // `held`: the caller's reference to a task that was already queued (the
    // queue holds its own), dropped after the task's last use below.
    let (slot, flags, held) = if t.st.on_rq() == QUEUED {
        // Delayed wake via the wakelist (TTWU_QUEUE_DELAYED).
        let slot = t.slot();
        if rq.q.entity(slot).is_delayed() {
            rq.q.requeue_delayed(slot, now);
        }
        (slot, WakeFlags::NONE, Some(t))
    } else {
        // SAFETY: `t` is not queued (checked above, under this lock) and
        // reached us through its claim: either we are the waker that set
        // WAKING after observing NOT_QUEUED (ttwu_queue inline), or we
        // drain the wakelist it was pushed to by that waker, or it is a new
        // task posted by its spawner.
        let entity = unsafe { t.take_entity() };
        let enqueue = if kind & activation::NEW != 0 {
            EnqueueFlags::INITIAL
        } else if kind & activation::MIGRATED != 0 {
            EnqueueFlags::WAKEUP | EnqueueFlags::MIGRATED
        } else {
            EnqueueFlags::WAKEUP
        };
        let flags = if kind & activation::NEW != 0 {
            WakeFlags::FORK
        } else {
            WakeFlags::NONE
        };
        // The caller's reference moves into the queue: no count increment
        // and decrement on a line the waker just wrote from another CPU (a
        // locked RMW there waits for the line; the plain stores below do
        // not). The task is reached through the queue from here on; it
        // stays queued while we hold the lock.
        (rq.q.enqueue(entity, t, enqueue, now), flags, None)
    };
    let preempt = rq.q.curr() != Some(slot) && rq.q.wakeup_preempt(slot, flags, now);
    let t = rq.q.payload(slot);
    if held.is_none() {
        // just enqueued
        t.set_slot(slot);
        t.st.set_on_rq(QUEUED);
    }
    crate::task::stats::activated(&t.acct, kind, now);
    t.st.set_state(RUNNING);
    drop(held);
    preempt
}
