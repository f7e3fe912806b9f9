//! The `green` backend: eevdf-rt green threads, in all three modes.
//!
//! Owns: building one eevdf-rt runtime per run (`--workers`, `--features`,
//! a latency column's features), the `--stats` lines, and the three lookup
//! functions. The modes live in their own modules: [`hackbench`](mod@hackbench) (senders
//! and receivers on the runtime's pipes, sockets, TCP or channels),
//! [`latency`](mod@latency) (green probes under a green hackbench load) and [`spawn`](mod@spawn)
//! (`eevdf_rt::spawn` + `join`). Must not: block a worker inside a green
//! thread (every wait goes through the runtime's green-aware types), or
//! judge counts itself (`verify`).
//!
//! Shared decisions:
//! - The coordinator is the calling OS thread, as rt-tests' parent process
//!   is: it makes the channels, spawns every task with
//!   `task::Builder::spawn_on` (tasks from outside the runtime go to the
//!   idlest worker, so they start spread over the workers), waits at the
//!   start gate ([`crate::gate::Gate`]), reads the clock, opens the gate and
//!   joins. Its waits block only itself, never a worker. The skeletons of
//!   the three modes are the shared drivers (`load`, `probes`, `spawn`),
//!   run on green threads through [`GreenTasks`].
//! - Successful I/O on the runtime's fds is not a preemption point (only a
//!   wait is), so the loops call `eevdf_rt::preempt_point()` once per
//!   message (`endpoint`'s `after_message`) — the green analogue of the kernel's reschedule check on
//!   return from a syscall. It costs one relaxed load when nothing is
//!   pending.

pub(crate) mod endpoint;
pub mod hackbench;
pub(crate) mod latency;
pub(crate) mod spawn;

use super::{LatencyBackend, Missing, RuntimeOpts, SpawnBackend};
use crate::error::BenchError;
use crate::tasks::Tasks;
use eevdf_rt::{JoinHandle, Runtime, Stats};

/// The green latency backend.
pub fn latency() -> Result<Box<dyn LatencyBackend>, Missing> {
    Ok(Box::new(latency::GreenLatency))
}

/// The green spawn backend.
pub fn spawn() -> Result<Box<dyn SpawnBackend>, Missing> {
    Ok(Box::new(spawn::GreenSpawn))
}

/// The feature string a run uses: `--features`, then `extra` (a latency
/// column's or a spawn row's switches) on top, or `None` for the defaults.
pub fn feature_spec(opts: &RuntimeOpts, extra: Option<&str>) -> Option<String> {
    match (opts.features.as_deref(), extra) {
        (None, None) => None,
        (Some(f), None) | (None, Some(f)) => Some(f.to_string()),
        (Some(a), Some(b)) => Some(format!("{a},{b}")),
    }
}

/// The switches that differ from eevdf-rt's defaults ("default" if none),
/// for headers; an invalid spec (rejected earlier by `opts`) prints as is.
pub fn describe_features(spec: Option<&str>) -> String {
    match spec {
        None => "default".to_string(),
        Some(s) => eevdf_rt::sched::Features::parse(s)
            .map(|f| f.diff_from_default())
            .unwrap_or_else(|_| s.to_string()),
    }
}

/// Builds the runtime for one run: `opts.workers` pinned workers and the
/// features of [`feature_spec`]. A configuration the runtime refuses (more
/// than its maximum workers, an unknown feature) is a usage error.
pub fn build_runtime(opts: &RuntimeOpts, extra: Option<&str>) -> Result<Runtime, BenchError> {
    let mut b = eevdf_rt::Builder::new()
        .workers(opts.workers)
        .thread_name("hackbench")
        .io_driver(opts.io);
    if let Some(f) = feature_spec(opts, extra) {
        b = b.features(&f);
    }
    b.build().map_err(|e| match e {
        eevdf_rt::Error::Os { .. } => {
            BenchError::Task(format!("starting the eevdf-rt runtime: {e}"))
        }
        e => BenchError::Usage(format!("eevdf-rt runtime: {e}")),
    })
}

/// Starts `--trace` recording on a runtime built for a hackbench run.
pub fn start_trace(rt: &Runtime, opts: &RuntimeOpts) -> Result<(), BenchError> {
    if opts.trace.is_some() {
        rt.trace_start(TRACE_CAPACITY)
            .map_err(|e| BenchError::Usage(format!("--trace: {e}")))?;
    }
    Ok(())
}

