//! The runtime's clock.
//!
//! Owns: one monotonic nanosecond clock (`CLOCK_MONOTONIC`, the clock
//! `Instant` uses) shared by every worker, so `now` values from different
//! workers compare, and the conversion from `Instant`. Must not: be read
//! more than once per context switch on the switch path (docs/architecture.md's
//! hot-path rule); callers pass `now` down.

use crate::sys;
use std::time::Instant;

/// Nanoseconds on the monotonic clock.
#[inline]
pub(crate) fn now() -> u64 {
    sys::monotonic_ns()
}

/// An `Instant` on the runtime's clock (exact up to the few ns between the
/// two reads it takes; saturates at 0).
pub(crate) fn from_instant(t: Instant) -> u64 {
    let (ref_i, ref_ns) = (Instant::now(), now());
    if t >= ref_i {
        ref_ns.saturating_add((t - ref_i).as_nanos().min(u64::MAX as u128) as u64)
    } else {
        ref_ns.saturating_sub((ref_i - t).as_nanos().min(u64::MAX as u128) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn monotonic_and_convertible() {
        let a = now();
        let b = now();
        assert!(b >= a);
        let i = Instant::now() + Duration::from_millis(5);
        let ns = from_instant(i);
        let diff = ns as i128 - (now() as i128 + 5_000_000);
        assert!(diff.abs() < 1_000_000, "{diff}");
        assert!(from_instant(Instant::now() - Duration::from_millis(1)) < now());
    }
}
