//! The worker loop: the scheduler context of one worker thread.
//!
//! Owns: the switch path. A green thread suspends back here to yield, be
//! preempted, block or exit; this loop then (1) fires due timers, (2) under
//! the run-queue lock handles `prev` now that its context is saved — yield,
//! block (dequeue, maybe delayed; arm its timer), exit (dequeue SPECIAL,
//! recycle its stack) — and clears its `on_cpu`, (3) drains the wakelist,
//! (4) picks with EEVDF (completing delayed dequeues the pick chooses), and
//! (5) resumes the chosen task; with nothing runnable it balances, polls
//! and parks. One clock read per switch (`now` is read once and passed
//! down); no allocation, and no system call in the steady state but the
//! paced poll's (at most one `sched_yield` and one non-blocking poll per
//! 50 µs). Must not: run user code on the scheduler stack (timers only
//! wake tasks).

use super::{idle as idle_state, tls, Rq, Worker, BUSY_POLL_INTERVAL, RECHECK, RESCHED, WAKELIST};
use crate::context::{GreenStack, Resumed, Switch};
use crate::sched::{Dequeue, DequeueFlags, Feature, Pick};
use crate::shared::Shared;
use crate::stats::Counter;
use crate::task::state::{BLOCKED, DEAD, QUEUED, RUNNING, WAKING};
use crate::task::{TaskRef, Tcb};
use crate::time::clock;
use crate::wake::{self, balance};
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A task this worker runs or has just run, held without touching its
/// reference count (two atomic operations per switch saved).
#[derive(Clone, Copy)]
struct Running(NonNull<Tcb>);

impl Running {
    fn new(t: &TaskRef) -> Self {
        // From `TaskRef::as_ptr`, not from a `&Tcb`: the pointer goes on to
        // `TaskRef::clone_from_ptr` (here and through the thread-local
        // current task), which steps back to the block's count, outside the
        // `Tcb` a reference would be limited to.
        let p = TaskRef::as_ptr(t) as *mut Tcb;
        // SAFETY: derived from a live block's non-null address.
        Running(unsafe { NonNull::new_unchecked(p) })
    }

    #[inline]
    fn get(&self) -> &Tcb {
        // SAFETY: the registry holds a strong reference to every task from
        // spawn until `handle_prev` processes its exit on this worker, and a
        // `Running` is never used after that (handle_prev consumes it).
        unsafe { self.0.as_ref() }
    }
}

/// State private to the worker thread's scheduler context.
struct Local {
    /// The task that just switched out, and why.
    prev: Option<(Running, Resumed)>,
    /// Reusable buffer for expired timers.
    expired: Vec<TaskRef>,
    /// Newidle balancing state (failures, back-off).
    balance: balance::BalanceState,
    /// Steal time the monitor measured while `prev` ran (ns): left
    /// uncharged (`worker::handoff`, "Steal time").
    stolen: u64,
}

impl Running {
    /// A strong reference to the task.
    fn to_ref(self) -> TaskRef {
        let p = self.0.as_ptr() as *const Tcb;
        // SAFETY: `p` comes from a `TaskRef` that the registry keeps alive
        // while the task has not exited on a worker (see `get`).
        unsafe { TaskRef::clone_from_ptr(p) }
    }
}

/// Entry point of worker thread `index`.
pub(crate) fn worker_main(shared: Arc<Shared>, index: usize) {
    let word = shared.workers[index].own.load();
    thread_main(shared, Some((index, word)));
}

/// The life of a runtime OS thread: run worker `first` (with its ownership
/// value); each time the worker is taken over (`worker::handoff`), wait as
/// a standby until given another one; return at shutdown.
pub(crate) fn thread_main(shared: Arc<Shared>, first: Option<(usize, u64)>) {
    let mut next = first;
    while let Some((index, word)) = next {
        match run_worker(&shared, index, word) {
            Exit::Shutdown => return,
            Exit::TakenOver => next = super::handoff::standby(&shared),
        }
    }
}

