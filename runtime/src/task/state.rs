//! A task's wake-protocol state: `state`, `on_rq`, `on_cpu` and the wake lock.
//!
//! Owns: the atomics the try-to-wake-up protocol (docs/eevdf.md §11, docs/architecture.md
//! "Waking a task") and the block path agree on, and the orderings that make
//! "no lost wakeup, no double enqueue" true. Must not: touch run queues
//! (the `wake` and `worker` modules do, under their locks).
//!
//! # The three words
//!
//! * `state` — what the task wants: `RUNNING`, `BLOCKED` (it asked to sleep),
//!   `WAKING` (a waker has claimed it and will enqueue it), `DEAD`.
//! * `on_rq` — whether a run queue accounts for it: `QUEUED` (runnable,
//!   running, or *delayed*) or `NOT_QUEUED`. A balancer moves a queued
//!   task while holding both run-queue locks, and wakers re-check the
//!   task's worker after taking a lock, so no third state is needed.
//! * `on_cpu` — its stack is live on a worker: set when a worker resumes it,
//!   cleared (`Release`) by that worker once the context is saved and the
//!   block/yield has been accounted.
//!
//! # Rules
//!
//! 1. Only the task itself moves `RUNNING → BLOCKED`, and it does so
//!    *before* checking its wait condition, with a full fence between the
//!    store and the condition's load ([`TaskState::set_blocked`]); a waker
//!    publishes the condition, then reads `state` after a full fence
//!    ([`TaskState::is_blocked`]). The two `SeqCst` fences are ordered in
//!    their single total order: either the task's condition load sees the
//!    waker's publication, or the waker's state load sees `BLOCKED` (the
//!    kernel's `set_current_state` / `smp_mb__after_spinlock` pairing). The
//!    fences, rather than `SeqCst` accesses, are also what loom can check.
//! 2. Wakers serialise on the per-task wake lock (the kernel's `pi_lock`)
//!    for the whole wake. Under it, a waker that sees `BLOCKED` either finds
//!    the task still queued (`ttwu_runnable`: it sets `RUNNING` under the
//!    queue's lock) or finds it off every queue, sets `WAKING`, and becomes
//!    the only thread allowed to enqueue it.
//! 3. The worker turns a block into a dequeue only under its run-queue lock
//!    and only if `state` is still `BLOCKED`; it publishes `on_rq =
//!    NOT_QUEUED` with `Release` (the task's saved entity happens-before),
//!    which a waker reads with `Acquire` after reading `state`.
//! 4. A waker that found the task off the queues waits for `on_cpu == false`
//!    (`Acquire`) before handing the task to another worker, unless it
//!    can hand it to the very worker that is switching it out (wakelist).
//! 5. `BLOCKED` leaves by compare-and-swap only: the task ending its own
//!    block (`BLOCKED → RUNNING`, [`TaskState::cancel_block`]) and a waker
//!    claiming it (`BLOCKED → WAKING`, [`TaskState::claim`]) cannot both
//!    win. The task does not take the wake lock, so a waker's `BLOCKED`
//!    read under that lock may be stale; the claim's CAS, not the read,
//!    decides. A task that loses switches out as blocked. (Before, the task
//!    stored `RUNNING` over a claim: it ran on while its claimer enqueued
//!    it, or went on to exit while a waker used its freed queue slot.)

use crate::loom::{fence, spin_hint, AtomicBool, AtomicU8, Ordering};

/// `state`: running or runnable.
pub(crate) const RUNNING: u8 = 0;
/// `state`: asked to sleep.
pub(crate) const BLOCKED: u8 = 1;
/// `state`: claimed by a waker that will enqueue it.
pub(crate) const WAKING: u8 = 2;
/// `state`: exited.
pub(crate) const DEAD: u8 = 3;

/// `on_rq`: not accounted by any run queue.
pub(crate) const NOT_QUEUED: u8 = 0;
/// `on_rq`: queued (including running and delayed).
pub(crate) const QUEUED: u8 = 1;

/// The wake-protocol words of one task.
pub(crate) struct TaskState {
    state: AtomicU8,
    on_rq: AtomicU8,
    on_cpu: AtomicBool,
    wake_lock: AtomicBool,
}

impl TaskState {
    /// A new task: `RUNNING`, not yet queued, not on a CPU.
    pub(crate) fn new() -> Self {
        TaskState {
            state: AtomicU8::new(RUNNING),
            on_rq: AtomicU8::new(NOT_QUEUED),
            on_cpu: AtomicBool::new(false),
            wake_lock: AtomicBool::new(false),
        }
    }

    // ---- the task itself -------------------------------------------------

