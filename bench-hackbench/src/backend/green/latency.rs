//! Green latency mode: cyclictest-style probes as green threads under a
//! green hackbench load on the same runtime.
//!
//! Owns: one runtime per latency column (`--features` plus the column's
//! switches), the green probes (`task::Builder::nice`, optionally
//! `.slice`, `eevdf_rt::sleep_until` to absolute deadlines) and the
//! preemption counters of the probe window (from `Stats`). Must not:
//! compute statistics itself (`latency::ProbeRecorder` does) or reuse a
//! runtime across columns (each column is a fresh runtime, so counters and
//! scheduler state start from zero).

use super::gate::GreenGate;
use super::hackbench::{send_messages, Load};
use super::{build_runtime, describe_features, feature_spec, joined, stats_lines};
use crate::backend::{BackendKind, LatencyBackend, LatencyColumn, LatencyConfig, LatencyRun};
use crate::error::BenchError;
use crate::latency::{Priority, ProbeRecorder, ProbeResult, Schedule};
use eevdf_rt::{Runtime, WorkerStats};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The green latency backend.
pub struct GreenLatency;

impl LatencyBackend for GreenLatency {
    fn kind(&self) -> BackendKind {
        BackendKind::Green
    }

    fn run(&self, cfg: &LatencyConfig, column: &LatencyColumn) -> Result<LatencyRun, BenchError> {
        let rt = build_runtime(&cfg.load.runtime, column.features.as_deref())?;
        let load = Load::start(&rt, &cfg.load, None, send_messages)?;
        let before = rt.stats();
        let probes = run_probes(&rt, cfg, column.probe_slice);
        let window = rt.stats().since(&before);
        load.stop();
        let load_result = load.finish();
        let probes = probes?;
        let load_messages = load_result?;
        let spec = feature_spec(&cfg.load.runtime, column.features.as_deref());
        let mut notes = vec![format!(
            "green probes: eevdf-rt green threads with task::Builder::nice, slice {}, \
             sleeping with eevdf_rt::sleep_until; {} workers, features: {}",
            match column.probe_slice {
                Some(s) => format!("{} us (custom)", s.as_micros()),
                None => "the base slice".to_string(),
            },
            rt.workers(),
            describe_features(spec.as_deref())
        )];
        if cfg.load.runtime.stats {
            notes.extend(stats_lines("the probes' window", &window));
        }
        Ok(LatencyRun {
            probes,
            load_messages,
            notes,
            counters: preemption_counters(&window.total()),
        })
    }
}

/// The counters the latency table prints per column, over the probes'
/// window (all workers): involuntary switches and their causes.
pub fn preemption_counters(t: &WorkerStats) -> Vec<(String, u64)> {
    vec![
        ("preemptions".to_string(), t.preemptions),
        ("tick preemptions".to_string(), t.tick_preemptions),
        ("wakeup preemptions".to_string(), t.wakeup_preemptions),
        ("context switches".to_string(), t.context_switches),
    ]
}

/// Runs one green probe per nice level and waits for all of them.
fn run_probes(
    rt: &Runtime,
    cfg: &LatencyConfig,
    slice: Option<Duration>,
) -> Result<Vec<ProbeResult>, BenchError> {
    let gate = Arc::new(GreenGate::new(cfg.nice_levels.len()));
    let origin = Instant::now();
    // Nanoseconds from `origin` to the probes' common base, set at "go".
    let base_ns = Arc::new(AtomicU64::new(0));
    let interval_ns = nanos(cfg.interval);
    let duration_ns = nanos(cfg.duration);
    let mut handles = Vec::with_capacity(cfg.nice_levels.len());
    for &nice in &cfg.nice_levels {
        let (g, base_ns) = (Arc::clone(&gate), Arc::clone(&base_ns));
        let mut b = eevdf_rt::task::Builder::new()
            .name(format!("probe nice {nice}"))
            .nice(nice);
        if let Some(s) = slice {
            b = b.slice(s);
        }
        let h = b.spawn_on(rt, move || {
            let mut rec = ProbeRecorder::new();
            if !g.arrive() {
                return Ok(rec.finish(nice, Priority::Applied));
            }
            let base = origin + Duration::from_nanos(base_ns.load(Ordering::Acquire));
            let mut schedule = Schedule::new(interval_ns, duration_ns);
            while let Some(offset) = schedule.next_deadline() {
                let deadline = base + Duration::from_nanos(offset);
                eevdf_rt::sleep_until(deadline);
                let now = Instant::now();
                rec.record(nanos(now.saturating_duration_since(deadline)));
                rec.add_overruns(schedule.advance(nanos(now.saturating_duration_since(base))));
            }
            Ok(rec.finish(nice, Priority::Applied))
        });
        match h {
            Ok(h) => handles.push(h),
            Err(e) => {
                gate.abort();
                handles.into_iter().for_each(|h| drop(h.join()));
                return Err(BenchError::io(format!("spawning the nice {nice} probe"), e));
            }
        }
    }
    gate.wait_ready();
    base_ns.store(nanos(origin.elapsed()), Ordering::Release);
    gate.open();
    handles
        .into_iter()
        .zip(&cfg.nice_levels)
        .map(|(h, nice)| joined(h.join(), || format!("the nice {nice} probe")))
        .collect()
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
