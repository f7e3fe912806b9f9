//! Command-line options and their validation.
//!
//! Owns: the option set (rt-tests hackbench's options plus the backend,
//! runtime, latency-mode and spawn-mode options), the rules for how they
//! combine, and the conversion into a validated [`Config`]. Every bad input
//! becomes an [`OptsError`] that `main` prints and maps to exit code 2.
//! Must not: run anything, print anything, or panic on any input.
//!
//! Decisions (also in `--help`):
//! - `-T` means `--backend threads`, `-P` means `--backend processes`;
//!   `-T` with `-P`, or either with a different `--backend`, is an error.
//! - Default backend: `processes` (as rt-tests) for hackbench and `--spawn`;
//!   `threads` for `--latency` (processes have no latency mode).
//! - `-s 0` is rejected: a zero-byte message cannot be counted.
//! - `--latency`: the load runs until the probes finish, so `-l` is an error.
//! - `--spawn`: runs `--duration` seconds (default 5), or `-l N` spawns per
//!   spawner instead; giving both is an error.
//! - An option the chosen mode does not read is an error, never ignored:
//!   the load's `-g -f -s -p -i --transport` with `--spawn`; `--interval`,
//!   `--nice-levels`, `--columns`, `--probe-slice` without `--latency`;
//!   `--spawners` without `--spawn`.
//! - `--latency`: `--duration` must hold at least one `--interval`.
//! - Ranges are inclusive and each option has one message for its range
//!   (`--interval` 1us..=10s, slices 100us..=100ms, `--duration`
//!   1ns..=86400s, `-l` 1..=u64::MAX).
//! - `--workers`: 1..=1024 for tokio, 1..=`eevdf_rt::MAX_WORKERS` (256)
//!   when green runs.
//! - `--columns`: a preset (`default`, `kernel`) only first; a switch or
//!   `slice=` at most once per column; `slice=` not with `--probe-slice`;
//!   no two columns with the same settings.
//! - Runtime options (`--workers`, `--stats`) need a backend with a runtime
//!   (tokio, green, or all); `--features`, `--columns` and `--probe-slice`
//!   are green-only.
//! - `--transport unix|pipe|tcp|channel`: `pipe` and `tcp` are `-p` and
//!   `-i` (and conflict with them); `channel` is green-only (any other
//!   backend alone is an error; `--backend all` runs green alone, with a
//!   [`Config::notes`] line for each backend left out).

use crate::backend::{BackendKind, HackbenchConfig, LatencyColumn, RuntimeOpts, SpawnLimit};
use crate::policy::LoadPolicy;
use crate::transport::TransportKind;
use clap::{Parser, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

/// Largest accepted `-s` (bytes).
pub const MAX_DATASIZE: u64 = 1 << 20;

/// The preset for `--columns bg3`: the columns of docs/kernel-discussions.md §3's table.
pub const BG3_COLUMNS: &str =
    "default;TICK_ELIGIBLE;NO_RUN_TO_PARITY;TICK_ELIGIBLE,NO_RUN_TO_PARITY;slice=100us";

const AFTER_HELP: &str = "\
Backends: processes (fork, blocking fds; rt-tests' default), threads (OS threads, blocking fds;
rt-tests' -T), green (eevdf-rt green threads on the runtime's own pipes, UnixStream and TcpStream,
or channels; --workers pinned workers, --features scheduler switches), tokio (tokio tasks on tokio's
UnixStream / pipe / TcpStream), all (every backend, then a comparison table whose 'vs threads' and
'vs tokio' columns are speed-ups: threads' or tokio's time / this backend's time in hackbench mode,
this backend's spawns/s / theirs in spawn mode; above 1 = faster). -T is --backend threads, -P is
--backend processes; conflicting choices are an error. Notes (what --backend all leaves out) go to
stderr.

Hackbench (default mode): g groups of f senders and f receivers; every sender writes l messages
of s bytes to every receiver of its group; every receiver must get exactly f*l messages (checked;
a lost, short or extra message fails the run with exit code 1). Prints 'Time: S.mmm' from the
start barrier's release to the last task finishing. Transports: UNIX socket pairs (default), pipes
(-p), TCP over 127.0.0.1 with TCP_NODELAY (-i), or, green only, --transport channel: one bounded
eevdf-rt channel per receiver instead of an fd, holding as many s-byte messages as a UNIX socket's
default send buffer does (212992 / (s + 666): 278 at 100 bytes); messages are shared buffers, and
the receiver copies each one out as read(2) would. With --backend all, --transport channel runs
green alone and prints a note for each backend it leaves out.

Latency mode (--latency): one cyclictest-style probe per --nice-levels entry sleeps to absolute
deadlines every --interval for --duration seconds and records lateness (wake - deadline), printed
as min/avg/p50/p99/max in microseconds with the cycle count, while a hackbench load (-g/-f/-s and
transport options) runs on the same backend until the probes finish. Backends: threads (probes are
OS threads with setpriority nice; a negative nice needs root or CAP_SYS_NICE, and a failure is
reported as a warning), green (green threads with task::Builder::nice and, with --probe-slice or a
slice= column, task::Builder::slice; eevdf_rt::sleep_until; every column on a fresh runtime, with
the preemptions of the probes' window), tokio (no priorities exist: the nice level only labels the
probe). Default backend: threads. Green-only: --columns, --probe-slice. With green, a Markdown table
(one column per backend / green column) follows. --duration must hold at least one --interval.
--columns conflicts (exit 2): a preset (default, kernel) that is not a column's first word, a switch
or slice= twice in one column (DELAY_DEQUEUE,NO_DELAY_DEQUEUE too), slice= with --probe-slice, two
columns with the same settings.

Spawn mode (--spawn): each of --spawners spawners repeatedly creates a task that exits at once
and waits for it (processes: fork + waitpid, the child _exits; threads: std::thread spawn + join;
green: green spawners, eevdf_rt::spawn + join; tokio: tokio::spawn + await) for --duration
seconds, or -l spawns per spawner. Prints spawns/s. Under --duration each spawner checks the
deadline before every spawn, its first included (one that never got to spawn counts zero), so a
run ends about one spawn after --duration. processes: at most one fork per CPU is in flight (forks
from one process take turns in the kernel and slow down with its thread count); further spawners
wait for a turn and see the deadline there. Green runs twice, with SPAWN_LOCAL (new tasks on the
spawner's worker) and NO_SPAWN_LOCAL (on the idlest worker), and counts where the spawns went,
unless --features sets SPAWN_LOCAL either way.

Options belong to modes: -g/-f/-s/-p/-i/--transport set the load (hackbench, --latency);
--interval, --nice-levels, --columns, --probe-slice are --latency's; --spawners is --spawn's; any
other mode refuses them.

Durations: a number with a unit (ns, us, ms, s); a bare number means microseconds for --interval
and --probe-slice, seconds for --duration. Ranges: --interval 1us..=10s, --probe-slice and slice=
100us..=100ms, --duration 1ns..=86400s. Exit codes: 0 ok, 1 a run failed, 2 bad usage (checked
before anything runs, output files included).";

/// `--backend` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// fork()ed processes, blocking fds.
    Processes,
    /// OS threads, blocking fds.
    Threads,
    /// eevdf-rt green threads.
    Green,
    /// tokio tasks.
    Tokio,
    /// Every available backend, with a comparison.
    All,
}

/// `--transport` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TransportArg {
    /// UNIX socket pairs (hackbench's default).
    Unix,
    /// Pipes (`-p`).
    Pipe,
    /// TCP over 127.0.0.1 (`-i`).
    Tcp,
    /// Green only: bounded eevdf-rt channels, no fds.
    Channel,
}

