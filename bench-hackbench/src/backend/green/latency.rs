//! Green latency mode: cyclictest-style probes as green threads under a
//! green hackbench load on the same runtime.
//!
//! Owns: one runtime per latency column (`--features` plus the column's
//! switches), what makes `probes`' driver run green (`task::Builder::nice`,
//! optionally `.slice`, `eevdf_rt::sleep_until` to absolute deadlines) and
//! the preemption counters of the probe window (from `Stats`). Must not:
//! compute statistics itself (`latency::ProbeRecorder` does) or reuse a
//! runtime across columns (each column is a fresh runtime, so counters and
//! scheduler state start from zero).

use super::{build_runtime, describe_features, feature_spec, stats_lines, GreenTasks};
use crate::backend::{BackendKind, LatencyBackend, LatencyColumn, LatencyConfig, LatencyRun};
use crate::error::BenchError;
use crate::latency::{nanos, Priority, ProbeResult};
use crate::load::Load;
use crate::probes::{run_probes, ProbeClock, ProbeTasks};
use crate::workload::send_messages;
use eevdf_rt::{JoinHandle, WorkerStats};
use std::time::{Duration, Instant};

/// The green latency backend.
pub struct GreenLatency;

impl LatencyBackend for GreenLatency {
    fn kind(&self) -> BackendKind {
        BackendKind::Green
    }

    fn run(&self, cfg: &LatencyConfig, column: &LatencyColumn) -> Result<LatencyRun, BenchError> {
        let rt = build_runtime(&cfg.load.runtime, column.features.as_deref())?;
        let tasks = GreenTasks {
            rt: &rt,
            probe_slice: column.probe_slice,
            policy: cfg.load.policy.green(),
        };
        let load = Load::start(&tasks, &cfg.load, None, send_messages)?.go();
        let before = rt.stats();
        let probes = run_probes(&tasks, cfg);
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

impl ProbeTasks for GreenTasks<'_> {
    type Clock = GreenClock;

    fn clock(&self) -> GreenClock {
        GreenClock {
            origin: Instant::now(),
        }
    }

    /// A green thread with `task::Builder::nice` (and `.slice` if set).
    fn spawn_probe(
        &self,
        nice: i32,
        body: impl FnOnce(Priority) -> ProbeResult + Send + 'static,
    ) -> Result<JoinHandle<ProbeResult>, BenchError> {
        let mut b = eevdf_rt::task::Builder::new()
            .name(format!("probe nice {nice}"))
            .nice(nice);
        if let Some(s) = self.probe_slice {
            b = b.slice(s);
        }
        self.start(b, move || body(Priority::Applied))
    }
}

/// `Instant` time after `origin`, slept on with `eevdf_rt::sleep_until`
/// (which parks the green thread, not its worker).
#[derive(Clone, Copy, Debug)]
pub struct GreenClock {
    origin: Instant,
}

impl ProbeClock for GreenClock {
    fn now_ns(self) -> u64 {
        nanos(self.origin.elapsed())
    }

    fn sleep_until_ns(self, deadline_ns: u64) {
        eevdf_rt::sleep_until(self.origin + Duration::from_nanos(deadline_ns));
    }
}
