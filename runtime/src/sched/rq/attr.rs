//! Attribute changes of queued entities: nice (reweight, docs/eevdf.md §7.3)
//! and slice (§2.3), done in place so the entity keeps its slot.
//!
//! Owns: the bracket "capture lag → take out of V/W → change → place →
//! count again" and the protection refresh of a current entity. Must not:
//! change an entity's keys while it is in the tree (the bracket removes it
//! first), or change anything when the new value is refused.

use super::super::entity::{check_slice, Policy};
use super::super::features::Feature;
use super::super::place::{capture_lag, make_deadline_relative, place, protection_horizon};
use super::super::vtime::Nanos;
use super::super::weight::{nice_index, INV_WEIGHTS, WEIGHTS};
use super::{RunQueue, Slot};
use crate::error::Error;

impl<T> RunQueue<T> {
    /// Recomputes the current entity's protection after an attribute change,
    /// as the kernel's `set_next_task` after a `sched_setattr`/nice change
    /// of a running task does.
    fn reprotect_curr(&mut self, i: u32) {
        let quantum = self.protect_quantum();
        let e = self.ent_mut(i);
        e.vprot = protection_horizon(e, quantum);
    }

    /// Changes the nice level of a queued entity (§7.3), conserving its lag
    /// and remaining request. Out-of-range nice is an error and changes nothing.
    ///
    /// The service lag `w·vlag` and the remaining request `w·(vdl − vrt)`
    /// are what is conserved:
    ///
    /// ```text
    /// vlag'      = vlag·w_old/w_new          (truncated)
    /// vdl' − vrt' = (vdl − vrt)·w_old/w_new
    /// ```
    ///
    /// Works on the current entity and on delayed ones (it stays delayed).
    /// An idle-policy entity keeps its weight of 3; only its nice level is
    /// recorded. Setting the same weight again changes nothing.
    ///
    /// The entity is taken out of V and W during its own placement, current
    /// or not, so its lag is conserved exactly (up to rounding); a current
    /// entity gets a fresh protection horizon, like the kernel's
    /// `set_next_task` after a nice change.
    pub fn reweight(&mut self, slot: Slot, nice: i32, now: Nanos) -> Result<(), Error> {
        // [D] docs/eevdf.md §7.3: the kernel's in-queue reweight places the
        // current entity while it is still counted in V and W (treated both
        // as existing and as joining). We exclude it (detach marks it not
        // queued), which conserves its lag exactly and matches what the
        // kernel's nice change of a task (dequeue, reweight, enqueue) does.
        let i = slot.0;
        let idx = nice_index(nice)?;
        let e = self.ent(i);
        let new_w = WEIGHTS[idx];
        if e.policy == Policy::Idle || e.weight == new_w {
            self.ent_mut(i).nice = nice as i8;
            return Ok(());
        }
        self.charge_current(now);
        let is_curr = self.curr == Some(i);
        let v = self.mean_vrt();
        let tick = self.params.tick;
        let e = self.ent_mut(i);
        capture_lag(e, v, tick);
        make_deadline_relative(e);
        self.detach(i);
        let e = self.ent_mut(i);
        let old_w = e.weight as i128;
        e.vlag = (e.vlag as i128 * old_w / new_w as i128) as i64;
        e.vdl = ((e.vdl as i64) as i128 * old_w / new_w as i128) as i64 as u64;
        e.weight = new_w;
        e.inv_weight = INV_WEIGHTS[idx];
        e.nice = nice as i8;
        let ctx = self.place_ctx();
        place(self.ent_mut(i), &ctx, false);
        self.attach(i);
        if is_curr {
            self.reprotect_curr(i);
        }
        self.advance_base();
        Ok(())
    }

    /// Changes the slice of a queued entity (`Some`: custom, `None`: back to
    /// the base slice), like an attribute change: dequeue without SLEEP,
    /// change, enqueue. Out of range is an error and changes nothing.
    ///
    /// The entity keeps its slot (the change is done in place), its lag
    /// and, with PLACE_REL_DEADLINE, its remaining request (the new slice
    /// takes effect at its next deadline); without PLACE_REL_DEADLINE it
    /// gets a fresh request of the new slice. A delayed entity stays
    /// delayed; a current entity gets a fresh protection horizon.
    pub fn set_slice(&mut self, slot: Slot, slice: Option<Nanos>, now: Nanos) -> Result<(), Error> {
        let i = slot.0;
        let slice = slice.map(check_slice).transpose()?;
        let _ = self.ent(i); // panics on a bad slot before anything changes
        self.charge_current(now);
        let is_curr = self.curr == Some(i);
        let v = self.mean_vrt();
        let tick = self.params.tick;
        let rel = self.feat(Feature::PlaceRelDeadline);
        let e = self.ent_mut(i);
        capture_lag(e, v, tick);
        if rel {
            make_deadline_relative(e);
        }
        self.detach(i);
        let e = self.ent_mut(i);
        match slice {
            Some(s) => {
                e.slice = s;
                e.fixed_slice = true;
            }
            None => e.fixed_slice = false, // placement refreshes it
        }
        let ctx = self.place_ctx();
        place(self.ent_mut(i), &ctx, false);
        self.attach(i);
        if is_curr {
            self.reprotect_curr(i);
        }
        self.advance_base();
        Ok(())
    }
}
