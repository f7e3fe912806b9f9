//! The runtime's clock.
//!
//! Owns: one monotonic nanosecond clock (`CLOCK_MONOTONIC` through
//! `Instant`) shared by every worker, so `now` values from different workers
//! compare, and the conversions to and from `Instant`. Must not: be read
//! more than once per context switch on the switch path (DESIGN.md's hot-path
//! rule); callers pass `now` down.

use std::sync::OnceLock;
use std::time::Instant;

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since the process-wide epoch (monotonic).
#[inline]
pub(crate) fn now() -> u64 {
    Instant::now().saturating_duration_since(epoch()).as_nanos() as u64
}

/// An `Instant` as nanoseconds since the epoch (0 for instants before it).
pub(crate) fn from_instant(t: Instant) -> u64 {
    t.saturating_duration_since(epoch()).as_nanos() as u64
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
        let i = Instant::now();
        let ns = from_instant(i);
        assert!(ns >= a);
        assert!(Duration::from_nanos(ns - a) < Duration::from_secs(1));
    }
}
