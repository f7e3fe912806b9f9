//! The schedulable entity: one per green thread.
//!
//! Owns: an entity's scheduling parameters (policy, nice/weight, slice) and
//! its EEVDF state (vruntime, deadline, lag, protection, delayed flag,
//! execution accounting), docs/eevdf.md §3.1. While an entity is queued it lives
//! inside a [`RunQueue`](super::RunQueue); while it sleeps the runtime keeps
//! it in the task. Must not: know about run queues, threads or clocks.

use super::vtime::Nanos;
use super::weight::{
    fair_delta, inverse_weight, nice_index, IDLE_POLICY_INV_WEIGHT, IDLE_POLICY_WEIGHT,
    INV_WEIGHTS, WEIGHTS,
};
use crate::error::Error;

/// Shortest custom slice: 100 µs (docs/eevdf.md §2.3).
pub const MIN_SLICE: Nanos = 100_000;
/// Longest custom slice: 100 ms.
pub const MAX_SLICE: Nanos = 100_000_000;
/// The unscaled base slice, 700 µs: the minimum protected quantum with RUN_TO_PARITY off.
pub const NORMALIZED_BASE_SLICE: Nanos = 700_000;

/// The base slice for a runtime with `workers` workers:
/// `700 µs × (1 + ⌊log2(min(workers, 8))⌋)` (docs/eevdf.md §2.3).
///
/// ```
/// use eevdf_rt::sched::base_slice_for;
/// assert_eq!(base_slice_for(1), 700_000);
/// assert_eq!(base_slice_for(2), 1_400_000);
/// assert_eq!(base_slice_for(64), 2_800_000);
/// ```
pub fn base_slice_for(workers: usize) -> Nanos {
    let n = workers.clamp(1, 8) as u32;
    NORMALIZED_BASE_SLICE * (1 + (31 - n.leading_zeros()) as u64)
}

/// Checks a custom slice against the 100 µs ..= 100 ms clamp.
pub fn check_slice(slice: Nanos) -> Result<Nanos, Error> {
    if (MIN_SLICE..=MAX_SLICE).contains(&slice) {
        Ok(slice)
    } else {
        Err(Error::invalid(
            "slice",
            format!("{slice} ns"),
            "100 µs ..= 100 ms",
        ))
    }
}

/// Scheduling policy of an entity (docs/eevdf.md §3.1, §9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Policy {
    /// Ordinary tasks (SCHED_NORMAL).
    #[default]
    Normal,
    /// Throughput tasks: never wakeup-preempt (SCHED_BATCH).
    Batch,
    /// Background tasks: weight 3, preempted by any normal wakeup, never preempt a normal task (SCHED_IDLE).
    Idle,
}

/// One schedulable entity.
///
/// Create it with [`Entity::new`]; the run queue sets its virtual times when
/// it is first enqueued (`INITIAL`).
///
/// ```
/// use eevdf_rt::sched::Entity;
/// let e = Entity::new(5).unwrap().with_slice(Some(200_000)).unwrap();
/// assert_eq!(e.weight(), 335);
/// assert_eq!(e.slice(), 200_000);
/// assert!(e.has_custom_slice());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entity {
    pub(crate) policy: Policy,
    pub(crate) nice: i8,
    pub(crate) weight: u32,
    pub(crate) inv_weight: u32,
    /// Current request size in real ns (the base slice unless `fixed_slice`).
    pub(crate) slice: Nanos,
    /// The slice was set by the user and is not refreshed from the base slice.
    pub(crate) fixed_slice: bool,
    /// Virtual runtime.
    pub(crate) vrt: u64,
    /// Virtual deadline (absolute), or `vdl − vrt` while `dl_is_relative`.
    pub(crate) vdl: u64,
    pub(crate) dl_is_relative: bool,
    /// `V − vrt` captured at dequeue.
    pub(crate) vlag: i64,
    /// Slice-protection horizon while running (6.17).
    pub(crate) vprot: u64,
    /// Counted in the queue's accounting (includes delayed and running).
    pub(crate) queued: bool,
    /// Wants to sleep but is still queued (delayed dequeue).
    pub(crate) delayed: bool,
    pub(crate) exec_start: Nanos,
    pub(crate) sum_exec: Nanos,
    pub(crate) prev_sum_exec: Nanos,
}

impl Entity {
    /// A new, never-queued entity at `nice` with the base slice.
    pub fn new(nice: i32) -> Result<Self, Error> {
        let i = nice_index(nice)?;
        Ok(Entity {
            policy: Policy::Normal,
            nice: nice as i8,
            weight: WEIGHTS[i],
            inv_weight: INV_WEIGHTS[i],
            slice: NORMALIZED_BASE_SLICE,
            fixed_slice: false,
            vrt: 0,
            vdl: 0,
            dl_is_relative: false,
            vlag: 0,
            vprot: 0,
            queued: false,
            delayed: false,
            exec_start: 0,
            sum_exec: 0,
            prev_sum_exec: 0,
        })
    }

