//! The per-worker EEVDF run queue.
//!
//! Owns: the queue's accounting (`sum_wk`, `sum_w`, `load`, `nr_queued`,
//! `nr_runnable`), the current entity (kept out of the tree), the buddy, the
//! augmented deadline-ordered tree, and every policy decision of EEVDF.md
//! §4–§10 and §13's `can_migrate`: V, lag, eligibility, charging, deadline
//! renewal, pick, slice protection, placement, reweight, enqueue/dequeue with
//! delayed dequeue and DELAY_ZERO, wakeup preemption, yield and the tick.
//! Must not: read a clock (time is passed in as `now`), use atomics, threads
//! or `unsafe`.

use super::entity::{Entity, NORMALIZED_BASE_SLICE};
use super::features::Features;
use super::flags::{DequeueFlags, EnqueueFlags, WakeFlags};
use super::vtime::Nanos;
use crate::error::Error;

/// Handle of an entity queued in a [`RunQueue`]. Valid from the enqueue that
/// returned it until the dequeue that removes the entity (a delayed entity
/// keeps its slot).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot(pub(crate) u32);

impl Slot {
    /// The slot's index in the queue's arena (stable while queued).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Tunables of a run queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Slice of entities without a custom slice (ns); see [`base_slice_for`](super::base_slice_for).
    pub base_slice: Nanos,
    /// Tick period (ns): the floor of the lag clamp (EEVDF.md §7.1).
    pub tick: Nanos,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            base_slice: NORMALIZED_BASE_SLICE,
            tick: 1_000_000,
        }
    }
}

/// Result of [`RunQueue::dequeue`].
#[derive(Debug)]
pub enum Dequeue<T> {
    /// The entity blocked while ineligible and stays queued as *delayed*
    /// (DELAY_DEQUEUE): its slot stays valid; it is dequeued for real when
    /// it is picked ([`Pick::FinishedDelayed`]) or un-delayed by
    /// [`RunQueue::requeue_delayed`].
    Delayed,
    /// The entity left the queue; its state (lag, relative deadline for
    /// non-sleep dequeues) and payload are handed back.
    Removed(Entity, T),
}

/// Result of [`RunQueue::pick_next`].
#[derive(Debug)]
pub enum Pick<T> {
    /// Run this entity: call [`RunQueue::set_curr`] with it.
    Run(Slot),
    /// The pick chose a delayed entity, so its dequeue was completed instead
    /// (EEVDF.md §8.3 step 3). The caller publishes that the task is off the
    /// queue, then picks again.
    FinishedDelayed(Entity, T),
    /// Nothing is queued.
    Empty,
}

/// A pending reschedule request (the kernel's need-resched flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Resched {
    /// None pending.
    #[default]
    None,
    /// Reschedule at the next preemption point (fair-class requests).
    Lazy,
    /// Reschedule as soon as possible (promoted at the tick).
    Now,
}

/// Why a reschedule was requested; counted in [`Counters`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReschedReason {
    /// The current entity reached its deadline (a new request started).
    SliceExpired,
    /// The current entity ran past its protection horizon (`vprot`).
    ProtectionEnded,
    /// TICK_ELIGIBLE: the current entity is no longer eligible.
    Ineligible,
    /// A waking entity won the wakeup-preemption decision.
    WakeupPreempt,
}

/// Decision counters of one run queue (plain integers: the owner copies
/// them into its statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Successful picks (`Pick::Run`).
    pub picks: u64,
    /// Blocks that stayed queued as delayed.
    pub delayed_dequeues: u64,
    /// Delayed entities whose dequeue was completed at pick.
    pub delayed_finished_at_pick: u64,
    /// Delayed entities un-delayed by a wakeup (`requeue_delayed`).
    pub delayed_requeues: u64,
    /// Reschedules requested because a slice expired.
    pub resched_slice: u64,
    /// Reschedules requested because protection ended.
    pub resched_protection: u64,
    /// Reschedules requested by TICK_ELIGIBLE.
    pub resched_ineligible: u64,
    /// Wakeups that preempted the current entity.
    pub wakeup_preemptions: u64,
    /// Wakeups with PREEMPT_SHORT that only shortened the current entity's protection.
    pub protection_shortened: u64,
    /// Picks that took the next-buddy.
    pub buddy_picks: u64,
}

/// A per-worker EEVDF run queue holding entities with a payload `T` each
/// (the runtime stores its task handle there).
///
/// All methods are deterministic functions of their inputs and `now`.
pub struct RunQueue<T> {
    params: Params,
    features: Features,
    _payload: std::marker::PhantomData<T>,
}

