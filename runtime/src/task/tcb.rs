//! The task control block (TCB) of one green thread.
//!
//! Owns: everything the runtime keeps per green thread — identity, the
//! wake-protocol words ([`TaskState`]), the worker it belongs to, its
//! scheduling entity while it is off every run queue, its affinity, its
//! stackful context and suspend handle, its timer sequence, and its
//! wakelist link. Must not: make scheduling decisions; the `worker` and
//! `wake` modules move a task between states under the rules of
//! `task::state`.
//!
//! # Who may touch what
//!
//! * `entity` — the sleeping task's EEVDF state (lag, weight, slice,
//!   relative deadline). Saved by the worker that dequeues the task, in
//!   the same step that publishes `on_rq = NOT_QUEUED` ([`Tcb::save_entity`]);
//!   taken by whoever enqueues it next: the spawner, the waker that claimed
//!   it (`WAKING`), or the worker draining its wakelist
//!   ([`Tcb::take_entity`]). The wake protocol (`task::state`) orders the
//!   two, so the slot needs no lock.
//! * `slot` — the task's slot in its worker's run queue; read and written
//!   only under that worker's run-queue lock.
//! * `context` — resumed only by the worker that made the task current (see
//!   [`ContextCell`]).
//! * `join` — where the green thread's result goes. The task block only
//!   stores it, so that a spawn makes one allocation; its protocol belongs
//!   to `runtime::join`.

