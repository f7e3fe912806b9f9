//! Calibrated CPU work: a dependency chain of multiplies that the compiler
//! cannot shorten, measured once in iterations per microsecond so that
//! "50 µs of work" means the same amount of work on every runtime.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Burns `iters` iterations of a serial multiply–rotate chain and returns
/// its result (pass it to [`black_box`] or fold it into a checksum so the
/// loop is not removed).
#[inline(never)]
pub fn burn(iters: u64) -> u64 {
    let mut x = black_box(0x9E37_79B9_7F4A_7C15u64);
    for i in 0..black_box(iters) {
        x = (x ^ i).rotate_left(7).wrapping_mul(0x2545_F491_4F6C_DD1D);
    }
    x
}

/// How many [`burn`] iterations take one microsecond on this machine.
#[derive(Clone, Copy, Debug)]
pub struct Calibration {
    iters_per_us: f64,
}

impl Calibration {
    /// Measures [`burn`] on the calling thread: the fastest of several
    /// ~5 ms runs, so that interference from other processes (which can
    /// only slow a run down) does not inflate the unit.
    pub fn measure() -> Calibration {
        // Warm up (frequency, caches), then find a run of about 5 ms.
        let mut iters = 10_000u64;
        loop {
            let t = Instant::now();
            black_box(burn(iters));
            if t.elapsed() >= Duration::from_millis(5) || iters >= 1 << 40 {
                break;
            }
            iters *= 2;
        }
        let best = (0..7)
            .map(|_| {
                let t = Instant::now();
                black_box(burn(iters));
                t.elapsed()
            })
            .min()
            .expect("at least one run");
        let us = best.as_secs_f64() * 1e6;
        Calibration {
            iters_per_us: iters as f64 / us.max(1e-3),
        }
    }

    /// Iterations for `us` microseconds of work (at least one).
    pub fn iters_for_us(&self, us: f64) -> u64 {
        (self.iters_per_us * us).round().max(1.0) as u64
    }

    /// Iterations per microsecond.
    pub fn iters_per_us(&self) -> f64 {
        self.iters_per_us
    }
}

/// `total_us` of work cut into units of `unit_us` with a yield point
/// between units: `full` whole units and, when `unit_us` does not divide
/// `total_us`, one shorter last unit of `rest_us`, so that the units add
/// up to `total_us` exactly (to the nanosecond).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Units {
    /// Whole units of `unit_us`.
    pub full: u64,
    /// The length of each whole unit, µs.
    pub unit_us: f64,
    /// The shorter last unit, µs (0: none).
    pub rest_us: f64,
}

impl Units {
    /// Splits `total_us` into units of `unit_us`; `None` unless both are
    /// finite and 1 ns <= `unit_us` <= `total_us`.
    ///
    /// ```
    /// use examples::work::Units;
    /// let u = Units::split(75.0, 50.0).unwrap();
    /// assert_eq!((u.full, u.rest_us, u.count()), (1, 25.0, 2));
    /// assert_eq!(Units::split(2000.0, 50.0).unwrap().count(), 40);
    /// assert!(Units::split(10.0, 5000.0).is_none());
    /// ```
    pub fn split(total_us: f64, unit_us: f64) -> Option<Units> {
        if !(total_us.is_finite() && unit_us.is_finite() && total_us <= 1e12) {
            return None;
        }
        let total_ns = (total_us * 1e3).round();
        let unit_ns = (unit_us * 1e3).round();
        if !(unit_ns >= 1.0 && unit_ns <= total_ns) {
            return None;
        }
        let (total_ns, unit_ns) = (total_ns as u64, unit_ns as u64);
        Some(Units {
            full: total_ns / unit_ns,
            unit_us: unit_ns as f64 / 1e3,
            rest_us: (total_ns % unit_ns) as f64 / 1e3,
        })
    }

    /// Units in all, the shorter last one included.
    pub fn count(&self) -> u64 {
        self.full + u64::from(self.rest_us > 0.0)
    }

    /// The work in all, µs.
    pub fn total_us(&self) -> f64 {
        self.full as f64 * self.unit_us + self.rest_us
    }
}

/// Per-task event counters, one cache line each, so tasks counting their
/// own progress never share a line; read as a sum from any thread.
pub struct Counters(Box<[Padded]>);

#[repr(align(128))]
#[derive(Default)]
struct Padded(std::sync::atomic::AtomicU64);

impl Counters {
    /// `n` counters at zero.
    pub fn new(n: usize) -> Counters {
        Counters((0..n).map(|_| Padded::default()).collect())
    }

    /// Adds one to counter `i`.
    #[inline]
    pub fn bump(&self, i: usize) {
        self.0[i]
            .0
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The sum of all counters.
    pub fn sum(&self) -> u64 {
        self.0
            .iter()
            .map(|c| c.0.load(std::sync::atomic::Ordering::Relaxed))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::Units;

    #[test]
    fn units_add_up_to_the_total() {
        for (total, unit, full, rest) in [
            (2000.0, 50.0, 40, 0.0),
            (75.0, 50.0, 1, 25.0),
            (10.0, 10.0, 1, 0.0),
            (1000.0, 300.0, 3, 100.0),
            (100.5, 50.0, 2, 0.5),
        ] {
            let u = Units::split(total, unit).unwrap();
            assert_eq!((u.full, u.rest_us), (full, rest), "{total} / {unit}");
            assert!((u.total_us() - total).abs() < 1e-9, "{u:?}");
        }
        // A unit larger than the work, or no unit at all, is refused.
        assert_eq!(Units::split(10.0, 5000.0), None);
        assert_eq!(Units::split(10.0, 0.0), None);
        assert_eq!(Units::split(f64::NAN, 1.0), None);
        assert_eq!(Units::split(10.0, f64::INFINITY), None);
    }
}
