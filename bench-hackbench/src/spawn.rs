//! The spawn test's driver, written once for every blocking backend.
//!
//! Owns: running `c` spawner tasks that repeat one "create a task that
//! exits at once, wait for it" step until a [`SpawnLimit`], with a start
//! gate and a clean stop (the first failing spawner stops the others).
//! Under `--duration` every spawner checks the deadline (fixed when the
//! gate opens) before each spawn, its first included, so the run ends
//! about one spawn after the deadline however many spawners wait; a
//! spawner that never got to spawn counts zero. `processes` and `threads`
//! run the spawners as OS threads, `green` as green threads; each supplies
//! only its step. Must not: know how a task is created (that is the
//! backend's step), read runtime counters or print.

use crate::backend::{SpawnConfig, SpawnLimit};
use crate::error::BenchError;
use crate::gate::Gate;
use crate::tasks::{joined, start_all, Tasks};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// One spawn-and-wait step. It returns whether it spawned: a step that
/// may have to wait for its turn before it creates the task (`fork`)
/// asks [`Go::on`] again once it has its turn, and returns `Ok(false)`
/// without spawning when the run is over.
pub type SpawnStep = fn(&Go) -> io::Result<bool>;

/// Whether the run still wants spawns: no spawner has failed and the
/// `--duration` deadline, if any, has not passed.
pub struct Go {
    stop: Arc<AtomicBool>,
    /// On [`coarse_now_ns`]'s clock.
    deadline_ns: Option<u64>,
}

impl Go {
    /// `true` while the run still wants spawns.
    pub fn on(&self) -> bool {
        !self.stop.load(Ordering::Relaxed) && self.deadline_ns.is_none_or(|d| coarse_now_ns() < d)
    }
}

