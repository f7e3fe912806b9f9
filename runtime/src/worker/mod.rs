//! Workers: the OS threads that run green threads.
//!
//! Owns: each worker's shared state — its EEVDF run queue behind its own
//! lock (with its timers and stack pool), its lock-free wakelist, its idle
//! state (polling / parked), its flag word (reschedule, wakelist pending,
//! recheck deadlines) and its clock-driven deadlines ([`Deadlines`]: tick,
//! HRTICK, timers, I/O polls, all served by the worker itself) — and the
//! worker loop (`run`): handle the task that just switched out, drain the
//! wakelist, fire timers, pick with EEVDF, switch; when nothing is
//! runnable, steal (newidle balance), poll, then park.
//!
//! # Who touches the run queue
//!
//! The queue is behind one lock, `Worker::lock_rq`, whose guard
//! ([`RqGuard`]) applies every follow-up step of a change. Its owner takes
//! it at every switch, local wakeup and spawn, and in a preemption point's
//! slow path (uncontended: one CAS); a preemption point's fast path takes
//! no lock. Other threads take it only for the kernel's inline paths — a
//! remote wakeup with `NO_TTWU_QUEUE` (or to a busy worker with
//! `NO_TTWU_QUEUE_DEFAULT`, or of a delayed task with
//! `NO_TTWU_QUEUE_DELAYED`) — and for newidle balancing (both queues, in
//! index order), a directed yield, a change of another task's nice level
//! or slice, `Task::stats`, the hand-off's takeover, statistics and
//! feature changes. With the default features a remote waker never takes it: it
//! posts to the wakelist, which the owner drains.
//!
//! # Who runs a worker
//!
//! A worker is not tied to one OS thread. Its ownership word (`owner`)
//! says which thread owns it and whether that thread is inside a green
//! thread; a monitor (`handoff`) gives a worker whose thread stays in one
//! green thread too long, while work waits, to a standby thread, and the
//! old thread gives its green thread back at its next runtime step.
//!
//! Must not: decide policy (that is `sched`) or implement the wake
//! protocol (that is `wake`).

pub(crate) mod handoff;
pub(crate) mod idle;
pub(crate) mod owner;
pub(crate) mod room;
pub(crate) mod run;
pub(crate) mod tls;

use crate::context::StackCache;
use crate::lock::{ShortGuard, ShortLock};
use crate::lockfree::wakelist::WakeList;
use crate::sched::{Feature, Features, Params, RunQueue};
use crate::shared::Shared;
use crate::stats::Counters;
use crate::task::TaskRef;
use crate::task::Tcb;
use crate::time::timers::Timers;
use crossbeam_utils::CachePadded;
use idle::IdleState;
use owner::Ownership;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// `flags` bit: a reschedule is pending (honoured at the next preemption point).
pub(crate) const RESCHED: u32 = 1;
/// `flags` bit: another thread armed this worker's HRTICK earlier than its
/// `next_event` (a remote inline wakeup shortened the running task's
/// protection): the owner recomputes it at its next preemption point.
pub(crate) const RECHECK: u32 = 2;
/// `flags` bit: the wakelist has tasks to enqueue (the runtime's reschedule
/// IPI: the running task's next preemption point drains it).
pub(crate) const WAKELIST: u32 = 8;

/// How often a busy worker polls the I/O reactor without blocking, at its
/// preemption points and switches, while no idle worker is blocked in it
/// (ns). An `epoll_wait` with a zero timeout costs about a microsecond, so
/// this is about 2% of a busy worker's time while I/O is registered, and
/// readiness reaches a busy runtime within this long plus the distance to
/// the next preemption point.
pub(crate) const BUSY_POLL_INTERVAL: u64 = 50_000;

/// Shortest delay of the preemption timer (ns).
const MIN_PREEMPT_DELAY: u64 = 10_000;

/// Everything behind a worker's run-queue lock.
pub(crate) struct Rq {
    /// The EEVDF run queue.
    pub(crate) q: RunQueue<TaskRef>,
    /// Sleep and timed-wait timers of tasks that blocked on this worker.
    pub(crate) timers: Timers,
    /// Debug builds: the run queue's and the timer heap's capacities when
    /// the room was last made (`room`), which nothing else may change.
    #[cfg(debug_assertions)]
    pub(crate) reserved: Option<(usize, usize)>,
}

