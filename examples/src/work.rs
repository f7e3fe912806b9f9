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
