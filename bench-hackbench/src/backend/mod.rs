//! Backends: the per-mode interfaces every backend implements, and the
//! registry that maps a backend name to its implementations.
//!
//! Owns: [`BackendKind`], the configuration each mode hands a backend
//! ([`HackbenchConfig`], [`LatencyConfig`], [`SpawnConfig`]), what a backend
//! returns ([`HackbenchRun`], [`LatencyRun`], [`SpawnRun`]), the three traits
//! ([`HackbenchBackend`], [`LatencyBackend`], [`SpawnBackend`]) and the
//! lookup functions. Must not: parse options, print, or hold any backend's
//! workload code.
//!
//! Each backend is a module (`green` is a folder with one module per
//! mode); a backend without a mode says so with [`Missing::Unsupported`]
//! (processes have no latency mode). The blocking backends (processes,
//! threads, green) each provide a [`RunFixed`] function that the registry
//! wraps in [`Blocking`]; their shared skeletons are the crate's `load`,
//! `probes` and `spawn` drivers.

pub mod green;
pub mod processes;
pub mod threads;
pub mod tokio;

use crate::error::BenchError;
use crate::latency::ProbeResult;
use crate::transport::TransportKind;
use crate::workload::{send_messages, SendFn, Sink};
use std::time::Duration;

/// One of the ways to run the same workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BackendKind {
    /// `fork()`ed processes, real fds, blocking reads and writes (rt-tests' default).
    Processes,
    /// OS threads, real fds, blocking reads and writes (rt-tests' `-T`).
    Threads,
    /// Green threads on eevdf-rt.
    Green,
    /// Tokio tasks on tokio's own I/O types.
    Tokio,
}

impl BackendKind {
    /// Every backend, in report order (`--backend all`).
    pub const ALL: [BackendKind; 4] = [
        BackendKind::Processes,
        BackendKind::Threads,
        BackendKind::Green,
        BackendKind::Tokio,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Processes => "processes",
            BackendKind::Threads => "threads",
            BackendKind::Green => "green",
            BackendKind::Tokio => "tokio",
        }
    }

    /// The word in hackbench's header: "Running in `<word>` mode ...".
    pub fn mode_word(self) -> &'static str {
        match self {
            BackendKind::Processes => "process",
            BackendKind::Threads => "threaded",
            BackendKind::Green => "green",
            BackendKind::Tokio => "tokio",
        }
    }

    /// Whether the backend runs on a runtime with worker threads, so that
    /// `--workers` and `--stats` mean something to it.
    pub fn has_runtime(self) -> bool {
        matches!(self, BackendKind::Green | BackendKind::Tokio)
    }

    /// Whether the backend's tasks have a scheduling policy (`--policy`):
    /// all but tokio's.
    pub fn has_policy(self) -> bool {
        self != BackendKind::Tokio
    }
}

/// Settings for backends that run on a runtime (tokio, green).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeOpts {
    /// OS worker threads (`--workers`; default: CPUs available).
    pub workers: usize,
    /// eevdf-rt feature string (`--features`), already validated; green only.
    pub features: Option<String>,
    /// Print the runtime's counters after each run (`--stats`).
    pub stats: bool,
    /// Record the green runtime's scheduling trace into this file (`--trace`).
    pub trace: Option<std::path::PathBuf>,
    /// The green backend's I/O driver (`--io`; default `auto`).
    pub io: eevdf_rt::io::IoDriver,
}

/// One hackbench run, identical for every backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HackbenchConfig {
    /// Groups (`-g`).
    pub groups: usize,
    /// Senders per group, which is also receivers per group (`-f`).
    pub fds: usize,
    /// Messages each sender sends to each receiver (`-l`).
    pub loops: u64,
    /// Bytes per message (`-s`).
    pub datasize: usize,
    /// Channel kind (`-p`, `-i`, or UNIX sockets).
    pub transport: TransportKind,
    /// Scheduling policy of the senders and receivers (`--policy`; processes,
    /// threads and green).
    pub policy: crate::policy::LoadPolicy,
    /// Runtime settings (tokio, green).
    pub runtime: RuntimeOpts,
}