/// Why [`run_worker`] returned.
enum Exit {
    /// The runtime shuts down.
    Shutdown,
    /// The worker was handed to another thread while this one ran a green
    /// thread, which has been given back.
    TakenOver,
}

/// Runs worker `index` as its owner, starting from ownership value `word`
/// (even: in the runtime).
fn run_worker(shared: &Arc<Shared>, index: usize, word: u64) -> Exit {
    let sh = &**shared;
    tls::enter_worker(sh, index);
    tls::set_own(word);
    let w = &sh.workers[index];
    w.set_owner_thread();
    let mut local = Local {
        prev: None,
        expired: Vec::with_capacity(64),
        balance: balance::BalanceState::default(),
        stolen: 0,
    };
    // This thread's ownership value while it is in the runtime (even);
    // the thread-local copy is for the green thread's preemption points.
    let mut own = word;
    let exit = loop {
        let Some(next) = schedule(sh, w, &mut local) else {
            break Exit::Shutdown;
        };
        tls::set_current(next.0.as_ptr());
        tls::set_own(w.own.enter(own));
        // SAFETY: `schedule` made `next` current on this worker under its
        // run-queue lock and set `on_cpu`; only this worker resumes its
        // current task, until it switches out.
        let ctx = unsafe { next.get().context_mut() }
            .as_mut()
            .expect("a runnable task has a context");
        let why = ctx.resume();
        ctx.check_stack();
        tls::set_current(std::ptr::null());
        // Back in the runtime. Odd: still in the task's stretch, so claim
        // the way back; even: a preemption point already did (and left the
        // thread-local up to date).
        let v = tls::own();
        let back = if v & 1 == 1 {
            local.stolen = w.stolen_during(v);
            w.own.leave(v).inspect(|&v| tls::set_own(v))
        } else {
            Some(v)
        };
        match back {
            Some(v) => {
                own = v;
                local.prev = Some((next, why));
            }
            None => {
                // Taken over while it ran: give the task back, then stand by.
                super::handoff::detach(sh, w, next.to_ref(), why, v);
                break Exit::TakenOver;
            }
        }
    };
    tls::leave_worker();
    exit
}

/// Chooses the next task to run, or `None` at shutdown.
fn schedule(sh: &Shared, w: &Worker, local: &mut Local) -> Option<Running> {
    // One clock read per switch: a preemption point that read the clock
    // just before switching hands its reading over.
    let mut now = match local.prev {
        Some((_, Resumed::Switched(Switch::Preempt { now, .. }))) if now != 0 => now,
        _ => clock::now(),
    };
    // I/O hook (io_uring driver): submit the due batch, reap completions.
    crate::io::uring::at_switch(sh, w.index, now);
    if w.next_timer.load(Ordering::Relaxed) <= now {
        fire_timers(w, now, &mut local.expired);
    }
    // When `prev` stopped (its statistics and trace end here).
    let out_at = now;
    if let Some(y) = busy_poll(sh, w, now) {
        // The time away in OS_YIELD's yield is nobody's: `prev` (still the
        // queue's current entity) is not charged for it, and the next task
        // starts from the later reading.
        if local.prev.is_some() {
            local.stolen += y.away;
        }
        now = y.now;
        if w.next_timer.load(Ordering::Relaxed) <= now {
            fire_timers(w, now, &mut local.expired);
        }
    }
    let mut rq = w.lock_rq(sh, now);
    let prev = local.prev.take();
    let mut preempted: Option<(u64, bool)> = None;
    let prev_id = prev.as_ref().map(|(p, _)| p.get().id);
    let mut freed_stack = None;
    if let Some((p, why)) = prev {
        if local.stolen > 0 {
            rq.q.forgive_current(std::mem::take(&mut local.stolen), now);
        }
        if let Resumed::Switched(Switch::Preempt { tick, .. }) = why {
            preempted = Some((p.get().id, tick));
        }
        freed_stack = handle_prev(sh, w, &mut rq, p, why, out_at, now);
    }
    loop {
        drain_wakelist(sh, w, &mut rq, now);
        // the guard recomputes next_event when it is dropped
        w.clear_flags(RECHECK);
        if sh.is_shutdown() {
            drop(rq);
            recycle_stack(w, freed_stack.take());
            return None;
        }
        if let Some(next) = pick(w, &mut rq, now) {
            crate::task::stats::switched_in(&next.get().acct, now);
            crate::trace::switch_in(sh, w.index, next.get(), now);
            // the guard publishes the queue length and arms HRTICK for `next`
            drop(rq);
            recycle_stack(w, freed_stack.take());
            if prev_id != Some(next.get().id) {
                w.stats.inc(Counter::context_switches);
                if let Some((_, tick)) = preempted {
                    w.stats.inc(Counter::preemptions);
                    if tick {
                        w.stats.inc(Counter::tick_preemptions);
                    }
                }
            } else {
                crate::task::stats::repicked(&next.get().acct, preempted.is_some(), now);
            }
            return Some(next);
        }
        drop(rq);
        recycle_stack(w, freed_stack.take());
        go_idle(sh, w, local);
        now = clock::now();
        if w.next_timer.load(Ordering::Relaxed) <= now {
            fire_timers(w, now, &mut local.expired);
        }
        rq = w.lock_rq(sh, now);
    }
}