/// The raw command line, as clap sees it.
#[derive(Parser, Debug)]
#[command(
    name = "hackbench",
    version,
    about = "hackbench, a cyclictest-style latency probe and a spawn test on processes, threads, tokio and green threads",
    after_help = AFTER_HELP
)]
pub struct Cli {
    /// Number of groups (1..=10000) [default: 10].
    #[arg(short = 'g', long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub groups: Option<u32>,
    /// Senders per group, which is also receivers per group (1..=1000) [default: 20].
    #[arg(short = 'f', long, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub fds: Option<u32>,
    /// Messages each sender sends to each receiver [default: 100]; with --spawn: spawns per spawner.
    #[arg(short = 'l', long, value_parser = clap::value_parser!(u64).range(1..=u64::MAX))]
    pub loops: Option<u64>,
    /// Bytes per message (1..=1048576) [default: 100].
    #[arg(short = 's', long, value_parser = clap::value_parser!(u64).range(1..=MAX_DATASIZE))]
    pub datasize: Option<u64>,
    /// Use pipes instead of UNIX socket pairs.
    #[arg(short = 'p', long = "pipe", conflicts_with = "inet")]
    pub pipe: bool,
    /// Use TCP over 127.0.0.1 instead of UNIX socket pairs.
    #[arg(short = 'i', long = "inet")]
    pub inet: bool,
    /// Transport: unix (socket pairs, the default), pipe (same as -p), tcp (same as -i), or
    /// channel (green only: a bounded eevdf-rt channel per receiver instead of an fd).
    #[arg(long, value_enum, value_name = "KIND", conflicts_with_all = ["pipe", "inet"])]
    pub transport: Option<TransportArg>,
    /// Tasks are threads: same as --backend threads.
    #[arg(short = 'T', long = "threads", conflicts_with = "process")]
    pub threads: bool,
    /// Tasks are processes: same as --backend processes.
    #[arg(short = 'P', long = "process")]
    pub process: bool,
    /// Which backend(s) to run.
    #[arg(long, value_enum)]
    pub backend: Option<BackendArg>,
    /// eevdf-rt scheduler features for green, sched_features style ("NO_RUN_TO_PARITY,TICK_ELIGIBLE").
    #[arg(long)]
    pub features: Option<String>,
    /// I/O driver of the green backend: auto (io_uring if the kernel allows it), uring or epoll [default: auto].
    #[arg(long, value_name = "auto|uring|epoll", value_parser = parse_io)]
    pub io: Option<eevdf_rt::io::IoDriver>,
    /// Scheduling policy of the senders and receivers (processes, threads, green):
    /// normal (SCHED_OTHER; wakeups may preempt) or batch (SCHED_BATCH / eevdf-rt
    /// Policy::Batch; wakeups never preempt) [default: normal].
    #[arg(long, value_enum)]
    pub policy: Option<crate::policy::LoadPolicy>,
    /// OS worker threads for tokio (1..=1024) and green (1..=256, eevdf_rt::MAX_WORKERS)
    /// [default: CPUs available, at most 256 when green runs].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub workers: Option<u32>,
    /// Print the runtime's counters after each run (tokio, green).
    #[arg(long)]
    pub stats: bool,
    /// Latency mode: cyclictest-style probes under a hackbench load.
    #[arg(long, conflicts_with = "spawn")]
    pub latency: bool,
    /// Latency mode: probe period, 1us..=10s [default: 1ms].
    #[arg(long, value_parser = parse_interval)]
    pub interval: Option<Duration>,
    /// Latency mode: one probe per nice level (-20..=19) [default: -19,0,19].
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub nice_levels: Option<Vec<i32>>,
    /// Latency and spawn modes: how long to run, 1ns..=86400s [default: 5s]; in latency mode
    /// at least one --interval (every probe runs at least one cycle).
    #[arg(long, value_parser = parse_secs)]
    pub duration: Option<Duration>,
    /// Latency mode, green only: table columns, ';'-separated; each is an optional preset first
    /// ("default" = --features as given, "kernel"), then feature switches
    /// ("TICK_ELIGIBLE,NO_RUN_TO_PARITY", on top of --features) and/or "slice=100us"; "bg3" =
    /// the docs/kernel-discussions.md §3 table. Errors: a preset after a switch, a switch or
    /// slice= given twice in a column (DELAY_DEQUEUE and NO_DELAY_DEQUEUE included), slice=
    /// with --probe-slice, two columns with the same settings.
    #[arg(long)]
    pub columns: Option<String>,
    /// Latency mode, green only: slice the probes of every column request (100us..=100ms).
    #[arg(long, value_parser = parse_slice)]
    pub probe_slice: Option<Duration>,
    /// Spawn mode: spawn-and-exit throughput.
    #[arg(long)]
    pub spawn: bool,
    /// Spawn mode: concurrent spawners (1..=4096) [default: 1]; processes: at most one fork per
    /// CPU in flight, the other spawners wait for a turn.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub spawners: Option<u32>,
    /// Write an SVG plot of the results to this file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Write the results as JSON Lines to this file: one object per row of the report.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Record the green runtime's scheduling trace of a hackbench run into this file
    /// (Chrome trace-event JSON for ui.perfetto.dev; each worker keeps its last 2^20 events).
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
}

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    /// hackbench proper.
    Hackbench,
    /// Latency probes under a hackbench load.
    Latency {
        /// Probe period.
        interval: Duration,
        /// Probe run time.
        duration: Duration,
        /// One probe per entry.
        nice_levels: Vec<i32>,
        /// Table columns (more than the default only for green).
        columns: Vec<LatencyColumn>,
    },
    /// Spawn-and-exit throughput.
    Spawn {
        /// Concurrent spawners.
        spawners: usize,
        /// When they stop.
        limit: SpawnLimit,
    },
}

