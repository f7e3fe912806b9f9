//! The per-worker EEVDF run queue.
//!
//! Owns: the queue's accounting (`sum_wk`, `sum_w`, `load`, `nr_queued`,
//! `nr_runnable`), the current entity (kept out of the tree), the buddy, the
//! augmented deadline-ordered tree, and every policy decision of docs/eevdf.md
//! §4–§10 and §13's `can_migrate`: V, lag, eligibility, charging, deadline
//! renewal, pick, slice protection, placement, reweight, enqueue/dequeue with
//! delayed dequeue and DELAY_ZERO, wakeup preemption, yield and the tick.
//! Must not: read a clock (time is passed in as `now`), use atomics, threads
//! or `unsafe`.
//!
//! This file holds the accounting, enqueue/dequeue, the switch path,
//! charging and the tick; the private submodules hold the selection
//! (`pick`: pick, wakeup preemption, yield, steal), attribute changes
//! (`attr`: reweight, set_slice) and the O(n) self-check (`invariants`).
//!
//! # Caller bugs
//!
//! Every method taking a [`Slot`] panics if the slot is not queued on this
//! queue (it was never returned by [`RunQueue::enqueue`], or its entity has
//! been dequeued since). A slot stays valid while its entity is delayed and
//! while it is current. Bad *values* (nice, slice) are reported as
//! [`Error`]s and change nothing.

mod attr;
mod invariants;
mod pick;
#[cfg(test)]
mod tests;

pub use pick::{MIGRATION_COST, NR_MIGRATE_BREAK};

use super::arena::Arena;
use super::entity::{Entity, Policy, MAX_SLICE, MIN_SLICE, NORMALIZED_BASE_SLICE};
use super::features::{Feature, Features};
use super::flags::{DequeueFlags, EnqueueFlags};
use super::lru::Lru;
use super::place::{
    capture_lag, make_deadline_relative, place, protection_horizon, renew_deadline_if_due, PlaceCtx,
};
use super::tree::AugTree;
use super::vtime::{floor_div, vdiff, vmin, Nanos};
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
    /// Tick period (ns): the floor of the lag clamp (docs/eevdf.md §7.1).
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

impl Params {
    /// Checked constructor: the base slice must lie in 100 µs ..= 100 ms
    /// (like a custom slice) and the tick in 10 µs ..= 1 s. (A runtime's
    /// tick is narrower, 100 µs ..= 1 s, see `Builder::tick`: a busy worker
    /// serves its own tick at its preemption points, and a shorter period
    /// would mostly cost slow-path checks. A simulation may use any tick in
    /// this range.)
    ///
    /// ```
    /// use eevdf_rt::sched::Params;
    /// let p = Params::new(1_400_000, 1_000_000).unwrap();
    /// assert_eq!(p.base_slice, 1_400_000);
    /// assert!(Params::new(0, 1_000_000).is_err());
    /// assert!(Params::new(700_000, 0).is_err());
    /// ```
    pub fn new(base_slice: Nanos, tick: Nanos) -> Result<Params, Error> {
        if !(MIN_SLICE..=MAX_SLICE).contains(&base_slice) {
            return Err(Error::invalid(
                "base_slice",
                format!("{base_slice} ns"),
                "100 µs ..= 100 ms",
            ));
        }
        if !(10_000..=1_000_000_000).contains(&tick) {
            return Err(Error::invalid(
                "tick",
                format!("{tick} ns"),
                "10 µs ..= 1 s",
            ));
        }
        Ok(Params { base_slice, tick })
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
    /// (docs/eevdf.md §8.3 step 3). The caller publishes that the task is off the
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
///
/// The `resched_*` counters count requests that *raised* the pending
/// request (a charge that finds the same request already pending is not
/// counted again); `wakeup_preemptions` counts decisions that returned true.
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

/// An entity and its payload, stored in the arena while queued.
#[derive(Debug)]
struct Queued<T> {
    entity: Entity,
    payload: T,
}

/// A per-worker EEVDF run queue holding entities with a payload `T` each
/// (the runtime stores its task handle there).
///
/// All methods are deterministic functions of their inputs and `now`.
/// See the [module documentation](super) for the policy and an example.
pub struct RunQueue<T> {
    params: Params,
    features: Features,
    /// Queued entities (tree members, the current one, delayed ones).
    arena: Arena<Queued<T>>,
    /// Queued entities except `curr`, ordered by deadline.
    tree: AugTree,
    /// Queued entities, most recently started first.
    lru: Lru,
    /// The entity the worker runs. Always queued (possibly delayed): a
    /// dequeue of the current entity that really removes it clears `curr`.
    curr: Option<u32>,
    /// The current entity is inside its own attribute-change bracket
    /// ([`RunQueue::detach`] … [`RunQueue::attach`]): not counted in V, so
    /// [`RunQueue::curr_queued`] answers `None`. Kept beside `curr` so that
    /// the many `curr_queued` calls of a switch need no arena lookup.
    curr_detached: bool,
    /// A copy of the current entity's `exec_start`, kept beside `curr` so
    /// that the repeated charges of one switch (yield, pick and set_curr
    /// all charge at the same `now`) return without touching the arena.
    /// Written wherever the current entity's `exec_start` is.
    curr_exec_start: Nanos,
    /// Next-buddy hint (§6.4): queued, never delayed.
    next: Option<u32>,
    /// Virtual-time base (min_vruntime, §4.4): monotonic, the reference of `sum_wk`.
    base: u64,
    /// Σ_{tree} w·(vrt − base).
    // [D] docs/eevdf.md §2.6: 128-bit sums (and 128-bit products in the
    // eligibility test) instead of the kernel's 64-bit ones, so no
    // overflow or saturation logic is needed.
    sum_wk: i128,
    /// Σ_{tree} w.
    sum_w: u64,
    /// Σ w of queued entities, the current one included.
    load: u64,
    /// Queued entities, including the current one and delayed ones.
    nr_queued: u32,
    /// Queued entities that are not delayed.
    nr_runnable: u32,
    /// Queued entities of the idle policy.
    nr_idle: u32,
    resched: Resched,
    counters: Counters,
}

impl<T> std::fmt::Debug for RunQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunQueue")
            .field("nr_queued", &self.nr_queued)
            .field("nr_runnable", &self.nr_runnable)
            .field("load", &self.load)
            .field("curr", &self.curr)
            .field("next", &self.next)
            .field("base", &self.base)
            .field("V", &self.mean_vrt())
            .field("resched", &self.resched)
            .field("features", &self.features)
            .finish_non_exhaustive()
    }
}

