//! The spawn test's driver for OS-thread spawners.
//!
//! Owns: running `c` spawner threads that repeat one "create a task that
//! exits at once, wait for it" step until a [`SpawnLimit`], with a start
//! barrier and a clean stop, and turning that into a [`SpawnRun`]. The
//! `processes` and `threads` backends supply only the step. Must not: know
//! how a task is created (that is the backend's step) or print anything.

use crate::backend::{SpawnConfig, SpawnLimit, SpawnRun};
use crate::error::BenchError;
use crate::gate::Gate;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// One spawn-and-wait step.
pub type SpawnStep = fn() -> io::Result<()>;

/// Runs `cfg.spawners` OS threads, each calling `step` until `cfg.limit`
/// (or until another spawner fails). `what` names the step in errors.
pub fn run_os_spawners(
    cfg: &SpawnConfig,
    step: SpawnStep,
    what: &str,
) -> Result<SpawnRun, BenchError> {
    let gate = Arc::new(Gate::new());
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::with_capacity(cfg.spawners);
    for i in 0..cfg.spawners {
        let (g, s, limit) = (Arc::clone(&gate), Arc::clone(&stop), cfg.limit);
        let spawned = std::thread::Builder::new()
            .name(format!("spawner-{i}"))
            .spawn(move || spawner(&g, &s, limit, step));
        match spawned {
            Ok(h) => handles.push(h),
            Err(e) => {
                gate.abort();
                for h in handles {
                    let _ = h.join();
                }
                return Err(BenchError::io("starting a spawner thread", e));
            }
        }
    }
    gate.wait_ready(cfg.spawners);
    let start = Instant::now();
    gate.open();
    if let SpawnLimit::Duration(d) = cfg.limit {
        std::thread::sleep(d);
        stop.store(true, Ordering::Relaxed);
    }
    let mut spawns = 0;
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(n)) => spawns += n,
            Ok(Err(e)) => {
                stop.store(true, Ordering::Relaxed);
                first_err.get_or_insert(BenchError::io(what, e));
            }
            Err(_) => {
                stop.store(true, Ordering::Relaxed);
                first_err.get_or_insert(BenchError::Task("a spawner thread panicked".into()));
            }
        }
    }
    let elapsed = start.elapsed();
    match first_err {
        Some(e) => Err(e),
        None => Ok(SpawnRun {
            spawns,
            elapsed,
            counters: Vec::new(),
            details: Vec::new(),
        }),
    }
}

fn spawner(gate: &Gate, stop: &AtomicBool, limit: SpawnLimit, step: SpawnStep) -> io::Result<u64> {
    if !gate.arrive() {
        return Ok(0);
    }
    let max = match limit {
        SpawnLimit::Iterations(n) => n,
        SpawnLimit::Duration(_) => u64::MAX,
    };
    let mut n = 0;
    while n < max && !stop.load(Ordering::Relaxed) {
        if let Err(e) = step() {
            // Let the other spawners stop too.
            stop.store(true, Ordering::Relaxed);
            return Err(e);
        }
        n += 1;
    }
    Ok(n)
}
