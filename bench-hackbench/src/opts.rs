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
//! - Runtime options (`--workers`, `--stats`) need a backend with a runtime
//!   (tokio, green, or all); `--features`, `--columns` and `--probe-slice`
//!   are green-only.
//! - `--transport unix|pipe|tcp|channel`: `pipe` and `tcp` are `-p` and
//!   `-i` (and conflict with them); `channel` is green-only (any other
//!   backend alone is an error; `--backend all` runs green alone).

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
UnixStream / pipe / TcpStream), all (every backend, then a comparison table with ratios to threads
and tokio). -T is --backend threads, -P is --backend processes; conflicting choices are an error.

Hackbench (default mode): g groups of f senders and f receivers; every sender writes l messages
of s bytes to every receiver of its group; every receiver must get exactly f*l messages (checked;
a lost, short or extra message fails the run with exit code 1). Prints 'Time: S.mmm' from the
start barrier's release to the last task finishing. Transports: UNIX socket pairs (default), pipes
(-p), TCP over 127.0.0.1 with TCP_NODELAY (-i), or, green only, --transport channel: one bounded
eevdf-rt channel per receiver instead of an fd, holding as many s-byte messages as a UNIX socket's
default send buffer does (212992 / (s + 666): 278 at 100 bytes); messages are shared buffers, and
the receiver copies each one out as read(2) would.

Latency mode (--latency): one cyclictest-style probe per --nice-levels entry sleeps to absolute
deadlines every --interval for --duration seconds and records lateness (wake - deadline), printed
as min/avg/p50/p99/max in microseconds with the cycle count, while a hackbench load (-g/-f/-s and
transport options) runs on the same backend until the probes finish. Backends: threads (probes are
OS threads with setpriority nice; a negative nice needs root or CAP_SYS_NICE, and a failure is
reported as a warning), green (green threads with task::Builder::nice and, with --probe-slice or a
slice= column, task::Builder::slice; eevdf_rt::sleep_until; every column on a fresh runtime, with
the preemptions of the probes' window), tokio (no priorities exist: the nice level only labels the
probe). Default backend: threads. Green-only: --columns, --probe-slice. With green, a Markdown table
(one column per backend / green column) follows.