/// Returns an exited task's stack to the worker's cache, after the
/// run-queue lock is dropped (the cache may `madvise`).
#[inline]
fn recycle_stack(w: &Worker, stack: Option<GreenStack>) {
    if let Some(s) = stack {
        w.stacks.lock().put(s);
    }
}

/// Accounts the task that just switched out (its context is saved now):
/// its statistics and trace end at `out_at`, the queue works at `now`
/// (later only by an OS_YIELD yield, which is forgiven, not charged).
/// Returns the stack of a task that exited, for [`recycle_stack`] once
/// the lock is dropped.
fn handle_prev(
    sh: &Shared,
    w: &Worker,
    rq: &mut Rq,
    prev: Running,
    why: Resumed,
    out_at: u64,
    now: u64,
) -> Option<GreenStack> {
    let p = prev.get();
    crate::task::stats::switched_out_for(p, &why, out_at);
    crate::trace::switch_out_for(sh, w.index, p, &why, out_at);
    match why {
        Resumed::Switched(Switch::Yield) => {
            rq.q.yield_current(now);
            w.stats.inc(Counter::yields);
        }
        Resumed::Switched(Switch::YieldTo(target)) => {
            // SAFETY: the yielder holds a strong reference to the target
            // (its JoinHandle) for as long as it is suspended here.
            let t = unsafe { &*(target as *const Tcb) };
            // Only a task queued on this very queue may become our buddy;
            // both facts are stable under our lock (a balancer moves a task
            // while holding both queues' locks), and the slot must hold it.
            if t.cpu() == w.index
                && t.st.on_rq() == QUEUED
                && t.st.state() == RUNNING
                && rq.q.holds(t.slot(), |p| std::ptr::eq(&**p, t))
            {
                rq.q.yield_to(t.slot(), now);
            } else {
                rq.q.yield_current(now);
            }
            w.stats.inc(Counter::yields);
        }
        Resumed::Switched(Switch::Preempt { .. }) => {}
        Resumed::Switched(Switch::Block) | Resumed::Switched(Switch::BlockUntil(_)) => {
            // A waker that got here first left `state` RUNNING: then the
            // block is a no-op. WAKING here is a remote waker's claim
            // (TTWU_QUEUE_DELAYED) made on a stale view while the task ran
            // again and blocked anew: it pushed the task to this worker's
            // wakelist expecting it delayed or off the queue, so the block
            // is completed as a sleep all the same (wake::activate).
            if matches!(p.st.state(), BLOCKED | WAKING) {
                let slot = rq.q.curr().expect("the task that switched out is current");
                let timer = match why {
                    Resumed::Switched(Switch::BlockUntil(deadline)) => {
                        Some((deadline, rq.q.payload(slot).clone()))
                    }
                    _ => None,
                };
                match rq.q.dequeue(slot, DequeueFlags::SLEEP, now) {
                    Dequeue::Delayed => {
                        w.stats.inc(Counter::delayed_dequeues);
                        crate::trace::delayed_dequeue(sh, w.index, p, now);
                    }
                    Dequeue::Removed(entity, task) => task.save_entity(entity),
                }
                if let Some((deadline, task)) = timer {
                    w.arm_timer(rq, deadline, task);
                }
            }
        }
        Resumed::Finished => {
            let slot = rq.q.curr().expect("the task that exited is current");
            match rq
                .q
                .dequeue(slot, DequeueFlags::SLEEP | DequeueFlags::SPECIAL, now)
            {
                Dequeue::Removed(entity, _task) => p.keep_final_entity(entity),
                Dequeue::Delayed => unreachable!("special dequeues are never delayed"),
            }
            p.st.set_state(DEAD);
            // Last use of `prev`: the registry's reference may be the last one.
            return retire(sh, p);
        }
    }
    // The context is saved and accounted: wakers may hand the task to
    // another worker from now on (Release pairs with their Acquire).
    p.st.set_on_cpu(false);
    None
}