impl Rq {
    /// Debug builds: asserts that the storage has not grown since the room
    /// was made (`worker::room`: a spawn reserves; enqueues and timers never
    /// allocate). Called at every guarded change and every armed timer.
    #[inline]
    pub(crate) fn debug_check_room(&self) {
        #[cfg(debug_assertions)]
        if let Some(r) = self.reserved {
            let now = (self.q.capacity(), self.timers.capacity());
            assert_eq!(
                now, r,
                "a run queue or timer heap grew past the room made at spawn"
            );
        }
    }
}

/// One worker's shared state.
pub(crate) struct Worker {
    pub(crate) index: usize,
    rq: CachePadded<ShortLock<Rq>>,
    /// The wakelist, idle state, pending-work flags and the queue length:
    /// the one line a remote waker reads and writes (ttwu_queue_cond, the
    /// push, the wakelist flag, the kick), and the owner reads at every
    /// preemption point and in its idle poll (see [`Hot`]).
    hot: CachePadded<Hot>,
    /// Earliest armed timer (ns), a mirror for the owner's cheap check.
    pub(crate) next_timer: AtomicU64,
    /// When the running task's protection or slice ends (ns; HRTICK), or
    /// `u64::MAX`.
    pub(crate) preempt_at: AtomicU64,
    /// The owner's own clock-driven duties (see [`Deadlines`]).
    pub(crate) deadlines: Deadlines,
    /// Which OS thread owns this worker, and whether it is inside a green
    /// thread (the hand-off's claim; `worker::owner`).
    pub(crate) own: Ownership,
    /// The owner thread's id (high half) and CPU-time clock id (low half),
    /// for the hand-off monitor.
    pub(crate) owner_thread: AtomicU64,
    /// Host steal time the monitor measured during one stretch of the owner
    /// in a green thread: the stretch's ownership value, then the time (ns)
    /// the owner thread did not run in it (see `handoff`, "Steal time").
    pub(crate) stolen_in: AtomicU64,
    pub(crate) stolen_ns: AtomicU64,
    /// Which thread runs this worker with a takeover's short kernel slice,
    /// and whether that hand-off has ended (`handoff`, "The kernel's share
    /// of the CPU"). Touched only at takeovers and returns.
    pub(crate) takeover_slice: parking_lot::Mutex<handoff::TakeoverSlice>,
    /// When this worker last kicked a parked worker to balance (ns; owner only).
    pub(crate) last_balance_kick: AtomicU64,
    /// When this worker's owner last watched the other workers for a stall
    /// at its tick (ns; `handoff`, "Workers watch each other"; 0 while
    /// idle): written by the owner, read by the other workers and the
    /// monitor.
    pub(crate) watched_at: AtomicU64,
    /// Counters written only by this worker's OS thread.
    pub(crate) stats: CachePadded<Counters>,
    /// Warm stacks for spawns from this worker's green threads. Used only
    /// by this worker's thread (local spawns, recycling exited tasks'
    /// stacks, outside the run-queue lock: it may `mmap`/`madvise`) and
    /// by shutdown; the lock is never contended.
    pub(crate) stacks: ShortLock<StackCache>,
}

/// A worker's run queue, locked to be changed.
///
/// Dropping it applies, in this order, the steps that must follow any
/// change to a run queue:
///
/// 1. publish the queue length (`nr_running`, and the worker's
///    `overloaded` flag) for placement, balancing and the park re-check;
/// 2. arm the preemption timer (HRTICK) for the running task's new
///    protection or slice end — unless a reschedule was requested — and
///    refresh the worker's `next_event` ([`Deadlines`]);
/// 3. unlock;
/// 4. set `RESCHED` if a reschedule was requested (the running task
///    honours it at its next preemption point).
///
/// Kicking a parked worker stays with the caller: only a remote inline
/// enqueue needs it.
pub(crate) struct RqGuard<'a> {
    sh: &'a Shared,
    w: &'a Worker,
    now: u64,
    resched: bool,
    /// The locker is the worker's own thread.
    owner: bool,
    rq: Option<ShortGuard<'a, Rq>>,
}

impl RqGuard<'_> {
    /// Asks the running task to reschedule (a wakeup or the tick preempts it).
    #[inline]
    pub(crate) fn request_resched(&mut self) {
        self.resched = true;
    }
}

impl std::ops::Deref for RqGuard<'_> {
    type Target = Rq;
    #[inline]
    fn deref(&self) -> &Rq {
        self.rq.as_ref().expect("locked until dropped")
    }
}

impl std::ops::DerefMut for RqGuard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Rq {
        self.rq.as_mut().expect("locked until dropped")
    }
}