Spawn mode (--spawn): each of --spawners spawners repeatedly creates a task that exits at once
and waits for it (processes: fork + waitpid, the child _exits; threads: std::thread spawn + join;
green: green spawners, eevdf_rt::spawn + join; tokio: tokio::spawn + await) for --duration
seconds, or -l spawns per spawner. Prints spawns/s. Green runs twice, with SPAWN_LOCAL (new tasks
on the spawner's worker) and NO_SPAWN_LOCAL (on the idlest worker), and counts where the spawns
went, unless --features sets SPAWN_LOCAL either way.

Durations: a number with a unit (ns, us, ms, s); a bare number means microseconds for --interval
and --probe-slice, seconds for --duration. Exit codes: 0 ok, 1 a run failed, 2 bad usage.";

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
    /// Number of groups.
    #[arg(short = 'g', long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub groups: u32,
    /// Senders per group, which is also receivers per group.
    #[arg(short = 'f', long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub fds: u32,
    /// Messages each sender sends to each receiver [default: 100]; with --spawn: spawns per spawner.
    #[arg(short = 'l', long, value_parser = clap::value_parser!(u64).range(1..))]
    pub loops: Option<u64>,
    /// Bytes per message (1..=1048576).
    #[arg(short = 's', long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=MAX_DATASIZE))]
    pub datasize: u64,
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
    /// OS worker threads for tokio and green [default: CPUs available].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub workers: Option<u32>,
    /// Print the runtime's counters after each run (tokio, green).
    #[arg(long)]
    pub stats: bool,
    /// Latency mode: cyclictest-style probes under a hackbench load.
    #[arg(long, conflicts_with = "spawn")]
    pub latency: bool,
    /// Latency mode: probe period [default: 1ms].
    #[arg(long, requires = "latency", value_parser = parse_us)]
    pub interval: Option<Duration>,
    /// Latency mode: one probe per nice level (-20..=19) [default: -19,0,19].
    #[arg(long, requires = "latency", value_delimiter = ',', allow_hyphen_values = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub nice_levels: Option<Vec<i32>>,
    /// Latency and spawn modes: how long to run [default: 5s].
    #[arg(long, value_parser = parse_secs)]
    pub duration: Option<Duration>,
    /// Latency mode, green only: table columns, ';'-separated; each is "default", feature
    /// switches ("TICK_ELIGIBLE,NO_RUN_TO_PARITY") and/or "slice=100us"; "bg3" = the
    /// docs/kernel-discussions.md §3 table.
    #[arg(long, requires = "latency")]
    pub columns: Option<String>,
    /// Latency mode, green only: slice the probes request (100us..=100ms).
    #[arg(long, requires = "latency", value_parser = parse_us)]
    pub probe_slice: Option<Duration>,
    /// Spawn mode: spawn-and-exit throughput.
    #[arg(long)]
    pub spawn: bool,
    /// Spawn mode: concurrent spawners [default: 1].
    #[arg(long, requires = "spawn", value_parser = clap::value_parser!(u32).range(1..=4096))]
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

fn validate(cli: Cli) -> Result<Config, OptsError> {
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
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
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
        // `all`: only green has channels; the others are left out.
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
        if let Some(s) = cli.probe_slice {
            check_slice(s, "--probe-slice")?;
        }
        let nice_levels = cli.nice_levels.unwrap_or_else(|| vec![-19, 0, 19]);
        if nice_levels.is_empty() || nice_levels.len() > 40 {
            return usage("--nice-levels needs 1 to 40 values in -20..=19");
        }
        let interval = cli.interval.unwrap_or(Duration::from_millis(1));
        if interval < Duration::from_micros(1) || interval > Duration::from_secs(10) {
            return usage("--interval must be between 1us and 10s");
        }
        let columns = match &cli.columns {
            None => vec![LatencyColumn {
                probe_slice: cli.probe_slice,
                ..LatencyColumn::default_column()
            }],
            Some(spec) => parse_columns(spec, cli.probe_slice)?,
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

    Ok(Config {
        mode,
        backends,
        all,
        hackbench: HackbenchConfig {
            groups: cli.groups as usize,
            fds: cli.fds as usize,
            loops: cli.loops.unwrap_or(100),
            datasize: cli.datasize as usize,
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
    })
}

fn parse_io(s: &str) -> Result<eevdf_rt::io::IoDriver, String> {
    s.parse().map_err(|e: eevdf_rt::Error| e.to_string())
}

fn check_slice(s: Duration, what: &str) -> Result<(), OptsError> {
    if s < Duration::from_micros(100) || s > Duration::from_millis(100) {
        return usage(format!("{what}: a slice must be between 100us and 100ms"));
    }
    Ok(())
}

/// Parses `--columns`: `bg3`, or `;`-separated specs of `default`,
/// feature switches and `slice=DUR`.
fn parse_columns(
    spec: &str,
    probe_slice: Option<Duration>,
) -> Result<Vec<LatencyColumn>, OptsError> {
    let spec = if spec.trim().eq_ignore_ascii_case("bg3") {
        BG3_COLUMNS
    } else {
        spec
    };
    let mut out = Vec::new();
    for col in spec.split(';').map(str::trim).filter(|c| !c.is_empty()) {
        let mut features = Vec::new();
        let mut slice = probe_slice;
        for tok in col.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            if tok.eq_ignore_ascii_case("default") {
                continue;
            }
            if let Some(v) = tok.strip_prefix("slice=") {
                let d = parse_us(v).map_err(|e| OptsError::Usage(format!("--columns: {e}")))?;
                check_slice(d, "--columns")?;
                slice = Some(d);
            } else {
                features.push(tok);
            }
        }
        let features = if features.is_empty() {
            None
        } else {
            let f = features.join(",");
            if let Err(e) = eevdf_rt::sched::Features::parse(&f) {
                return usage(format!("--columns: {e}"));
            }
            Some(f)
        };
        out.push(LatencyColumn {
            label: col.to_string(),
            features,
            probe_slice: slice,
        });
    }
    if out.is_empty() {
        return usage("--columns needs at least one column");
    }
    Ok(out)
}

/// Parses a duration; a bare number is in `bare_unit_ns` nanoseconds.
fn parse_duration(s: &str, bare_unit_ns: f64) -> Result<Duration, String> {
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
    let ns = v * scale;
    if !ns.is_finite() || ns <= 0.0 || ns > 86_400e9 {
        return Err(format!("'{s}' must be more than 0 and at most a day"));
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// A duration whose bare number means microseconds (cyclictest's `-i`).
fn parse_us(s: &str) -> Result<Duration, String> {
    parse_duration(s, 1e3)
}

/// A duration whose bare number means seconds.
fn parse_secs(s: &str) -> Result<Duration, String> {
    parse_duration(s, 1e9)
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
        assert_eq!(parse_us("250"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_us("2ms"), Ok(Duration::from_millis(2)));
        assert_eq!(parse_secs("0.3"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_secs("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_secs("100ns"), Ok(Duration::from_nanos(100)));
        assert!(parse_secs("").is_err());
        assert!(parse_secs("-1").is_err());
        assert!(parse_secs("1e99").is_err());
    }
}