/// Retires a finished task whose context is saved and which is off every
/// run queue: takes its stack, removes it from the registry and clears
/// `on_cpu`. The registry's reference may be the last one: the caller must
/// not touch `p` afterwards unless it holds a reference of its own.
pub(crate) fn retire(sh: &Shared, p: &Tcb) -> Option<GreenStack> {
    // SAFETY: the task has finished and its context is saved; it is off
    // every run queue, so no worker resumes it again and nobody else can
    // reach its context.
    let stack = unsafe { p.context_mut() }
        .take()
        .map(|ctx| ctx.into_stack());
    let registered = sh.registry.remove(p);
    p.st.set_on_cpu(false);
    drop(registered);
    stack
}

/// Enqueues every task waiting on the wakelist (FIFO), under `w`'s lock.
/// Returns whether one of them asks the running task to reschedule.
pub(crate) fn drain_wakelist(sh: &Shared, w: &Worker, rq: &mut Rq, now: u64) -> bool {
    w.clear_flags(WAKELIST);
    let mut preempt = false;
    for t in w.wakelist().take_all() {
        let kind = t.activation.load(Ordering::Relaxed);
        if wake::activate(sh, w, rq, t, kind, now) {
            w.stats.inc(Counter::wakeup_preemptions);
            preempt = true;
        }
    }
    preempt
}

/// EEVDF pick; completes delayed dequeues the pick chooses.
fn pick(w: &Worker, rq: &mut Rq, now: u64) -> Option<Running> {
    loop {
        match rq.q.pick_next(now) {
            Pick::Run(slot) => {
                rq.q.set_curr(slot, now);
                rq.q.clear_resched();
                w.clear_flags(RESCHED);
                let t = Running::new(rq.q.payload(slot));
                t.get().st.set_on_cpu(true);
                w.stats.inc(Counter::picks);
                return Some(t);
            }
            Pick::FinishedDelayed(entity, task) => {
                // Release: a waker may take the task and migrate it at once.
                task.save_entity(entity);
                w.stats.inc(Counter::delayed_finished_at_pick);
            }
            Pick::Empty => return None,
        }
    }
}

