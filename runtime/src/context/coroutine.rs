//! The stackful coroutine a green thread runs on (corosensei), behind a
//! small safe-to-use surface.
//!
//! Owns: every stack-switching `unsafe` of the crate: creating a context on
//! a stack, resuming it, suspending from inside it, unwinding it. Must
//! not: know about tasks or scheduling (its callers decide who runs).
//!
//! # Invariants
//!
//! * A [`GreenContext`] is resumed by at most one thread at a time: the
//!   worker that made its task current (the run-queue protocol guarantees
//!   a task is current on one worker only, and `on_cpu` keeps a waker from
//!   handing it to another worker before its context is saved).
//! * [`SuspendSlot::suspend`] is only called by code running on that
//!   context's own stack; the slot is filled by the context's first
//!   instruction and points into that stack, which lives as long as the
//!   coroutine.
//!
//! # Why `Send` is sound here
//!
//! corosensei's `Coroutine` is `!Send` because it cannot know what is on
//! the stack. A green thread's closure is `Send + 'static` (like
//! `std::thread::spawn`), and between a suspend and the next resume the
//! stack is only data. What can break is code that relies on *which OS
//! thread* it runs on across a switch — thread-local references, or types
//! tied to a thread. The runtime never caches a thread-local address across
//! a switch (`runtime::context` re-reads through `#[inline(never)]`
//! accessors), and the user-facing rule (README, crate docs) is: do not hold
//! a reference into a `thread_local!` across a blocking runtime call; pin a
//! task (`task::Builder::pin`) if it must stay on one worker.

use super::stack::GreenStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::sync::atomic::{AtomicPtr, Ordering};

/// Why a green thread hands control back to its worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Switch {
    /// `yield_now`: move the deadline back and pick again.
    Yield,
    /// Directed yield to the task at this address (a `Tcb`, kept alive by
    /// the yielder): yield and make it the next buddy if it is queued on
    /// the same worker (used by `join` on a task that has not run yet).
    YieldTo(*const ()),
    /// A preemption point found a pending reschedule (`tick`: the tick asked for it).
    Preempt {
        /// The reschedule came from the tick (slice or protection end, TICK_ELIGIBLE).
        tick: bool,
        /// The clock reading the preemption point's slow path made just
        /// before switching (0: none), which the scheduler uses as its
        /// `now` instead of reading the clock again (one read per switch).
        now: u64,
    },
    /// Sleep until woken (the task has set itself `BLOCKED`).
    Block,
    /// Sleep until woken or until the deadline (ns, runtime clock).
    BlockUntil(u64),
}

/// What a resume came back with.
pub(crate) enum Resumed {
    /// The green thread suspended itself.
    Switched(Switch),
    /// The green thread's body returned (its result is already delivered).
    Finished,
}

type Co = Coroutine<(), Switch, (), GreenStack>;

/// A suspended or not yet started green thread.
pub(crate) struct GreenContext {
    co: Co,
    /// Where the stack's canary is (0: the stack has a guard page instead).
    canary: usize,
}

// SAFETY: see the module documentation ("Why `Send` is sound here"): the
// body is `Send + 'static` and a context is resumed by one thread at a time.
unsafe impl Send for GreenContext {}

impl GreenContext {
    /// Creates a context running `body` on `stack`; the body's first action
    /// is to record its suspend handle in `slot` (which must outlive the
    /// context: it lives in the task that owns both).
    pub(crate) fn with_slot<F>(stack: GreenStack, slot: *const SuspendSlot, body: F) -> Self
    where
        F: FnOnce() + Send + 'static,
    {
        let slot = SlotPtr(slot);
        let canary = stack.canary_at();
        let co = Coroutine::with_stack(stack, move |yielder: &Yielder<(), Switch>, ()| {
            let slot = slot;
            // SAFETY: `slot` points into the task that owns this context;
            // the task outlives its context (it drops the context first).
            unsafe { (*slot.0).set(yielder) };
            body();
        });
        GreenContext { co, canary }
    }

