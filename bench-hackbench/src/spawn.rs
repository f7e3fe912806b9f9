//! The spawn test's driver, written once for every blocking backend.
//!
//! Owns: running `c` spawner tasks that repeat one "create a task that
//! exits at once, wait for it" step until a [`SpawnLimit`], with a start
//! gate and a clean stop (the first failing spawner stops the others).
//! `processes` and `threads` run the spawners as OS threads, `green` as
//! green threads; each supplies only its step. Must not: know how a task
//! is created (that is the backend's step), read runtime counters or print.

use crate::backend::{SpawnConfig, SpawnLimit};
use crate::error::BenchError;
use crate::gate::Gate;
use crate::tasks::{joined, start_all, Tasks};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One spawn-and-wait step.
pub type SpawnStep = fn() -> io::Result<()>;

/// Spawners waiting at the start gate.
pub struct Spawners<B: Tasks> {
    gate: Arc<Gate>,
    stop: Arc<AtomicBool>,
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
        let max = match cfg.limit {
            SpawnLimit::Iterations(n) => n,
            SpawnLimit::Duration(_) => u64::MAX,
        };
        let handles = start_all::<B, _, _>(&gate, 0..cfg.spawners, |i| {
            let (g, s) = (Arc::clone(&gate), Arc::clone(&stop));
            tasks.spawn(Some(format!("spawner {i}")), move || {
                spawner(&g, &s, max, step)
            })
        })?;
        gate.wait_ready();
        Ok(Spawners {
            gate,
            stop,
            limit: cfg.limit,
            what: what.to_string(),
            handles,
        })
    }

    /// Opens the gate, stops the spawners after a `--duration` limit and
    /// joins them: the spawns done by all, from "go" to the last one ending.
    pub fn run(mut self) -> Result<(u64, Duration), BenchError> {
        let start = Instant::now();
        self.gate.open();
        if let SpawnLimit::Duration(d) = self.limit {
            std::thread::sleep(d);
            self.stop.store(true, Ordering::Relaxed);
        }
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

fn spawner(gate: &Gate, stop: &AtomicBool, max: u64, step: SpawnStep) -> io::Result<u64> {
    if !gate.arrive() {
        return Ok(0);
    }
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