    /// Rule 1: announce the intent to sleep before checking the condition
    /// (the fence orders this store before the caller's condition load).
    #[inline]
    pub(crate) fn set_blocked(&self) {
        // Release: a waker whose claim (Acquire) reads this BLOCKED also
        // sees `on_cpu` as the worker set it before resuming the task.
        self.state.store(BLOCKED, Ordering::Release);
        fence(Ordering::SeqCst);
    }

    /// The condition already holds after [`set_blocked`](Self::set_blocked):
    /// end the block without sleeping (rule 5). Returns `false` if a waker
    /// claimed the task first (`WAKING`): the task must then switch out as
    /// blocked, and the claimer enqueues it once it is off its CPU. A
    /// waker that made it `RUNNING` in place (`ttwu_runnable`) leaves
    /// nothing to do: `true`.
    #[inline]
    pub(crate) fn cancel_block(&self) -> bool {
        match self
            .state
            .compare_exchange(BLOCKED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(s) => s != WAKING,
        }
    }

    /// A waker, under the wake lock, takes the wake of a task it saw
    /// `BLOCKED` (rule 5): `BLOCKED → WAKING`. Returns `false` if the task
    /// ended its block itself since ([`cancel_block`](Self::cancel_block)).
    #[inline]
    pub(crate) fn claim(&self) -> bool {
        self.state
            .compare_exchange(BLOCKED, WAKING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    // ---- wakers ----------------------------------------------------------

    /// Rule 1, waker side: read `state` after publishing the condition (the
    /// fence orders the caller's publication before this load).
    #[inline]
    pub(crate) fn is_blocked(&self) -> bool {
        fence(Ordering::SeqCst);
        self.state.load(Ordering::Relaxed) == BLOCKED
    }

    /// Rule 2: serialise with other wakers of this task.
    pub(crate) fn lock_wake(&self) -> WakeGuard<'_> {
        loop {
            if self
                .wake_lock
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return WakeGuard { st: self };
            }
            while self.wake_lock.load(Ordering::Relaxed) {
                spin_hint();
            }
        }
    }

    /// The current `state` (`Acquire`: reads of `on_rq` that follow are ordered after it).
    #[inline]
    pub(crate) fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// Sets `state` (under the wake lock or the run-queue lock, per the rules).
    #[inline]
    pub(crate) fn set_state(&self, s: u8) {
        self.state.store(s, Ordering::Release);
    }

    /// `on_rq` (`Acquire`: pairs with the worker's `Release` publication).
    #[inline]
    pub(crate) fn on_rq(&self) -> u8 {
        self.on_rq.load(Ordering::Acquire)
    }

    /// Publishes `on_rq` (`Release`: everything written to the task before,
    /// e.g. its saved entity, is visible to whoever reads the new value).
    #[inline]
    pub(crate) fn set_on_rq(&self, v: u8) {
        self.on_rq.store(v, Ordering::Release);
    }

    /// `on_cpu` (`Acquire`).
    #[inline]
    pub(crate) fn on_cpu(&self) -> bool {
        self.on_cpu.load(Ordering::Acquire)
    }

    /// Sets `on_cpu` (`Release` when clearing: the saved context is published).
    #[inline]
    pub(crate) fn set_on_cpu(&self, v: bool) {
        self.on_cpu.store(v, Ordering::Release);
    }

    /// Rule 4: wait until the task's context is saved.
    pub(crate) fn wait_off_cpu(&self) {
        while self.on_cpu.load(Ordering::Acquire) {
            spin_hint();
        }
    }
}

/// Holds a task's wake lock.
pub(crate) struct WakeGuard<'a> {
    st: &'a TaskState,
}

impl Drop for WakeGuard<'_> {
    fn drop(&mut self) {
        self.st.wake_lock.store(false, Ordering::Release);
    }
}