    /// Sets a custom slice (`Some`, clamped to 100 µs ..= 100 ms, out of range is an
    /// error) or goes back to the base slice (`None`). Only for an entity
    /// that is not queued; use [`RunQueue::set_slice`](super::RunQueue::set_slice) otherwise.
    pub fn with_slice(mut self, slice: Option<Nanos>) -> Result<Self, Error> {
        self.set_slice_unqueued(slice)?;
        Ok(self)
    }

    /// Sets the scheduling policy. `Policy::Idle` fixes the weight at 3.
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        if policy == Policy::Idle {
            self.weight = IDLE_POLICY_WEIGHT;
            self.inv_weight = IDLE_POLICY_INV_WEIGHT;
        } else {
            let i = (self.nice as i32 + 20) as usize;
            self.weight = WEIGHTS[i];
            self.inv_weight = INV_WEIGHTS[i];
        }
        self
    }

    /// Goes back to the base slice `base` at once (instead of at the next
    /// placement), for an entity that is not queued.
    pub(crate) fn use_base_slice_unqueued(&mut self, base: Nanos) {
        self.slice = base;
        self.fixed_slice = false;
    }

    pub(crate) fn set_slice_unqueued(&mut self, slice: Option<Nanos>) -> Result<(), Error> {
        match slice {
            Some(s) => {
                self.slice = check_slice(s)?;
                self.fixed_slice = true;
            }
            None => self.fixed_slice = false,
        }
        Ok(())
    }

    /// Changes the nice level of an entity that is not queued, scaling its
    /// saved lag so that the service lag `w·vlag` is conserved (§7.3).
    ///
    /// # Panics
    /// If the entity is marked queued (for example a clone of
    /// [`RunQueue::entity`](super::RunQueue::entity)): a queued entity
    /// changes its nice level through [`RunQueue::reweight`](super::RunQueue::reweight).
    pub fn set_nice_unqueued(&mut self, nice: i32) -> Result<(), Error> {
        assert!(
            !self.queued,
            "set_nice_unqueued: the entity is queued; use RunQueue::reweight"
        );
        let i = nice_index(nice)?;
        self.nice = nice as i8;
        if self.policy != Policy::Idle {
            let new_w = WEIGHTS[i];
            self.vlag = (self.vlag as i128 * self.weight as i128 / new_w as i128) as i64;
            if self.dl_is_relative {
                self.vdl =
                    ((self.vdl as i64) as i128 * self.weight as i128 / new_w as i128) as i64 as u64;
            }
            self.weight = new_w;
            self.inv_weight = inverse_weight(new_w);
        }
        Ok(())
    }

    /// `Δ` real ns in this entity's virtual time.
    #[inline]
    pub fn fair_delta(&self, delta: Nanos) -> Nanos {
        fair_delta(delta, self.weight, self.inv_weight)
    }

    /// Scheduling policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }
    /// Nice level (−20..=19).
    pub fn nice(&self) -> i32 {
        self.nice as i32
    }
    /// Weight (1024 at nice 0).
    pub fn weight(&self) -> u32 {
        self.weight
    }
    /// Current request size (real ns).
    pub fn slice(&self) -> Nanos {
        self.slice
    }
    /// Whether the slice was set by the user.
    pub fn has_custom_slice(&self) -> bool {
        self.fixed_slice
    }
    /// Virtual runtime.
    pub fn vruntime(&self) -> u64 {
        self.vrt
    }
    /// Virtual deadline (absolute while queued).
    pub fn deadline(&self) -> u64 {
        self.vdl
    }
    /// Whether [`deadline`](Entity::deadline) currently holds the remaining
    /// request `vdl − vrt` instead of an absolute deadline: set by a
    /// non-sleep dequeue with PLACE_REL_DEADLINE (migration, attribute
    /// change), cleared by the next placement. Never set while queued.
    pub fn has_relative_deadline(&self) -> bool {
        self.dl_is_relative
    }
    /// Virtual lag saved at the last dequeue.
    pub fn vlag(&self) -> i64 {
        self.vlag
    }
    /// Slice-protection horizon (meaningful while running).
    pub fn vprot(&self) -> u64 {
        self.vprot
    }
    /// Whether the entity is counted in a run queue.
    pub fn is_queued(&self) -> bool {
        self.queued
    }
    /// Whether the entity is queued but sleeping (delayed dequeue).
    pub fn is_delayed(&self) -> bool {
        self.delayed
    }
    /// Total real time charged to this entity (saturating at `u64::MAX`).
    pub fn sum_exec(&self) -> Nanos {
        self.sum_exec
    }
    /// When the entity last started running (0 after a migration).
    pub fn exec_start(&self) -> Nanos {
        self.exec_start
    }
}
