//! Command-line options (the original's, plus the backend switches) and their
//! resolution into a [`Plan`]: defaults filled in, every value checked, CPU lists
//! mapped to the CPUs each message thread and worker may use.
//!
//! This module owns option names, defaults, meanings and validation. It must not start
//! anything or print results; bad input becomes a [`UsageError`] that `main` turns into
//! exit status 2.

use std::fmt;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

use crate::cpus::CpuSet;

/// Largest `-p` transfer size (1 MiB).
pub const MAX_PIPE_BYTES: usize = 1 << 20;
/// Largest `-F` footprint (1 GiB per worker).
pub const MAX_FOOTPRINT_KIB: usize = 1 << 20;
/// Largest `-R` rate (requests/s).
pub const MAX_RPS: u64 = 1_000_000_000;
/// Largest number of workers (`-m` × `-t`).
pub const MAX_WORKERS: usize = 1 << 16;
/// Largest `--workers`: OS worker threads of the green and tokio runtimes (eevdf-rt's
/// limit, applied to tokio too; the default, the worker CPUs, is clamped to it).
pub const MAX_RUNTIME_WORKERS: usize = eevdf_rt::MAX_WORKERS;
/// Largest `-r`, `-i` and `-z`, in seconds (one day).
pub const MAX_SECONDS: u64 = 86_400;
/// Largest `-s`, in µs (10 s).
pub const MAX_SLEEP_US: u64 = 10_000_000;
/// Largest `-n`.
pub const MAX_OPERATIONS: usize = 100_000;
/// Most multiply-adds the math of one request may do: `-n` × side³ (side: the matrix
/// side of `-F`, see [`crate::math::side_for`]). 2³² is about 2 s at the 0.45 ns per
/// multiply-add measured on a 2-vCPU VM, so one request stays well within a run.
pub const MAX_REQUEST_MULADDS: u128 = 1 << 32;
/// `-n` when not given.
pub const DEFAULT_OPERATIONS: usize = 5;
/// `-s` when not given, µs.
pub const DEFAULT_SLEEP_US: u64 = 100;
/// `-F` when not given, KiB.
pub const DEFAULT_FOOTPRINT_KIB: usize = 256;
/// `--trace-capacity` when not given.
pub const DEFAULT_TRACE_CAPACITY: usize = 1 << 20;
/// Bytes of one `--trace` event: the runtime keeps `--trace-capacity` of them per
/// runtime worker, allocated when the trace starts.
pub const TRACE_EVENT_BYTES: u64 = eevdf_rt::trace::EVENT_BYTES as u64;

const ABOUT: &str =
    "schbench, the scheduler wakeup benchmark, ported to Rust with several backends";

const LONG_ABOUT: &str = "\
schbench, the scheduler wakeup benchmark, ported to Rust with several backends.

M message threads each start T workers. A worker loop iteration is a request: it
queues itself on its message thread and sleeps until woken, then sleeps -s usec,
takes a per-CPU spin lock (unless -L), does -n naive matrix multiplications over a
-F KiB footprint, unlocks, and records its wakeup latency (batch timestamp to running
again) and its request latency (before the sleep to after the math), in whole usec: a
sub-usec latency is a 0 usec sample, never dropped. A message thread
wakes every queued worker in one batch with one clock read, then waits for more.

Each backend runs the same workload and prints the original's report blocks (to
stdout), after a header line `=== backend NAME ...`:
  threads  OS threads, futex post/wait, per-CPU lock keyed by sched_getcpu
  tokio    tasks on a multi-thread tokio runtime (--workers threads), Notify as the
           token, tokio::time::sleep (1 ms timer granularity), lock per worker thread
  green    tasks on eevdf-rt (--workers worker threads), the green-aware futex as
           the token, eevdf-rt's sleep, lock per runtime worker
With --backend all, a comparison table follows the last backend.

Interim reports every -i seconds print the three blocks and `current rps: X` (the
last one-second sample). Statistics are zeroed after -w warmup seconds and every -z
seconds; `average rps` is the requests since the last zeroing divided by the seconds
since then (total requests / runtime when nothing is zeroed).

Options that a run ignores (-J without -j, --trace-capacity without --trace,
--workers, --features or --stats with a backend they do not apply to, -s/-n/-F/-L/-C
with -p) are named in a `schbench: note:` line on stderr.";

/// Which backend(s) to run.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// OS threads and futexes (what the original measures).
    Threads,
    /// Green threads on eevdf-rt.
    Green,
    /// Tasks on a multi-thread tokio runtime.
    Tokio,
    /// Every available backend, one after the other, then a comparison.
    All,
}

/// A `-M`/`-W` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuSpec {
    /// `auto`: message thread i alone on CPU i, workers on the others.
    Auto,
    /// An explicit CPU list.
    List(CpuSet),
}

impl fmt::Display for CpuSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuSpec::Auto => f.write_str("auto"),
            CpuSpec::List(set) => set.fmt(f),
        }
    }
}

fn parse_cpu_spec(arg: &str) -> Result<CpuSpec, String> {
    if arg == "auto" {
        Ok(CpuSpec::Auto)
    } else {
        CpuSet::parse_list(arg).map(CpuSpec::List)
    }
}