/// Events kept per runtime worker by `--trace` (32 bytes each): the last
/// ones of a run that records more.
pub const TRACE_CAPACITY: usize = 1 << 20;

/// Stops `--trace` recording and writes the file; returns a line for the report.
pub fn save_trace(rt: &Runtime, opts: &RuntimeOpts) -> Result<Option<String>, BenchError> {
    let Some(path) = &opts.trace else {
        return Ok(None);
    };
    let trace = rt.trace_stop();
    trace
        .save(path)
        .map_err(|e| BenchError::io(format!("writing --trace {}", path.display()), e))?;
    Ok(Some(format!(
        "trace: {} events ({} task runs, {} dropped) written to {}",
        trace.len(),
        trace.runs().len(),
        trace.dropped(),
        path.display()
    )))
}

/// `--stats` lines: the runtime's counter table (one column per worker).
pub fn stats_lines(title: &str, stats: &Stats) -> Vec<String> {
    std::iter::once(format!("eevdf-rt stats ({title}):"))
        .chain(stats.to_string().lines().map(|l| format!("  {l}")))
        .collect()
}

/// Green threads on one runtime: what the shared drivers (`load`,
/// `probes`, `spawn`) need to run on the green backend.
#[derive(Clone, Copy)]
pub struct GreenTasks<'rt> {
    /// The runtime every task is spawned on.
    pub rt: &'rt Runtime,
    /// The slice the latency probes request (`None`: the base slice).
    pub probe_slice: Option<std::time::Duration>,
    /// The policy of the tasks [`Tasks::spawn`] starts (the load's senders
    /// and receivers; the probes set their own attributes).
    pub policy: eevdf_rt::sched::Policy,
}

impl<'rt> GreenTasks<'rt> {
    /// Tasks on `rt` whose probes request the base slice.
    pub fn on(rt: &'rt Runtime) -> Self {
        GreenTasks {
            rt,
            probe_slice: None,
            policy: eevdf_rt::sched::Policy::Normal,
        }
    }

    fn start<T: Send + 'static>(
        &self,
        b: eevdf_rt::task::Builder,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<JoinHandle<T>, BenchError> {
        b.spawn_on(self.rt, f)
            .map_err(|e| BenchError::io("spawning a green thread", e))
    }
}

impl Tasks for GreenTasks<'_> {
    type Handle<T: Send + 'static> = JoinHandle<T>;

    fn spawn<T: Send + 'static>(
        &self,
        name: Option<String>,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<JoinHandle<T>, BenchError> {
        let mut b = eevdf_rt::task::Builder::new().policy(self.policy);
        if let Some(name) = name {
            b = b.name(name);
        }
        self.start(b, f)
    }

    fn join<T: Send + 'static>(h: JoinHandle<T>) -> std::thread::Result<T> {
        h.join()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(features: Option<&str>) -> RuntimeOpts {
        RuntimeOpts {
            workers: 1,
            features: features.map(str::to_string),
            stats: false,
            trace: None,
            io: eevdf_rt::io::IoDriver::Auto,
        }
    }

    #[test]
    fn load_tasks_get_the_load_policy() {
        let rt = build_runtime(&opts(None), None).unwrap();
        for policy in [
            eevdf_rt::sched::Policy::Normal,
            eevdf_rt::sched::Policy::Batch,
        ] {
            let tasks = GreenTasks {
                policy,
                ..GreenTasks::on(&rt)
            };
            let h = tasks
                .spawn(Some("load".into()), || eevdf_rt::current().stats().policy)
                .unwrap();
            assert_eq!(GreenTasks::join(h).unwrap(), policy);
        }
    }

    #[test]
    fn features_combine_and_describe() {
        assert_eq!(feature_spec(&opts(None), None), None);
        assert_eq!(
            feature_spec(&opts(Some("NO_WAKE_IDLE")), Some("TICK_ELIGIBLE")).as_deref(),
            Some("NO_WAKE_IDLE,TICK_ELIGIBLE")
        );
        assert_eq!(describe_features(None), "default");
        assert_eq!(describe_features(Some("RUN_TO_PARITY")), "default");
        assert_eq!(
            describe_features(Some("TICK_ELIGIBLE")),
            "TICK_ELIGIBLE".to_string()
        );
        assert!(matches!(
            build_runtime(&opts(Some("NOPE")), None),
            Err(BenchError::Usage(_))
        ));
    }
}
