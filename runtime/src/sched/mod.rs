//! The EEVDF policy: a pure, deterministic run queue.
//!
//! Owns: everything `docs/eevdf.md` specifies for one worker's
//! queue — entities, weights, the augmented tree, V, lag, eligibility,
//! deadlines, slice protection, placement, delayed dequeue, wakeup
//! preemption, yield, the tick decision and the choice of a task to steal.
//! Must not: use threads, atomics, `unsafe` or read a clock; time is always
//! passed in as `now` (nanoseconds). The runtime (workers, wakeups, timers)
//! drives it; users can drive it too, to simulate and trace the policy.
//!
//! # The policy in brief
//!
//! This is the Linux fair scheduler as of 6.17: *Earliest Eligible Virtual
//! Deadline First* (Stoica & Abdel-Wahab, 1995) with the kernel's
//! refinements. Every green thread is an [`Entity`].
//!
//! **Weights and virtual runtime.** An entity's nice level gives it a weight
//! `w` (1024 at nice 0, ×≈1.25 per level, [`weight`]). Running for `Δ` real
//! nanoseconds advances its *virtual runtime* by `Δ·1024/w`: heavy entities'
//! virtual clocks run slowly, so equal virtual progress means CPU time in
//! proportion to weight.
//!
//! **V, lag and eligibility.** The queue's *virtual time* is the
//! weight-averaged vruntime of everything queued (the running entity
//! included):
//!
//! ```text
//! V = Σ w_i·v_i / Σ w_i          lag_i = w_i·(V − v_i),  Σ lag_i = 0
//! eligible_i  ⇔  lag_i ≥ 0  ⇔  v_i ≤ V
//! ```
//!
//! A positive lag means the entity received less than its fair share so
//! far. V is kept as sums relative to a monotonic base (`min_vruntime`), in
//! `i128`, and eligibility is tested without division:
//! `(v − base)·W ≤ Σ w_i·(v_i − base)`. V itself is rounded toward −∞ so
//! that an entity placed exactly at V is eligible.
//!
//! **Requests and deadlines.** Each entity asks for CPU in requests of one
//! *slice* (the base slice, 0.7 ms × (1 + log2 of the worker count, up to
//! 8), or a custom 0.1–100 ms latency request). A request issued at
//! vruntime `v` has the *virtual deadline* `v + slice·1024/w`. When the
//! running entity reaches its deadline, a new request starts from its
//! current vruntime (and the worker is asked to reschedule).
//!
//! **The pick.** Among the eligible entities, the one with the earliest
//! virtual deadline runs. A short slice means an early deadline: latency
//! without extra CPU share.
//!
//! **Slice protection** (RUN_TO_PARITY). Once picked, the running entity
//! keeps the CPU against other picks until its vruntime reaches `vprot`:
//! its deadline, or sooner, `vrt + (shortest slice queued)·1024/w` (with
//! RUN_TO_PARITY off, `vrt + min(0.7 ms, slice)·1024/w`). Protection only
//! holds while it is eligible. A waking entity with a strictly shorter
//! slice ignores it (PREEMPT_SHORT); if it still loses, it shrinks the
//! protection to its own slice. After `vprot` every charge asks for a
//! reschedule, and the current entity keeps running only if it is still
//! the EEVDF choice. The TICK_ELIGIBLE switch additionally reschedules an
//! ineligible current entity at the tick, protected or not.
//!
//! **Placement and lag across sleeps.** When an entity leaves, its virtual
//! lag `V − v` is saved (clamped to about two slices). When it comes back,
//! it is placed so that it has that same lag *after* joining, which needs
//! the lag inflated by `(W + w)/W` because joining moves V (PLACE_LAG). A
//! newborn starts at V with half a request (PLACE_DEADLINE_INITIAL); a
//! migrated entity keeps its remaining request (PLACE_REL_DEADLINE).
//!
//! **Delayed dequeue** (DELAY_DEQUEUE, DELAY_ZERO). Sleeping must not erase
//! a debt: an entity that blocks while *ineligible* stays queued, counted
//! in V, W and the load but not as runnable. V moves past it while others
//! run; when the pick would choose it, its dequeue is completed instead
//! ([`Pick::FinishedDelayed`]), and if it is woken first it simply stays
//! ([`RunQueue::requeue_delayed`]). DELAY_ZERO clips the lag it leaves with
//! to at most zero, so sleeping never banks credit either.
//!
//! **Buddies.** With NEXT_BUDDY a wakeup marks the wakee as the *next
//! buddy*, and with PICK_BUDDY the switch picks it if it is eligible.
//!
//! # How the tree makes the pick O(log n)
//!
//! Queued entities other than the running one sit in a balanced (AVL)
//! search tree ordered by virtual deadline, in an index-based arena. Every
//! node also stores the smallest vruntime (and slice) of its subtree. Since
//! eligibility is monotone in vruntime, one descent finds the earliest
//! eligible deadline: go left while the left subtree's smallest vruntime
//! is eligible (the answer is there, all of it has earlier deadlines),
//! otherwise take the node if it is eligible, otherwise go right. The
//! leftmost node is cached, so the common case — the earliest deadline is
//! eligible — costs O(1). Insert, erase and every rotation keep the
//! subtree values exact, so enqueue, dequeue and pick are O(log n). Up to
//! eight members — the usual queue — are kept as a sorted array instead,
//! whose shifts and scans cost less than the links and rotations at that
//! size (`tree.rs`, "Flat mode"); a
//! recency list (an intrusive list in the same arena) makes the steal walk
//! and the switch bookkeeping O(1) per entity.
//!
//! # API shape
//!
//! - A [`RunQueue<T>`] owns its queued entities: [`RunQueue::enqueue`] takes
//!   an [`Entity`] and a payload `T` (the runtime's task handle) and returns
//!   a [`Slot`], a handle that stays valid while the entity is queued —
//!   including while it runs and while it is delayed.
//! - Leaving hands them back: [`RunQueue::dequeue`] returns
//!   [`Dequeue::Removed`] with the entity (carrying its lag and, for
//!   migrations, its remaining request) and the payload, or
//!   [`Dequeue::Delayed`] when the entity stays queued as delayed.
//! - The switch is [`RunQueue::pick_next`], looping while it returns
//!   [`Pick::FinishedDelayed`], then [`RunQueue::set_curr`] with the slot of
//!   [`Pick::Run`].
//! - Decisions are requests: charging, the tick and
//!   [`RunQueue::wakeup_preempt`] record a [`Resched`] level that the owner
//!   reads with [`RunQueue::resched`] and clears when it switches.
//! - Time is an argument: every method that needs it takes `now` (ns, from
//!   the worker's clock). Nothing here reads a clock, so a simulation is
//!   exactly reproducible.
//! - Virtual times wrap: they are `u64` compared by signed difference
//!   ([`vtime`]); a new queue's base starts at 2^64 − 2^20, like the
//!   kernel's, so wrap-around is exercised from the first milliseconds.
//! - Bad values (nice, slices, feature names) are [`Error`](crate::Error)s;
//!   a [`Slot`] that is not queued is a caller bug and panics.
//! - [`RunQueue::check_invariants`] recomputes every cached sum, counter and
//!   tree value in O(n), for tests and debug builds.
//!
//! Deliberate differences from the kernel are marked `[D]` in the code;
//! the main ones: 128-bit sums and no saturation logic; an entity changing
//! weight or slice is excluded from V during its own placement; a yield
//! also ends the yielder's protection; delayed entities are never stolen;
//! the base also advances on every tick.
//!
//! # Example: two tasks of different nice values
//!
//! Two always-runnable tasks, nice 0 and nice 5, on one worker with a 1 ms
//! tick, for one simulated second. Their CPU shares follow their weights,
//! 1024 : 335 (75.4 % : 24.6 %).
//!
//! ```
//! use eevdf_rt::sched::{EnqueueFlags, Entity, Features, Params, Pick, Resched, RunQueue};
//!
//! const MS: u64 = 1_000_000;
//! let mut rq = RunQueue::new(Params::default(), Features::default());
//! let a = rq.enqueue(Entity::new(0)?, "nice 0", EnqueueFlags::INITIAL, 0);
//! let b = rq.enqueue(Entity::new(5)?, "nice 5", EnqueueFlags::INITIAL, 0);
//!
//! let mut now = 0;
//! for _ in 0..1000 {
//!     // switch when asked to (or when nothing runs yet)
//!     if rq.curr().is_none() || rq.resched() != Resched::None {
//!         if let Pick::Run(next) = rq.pick_next(now) {
//!             rq.set_curr(next, now);
//!             rq.clear_resched();
//!         }
//!     }
//!     now += MS; // the current task runs for one tick...
//!     rq.tick(now); // ...is charged, and maybe asked to switch
//! }
//!
//! let (ta, tb) = (rq.entity(a).sum_exec(), rq.entity(b).sum_exec());
//! let share_a = ta as f64 / (ta + tb) as f64;
//! println!(
//!     "{}: {:.1} %, {}: {:.1} %",
//!     rq.payload(a),
//!     100.0 * share_a,
//!     rq.payload(b),
//!     100.0 * (1.0 - share_a)
//! );
//! assert!((share_a - 1024.0 / 1359.0).abs() < 0.01);
//! rq.check_invariants().unwrap();
//! # Ok::<(), eevdf_rt::Error>(())
//! ```

mod arena;
pub mod entity;
pub mod features;
pub mod flags;
mod lru;
mod place;
pub mod rq;
mod tree;
pub mod vtime;
pub mod weight;

pub use entity::{base_slice_for, check_slice, Entity, Policy, MAX_SLICE, MIN_SLICE};
pub use features::{Feature, Features};
pub use flags::{DequeueFlags, EnqueueFlags, WakeFlags};
pub use rq::{Counters, Dequeue, Params, Pick, Resched, ReschedReason, RunQueue, Slot};