impl<T> RunQueue<T> {
    /// An empty queue. The base (min_vruntime) starts at 2^64 − 2^20 like the
    /// kernel's, so wrap-around bugs show up early.
    pub fn new(params: Params, features: Features) -> Self {
        Self::with_base(params, features, 0u64.wrapping_sub(1 << 20))
    }

    /// An empty queue whose virtual-time base starts at `base`.
    pub fn with_base(params: Params, features: Features, base: u64) -> Self {
        let _ = base;
        todo!()
    }

    /// The tunables.
    pub fn params(&self) -> Params {
        self.params
    }
    /// Changes the tunables (base slice after a worker-count change, tick).
    pub fn set_params(&mut self, params: Params) {
        self.params = params;
    }
    /// The feature switches in force.
    pub fn features(&self) -> Features {
        self.features
    }
    /// Switches features. Entities already delayed stay delayed and are
    /// finished normally even if DELAY_DEQUEUE is now off.
    pub fn set_features(&mut self, features: Features) {
        self.features = features;
    }

    /// Queued entities, including the current one and delayed ones.
    pub fn nr_queued(&self) -> u32 {
        todo!()
    }
    /// Queued entities that are not delayed.
    pub fn nr_runnable(&self) -> u32 {
        todo!()
    }
    /// Queued entities that are delayed (`nr_queued − nr_runnable`).
    pub fn nr_delayed(&self) -> u32 {
        self.nr_queued() - self.nr_runnable()
    }
    /// Total weight of queued entities, including the current one.
    pub fn load(&self) -> u64 {
        todo!()
    }
    /// The current entity (the one the worker runs), if any.
    pub fn curr(&self) -> Option<Slot> {
        todo!()
    }
    /// The next-buddy hint, if any.
    pub fn next_buddy(&self) -> Option<Slot> {
        todo!()
    }
    /// The entity in `slot`. Panics if the slot is not queued.
    pub fn entity(&self, slot: Slot) -> &Entity {
        let _ = slot;
        todo!()
    }
    /// The payload in `slot`. Panics if the slot is not queued.
    pub fn payload(&self, slot: Slot) -> &T {
        let _ = slot;
        todo!()
    }
    /// The payload in `slot`, mutably. Panics if the slot is not queued.
    pub fn payload_mut(&mut self, slot: Slot) -> &mut T {
        let _ = slot;
        todo!()
    }
    /// The virtual-time base (min_vruntime).
    pub fn base(&self) -> u64 {
        todo!()
    }
    /// V, the weight-averaged vruntime of the queued entities, floored (§4.2).
    pub fn avg_vruntime(&self) -> u64 {
        todo!()
    }
    /// Whether the entity in `slot` is eligible (`vrt ≤ V`, §4.3).
    pub fn is_eligible(&self, slot: Slot) -> bool {
        let _ = slot;
        todo!()
    }
    /// The pending reschedule request.
    pub fn resched(&self) -> Resched {
        todo!()
    }
    /// Clears the pending reschedule request (the owner does this when it switches).
    pub fn clear_resched(&mut self) {
        todo!()
    }
    /// Decision counters since creation.
    pub fn counters(&self) -> Counters {
        todo!()
    }
    /// Every queued entity with its slot and payload, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (Slot, &Entity, &T)> + '_ {
        std::iter::empty()
    }

    /// Adds `entity` with `payload` (EEVDF.md §8.1): places it (lag, deadline),
    /// accounts it and inserts it in the tree. Returns its slot.
    pub fn enqueue(&mut self, entity: Entity, payload: T, flags: EnqueueFlags, now: Nanos) -> Slot {
        let _ = (entity, payload, flags, now);
        todo!()
    }

    /// Wakeup of a delayed entity where it sleeps (`enqueue(DELAYED)`, §8.3
    /// step 4): un-delays it, restarting it at lag 0 if DELAY_ZERO and it
    /// became eligible. The caller then runs [`RunQueue::wakeup_preempt`]
    /// unless the entity is the current one.
    pub fn requeue_delayed(&mut self, slot: Slot, now: Nanos) {
        let _ = (slot, now);
        todo!()
    }

    /// Removes the entity in `slot` (§8.2). With `SLEEP` (and not `SPECIAL`),
    /// DELAY_DEQUEUE on and the entity ineligible, it stays queued as delayed
    /// instead. Without `SLEEP` (migration, attribute change) the remaining
    /// request is kept as a relative deadline (PLACE_REL_DEADLINE). If the
    /// entity is the current one, the queue has no current entity afterwards
    /// (unless it was delayed).
    pub fn dequeue(&mut self, slot: Slot, flags: DequeueFlags, now: Nanos) -> Dequeue<T> {
        let _ = (slot, flags, now);
        todo!()
    }

    /// Picks the entity to run next (§6.2, §8.4): charges the current entity
    /// if it is queued, honours an eligible buddy (PICK_BUDDY), runs the
    /// EEVDF pick with slice protection, and completes the dequeue of a
    /// delayed pick instead of returning it.
    pub fn pick_next(&mut self, now: Nanos) -> Pick<T> {
        let _ = now;
        todo!()
    }

    /// Makes `slot` the current entity (§8.4 `switch_to`): the previous
    /// current entity, if still queued, is charged and re-inserted in the
    /// tree; `slot` leaves the tree, gets its protection horizon, and starts
    /// its execution clock at `now`. If `slot` is already current, nothing
    /// changes (its protection is kept).
    pub fn set_curr(&mut self, slot: Slot, now: Nanos) {
        let _ = (slot, now);
        todo!()
    }

    /// The current entity stops running and nothing replaces it (the worker
    /// goes idle or runs something outside this queue): charge it and, if it
    /// is still queued, put it back in the tree.
    pub fn put_prev(&mut self, now: Nanos) {
        let _ = now;
        todo!()
    }

    /// Charges the current entity for the time since it last started or was
    /// charged (§5.1), renews its deadline if due and advances the base.
    /// Returns whether a reschedule was requested.
    pub fn charge_current(&mut self, now: Nanos) -> bool {
        let _ = now;
        todo!()
    }

    /// The periodic tick (§5.3): promotes a lazy request, charges the current
    /// entity (deadline / protection checks) and, with TICK_ELIGIBLE,
    /// reschedules an ineligible current entity. Returns whether a reschedule
    /// is pending.
    pub fn tick(&mut self, now: Nanos) -> bool {
        let _ = now;
        todo!()
    }

    /// The wakeup-preemption decision (§9.1) for the entity in `slot`, just
    /// enqueued or un-delayed. Returns whether the current entity should be
    /// rescheduled (the request is also recorded in [`RunQueue::resched`]).
    pub fn wakeup_preempt(&mut self, slot: Slot, flags: WakeFlags, now: Nanos) -> bool {
        let _ = (slot, flags, now);
        todo!()
    }

    /// The current entity yields (§10): its deadline moves back by one request.
    pub fn yield_current(&mut self, now: Nanos) {
        let _ = now;
        todo!()
    }

    /// Changes the nice level of a queued entity (§7.3), conserving its lag
    /// and remaining request. Out-of-range nice is an error and changes nothing.
    pub fn reweight(&mut self, slot: Slot, nice: i32, now: Nanos) -> Result<(), Error> {
        let _ = (slot, nice, now);
        todo!()
    }

    /// Changes the slice of a queued entity (`Some`: custom, `None`: back to
    /// the base slice), like an attribute change: dequeue without SLEEP,
    /// change, enqueue. Out of range is an error and changes nothing.
    pub fn set_slice(&mut self, slot: Slot, slice: Option<Nanos>, now: Nanos) -> Result<(), Error> {
        let _ = (slot, slice, now);
        todo!()
    }

    /// The EEVDF choice (§6.1) without side effects: the eligible entity with
    /// the earliest deadline among the tree and the queued current entity,
    /// honouring the current entity's protection if asked. O(log n).
    pub fn pick_eevdf(&self, honor_protection: bool) -> Option<Slot> {
        let _ = honor_protection;
        todo!()
    }

    /// A task that newidle balancing may move to another worker (§13
    /// `can_migrate`): walks the queue from the least recently run entity,
    /// at most 32 candidates, skipping the current entity, delayed entities,
    /// ineligible ones (unless `balance_failed`), cache-hot ones (ran within
    /// 500 µs of `now`, or the buddy while `dst_busy` with CACHE_HOT_BUDDY;
    /// unless `balance_failed`), and those for which `allowed` is false.
    pub fn steal_candidate(
        &self,
        now: Nanos,
        dst_busy: bool,
        balance_failed: bool,
        allowed: impl FnMut(&T) -> bool,
    ) -> Option<Slot> {
        let _ = (now, dst_busy, balance_failed, allowed);
        todo!()
    }

    /// Checks every invariant of EEVDF.md §16 by O(n) recomputation.
    /// Returns a description of the first violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        todo!()
    }
}