impl HackbenchConfig {
    /// Tasks in the whole run: `groups * 2 * fds`.
    pub fn tasks(&self) -> usize {
        self.groups * 2 * self.fds
    }

    /// Messages every receiver must get: `fds * loops`.
    pub fn messages_per_receiver(&self) -> u64 {
        self.fds as u64 * self.loops
    }
}

/// What a hackbench backend reports.
#[derive(Clone, Debug, Default)]
pub struct HackbenchRun {
    /// From "go" (all tasks released from the start barrier) to the last
    /// task finishing.
    pub elapsed: Duration,
    /// Messages verified (every receiver's count, summed).
    pub messages: u64,
    /// Extra report lines (runtime counters with `--stats`).
    pub details: Vec<String>,
}

/// Runs the hackbench workload.
pub trait HackbenchBackend {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;

    /// Runs `cfg` once: create the channels, start every task, hold them at a
    /// start barrier, release them, wait for all of them, then check with
    /// [`crate::verify::check_group`] that every receiver got exactly
    /// `cfg.messages_per_receiver()` messages of `cfg.datasize` bytes. A
    /// lost, short or extra message is an `Err`, never a silent success.
    fn run(&self, cfg: &HackbenchConfig) -> Result<HackbenchRun, BenchError>;
}

/// A blocking backend's fixed `-l` run with a given sender loop (tests
/// pass broken ones): `threads::run_fixed`, `processes::run_fixed`,
/// `green::hackbench::run_fixed`.
pub type RunFixed<W> = fn(&HackbenchConfig, SendFn<W>) -> Result<HackbenchRun, BenchError>;

/// The [`HackbenchBackend`] of a blocking backend: its [`RunFixed`] with
/// the real sender loop.
pub struct Blocking<W: Sink> {
    kind: BackendKind,
    run_fixed: RunFixed<W>,
}

impl<W: Sink> HackbenchBackend for Blocking<W> {
    fn kind(&self) -> BackendKind {
        self.kind
    }

    fn run(&self, cfg: &HackbenchConfig) -> Result<HackbenchRun, BenchError> {
        (self.run_fixed)(cfg, send_messages)
    }
}

/// One latency-mode run (probes plus a hackbench load on the same backend).
#[derive(Clone, Debug, PartialEq)]
pub struct LatencyConfig {
    /// The load; its `loops` is ignored: the load runs until the probes finish.
    pub load: HackbenchConfig,
    /// Probe period (`--interval`).
    pub interval: Duration,
    /// How long the probes run (`--duration`).
    pub duration: Duration,
    /// One probe per entry (`--nice-levels`).
    pub nice_levels: Vec<i32>,
}

/// One column of the latency table: a scheduler configuration to run the
/// whole experiment under. Only green has more than [`LatencyColumn::default`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencyColumn {
    /// Column heading ("default", "TICK_ELIGIBLE", "slice=100us" ...).
    pub label: String,
    /// eevdf-rt feature string for this column (green only).
    pub features: Option<String>,
    /// Slice requested by the probes (green only; `--probe-slice` or a
    /// `slice=` column).
    pub probe_slice: Option<Duration>,
}

impl LatencyColumn {
    /// The only column the threads and tokio backends run.
    pub fn default_column() -> Self {
        LatencyColumn {
            label: "default".to_string(),
            features: None,
            probe_slice: None,
        }
    }

    /// Whether the column changes nothing: no feature switches of its own
    /// and no probe slice (its runs use `--features` as given).
    pub fn is_default(&self) -> bool {
        self.features.is_none() && self.probe_slice.is_none()
    }

    /// The check of every backend without feature sets or probe slices
    /// (threads, tokio): anything but the default column is a usage error.
    pub fn require_default(&self, backend: &str) -> Result<(), BenchError> {
        if self.features.is_some() || self.probe_slice.is_some() {
            return Err(BenchError::Usage(format!(
                "{backend} latency probes have no feature sets or slices (green only)"
            )));
        }
        Ok(())
    }
}

