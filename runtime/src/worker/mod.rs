//! Workers: the OS threads that run green threads.
//!
//! Owns: each worker's shared state — its EEVDF run queue behind its own
//! lock (with its timers and stack pool), its lock-free wakelist, its idle
//! state (polling / parked) and its flag word (reschedule / tick pending) —
//! and the worker loop (`run`): handle the task that just switched out,
//! drain the wakelist, fire timers, pick with EEVDF, switch; when nothing is
//! runnable, steal (newidle balance), poll, then park. Must not: decide
//! policy (that is `sched`) or implement the wake protocol (that is `wake`).

pub(crate) mod idle;
pub mod mask;
pub(crate) mod run;
pub(crate) mod tls;
pub(crate) mod wakelist;

use crate::context::StackPool;
use crate::lock::ShortLock;
use crate::runtime::shared::Shared;
use crate::sched::{Features, Params, RunQueue};
use crate::stats::Counters;
use crate::task::TaskRef;
use crate::task::Tcb;
use crate::time::timers::Timers;
use crossbeam_utils::CachePadded;
use idle::IdleState;
use parking_lot::MutexGuard;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use wakelist::WakeList;

/// `flags` bit: a reschedule is pending (honoured at the next preemption point).
pub(crate) const RESCHED: u32 = 1;
/// `flags` bit: a tick period has passed (charge and check at the next preemption point).
pub(crate) const TICK: u32 = 2;
/// `flags` bit: a timer of this worker is due (switch so the scheduler fires it).
pub(crate) const TIMER: u32 = 4;
/// `flags` bit: the wakelist has tasks to enqueue (the runtime's reschedule
/// IPI: the running task's next preemption point drains it).
pub(crate) const WAKELIST: u32 = 8;

/// Shortest delay of the preemption timer (ns).
const MIN_PREEMPT_DELAY: u64 = 10_000;

/// Everything behind a worker's run-queue lock.
pub(crate) struct Rq {
    /// The EEVDF run queue.
    pub(crate) q: RunQueue<TaskRef>,
    /// Sleep and timed-wait timers of tasks that blocked on this worker.
    pub(crate) timers: Timers,
    /// Free stacks for spawns on this worker.
    pub(crate) stacks: StackPool,
}

/// One worker's shared state.
pub(crate) struct Worker {
    pub(crate) index: usize,
    rq: CachePadded<ShortLock<Rq>>,
    /// Remote wakeups waiting for this worker to enqueue them.
    pub(crate) wakelist: CachePadded<WakeList<Tcb>>,
    /// Idle state, pending-work flags and the queue length: the one line a
    /// remote waker reads and writes (ttwu_queue_cond, the wakelist flag,
    /// the kick), and the owner reads at every preemption point.
    hot: CachePadded<Hot>,
    /// Earliest armed timer (ns), a mirror for the owner's cheap check.
    pub(crate) next_timer: AtomicU64,
    /// When the running task's protection or slice ends (ns; HRTICK), or
    /// `u64::MAX`. The ticker delivers a `TICK` then.
    pub(crate) preempt_at: AtomicU64,
    /// When this worker last kicked a parked worker to balance (ns; owner only).
    pub(crate) last_balance_kick: AtomicU64,
    /// Counters written only by this worker's OS thread.
    pub(crate) stats: CachePadded<Counters>,
}

pub(crate) struct Hot {
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
        stack_size: usize,
        pool: usize,
    ) -> Self {
        Worker {
            index,
            rq: CachePadded::new(ShortLock::new(Rq {
                q: RunQueue::new(params, features),
                timers: Timers::new(),
                stacks: StackPool::new(stack_size, pool),
            })),
            wakelist: CachePadded::new(WakeList::new()),
            hot: CachePadded::new(Hot {
                idle: IdleState::new(),
                flags: AtomicU32::new(0),
                nr_running: AtomicU32::new(0),
            }),
            next_timer: AtomicU64::new(u64::MAX),
            preempt_at: AtomicU64::new(u64::MAX),
            last_balance_kick: AtomicU64::new(0),
            stats: CachePadded::new(Counters::new()),
        }
    }

    /// Locks the run queue.
    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, Rq> {
        self.rq.lock()
    }

    /// The idle state.
    #[inline]
    pub(crate) fn idle(&self) -> &IdleState {
        &self.hot.idle
    }

    /// The pending-work flags (`RESCHED`, `TICK`).
    #[inline]
    pub(crate) fn flags(&self) -> u32 {
        self.hot.flags.load(Ordering::Relaxed)
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
    /// `SeqCst`: a waker that enqueued inline and then checks whether the
    /// worker is parked pairs with the worker's park-time re-check.
    #[inline]
    pub(crate) fn publish_nr_running(&self, sh: &Shared, rq: &Rq) {
        let n = rq.q.nr_queued();
        let old = self.hot.nr_running.load(Ordering::Relaxed);
        if old != n {
            self.hot.nr_running.store(n, Ordering::SeqCst);
            // The "someone has a task to spare" count that gates newidle
            // balancing (the kernel's root-domain `overloaded`): touched only
            // when this queue crosses two tasks, so it stays read-mostly.
            match (old >= 2, n >= 2) {
                (false, true) => {
                    sh.overloaded.fetch_add(1, Ordering::Relaxed);
                }
                (true, false) => {
                    sh.overloaded.fetch_sub(1, Ordering::Relaxed);
                }
                _ => {}
            }
        }
    }

    /// Arms a timer for `task` (under the lock, by this worker's thread).
    pub(crate) fn arm_timer(&self, rq: &mut Rq, deadline: u64, task: TaskRef) {
        rq.timers.insert(deadline, task);
        if deadline < self.next_timer.load(Ordering::Relaxed) {
            // SeqCst: pairs with the ticker's re-scan (time::ticker).
            self.next_timer.store(deadline, Ordering::SeqCst);
        }
    }

    /// Moves due timers into `out` (under the lock) and refreshes the mirror.
    pub(crate) fn expire_timers(&self, rq: &mut Rq, now: u64, out: &mut Vec<TaskRef>) {
        rq.timers.expire(now, out);
        self.next_timer.store(
            rq.timers.next_deadline().unwrap_or(u64::MAX),
            Ordering::SeqCst,
        );
    }

    /// Arms the preemption timer for the current task (under the lock):
    /// `now` + the time until its protection or slice ends (HRTICK), or
    /// disarms it. Returns the earliest instant the ticker must wake for
    /// this worker (timer or preemption); the caller passes it to
    /// `ticker::check_deadline` after dropping the lock.
    pub(crate) fn arm_preempt(&self, rq: &Rq, now: u64, hrtick: bool) -> u64 {
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
            // Not SeqCst (this runs on every switch, and a SeqCst store is a
            // full barrier): if this store races with the ticker's planning,
            // the ticker may sleep until its next tick, so the preemption is
            // at most one tick late — what it would be without HRTICK.
            self.preempt_at.store(at, Ordering::Release);
        }
        at.min(self.next_timer.load(Ordering::Relaxed))
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
        if self.wakelist.push(t) {
            // First task on an empty list: one flag per batch, like one IPI.
            self.set_flags(WAKELIST);
        }
        self.idle().kick()
    }

    /// Whether this worker has work it has not looked at (for the idle loop).
    #[inline]
    pub(crate) fn has_pending_work(&self) -> bool {
        !self.wakelist.is_empty() || self.nr_running() > 0
    }
}