use crate::context::{GreenContext, SuspendSlot};
use crate::lockfree::wakelist::Linked;
use crate::loom::AtomicPtr;
use crate::mask::WorkerMask;
use crate::runtime::join::Packet;
use crate::sched::{Entity, Slot};
use crate::shared::Shared;
use crate::task::state::TaskState;
use crate::task::stats::Acct;
use std::cell::UnsafeCell;
use std::sync::atomic::{
    AtomicBool, AtomicI8, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use std::sync::Arc;

use super::TaskRef;

/// What the worker draining a wakelist must do with a task (`activation`).
pub(crate) mod activation {
    /// An ordinary wakeup.
    pub(crate) const WAKE: u8 = 0;
    /// The first enqueue of a new task.
    pub(crate) const NEW: u8 = 1;
    /// Bit: the wake moved the task to another worker.
    pub(crate) const MIGRATED: u8 = 2;
    /// Bit: no wakeup, a task that yielded or was preempted when its
    /// worker was handed off, put back through the wake path
    /// (`worker::handoff::detach`); its accounting counts no wakeup.
    pub(crate) const REQUEUE: u8 = 4;
}

/// Sentinel for "no slot".
const NO_SLOT: u32 = u32::MAX;

/// The task control block.
///
/// `repr(C)` with the fields a remote waker touches first, so that a wake
/// touches as few of its cache lines as possible. (No 64-byte alignment:
/// an over-aligned allocation takes glibc's slow `posix_memalign` path on
/// every spawn.)
#[repr(C)]
pub(crate) struct Tcb {
    // ---- the wake path's line ----
    /// Wake-protocol words.
    pub(crate) st: TaskState,
    /// The worker whose run queue holds the task, or held it last.
    pub(crate) cpu: AtomicU32,
    /// The worker it ran on before its last migration (`recent_used_cpu`).
    pub(crate) recent_cpu: AtomicU32,
    slot: AtomicU32,
    /// What a wakelist consumer must do (see [`activation`]).
    pub(crate) activation: AtomicU8,
    /// The `park`/`unpark` token (like `std::thread::park`).
    pub(crate) unpark_token: AtomicBool,
    /// Shutdown is unwinding this green thread (`runtime::shutdown`): its
    /// next resume raises the cancellation, and panics must propagate.
    pub(crate) cancelled: AtomicBool,
    /// The cancellation has been raised: later resumes (shutdown resumes a
    /// green thread whose destructor blocked) return as spurious wakeups.
    pub(crate) unwinding: AtomicBool,
    nice: AtomicI8,
    /// Non-zero while the task runs on an OS thread its worker was taken
    /// from (`worker::handoff`): the mark of that takeover.
    pub(crate) handed_off: AtomicU32,
    link: AtomicPtr<Tcb>,
    /// The runtime the task belongs to.
    pub(crate) shared: Arc<Shared>,
    timer_seq: AtomicU64,
    /// Unique id (per process).
    pub(crate) id: u64,
    // ---- the rest ----
    /// How many `block_on_future` polls this green thread is inside (it
    /// alone writes it): preemption points do not switch meanwhile
    /// (`future`, "No switch inside a poll").
    pub(crate) polling: AtomicU32,
    /// Workers it may run on. Read by wakers (placement), written only by
    /// `set_affinity`: it keeps the entity off the lines the waker writes.
    pub(crate) affinity: WorkerMask,
    /// The EEVDF entity while the task is off every run queue. The worker
    /// that takes it when it drains a wakeup (`wake::activate`) should find
    /// its lines in its own cache: a task block is only 16-byte aligned,
    /// so the waker-written words at its start (reference count, state,
    /// activation, wakelist link: the block's first 40 bytes) can share a
    /// cache line with anything up to 80 bytes from the block's start, and
    /// the entity starts after that.
    entity: EntitySlot,
    /// Registry key (shard << 32 | index), for removal at exit.
    pub(crate) reg_key: AtomicU64,
    slice_ns: AtomicU64,
    name: Option<Box<str>>,
    context: ContextCell,
    /// A copy of the context's canary address (0: a guard page), which
    /// the green thread may read while it runs (the context itself is the
    /// worker's while it is resumed).
    stack_canary: AtomicUsize,
    /// The running green thread's way back to its worker.
    pub(crate) suspend: SuspendSlot,
    /// Per-task accounting (`task::stats`).
    pub(crate) acct: Acct,
    /// Per-task trace state (`crate::trace`).
    pub(crate) trace: crate::trace::TaskMark,
    /// The join packet: the result and whoever waits for it.
    pub(crate) join: Packet,
}

// SAFETY: `TaskRef::into_raw` and `TaskRef::from_raw` are inverse, and
// the raw pointer keeps the reference's count.
unsafe impl Linked for Tcb {
    type Ref = TaskRef;
    fn link(&self) -> &AtomicPtr<Tcb> {
        &self.link
    }
    #[inline]
    fn into_raw(r: TaskRef) -> *const Tcb {
        TaskRef::into_raw(r)
    }
    #[inline]
    unsafe fn from_raw(p: *const Tcb) -> TaskRef {
        // SAFETY: the caller's contract (from `into_raw`, once).
        unsafe { TaskRef::from_raw(p) }
    }
}

impl Tcb {
    /// A new task that has no context yet (see [`Tcb::install_context`]).
    pub(crate) fn new(
        id: u64,
        name: Option<Box<str>>,
        shared: Arc<Shared>,
        entity: Entity,
        affinity: WorkerMask,
        cpu: usize,
    ) -> Self {
        let nice = entity.nice() as i8;
        let slice = if entity.has_custom_slice() {
            entity.slice()
        } else {
            0
        };
        Tcb {
            id,
            name,
            shared,
            st: TaskState::new(),
            cpu: AtomicU32::new(cpu as u32),
            recent_cpu: AtomicU32::new(cpu as u32),
            activation: AtomicU8::new(activation::NEW),
            link: AtomicPtr::new(std::ptr::null_mut()),
            slot: AtomicU32::new(NO_SLOT),
            entity: EntitySlot(UnsafeCell::new(Some(entity))),
            affinity,
            polling: AtomicU32::new(0),
            nice: AtomicI8::new(nice),
            slice_ns: AtomicU64::new(slice),
            context: ContextCell(UnsafeCell::new(None)),
            stack_canary: AtomicUsize::new(0),
            suspend: SuspendSlot::new(),
            timer_seq: AtomicU64::new(0),
            unpark_token: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
            unwinding: AtomicBool::new(false),
            handed_off: AtomicU32::new(0),
            reg_key: AtomicU64::new(u64::MAX),
            acct: Acct::default(),
            trace: Default::default(),
            join: Packet::new(),
        }
    }

    /// The task's name, if it was given one.
    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The worker index the task belongs to.
    #[inline]
    pub(crate) fn cpu(&self) -> usize {
        self.cpu.load(Ordering::Relaxed) as usize
    }

    /// The run-queue slot. Only meaningful under the owning worker's
    /// run-queue lock while the task is queued there.
    #[inline]
    pub(crate) fn slot(&self) -> Slot {
        let s = self.slot.load(Ordering::Relaxed);
        debug_assert_ne!(s, NO_SLOT, "task {} has no slot", self.id);
        Slot(s)
    }

    /// Records the run-queue slot (under the owning run-queue lock).
    #[inline]
    pub(crate) fn set_slot(&self, slot: Slot) {
        self.slot.store(slot.0, Ordering::Relaxed);
    }

    /// Nice level (a mirror of the entity's, for lock-free reads).
    pub(crate) fn nice(&self) -> i32 {
        self.nice.load(Ordering::Relaxed) as i32
    }

    /// Custom slice in ns, or 0 for the base slice (a mirror, for reads).
    pub(crate) fn custom_slice(&self) -> u64 {
        self.slice_ns.load(Ordering::Relaxed)
    }

    /// Updates the mirrors after a nice/slice change.
    pub(crate) fn set_mirrors(&self, nice: i32, custom_slice: Option<u64>) {
        self.nice.store(nice as i8, Ordering::Relaxed);
        self.slice_ns
            .store(custom_slice.unwrap_or(0), Ordering::Relaxed);
    }

    /// The current timer sequence (an armed timer with another sequence is stale).
    #[inline]
    pub(crate) fn timer_seq(&self) -> u64 {
        self.timer_seq.load(Ordering::Relaxed)
    }

    /// Invalidates armed timers (the task stopped waiting for them).
    #[inline]
    pub(crate) fn bump_timer_seq(&self) {
        self.timer_seq.fetch_add(1, Ordering::Relaxed);
    }

    /// Saves the entity of a task that has just been removed from its run
    /// queue and publishes `on_rq = NOT_QUEUED` (`Release`: the saved
    /// entity happens-before a waker's `Acquire` read of `NOT_QUEUED`).
    /// Called by the worker that dequeued it, under that queue's lock.
    #[inline]
    pub(crate) fn save_entity(&self, entity: Entity) {
        // SAFETY: the task was queued until the caller removed it under its
        // run-queue lock, and `on_rq` still says QUEUED, so no one may take
        // the entity yet (take_entity's contract requires NOT_QUEUED to have
        // been observed, or a hand-over that follows such an observation).
        unsafe { *self.entity.0.get() = Some(entity) };
        self.st.set_on_rq(crate::task::state::NOT_QUEUED);
    }

    /// Takes the saved entity to enqueue the task.
    ///
    /// # Safety
    /// The caller must own the task's next enqueue: the spawner before the
    /// task is published; a waker that observed `on_rq == NOT_QUEUED`
    /// (`Acquire`) and then claimed the wake (`WAKING`, under the wake
    /// lock); or the worker that received the task from such a waker
    /// through its wakelist (the push's `Release` / the drain's
    /// `Acquire`). Exactly one of them exists between a dequeue and the next
    /// enqueue (task::state rules 2–3).
    #[inline]
    pub(crate) unsafe fn take_entity(&self) -> Entity {
        // SAFETY: exclusive by the caller's contract; the saving worker's
        // write happens-before through the chain of Release/Acquire pairs
        // it names.
        unsafe { (*self.entity.0.get()).take() }
            .expect("a task off every run queue keeps its entity")
    }

    /// Keeps the entity of a task that has just exited, for
    /// [`Task::stats`](crate::Task::stats) (under the run-queue lock of the
    /// worker it exited on, before `DEAD` is published).
    #[inline]
    pub(crate) fn keep_final_entity(&self, entity: Entity) {
        // SAFETY: the task was current until now and `on_rq` still says
        // QUEUED: no taker may touch the slot (take_entity's contract), and
        // readers of a dead task's entity (`final_entity`) wait for DEAD.
        unsafe { *self.entity.0.get() = Some(entity) };
    }

    /// The entity a finished task kept at its exit.
    ///
    /// # Safety
    /// The caller has observed `state == DEAD` (`Acquire`), which is
    /// published after `keep_final_entity`; nothing writes the slot after.
    #[inline]
    pub(crate) unsafe fn final_entity(&self) -> Option<&Entity> {
        // SAFETY: by the caller's contract the slot is frozen.
        unsafe { (*self.entity.0.get()).as_ref() }
    }

    /// The saved entity of a task that is not queued, to read or change
    /// in place (`Task::stats`, `Task::set_nice`); `None` while a waker
    /// has taken it and not yet enqueued the task.
    ///
    /// # Safety
    /// The caller holds the task's wake lock and the run-queue lock of the
    /// worker `cpu` names, and has observed `on_rq == NOT_QUEUED` under it,
    /// and does not keep the reference past either lock. Every saver holds
    /// that run-queue lock; every taker holds the wake lock (a waker's
    /// inline enqueue) or that run-queue lock (the wakelist drain, whose
    /// worker is `cpu`); the spawner takes it before the task is visible.
    #[inline]
    #[allow(clippy::mut_from_ref)] // exclusivity is the caller's contract
    pub(crate) unsafe fn saved_entity(&self) -> Option<&mut Entity> {
        // SAFETY: exclusive by the caller's contract (see above).
        unsafe { (*self.entity.0.get()).as_mut() }
    }

    /// Installs the green context before the task is published to any
    /// worker (spawn). Panics if one is already installed.
    pub(crate) fn install_context(&self, ctx: GreenContext) {
        // SAFETY: called once, by the spawner, before the task is reachable
        // from any run queue or wakelist, so nobody else can access it.
        let cell = unsafe { &mut *self.context.0.get() };
        assert!(cell.is_none(), "context installed twice");
        // Relaxed: published to the green thread with the task itself.
        self.stack_canary.store(ctx.canary_at(), Ordering::Relaxed);
        *cell = Some(ctx);
    }

    /// Checks the running green thread's stack canary (it calls this on
    /// its own stack): aborts with the overflow message if it was
    /// overwritten. Nothing to do for a stack with a guard page.
    ///
    /// # Safety
    /// `self` must be the green thread running this code (its stack is
    /// then alive: it runs on it).
    #[inline]
    pub(crate) unsafe fn check_own_stack(&self) {
        // SAFETY: the address was copied from this task's context, whose
        // stack the caller runs on (the caller's contract).
        unsafe {
            crate::context::coroutine::check_canary(self.stack_canary.load(Ordering::Relaxed))
        }
    }

    /// The green context, for the worker that runs the task.
    ///
    /// # Safety
    /// The caller must be the worker on which this task is current (it made
    /// it current under its run-queue lock and has not switched it out), or
    /// hold the task exclusively (shutdown after all workers stopped).
    #[inline]
    #[allow(clippy::mut_from_ref)] // interior mutability; exclusivity is the caller's contract
    pub(crate) unsafe fn context_mut(&self) -> &mut Option<GreenContext> {
        // SAFETY: exclusivity is the caller's contract (see above).
        unsafe { &mut *self.context.0.get() }
    }
}

/// The saved EEVDF entity of a task that is off every run queue.
struct EntitySlot(UnsafeCell<Option<Entity>>);

// SAFETY: accessed only through `Tcb::save_entity` and `Tcb::take_entity`,
// whose callers are serialised by the wake protocol (see their docs);
// `Entity` is plain data.
unsafe impl Sync for EntitySlot {}

/// A task's green context, accessed only by the worker currently running
/// the task (or, at shutdown, by the thread unwinding it after every worker
/// has stopped).
struct ContextCell(UnsafeCell<Option<GreenContext>>);

// SAFETY: access is exclusive by the run-queue protocol (a task is current
// on at most one worker, and `on_cpu` keeps other workers from resuming it
// until its context is saved); `GreenContext` is `Send`.
unsafe impl Sync for ContextCell {}

impl std::fmt::Debug for Tcb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tcb")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("cpu", &self.cpu())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::Tcb;
    use std::mem::offset_of;

    /// The entity never shares a cache line with the words a remote waker
    /// writes (reference count, state, activation, the wakelist link),
    /// whatever the allocator's 16-byte-aligned placement of the block:
    /// the worker that takes the entity when it drains the wakeup would
    /// otherwise fetch that line back from the waker's CPU.
    #[test]
    fn entity_is_off_the_wakers_lines() {
        // The `TaskRef` block: the count, then the `Tcb`.
        const HEADER: usize = crate::task::taskref::HEADER;
        let written_end = HEADER + offset_of!(Tcb, link) + std::mem::size_of::<usize>();
        let entity = HEADER + offset_of!(Tcb, entity);
        for start in (0..64).step_by(16) {
            let last_written_line = (start + written_end - 1) / 64;
            let entity_line = (start + entity) / 64;
            assert!(
                entity_line > last_written_line,
                "allocation at {start} mod 64: entity on line {entity_line}, \
                 waker writes up to line {last_written_line}"
            );
        }
    }
}