    /// Checks the stack's canary, if it has one, after the green thread
    /// switched out or finished: the worker calls this after every resume.
    /// Aborts the process with a message naming the running green thread
    /// (still `tls::current`) if the canary was overwritten (a stack
    /// overflow). One well-predicted branch for stacks with a guard page.
    #[inline]
    pub(crate) fn check_stack(&self) {
        // SAFETY: a non-zero `canary` is the address of the canary of the
        // stack this context owns (the stack lives as long as `co`).
        unsafe { check_canary(self.canary) };
    }

    /// Where this context's stack keeps its canary (0: it has a guard page
    /// instead), for [`check_canary`] from the green thread itself.
    pub(crate) fn canary_at(&self) -> usize {
        self.canary
    }

    /// Runs the green thread until it suspends or finishes.
    ///
    /// Panics in the body are the body's business (the spawn wrapper catches
    /// them); a panic escaping here is a runtime bug or a forced unwind.
    #[inline]
    pub(crate) fn resume(&mut self) -> Resumed {
        match self.co.resume(()) {
            CoroutineResult::Yield(s) => Resumed::Switched(s),
            CoroutineResult::Return(()) => Resumed::Finished,
        }
    }

    /// Unwinds a suspended green thread's stack, running its destructors
    /// (a never-started body is dropped without running). Panics in
    /// destructors propagate. A destructor must not suspend: corosensei
    /// then panics inside it, which aborts the process — so shutdown uses
    /// this only for contexts that never started, and resumes the others
    /// so that they unwind themselves (`runtime::shutdown`).
    pub(crate) fn force_unwind(&mut self) {
        self.co.force_unwind();
    }

    /// Whether the green thread has run at all (a context that has not
    /// runs its body's first instruction at its first resume).
    pub(crate) fn started(&self) -> bool {
        self.co.started()
    }

    /// Gives up a suspended context for good, without unwinding it: its
    /// stack stays mapped and its destructors never run (dropping it would
    /// force an unwind, which aborts if a destructor suspends). For the
    /// green threads shutdown could not unwind in time.
    pub(crate) fn leak(self) {
        std::mem::forget(self);
    }

    /// The stack of a finished context, for reuse.
    pub(crate) fn into_stack(self) -> GreenStack {
        self.co.into_stack()
    }
}

struct SlotPtr(*const SuspendSlot);
// SAFETY: the pointer is only dereferenced on the context's own stack, by
// the thread resuming it (see `with_slot`).
unsafe impl Send for SlotPtr {}

/// Where a running green thread finds its way back to its worker.
pub(crate) struct SuspendSlot {
    yielder: AtomicPtr<Yielder<(), Switch>>,
}

impl SuspendSlot {
    pub(crate) const fn new() -> Self {
        SuspendSlot {
            yielder: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    fn set(&self, y: &Yielder<(), Switch>) {
        // Relaxed: written and read only by the green thread itself.
        self.yielder
            .store(y as *const _ as *mut _, Ordering::Relaxed);
    }

    /// Suspends the running green thread with `why`; returns when a worker
    /// resumes it (possibly a different worker than before).
    ///
    /// # Safety
    /// Must be called from code running on the stack of the context this
    /// slot belongs to.
    #[inline]
    pub(crate) unsafe fn suspend(&self, why: Switch) {
        let y = self.yielder.load(Ordering::Relaxed);
        debug_assert!(!y.is_null());
        // SAFETY: per this function's contract we run on the context's stack,
        // so the yielder (which lives at the root of that stack) is alive.
        unsafe { (*y).suspend(why) }
    }
}

/// [`GreenContext::check_stack`] for a canary address copied out of the
/// context (`canary_at`): the running green thread checks its own stack
/// this way at a yield that does not switch. 0 means a guard page: nothing
/// to check.
///
/// # Safety
/// A non-zero `at` must be the canary address of a stack that is alive
/// (the caller's own, or one whose context the caller holds).
#[inline]
pub(crate) unsafe fn check_canary(at: usize) {
    // SAFETY: the caller's contract.
    if at != 0 && !unsafe { super::guard::canary_intact(at) } {
        super::overflow::canary_smashed(at);
    }
}
