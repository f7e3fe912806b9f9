//! The latency probes' driver, written once for every blocking backend
//! (`threads`, `green`).
//!
//! Owns: starting one probe task per nice level, holding them at a
//! [`Gate`], giving them one common base time at "go", each probe's loop
//! (sleep to the next absolute deadline, record how late it woke, skip
//! missed periods) and joining them. A backend supplies only
//! [`ProbeTasks`]: how to start a task at a nice level and its clock
//! ([`ProbeClock`]). Must not: compute statistics (`latency` does), set
//! priorities itself, or know about the load running beside the probes.

use crate::backend::LatencyConfig;
use crate::error::BenchError;
use crate::gate::Gate;
use crate::latency::{nanos, Priority, ProbeRecorder, ProbeResult, Schedule};
use crate::tasks::{panic_message, start_all, Tasks};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A monotonic clock in nanoseconds and an absolute sleep on it.
pub trait ProbeClock: Copy + Send + 'static {
    /// Nanoseconds since the clock's origin.
    fn now_ns(self) -> u64;
    /// Sleeps the calling task until `now_ns() >= deadline_ns`.
    fn sleep_until_ns(self, deadline_ns: u64);
}

/// A backend that can run latency probes.
pub trait ProbeTasks: Tasks {
    /// The probes' clock.
    type Clock: ProbeClock;

    /// The clock the probes and the coordinator share.
    fn clock(&self) -> Self::Clock;

    /// Starts a probe task at `nice`: it runs `body` with what became of
    /// the requested priority.
    fn spawn_probe(
        &self,
        nice: i32,
        body: impl FnOnce(Priority) -> ProbeResult + Send + 'static,
    ) -> Result<Self::Handle<ProbeResult>, BenchError>;
}

/// Runs one probe per `cfg.nice_levels` entry and waits for all of them;
/// the results are in `nice_levels` order.
pub fn run_probes<B: ProbeTasks>(
    tasks: &B,
    cfg: &LatencyConfig,
) -> Result<Vec<ProbeResult>, BenchError> {
    let gate = Arc::new(Gate::new(cfg.nice_levels.len()));
    let clock = tasks.clock();
    // The probes' common base on `clock`, set at "go".
    let base_ns = Arc::new(AtomicU64::new(0));
    let (interval_ns, duration_ns) = (nanos(cfg.interval), nanos(cfg.duration));
    let handles = start_all::<B, _, _>(&gate, cfg.nice_levels.iter().copied(), |nice| {
        let (g, base_ns) = (Arc::clone(&gate), Arc::clone(&base_ns));
        tasks.spawn_probe(nice, move |priority| {
            let mut rec = ProbeRecorder::new();
            if g.arrive() {
                let base = base_ns.load(Ordering::Acquire);
                probe(
                    &mut rec,
                    clock,
                    base,
                    Schedule::new(interval_ns, duration_ns),
                );
            }
            rec.finish(nice, priority)
        })
    })?;
    gate.wait_ready();
    base_ns.store(clock.now_ns(), Ordering::Release);
    gate.open();
    handles
        .into_iter()
        .zip(&cfg.nice_levels)
        .map(|(h, nice)| {
            B::join(h).map_err(|p| {
                BenchError::Task(format!("the nice {nice} probe: {}", panic_message(&*p)))
            })
        })
        .collect()
}

/// One probe's loop: sleeps to each deadline of `schedule` (after
/// `base_ns` on `clock`) and records how late it woke.
fn probe(rec: &mut ProbeRecorder, clock: impl ProbeClock, base_ns: u64, mut schedule: Schedule) {
    while let Some(offset) = schedule.next_deadline() {
        let deadline = base_ns + offset;
        clock.sleep_until_ns(deadline);
        let now = clock.now_ns();
        rec.record(now.saturating_sub(deadline));
        rec.add_overruns(schedule.advance(now.saturating_sub(base_ns)));
    }
}
