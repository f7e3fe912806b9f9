//! Per-entity EEVDF arithmetic: lag capture, placement, deadline renewal and
//! the slice-protection horizon (docs/eevdf.md §5.2, §6.3, §7.1, §7.2).
//!
//! Owns: pure functions of one entity and a few numbers describing its
//! queue (V, the weight of the others, feature bits). The run queue computes
//! those numbers and brackets every call with the accounting (the entity is
//! never in the tree while these functions change its keys). Must not: touch
//! queue state, read a clock, or divide anything but by a positive weight.

use super::entity::Entity;
use super::vtime::{vdiff, vmin, Nanos};

/// What placement needs to know about the queue the entity joins.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlaceCtx {
    /// V of the queue *without* the entity (floored weighted mean, §4.2).
    pub(crate) v: u64,
    /// Total weight already queued, excluding the entity (tree + queued curr).
    pub(crate) w_others: u64,
    /// Number of entities already queued, excluding the entity.
    pub(crate) nr_others: u32,
    /// The queue's base slice, for entities without a custom slice.
    pub(crate) base_slice: Nanos,
    /// PLACE_LAG is on.
    pub(crate) place_lag: bool,
    /// PLACE_DEADLINE_INITIAL is on.
    pub(crate) deadline_initial: bool,
}

/// Deadline renewal (§5.2, the kernel's `update_deadline`).
///
/// Once `vrt` has reached the deadline, a new request of one slice starts
/// at the *current* vruntime:
///
/// ```text
/// if vrt ≥ vdl:  slice = base_slice (unless custom);  vdl = vrt + slice·1024/w
/// ```
///
/// Returns whether a new request started.
pub(crate) fn renew_deadline_if_due(e: &mut Entity, base_slice: Nanos) -> bool {
    if vdiff(e.vrt, e.vdl) < 0 {
        return false;
    }
    if !e.fixed_slice {
        e.slice = base_slice;
    }
    e.vdl = e.vrt.wrapping_add(e.fair_delta(e.slice));
    true
}

/// Lag capture at dequeue (§7.1, `update_entity_lag`), with `v` the queue's
/// V while the entity is still counted in it:
///
/// ```text
/// vlag = clamp(V − vrt, −L, L)    where L = max(2·slice, TICK)·1024/w
/// ```
///
/// The clamp keeps the lag within about two requests (never below one
/// tick): the average-based V drifts as entities come and go, and the EEVDF
/// steady-state bound is −r_max < lag < max(r_max, q).
pub(crate) fn capture_lag(e: &mut Entity, v: u64, tick: Nanos) {
    let lag = vdiff(v, e.vrt);
    let limit = e
        .fair_delta(e.slice.saturating_mul(2).max(tick))
        .min(i64::MAX as u64) as i64;
    e.vlag = lag.clamp(-limit, limit);
}

/// Turns an absolute deadline into the remaining request `vdl − vrt`
/// (PLACE_REL_DEADLINE, §8.2), restored by the next [`place`].
pub(crate) fn make_deadline_relative(e: &mut Entity) {
    debug_assert!(!e.dl_is_relative);
    e.vdl = vdiff(e.vdl, e.vrt) as u64;
    e.dl_is_relative = true;
}

/// Placement (§7.2, `place_entity`): gives a joining entity its vruntime and
/// deadline.
///
/// ```text
/// vrt = V − vlag·(W + w)/W        (PLACE_LAG, queue not empty; else vrt = V)
/// vdl = vrt + (vdl − vrt)_saved   (a relative deadline is restored), or
/// vdl = vrt + vslice              (vslice = slice·1024/w, halved for a newborn
///                                  with PLACE_DEADLINE_INITIAL)
/// ```
///
/// Why the inflation by `(W + w)/W`: inserting weight `w` with virtual lag
/// ℓ moves the mean to `V' = V − w·ℓ/(W + w)`; inserting with
/// `ℓ·(W + w)/W` leaves the entity with exactly ℓ after the insertion.
/// The division truncates toward zero, like the kernel's signed division.
pub(crate) fn place(e: &mut Entity, ctx: &PlaceCtx, initial: bool) {
    if !e.fixed_slice {
        e.slice = ctx.base_slice;
    }
    let mut vslice = e.fair_delta(e.slice);
    let mut lag: i128 = 0;
    if ctx.place_lag && ctx.nr_others > 0 && e.vlag != 0 {
        // the kernel warns and uses 1 if the others weigh nothing
        let w_others = ctx.w_others.max(1) as i128;
        let num = e.vlag as i128 * (w_others + e.weight as i128);
        lag = match (i64::try_from(num), i64::try_from(w_others)) {
            // 64-bit division when it fits (a 128-bit one is a library call)
            (Ok(n), Ok(d)) => (n / d) as i128,
            _ => num / w_others,
        };
    }
    // |vlag| ≤ ~2^37 and (W+w)/W ≤ ~2^15, so the lag fits an i64 comfortably
    e.vrt = ctx.v.wrapping_sub(lag as i64 as u64);
    if e.dl_is_relative {
        // migrated or changed attributes: keep the remaining request
        e.vdl = e.vrt.wrapping_add(e.vdl);
        e.dl_is_relative = false;
        return;
    }
    if ctx.deadline_initial && initial {
        // newborns start half a request in, so they do not get a full
        // slice ahead of tasks that are already running
        vslice /= 2;
    }
    e.vdl = e.vrt.wrapping_add(vslice);
}