impl Drop for RqGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        let Some(rq) = self.rq.take() else { return };
        rq.debug_check_room();
        self.w.publish_nr_running(self.sh, &rq);
        if !self.resched {
            self.w
                .arm_preempt(&rq, self.now, self.sh.feature(Feature::Hrtick), self.owner);
        }
        drop(rq);
        if self.resched {
            self.w.set_flags(RESCHED);
        }
    }
}

/// When a busy worker must next look up from the running task: the
/// earliest of its tick, its HRTICK preemption, its earliest timer and its
/// next I/O poll. A busy worker serves all four itself — `preempt_point`
/// compares the cheap clock (`time::clock`) with `next_event` and takes the
/// slow path when it has passed — so no helper thread has to be scheduled
/// on a busy CPU to deliver them on time.
///
/// Every field is written only by the owner, so no two writers can undo
/// each other and no lock is needed. The one input another thread changes
/// is `preempt_at`, when a remote inline wakeup (under this worker's
/// run-queue lock) shortens the running task's protection: that waker then
/// sets the [`RECHECK`] flag (`Release`, after its store of `preempt_at`),
/// and the owner, whose preemption point sees any flag, recomputes
/// `next_event` after reading the flags (`Acquire`). The same holds for
/// the one other writer of `next_timer`: a thread that lost this worker in
/// a hand-off arms its green thread's timer under the lock, then sets
/// `RECHECK` and kicks (`Worker::arm_timer_remote`).
pub(crate) struct Deadlines {
    /// min(next_tick, preempt_at, next_timer, next_poll) (ns; owner only).
    pub(crate) next_event: AtomicU64,
    /// The next periodic tick (ns).
    pub(crate) next_tick: AtomicU64,
    /// The next busy poll of the I/O reactor (ns). On a cache line of its
    /// own: other workers' wakers read it on every wakeup of a delayed task
    /// (WA_STALE's `placement::is_stale`), while the owner rewrites
    /// `next_event` and `preempt_at` at every switch. Sharing their line,
    /// each of those reads missed (18% of `wake`'s samples in schbench on
    /// two workers); alone, it changes once per busy-poll interval.
    pub(crate) next_poll: CachePadded<AtomicU64>,
    /// OS_YIELD: no yield before this time (ns), after a yield that gave
    /// the CPU away for long (`worker::run::os_yield`).
    pub(crate) yield_after: AtomicU64,
    /// OS_YIELD: the current back-off (ns; 0 after a short yield).
    pub(crate) yield_backoff: AtomicU64,
}

impl Deadlines {
    fn new() -> Self {
        Deadlines {
            next_event: AtomicU64::new(0),
            next_tick: AtomicU64::new(0),
            next_poll: CachePadded::new(AtomicU64::new(0)),
            yield_after: AtomicU64::new(0),
            yield_backoff: AtomicU64::new(0),
        }
    }
}

/// What remote wakers touch, on one cache line. A remote wake of an idle
/// or busy worker pushes onto the wakelist, sets `WAKELIST` and reads the
/// idle state; the owner's idle poll reads the wakelist head and the queue
/// length, and its drain clears the flag and swaps the head. On one line
/// that is one line transfer each way per wakeup; with the wakelist on a
/// line of its own it was two or three (a load in shared state, the CAS's
/// upgrade, then the flag's line).
pub(crate) struct Hot {
    /// Remote wakeups waiting for this worker to enqueue them.
    pub(crate) wakelist: WakeList<Tcb>,
    pub(crate) idle: IdleState,
    pub(crate) flags: AtomicU32,
    /// Number of queued tasks (a lock-free mirror of the run queue's
    /// `nr_queued`, updated under the lock), for placement and balancing.
    nr_running: AtomicU32,
}

impl Worker {
    pub(crate) fn new(
        index: usize,
        params: Params,
        features: Features,
        stacks: StackCache,
    ) -> Self {
        Worker {
            index,
            rq: CachePadded::new(ShortLock::new(Rq {
                q: RunQueue::new(params, features),
                timers: Timers::new(),
                #[cfg(debug_assertions)]
                reserved: None,
            })),
            hot: CachePadded::new(Hot {
                wakelist: WakeList::new(),
                idle: IdleState::new(),
                flags: AtomicU32::new(0),
                nr_running: AtomicU32::new(0),
            }),
            next_timer: AtomicU64::new(u64::MAX),
            preempt_at: AtomicU64::new(u64::MAX),
            deadlines: Deadlines::new(),
            own: Ownership::new(),
            owner_thread: AtomicU64::new(0),
            takeover_slice: parking_lot::Mutex::new(handoff::TakeoverSlice::default()),
            stolen_in: AtomicU64::new(u64::MAX),
            stolen_ns: AtomicU64::new(0),
            last_balance_kick: AtomicU64::new(0),
            watched_at: AtomicU64::new(0),
            stats: CachePadded::new(Counters::new()),
            stacks: ShortLock::new(stacks),
        }
    }

