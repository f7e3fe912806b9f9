//! Selection on a run queue: the EEVDF pick, the switch-time pick with
//! buddies and delayed entities, wakeup preemption, yield and the choice of
//! a task to steal (docs/eevdf.md §6, §9, §10, §13).
//!
//! Owns: decisions only; every change to the accounting goes through the
//! primitives of the parent module. Must not: scan the queue linearly on
//! the pick path (the pick is one O(log n) descent of the tree).

use super::super::entity::Policy;
use super::super::features::Feature;
use super::super::flags::WakeFlags;
use super::super::place::is_protected;
use super::super::vtime::{vdiff, vmin, Nanos};
use super::{Pick, Resched, ReschedReason, RunQueue, Slot};

/// Cache-hot window for migration (§2.4, `migration_cost`): 500 µs.
pub const MIGRATION_COST: Nanos = 500_000;

/// The most candidates one steal attempt examines (§2.4, `SCHED_NR_MIGRATE_BREAK`).
pub const NR_MIGRATE_BREAK: usize = 32;

impl<T> RunQueue<T> {
    /// The EEVDF choice (§6.1) without side effects: the eligible entity with
    /// the earliest deadline among the tree and the queued current entity,
    /// honouring the current entity's protection if asked. O(log n).
    ///
    /// With one entity queued it is returned without any eligibility check.
    /// Ties between the current entity and a tree entity go to the tree
    /// entity (the current one wins only with a strictly earlier deadline).
    pub fn pick_eevdf(&self, honor_protection: bool) -> Option<Slot> {
        self.pick_eevdf_index(honor_protection).map(Slot)
    }

    pub(super) fn pick_eevdf_index(&self, honor_protection: bool) -> Option<u32> {
        let curr = self.curr_queued();
        if self.nr_queued == 0 {
            return None;
        }
        if self.nr_queued == 1 {
            // alone: no eligibility check at all
            return curr.or(self.tree.leftmost());
        }
        // one (S, W) for the whole descent; eligible ⇔ (v − base)·W ≤ S
        let (s, w) = self.totals();
        let base = self.base;
        let eligible = |v: u64| Self::vrt_eligible(v, base, s, w);

        let curr = curr.filter(|&c| eligible(self.ent(c).vrt));
        if let Some(c) = curr {
            if honor_protection && is_protected(self.ent(c)) {
                return Some(c);
            }
        }

        // The eligible member with the earliest deadline (eligibility is
        // monotone in vrt; the tree's query explains its search).
        let best = self.tree.first_where(eligible);
        match (best, curr) {
            // curr wins only with a strictly earlier deadline
            (Some(b), Some(c)) if vdiff(self.ent(c).vdl, self.tree.node(b).vdl) < 0 => Some(c),
            (Some(b), _) => Some(b),
            (None, Some(c)) => Some(c),
            // [D] cannot happen (some queued entity always has vrt ≤ V);
            // fall back to the earliest deadline rather than return nothing
            (None, None) => self.tree.leftmost().or(self.curr_queued()),
        }
    }

    /// Picks the entity to run next (§6.2, §8.4): charges the current entity
    /// if it is queued, honours an eligible buddy (PICK_BUDDY), runs the
    /// EEVDF pick with slice protection, and completes the dequeue of a
    /// delayed pick instead of returning it.
    ///
    /// The caller loops while it gets [`Pick::FinishedDelayed`]. A delayed
    /// current entity (it blocked and the worker has not switched yet) is
    /// treated like any queued current entity: it is not eligible (that is
    /// why it was delayed) unless V has since passed it, and if it is
    /// chosen — in particular when it is alone — its dequeue is completed.
    pub fn pick_next(&mut self, now: Nanos) -> Pick<T> {
        if self.nr_queued == 0 {
            return Pick::Empty;
        }
        if self.curr_queued().is_some() {
            self.charge_current(now);
        }
        if self.feat(Feature::PickBuddy) {
            if let Some(b) = self.next {
                // the buddy is never delayed (cleared at dequeue)
                if self.eligible(b) {
                    self.counters.picks += 1;
                    self.counters.buddy_picks += 1;
                    return Pick::Run(Slot(b));
                }
            }
        }
        let Some(i) = self.pick_eevdf_index(true) else {
            return Pick::Empty;
        };
        if self.ent(i).delayed {
            // §8.3 step 3: the delayed entity is now eligible (or alone):
            // complete its dequeue (DELAY_ZERO clips positive lag)
            let (e, t) = self.remove_entity(i, true, true);
            self.counters.delayed_finished_at_pick += 1;
            return Pick::FinishedDelayed(e, t);
        }
        self.counters.picks += 1;
        Pick::Run(Slot(i))
    }