/// `CLOCK_MONOTONIC_COARSE` in nanoseconds: the time of the last tick
/// (1–4 ms steps), read in a few ns. `Instant::now` takes ~30 ns in a VM,
/// a few percent of a green spawn + join; the deadline needs no better
/// than a tick. `u64::MAX` (past any deadline) if the clock cannot be read.
fn coarse_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes `ts` only.
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) } != 0 {
        return u64::MAX;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// Spawners waiting at the start gate.
pub struct Spawners<B: Tasks> {
    gate: Arc<Gate>,
    stop: Arc<AtomicBool>,
    /// Set (under `--duration`) before the gate opens.
    deadline: Arc<OnceLock<u64>>,
    limit: SpawnLimit,
    what: String,
    handles: Vec<B::Handle<io::Result<u64>>>,
}

impl<B: Tasks> Spawners<B> {
    /// Starts `cfg.spawners` tasks with `tasks`, each calling `step` until
    /// `cfg.limit` once released, and returns when all wait at the gate.
    /// `what` names the step in errors.
    pub fn start(
        tasks: &B,
        cfg: &SpawnConfig,
        step: SpawnStep,
        what: &str,
    ) -> Result<Spawners<B>, BenchError> {
        let gate = Arc::new(Gate::new(cfg.spawners));
        let stop = Arc::new(AtomicBool::new(false));
        let deadline = Arc::new(OnceLock::new());
        let max = match cfg.limit {
            SpawnLimit::Iterations(n) => n,
            SpawnLimit::Duration(_) => u64::MAX,
        };
        let handles = start_all::<B, _, _>(&gate, 0..cfg.spawners, |i| {
            let (g, s, d) = (Arc::clone(&gate), Arc::clone(&stop), Arc::clone(&deadline));
            tasks.spawn(Some(format!("spawner {i}")), move || {
                spawner(&g, s, &d, max, step)
            })
        })?;
        gate.wait_ready();
        Ok(Spawners {
            gate,
            stop,
            deadline,
            limit: cfg.limit,
            what: what.to_string(),
            handles,
        })
    }

    /// Opens the gate (under `--duration`, with the deadline set: each
    /// spawner stops at it) and joins the spawners: the spawns done by
    /// all, from "go" to the last one ending.
    pub fn run(mut self) -> Result<(u64, Duration), BenchError> {
        let start = Instant::now();
        if let SpawnLimit::Duration(d) = self.limit {
            // The gate's SeqCst release publishes it to every spawner.
            let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            let _ = self.deadline.set(coarse_now_ns().saturating_add(d));
        }
        self.gate.open();
        let mut spawns = 0;
        let mut first_err = None;
        for (i, h) in std::mem::take(&mut self.handles).into_iter().enumerate() {
            match joined(B::join(h), || format!("spawner {i}: {}", self.what)) {
                Ok(n) => spawns += n,
                Err(e) => {
                    self.stop.store(true, Ordering::Relaxed);
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok((spawns, start.elapsed())),
        }
    }
}

impl<B: Tasks> Drop for Spawners<B> {
    /// Spawners dropped without [`Spawners::run`] are released with
    /// "aborted" (a no-op after `run` opened the gate), so none waits forever.
    fn drop(&mut self) {
        self.gate.abort();
    }
}

fn spawner(
    gate: &Gate,
    stop: Arc<AtomicBool>,
    deadline: &OnceLock<u64>,
    max: u64,
    step: SpawnStep,
) -> io::Result<u64> {
    if !gate.arrive() {
        return Ok(0);
    }
    let go = Go {
        stop,
        deadline_ns: deadline.get().copied(),
    };
    let mut n = 0;
    while n < max && go.on() {
        match step(&go) {
            Ok(true) => n += 1,
            Ok(false) => break,
            Err(e) => {
                // Let the other spawners stop too.
                go.stop.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{RuntimeOpts, SpawnConfig};
    use crate::tasks::OsThreads;
    use std::sync::atomic::AtomicU64;

    fn cfg(spawners: usize, limit: SpawnLimit) -> SpawnConfig {
        SpawnConfig {
            spawners,
            limit,
            runtime: RuntimeOpts {
                workers: 1,
                features: None,
                stats: false,
                trace: None,
                io: eevdf_rt::io::IoDriver::Auto,
            },
        }
    }

    /// A slow step (50 ms) with a 20 ms deadline: each spawner starts at
    /// most one, and the run ends after about one step, not one per spawner
    /// in turn.
    #[test]
    fn spawners_stop_at_the_deadline_and_late_ones_do_not_spawn() {
        static SLOW: std::sync::Mutex<()> = std::sync::Mutex::new(());
        static STARTED: AtomicU64 = AtomicU64::new(0);
        /// Serialised like forks from one process: one at a time.
        fn slow(go: &Go) -> io::Result<bool> {
            let _turn = SLOW.lock().unwrap();
            if !go.on() {
                return Ok(false);
            }
            STARTED.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(50));
            Ok(true)
        }
        let c = cfg(16, SpawnLimit::Duration(Duration::from_millis(20)));
        let (spawns, elapsed) = Spawners::start(&OsThreads, &c, slow, "slow")
            .unwrap()
            .run()
            .unwrap();
        assert_eq!(spawns, STARTED.load(Ordering::Relaxed));
        assert!((1..16).contains(&spawns), "{spawns} spawns");
        // 16 steps in turn would take 800 ms; a stop at the deadline ~70 ms.
        assert!(elapsed < Duration::from_millis(400), "{elapsed:?}");
    }

    #[test]
    fn iterations_run_every_spawn_and_an_error_stops_the_others() {
        fn ok(_: &Go) -> io::Result<bool> {
            Ok(true)
        }
        let c = cfg(3, SpawnLimit::Iterations(7));
        let (spawns, _) = Spawners::start(&OsThreads, &c, ok, "ok")
            .unwrap()
            .run()
            .unwrap();
        assert_eq!(spawns, 21);
        fn fails(_: &Go) -> io::Result<bool> {
            Err(io::Error::other("no"))
        }
        let c = cfg(3, SpawnLimit::Duration(Duration::from_secs(60)));
        let e = Spawners::start(&OsThreads, &c, fails, "failing step")
            .unwrap()
            .run()
            .unwrap_err();
        assert!(e.to_string().contains("failing step"), "{e}");
    }
}