/// What a latency backend reports for one column.
#[derive(Clone, Debug, Default)]
pub struct LatencyRun {
    /// One result per entry of `nice_levels`, in the same order.
    pub probes: Vec<ProbeResult>,
    /// Messages the load moved (verified after the load stopped).
    pub load_messages: u64,
    /// Lines the report must print (missing priorities, timer resolution ...).
    pub notes: Vec<String>,
    /// Named counters to print (green: preemptions by reason, from its Stats).
    pub counters: Vec<(String, u64)>,
}

/// Runs the cyclictest-style probes under a hackbench load.
pub trait LatencyBackend {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;

    /// Starts the load (open-ended hackbench, `cfg.load`), then one probe per
    /// `cfg.nice_levels` entry; each probe sleeps to absolute deadlines every
    /// `cfg.interval` for `cfg.duration` and records `wake - deadline` with
    /// [`crate::latency::ProbeRecorder`]. Then stops the load cleanly, checks
    /// its messages and returns the probes in `nice_levels` order.
    fn run(&self, cfg: &LatencyConfig, column: &LatencyColumn) -> Result<LatencyRun, BenchError>;
}

/// How long each spawner runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SpawnLimit {
    /// For this long (`--duration`).
    Duration(Duration),
    /// This many spawns per spawner (`-l`).
    Iterations(u64),
}

/// One spawn-test run.
#[derive(Clone, Debug, PartialEq)]
pub struct SpawnConfig {
    /// Concurrent spawners (`--spawners`).
    pub spawners: usize,
    /// When they stop.
    pub limit: SpawnLimit,
    /// Runtime settings (tokio, green).
    pub runtime: RuntimeOpts,
}

/// What a spawn backend reports.
#[derive(Clone, Debug, Default)]
pub struct SpawnRun {
    /// Tasks created, run and waited for (all spawners).
    pub spawns: u64,
    /// From "go" to the last spawner finishing.
    pub elapsed: Duration,
    /// Named counters to print (green: spawned local / remote).
    pub counters: Vec<(String, u64)>,
    /// Extra report lines (runtime counters with `--stats`).
    pub details: Vec<String>,
}

impl SpawnRun {
    /// Spawns per second.
    pub fn rate(&self) -> f64 {
        self.spawns as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Runs the spawn-and-exit test.
pub trait SpawnBackend {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;

    /// Each of `cfg.spawners` spawners repeatedly creates a task that exits
    /// at once and waits for it, until `cfg.limit`; spawners start together
    /// at a start barrier.
    fn run(&self, cfg: &SpawnConfig) -> Result<SpawnRun, BenchError>;
}

/// Why a backend has no implementation for a mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// The mode makes no sense for this backend (processes in latency mode).
    Unsupported,
}

/// The hackbench implementation of `kind`.
pub fn hackbench(kind: BackendKind) -> Result<Box<dyn HackbenchBackend>, Missing> {
    fn blocking<W: Sink + 'static>(kind: BackendKind, run_fixed: RunFixed<W>) -> Box<Blocking<W>> {
        Box::new(Blocking { kind, run_fixed })
    }
    Ok(match kind {
        BackendKind::Processes => blocking(kind, processes::run_fixed),
        BackendKind::Threads => blocking(kind, threads::run_fixed),
        BackendKind::Tokio => Box::new(tokio::Tokio),
        BackendKind::Green => blocking(kind, green::hackbench::run_fixed),
    })
}

/// The latency-mode implementation of `kind`.
pub fn latency(kind: BackendKind) -> Result<Box<dyn LatencyBackend>, Missing> {
    match kind {
        BackendKind::Processes => Err(Missing::Unsupported),
        BackendKind::Threads => Ok(Box::new(threads::Threads)),
        BackendKind::Tokio => Ok(Box::new(tokio::Tokio)),
        BackendKind::Green => green::latency(),
    }
}

/// The spawn-test implementation of `kind`.
pub fn spawn(kind: BackendKind) -> Result<Box<dyn SpawnBackend>, Missing> {
    match kind {
        BackendKind::Processes => Ok(Box::new(processes::Processes)),
        BackendKind::Threads => Ok(Box::new(threads::Threads)),
        BackendKind::Tokio => Ok(Box::new(tokio::Tokio)),
        BackendKind::Green => green::spawn(),
    }
}