    /// Shortens the current entity's protection after a shorter-slice
    /// wakee lost the preemption decision (§6.3 `shrink_protect`):
    /// `vprot = vmin(vprot, vrt + min_slice·1024/w)`.
    fn shrink_protect(&mut self, c: u32) {
        let q = self.min_slice_raw();
        let e = self.ent_mut(c);
        e.vprot = vmin(e.vprot, e.vrt.wrapping_add(e.fair_delta(q)));
    }

    /// Ends the current entity's protection now (§6.3 `cancel_protect`).
    fn cancel_protect(&mut self, c: u32) {
        let e = self.ent_mut(c);
        if is_protected(e) {
            e.vprot = e.vrt;
        }
    }

    /// The wakeup-preemption decision (§9) for the entity in `slot`, just
    /// enqueued or un-delayed. Returns whether the current entity should be
    /// rescheduled (the request is also recorded in [`RunQueue::resched`]).
    ///
    /// 6.17 rules, in order:
    /// - the wakee is the current entity: nothing;
    /// - NEXT_BUDDY (not for a fork, a delayed or an idle-policy wakee):
    ///   the wakee becomes the buddy;
    /// - a `Resched::Now` is already pending: nothing more to decide (false);
    /// - NO_WAKEUP_PREEMPTION: false;
    /// - a normal wakee always preempts an idle-policy current entity
    ///   (cancelling its protection); an idle-policy wakee never preempts a
    ///   normal one; Batch and Idle wakees never preempt;
    /// - TICK_ELIGIBLE: an ineligible current entity is preempted by any
    ///   eligible wakee;
    /// - otherwise the wakee preempts iff it is the EEVDF choice right now,
    ///   with the current entity's protection honoured unless the wakee's
    ///   slice is strictly shorter (PREEMPT_SHORT, which then also cancels
    ///   that protection); a shorter wakee that loses shrinks the current
    ///   entity's protection to the queue's shortest slice (RUN_TO_PARITY).
    ///
    /// With no current entity (the worker is idle) the wakeup asks for an
    /// immediate reschedule, like a wakeup on an idle CPU.
    pub fn wakeup_preempt(&mut self, slot: Slot, flags: WakeFlags, now: Nanos) -> bool {
        let p = slot.0;
        let _ = self.ent(p); // a bad slot panics before anything changes
        let Some(c) = self.curr else {
            self.request_resched(Resched::Now, ReschedReason::WakeupPreempt);
            return true;
        };
        if c == p {
            return false;
        }
        let pe = self.ent(p);
        if self.feat(Feature::NextBuddy)
            && !flags.contains(WakeFlags::FORK)
            && !pe.delayed
            && pe.policy != Policy::Idle
        {
            self.next = Some(p);
        }
        // [M] only a full (non-lazy) request short-cuts the decision
        if self.resched == Resched::Now {
            return false;
        }
        if !self.feat(Feature::WakeupPreemption) {
            return false;
        }
        let c_idle = self.ent(c).policy == Policy::Idle;
        let p_idle = self.ent(p).policy == Policy::Idle;
        if c_idle && !p_idle {
            // a normal task always preempts the idle policy
            return self.preempt(c, true);
        }
        if c_idle != p_idle || self.ent(p).policy != Policy::Normal {
            return false;
        }
        self.charge_current(now);
        if self.feat(Feature::TickEligible) && !self.eligible(c) && self.eligible(p) {
            return self.preempt(c, false);
        }
        let short = self.feat(Feature::PreemptShort) && self.ent(p).slice < self.ent(c).slice;
        if self.pick_eevdf_index(!short) == Some(p) {
            return self.preempt(c, short);
        }
        if self.feat(Feature::RunToParity) && short {
            // lost, but curr now yields sooner
            self.shrink_protect(c);
            self.counters.protection_shortened += 1;
        }
        false
    }