/// The command line, as clap parses it. See [`Plan`] for the resolved form.
#[derive(Parser, Clone, Debug)]
#[command(name = "schbench", version, about = ABOUT, long_about = LONG_ABOUT)]
pub struct Cli {
    /// Number of message threads
    #[arg(
        short = 'm',
        long = "message-threads",
        value_name = "N",
        default_value_t = 1
    )]
    pub message_threads: usize,

    /// Workers per message thread [default: ceil(CPUs / message threads)]
    #[arg(short = 't', long = "threads", value_name = "N")]
    pub threads: Option<usize>,

    /// Seconds to run, 1..=86400
    #[arg(
        short = 'r',
        long = "runtime",
        value_name = "SECS",
        default_value_t = 30
    )]
    pub runtime: u64,

    /// Seconds of warmup; statistics are zeroed when it ends
    #[arg(
        short = 'w',
        long = "warmuptime",
        value_name = "SECS",
        default_value_t = 0
    )]
    pub warmuptime: u64,

    /// Seconds between interim reports, 1..=86400
    #[arg(
        short = 'i',
        long = "intervaltime",
        value_name = "SECS",
        default_value_t = 10
    )]
    pub intervaltime: u64,

    /// Zero the statistics every N seconds, at most 86400 (0: never)
    #[arg(
        short = 'z',
        long = "zerotime",
        value_name = "SECS",
        default_value_t = 0
    )]
    pub zerotime: u64,

    /// Per-worker cache footprint of the matrix math, in KiB, at most 1048576 (1 GiB)
    /// [default: 256]
    #[arg(
        short = 'F',
        long = "footprint",
        value_name = "KIB",
        visible_alias = "cache_footprint"
    )]
    pub footprint: Option<usize>,

    /// Matrix multiplications per request, at most 100000 and at most 2^32
    /// multiply-adds per request (see --help) [default: 5]
    #[arg(
        short = 'n',
        long = "operations",
        value_name = "N",
        long_help = "Matrix multiplications per request [default: 5]. At most 100000, and the \
                     math of one request may do at most 2^32 multiply-adds (-n × side³, where \
                     side = sqrt(F·1024/24) is the matrix side of -F: 104 at the default -F \
                     256, so -n 3818 at most there); that is about 2 s on a 2-vCPU VM, so one \
                     request cannot outlast the run by hours."
    )]
    pub operations: Option<usize>,

    /// Microseconds each request sleeps before its math, at most 10000000 (10 s; 0: no
    /// sleep) [default: 100]
    #[arg(short = 's', long = "sleeptime", value_name = "USEC")]
    pub sleeptime: Option<u64>,

    /// Do not take the per-CPU lock around the math
    #[arg(short = 'L', long = "no-locking")]
    pub no_locking: bool,

    /// Calibrate: request latency times only the matrix math
    #[arg(short = 'C', long = "calibrate")]
    pub calibrate: bool,

    /// Fixed request rate (requests/s, all message threads together; 0: as fast as
    /// workers come back)
    #[arg(
        short = 'R',
        long = "rps",
        value_name = "RATE",
        default_value_t = 0,
        long_help = "Fixed request rate in requests/s, all message threads together, at most \
                     1000000000 (0: as fast as workers come back). The rate's schedule (request \
                     k due at k / rate seconds) is dealt round robin to the message threads: \
                     with M message threads, thread i issues requests i+1, i+1+M, i+1+2M, … so \
                     any rate works with any -m (-R 1 -m 2: one request a second, the threads \
                     taking turns). A message thread wakes a waiting worker only when one of \
                     its requests is due; a worker that is not needed stays queued. When no \
                     worker is free, due requests accumulate and are issued as workers return."
    )]
    pub rps: u64,

    /// Auto-RPS: adjust the request rate each second to keep the worker CPUs this % busy
    #[arg(
        short = 'A',
        long = "auto-rps",
        value_name = "PCT",
        default_value_t = 0,
        long_help = "Auto-RPS: every second, read the busy share of the worker CPUs from \
                     /proc/stat and scale the request rate by target/busy (clamped to \
                     0.5..2 per step), starting from -R (or 1000 requests/s). 1..100; 0: off."
    )]
    pub auto_rps: u32,

    /// Pipe mode: exchange messages of this many bytes instead of sleep/lock/math
    #[arg(
        short = 'p',
        long = "pipe",
        value_name = "SIZE",
        default_value_t = 0,
        long_help = "Pipe mode with SIZE-byte transfers (0: off, at most 1 MiB). Each worker \
                     shares a SIZE-byte buffer with its message thread. On every wake the \
                     message thread reads the worker's reply from the buffer and writes the \
                     next message into it; the woken worker reads the message and writes its \
                     reply. A request is then just this exchange: -s, -n, -F, -L and -C do not \
                     apply. RPS counts round trips per second."
    )]
    pub pipe: usize,

    /// CPUs for the message threads: a list (0-3,8) or `auto` (message thread i alone on
    /// CPU i, workers elsewhere; differs from the original, see --help)
    #[arg(
        short = 'M',
        long = "message-cpus",
        value_name = "CPUS",
        value_parser = parse_cpu_spec,
        long_help = "CPUs for the message threads: a list such as 0-3,8 (every message thread \
                     may run on all of them) or `auto`: message thread i runs alone on the \
                     i-th CPU this process may use, and workers run on all the other CPUs. \
                     This differs from the original, whose `auto` leaves workers allowed on \
                     the message CPUs; this port does what was intended. With the tokio \
                     backend, -M runs each message loop on its own pinned OS thread (tokio \
                     cannot pin tasks)."
    )]
    pub message_cpus: Option<CpuSpec>,

    /// CPUs for the workers: a list or `auto` (every CPU not used by -M)
    #[arg(
        short = 'W',
        long = "worker-cpus",
        value_name = "CPUS",
        value_parser = parse_cpu_spec,
        long_help = "CPUs for the workers: a list (every worker may run on all of them) or \
                     `auto`: every allowed CPU not named by -M. Default: all CPUs, except \
                     that -M auto keeps workers off the message CPUs. With tokio, the \
                     runtime's worker threads get this set."
    )]
    pub worker_cpus: Option<CpuSpec>,

    /// Write results as JSON to FILE (one object per backend, one per line)
    #[arg(
        short = 'j',
        long = "json",
        value_name = "FILE",
        long_help = "Write the results to FILE as JSON Lines: one object per backend with keys \
                     backend, features (null unless green), jobname, runtime (s), \
                     wakeup_latency and request_latency (usec: total_samples, min, max, p50, \
                     p90, p99, p99_9), rps (total_samples, min, max, p20, p50, p90), \
                     average_rps, and options (every resolved option). Percentiles lie within \
                     [min, max]; in a block with no samples, min, max and the percentiles are \
                     null."
    )]
    pub json: Option<PathBuf>,

    /// Job name recorded in the JSON output (-j)
    #[arg(short = 'J', long = "jobname")]
    pub jobname: Option<String>,

    /// Backend to run
    #[arg(long, value_enum, default_value_t = BackendChoice::All)]
    pub backend: BackendChoice,

    /// OS worker threads of the green and tokio runtimes, 1..=256 [default: CPUs available
    /// to workers, at most 256; for green, at least enough to have a worker on a CPU of
    /// every -M/-W set]
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,

    /// Green runtime feature switches, `sched_features` syntax (e.g. NO_DELAY_DEQUEUE,TTWU_QUEUE)
    #[arg(long, value_name = "LIST")]
    pub features: Option<String>,

    /// Print the green runtime's statistics table after its run
    #[arg(long)]
    pub stats: bool,

    /// Draw latency percentiles (log scale) and RPS per backend into an SVG file
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Record the green runtime's scheduling trace into FILE (Chrome JSON, for Perfetto)
    #[arg(
        long,
        value_name = "FILE.json",
        long_help = "Record every scheduling decision of the green backend's runtime (task \
                     runs per worker, wakeups with flow arrows, preemptions, migrations, \
                     steals, delayed dequeues) and write it to FILE as Chrome trace-event \
                     JSON, which ui.perfetto.dev and chrome://tracing open. Each worker keeps \
                     its last --trace-capacity events. Needs --backend green or all."
    )]
    pub trace: Option<PathBuf>,

    /// Events kept per runtime worker by --trace (32 bytes each) [default: 1048576]
    #[arg(long, value_name = "N")]
    pub trace_capacity: Option<usize>,
}