/// A busy worker's paced, non-blocking poll of the I/O reactor, at its
/// switches and preemption points: at most once per
/// [`BUSY_POLL_INTERVAL`]; the reactor's part is a no-op while an idle
/// worker is blocked in the reactor (it gets the events itself) or nothing
/// is registered. The caller refreshes `next_event` afterwards. Readiness
/// it finds becomes ordinary wakeups (often onto this worker).
///
/// With OS_YIELD it then yields the worker's CPU to any thread the kernel
/// has waiting there ([`os_yield`]), unless the poll or a waker has just
/// given this worker a task (RESCHED, WAKELIST, or a longer queue): that
/// task runs first, the next poll yields. Returns what the yield took if
/// it kept the worker away for at least [`YIELD_AWAY_MIN`]: the caller
/// leaves that time uncharged and carries on with the later reading.
#[inline]
pub(crate) fn busy_poll(sh: &Shared, w: &Worker, now: u64) -> Option<Yielded> {
    let d = &w.deadlines;
    if now < d.next_poll.load(Ordering::Relaxed) {
        return None;
    }
    d.next_poll
        .store(now + BUSY_POLL_INTERVAL, Ordering::Relaxed);
    let queued = w.nr_running();
    // io_uring: submit what is queued and reap this worker's ring.
    crate::io::uring::at_tick(sh);
    if let Some(r) = crate::io::reactor::get(sh) {
        r.poll_now();
    }
    if sh.feature(Feature::OsYield)
        && now >= d.yield_after.load(Ordering::Relaxed)
        && w.flags() & (RESCHED | WAKELIST) == 0
        && w.nr_running() == queued
    {
        return os_yield(w);
    }
    None
}

/// What an OS_YIELD yield took.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Yielded {
    /// Time the worker's thread was away (ns).
    pub(crate) away: u64,
    /// The clock right after it came back.
    pub(crate) now: u64,
}

/// A yield away counts as long beyond this (ns): another thread kept the
/// CPU for more than a few short runs (a client's request is ~5–20 µs).
const YIELD_LONG: u64 = 200_000;
/// Shorter times away are not reported (ns): a yield with nothing else
/// runnable returns in ~150 ns, and forgiving that much would only send
/// every preemption point through the locked path (where the HRTICK
/// deadline is re-armed) for nothing.
const YIELD_AWAY_MIN: u64 = 20_000;
/// First back-off after a long yield (ns); it doubles after each further
/// long one, up to [`YIELD_BACKOFF_MAX`].
const YIELD_BACKOFF_MIN: u64 = 10_000_000;
/// Longest back-off (ns).
const YIELD_BACKOFF_MAX: u64 = 1_000_000_000;

/// OS_YIELD's `sched_yield`, timed; `None` when it came straight back
/// (less than [`YIELD_AWAY_MIN`] away). A worker is one OS thread among others
/// on its CPU, and the kernel reconsiders which of them runs only at a
/// wakeup and at its tick; a thread woken there while it was not the
/// kernel's EEVDF pick waits for the tick (4 ms at HZ=250) unless the busy
/// worker gives the kernel a scheduling point.
///
/// The yield must not hand the CPU to a thread that wants all of it. Since
/// Linux 6.18 a yield with another thread runnable also forfeits the
/// caller's remaining kernel slice (its vruntime moves to its deadline),
/// so a worker yielding every 50 µs beside a CPU-bound thread would get a
/// few percent of the CPU. A yield that kept the worker away longer than
/// [`YIELD_LONG`] therefore stops the yields for a back-off (10 ms,
/// doubling to 1 s while yields stay long, reset by a short one): beside a
/// CPU hog the worker loses at most about one kernel slice per back-off,
/// while short wakers (clients of the service, the runtime's own monitor)
/// keep getting the CPU within a poll interval.
#[inline(never)]
fn os_yield(w: &Worker) -> Option<Yielded> {
    let before = clock::now();
    crate::sys::yield_cpu();
    let now = clock::now();
    let away = now.saturating_sub(before);
    if away < YIELD_AWAY_MIN {
        return None;
    }
    let d = &w.deadlines;
    // The next poll (and yield) a full interval after coming back, not at
    // the very next preemption point.
    d.next_poll
        .store(now + BUSY_POLL_INTERVAL, Ordering::Relaxed);
    if away > YIELD_LONG {
        let b = d
            .yield_backoff
            .load(Ordering::Relaxed)
            .saturating_mul(2)
            .clamp(YIELD_BACKOFF_MIN, YIELD_BACKOFF_MAX);
        d.yield_backoff.store(b, Ordering::Relaxed);
        d.yield_after.store(now + b, Ordering::Relaxed);
    } else if d.yield_backoff.load(Ordering::Relaxed) != 0 {
        d.yield_backoff.store(0, Ordering::Relaxed);
    }
    Some(Yielded { away, now })
}

