//! The harness of the adversarial stress tests (`sync_adversarial.rs`,
//! `wake_adversarial.rs`): seeded runs over rotating feature sets and
//! worker counts, each under a watchdog that aborts with the seed and the
//! configuration on a hang, and random disturbances (hand-offs, nice and
//! slice changes, yields, sleeps).
//!
//! Env: ADV_ITERS (iterations per test, default 4), ADV_SEED (base seed,
//! default 1), ADV_FEATURES (one feature string; default: rotate through
//! [`FEATURES`]), ADV_WATCHDOG_SECS (default 60), ADV_HANG_WAIT=1 (on a
//! hang, print and sleep instead of aborting, so a debugger can attach).

use super::{burn, Rng};
use eevdf_rt::{Builder, Runtime};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const FEATURES: &[&str] = &[
    "default",
    "NO_DELAY_DEQUEUE",
    "NO_TTWU_QUEUE",
    "kernel",
    "NO_WAKEUP_PREEMPTION",
    "NO_TTWU_QUEUE_DEFAULT,NO_WA_SYNC",
];

pub fn env_u64(k: &str, d: u64) -> u64 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

pub struct Watchdog {
    done: Arc<AtomicBool>,
}
impl Watchdog {
    pub fn start(what: String) -> Self {
        let secs = env_u64("ADV_WATCHDOG_SECS", 60);
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(secs) {
                if d.load(Acquire) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // straight to fd 2: the harness's capture (which would swallow
            // an eprintln! here) dies with the abort
            let _ = writeln!(
                std::io::stderr(),
                "\n*** HANG (lost wakeup?): {what} did not finish within {secs} s (pid {})",
                std::process::id()
            );
            if std::env::var("ADV_HANG_WAIT").is_ok() {
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            std::process::abort();
        });
        Watchdog { done }
    }
}
impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Release);
    }
}

/// Random disturbance from inside a green thread (from an OS thread only
/// the sleeps/spins apply).
pub fn chaos(rng: &mut Rng, green: bool) {
    match rng.below(400) {
        0 => std::thread::sleep(Duration::from_millis(3 + rng.below(8))), // hand-off
        1 => burn(Duration::from_millis(3 + rng.below(8))),
        2..=9 if green => {
            let _ = eevdf_rt::set_nice(rng.below(11) as i32 - 5);
        }
        10..=17 if green => {
            let _ = eevdf_rt::set_slice(Duration::from_micros(100 + rng.below(3000)));
        }
        18..=50 if green => eevdf_rt::yield_now(),
        51..=55 if green => eevdf_rt::sleep(Duration::from_micros(rng.below(300))),
        56..=60 => std::thread::yield_now(),
        _ => {}
    }
}

#[allow(dead_code)]
pub struct Cfg {
    pub seed: u64,
    pub features: String,
    pub workers: usize,
}

/// Runs `body` for every iteration under a watchdog, with a fresh runtime.
pub fn each(name: &str, body: impl Fn(&Runtime, &Cfg)) {
    each_with(name, |b, _| b, body)
}

/// [`each`], with `tweak` adjusting the builder (seeded).
pub fn each_with(
    name: &str,
    tweak: impl Fn(Builder, &mut Rng) -> Builder,
    body: impl Fn(&Runtime, &Cfg),
) {
    let iters = env_u64("ADV_ITERS", 4);
    let base = env_u64("ADV_SEED", 1);
    let fixed = std::env::var("ADV_FEATURES").ok();
    for it in 0..iters {
        let seed = base.wrapping_add(it);
        let features = fixed
            .clone()
            .unwrap_or_else(|| FEATURES[(seed as usize) % FEATURES.len()].to_string());
        let workers = 2 + (seed % 3) as usize;
        let cfg = Cfg {
            seed,
            features: features.clone(),
            workers,
        };
        let what = format!("{name} seed={seed} features={features} workers={workers}");
        let _wd = Watchdog::start(what.clone());
        let t0 = Instant::now();
        let b = Builder::new().workers(workers).features(&features);
        let rt = tweak(b, &mut Rng::new(seed ^ 0xb0b))
            .build()
            .unwrap_or_else(|e| panic!("{what}: build: {e:?}"));
        body(&rt, &cfg);
        drop(rt);
        eprintln!("ok {what} in {:?}", t0.elapsed());
    }
}