/// Why a command line was not accepted.
#[derive(Debug)]
pub enum ParseError {
    /// clap's own outcome: help, version, or a syntax error. Call `exit()` on it.
    Clap(clap::Error),
    /// A value clap accepted but the plan rejects.
    Usage(UsageError),
}

/// Bad command-line input; `main` prints it and exits with status 2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// Where message threads and workers may run; `None` means unrestricted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pinning {
    /// One entry per message thread.
    pub message: Vec<Option<CpuSet>>,
    /// Shared by every worker (for tokio: by the runtime's worker threads).
    pub worker: Option<CpuSet>,
}

impl Pinning {
    /// Whether any message thread is pinned.
    pub fn pins_messages(&self) -> bool {
        self.message.iter().any(Option::is_some)
    }
}

/// Every option resolved and checked: what a run does.
#[derive(Clone, Debug)]
pub struct Plan {
    /// `-m`.
    pub message_threads: usize,
    /// `-t` (resolved default).
    pub workers_per_message: usize,
    /// `-r`, seconds.
    pub runtime: u64,
    /// `-w`, seconds.
    pub warmup: u64,
    /// `-i`, seconds.
    pub interval: u64,
    /// `-z`, seconds (0: never).
    pub zero_every: u64,
    /// `-F`, KiB.
    pub footprint_kib: usize,
    /// `-n`.
    pub operations: usize,
    /// `-s`, µs.
    pub sleep_us: u64,
    /// Not `-L`.
    pub locking: bool,
    /// `-C`.
    pub calibrate: bool,
    /// `-R`, requests/s (0: unpaced).
    pub rps: u64,
    /// `-A`, busy % (0: off).
    pub auto_rps: u32,
    /// `-p`, bytes (0: off).
    pub pipe: usize,
    /// `-M` as given.
    pub message_cpus: Option<CpuSpec>,
    /// `-W` as given.
    pub worker_cpus: Option<CpuSpec>,
    /// What `-M`/`-W` resolve to.
    pub pinning: Pinning,
    /// `-j`.
    pub json: Option<PathBuf>,
    /// `-J`.
    pub jobname: Option<String>,
    /// `--backend`.
    pub backend: BackendChoice,
    /// `--workers` (resolved default).
    pub runtime_workers: usize,
    /// The green backend's workers: `--workers` if given; by default at least enough
    /// that a runtime worker sits on a CPU of every `-M`/`-W` set (its worker `i` is
    /// pinned to the `i`-th allowed CPU).
    pub green_workers: usize,
    /// `--features`.
    pub features: Option<String>,
    /// `--stats`.
    pub stats: bool,
    /// `--plot`.
    pub plot: Option<PathBuf>,
    /// `--trace`.
    pub trace: Option<PathBuf>,
    /// `--trace-capacity` (resolved default).
    pub trace_capacity: usize,
    /// Options given that this run ignores, one line each for `main` to print as
    /// `schbench: note: ...` on stderr (e.g. `-J` without `-j`).
    pub notes: Vec<String>,
}