/// A validated command line.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// What to run.
    pub mode: Mode,
    /// Backends to run, in report order.
    pub backends: Vec<BackendKind>,
    /// `--backend all` was given.
    pub all: bool,
    /// The hackbench workload (also the latency mode's load) and runtime options.
    pub hackbench: HackbenchConfig,
    /// `--plot` target.
    pub plot: Option<PathBuf>,
    /// `--json` target.
    pub json: Option<PathBuf>,
    /// What the options left out, for the user (`main` prints each as
    /// `note: ...` on stderr before running): backends `--backend all`
    /// skips because the mode or the transport does not exist on them.
    pub notes: Vec<String>,
}

/// Why the command line was not accepted.
#[derive(Debug)]
pub enum OptsError {
    /// clap's own error, or `--help` / `--version` (clap knows how to print
    /// it and which exit code it means).
    Clap(clap::Error),
    /// A rule beyond clap's: print the message, exit 2.
    Usage(String),
}

fn usage<T>(msg: impl Into<String>) -> Result<T, OptsError> {
    Err(OptsError::Usage(msg.into()))
}

/// Parses and validates a command line (`args[0]` is the program name).
pub fn parse<I, T>(args: I) -> Result<Config, OptsError>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = Cli::try_parse_from(args).map_err(OptsError::Clap)?;
    validate(cli)
}

/// Rejects an option that the selected mode would ignore: the hackbench
/// load's options with `--spawn`, the probes' options without `--latency`,
/// `--spawners` without `--spawn`.
fn check_mode_options(cli: &Cli) -> Result<(), OptsError> {
    if cli.spawn {
        let load = [
            ("-g/--groups", cli.groups.is_some()),
            ("-f/--fds", cli.fds.is_some()),
            ("-s/--datasize", cli.datasize.is_some()),
            ("-p/--pipe", cli.pipe),
            ("-i/--inet", cli.inet),
            ("--transport", cli.transport.is_some()),
        ];
        if let Some((opt, _)) = load.iter().find(|(_, given)| *given) {
            return usage(format!(
                "{opt} sets the hackbench load; it does not apply to --spawn"
            ));
        }
    }
    if !cli.latency {
        let probes = [
            ("--interval", cli.interval.is_some()),
            ("--nice-levels", cli.nice_levels.is_some()),
            ("--columns", cli.columns.is_some()),
            ("--probe-slice", cli.probe_slice.is_some()),
        ];
        if let Some((opt, _)) = probes.iter().find(|(_, given)| *given) {
            return usage(format!("{opt} applies to --latency only"));
        }
    }
    if cli.spawners.is_some() && !cli.spawn {
        return usage("--spawners applies to --spawn only");
    }
    Ok(())
}