impl<T> RunQueue<T> {
    /// An empty queue. The base (min_vruntime) starts at 2^64 − 2^20 like the
    /// kernel's, so wrap-around bugs show up early.
    pub fn new(params: Params, features: Features) -> Self {
        Self::with_base(params, features, 0u64.wrapping_sub(1 << 20))
    }

    /// An empty queue whose virtual-time base starts at `base`.
    pub fn with_base(params: Params, features: Features, base: u64) -> Self {
        RunQueue {
            params,
            features,
            arena: Arena::new(),
            tree: AugTree::new(),
            lru: Lru::new(),
            curr: None,
            curr_detached: false,
            curr_exec_start: 0,
            next: None,
            base,
            sum_wk: 0,
            sum_w: 0,
            load: 0,
            nr_queued: 0,
            nr_runnable: 0,
            nr_idle: 0,
            resched: Resched::None,
            counters: Counters::default(),
        }
    }

    /// The tunables.
    pub fn params(&self) -> Params {
        self.params
    }
    /// Changes the tunables (base slice after a worker-count change, tick).
    /// Entities pick up a new base slice at their next placement or
    /// deadline renewal.
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

    #[inline]
    fn feat(&self, f: Feature) -> bool {
        self.features.is_enabled(f)
    }

    /// Makes room for `total` queued entities at once, so that enqueueing
    /// and dequeueing never allocate while at most `total` are queued.
    /// The queue's storage (the slots, the tree's nodes, the recency links)
    /// otherwise grows on demand at an enqueue, where an allocation failure
    /// can only abort; a caller that can still report an error (a spawn)
    /// reserves here first. Reserves exactly what is asked; an error leaves
    /// the queue unchanged and usable.
    pub fn try_reserve(&mut self, total: usize) -> Result<(), std::collections::TryReserveError> {
        self.arena.try_reserve(total)?;
        self.tree.try_reserve(total)?;
        self.lru.try_reserve(total)
    }

    /// The number of queued entities that fit without allocating (see
    /// [`RunQueue::try_reserve`]).
    pub fn capacity(&self) -> usize {
        self.arena
            .capacity()
            .min(self.tree.capacity())
            .min(self.lru.capacity())
    }

