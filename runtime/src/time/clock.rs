//! The runtime's clock.
//!
//! Owns: one monotonic nanosecond clock shared by every worker, so `now`
//! values from different workers compare, and the conversion from
//! `Instant`. Must not: be read more than once per context switch on the
//! switch path (`docs/architecture.md`'s hot-path rule); callers pass `now` down.
//!
//! # Sources
//!
//! * **TSC** (x86-64): `rdtsc` scaled to nanoseconds with one 64×64→128-bit
//!   multiply and a shift, about 8–10 ns instead of the ~25 ns of a vDSO
//!   `clock_gettime` on a KVM guest. Used only where it is as good as the
//!   kernel's own clock: the CPU reports `constant_tsc` (the rate does not
//!   follow frequency changes) and `nonstop_tsc` (it keeps counting in deep
//!   idle states), and the kernel itself uses `tsc` as its clocksource (it
//!   switches away from the TSC when it finds it unsynchronised between
//!   CPUs or unstable, so this is also the cross-CPU consistency check).
//! * **`CLOCK_MONOTONIC`** through the vDSO everywhere else, or when the
//!   environment variable `EEVDF_RT_CLOCK=monotonic` asks for it.
//!
//! # Calibration and its error
//!
//! The first use pairs a TSC read with a `CLOCK_MONOTONIC` read, waits
//! [`CALIBRATION`] of real time, pairs them again, and derives
//!
//! ```text
//! mult = (ns1 − ns0) · 2³² / (tsc1 − tsc0)
//! now  = ns0 + ((tsc − tsc0) · mult) >> 32
//! ```
//!
//! Each pair is taken so that the TSC read sits between two clock reads,
//! and the pair with the narrowest bracket is kept, so the rate's relative
//! error is about (bracket width) / [`CALIBRATION`], a few 10⁻⁵. The runtime
//! never compares its clock with an absolute outside clock over long
//! spans: deadlines are either a duration added to a fresh reading (a
//! sleep) or converted from `Instant`s relative to a fresh pair of reads
//! ([`from_instant`]), so that error scales durations by the same few
//! 10⁻⁵ (30 ns on a 1 ms sleep), never accumulates.

use crate::sys;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long the TSC rate is measured against `CLOCK_MONOTONIC`.
const CALIBRATION: Duration = Duration::from_millis(2);

/// The affine map from TSC ticks to `CLOCK_MONOTONIC` nanoseconds.
#[derive(Clone, Copy, Debug)]
struct TscScale {
    tsc0: u64,
    ns0: u64,
    /// Nanoseconds per tick, as a 32.32 fixed-point number.
    mult: u64,
}

impl TscScale {
    #[inline]
    fn to_ns(self, tsc: u64) -> u64 {
        let d = tsc.wrapping_sub(self.tsc0);
        self.ns0
            .wrapping_add(((d as u128 * self.mult as u128) >> 32) as u64)
    }
}

/// The clock source chosen for this process (fixed at first use).
static SOURCE: OnceLock<Option<TscScale>> = OnceLock::new();

/// Nanoseconds on the runtime's monotonic clock.
#[inline]
pub(crate) fn now() -> u64 {
    match SOURCE.get() {
        Some(Some(scale)) => scale.to_ns(sys::tsc()),
        Some(None) => sys::monotonic_ns(),
        None => init_and_read(),
    }
}

#[cold]
fn init_and_read() -> u64 {
    init();
    now()
}

/// Chooses the clock source and calibrates it (idempotent; the runtime
/// calls it when it is built, so no switch pays for the calibration).
pub(crate) fn init() {
    SOURCE.get_or_init(|| {
        if std::env::var_os("EEVDF_RT_CLOCK").is_some_and(|v| v == "monotonic") {
            return None;
        }
        tsc_is_reliable().then(calibrate)
    });
}

/// Which source the clock uses: `"tsc"` or `"monotonic"`.
pub(crate) fn source() -> &'static str {
    init();
    match SOURCE.get() {
        Some(Some(_)) => "tsc",
        _ => "monotonic",
    }
}

/// Whether the TSC is invariant and the kernel trusts it as its clocksource.
fn tsc_is_reliable() -> bool {
    if !sys::has_tsc() {
        return false;
    }
    let clocksource =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    if clocksource.trim() != "tsc" {
        return false;
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or_default();
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    has("constant_tsc") && has("nonstop_tsc")
}

/// A (tsc, ns) pair whose TSC read is bracketed by two clock reads, with
/// the bracket's width; the narrowest of a few tries.
fn pair() -> (u64, u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..16 {
        let a = sys::monotonic_ns();
        let t = sys::tsc();
        let b = sys::monotonic_ns();
        if b - a < best.2 {
            best = (t, a + (b - a) / 2, b - a);
        }
    }
    best
}

fn calibrate() -> TscScale {
    let (tsc0, ns0, _) = pair();
    let until = ns0 + CALIBRATION.as_nanos() as u64;
    while sys::monotonic_ns() < until {
        std::hint::spin_loop();
    }
    let (tsc1, ns1, _) = pair();
    let ticks = tsc1.wrapping_sub(tsc0).max(1);
    let mult = (((ns1 - ns0) as u128) << 32) / ticks as u128;
    TscScale {
        tsc0,
        ns0,
        mult: mult.min(u64::MAX as u128) as u64,
    }
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

    /// Whatever the source, the clock tracks `CLOCK_MONOTONIC`: over 20 ms
    /// the two advance by the same amount within 1% (a wrong TSC scale
    /// would be off by its calibration error or far more).
    #[test]
    fn tracks_clock_monotonic() {
        let (c0, m0) = (now(), sys::monotonic_ns());
        std::thread::sleep(Duration::from_millis(20));
        let (c1, m1) = (now(), sys::monotonic_ns());
        let (dc, dm) = ((c1 - c0) as f64, (m1 - m0) as f64);
        assert!(
            (dc / dm - 1.0).abs() < 0.01,
            "clock {dc} ns vs monotonic {dm} ns"
        );
        // and it reads the same time, not just the same rate
        let off = now() as i128 - sys::monotonic_ns() as i128;
        assert!(off.abs() < 1_000_000, "offset {off} ns");
        assert!(["tsc", "monotonic"].contains(&source()));
    }

    #[test]
    fn scale_is_affine() {
        let s = TscScale {
            tsc0: 1_000,
            ns0: 5_000,
            mult: 1 << 31, // 0.5 ns per tick
        };
        assert_eq!(s.to_ns(1_000), 5_000);
        assert_eq!(s.to_ns(3_000), 6_000);
    }
}