fn validate(cli: Cli) -> Result<Config, OptsError> {
    check_mode_options(&cli)?;
    let mut notes = Vec::new();
    // Backend selection.
    let from_flag = if cli.threads {
        Some(BackendArg::Threads)
    } else if cli.process {
        Some(BackendArg::Processes)
    } else {
        None
    };
    let chosen = match (from_flag, cli.backend) {
        (Some(f), Some(b)) if f != b => {
            let flag = if cli.threads { "-T" } else { "-P" };
            let name = |a: BackendArg| format!("{a:?}").to_lowercase();
            return usage(format!(
                "{flag} selects the {} backend but --backend says {}; drop one of them",
                name(f),
                name(b)
            ));
        }
        (f, b) => b.or(f),
    };
    let chosen = chosen.unwrap_or(if cli.latency {
        BackendArg::Threads
    } else {
        BackendArg::Processes
    });
    let all = chosen == BackendArg::All;
    let mut backends: Vec<BackendKind> = match chosen {
        BackendArg::Processes => vec![BackendKind::Processes],
        BackendArg::Threads => vec![BackendKind::Threads],
        BackendArg::Green => vec![BackendKind::Green],
        BackendArg::Tokio => vec![BackendKind::Tokio],
        BackendArg::All => BackendKind::ALL.to_vec(),
    };
    if cli.latency {
        if chosen == BackendArg::Processes {
            return usage(
                "--latency runs on the threads, green and tokio backends, not on processes",
            );
        }
        if all {
            notes.push(
                "--latency does not apply to the processes backend (no latency mode): left out"
                    .to_string(),
            );
        }
        backends.retain(|&b| b != BackendKind::Processes);
    }
    let has_green = backends.contains(&BackendKind::Green);
    let has_runtime = backends.iter().any(|b| b.has_runtime());

    // Runtime options.
    if let Some(f) = &cli.features {
        if !has_green {
            return usage(
                "--features applies to the green backend only (use --backend green or all)",
            );
        }
        if let Err(e) = eevdf_rt::sched::Features::parse(f) {
            return usage(format!("--features: {e}"));
        }
    }
    if let Some(io) = cli.io {
        if !has_green {
            return usage("--io applies to the green backend only (use --backend green or all)");
        }
        if let Err(e) = io.resolve() {
            return usage(format!("--io {io}: {e}"));
        }
    }
    if let Some(p) = cli.policy {
        if cli.latency || cli.spawn {
            return usage(
                "--policy sets the policy of a hackbench run's tasks; it does not apply to --latency or --spawn",
            );
        }
        if p != LoadPolicy::Normal && !backends.iter().any(|b| b.has_policy()) {
            return usage(
                "--policy applies to the processes, threads and green backends (tokio tasks have no scheduling policy)",
            );
        }
    }
    if cli.workers.is_some() && !has_runtime {
        return usage("--workers applies to the tokio and green backends only");
    }
    if let Some(w) = cli.workers {
        if has_green && w as usize > eevdf_rt::MAX_WORKERS {
            return usage(format!(
                "--workers {w} is not in 1..={} for the green backend (eevdf_rt::MAX_WORKERS; only tokio takes up to 1024)",
                eevdf_rt::MAX_WORKERS
            ));
        }
    }
    if cli.trace.is_some() {
        if !has_green {
            return usage("--trace applies to the green backend only (use --backend green or all)");
        }
        if cli.latency || cli.spawn {
            return usage(
                "--trace records a hackbench run; it does not apply to --latency or --spawn",
            );
        }
    }
    if cli.stats && !has_runtime {
        return usage("--stats applies to the tokio and green backends only");
    }
    let workers = match cli.workers {
        Some(w) => w as usize,
        None => {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            if has_green {
                cpus.min(eevdf_rt::MAX_WORKERS)
            } else {
                cpus
            }
        }
    };

    let transport = match (cli.transport, cli.pipe, cli.inet) {
        (Some(TransportArg::Unix), ..) => TransportKind::UnixSocket,
        (Some(TransportArg::Pipe), ..) | (None, true, _) => TransportKind::Pipe,
        (Some(TransportArg::Tcp), ..) | (None, _, true) => TransportKind::Tcp,
        (Some(TransportArg::Channel), ..) => TransportKind::Channel,
        (None, false, false) => TransportKind::UnixSocket,
    };
    if transport == TransportKind::Channel {
        if !has_green {
            return usage(
                "--transport channel applies to the green backend only (use --backend green or all)",
            );
        }
        // `all`: only green has channels; the others are left out, with a note each.
        for b in backends.iter().filter(|&&b| b != BackendKind::Green) {
            notes.push(format!(
                "--transport channel does not apply to the {} backend (channels are green-only): left out",
                b.name()
            ));
        }
        backends.retain(|&b| b == BackendKind::Green);
    }

    if cli.duration.is_some() && !cli.latency && !cli.spawn {
        return usage("--duration applies to --latency and --spawn only");
    }
    let duration = cli.duration.unwrap_or(Duration::from_secs(5));

    let mode = if cli.latency {
        if cli.loops.is_some() {
            return usage(
                "-l has no meaning with --latency: the load runs until the probes finish (--duration)",
            );
        }
        if (cli.columns.is_some() || cli.probe_slice.is_some()) && !has_green {
            return usage("--columns and --probe-slice apply to the green backend only");
        }
        let nice_levels = cli.nice_levels.unwrap_or_else(|| vec![-19, 0, 19]);
        if nice_levels.is_empty() || nice_levels.len() > 40 {
            return usage("--nice-levels needs 1 to 40 values in -20..=19");
        }
        let interval = cli.interval.unwrap_or(Duration::from_millis(1));
        if duration < interval {
            return usage(format!(
                "--duration {} is shorter than --interval {}: the probes would run no cycle (give a --duration of at least one --interval)",
                fmt_duration(duration),
                fmt_duration(interval)
            ));
        }
        let columns = match &cli.columns {
            None => vec![match cli.probe_slice {
                None => LatencyColumn::default_column(),
                Some(s) => LatencyColumn {
                    label: format!("slice={}", fmt_duration(s)),
                    features: None,
                    probe_slice: Some(s),
                },
            }],
            Some(spec) => parse_columns(spec, cli.probe_slice, cli.features.as_deref())?,
        };
        Mode::Latency {
            interval,
            duration,
            nice_levels,
            columns,
        }
    } else if cli.spawn {
        let limit = match (cli.loops, cli.duration) {
            (Some(_), Some(_)) => {
                return usage(
                    "--spawn runs either -l spawns per spawner or --duration seconds, not both",
                )
            }
            (Some(n), None) => SpawnLimit::Iterations(n),
            (None, _) => SpawnLimit::Duration(duration),
        };
        Mode::Spawn {
            spawners: cli.spawners.unwrap_or(1) as usize,
            limit,
        }
    } else {
        Mode::Hackbench
    };

    let (groups, fds) = (cli.groups.unwrap_or(10), cli.fds.unwrap_or(20));
    let datasize = cli.datasize.unwrap_or(100);
    if backends.contains(&BackendKind::Threads) {
        // A hackbench load is 2 × fds OS threads per group, each with a
        // datasize buffer; the latency probes add one thread per nice level.
        // (Spawn mode runs at most 2 × --spawners threads at once.)
        let threads = match &mode {
            Mode::Hackbench => Some(2 * u64::from(groups) * u64::from(fds)),
            Mode::Latency { nice_levels, .. } => {
                Some(2 * u64::from(groups) * u64::from(fds) + nice_levels.len() as u64)
            }
            Mode::Spawn { .. } => None,
        };
        if let Some(threads) = threads {
            let maps = bench_common::limits::buffer_maps(datasize);
            if let Err(e) = bench_common::limits::check_os_threads(threads, maps) {
                return usage(format!(
                    "the threads backend runs every sender and receiver (2 × -f per -g group) \
                     on an OS thread: {e}; use fewer groups or fds, or another backend"
                ));
            }
        }
    }

    Ok(Config {
        mode,
        backends,
        all,
        hackbench: HackbenchConfig {
            groups: groups as usize,
            fds: fds as usize,
            loops: cli.loops.unwrap_or(100),
            datasize: datasize as usize,
            transport,
            policy: cli.policy.unwrap_or_default(),
            runtime: RuntimeOpts {
                workers,
                features: cli.features,
                stats: cli.stats,
                trace: cli.trace,
                io: cli.io.unwrap_or_default(),
            },
        },
        plot: cli.plot,
        json: cli.json,
        notes,
    })
}