impl Plan {
    /// Parses `args` (including the program name) for a process allowed to run on
    /// `allowed`.
    pub fn parse<I, S>(args: I, allowed: &CpuSet) -> Result<Plan, ParseError>
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString> + Clone,
    {
        let cli = Cli::try_parse_from(args).map_err(ParseError::Clap)?;
        Plan::resolve(cli, allowed).map_err(ParseError::Usage)
    }

    /// Fills in defaults and checks every value against `allowed` CPUs.
    pub fn resolve(cli: Cli, allowed: &CpuSet) -> Result<Plan, UsageError> {
        if allowed.is_empty() {
            return usage("this process may not run on any CPU");
        }
        let m = cli.message_threads;
        if m == 0 {
            return usage("-m/--message-threads must be at least 1");
        }
        let t = cli.threads.unwrap_or_else(|| allowed.len().div_ceil(m));
        if t == 0 {
            return usage("-t/--threads must be at least 1");
        }
        match m.checked_mul(t) {
            Some(total) if total <= MAX_WORKERS => {}
            _ => {
                return usage(format!(
                    "-m × -t must be at most {MAX_WORKERS} workers (got {m} × {t})"
                ))
            }
        }
        if !(1..=MAX_SECONDS).contains(&cli.runtime) {
            return usage(format!(
                "-r/--runtime must be 1..={MAX_SECONDS} seconds (one day)"
            ));
        }
        if !(1..=MAX_SECONDS).contains(&cli.intervaltime) {
            return usage(format!(
                "-i/--intervaltime must be 1..={MAX_SECONDS} seconds"
            ));
        }
        if cli.zerotime > MAX_SECONDS {
            return usage(format!(
                "-z/--zerotime must be at most {MAX_SECONDS} seconds (0: never)"
            ));
        }
        if cli.warmuptime >= cli.runtime {
            return usage(format!(
                "-w/--warmuptime ({}) must be shorter than -r/--runtime ({})",
                cli.warmuptime, cli.runtime
            ));
        }
        let footprint = cli.footprint.unwrap_or(DEFAULT_FOOTPRINT_KIB);
        if footprint > MAX_FOOTPRINT_KIB {
            return usage(format!(
                "-F/--footprint must be at most {MAX_FOOTPRINT_KIB} KiB"
            ));
        }
        // Every worker allocates its matrices (or, with -p, its transfer
        // buffer) and its two latency histograms before the run: refuse a
        // total the machine cannot hold, instead of an allocation abort or
        // the OOM killer mid-run.
        let histograms = 2 * crate::hist::PLAT_NR as u128 * 8;
        let per_worker = histograms
            + if cli.pipe > 0 {
                cli.pipe as u128
            } else {
                footprint as u128 * 1024
            };
        let needed = per_worker * (m as u128) * (t as u128);
        if let Some(memory) = physical_memory() {
            if needed > memory as u128 {
                let what = if cli.pipe > 0 { "-p" } else { "-F" };
                return usage(format!(
                    "{what} and the latency histograms × workers need {} MiB ({m} × {t} \
                     workers), more than this \
                     machine's {} MiB of memory",
                    needed >> 20,
                    memory >> 20
                ));
            }
        }
        let operations = cli.operations.unwrap_or(DEFAULT_OPERATIONS);
        if operations > MAX_OPERATIONS {
            return usage(format!("-n/--operations must be at most {MAX_OPERATIONS}"));
        }
        let sleep_us = cli.sleeptime.unwrap_or(DEFAULT_SLEEP_US);
        if sleep_us > MAX_SLEEP_US {
            return usage(format!(
                "-s/--sleeptime must be at most {MAX_SLEEP_US} usec (10 s)"
            ));
        }
        if cli.pipe == 0 {
            let side = crate::math::side_for(footprint) as u128;
            let muladds = operations as u128 * side * side * side;
            if muladds > MAX_REQUEST_MULADDS {
                return usage(format!(
                    "-n/--operations × side³ must be at most {MAX_REQUEST_MULADDS} multiply-adds \
                     per request (about 2 s): -n {operations} with -F {footprint} (side {side}) \
                     is {muladds}; use a smaller -n or -F"
                ));
            }
        }
        if cli.pipe > MAX_PIPE_BYTES {
            return usage(format!(
                "-p/--pipe transfer size must be at most {MAX_PIPE_BYTES} bytes (1 MiB)"
            ));
        }
        if cli.rps > MAX_RPS {
            return usage(format!("-R/--rps must be at most {MAX_RPS} requests/s"));
        }
        if cli.auto_rps > 100 {
            return usage("-A/--auto-rps is a CPU busy percentage: 1..100 (0: off)");
        }
        let pinning = resolve_pinning(
            m,
            cli.message_cpus.as_ref(),
            cli.worker_cpus.as_ref(),
            allowed,
        )?;
        if cli.trace.is_some() && !matches!(cli.backend, BackendChoice::Green | BackendChoice::All)
        {
            return usage("--trace records the green runtime: use --backend green or all");
        }
        let trace_capacity = cli.trace_capacity.unwrap_or(DEFAULT_TRACE_CAPACITY);
        if !(1..=eevdf_rt::trace::MAX_CAPACITY).contains(&trace_capacity) {
            return usage(format!(
                "--trace-capacity must be 1..={}",
                eevdf_rt::trace::MAX_CAPACITY
            ));
        }
        let runtime_workers = match cli.workers {
            Some(n) if !(1..=MAX_RUNTIME_WORKERS).contains(&n) => {
                return usage(format!(
                    "--workers must be 1..={MAX_RUNTIME_WORKERS} (runtime worker threads)"
                ))
            }
            Some(n) => n,
            None => pinning
                .worker
                .as_ref()
                .unwrap_or(allowed)
                .len()
                .min(MAX_RUNTIME_WORKERS),
        };
        let green_workers = match cli.workers {
            Some(n) => n,
            None => runtime_workers.max(workers_covering(&pinning, allowed)),
        };
        if matches!(cli.backend, BackendChoice::Green | BackendChoice::All) {
            check_green_pinning(&pinning, allowed, green_workers)?;
        }
        if cli.trace.is_some() {
            let needed =
                trace_capacity as u128 * TRACE_EVENT_BYTES as u128 * runtime_workers as u128;
            if let Some(memory) = physical_memory() {
                if needed > memory as u128 {
                    return usage(format!(
                        "--trace-capacity × --workers needs {} MiB ({trace_capacity} events of \
                         {TRACE_EVENT_BYTES} bytes × {runtime_workers} workers), more than this \
                         machine's {} MiB of memory",
                        needed >> 20,
                        memory >> 20
                    ));
                }
            }
        }
        if matches!(cli.backend, BackendChoice::Threads | BackendChoice::All) {
            // One OS thread per message thread and per worker; each worker's
            // matrices (or -p buffer) may be mapped on their own.
            // A worker allocates its three matrices back to back, and the
            // kernel merges adjacent anonymous mappings: at most one more
            // mapping per thread (counted for the message threads too).
            let buffer_maps = if cli.pipe > 0 {
                bench_common::limits::buffer_maps(cli.pipe as u64)
            } else {
                let side = crate::math::side_for(footprint) as u64;
                bench_common::limits::buffer_maps(
                    3 * side * side * crate::math::ELEMENT_BYTES as u64,
                )
            };
            let threads = (m + m * t) as u64;
            if let Err(e) = bench_common::limits::check_os_threads(threads, buffer_maps) {
                return usage(format!(
                    "the threads backend runs each message thread and worker (-m × -t) on an \
                     OS thread: {e}; use fewer workers, or --backend green or tokio"
                ));
            }
        }
        let notes = ignored_options(&cli);
        Ok(Plan {
            message_threads: m,
            workers_per_message: t,
            runtime: cli.runtime,
            warmup: cli.warmuptime,
            interval: cli.intervaltime,
            zero_every: cli.zerotime,
            footprint_kib: footprint,
            operations,
            sleep_us,
            locking: !cli.no_locking,
            calibrate: cli.calibrate,
            rps: cli.rps,
            auto_rps: cli.auto_rps,
            pipe: cli.pipe,
            message_cpus: cli.message_cpus,
            worker_cpus: cli.worker_cpus,
            pinning,
            json: cli.json,
            jobname: cli.jobname,
            backend: cli.backend,
            runtime_workers,
            green_workers,
            features: cli.features,
            stats: cli.stats,
            plot: cli.plot,
            trace: cli.trace,
            trace_capacity,
            notes,
        })
    }