    /// Queued entities, including the current one and delayed ones.
    pub fn nr_queued(&self) -> u32 {
        self.nr_queued
    }
    /// Queued entities that are not delayed.
    pub fn nr_runnable(&self) -> u32 {
        self.nr_runnable
    }
    /// Queued entities that are delayed (`nr_queued − nr_runnable`).
    pub fn nr_delayed(&self) -> u32 {
        self.nr_queued() - self.nr_runnable()
    }
    /// Queued entities of the idle policy ([`Policy::Idle`]).
    pub fn nr_idle(&self) -> u32 {
        self.nr_idle
    }
    /// Total weight of queued entities, including the current one.
    pub fn load(&self) -> u64 {
        self.load
    }
    /// The current entity (the one the worker runs), if any.
    pub fn curr(&self) -> Option<Slot> {
        self.curr.map(Slot)
    }
    /// The next-buddy hint, if any.
    pub fn next_buddy(&self) -> Option<Slot> {
        self.next.map(Slot)
    }
    /// The entity in `slot`. Panics if the slot is not queued.
    pub fn entity(&self, slot: Slot) -> &Entity {
        self.ent(slot.0)
    }
    /// The payload in `slot`. Panics if the slot is not queued.
    pub fn payload(&self, slot: Slot) -> &T {
        &self.arena.get(slot.0).payload
    }
    /// Whether `slot` is queued and its payload satisfies `is` (a check for
    /// callers that learned the slot from elsewhere). Never panics.
    pub fn holds(&self, slot: Slot, is: impl FnOnce(&T) -> bool) -> bool {
        self.arena.try_get(slot.0).is_some_and(|n| is(&n.payload))
    }