fn parse_io(s: &str) -> Result<eevdf_rt::io::IoDriver, String> {
    s.parse().map_err(|e: eevdf_rt::Error| e.to_string())
}

/// `d` in the largest unit that shows it exactly (`100us`, `1ms`, `86400s`),
/// in the syntax the duration options read.
pub fn fmt_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        return "0s".to_string();
    }
    for (unit, scale) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns.is_multiple_of(scale) {
            return format!("{}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}

/// A feature-switch word of a `--columns` column: the feature and whether
/// the word turns it on (`NO_` turns it off), as `Features::apply` reads it.
fn column_switch(word: &str) -> Option<(eevdf_rt::sched::Feature, bool)> {
    use eevdf_rt::sched::Feature;
    if let Some(f) = Feature::from_name(word) {
        return Some((f, true));
    }
    match word.get(..3) {
        Some(p) if p.eq_ignore_ascii_case("NO_") => {
            Feature::from_name(&word[3..]).map(|f| (f, false))
        }
        _ => None,
    }
}

/// Parses `--columns`: `bg3`, or `;`-separated specs of an optional preset
/// (`default`, `kernel`) first, feature switches and `slice=DUR`.
///
/// Conflicts (errors): a preset that is not a column's first word (it would
/// undo the switches before it), a switch named twice in a column (`X,X`
/// or `X,NO_X`), `slice=` twice in a column, `slice=` together with
/// `--probe-slice` (which sets every column's slice), and two columns whose
/// settings (`--features` plus the column's switches, and the slice) are
/// the same.
fn parse_columns(
    spec: &str,
    probe_slice: Option<Duration>,
    base_features: Option<&str>,
) -> Result<Vec<LatencyColumn>, OptsError> {
    use eevdf_rt::sched::Features;
    let spec = if spec.trim().eq_ignore_ascii_case("bg3") {
        BG3_COLUMNS
    } else {
        spec
    };
    // `--features` is validated before the columns; an invalid one leaves
    // the default set here.
    let base = base_features
        .and_then(|f| Features::parse(f).ok())
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut settings: Vec<(Features, Option<Duration>, String)> = Vec::new();
    for col in spec.split(';').map(str::trim).filter(|c| !c.is_empty()) {
        let mut words = Vec::new();
        let mut switches: Vec<(eevdf_rt::sched::Feature, &str)> = Vec::new();
        let mut slice: Option<&str> = None;
        let mut column_slice = probe_slice;
        let tokens = col.split(',').map(str::trim).filter(|t| !t.is_empty());
        for (i, tok) in tokens.enumerate() {
            let is_default = tok.eq_ignore_ascii_case("default");
            if is_default || tok.eq_ignore_ascii_case("kernel") {
                if i > 0 {
                    return usage(format!(
                        "--columns: column '{col}': the preset '{tok}' must come first (here it would undo the switches before it)"
                    ));
                }
                if !is_default {
                    words.push(tok);
                }
            } else if let Some(v) = tok.strip_prefix("slice=") {
                if let Some(prev) = slice {
                    return usage(format!(
                        "--columns: column '{col}' gives a slice twice ('{prev}' and '{tok}')"
                    ));
                }
                if let Some(p) = probe_slice {
                    return usage(format!(
                        "--columns: column '{col}' sets '{tok}' but --probe-slice {} sets every column's slice; give one of them",
                        fmt_duration(p)
                    ));
                }
                let d = parse_slice(v)
                    .map_err(|e| OptsError::Usage(format!("--columns: '{tok}': {e}")))?;
                slice = Some(tok);
                column_slice = Some(d);
            } else {
                if let Some((f, _)) = column_switch(tok) {
                    if let Some((_, prev)) = switches.iter().find(|(g, _)| *g == f) {
                        return usage(format!(
                            "--columns: column '{col}' sets {f} twice ('{prev}' and '{tok}')"
                        ));
                    }
                    switches.push((f, tok));
                }
                words.push(tok);
            }
        }
        let features = if words.is_empty() {
            None
        } else {
            Some(words.join(","))
        };
        let mut effective = base;
        if let Some(f) = &features {
            if let Err(e) = effective.apply(f) {
                return usage(format!("--columns: {e}"));
            }
        }
        if let Some((_, _, prev)) = settings
            .iter()
            .find(|(f, s, _)| *f == effective && *s == column_slice)
        {
            return usage(format!(
                "--columns: columns '{prev}' and '{col}' have the same settings; give each once"
            ));
        }
        settings.push((effective, column_slice, col.to_string()));
        // The label names the column's whole setting, --probe-slice included.
        let label = match (probe_slice, col.eq_ignore_ascii_case("default")) {
            (Some(p), true) => format!("slice={}", fmt_duration(p)),
            (Some(p), false) => format!("{col},slice={}", fmt_duration(p)),
            (None, _) => col.to_string(),
        };
        out.push(LatencyColumn {
            label,
            features,
            probe_slice: column_slice,
        });
    }
    if out.is_empty() {
        return usage("--columns needs at least one column");
    }
    Ok(out)
}

/// Parses a duration; a bare number is in `bare_unit_ns` nanoseconds. The
/// result must lie in `min..=max`; anything else (0, a negative number, a
/// value that rounds to 0 ns) fails with the range in the message.
fn parse_duration(
    s: &str,
    bare_unit_ns: f64,
    min: Duration,
    max: Duration,
) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (e.g. 500us, 1ms, 2.5s)"))?;
    let scale = match unit.trim() {
        "" => bare_unit_ns,
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e3 * 1e3,
        "s" => 1e9,
        u => {
            return Err(format!(
                "unknown time unit '{u}' in '{s}' (use ns, us, ms or s)"
            ))
        }
    };
    let ns = (v * scale).round();
    let out_of_range = || {
        format!(
            "must be between {} and {}",
            fmt_duration(min),
            fmt_duration(max)
        )
    };
    // Checked as f64 first: a huge value would saturate the u64 cast.
    if !ns.is_finite() || ns > max.as_nanos() as f64 {
        return Err(out_of_range());
    }
    let d = Duration::from_nanos(ns as u64);
    if d < min || d > max {
        return Err(out_of_range());
    }
    Ok(d)
}

/// `--interval`: a bare number means microseconds (cyclictest's `-i`); 1us..=10s.
fn parse_interval(s: &str) -> Result<Duration, String> {
    parse_duration(s, 1e3, Duration::from_micros(1), Duration::from_secs(10))
}

/// A probe slice (`--probe-slice`, a column's `slice=`): a bare number
/// means microseconds; 100us..=100ms, eevdf-rt's slice range.
fn parse_slice(s: &str) -> Result<Duration, String> {
    parse_duration(
        s,
        1e3,
        Duration::from_nanos(eevdf_rt::sched::MIN_SLICE),
        Duration::from_nanos(eevdf_rt::sched::MAX_SLICE),
    )
}

/// `--duration`: a bare number means seconds; 1ns..=86400s (a day).
fn parse_secs(s: &str) -> Result<Duration, String> {
    parse_duration(s, 1e9, Duration::from_nanos(1), Duration::from_secs(86_400))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(args: &str) -> Config {
        let v: Vec<&str> = std::iter::once("hackbench")
            .chain(args.split_whitespace())
            .collect();
        match parse(v) {
            Ok(c) => c,
            Err(e) => panic!("{args}: {e:?}"),
        }
    }

    fn err(args: &str) -> String {
        let v: Vec<&str> = std::iter::once("hackbench")
            .chain(args.split_whitespace())
            .collect();
        match parse(v) {
            Ok(c) => panic!("{args}: accepted as {c:?}"),
            Err(OptsError::Usage(m)) => m,
            Err(OptsError::Clap(e)) => {
                assert_eq!(e.exit_code(), 2, "{args}: {e}");
                e.to_string()
            }
        }
    }

    #[test]
    fn defaults_match_rt_tests() {
        let c = ok("");
        assert_eq!(c.mode, Mode::Hackbench);
        assert_eq!(c.backends, vec![BackendKind::Processes]);
        let h = &c.hackbench;
        assert_eq!((h.groups, h.fds, h.loops, h.datasize), (10, 20, 100, 100));
        assert_eq!(h.transport, TransportKind::UnixSocket);
        assert_eq!(h.tasks(), 400);
    }

    #[test]
    fn short_and_long_options() {
        let c = ok("-g 4 -f 3 -l 1000 -s 64 -p -T");
        assert_eq!(c.backends, vec![BackendKind::Threads]);
        let h = &c.hackbench;
        assert_eq!((h.groups, h.fds, h.loops, h.datasize), (4, 3, 1000, 64));
        assert_eq!(h.transport, TransportKind::Pipe);
        let c = ok("--groups 2 --fds 5 --loops 7 --datasize 9 --inet --process");
        assert_eq!(c.backends, vec![BackendKind::Processes]);
        assert_eq!(c.hackbench.transport, TransportKind::Tcp);
        assert_eq!(
            ok("-T --backend threads").backends,
            vec![BackendKind::Threads]
        );
        let all = ok("--backend all --workers 3 --stats");
        assert!(all.all);
        assert_eq!(all.backends.len(), 4);
        assert_eq!(all.hackbench.runtime.workers, 3);
    }

    #[test]
    fn bad_input_is_rejected_with_a_message() {
        assert!(err("-g 0").contains("-g"));
        assert!(err("-f 0").contains("-f"));
        assert!(err("-s 0").contains("--datasize"));
        assert!(err("-p -i").contains("cannot be used with"));
        assert!(err("-T -P").contains("cannot be used with"));
        assert!(err("--backend nope").contains("nope"));
        assert!(err("--bogus").contains("--bogus"));
        assert!(err("-T --backend tokio").contains("-T"));
        assert!(err("-P --backend threads").contains("-P"));
        assert!(err("--workers 2 --backend threads").contains("--workers"));
        assert!(err("--stats").contains("--stats"));
        assert!(err("--features NO_RUN_TO_PARITY --backend tokio").contains("green"));
        assert!(err("--features NOPE --backend all").contains("NOPE"));
        assert!(err("--duration 3").contains("--duration"));
        assert!(err("--interval 5ms").contains("--latency"));
        assert!(err("--latency -l 5").contains("-l"));
        assert!(err("--latency --backend processes").contains("processes"));
        assert!(err("--latency -P").contains("processes"));
        assert!(err("--latency --columns bg3").contains("green"));
        assert!(err("--latency --interval 0").contains("0"));
        assert!(err("--latency --interval 3parsecs").contains("unit"));
        assert!(err("--latency --nice-levels -25").contains("-25"));
        assert!(err("--spawn -l 5 --duration 1").contains("not both"));
        assert!(err("--spawn --latency").contains("cannot be used with"));
        assert!(err("--latency --backend all --probe-slice 5us").contains("100us"));
        assert!(err("--transport channel").contains("green"));
        assert!(err("--transport channel -T").contains("green"));
        assert!(err("--transport channel --backend tokio").contains("green"));
        assert!(err("--transport channel --latency").contains("green"));
        assert!(err("--transport pipe -p").contains("cannot be used with"));
        assert!(err("--transport tcp -i").contains("cannot be used with"));
        assert!(err("--transport carrier-pigeon").contains("carrier-pigeon"));
    }

    #[test]
    fn policy_option() {
        assert_eq!(ok("").hackbench.policy, LoadPolicy::Normal);
        assert_eq!(ok("--policy batch -T").hackbench.policy, LoadPolicy::Batch);
        assert_eq!(
            ok("--policy batch --backend all").hackbench.policy,
            LoadPolicy::Batch
        );
        assert_eq!(
            ok("--policy normal --backend tokio").hackbench.policy,
            LoadPolicy::Normal
        );
        assert!(err("--policy batch --backend tokio").contains("tokio tasks have no"));
        assert!(err("--policy batch --latency").contains("--latency"));
        assert!(err("--policy batch --spawn").contains("--spawn"));
        assert!(err("--policy fifo").contains("fifo"));
    }

    #[test]
    fn io_option() {
        use eevdf_rt::io::IoDriver;
        assert_eq!(ok("").hackbench.runtime.io, IoDriver::Auto);
        assert_eq!(
            ok("--io epoll --backend green").hackbench.runtime.io,
            IoDriver::Epoll
        );
        assert!(err("--io epoll -T").contains("green"));
        assert!(err("--io epoll --backend tokio").contains("green"));
        match IoDriver::Uring.resolve() {
            Ok(_) => assert_eq!(
                ok("--io uring --backend green").hackbench.runtime.io,
                IoDriver::Uring
            ),
            Err(_) => assert!(err("--io uring --backend green").contains("io_uring")),
        }
    }

    #[test]
    fn transport_option() {
        for (args, want) in [
            ("--transport unix", TransportKind::UnixSocket),
            ("--transport pipe", TransportKind::Pipe),
            ("--transport tcp", TransportKind::Tcp),
            ("-p", TransportKind::Pipe),
            ("-i", TransportKind::Tcp),
        ] {
            assert_eq!(ok(args).hackbench.transport, want, "{args}");
        }
        let c = ok("--transport channel --backend green");
        assert_eq!(c.hackbench.transport, TransportKind::Channel);
        assert_eq!(c.backends, vec![BackendKind::Green]);
        // `all` keeps only the backend that has channels.
        let c = ok("--transport channel --backend all --latency --columns bg3");
        assert_eq!(c.backends, vec![BackendKind::Green]);
    }

    #[test]
    fn latency_mode_options() {
        let c = ok("--latency --interval 500 --duration 0.3 --nice-levels -5,0,7 -g 2");
        assert_eq!(c.backends, vec![BackendKind::Threads]);
        let want = Mode::Latency {
            interval: Duration::from_micros(500),
            duration: Duration::from_millis(300),
            nice_levels: vec![-5, 0, 7],
            columns: vec![LatencyColumn::default_column()],
        };
        assert_eq!(c.mode, want);
        let c = ok("--latency --backend all --columns bg3");
        assert_eq!(
            c.backends,
            vec![BackendKind::Threads, BackendKind::Green, BackendKind::Tokio]
        );
        let Mode::Latency { columns, .. } = c.mode else {
            panic!()
        };
        assert_eq!(columns.len(), 5);
        assert_eq!(columns[0].features, None);
        assert_eq!(
            columns[3].features.as_deref(),
            Some("TICK_ELIGIBLE,NO_RUN_TO_PARITY")
        );
        assert_eq!(columns[4].probe_slice, Some(Duration::from_micros(100)));
    }

    #[test]
    fn spawn_mode_options() {
        let c = ok("--spawn --spawners 3 --backend all");
        assert_eq!(
            c.mode,
            Mode::Spawn {
                spawners: 3,
                limit: SpawnLimit::Duration(Duration::from_secs(5))
            }
        );
        let c = ok("--spawn -l 50");
        assert_eq!(
            c.mode,
            Mode::Spawn {
                spawners: 1,
                limit: SpawnLimit::Iterations(50)
            }
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_interval("250"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_interval("2ms"), Ok(Duration::from_millis(2)));
        assert_eq!(parse_slice("150"), Ok(Duration::from_micros(150)));
        assert_eq!(parse_secs("0.3"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_secs("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_secs("100ns"), Ok(Duration::from_nanos(100)));
        assert_eq!(parse_secs("86400"), Ok(Duration::from_secs(86_400)));
        assert!(parse_secs("").is_err());
        assert!(parse_secs("-1").is_err());
        assert!(parse_secs("1e99").is_err());
        // A value that rounds to 0 ns is out of range, not a zero duration.
        assert!(parse_secs("0.1ns").is_err());
        assert!(parse_secs("86401").is_err());
    }

    #[test]
    fn duration_ranges_have_one_message_each() {
        let interval = "must be between 1us and 10s";
        for v in [
            "0",
            "1ns",
            "999ns",
            "10.001s",
            "1e3",
            "5000000000000000000000s",
        ] {
            let want = if v == "1e3" { "unit" } else { interval };
            assert!(
                parse_interval(v).is_err_and(|e| e.contains(want)),
                "{v}: {:?}",
                parse_interval(v)
            );
        }
        assert_eq!(parse_interval("1us"), Ok(Duration::from_micros(1)));
        assert_eq!(parse_interval("10s"), Ok(Duration::from_secs(10)));
        for v in ["0", "5us", "101ms"] {
            assert_eq!(
                parse_slice(v),
                Err("must be between 100us and 100ms".to_string())
            );
        }
        assert_eq!(
            parse_secs("0"),
            Err("must be between 1ns and 86400s".to_string())
        );
        for args in ["--latency --interval 0", "--latency --interval 1ns"] {
            let m = err(args);
            assert!(m.contains("--interval") && m.contains(interval), "{m}");
        }
        for args in ["--latency --probe-slice 0", "--latency --probe-slice 5us"] {
            let m = err(&format!("{args} --backend green"));
            assert!(m.contains("between 100us and 100ms"), "{m}");
        }
    }

    #[test]
    fn fmt_duration_uses_the_largest_exact_unit() {
        assert_eq!(fmt_duration(Duration::from_secs(10)), "10s");
        assert_eq!(fmt_duration(Duration::from_millis(300)), "300ms");
        assert_eq!(fmt_duration(Duration::from_micros(1500)), "1500us");
        assert_eq!(fmt_duration(Duration::from_nanos(7)), "7ns");
        assert_eq!(fmt_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn latency_duration_must_hold_one_interval() {
        for args in [
            "--latency -g 1 -f 1 --duration 0.3s --interval 10s",
            "--latency --duration 0.5ms",
            "--latency --duration 1ns",
        ] {
            let m = err(args);
            assert!(m.contains("--duration") && m.contains("--interval"), "{m}");
        }
        // Exactly one interval is one cycle: accepted.
        let c = ok("--latency --duration 2ms --interval 2ms");
        assert!(matches!(c.mode, Mode::Latency { .. }));
        // Spawn mode has no interval: any positive duration.
        assert!(matches!(
            ok("--spawn --duration 1ns").mode,
            Mode::Spawn { .. }
        ));
    }

    #[test]
    fn options_of_another_mode_are_rejected() {
        for (args, opt) in [
            ("--spawn -g 5", "-g/--groups"),
            ("--spawn -f 2", "-f/--fds"),
            ("--spawn -s 500", "-s/--datasize"),
            ("--spawn -p", "-p/--pipe"),
            ("--spawn -i", "-i/--inet"),
            ("--spawn --transport tcp", "--transport"),
        ] {
            let m = err(args);
            assert!(m.contains(opt) && m.contains("--spawn"), "{args}: {m}");
        }
        for args in [
            "--spawn --interval 5ms",
            "--spawn --nice-levels 0",
            "--spawn --columns default",
            "--spawn --probe-slice 1ms",
            "--interval 5ms",
            "--nice-levels 0",
            "--columns default",
            "--probe-slice 1ms",
        ] {
            let opt = args.split_whitespace().rev().nth(1).unwrap();
            let m = err(args);
            assert_eq!(m, format!("{opt} applies to --latency only"), "{args}");
        }
        for args in ["--latency --spawners 4", "--spawners 4"] {
            assert_eq!(err(args), "--spawners applies to --spawn only", "{args}");
        }
        // What each mode does read is still accepted.
        ok("--spawn --spawners 2 -l 3 --backend green --workers 2 --features TICK_ELIGIBLE");
        ok("--latency -g 2 -f 3 -s 64 -p --interval 2ms --nice-levels 0");
    }

    #[test]
    fn green_workers_stop_at_the_runtime_maximum() {
        let max = eevdf_rt::MAX_WORKERS;
        for backend in ["green", "all"] {
            let m = err(&format!("--backend {backend} --workers {}", max + 1));
            assert!(
                m.contains("--workers") && m.contains(&format!("1..={max}")),
                "{m}"
            );
            let c = ok(&format!("--backend {backend} --workers {max}"));
            assert_eq!(c.hackbench.runtime.workers, max);
        }
        assert_eq!(
            ok("--backend tokio --workers 1024")
                .hackbench
                .runtime
                .workers,
            1024
        );
        assert!(err("--backend tokio --workers 1025").contains("1..=1024"));
        assert!(ok("--backend green").hackbench.runtime.workers <= max);
    }

    #[test]
    fn loops_range_is_inclusive() {
        let m = err("-l 0");
        assert!(m.contains(&format!("1..={}", u64::MAX)), "{m}");
        assert_eq!(ok(&format!("-l {}", u64::MAX)).hackbench.loops, u64::MAX);
    }

    #[test]
    fn skipped_backends_get_a_note() {
        let c = ok("--transport channel --backend all");
        assert_eq!(c.backends, vec![BackendKind::Green]);
        assert_eq!(c.notes.len(), 3, "{:?}", c.notes);
        for name in ["processes", "threads", "tokio"] {
            assert!(
                c.notes
                    .iter()
                    .any(|n| n.contains("--transport channel") && n.contains(name)),
                "{:?}",
                c.notes
            );
        }
        let c = ok("--latency --backend all");
        assert_eq!(c.notes.len(), 1);
        assert!(c.notes[0].contains("processes"), "{:?}", c.notes);
        assert!(ok("--transport channel --backend green").notes.is_empty());
        assert!(ok("--backend all").notes.is_empty());
    }

    fn columns(args: &str) -> Vec<LatencyColumn> {
        match ok(&format!("--latency --backend green {args}")).mode {
            Mode::Latency { columns, .. } => columns,
            m => panic!("{m:?}"),
        }
    }

    #[test]
    fn column_labels_name_the_whole_setting() {
        let c = columns("--columns NO_DELAY_DEQUEUE");
        assert_eq!(c[0].label, "NO_DELAY_DEQUEUE");
        assert!(!c[0].is_default());
        let c = columns("--probe-slice 1ms");
        assert_eq!(c[0].label, "slice=1ms");
        assert_eq!(c[0].probe_slice, Some(Duration::from_millis(1)));
        let c = columns("--columns default;TICK_ELIGIBLE --probe-slice 200us");
        let labels: Vec<&str> = c.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["slice=200us", "TICK_ELIGIBLE,slice=200us"]);
        assert!(columns("")[0].is_default());
        assert!(columns("--columns default")[0].is_default());
        // A preset first is fine; "default" keeps --features as given.
        let c = columns("--columns kernel,NO_DELAY_DEQUEUE;default,TICK_ELIGIBLE");
        assert_eq!(c[0].features.as_deref(), Some("kernel,NO_DELAY_DEQUEUE"));
        assert_eq!(c[1].features.as_deref(), Some("TICK_ELIGIBLE"));
    }

    #[test]
    fn conflicting_columns_are_rejected() {
        for (args, needle) in [
            ("--columns slice=100us --probe-slice 1ms", "--probe-slice"),
            ("--columns bg3 --probe-slice 1ms", "--probe-slice"),
            ("--columns slice=100us,slice=200us", "slice twice"),
            (
                "--columns NO_DELAY_DEQUEUE,DELAY_DEQUEUE",
                "DELAY_DEQUEUE twice",
            ),
            (
                "--columns TICK_ELIGIBLE,tick_eligible",
                "TICK_ELIGIBLE twice",
            ),
            ("--columns TICK_ELIGIBLE,default", "must come first"),
            ("--columns NO_HRTICK,kernel", "must come first"),
            ("--columns slice=100us;slice=100us", "same settings"),
            ("--columns default;DELAY_DEQUEUE", "same settings"),
            (
                "--columns TICK_ELIGIBLE,NO_RUN_TO_PARITY;NO_RUN_TO_PARITY,TICK_ELIGIBLE",
                "same settings",
            ),
            (
                "--features TICK_ELIGIBLE --columns default;TICK_ELIGIBLE",
                "same settings",
            ),
            ("--columns slice=5us", "between 100us and 100ms"),
            ("--columns ;", "at least one column"),
        ] {
            let m = err(&format!("--latency --backend green {args}"));
            assert!(m.contains("--columns") && m.contains(needle), "{args}: {m}");
        }
    }
}