/// Wakes the tasks whose timers are due.
fn fire_timers(w: &Worker, now: u64, buf: &mut Vec<TaskRef>) {
    // In batches of `buf`'s capacity: the switch path never allocates.
    loop {
        let more = {
            let mut rq = w.lock();
            w.expire_timers(&mut rq, now, buf)
        };
        for t in buf.drain(..) {
            if wake::wake_task(&t) {
                w.stats.inc(Counter::timers_fired);
            }
        }
        if !more {
            return;
        }
    }
}

/// Nothing is runnable: balance, poll for `idle_spin`, then park.
fn go_idle(sh: &Shared, w: &Worker, local: &mut Local) {
    let balance = sh.feature(Feature::NewidleBalance) && sh.workers.len() > 1;
    if balance && balance::newidle(sh, w, clock::now(), &mut local.balance) {
        return;
    }
    w.idle().start_polling();
    crate::worker::handoff::stop_watching(sh, w);
    // The idle bitmap (for placement) is only updated once an idle period
    // outlasts a first poll round (~1 µs): two atomic read-modify-writes on
    // a line every worker shares are not paid for a blip of idleness, and a
    // worker about to get work back is no better a target than a busy one.
    let mut in_mask = false;
    // I/O (crate::io): the reactor, if this runtime has one yet.
    let reactor = crate::io::reactor::get(sh);
    let spin = sh.config.idle_spin.as_nanos() as u64;
    // I/O hook (io_uring driver): submit everything queued, reap.
    let mut found = crate::io::uring::idle_poll(sh);
    if spin > 0 && !found {
        let start = clock::now();
        let mut iter: u32 = 0;
        loop {
            if w.has_pending_work() || sh.is_shutdown() {
                found = true;
                break;
            }
            iter = iter.wrapping_add(1);
            if iter.is_multiple_of(32) {
                if !in_mask {
                    sh.idle_mask.insert(w.index);
                    in_mask = true;
                }
                if balance
                    && balance::busiest(sh, w.index).is_some()
                    && balance::newidle(sh, w, clock::now(), &mut local.balance)
                {
                    found = true;
                    break;
                }
                let now = clock::now();
                if now >= w.next_timer.load(Ordering::Relaxed) {
                    found = true;
                    break;
                }
                if now.saturating_sub(start) >= spin {
                    break;
                }
                // I/O: a polling worker polls the reactor without blocking;
                // readiness it finds is woken (often onto this worker) and
                // seen by the next `has_pending_work`.
                if let Some(r) = reactor {
                    r.poll_now();
                }
                // I/O hook (io_uring driver): the same for this worker's ring.
                if crate::io::uring::idle_poll(sh) {
                    found = true;
                    break;
                }
            }
            std::hint::spin_loop();
        }
    }
    if !found {
        if !in_mask {
            sh.idle_mask.insert(w.index);
            in_mask = true;
        }
        // I/O hook (io_uring driver): a worker with a ring parks in it.
        if crate::io::uring::park_idle(sh, w, || park_timeout(w)) {
            // Parked and back (io::uring).
        } else if let Some(r) = reactor.filter(|r| r.try_claim_poller()) {
            // I/O: one idle worker parks in the reactor instead of its futex.
            park_in_reactor(sh, w, r);
        } else {
            park_on_futex(sh, w);
        }
    }
    w.idle().set_running();
    if in_mask {
        sh.idle_mask.remove(w.index);
    }
    debug_assert_ne!(w.idle().get(), idle_state::PARKED);
    debug_assert_ne!(w.idle().get(), idle_state::PARKED_REACTOR);
}