/// Loom model of the wake/block protocol of `wake::wake_task` and
/// `worker::run::handle_prev` over the real [`TaskState`]:
/// `RUSTFLAGS="--cfg loom" cargo test -p eevdf-rt --lib --release loom`.
///
/// The model keeps the run queue as a loom mutex around a `queued` flag and
/// an enqueue counter; the task's worker blocks it (set `BLOCKED`, check the
/// condition, switch out, then under the queue lock dequeue it if still
/// `BLOCKED` and clear `on_cpu`), while wakers publish the condition and run
/// the wake path (lock-free pre-check, wake lock, `ttwu_runnable` under the
/// queue lock if still queued, otherwise claim `WAKING`, wait for `on_cpu`
/// to clear, and enqueue). Checked: the task is never left blocked while
/// its condition holds (no lost wakeup) and never enqueued twice.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::loom::AtomicBool;
    use loom::sync::{Arc, Mutex};

    struct Rq {
        queued: bool,
        enqueues: u32,
    }

    struct Model {
        st: TaskState,
        rq: Mutex<Rq>,
        cond: AtomicBool,
    }

    impl Model {
        fn new() -> Self {
            let st = TaskState::new();
            st.set_on_rq(QUEUED);
            st.set_on_cpu(true);
            Model {
                st,
                rq: Mutex::new(Rq {
                    queued: true,
                    enqueues: 0,
                }),
                cond: AtomicBool::new(false),
            }
        }

        /// The sleeper: `waiter::park` then the worker's `handle_prev`.
        fn block(&self) {
            self.st.set_blocked();
            if self.cond.load(Ordering::SeqCst) && self.st.cancel_block() {
                // ended its own block: it runs on, still queued
                return;
            }
            // switched out; the worker accounts the block under its lock
            let mut rq = self.rq.lock().unwrap();
            if self.st.state() == BLOCKED {
                rq.queued = false;
                self.st.set_on_rq(NOT_QUEUED);
            }
            drop(rq);
            self.st.set_on_cpu(false);
        }

        /// A waker: `wake::wake_task` with an inline enqueue.
        fn wake(&self) -> bool {
            self.cond.store(true, Ordering::SeqCst);
            if !self.st.is_blocked() {
                return false;
            }
            let _g = self.st.lock_wake();
            if self.st.state() != BLOCKED {
                return false;
            }
            if self.st.on_rq() != NOT_QUEUED {
                let rq = self.rq.lock().unwrap();
                if self.st.on_rq() == QUEUED {
                    self.st.set_state(RUNNING);
                    drop(rq);
                    return true;
                }
            }
            if !self.st.claim() {
                // it ended its block itself: awake (as `wake::wake` says)
                return true;
            }
            self.st.wait_off_cpu();
            let mut rq = self.rq.lock().unwrap();
            assert!(!rq.queued, "enqueue of a queued task");
            rq.queued = true;
            rq.enqueues += 1;
            self.st.set_on_rq(QUEUED);
            self.st.set_state(RUNNING);
            true
        }

        fn check(&self) {
            let rq = self.rq.lock().unwrap();
            assert!(rq.enqueues <= 1, "double enqueue");
            // the condition is set by every waker; the task must be runnable
            assert!(
                rq.queued,
                "lost wakeup: task asleep with its condition true"
            );
            assert_eq!(self.st.state(), RUNNING);
        }
    }

    #[test]
    fn loom_block_vs_wake() {
        loom::model(|| {
            let m = Arc::new(Model::new());
            let m2 = m.clone();
            let waker = loom::thread::spawn(move || {
                m2.wake();
            });
            m.block();
            waker.join().unwrap();
            m.check();
        });
    }

    #[test]
    fn loom_block_vs_two_wakers() {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(3);
        b.check(|| {
            let m = Arc::new(Model::new());
            let wakers: Vec<_> = (0..2)
                .map(|_| {
                    let m = m.clone();
                    loom::thread::spawn(move || m.wake())
                })
                .collect();
            m.block();
            let woke: u32 = wakers.into_iter().map(|w| w.join().unwrap() as u32).sum();
            assert!(woke <= 2);
            m.check();
        });
    }

    /// A task whose worker was handed off (`worker::handoff`) runs on the
    /// old thread off every run queue (`on_rq` NOT_QUEUED, `on_cpu` set).
    /// It blocks, finds its condition true and ends the block itself
    /// (`cancel_block`), while a waker that read BLOCKED claims it and
    /// waits for `on_cpu` before enqueueing it. Rule 5: either the task
    /// runs on and nobody enqueues it, or the claim wins, the task switches
    /// out (`detach`: on_cpu cleared) and the claimer enqueues it once. With
    /// the task's plain `RUNNING` store of before, it ran on over the claim
    /// and the claimer waited for `on_cpu` for good.
    #[test]
    fn loom_handed_off_cancel_vs_claim() {
        loom::model(|| {
            let m = Arc::new(Model::new());
            m.st.set_on_rq(NOT_QUEUED);
            m.rq.lock().unwrap().queued = false;
            let m2 = m.clone();
            let waker = loom::thread::spawn(move || m2.wake());
            // the task: waiter::park_green on the old thread
            m.st.set_blocked();
            let ran_on = m.cond.load(Ordering::SeqCst) && m.st.cancel_block();
            if !ran_on {
                // switched out: handoff::detach leaves a blocked or
                // claimed task to its waker once on_cpu is clear
                m.st.set_on_cpu(false);
            }
            let woke = waker.join().unwrap();
            let rq = m.rq.lock().unwrap();
            if ran_on {
                assert_eq!(rq.enqueues, 0, "enqueued while it ran on");
            } else {
                assert!(woke, "the waker saw the block and must enqueue");
                assert_eq!(rq.enqueues, 1);
                assert!(rq.queued);
            }
            assert_eq!(m.st.state(), RUNNING);
        });
    }
}
