//! Virtual-time arithmetic.
//!
//! Owns: the wrapping comparison helpers every virtual time (`vruntime`,
//! `deadline`, `vprot`, the queue's base) goes through. Virtual times are
//! `u64` values that are allowed to wrap, so they are only ever compared by
//! signed difference (docs/eevdf.md §2.1). Must not: compare virtual times with
//! `<` on the raw `u64`.

/// Nanoseconds (real time) or virtual nanoseconds (virtual time).
pub type Nanos = u64;

/// Signed distance `a − b` of two wrapping virtual times.
///
/// "a before b" ⇔ `vdiff(a, b) < 0`.
///
/// ```
/// use eevdf_rt::sched::vtime::vdiff;
/// assert_eq!(vdiff(5, 3), 2);
/// assert_eq!(vdiff(2, u64::MAX), 3); // wrapped: 2 is three steps after u64::MAX
/// ```
#[inline]
pub fn vdiff(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

/// The earlier of two virtual times (signed comparison).
#[inline]
pub fn vmin(a: u64, b: u64) -> u64 {
    if vdiff(a, b) < 0 {
        a
    } else {
        b
    }
}

/// The later of two virtual times (signed comparison).
#[inline]
pub fn vmax(a: u64, b: u64) -> u64 {
    if vdiff(a, b) > 0 {
        a
    } else {
        b
    }
}

/// `⌊a / b⌋` for `b > 0`, rounding toward −∞ (docs/eevdf.md §4.2 requires it for V).
#[inline]
pub fn floor_div(a: i128, b: i128) -> i128 {
    debug_assert!(b > 0);
    let q = a / b;
    if (a % b != 0) && (a < 0) {
        q - 1
    } else {
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_order() {
        let near_top = u64::MAX - 10;
        assert!(vdiff(near_top, 5) < 0);
        assert_eq!(vmin(near_top, 5), near_top);
        assert_eq!(vmax(near_top, 5), 5);
    }

    #[test]
    fn floor_division_rounds_down() {
        assert_eq!(floor_div(7, 2), 3);
        assert_eq!(floor_div(-7, 2), -4);
        assert_eq!(floor_div(-8, 2), -4);
        assert_eq!(floor_div(0, 3), 0);
    }
}