/// The timeout of a park: until this worker's earliest timer.
fn park_timeout(w: &Worker) -> Option<std::time::Duration> {
    let next = w.next_timer.load(Ordering::Relaxed);
    (next != u64::MAX).then(|| std::time::Duration::from_nanos(next.saturating_sub(clock::now())))
}

/// Parks in the reactor's epoll wait as the runtime's poller (the caller
/// claimed the role): woken by readiness, by a kick (the reactor's
/// eventfd), or at this worker's next timer. The protocol is `worker::idle`'s
/// with `PARKED_REACTOR` for `PARKED`; see `crate::io`.
fn park_in_reactor(sh: &Shared, w: &Worker, r: &crate::io::reactor::Reactor) {
    w.idle().prepare_park_reactor();
    // Re-check every work source after announcing PARKED_REACTOR.
    if !(w.has_pending_work() || sh.is_shutdown()) {
        w.stats.inc(Counter::parks);
        // Back to RUNNING before dispatching: wakes aimed at this worker
        // then need no eventfd write.
        r.park(
            park_timeout(w),
            || w.idle().get() == idle_state::PARKED_REACTOR,
            || w.idle().unpark_reactor(),
        );
    }
    w.idle().unpark_reactor();
    release_poller_role(sh, w, r);
}

/// The poller `w` leaves its park to run tasks: it gives up the reactor's
/// poller role and, if anything is registered with the reactor, kicks one
/// worker parked without the role (on its futex or in its ring). That
/// worker finds nothing to run, parks again and takes the role, so
/// readiness keeps waking a thread directly instead of waiting for this
/// worker's paced busy polls — which never come while it runs a task
/// without preemption points. Both park paths (the epoll one above and the
/// io_uring one, `io::uring::park_idle`) end this way.
///
/// A worker about to park without the role may miss this kick: it saw the
/// role held, and announces `PARKED` only after this scan. So each side
/// writes, then (after a SeqCst fence) reads the other's word — the role
/// here, the idle word in [`park_on_futex`] and the ring's park — and at
/// least one of them sees the other: either this scan finds `PARKED`, or
/// the parker finds the role free and does not sleep without it.
pub(crate) fn release_poller_role(sh: &Shared, w: &Worker, r: &crate::io::reactor::Reactor) {
    r.release_poller();
    std::sync::atomic::fence(Ordering::SeqCst);
    if r.has_registrations() {
        if let Some(o) = sh
            .workers
            .iter()
            .find(|o| o.index != w.index && o.idle().get() == idle_state::PARKED)
        {
            if o.idle().kick() {
                w.stats.inc(Counter::kicks);
            }
        }
    }
}

/// Parks on the worker's futex. A worker that found the reactor's poller
/// role taken does not sleep here if the role has been given up since and
/// something is registered: it goes round again and takes the role (the
/// other half of [`release_poller_role`]'s argument).
fn park_on_futex(sh: &Shared, w: &Worker) {
    // Announces PARKED, then a SeqCst fence (worker::idle).
    w.idle().prepare_park();
    let poller_wanted =
        crate::io::reactor::get(sh).is_some_and(|r| r.has_registrations() && r.poller_free());
    // Re-check every work source after announcing PARKED (worker::idle).
    if !(poller_wanted || w.has_pending_work() || sh.is_shutdown()) {
        w.stats.inc(Counter::parks);
        w.idle().park(park_timeout(w));
    } else {
        w.idle().set_running();
    }
}