    /// Total number of workers (`-m` × `-t`).
    pub fn workers(&self) -> usize {
        self.message_threads * self.workers_per_message
    }

    /// Whether message threads pace requests (`-R` or `-A`).
    pub fn paced(&self) -> bool {
        self.rps > 0 || self.auto_rps > 0
    }
}

/// Notes for options that were given but have no effect on this run.
fn ignored_options(cli: &Cli) -> Vec<String> {
    let mut notes = Vec::new();
    let green_runs = matches!(cli.backend, BackendChoice::Green | BackendChoice::All);
    if (cli.features.is_some() || cli.stats) && !green_runs {
        notes.push("--features and --stats apply to the green backend only".to_string());
    }
    if cli.workers.is_some() && cli.backend == BackendChoice::Threads {
        notes.push("--workers applies to the green and tokio backends only".to_string());
    }
    if cli.jobname.is_some() && cli.json.is_none() {
        notes.push("-J/--jobname is only written to the -j JSON output: ignored without -j".into());
    }
    if cli.trace_capacity.is_some() && cli.trace.is_none() {
        notes.push("--trace-capacity applies only with --trace".to_string());
    }
    if cli.pipe > 0 {
        let ignored: Vec<&str> = [
            ("-s", cli.sleeptime.is_some()),
            ("-n", cli.operations.is_some()),
            ("-F", cli.footprint.is_some()),
            ("-L", cli.no_locking),
            ("-C", cli.calibrate),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect();
        if !ignored.is_empty() {
            let verb = if ignored.len() == 1 { "does" } else { "do" };
            notes.push(format!(
                "{} {verb} not apply in pipe mode (-p): ignored",
                ignored.join(", ")
            ));
        }
    }
    notes
}

fn check_allowed(set: &CpuSet, option: &str, allowed: &CpuSet) -> Result<(), UsageError> {
    let missing = set.difference(allowed);
    if missing.is_empty() {
        Ok(())
    } else {
        usage(format!(
            "{option} names CPU(s) {missing} that do not exist or are not available to this process \
             (available: {allowed})"
        ))
    }
}

/// How many green runtime workers put one on a CPU of every pinned set: worker `i`
/// runs on the `i`-th allowed CPU, so a set is reached by the worker of its CPU that
/// comes first in `allowed`.
fn workers_covering(pinning: &Pinning, allowed: &CpuSet) -> usize {
    let position = |c: usize| allowed.as_slice().iter().position(|&a| a == c);
    pinning
        .message
        .iter()
        .flatten()
        .chain(pinning.worker.iter())
        .filter_map(|set| set.as_slice().iter().filter_map(|&c| position(c)).min())
        .map(|i| i + 1)
        .max()
        .unwrap_or(0)
}

/// The green backend pins eevdf-rt's worker `i` to the `i`-th allowed CPU (round
/// robin) and places pinned tasks on the workers of their CPUs: a `-M` or `-W` set
/// with no worker on any of its CPUs could not be honoured.
fn check_green_pinning(
    pinning: &Pinning,
    allowed: &CpuSet,
    green_workers: usize,
) -> Result<(), UsageError> {
    let covered = CpuSet::from_cpus(
        allowed.as_slice()[..green_workers.min(allowed.len())]
            .iter()
            .copied(),
    );
    let sets = pinning
        .message
        .iter()
        .flatten()
        .map(|s| ("-M/--message-cpus", s))
        .chain(pinning.worker.iter().map(|s| ("-W/--worker-cpus", s)));
    for (what, set) in sets {
        if set.as_slice().iter().all(|c| !covered.contains(*c)) {
            return usage(format!(
                "{what}: the green backend runs its tasks on its {green_workers} runtime \
                 worker(s), pinned to CPU(s) {covered}; none runs on {set} (raise --workers, \
                 or name CPUs among those)"
            ));
        }
    }
    Ok(())
}

fn resolve_pinning(
    m: usize,
    message: Option<&CpuSpec>,
    worker: Option<&CpuSpec>,
    allowed: &CpuSet,
) -> Result<Pinning, UsageError> {
    let message_sets: Vec<Option<CpuSet>> = match message {
        None => vec![None; m],
        Some(CpuSpec::List(set)) => {
            check_allowed(set, "-M/--message-cpus", allowed)?;
            vec![Some(set.clone()); m]
        }
        Some(CpuSpec::Auto) => {
            if m > allowed.len() {
                return usage(format!(
                    "-M auto puts each message thread alone on a CPU: {m} message threads need \
                     {m} CPUs, only {} available ({allowed})",
                    allowed.len()
                ));
            }
            allowed.as_slice()[..m]
                .iter()
                .map(|&c| Some(CpuSet::from_cpus([c])))
                .collect()
        }
    };
    let message_union = CpuSet::from_cpus(
        message_sets
            .iter()
            .flatten()
            .flat_map(|s| s.as_slice().to_vec()),
    );
    let others = || {
        let rest = allowed.difference(&message_union);
        if rest.is_empty() {
            usage(format!(
                "no CPU left for workers: the message threads use all of {allowed} \
                 (name worker CPUs with -W, or use fewer message threads)"
            ))
        } else {
            Ok(Some(rest))
        }
    };
    let worker_set = match worker {
        Some(CpuSpec::List(set)) => {
            check_allowed(set, "-W/--worker-cpus", allowed)?;
            Some(set.clone())
        }
        Some(CpuSpec::Auto) => others()?,
        None if message == Some(&CpuSpec::Auto) => others()?,
        None => None,
    };
    Ok(Pinning {
        message: message_sets,
        worker: worker_set,
    })
}

/// This machine's physical memory in bytes, if the system says.
fn physical_memory() -> Option<u64> {
    // SAFETY: sysconf only reads configuration values.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && page > 0).then(|| (pages as u64).saturating_mul(page as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_cpus() -> CpuSet {
        CpuSet::from_cpus([0, 1])
    }

    fn plan(args: &str) -> Result<Plan, String> {
        let argv = std::iter::once("schbench").chain(args.split_whitespace());
        Plan::parse(argv, &two_cpus()).map_err(|e| match e {
            ParseError::Clap(clap) => format!("clap: {}", clap.kind()),
            ParseError::Usage(usage) => usage.0,
        })
    }

    /// A worker's three matrices are one mapping (the kernel merges them):
    /// 11,000 OS threads with 400 KiB of matrices each (each matrix above
    /// malloc's mmap threshold) fit the default `vm.max_map_count` (measured with
    /// 1.2 MiB: ~5 mappings per thread), so the thread check must not
    /// refuse them; 20,000 do not fit.
    #[test]
    fn the_thread_check_counts_one_mapping_for_a_workers_matrices() {
        let Some(max) = bench_common::limits::max_map_count() else {
            return;
        };
        if max != 65_530 || physical_memory().is_none_or(|m| m < 8 << 30) {
            return; // the figures below are for the kernel's default, in 4.4 GB
        }
        let fits = plan("--backend threads -m 1 -t 10999 -F 400");
        assert!(fits.is_ok(), "{:?}", fits.err());
        let err = plan("--backend threads -m 1 -t 19999 -F 400").unwrap_err();
        assert!(err.contains("vm.max_map_count"), "{err}");
    }

    /// The green backend's worker `i` runs on the `i`-th allowed CPU: by default
    /// it starts enough workers to reach every pinned set, and an explicit
    /// `--workers` that reaches none of a set's CPUs is refused.
    #[test]
    fn green_pinning_is_honoured_or_refused() {
        let p = plan("--backend green -W 1").unwrap();
        assert_eq!((p.runtime_workers, p.green_workers), (1, 2));
        let p = plan("--backend green -M 1 -W 0").unwrap();
        assert_eq!(p.green_workers, 2);
        assert_eq!(plan("--backend green -W 0").unwrap().green_workers, 1);
        for args in ["--backend green --workers 1 -W 1", "--workers 1 -M 1 -W 0"] {
            let err = plan(args).unwrap_err();
            assert!(err.contains("none runs on 1"), "{args}: {err}");
        }
        assert!(plan("--backend tokio --workers 1 -W 1").is_ok());
        assert!(plan("--backend green --workers 2 -W 1").is_ok());
    }

    #[test]
    fn memory_beyond_the_machine_is_refused() {
        // 1 GiB per worker × 65,536 workers is 64 TiB, more than any test
        // machine, and each worker's two histograms add 76 KiB (4,864 MiB in
        // all); 1 MiB × 2 × 2 fits any.
        let err = plan("-F 1048576 -m 64 -t 1024").unwrap_err();
        assert!(
            err.contains("-F and the latency histograms × workers need 67113728 MiB"),
            "{err}"
        );
        assert!(err.contains("more than this machine's"), "{err}");
        assert!(plan("-F 1024 -m 2 -t 2").is_ok());
        if let Some(memory) = physical_memory() {
            // just over the machine: -p in whole MiB per worker
            let workers = (memory >> 20) + 1;
            if workers <= MAX_WORKERS as u64 {
                let err = plan(&format!("-p 1048576 -m 1 -t {workers}")).unwrap_err();
                assert!(
                    err.starts_with("-p and the latency histograms × workers need"),
                    "{err}"
                );
            }
        }
    }

    #[test]
    fn defaults_follow_the_original() {
        let p = plan("").unwrap();
        assert_eq!((p.message_threads, p.workers_per_message), (1, 2));
        assert_eq!(
            (p.runtime, p.warmup, p.interval, p.zero_every),
            (30, 0, 10, 0)
        );
        assert_eq!((p.footprint_kib, p.operations, p.sleep_us), (256, 5, 100));
        assert!(p.locking && !p.calibrate);
        assert_eq!((p.rps, p.auto_rps, p.pipe), (0, 0, 0));
        assert_eq!(p.backend, BackendChoice::All);
        assert_eq!(p.runtime_workers, 2);
        assert_eq!(
            p.pinning,
            Pinning {
                message: vec![None],
                worker: None
            }
        );
        assert_eq!(plan("-m 3").unwrap().workers_per_message, 1, "ceil(2/3)");
    }

    #[test]
    fn short_and_long_forms_agree() {
        let short =
            plan("-m 2 -t 3 -r 5 -w 1 -i 2 -z 3 -F 64 -n 1 -s 0 -L -C -R 100 -A 50 -p 64 -J x")
                .unwrap();
        let long = plan(
            "--message-threads 2 --threads 3 --runtime 5 --warmuptime 1 --intervaltime 2 --zerotime 3 \
             --cache_footprint 64 --operations 1 --sleeptime 0 --no-locking --calibrate --rps 100 \
             --auto-rps 50 --pipe 64 --jobname x",
        )
        .unwrap();
        for p in [&short, &long] {
            assert_eq!(
                (
                    p.message_threads,
                    p.workers_per_message,
                    p.runtime,
                    p.warmup
                ),
                (2, 3, 5, 1)
            );
            assert_eq!(
                (p.interval, p.zero_every, p.footprint_kib, p.operations),
                (2, 3, 64, 1)
            );
            assert_eq!(
                (p.sleep_us, p.locking, p.calibrate, p.rps, p.auto_rps),
                (0, false, true, 100, 50)
            );
            assert_eq!((p.pipe, p.jobname.as_deref()), (64, Some("x")));
        }
        assert_eq!(plan("--footprint 8").unwrap().footprint_kib, 8);
        assert_eq!(
            plan("--backend tokio --workers 3 --features NO_X --stats")
                .unwrap()
                .runtime_workers,
            3
        );
    }

    #[test]
    fn rejects_bad_values() {
        for (args, needle) in [
            ("-m 0", "-m/--message-threads"),
            ("-t 0", "-t/--threads"),
            ("-r 0", "-r/--runtime"),
            ("-i 0", "-i/--intervaltime"),
            ("-r 5 -w 5", "-w/--warmuptime"),
            ("-p 1048577", "1 MiB"),
            ("--workers 0", "--workers"),
            ("-A 101", "-A/--auto-rps"),
            ("-M 0-2", "CPU(s) 2"),
            ("-W 7", "CPU(s) 7"),
            ("-m 3 -M auto", "need 3 CPUs"),
            ("-m 2 -M auto", "no CPU left for workers"),
            ("-M 0,1 -W auto", "no CPU left for workers"),
            ("-m 70000 -t 1", "at most 65536"),
            ("-r 18446744073709551615", "-r/--runtime must be 1..=86400"),
            ("-r 86401", "-r/--runtime must be 1..=86400"),
            ("-i 86401", "-i/--intervaltime must be 1..=86400"),
            ("-z 86401", "-z/--zerotime must be at most 86400"),
            ("-s 10000001", "-s/--sleeptime must be at most 10000000"),
            ("-n 100001", "-n/--operations must be at most 100000"),
            ("-n 999999999999", "-n/--operations must be at most 100000"),
            ("-n 3819", "-n/--operations × side³"),
            ("-F 1048576 -n 1", "-n/--operations × side³"),
            ("--workers 257", "--workers must be 1..=256"),
            (
                "--backend tokio --workers 40000",
                "--workers must be 1..=256",
            ),
        ] {
            let err = plan(args).expect_err(args);
            assert!(err.contains(needle), "{args}: {err}");
        }
        assert!(plan("-p 1048576").is_ok());
        for ok in [
            "-r 86400 -i 86400 -z 86400 -w 86399",
            "-s 10000000",
            "-n 3818",
            "-F 1048576 -n 0",
            "-n 100000 -F 0",
            "-p 64 -n 100000",
            "--workers 256",
        ] {
            assert!(plan(ok).is_ok(), "{ok}: {:?}", plan(ok).err());
        }
    }

    #[test]
    fn ignored_options_get_a_note() {
        let notes = |args: &str| plan(args).unwrap().notes;
        assert!(notes("").is_empty());
        assert!(notes("-J x -j out.json --trace t.json --trace-capacity 5").is_empty());
        assert!(notes("--backend green --workers 2 --features NO_X").is_empty());
        assert!(notes("-p 64").is_empty(), "defaults are not 'given'");
        for (args, needle) in [
            ("-J x", "-J/--jobname"),
            (
                "--trace-capacity 5",
                "--trace-capacity applies only with --trace",
            ),
            ("--backend threads --workers 4", "--workers applies"),
            ("--backend tokio --stats", "--features and --stats"),
            ("-p 64 -L", "-L does not apply in pipe mode"),
            (
                "-p 64 -s 0 -n 1 -F 8 -L -C",
                "-s, -n, -F, -L, -C do not apply",
            ),
        ] {
            let got = notes(args);
            assert!(got.len() == 1 && got[0].contains(needle), "{args}: {got:?}");
        }
    }

    #[test]
    fn clap_rejects_syntax() {
        for args in [
            "--bogus",
            "-m x",
            "-m -1",
            "--backend fibers",
            "-M 1-0",
            "-W a",
        ] {
            let err = plan(args).expect_err(args);
            assert!(err.starts_with("clap: "), "{args}: {err}");
        }
    }

    #[test]
    fn auto_pinning_isolates_message_threads() {
        let p = plan("-M auto").unwrap();
        assert_eq!(p.pinning.message, vec![Some(CpuSet::from_cpus([0]))]);
        assert_eq!(p.pinning.worker, Some(CpuSet::from_cpus([1])));
        assert_eq!(
            p.runtime_workers, 1,
            "--workers defaults to the worker CPUs"
        );
        let q = plan("-m 2 -M auto -W 0-1").unwrap();
        assert_eq!(
            q.pinning.message,
            vec![Some(CpuSet::from_cpus([0])), Some(CpuSet::from_cpus([1]))]
        );
        assert_eq!(q.pinning.worker, Some(two_cpus()));
        let r = plan("-M 1 -W auto").unwrap();
        assert_eq!(r.pinning.message, vec![Some(CpuSet::from_cpus([1]))]);
        assert_eq!(r.pinning.worker, Some(CpuSet::from_cpus([0])));
        let s = plan("-M 1").unwrap();
        assert_eq!(
            s.pinning.worker, None,
            "an explicit -M list leaves workers unrestricted"
        );
        assert!(!plan("").unwrap().pinning.pins_messages());
    }
}
