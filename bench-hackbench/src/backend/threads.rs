//! The `threads` backend: OS threads blocking on real fds (rt-tests' `-T`).
//!
//! Owns: starting and stopping a threads hackbench (fixed `-l` loops, or
//! open-ended as latency-mode load), the OS-thread latency probes
//! (`setpriority` per thread, `clock_nanosleep(TIMER_ABSTIME)`), and the
//! spawn step (`std::thread` spawn + join). Must not: reimplement the
//! sender/receiver loops (`workload`), the checks (`verify`) or the probe
//! statistics (`latency`).

use super::{
    BackendKind, HackbenchBackend, HackbenchConfig, HackbenchRun, LatencyBackend, LatencyColumn,
    LatencyConfig, LatencyRun, SpawnBackend, SpawnConfig, SpawnRun,
};
use crate::error::BenchError;
use crate::gate::Gate;
use crate::latency::{Priority, ProbeRecorder, ProbeResult, Schedule};
use crate::transport::make_channels;
use crate::verify::{verify_groups, GroupOutcome, Received};
use crate::workload::{receive_messages, send_messages, Loops, SendFn};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Stack size for hackbench and probe threads: their loops need little.
const TASK_STACK: usize = 256 * 1024;

/// The `threads` backend (all three modes).
pub struct Threads;

impl HackbenchBackend for Threads {
    fn kind(&self) -> BackendKind {
        BackendKind::Threads
    }

    fn run(&self, cfg: &HackbenchConfig) -> Result<HackbenchRun, BenchError> {
        run_fixed(cfg, send_messages)
    }
}

/// A fixed `-l` run with the given sender loop (tests pass broken ones).
pub(crate) fn run_fixed(cfg: &HackbenchConfig, send: SendFn) -> Result<HackbenchRun, BenchError> {
    let load = Load::start(cfg, Some(cfg.loops), send)?;
    let start = load.start;
    let messages = load.finish()?;
    Ok(HackbenchRun {
        elapsed: start.elapsed(),
        messages,
        details: Vec::new(),
    })
}

/// A threads hackbench whose tasks have been released from the start gate.
pub(crate) struct Load {
    /// When the gate opened.
    pub start: Instant,
    stop: Arc<AtomicBool>,
    expected_loops: Option<u64>,
    datasize: usize,
    /// Per group: sender and receiver threads.
    groups: Vec<GroupHandles>,
}

struct GroupHandles {
    senders: Vec<JoinHandle<io::Result<u64>>>,
    receivers: Vec<JoinHandle<io::Result<Received>>>,
}

impl Load {
    /// Creates every channel and thread, waits until all threads are at the
    /// gate, then opens it. `loops = None` runs until [`Load::stop`].
    pub(crate) fn start(
        cfg: &HackbenchConfig,
        loops: Option<u64>,
        send: SendFn,
    ) -> Result<Load, BenchError> {
        crate::transport::require_fds(cfg.transport, "threads")?;
        let gate = Arc::new(Gate::new());
        let stop = Arc::new(AtomicBool::new(false));
        let mut groups = Vec::with_capacity(cfg.groups);
        let mut spawned = 0usize;
        let result = (|| {
            for _ in 0..cfg.groups {
                let chans = make_channels(cfg.transport, cfg.fds)
                    .map_err(|e| BenchError::io("creating channels", e))?;
                let mut g = GroupHandles {
                    senders: Vec::with_capacity(cfg.fds),
                    receivers: Vec::with_capacity(cfg.fds),
                };
                let mut writers = Vec::with_capacity(cfg.fds);
                for c in chans {
                    writers.push(c.tx);
                    let gate = Arc::clone(&gate);
                    let mut buf = vec![0u8; cfg.datasize];
                    let rx = c.rx;
                    let h = spawn_task(move || {
                        if !gate.arrive() {
                            return Ok(Received::default());
                        }
                        receive_messages(rx.as_fd(), &mut buf)
                    })?;
                    g.receivers.push(h);
                    spawned += 1;
                }
                let writers: Arc<Vec<OwnedFd>> = Arc::new(writers);
                for _ in 0..cfg.fds {
                    let (gate, stop, writers) =
                        (Arc::clone(&gate), Arc::clone(&stop), Arc::clone(&writers));
                    let msg = vec![0x5au8; cfg.datasize];
                    let h = spawn_task(move || {
                        let fds: Vec<BorrowedFd<'_>> = writers.iter().map(|f| f.as_fd()).collect();
                        if !gate.arrive() {
                            return Ok(0);
                        }
                        let l = match loops {
                            Some(n) => Loops::Fixed(n),
                            None => Loops::UntilStopped(&stop),
                        };
                        send(&fds, &msg, l)
                        // `writers` drops here; the last sender's drop closes
                        // the fds and the receivers see end of file.
                    })?;
                    g.senders.push(h);
                    spawned += 1;
                }
                groups.push(g);
            }
            Ok(())
        })();
        if let Err(e) = result {
            gate.abort();
            for g in groups {
                g.senders.into_iter().for_each(|h| drop(h.join()));
                g.receivers.into_iter().for_each(|h| drop(h.join()));
            }
            return Err(e);
        }
        gate.wait_ready(spawned);
        let start = Instant::now();
        gate.open();
        Ok(Load {
            start,
            stop,
            expected_loops: loops,
            datasize: cfg.datasize,
            groups,
        })
    }