    /// The payload in `slot`, mutably. Panics if the slot is not queued.
    pub fn payload_mut(&mut self, slot: Slot) -> &mut T {
        &mut self.arena.get_mut(slot.0).payload
    }
    /// The virtual-time base (min_vruntime).
    pub fn base(&self) -> u64 {
        self.base
    }
    /// V, the weight-averaged vruntime of the queued entities, floored (§4.2).
    pub fn avg_vruntime(&self) -> u64 {
        self.mean_vrt()
    }
    /// Whether the entity in `slot` is eligible (`vrt ≤ V`, §4.3).
    pub fn is_eligible(&self, slot: Slot) -> bool {
        self.eligible(slot.0)
    }
    /// The virtual lag `V − vrt` of the queued entity in `slot` right now
    /// (positive: it is owed service). Panics if the slot is not queued.
    pub fn lag(&self, slot: Slot) -> i64 {
        vdiff(self.mean_vrt(), self.ent(slot.0).vrt)
    }
    /// The shortest slice among the queued entities (§4.5), if any is queued.
    pub fn min_slice(&self) -> Option<Nanos> {
        let m = self.min_slice_raw();
        (m != u64::MAX).then_some(m)
    }
    /// The pending reschedule request.
    pub fn resched(&self) -> Resched {
        self.resched
    }
    /// Clears the pending reschedule request (the owner does this when it switches).
    pub fn clear_resched(&mut self) {
        self.resched = Resched::None;
    }
    /// Decision counters since creation.
    pub fn counters(&self) -> Counters {
        self.counters
    }
    /// Continues the counts of `c` (a queue this one replaces, so that the
    /// counters never go back).
    pub fn continue_counters(&mut self, c: Counters) {
        self.counters = c;
    }
    /// Every queued entity with its slot and payload, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (Slot, &Entity, &T)> + '_ {
        self.arena
            .iter()
            .map(|(i, q)| (Slot(i), &q.entity, &q.payload))
    }

    // ----------------------------------------------------------------
    // Accounting primitives (§3.4, §4)
    // ----------------------------------------------------------------

    #[inline]
    fn ent(&self, i: u32) -> &Entity {
        &self.arena.get(i).entity
    }

    #[inline]
    fn ent_mut(&mut self, i: u32) -> &mut Entity {
        &mut self.arena.get_mut(i).entity
    }

    /// The current entity if it is counted in V (always, except inside an
    /// attribute-change bracket of the current entity itself).
    #[inline]
    fn curr_queued(&self) -> Option<u32> {
        debug_assert_eq!(
            self.curr_detached,
            self.curr.is_some_and(|c| !self.ent(c).queued)
        );
        if self.curr_detached {
            None
        } else {
            self.curr
        }
    }

    /// `(S, W)`: the tree's sums plus the queued current entity (§4.2):
    ///
    /// ```text
    /// S = Σ w_i·(v_i − base),   W = Σ w_i      over the tree and a queued curr
    /// ```
    #[inline]
    fn totals(&self) -> (i128, u64) {
        let (mut s, mut w) = (self.sum_wk, self.sum_w);
        if let Some(c) = self.curr_queued() {
            let e = self.ent(c);
            s += e.weight as i128 * vdiff(e.vrt, self.base) as i128;
            w += e.weight as u64;
        }
        (s, w)
    }

    /// Eligibility of a vruntime without division (§4.3, `vruntime_eligible`):
    ///
    /// ```text
    /// v ≤ V = base + S/W   ⇔   (v − base)·W ≤ S
    /// ```
    ///
    /// On an empty queue (`W = 0`, `S = 0`) everything is eligible.
    #[inline]
    fn vrt_eligible(v: u64, base: u64, s: i128, w: u64) -> bool {
        s >= vdiff(v, base) as i128 * w as i128
    }

    /// Whether entity `i` is eligible: lag = w·(V − vrt) ≥ 0.
    #[inline]
    fn eligible(&self, i: u32) -> bool {
        let (s, w) = self.totals();
        Self::vrt_eligible(self.ent(i).vrt, self.base, s, w)
    }

    /// V = base + ⌊S/W⌋ (§4.2), rounded toward −∞ so that an entity placed
    /// exactly at V passes the exact eligibility test (`⌊S/W⌋·W ≤ S`).
    /// An empty queue has V = base.
    #[inline]
    fn mean_vrt(&self) -> u64 {
        let (s, w) = self.totals();
        Self::mean_of(self.base, s, w)
    }

    /// `base + ⌊S/W⌋` (`base` if `W = 0`). The sums are relative to the
    /// base, so `S` nearly always fits 64 bits: divide in 64 bits then (a
    /// 128-bit division is a slow library call), in 128 otherwise.
    #[inline]
    fn mean_of(base: u64, s: i128, w: u64) -> u64 {
        if w == 0 {
            return base;
        }
        let q = match (i64::try_from(s), i64::try_from(w)) {
            (Ok(s), Ok(w)) => s.div_euclid(w) as i128, // w > 0: Euclidean = floor
            _ => floor_div(s, w as i128),
        };
        base.wrapping_add(q as i64 as u64)
    }

    /// The shortest slice among queued entities (§4.5), `u64::MAX` if none:
    /// the queued current entity's and the tree's.
    fn min_slice_raw(&self) -> Nanos {
        let mut m = u64::MAX;
        if let Some(c) = self.curr_queued() {
            m = self.ent(c).slice;
        }
        if let Some(t) = self.tree.min_slice() {
            m = m.min(t);
        }
        m
    }

    /// Advances the monotonic base to the smallest queued vruntime (§4.4,
    /// 6.17 `update_min_vruntime`). The tree is deadline ordered, so the
    /// smallest vruntime is the tree's `min_vrt` (the root's `sub_min_vrt`
    /// in tree mode), not the leftmost member's. Moving the base by `d > 0`
    /// changes nothing real:
    ///
    /// ```text
    /// sum_wk -= sum_w · d
    /// ```
    fn advance_base(&mut self) {
        let curr = self.curr_queued();
        let mut cand = self.base;
        if let Some(c) = curr {
            cand = self.ent(c).vrt;
        }
        if let Some(m) = self.tree.min_vrt() {
            cand = if curr.is_some() { vmin(cand, m) } else { m };
        }
        let d = vdiff(cand, self.base);
        if d > 0 {
            self.sum_wk -= self.sum_w as i128 * d as i128;
            self.base = cand;
        }
    }

    /// Inserts entity `i` in the tree and its sums:
    /// `sum_wk += w·(vrt − base)`, `sum_w += w`.
    fn tree_insert(&mut self, i: u32) {
        let e = self.ent(i);
        debug_assert!(!e.dl_is_relative, "a relative deadline in the tree");
        let (w, vrt, vdl, slice) = (e.weight, e.vrt, e.vdl, e.slice);
        self.sum_wk += w as i128 * vdiff(vrt, self.base) as i128;
        self.sum_w += w as u64;
        self.tree.insert(i, vdl, vrt, slice);
    }

    /// Removes entity `i` from the tree and its sums (using the keys the
    /// tree recorded at insertion).
    fn tree_remove(&mut self, i: u32) {
        let vrt = self.tree.node(i).vrt;
        let w = self.ent(i).weight;
        self.tree.remove(i);
        self.sum_wk -= w as i128 * vdiff(vrt, self.base) as i128;
        self.sum_w -= w as u64;
    }

    /// What placement needs to know about the queue (the entity being
    /// placed is not counted in it).
    fn place_ctx(&self) -> PlaceCtx {
        let (s, w) = self.totals();
        PlaceCtx {
            v: Self::mean_of(self.base, s, w),
            w_others: w,
            nr_others: self.nr_queued,
            base_slice: self.params.base_slice,
            place_lag: self.feat(Feature::PlaceLag),
            deadline_initial: self.feat(Feature::PlaceDeadlineInitial),
        }
    }

    /// Takes queued entity `i` out of V, W, `load` and `nr_queued` while
    /// keeping its slot, its place in the recency list and the runnable /
    /// delayed bookkeeping: the first half of an in-place attribute change
    /// (reweight, slice change, DELAY_ZERO restart). The current entity
    /// stays `curr` but stops being counted (`queued = false`), which also
    /// keeps it out of V during its own placement.
    fn detach(&mut self, i: u32) {
        if self.curr != Some(i) {
            self.tree_remove(i);
        }
        let e = self.ent_mut(i);
        e.queued = false;
        let w = e.weight as u64;
        self.load -= w;
        self.nr_queued -= 1;
        if self.curr == Some(i) {
            self.curr_detached = true;
        }
    }

    /// Second half of [`RunQueue::detach`]: counts entity `i` again.
    fn attach(&mut self, i: u32) {
        if self.curr == Some(i) {
            self.curr_detached = false;
        }
        let e = self.ent_mut(i);
        e.queued = true;
        let w = e.weight as u64;
        self.load += w;
        self.nr_queued += 1;
        if self.curr != Some(i) {
            self.tree_insert(i);
        }
    }

    /// Records a reschedule request of at least `level`; counts `reason` if
    /// the pending request was raised. Returns whether it was raised.
    fn request_resched(&mut self, level: Resched, reason: ReschedReason) -> bool {
        if self.resched >= level {
            return false;
        }
        self.resched = level;
        match reason {
            ReschedReason::SliceExpired => self.counters.resched_slice += 1,
            ReschedReason::ProtectionEnded => self.counters.resched_protection += 1,
            ReschedReason::Ineligible => self.counters.resched_ineligible += 1,
            ReschedReason::WakeupPreempt => {}
        }
        true
    }

    /// The protection quantum for the entity being made current (§6.3): the
    /// shortest slice of the *others* (the tree) with RUN_TO_PARITY, else
    /// the unscaled 700 µs base slice.
    fn protect_quantum(&self) -> Nanos {
        if self.feat(Feature::RunToParity) {
            self.tree.min_slice().unwrap_or(u64::MAX)
        } else {
            NORMALIZED_BASE_SLICE
        }
    }

    // ----------------------------------------------------------------
    // Enqueue / dequeue (§8)
    // ----------------------------------------------------------------

    /// Adds `entity` with `payload` (docs/eevdf.md §8.1): places it (lag, deadline),
    /// accounts it and inserts it in the tree. Returns its slot.
    ///
    /// `WAKEUP`: a wakeup (a sleeper gets a fresh request unless it carries
    /// a relative deadline); `INITIAL`: a new entity (half a slice with
    /// PLACE_DEADLINE_INITIAL); `MIGRATED`: it comes from another queue (its
    /// cache-hotness is forgotten: `exec_start = 0`).
    ///
    /// An entity that left another queue while still delayed (a migration)
    /// stays delayed here unless the enqueue is a `WAKEUP`.
    ///
    /// Panics if `entity` is marked queued (it belongs to a run queue).
    pub fn enqueue(
        &mut self,
        mut entity: Entity,
        payload: T,
        flags: EnqueueFlags,
        now: Nanos,
    ) -> Slot {
        assert!(
            !entity.queued,
            "enqueue: the entity is already queued on a run queue"
        );
        if flags.contains(EnqueueFlags::WAKEUP) && entity.delayed {
            // [D] The kernel never wakes a delayed task through enqueue (its
            // wakeup takes the requeue path on its own queue). Here an
            // entity moved away while delayed may be woken anywhere: the
            // wakeup ends the delay like a requeue would, without positive
            // credit (DELAY_ZERO).
            entity.delayed = false;
            if self.feat(Feature::DelayZero) && entity.vlag > 0 {
                entity.vlag = 0;
            }
        }
        // a still-delayed entity moved between queues stays non-runnable
        let counts_runnable = !entity.delayed;
        self.charge_current(now);
        let ctx = self.place_ctx();
        place(&mut entity, &ctx, flags.contains(EnqueueFlags::INITIAL));
        if flags.contains(EnqueueFlags::MIGRATED) {
            entity.exec_start = 0;
        }
        entity.queued = true;
        let w = entity.weight as u64;
        let idle = entity.policy == Policy::Idle;
        let i = self.arena.alloc(Queued { entity, payload });
        self.load += w;
        self.nr_queued += 1;
        self.lru.push_front(i);
        self.tree_insert(i);
        if counts_runnable {
            self.nr_runnable += 1;
        }
        if idle {
            self.nr_idle += 1;
        }
        Slot(i)
    }

    /// Wakeup of a delayed entity where it sleeps (`enqueue(DELAYED)`, §8.3
    /// step 4): un-delays it, restarting it at lag 0 if DELAY_ZERO and it
    /// became eligible. The caller then runs [`RunQueue::wakeup_preempt`]
    /// unless the entity is the current one.
    ///
    /// Panics if the slot is not queued or its entity is not delayed.
    pub fn requeue_delayed(&mut self, slot: Slot, now: Nanos) {
        let i = slot.0;
        assert!(
            self.ent(i).delayed,
            "requeue_delayed: slot {i} is not delayed"
        );
        // [D] The kernel does not charge here; charging first measures the
        // lag against an up-to-date V (and is what the next wakeup_preempt
        // does anyway).
        self.charge_current(now);
        if self.feat(Feature::DelayZero) {
            let v = self.mean_vrt();
            let tick = self.params.tick;
            capture_lag(self.ent_mut(i), v, tick);
            if self.ent(i).vlag > 0 {
                // became eligible while sleeping: restart at lag 0 with a
                // fresh request (vrt = V, vdl = V + vslice)
                self.detach(i);
                self.ent_mut(i).vlag = 0;
                let ctx = self.place_ctx();
                place(self.ent_mut(i), &ctx, false);
                self.attach(i);
            }
            // else: keep vrt and vdl, it still owes service
        }
        self.ent_mut(i).delayed = false;
        self.nr_runnable += 1;
        self.counters.delayed_requeues += 1;
    }

    /// Removes the entity in `slot` (§8.2). With `SLEEP` (and not `SPECIAL`),
    /// DELAY_DEQUEUE on and the entity ineligible, it stays queued as delayed
    /// instead. Without `SLEEP` (migration, attribute change) the remaining
    /// request is kept as a relative deadline (PLACE_REL_DEADLINE). If the
    /// entity is the current one, the queue has no current entity afterwards
    /// (unless it was delayed).
    ///
    /// On an entity that is already delayed, a `SLEEP` dequeue (with or
    /// without `SPECIAL`: exit while delayed) completes the delayed dequeue
    /// (DELAY_ZERO applies), and a dequeue without `SLEEP` (migration)
    /// removes it still delayed: it stays non-runnable where it is enqueued
    /// next, unless that enqueue is a `WAKEUP`.
    ///
    /// The captured lag is `clamp(V − vrt, ±max(2·slice, tick)·1024/w)` (§7.1).
    pub fn dequeue(&mut self, slot: Slot, flags: DequeueFlags, now: Nanos) -> Dequeue<T> {
        let i = slot.0;
        let sleep = flags.contains(DequeueFlags::SLEEP);
        let special = flags.contains(DequeueFlags::SPECIAL);
        let already_delayed = self.ent(i).delayed;
        self.charge_current(now);
        if self.next == Some(i) {
            self.next = None;
        }
        // [D] The kernel completes a delay with an internal DEQUEUE_DELAYED
        // flag; here a sleep dequeue of a delayed entity means the same.
        let finishing = already_delayed && sleep;
        if !finishing && sleep && !special && self.feat(Feature::DelayDequeue) && !self.eligible(i)
        {
            // Block while ineligible: stay queued (in V, W, load, nr_queued
            // and the tree or as curr) until picked, burning off the
            // negative lag; only `nr_runnable` drops. (Not already delayed:
            // a sleep dequeue of a delayed entity is `finishing`.)
            self.ent_mut(i).delayed = true;
            self.nr_runnable -= 1;
            self.counters.delayed_dequeues += 1;
            return Dequeue::Delayed;
        }
        let (e, t) = self.remove_entity(i, sleep, finishing);
        Dequeue::Removed(e, t)
    }

    /// The real removal (§8.2 after the delay decision): captures the lag,
    /// keeps a relative deadline for non-sleep dequeues, unaccounts the
    /// entity and frees its slot. `finishing` completes a delayed dequeue.
    fn remove_entity(&mut self, i: u32, sleep: bool, finishing: bool) -> (Entity, T) {
        let delayed = self.ent(i).delayed;
        debug_assert!(!finishing || delayed);
        // a pre-existing delay moved by a migration is already non-runnable
        let dec_runnable = sleep || finishing || !delayed;
        let v = self.mean_vrt(); // still counting the entity
        if self.curr == Some(i) {
            // [D] the kernel keeps a blocked task as cfs_rq->curr (with
            // on_rq = 0) until the switch; here the entity leaves the queue
            // with its payload, so `curr` is cleared at once (the next
            // set_curr then has no previous entity to put back).
            debug_assert!(
                !self.curr_detached,
                "curr changes inside an attribute change"
            );
            self.curr = None;
        } else {
            self.tree_remove(i);
        }
        let w = self.ent(i).weight as u64;
        self.load -= w;
        self.nr_queued -= 1;
        self.lru.remove(i);
        let Queued {
            mut entity,
            payload,
        } = self.arena.release(i);
        entity.queued = false;
        capture_lag(&mut entity, v, self.params.tick);
        if self.feat(Feature::PlaceRelDeadline) && !sleep {
            // migration or attribute change: keep the remaining request
            make_deadline_relative(&mut entity);
        }
        self.advance_base();
        if finishing {
            entity.delayed = false;
            self.nr_runnable += 1; // undone just below: net 0
            if self.feat(Feature::DelayZero) && entity.vlag > 0 {
                // never carry positive credit out of a delay
                entity.vlag = 0;
            }
        }
        if dec_runnable {
            self.nr_runnable -= 1;
        }
        if entity.policy == Policy::Idle {
            self.nr_idle -= 1;
        }
        (entity, payload)
    }

    // ----------------------------------------------------------------
    // Switch path (§8.4)
    // ----------------------------------------------------------------

    /// Makes `slot` the current entity (§8.4 `switch_to`): the previous
    /// current entity, if still queued, is charged and re-inserted in the
    /// tree; `slot` leaves the tree, gets its protection horizon, and starts
    /// its execution clock at `now`. If `slot` is already current, nothing
    /// changes (its protection is kept).
    ///
    /// In both cases the buddy is cleared if it is `slot`. Panics if `slot`
    /// is delayed: a delayed entity never runs (the pick completes its
    /// dequeue instead).
    pub fn set_curr(&mut self, slot: Slot, now: Nanos) {
        let i = slot.0;
        assert!(
            !self.ent(i).delayed,
            "set_curr: slot {i} is delayed; a delayed entity never runs"
        );
        if self.next == Some(i) {
            self.next = None;
        }
        if self.curr == Some(i) {
            // next == prev: the kernel skips the put/set pair, so the
            // protection horizon and the execution clock are kept
            return;
        }
        match self.curr {
            // Two tasks: the previous one takes the next one's place as the
            // tree's only member (same sums as put_prev + tree_remove).
            Some(c) if self.tree.len() == 1 && self.tree.leftmost() == Some(i) => {
                self.charge_current(now);
                self.curr = None;
                let out_vrt = self.tree.node(i).vrt;
                let out_w = self.ent(i).weight;
                let e = self.ent(c);
                let (w, vrt, vdl, slice) = (e.weight, e.vrt, e.vdl, e.slice);
                self.sum_wk += w as i128 * vdiff(vrt, self.base) as i128
                    - out_w as i128 * vdiff(out_vrt, self.base) as i128;
                self.sum_w = self.sum_w + w as u64 - out_w as u64;
                self.tree.replace_sole(i, c, vdl, vrt, slice);
            }
            _ => {
                self.put_prev(now);
                self.tree_remove(i);
            }
        }
        // protection against the others (rq.curr is not yet i)
        let quantum = self.protect_quantum();
        let e = self.ent_mut(i);
        e.vprot = protection_horizon(e, quantum);
        e.exec_start = now;
        e.prev_sum_exec = e.sum_exec;
        debug_assert!(
            !self.curr_detached,
            "curr changes inside an attribute change"
        );
        self.curr = Some(i);
        self.curr_exec_start = now;
        self.lru.move_to_front(i);
    }

    /// The current entity stops running and nothing replaces it (the worker
    /// goes idle or runs something outside this queue): charge it and, if it
    /// is still queued, put it back in the tree.
    pub fn put_prev(&mut self, now: Nanos) {
        let Some(c) = self.curr else { return };
        self.charge_current(now);
        self.curr = None;
        // curr is always queued here (a removal clears curr)
        self.tree_insert(c);
    }

    // ----------------------------------------------------------------
    // Charging and the tick (§5)
    // ----------------------------------------------------------------

    /// The current entity did not get the CPU for `ns` of the time since it
    /// last started or was charged — its worker's OS thread was descheduled
    /// by the host — so that time is not charged: its charge start moves
    /// forward by `ns`, at most to `now`. This is the kernel's steal-time
    /// rule (`rq_clock_task` leaves out time the vCPU did not run), applied
    /// to the one entity that was current throughout.
    ///
    /// ```text
    /// exec_start = min(exec_start + ns, now)
    /// ```
    pub fn forgive_current(&mut self, ns: Nanos, now: Nanos) {
        let Some(c) = self.curr else { return };
        let e = self.ent_mut(c);
        let moved = e.exec_start.saturating_add(ns);
        if (now.wrapping_sub(moved) as i64) < 0 {
            e.exec_start = now;
        } else {
            e.exec_start = moved;
        }
        self.curr_exec_start = e.exec_start;
    }

    /// Charges the current entity for the time since it last started or was
    /// charged (§5.1), renews its deadline if due and advances the base.
    /// Returns whether a reschedule was requested.
    ///
    /// ```text
    /// Δ = now − exec_start   (ignored unless > 0)
    /// vrt += Δ·1024/w
    /// if vrt ≥ vdl: vdl = vrt + slice·1024/w           (renewed)
    /// if nr_queued > 1 and (renewed or vrt ≥ vprot):  resched (lazy), clear buddy
    /// ```
    pub fn charge_current(&mut self, now: Nanos) -> bool {
        let Some(c) = self.curr else { return false };
        let ran = now.wrapping_sub(self.curr_exec_start) as i64;
        if ran <= 0 {
            // the clock did not advance (or went backwards): ignore
            return false;
        }
        debug_assert_eq!(self.curr_exec_start, self.ent(c).exec_start);
        let base_slice = self.params.base_slice;
        self.curr_exec_start = now;
        let e = self.ent_mut(c);
        e.exec_start = now;
        e.sum_exec = e.sum_exec.saturating_add(ran as u64);
        // At most half the wrapping clock: a saturated delta (a clock step of
        // years at a low weight) must not wrap vruntime backwards.
        e.vrt = e
            .vrt
            .wrapping_add(e.fair_delta(ran as u64).min(i64::MAX as u64));
        let renewed = renew_deadline_if_due(e, base_slice);
        let protected = super::place::is_protected(e);
        self.advance_base();
        if self.nr_queued == 1 {
            // alone on the queue: never asks to switch
            return false;
        }
        // 6.17: a new request, or the end of the protection, asks to switch
        if renewed || !protected {
            let reason = if renewed {
                ReschedReason::SliceExpired
            } else {
                ReschedReason::ProtectionEnded
            };
            self.request_resched(Resched::Lazy, reason);
            if self.next == Some(c) {
                self.next = None;
            }
            return true;
        }
        false
    }

    /// Real time (ns) until the next point where a charge of the current
    /// entity changes the picture: the end of its protection if it is still
    /// protected, otherwise its deadline (after which it starts a new
    /// request), `⌈vdiff(horizon, vrt)·w/1024⌉` (docs/eevdf.md §5.4, a `[D]`: the
    /// runtime arms its per-worker preemption timer with this, so a
    /// shortened protection or an expired slice takes effect on time instead
    /// of at the next tick). Once the protection is over, the current entity
    /// keeps running only while it is still the EEVDF choice, and the
    /// kernel's hrtick likewise waits for the slice end. `None` when nothing
    /// else is queued (no switch would happen) or there is no queued current
    /// entity; `Some(0)` when the horizon has already passed.
    pub fn time_to_preempt(&self) -> Option<Nanos> {
        if self.nr_queued <= 1 {
            return None;
        }
        let c = self.curr_queued()?;
        let e = self.ent(c);
        let horizon = if super::place::is_protected(e) {
            crate::sched::vtime::vmin(e.vprot, e.vdl)
        } else {
            e.vdl
        };
        let v = crate::sched::vtime::vdiff(horizon, e.vrt);
        if v <= 0 {
            return Some(0);
        }
        let nice0 = super::weight::NICE_0_WEIGHT;
        // 64-bit arithmetic when the product fits (always, in practice: a
        // virtual horizon under 2^47 ns); a 128-bit division is a library call.
        match (v as u64).checked_mul(e.weight as u64) {
            Some(p) => Some(p.div_ceil(nice0 as u64)),
            None => {
                let real = (v as u128 * e.weight as u128).div_ceil(nice0 as u128);
                Some(real.min(u64::MAX as u128) as u64)
            }
        }
    }

    /// The periodic tick (§5.3): promotes a lazy request, charges the current
    /// entity (deadline / protection checks) and, with TICK_ELIGIBLE,
    /// reschedules an ineligible current entity. Returns whether a reschedule
    /// is pending.
    ///
    /// TICK_ELIGIBLE (docs/kernel-discussions.md §3): when more than one entity is queued
    /// and the current one is no longer eligible (`vrt > V`), a lazy
    /// reschedule is requested even while it is protected.
    pub fn tick(&mut self, now: Nanos) -> bool {
        if self.resched == Resched::Lazy {
            // lazy preemption is promoted at the tick
            self.resched = Resched::Now;
        }
        self.charge_current(now);
        // [D] §4.4: also advance the base on every tick, so the sums stay
        // small even on a queue whose current entity is gone.
        self.advance_base();
        if self.feat(Feature::TickEligible) && self.nr_queued > 1 {
            if let Some(c) = self.curr_queued() {
                if !self.ent(c).delayed && !self.eligible(c) {
                    self.request_resched(Resched::Lazy, ReschedReason::Ineligible);
                    if self.next == Some(c) {
                        self.next = None;
                    }
                }
            }
        }
        self.resched != Resched::None
    }
}