/// The protection horizon set when `e` is picked (§6.3, 6.17 `vprot`):
///
/// ```text
/// q    = min(quantum, e.slice)
/// vprot = vdl                              if q == e.slice
///       = vmin(vdl, vrt + q·1024/w)        otherwise
/// ```
///
/// where `quantum` is the shortest slice among the other queued entities
/// (RUN_TO_PARITY) or the unscaled 700 µs base slice (NO_RUN_TO_PARITY).
pub(crate) fn protection_horizon(e: &Entity, quantum: Nanos) -> u64 {
    let q = quantum.min(e.slice);
    if q == e.slice {
        e.vdl
    } else {
        vmin(e.vdl, e.vrt.wrapping_add(e.fair_delta(q)))
    }
}

/// Whether the running entity is still inside its protection: `vrt < vprot`.
#[inline]
pub(crate) fn is_protected(e: &Entity) -> bool {
    vdiff(e.vrt, e.vprot) < 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(v: u64, w_others: u64, nr_others: u32) -> PlaceCtx {
        PlaceCtx {
            v,
            w_others,
            nr_others,
            base_slice: 700_000,
            place_lag: true,
            deadline_initial: true,
        }
    }

    #[test]
    fn renewal_starts_from_current_vruntime() {
        let mut e = Entity::new(0).unwrap();
        e.vrt = 1_000;
        e.vdl = 2_000;
        assert!(!renew_deadline_if_due(&mut e, 700_000));
        e.vrt = 2_500;
        assert!(renew_deadline_if_due(&mut e, 700_000));
        assert_eq!(e.vdl, 2_500 + 700_000);
        // a nice-5 entity's request covers 1024/335 as much virtual time
        let mut e = Entity::new(5).unwrap();
        e.vrt = 10;
        e.vdl = 10;
        assert!(renew_deadline_if_due(&mut e, 700_000));
        assert_eq!(e.vdl, 10 + e.fair_delta(700_000));
        assert!((2_139_000..2_141_000).contains(&(e.vdl - 10)));
    }

    #[test]
    fn lag_is_clamped_to_two_slices_or_a_tick() {
        let mut e = Entity::new(0).unwrap();
        e.vrt = 0;
        capture_lag(&mut e, 500, 1_000_000);
        assert_eq!(e.vlag, 500);
        capture_lag(&mut e, 10_000_000, 1_000_000);
        assert_eq!(e.vlag, 1_400_000); // 2 × 0.7 ms
        capture_lag(&mut e, 0u64.wrapping_sub(10_000_000), 1_000_000);
        assert_eq!(e.vlag, -1_400_000);
        e.slice = 100_000; // 2 × 0.1 ms < one tick: the tick is the floor
        capture_lag(&mut e, 10_000_000, 1_000_000);
        assert_eq!(e.vlag, 1_000_000);
    }

    #[test]
    fn placement_inflates_lag() {
        // W = 3072 queued, joining w = 1024 with lag 4000: inflated to 4000·4096/3072
        let mut e = Entity::new(0).unwrap();
        e.vlag = 4000;
        place(&mut e, &ctx(1_000_000, 3072, 3), false);
        assert_eq!(e.vrt, 1_000_000 - 5333);
        assert_eq!(e.vdl, e.vrt + 700_000);
        // negative lag truncates toward zero
        e.vlag = -4000;
        place(&mut e, &ctx(1_000_000, 3072, 3), false);
        assert_eq!(e.vrt, 1_000_000 + 5333);
    }

    #[test]
    fn placement_on_empty_queue_drops_lag_and_newborns_get_half_a_slice() {
        let mut e = Entity::new(0).unwrap();
        e.vlag = 12345;
        place(&mut e, &ctx(77, 0, 0), true);
        assert_eq!(e.vrt, 77);
        assert_eq!(e.vdl, 77 + 350_000);
    }

    #[test]
    fn relative_deadline_is_restored() {
        let mut e = Entity::new(0).unwrap();
        e.vrt = 100;
        e.vdl = 400;
        make_deadline_relative(&mut e);
        assert_eq!(e.vdl, 300);
        place(&mut e, &ctx(u64::MAX - 50, 1024, 1), true);
        assert!(!e.dl_is_relative);
        assert_eq!(vdiff(e.vdl, e.vrt), 300);
        // a negative remaining request survives the round trip too
        e.vdl = e.vrt.wrapping_sub(7);
        make_deadline_relative(&mut e);
        place(&mut e, &ctx(5, 1024, 1), false);
        assert_eq!(vdiff(e.vdl, e.vrt), -7);
    }

    #[test]
    fn protection_horizon_follows_the_shortest_slice() {
        let mut e = Entity::new(0).unwrap().with_slice(Some(3_000_000)).unwrap();
        e.vrt = 1_000;
        e.vdl = 1_000 + 3_000_000;
        assert_eq!(protection_horizon(&e, u64::MAX), e.vdl);
        assert_eq!(protection_horizon(&e, 100_000), 1_000 + 100_000);
        assert_eq!(protection_horizon(&e, 700_000), 1_000 + 700_000);
        e.vprot = 1_500;
        assert!(is_protected(&e));
        e.vrt = 1_500;
        assert!(!is_protected(&e));
    }
}