    /// Asks an open-ended load's senders to stop after their current loop.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Joins every thread and checks every group; returns the messages verified.
    pub(crate) fn finish(self) -> Result<u64, BenchError> {
        /// `what` names the task ("group 0 sender 3"), `op` its I/O.
        fn joined<T>(
            h: JoinHandle<io::Result<T>>,
            what: String,
            op: &str,
        ) -> Result<T, BenchError> {
            match h.join() {
                Ok(r) => r.map_err(|e| BenchError::io(format!("{what}: {op}"), e)),
                Err(_) => Err(BenchError::Task(format!("{what} panicked"))),
            }
        }
        let groups = self
            .groups
            .into_iter()
            .enumerate()
            .map(|(gi, g)| GroupOutcome {
                sent: (g.senders.into_iter().enumerate())
                    .map(|(i, h)| joined(h, format!("group {gi} sender {i}"), "write"))
                    .collect(),
                received: (g.receivers.into_iter().enumerate())
                    .map(|(i, h)| joined(h, format!("group {gi} receiver {i}"), "read"))
                    .collect(),
            })
            .collect();
        verify_groups(groups, self.datasize, self.expected_loops)
    }
}

fn spawn_task<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>, BenchError> {
    std::thread::Builder::new()
        .stack_size(TASK_STACK)
        .spawn(f)
        .map_err(|e| BenchError::io("starting a thread", e))
}

impl LatencyBackend for Threads {
    fn kind(&self) -> BackendKind {
        BackendKind::Threads
    }

    fn run(&self, cfg: &LatencyConfig, column: &LatencyColumn) -> Result<LatencyRun, BenchError> {
        if column.features.is_some() || column.probe_slice.is_some() {
            return Err(BenchError::Usage(
                "threads latency probes have no feature sets or slices (green only)".into(),
            ));
        }
        let load = Load::start(&cfg.load, None, send_messages)?;
        let probes = run_probes(cfg);
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

/// Runs one probe thread per nice level and waits for all of them.
fn run_probes(cfg: &LatencyConfig) -> Result<Vec<ProbeResult>, BenchError> {
    let gate = Arc::new(Gate::new());
    let base = Arc::new(AtomicU64::new(0));
    let interval_ns = duration_ns(cfg.interval);
    let duration_ns = duration_ns(cfg.duration);
    let mut handles = Vec::with_capacity(cfg.nice_levels.len());
    for &nice in &cfg.nice_levels {
        let (g, base) = (Arc::clone(&gate), Arc::clone(&base));
        let h = spawn_task(move || {
            let priority = set_thread_nice(nice);
            let mut rec = ProbeRecorder::new();
            if !g.arrive() {
                return rec.finish(nice, priority);
            }
            let base_ns = base.load(Ordering::Acquire);
            let mut schedule = Schedule::new(interval_ns, duration_ns);
            while let Some(offset) = schedule.next_deadline() {
                let deadline = base_ns + offset;
                sleep_until_ns(deadline);
                let now = monotonic_ns();
                rec.record(now.saturating_sub(deadline));
                rec.add_overruns(schedule.advance(now.saturating_sub(base_ns)));
            }
            rec.finish(nice, priority)
        });
        match h {
            Ok(h) => handles.push(h),
            Err(e) => {
                gate.abort();
                handles.into_iter().for_each(|h| drop(h.join()));
                return Err(e);
            }
        }
    }
    gate.wait_ready(handles.len());
    base.store(monotonic_ns(), Ordering::Release);
    gate.open();
    handles
        .into_iter()
        .map(|h| {
            h.join()
                .map_err(|_| BenchError::Task("a probe thread panicked".into()))
        })
        .collect()
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
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

/// `CLOCK_MONOTONIC` in nanoseconds (the clock `Instant` uses).
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until `CLOCK_MONOTONIC` reaches `deadline_ns` (absolute), like cyclictest.
fn sleep_until_ns(deadline_ns: u64) {
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

impl SpawnBackend for Threads {
    fn kind(&self) -> BackendKind {
        BackendKind::Threads
    }

    fn run(&self, cfg: &SpawnConfig) -> Result<SpawnRun, BenchError> {
        crate::spawn::run_os_spawners(cfg, spawn_and_join, "spawning a thread")
    }
}

/// One spawn step: a `std::thread` that returns at once, then `join`.
fn spawn_and_join() -> io::Result<()> {
    let h = std::thread::Builder::new().spawn(|| {})?;
    h.join()
        .map_err(|_| io::Error::other("spawned thread panicked"))
}
