//! The run queue's self-check: docs/eevdf.md §16 items 1–4 and 6, recomputed
//! from scratch in O(n).
//!
//! Owns: `check_invariants`. Must not: change anything, or trust any cached
//! value it is checking (sums, counters, augmentation, the leftmost cache).

use super::super::entity::Policy;
use super::super::vtime::{floor_div, vdiff};
use super::super::weight::{
    inverse_weight, IDLE_POLICY_INV_WEIGHT, IDLE_POLICY_WEIGHT, INV_WEIGHTS, WEIGHTS,
};
use super::RunQueue;

impl<T> RunQueue<T> {
    /// Checks every invariant of docs/eevdf.md §16 by O(n) recomputation.
    /// Returns a description of the first violation.
    ///
    /// 1. `sum_w`, `sum_wk` equal the tree's recomputed sums; `load` is
    ///    their weight plus the current entity's.
    /// 2. `nr_queued` = tree size + current; `nr_runnable` counts the
    ///    non-delayed queued entities; `nr_idle` the idle-policy ones.
    /// 3. The tree is ordered by deadline, balanced, correctly augmented,
    ///    its leftmost cache is right, and its key copies match the entities.
    /// 4. The current entity is queued (and not marked detached: the
    ///    attribute-change bracket never outlives one call) and never in
    ///    the tree; a delayed
    ///    entity is queued; the buddy is queued and not delayed; no queued
    ///    entity holds a relative deadline; the recency list holds exactly
    ///    the queued entities.
    /// 6. V equals the exactly computed weighted mean, floored.
    pub fn check_invariants(&self) -> Result<(), String> {
        if self.curr_detached {
            return Err("the current entity is marked detached outside an attribute change".into());
        }
        self.tree.check()?;
        self.lru.check()?;

        let mut sum_w: u64 = 0;
        let mut sum_wk: i128 = 0;
        let mut load: u64 = 0;
        let mut nr: u32 = 0;
        let mut runnable: u32 = 0;
        let mut idle: u32 = 0;
        for (i, q) in self.arena.iter() {
            let e = &q.entity;
            if !e.queued {
                return Err(format!("slot {i}: stored entity is not marked queued"));
            }
            if e.dl_is_relative {
                return Err(format!("slot {i}: queued entity has a relative deadline"));
            }
            let (w, inv) = if e.policy == Policy::Idle {
                (IDLE_POLICY_WEIGHT, IDLE_POLICY_INV_WEIGHT)
            } else {
                let k = (e.nice as i32 + 20) as usize;
                (WEIGHTS[k], INV_WEIGHTS[k])
            };
            if e.weight != w || e.inv_weight != inv || inverse_weight(w) != inv {
                return Err(format!(
                    "slot {i}: weight {}/{} does not match nice {} and policy {:?}",
                    e.weight, e.inv_weight, e.nice, e.policy
                ));
            }
            if !self.lru.contains(i) {
                return Err(format!(
                    "slot {i}: queued entity missing from the recency list"
                ));
            }
            let is_curr = self.curr == Some(i);
            let in_tree = self.tree.contains(i);
            if is_curr && in_tree {
                return Err(format!("slot {i}: the current entity is in the tree"));
            }
            if !is_curr && !in_tree {
                return Err(format!("slot {i}: queued entity missing from the tree"));
            }
            if in_tree {
                let n = self.tree.node(i);
                if (n.vdl, n.vrt, n.slice) != (e.vdl, e.vrt, e.slice) {
                    return Err(format!(
                        "slot {i}: entity keys changed while in the tree \
                         (tree vdl/vrt/slice {}/{}/{}, entity {}/{}/{})",
                        n.vdl, n.vrt, n.slice, e.vdl, e.vrt, e.slice
                    ));
                }
                sum_w += e.weight as u64;
                sum_wk += e.weight as i128 * vdiff(e.vrt, self.base) as i128;
            }
            load += e.weight as u64;
            nr += 1;
            if !e.delayed {
                runnable += 1;
            }
            if e.policy == Policy::Idle {
                idle += 1;
            }
        }
        if let Some(c) = self.curr {
            if !self.arena.contains(c) {
                return Err(format!("curr {c} is not a queued slot"));
            }
        }
        if sum_w != self.sum_w {
            return Err(format!("sum_w {} != recomputed {sum_w}", self.sum_w));
        }
        if sum_wk != self.sum_wk {
            return Err(format!("sum_wk {} != recomputed {sum_wk}", self.sum_wk));
        }
        if load != self.load {
            return Err(format!("load {} != recomputed {load}", self.load));
        }
        if nr != self.nr_queued {
            return Err(format!("nr_queued {} != recomputed {nr}", self.nr_queued));
        }
        let tree_plus_curr = self.tree.len() + u32::from(self.curr.is_some());
        if tree_plus_curr != nr {
            return Err(format!(
                "tree size {} + curr != {nr} queued entities",
                self.tree.len()
            ));
        }
        if self.arena.len() != nr {
            return Err(format!("arena holds {}, counted {nr}", self.arena.len()));
        }
        if self.lru.len() != nr {
            return Err(format!(
                "recency list holds {}, queued {nr}",
                self.lru.len()
            ));
        }
        if runnable != self.nr_runnable {
            return Err(format!(
                "nr_runnable {} != recomputed {runnable}",
                self.nr_runnable
            ));
        }
        if idle != self.nr_idle {
            return Err(format!("nr_idle {} != recomputed {idle}", self.nr_idle));
        }
        if let Some(n) = self.next {
            if !self.arena.contains(n) {
                return Err(format!("buddy {n} is not queued"));
            }
            if self.ent(n).delayed {
                return Err(format!("buddy {n} is delayed"));
            }
        }
        // §16, item 6: V against the exact rational mean, computed relative to an
        // entity's own vruntime (independent of the base)
        if let Some((_, q)) = self.arena.iter().next() {
            let r = q.entity.vrt;
            let (mut s, mut w) = (0i128, 0i128);
            for (_, q) in self.arena.iter() {
                s += q.entity.weight as i128 * vdiff(q.entity.vrt, r) as i128;
                w += q.entity.weight as i128;
            }
            let exact = r.wrapping_add(floor_div(s, w) as i64 as u64);
            if exact != self.mean_vrt() {
                return Err(format!(
                    "V {} != exact floored mean {exact}",
                    self.mean_vrt()
                ));
            }
        } else if self.mean_vrt() != self.base {
            return Err("V of an empty queue is not the base".into());
        }
        Ok(())
    }
}