    /// The preempting end of [`RunQueue::wakeup_preempt`].
    fn preempt(&mut self, c: u32, short: bool) -> bool {
        if short {
            // curr forfeits the rest of its protection
            self.cancel_protect(c);
        }
        self.request_resched(Resched::Lazy, ReschedReason::WakeupPreempt);
        self.counters.wakeup_preemptions += 1;
        true
    }

    /// The current entity yields (§10): its deadline moves back by one request.
    ///
    /// ```text
    /// vdl += slice·1024/w
    /// ```
    ///
    /// Nothing happens if it is the only queued entity. The buddy is
    /// cleared if it is the current entity. The yielding entity also
    /// forfeits the rest of its slice protection, so the next pick can run
    /// an entity with an earlier deadline.
    pub fn yield_current(&mut self, now: Nanos) {
        if self.nr_queued <= 1 {
            return;
        }
        let Some(c) = self.curr else { return };
        if self.next == Some(c) {
            self.next = None;
        }
        self.charge_current(now);
        let e = self.ent_mut(c);
        e.vdl = e.vdl.wrapping_add(e.fair_delta(e.slice));
        // [D] Cancel the protection. In 6.12–6.16 moving the deadline ended
        // it by itself (protection was "vlag == vdl"); with 6.17's explicit
        // `vprot` a yield inside the protection would change nothing until
        // `vprot`, and a runtime's `yield_now()` must let an earlier
        // deadline run.
        self.cancel_protect(c);
    }

    /// Directed yield (§10 `yield_to`): makes `target` the next buddy, so the
    /// switch picks it if it is eligible (PICK_BUDDY), then yields as
    /// [`RunQueue::yield_current`]. A `target` that is the current entity or
    /// delayed is not made the buddy (the buddy is never delayed); the yield
    /// still happens. Panics if `target` is not queued.
    pub fn yield_to(&mut self, target: Slot, now: Nanos) {
        let t = target.0;
        let e = self.ent(t);
        if self.curr != Some(t) && !e.delayed && e.policy != Policy::Idle {
            self.next = Some(t);
        }
        self.yield_current(now);
    }

    /// A task that newidle balancing may move to another worker (§13
    /// `can_migrate`): walks the queue from the least recently run entity,
    /// examining at most 32 candidates, and returns the first that passes:
    ///
    /// - not the current entity, not delayed (delayed entities are never
    ///   migrated: the runtime does not balance by load);
    /// - unless `balance_failed`: eligible here when the destination is busy
    ///   (`dst_busy`) and PLACE_LAG is on (its lag travels with it, so an
    ///   ineligible task would be ineligible there too; on an empty
    ///   destination the lag is dropped anyway);
    /// - `allowed(payload)` (affinity);
    /// - unless `balance_failed`: not cache-hot, i.e. it did not start or
    ///   get charged within 500 µs of `now`, and it is not the buddy while
    ///   `dst_busy` with CACHE_HOT_BUDDY.
    ///
    /// The caller then moves it: `dequeue` without `SLEEP` here, `enqueue`
    /// with `MIGRATED` there, then `wakeup_preempt` there.
    pub fn steal_candidate(
        &self,
        now: Nanos,
        dst_busy: bool,
        balance_failed: bool,
        mut allowed: impl FnMut(&T) -> bool,
    ) -> Option<Slot> {
        let check_lag = !balance_failed && dst_busy && self.feat(Feature::PlaceLag);
        let hot_buddy = dst_busy && self.feat(Feature::CacheHotBuddy);
        for i in self.lru.iter_from_back().take(NR_MIGRATE_BREAK) {
            if self.curr == Some(i) {
                continue;
            }
            let q = self.arena.get(i);
            if q.entity.delayed {
                // [D] the kernel migrates delayed tasks when balancing by
                // load; the runtime never does (docs/eevdf.md §8.2, simpler)
                continue;
            }
            if check_lag && !self.eligible(i) {
                continue;
            }
            if !allowed(&q.payload) {
                continue;
            }
            if !balance_failed {
                let since = now.wrapping_sub(q.entity.exec_start) as i64;
                let hot = since < MIGRATION_COST as i64 || (hot_buddy && self.next == Some(i));
                if hot {
                    continue;
                }
            }
            return Some(Slot(i));
        }
        None
    }
}
