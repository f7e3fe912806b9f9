//! The `threads` backend: OS threads blocking on real fds (rt-tests' `-T`).
//!
//! Owns: what makes the shared drivers run on OS threads: the channels
//! (`transport`'s fds), the probes' priority (`setpriority` per thread) and
//! clock (`clock_nanosleep(TIMER_ABSTIME)` on `CLOCK_MONOTONIC`, like
//! cyclictest), and the spawn step (`std::thread` spawn + join). Must not:
//! reimplement the load skeleton (`load`), the loops (`workload`), the
//! probes' driver (`probes`), the spawners (`spawn`) or the checks (`verify`).

use super::{
    BackendKind, HackbenchConfig, HackbenchRun, LatencyBackend, LatencyColumn, LatencyConfig,
    LatencyRun, SpawnBackend, SpawnConfig, SpawnRun,
};
use crate::error::BenchError;
use crate::latency::{Priority, ProbeResult};
use crate::load::{HackbenchTasks, Load};
use crate::policy::KernelPolicy;
use crate::probes::{run_probes, ProbeClock, ProbeTasks};
use crate::spawn::Spawners;
use crate::tasks::{OsThreads, Tasks};
use crate::transport::make_channels;
use crate::workload::{send_messages, SendFn};
use std::io;
use std::os::fd::OwnedFd;

/// The `threads` backend (all three modes).
pub struct Threads;

impl HackbenchTasks for OsThreads {
    type Writer = OwnedFd;
    type Reader = OwnedFd;

    fn channels(&self, cfg: &HackbenchConfig) -> io::Result<(Vec<OwnedFd>, Vec<OwnedFd>)> {
        Ok(make_channels(cfg.transport, cfg.fds)?
            .into_iter()
            .map(|c| (c.tx, c.rx))
            .unzip())
    }
}

/// A fixed `-l` run with the given sender loop (tests pass broken ones).
pub(crate) fn run_fixed(
    cfg: &HackbenchConfig,
    send: SendFn<OwnedFd>,
) -> Result<HackbenchRun, BenchError> {
    crate::transport::require_fds(cfg.transport, "threads")?;
    // The threads inherit the policy from this one while it starts them.
    let policy = KernelPolicy::for_tasks(cfg.policy)?;
    let ready = Load::start(&OsThreads, cfg, Some(cfg.loops), send);
    drop(policy);
    let load = ready?.go();
    let start = load.start;
    let messages = load.finish()?;
    Ok(HackbenchRun {
        elapsed: start.elapsed(),
        messages,
        details: Vec::new(),
    })
}

impl LatencyBackend for Threads {
    fn kind(&self) -> BackendKind {
        BackendKind::Threads
    }

    fn run(&self, cfg: &LatencyConfig, column: &LatencyColumn) -> Result<LatencyRun, BenchError> {
        column.require_default("threads")?;
        crate::transport::require_fds(cfg.load.transport, "threads")?;
        let load = Load::start(&OsThreads, &cfg.load, None, send_messages)?.go();
        let probes = run_probes(&OsThreads, cfg);
        load.stop();
        let load_result = load.finish();
        let probes = probes?;
        let load_messages = load_result?;
        // SAFETY: PR_GET_TIMERSLACK takes no pointer; it returns the slack.
        let slack_ns = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) };
        let notes = vec![format!(
            "threads probes are SCHED_OTHER threads with nice set by setpriority; \
             timer slack {:.0} us (inherited, as for cyclictest at normal priority: \
             the kernel may fire a wake-up up to that much after its deadline)",
            f64::from(slack_ns.max(0)) / 1e3
        )];
        Ok(LatencyRun {
            probes,
            load_messages,
            notes,
            counters: Vec::new(),
        })
    }
}

impl ProbeTasks for OsThreads {
    type Clock = Monotonic;

    fn clock(&self) -> Monotonic {
        Monotonic
    }

    fn spawn_probe(
        &self,
        nice: i32,
        body: impl FnOnce(Priority) -> ProbeResult + Send + 'static,
    ) -> Result<Self::Handle<ProbeResult>, BenchError> {
        self.spawn(Some(format!("probe nice {nice}")), move || {
            body(set_thread_nice(nice))
        })
    }
}

/// Sets the calling thread's nice level (Linux: `setpriority` on the tid).
pub(crate) fn set_thread_nice(nice: i32) -> Priority {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    // SAFETY: plain syscall on our own thread id.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    if r == 0 {
        return Priority::Applied;
    }
    let e = io::Error::last_os_error();
    let why = match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => format!(
            "setpriority(nice {nice}) failed: {e} (a negative nice needs root or CAP_SYS_NICE)"
        ),
        _ => format!("setpriority(nice {nice}) failed: {e}"),
    };
    Priority::Failed(why)
}

/// `CLOCK_MONOTONIC` (the clock `Instant` uses), slept on with
/// `clock_nanosleep(TIMER_ABSTIME)` as cyclictest does.
#[derive(Clone, Copy, Debug)]
pub struct Monotonic;

impl ProbeClock for Monotonic {
    fn now_ns(self) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    fn sleep_until_ns(self, deadline_ns: u64) {
        let ts = libc::timespec {
            tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
        };
        loop {
            // SAFETY: `ts` is valid; no remaining-time pointer for TIMER_ABSTIME.
            let r = unsafe {
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                )
            };
            if r != libc::EINTR {
                return;
            }
        }
    }
}

impl SpawnBackend for Threads {
    fn kind(&self) -> BackendKind {
        BackendKind::Threads
    }

    fn run(&self, cfg: &SpawnConfig) -> Result<SpawnRun, BenchError> {
        os_spawn_run(cfg, spawn_and_join, "spawning a thread")
    }
}

/// A spawn-test run whose spawners are OS threads (threads, processes).
pub(crate) fn os_spawn_run(
    cfg: &SpawnConfig,
    step: crate::spawn::SpawnStep,
    what: &str,
) -> Result<SpawnRun, BenchError> {
    let (spawns, elapsed) = Spawners::start(&OsThreads, cfg, step, what)?.run()?;
    Ok(SpawnRun {
        spawns,
        elapsed,
        counters: Vec::new(),
        details: Vec::new(),
    })
}

/// One spawn step: a `std::thread` that returns at once, then `join`.
fn spawn_and_join(_: &crate::spawn::Go) -> io::Result<bool> {
    let h = std::thread::Builder::new().spawn(|| {})?;
    h.join()
        .map_err(|_| io::Error::other("spawned thread panicked"))?;
    Ok(true)
}