    /// Locks the run queue without its follow-up steps: for what does not
    /// change the queue (timers, stacks, counters, shutdown) and for the
    /// balancer, which holds two queues and publishes both itself.
    #[inline]
    pub(crate) fn lock(&self) -> ShortGuard<'_, Rq> {
        self.rq.lock()
    }

    /// Locks the run queue without its follow-up steps, only if it is free
    /// now (a busy worker pulling from a stalled one never waits for it).
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<ShortGuard<'_, Rq>> {
        self.rq.try_lock()
    }

    /// Locks the run queue to change it, at time `now` (the caller's one
    /// clock read), from the worker's own thread. The guard applies every
    /// follow-up step when it is dropped (see [`RqGuard`]), so no path that
    /// changes a queue can forget one.
    #[inline]
    pub(crate) fn lock_rq<'a>(&'a self, sh: &'a Shared, now: u64) -> RqGuard<'a> {
        self.lock_rq_from(sh, now, Some(self.index))
    }

    /// [`lock_rq`](Self::lock_rq) from a waker running on worker `from`
    /// (`None`: an OS thread outside the runtime).
    #[inline]
    pub(crate) fn lock_rq_from<'a>(
        &'a self,
        sh: &'a Shared,
        now: u64,
        from: Option<usize>,
    ) -> RqGuard<'a> {
        RqGuard {
            sh,
            w: self,
            now,
            resched: false,
            owner: from == Some(self.index),
            rq: Some(self.rq.lock()),
        }
    }

    /// Steal time the monitor measured during the owner's stretch `v` in a
    /// green thread (0 if none), for the owner to leave uncharged.
    #[inline]
    pub(crate) fn stolen_during(&self, v: u64) -> u64 {
        // Acquire: pairs with the monitor's Release store of `stolen_in`,
        // made after its store of `stolen_ns`.
        if self.stolen_in.load(Ordering::Acquire) == v {
            self.stolen_ns.load(Ordering::Relaxed)
        } else {
            0
        }
    }

    /// Remote wakeups waiting for this worker to enqueue them.
    #[inline]
    pub(crate) fn wakelist(&self) -> &WakeList<Tcb> {
        &self.hot.wakelist
    }

    /// The idle state (park / kick protocol, `worker::idle`).
    #[inline]
    pub(crate) fn idle(&self) -> &IdleState {
        &self.hot.idle
    }

    /// The pending-work flags (`RESCHED`, `RECHECK`, `WAKELIST`).
    #[inline]
    pub(crate) fn flags(&self) -> u32 {
        self.hot.flags.load(Ordering::Relaxed)
    }

    /// The flags, ordered before the reads that follow (`Acquire`: pairs
    /// with `RECHECK`'s `Release`).
    #[inline]
    pub(crate) fn flags_acquire(&self) -> u32 {
        self.hot.flags.load(Ordering::Acquire)
    }

    /// Sets flag bits (any thread).
    #[inline]
    pub(crate) fn set_flags(&self, bits: u32) {
        self.hot.flags.fetch_or(bits, Ordering::Relaxed);
    }

    /// Clears flag bits.
    #[inline]
    pub(crate) fn clear_flags(&self, bits: u32) {
        if self.flags() & bits != 0 {
            self.hot.flags.fetch_and(!bits, Ordering::Relaxed);
        }
    }

    /// Queued tasks (lock-free mirror).
    #[inline]
    pub(crate) fn nr_running(&self) -> u32 {
        self.hot.nr_running.load(Ordering::SeqCst)
    }

    /// Refreshes the mirror after the queue changed (under the lock).
    ///
    /// `Release`, not `SeqCst` (an `xchg`, a full barrier, on every queue
    /// change): the one reader that needs store→load ordering is the park
    /// re-check of a worker that a remote waker enqueued onto inline, and
    /// that waker's next step is `IdleState::kick`, which starts with a
    /// `SeqCst` fence — the same fence pair as the wakelist's Dekker
    /// argument (`worker::idle`).
    #[inline]
    pub(crate) fn publish_nr_running(&self, sh: &Shared, rq: &Rq) {
        let n = rq.q.nr_queued();
        let old = self.hot.nr_running.load(Ordering::Relaxed);
        if old != n {
            self.hot.nr_running.store(n, Ordering::Release);
            // The "has a task to spare" flag that gates newidle balancing
            // (the kernel's root-domain `overloaded`): written only when this
            // queue crosses two tasks, so the flags stay read-mostly. Only
            // the lock holder writes it (a plain store, no RMW).
            if (old >= 2) != (n >= 2) {
                sh.overloaded[self.index].store(n >= 2, Ordering::Relaxed);
            }
        }
    }

    /// Arms a timer for `task` (under the lock, by this worker's thread).
    pub(crate) fn arm_timer(&self, rq: &mut Rq, deadline: u64, task: TaskRef) {
        rq.timers.insert(deadline, task);
        rq.debug_check_room();
        if deadline < self.next_timer.load(Ordering::Relaxed) {
            self.next_timer.store(deadline, Ordering::Relaxed);
            let d = &self.deadlines;
            if deadline < d.next_event.load(Ordering::Relaxed) {
                d.next_event.store(deadline, Ordering::Relaxed);
            }
        }
    }

    /// Moves due timers into `out` (under the lock), as many as fit in its
    /// capacity, and refreshes the mirror. Returns whether more may be due.
    pub(crate) fn expire_timers(&self, rq: &mut Rq, now: u64, out: &mut Vec<TaskRef>) -> bool {
        let more = rq.timers.expire(now, out);
        self.next_timer.store(
            rq.timers.next_deadline().unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        self.refresh_next_event();
        more
    }

    /// Recomputes `next_event` from its parts (owner only).
    #[inline]
    pub(crate) fn refresh_next_event(&self) {
        let d = &self.deadlines;
        let e = d
            .next_tick
            .load(Ordering::Relaxed)
            .min(d.next_poll.load(Ordering::Relaxed))
            .min(self.preempt_at.load(Ordering::Relaxed))
            .min(self.next_timer.load(Ordering::Relaxed));
        d.next_event.store(e, Ordering::Relaxed);
    }

    /// Whether something clock-driven is due at `now` (the preemption
    /// point's check: one relaxed load).
    #[inline]
    pub(crate) fn event_due(&self, now: u64) -> bool {
        now >= self.deadlines.next_event.load(Ordering::Relaxed)
    }

    /// Arms the preemption timer for the current task (under the lock):
    /// `now` + the time until its protection or slice ends (HRTICK), or
    /// disarms it; then the owner refreshes `next_event`, and another
    /// thread that armed it earlier than that asks the owner to (`RECHECK`).
    fn arm_preempt(&self, rq: &Rq, now: u64, hrtick: bool, owner: bool) {
        let at = if hrtick {
            // At least MIN_PREEMPT_DELAY away, like the kernel's hrtick
            // minimum: a horizon that has just passed is handled by the
            // charge that follows, not by a storm of timer ticks.
            rq.q.time_to_preempt()
                .map_or(u64::MAX, |d| now.saturating_add(d.max(MIN_PREEMPT_DELAY)))
        } else {
            u64::MAX
        };
        if self.preempt_at.load(Ordering::Relaxed) != at {
            self.preempt_at.store(at, Ordering::Relaxed);
        }
        if owner {
            self.refresh_next_event();
        } else if at < self.deadlines.next_event.load(Ordering::Relaxed) {
            // Release: the owner's Acquire read of the flags then sees `at`.
            self.hot.flags.fetch_or(RECHECK, Ordering::Release);
        }
    }

    /// Hands `t` to this worker's wakelist (the waker has claimed it and set
    /// its `activation`), tells a busy worker to drain it at its next
    /// preemption point, and kicks a parked one. Returns whether a wake
    /// syscall was made.
    pub(crate) fn post(&self, t: TaskRef) -> bool {
        // The push's SeqCst CAS publishes `activation` and every write the
        // waker made to the task (its release half); the SeqCst fence that
        // starts `kick` orders the push before the kick's load of the idle
        // state (worker::idle protocol).
        if self.wakelist().push(t) {
            // First task on an empty list: one flag per batch, like one IPI.
            self.set_flags(WAKELIST);
        }
        self.idle().kick()
    }

    /// Whether this worker has work it has not looked at (for the idle loop).
    #[inline]
    pub(crate) fn has_pending_work(&self) -> bool {
        !self.wakelist().is_empty() || self.nr_running() > 0
    }
}
