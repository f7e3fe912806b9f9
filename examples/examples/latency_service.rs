//! A latency-sensitive service sharing its cores with CPU-heavy batch work
//! — the reason eevdf-rt exists — run on eevdf-rt and on tokio, side by side.
//!
//! ```text
//! cargo run --release -p examples --example latency_service
//! cargo run --release -p examples --example latency_service -- --rate 8000 --batch-jobs 16
//! cargo run --release -p examples --example latency_service -- --handler-slice-us 0 --features NO_PREEMPT_SHORT
//! cargo run --release -p examples --example latency_service -- --plot latency.svg
//! cargo run --release -p examples --example latency_service -- --transport tcp --tick-us 100
//! ```
//!
//! The workload, identical on both runtimes:
//!
//! * **requests** arrive open-loop at a fixed rate (`--rate`). A generator
//!   on its own OS thread (like a NIC, outside either runtime) sends each
//!   one, stamped with its *intended* send time, to one of `--handlers`
//!   handlers round-robin through a channel. A handler spends
//!   `--request-us` of CPU on it. Latency is measured from the intended
//!   send time to the end of the handler's work, so a late generator or a
//!   backlog is charged to the runtime (no coordinated omission);
//! * **batch jobs** (`--batch-jobs`, enough to keep every worker busy) run
//!   `--batch-unit-us` units of CPU work forever, calling a yield point
//!   between units: `eevdf_rt::preempt_point()` on eevdf-rt,
//!   `tokio::task::yield_now().await` on tokio.
//!
//! On eevdf-rt the handlers are green threads with a short slice
//! (`--handler-slice-us`, 100 µs) and a negative nice (`--handler-nice`,
//! −10); the batch jobs run at nice 10. A request wakes its handler
//! through the worker's wakelist; the worker enqueues it at the batch
//! job's next `preempt_point()`, and EEVDF switches to it right there if
//! it is the eligible task with the earliest virtual deadline — with
//! PREEMPT_SHORT the running batch job's slice protection does not count
//! against a wakee with a shorter slice. A request then waits at most one
//! batch unit.
//!
//! Why the nice level matters too: a virtual deadline is `vruntime +
//! slice × 1024 / weight`. At nice 0 a 100 µs handler's deadline lies
//! 100 µs (virtual) past the queue's average; a nice-10 batch job that
//! has nearly used up its request has a deadline *closer* than that, and
//! then wins the comparison (a few percent of wakeups on this workload,
//! counted as `protection_shortened`): the handler waits until the batch
//! job's protection, shortened to the handler's slice, runs out — about
//! 100–150 µs more, which is the whole p99. At nice −10 (weight 9548) the
//! handler's deadline is only ~11 µs (virtual) away and it nearly always
//! wins. Try `--handler-nice 0` to see the difference.
//!
//! On tokio the handlers are tasks on the same number of worker threads.
//! A wake from outside the runtime lands in the global inject queue. A
//! busy worker takes from it only when its local queue runs dry — which,
//! because `yield_now` parks the yielding task on a deferred list until
//! the worker has polled everything else, happens once per round of its
//! batch jobs — or every `global_queue_interval` polls (tokio tunes it to
//! about 200 µs of polling, here 4 batch units). Until then the handler
//! waits behind batch work, FIFO, with no notion of urgency: up to about
//! four units instead of one.
//!
//! Both runtimes keep every core busy with batch work, so batch throughput
//! (units/s) should come out about equal; the table prints both with their
//! ratio. Worker threads are pinned one per CPU on both runtimes
//! (eevdf-rt's default, applied to tokio's workers with `on_thread_start`;
//! `--no-pin` leaves both unpinned), so the kernel treats them alike.
//!
//! **Noise.** On a shared machine other processes take the CPU from the
//! worker threads for milliseconds at a time, and that lands directly in
//! the tail (on eevdf-rt more than on tokio: a handler queued on a worker
//! that the kernel has descheduled waits for it, while tokio's global
//! queue lets the other worker take it). So the runtimes run in
//! `--rounds` interleaved rounds (ABBA), and the table reports, per round,
//! the p99 and the share of the workers' time they spent runnable but
//! waiting for a CPU in the kernel (`/proc/self/task/*/schedstat`) — trust
//! rounds with a low OS wait. The generator asks the kernel for a 100 µs
//! slice (`sched_setattr`, Linux 6.12+) so that it sends on time while the
//! workers saturate the CPUs; its send lag is reported too. Its worst send
//! lag, per round, points at stalls of the whole machine: on the VM of
//! 2026-12-06 a trace showed neither vCPU running any of the process's
//! threads for 8.8 ms, and worst lags of 1–21 ms turned up in either
//! runtime's rounds, at random; such a stall delays the generator as much
//! as the handlers and decides the p99.9 and the maximum of any round it
//! hits. (The generator shares the CPUs with the workers, so a long lag
//! can also come from the runtime's own threads; the trace tells.)
//!
//! **Transport.** `--transport tcp` sends the requests over one loopback
//! TCP connection per handler instead, through each runtime's I/O
//! reactor. tokio's workers poll their I/O driver whenever they run out of
//! local work (once per round here); eevdf-rt's busy workers poll the
//! reactor themselves at their preemption points, at most every 50 µs,
//! and an idle worker blocks in it.

use bench_common::{out, outln};
use clap::{Parser, ValueEnum};
use eevdf_rt::sched::Features;
use eevdf_rt::sync::channel;
use eevdf_rt::WorkerStats;
use examples::hist::{self, fmt_ratio, fmt_us};
use examples::work::{burn, Calibration, Counters};
use examples::{cli, os, plot};
use hdrhistogram::Histogram;
use std::hint::black_box;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(about = "Request latency beside batch work: eevdf-rt (short slices, nice) vs tokio")]
struct Args {
    /// Measured seconds per runtime and round, after the warm-up (0.01 ..= 3600)
    #[arg(long, default_value = "1", value_parser = cli::parse_secs)]
    duration: Duration,
    /// Warm-up seconds per runtime and round (not measured; 0 ..= 3600, 0 = none)
    #[arg(long, default_value = "0.2", value_parser = cli::parse_warmup_secs)]
    warmup: Duration,
    /// Rounds, 1..=100: each runtime runs this many times, interleaved (ABBA), results summed
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Worker threads of each runtime, 1..=256 [default: the CPUs available]
    #[arg(long)]
    workers: Option<usize>,
    /// Requests per second, open loop
    #[arg(long, default_value_t = 4000.0)]
    rate: f64,
    /// CPU work per request, µs
    #[arg(long, default_value_t = 30.0)]
    request_us: f64,
    /// Handler green threads / tasks; requests are dealt round-robin [default: 4 per worker]
    #[arg(long)]
    handlers: Option<usize>,
    /// eevdf-rt: the handlers' slice in µs (100 ..= 100000; 0 = the base slice)
    #[arg(long, default_value_t = 100)]
    handler_slice_us: u64,
    /// eevdf-rt: the handlers' nice level (-20 ..= 19)
    #[arg(long, default_value_t = -10, allow_negative_numbers = true)]
    handler_nice: i32,
    /// eevdf-rt: the preemption tick in µs (100 ..= 1000000)
    #[arg(long, default_value_t = 1000)]
    tick_us: u64,
    /// CPU-bound batch jobs [default: 4 per worker]
    #[arg(long)]
    batch_jobs: Option<usize>,
    /// eevdf-rt: the batch jobs' nice level (-20 ..= 19)
    #[arg(long, default_value_t = 10, allow_negative_numbers = true)]
    batch_nice: i32,
    /// eevdf-rt: the batch jobs' slice in µs (100 ..= 100000; 0 = the base slice)
    #[arg(long, default_value_t = 0)]
    batch_slice_us: u64,
    /// Batch work between two yield points, µs
    #[arg(long, default_value_t = 50.0)]
    batch_unit_us: f64,
    /// eevdf-rt scheduler features, sched_features syntax ("NO_PREEMPT_SHORT,TICK_ELIGIBLE";
    /// "" or "default": the defaults; "kernel": the kernel's defaults)
    #[arg(long, default_value = "")]
    features: String,
    /// With --trace, the eevdf-rt side's last round is traced (warm-up included).
    #[command(flatten)]
    trace: cli::TraceOpt,
    /// eevdf-rt: the I/O driver: auto (io_uring if the kernel allows it), uring or epoll
    #[arg(long, default_value = "auto", value_name = "auto|uring|epoll", value_parser = cli::parse_io)]
    io: eevdf_rt::io::IoDriver,
    /// Leave both runtimes' worker threads unpinned (by default each runtime
    /// pins worker i to the i-th allowed CPU: eevdf-rt's default, applied
    /// to tokio's workers too so that both meet the same kernel placement)
    #[arg(long)]
    no_pin: bool,
    /// Which runtimes to run (the options marked eevdf-rt, --trace and --io
    /// are refused with `tokio` alone)
    #[arg(long, value_enum, default_value_t = Which::Both)]
    runtime: Which,
    /// How requests reach the handlers: in-memory channels, or one loopback
    /// TCP connection per handler (through each runtime's I/O reactor)
    #[arg(long, value_enum, default_value_t = Transport::Channel)]
    transport: Transport,
    /// Write an SVG plot: latency percentiles per runtime (log scale) and batch
    /// throughput (the path is checked before the run)
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Transport {
    Channel,
    Tcp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Which {
    Both,
    Green,
    Tokio,
}

/// The options that only the eevdf-rt side reads (clap ids): refused when
/// `--runtime tokio` leaves nothing to apply them to.
const GREEN_ONLY: [&str; 9] = [
    "handler_slice_us",
    "handler_nice",
    "tick_us",
    "batch_nice",
    "batch_slice_us",
    "features",
    "trace",
    "trace_capacity",
    "io",
];

/// Refuses options that would be silently ignored by the runtimes chosen.
fn check_sides(a: &Args, m: &clap::ArgMatches) -> Result<(), String> {
    if a.runtime == Which::Tokio {
        if let Some(o) = cli::first_given(m, &GREEN_ONLY) {
            return Err(format!(
                "{o} sets the eevdf-rt side, which --runtime tokio does not run: \
                 use --runtime green or both"
            ));
        }
    }
    Ok(())
}

/// The workload, validated, in the units the runtimes use.
#[derive(Clone, Debug)]
struct Plan {
    workers: usize,
    period_ns: f64,
    warmup: Duration,
    duration: Duration,
    handlers: usize,
    request_iters: u64,
    batch_jobs: usize,
    unit_iters: u64,
    handler_slice: Option<Duration>,
    handler_nice: i32,
    batch_nice: i32,
    /// `None`: the base slice.
    batch_slice: Option<Duration>,
    features: String,
    io: eevdf_rt::io::IoDriver,
    transport: Transport,
    pin: bool,
    tick: Duration,
    trace: cli::TraceOpt,
}

impl Plan {
    fn from_args(a: &Args) -> Result<Plan, String> {
        let workers = cli::check_range(
            "--workers",
            a.workers.unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map_or(1, |n| n.get().min(eevdf_rt::MAX_WORKERS))
            }),
            1..=eevdf_rt::MAX_WORKERS,
        )?;
        if !(a.rate.is_finite() && (1.0..=1e6).contains(&a.rate)) {
            return Err(format!("--rate {} is out of range (1 ..= 1000000)", a.rate));
        }
        if !(a.request_us.is_finite() && (0.0..=100_000.0).contains(&a.request_us)) {
            return Err(format!(
                "--request-us {} is out of range (0 ..= 100000)",
                a.request_us
            ));
        }
        if !(a.batch_unit_us.is_finite() && (1.0..=100_000.0).contains(&a.batch_unit_us)) {
            return Err(format!(
                "--batch-unit-us {} is out of range (1 ..= 100000)",
                a.batch_unit_us
            ));
        }
        cli::check_range("--rounds", a.rounds, 1..=100)?;
        let handlers = cli::check_range("--handlers", a.handlers.unwrap_or(4 * workers), 1..=4096)?;
        let batch_jobs = cli::check_range(
            "--batch-jobs",
            a.batch_jobs.unwrap_or(4 * workers),
            0..=4096,
        )?;
        let handler_slice = cli::optional_slice_us("--handler-slice-us", a.handler_slice_us)?;
        let handler_nice = cli::check_range("--handler-nice", a.handler_nice, -20..=19)?;
        let batch_nice = cli::check_range("--batch-nice", a.batch_nice, -20..=19)?;
        let batch_slice = cli::optional_slice_us("--batch-slice-us", a.batch_slice_us)?;
        let tick =
            Duration::from_micros(cli::check_range("--tick-us", a.tick_us, 100..=1_000_000)?);
        cli::check_features("--features", &a.features)?;
        a.trace.check(workers)?;
        if let Some(path) = &a.plot {
            cli::check_output_file("--plot", path)?;
        }
        let cal = Calibration::measure();
        Ok(Plan {
            workers,
            period_ns: 1e9 / a.rate,
            warmup: a.warmup,
            duration: a.duration,
            handlers,
            request_iters: cal.iters_for_us(a.request_us),
            batch_jobs,
            unit_iters: cal.iters_for_us(a.batch_unit_us),
            handler_slice,
            handler_nice,
            batch_nice,
            batch_slice,
            features: a.features.clone(),
            io: a.io,
            transport: a.transport,
            pin: !a.no_pin,
            tick,
            trace: a.trace.clone(),
        })
    }
}

/// One request: when the generator meant to send it.
struct Request {
    intended: Instant,
}

/// Where the generator sends requests (one entry per handler).
enum Outbox {
    Green(Vec<channel::Sender<Request>>),
    Tokio(Vec<tokio::sync::mpsc::UnboundedSender<Request>>),
    /// Blocking `std` sockets; a request is its intended time as
    /// nanoseconds since the run's start, 8 bytes little-endian.
    Tcp {
        start: Instant,
        streams: Vec<std::net::TcpStream>,
    },
}

impl Outbox {
    fn send(&mut self, handler: usize, req: Request) {
        // A handler only goes away by panicking (joining it reports that)
        // or after the run: a failed send is not an error here.
        match self {
            Outbox::Green(tx) => drop(tx[handler].send(req)),
            Outbox::Tokio(tx) => drop(tx[handler].send(req)),
            Outbox::Tcp { start, streams } => {
                let ns = (req.intended - *start).as_nanos() as u64;
                drop(streams[handler].write_all(&ns.to_le_bytes()));
            }
        }
    }
}

/// `n` loopback TCP connections: (generator end, handler end).
fn tcp_pairs(n: usize) -> std::io::Result<Vec<(std::net::TcpStream, std::net::TcpStream)>> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    (0..n)
        .map(|_| {
            let out = std::net::TcpStream::connect(addr)?;
            out.set_nodelay(true)?;
            let (inn, _) = l.accept()?;
            Ok((out, inn))
        })
        .collect()
}

/// Decodes a request read from a TCP transport.
fn decode(start: Instant, bytes: [u8; 8]) -> Request {
    Request {
        intended: start + Duration::from_nanos(u64::from_le_bytes(bytes)),
    }
}

/// A point in time at a window boundary.
struct Mark {
    at: Instant,
    units: u64,
    stats: Option<WorkerStats>,
    /// Kernel run-queue wait of the runtime's worker threads so far.
    run_delay: Option<Duration>,
}

/// What one runtime achieved in its measured windows (one per round,
/// summed).
struct Outcome {
    name: &'static str,
    workers: usize,
    /// Completion − intended send time, for requests meant to be sent in a window.
    latency: Histogram<u64>,
    /// Actual − intended send time (the generator's own lateness).
    send_lag: Histogram<u64>,
    /// Batch units completed in the windows.
    batch_units: u64,
    /// Total length of the windows.
    window: Duration,
    /// eevdf-rt counters over the windows.
    stats: Option<WorkerStats>,
    /// Kernel run-queue wait of the workers over the windows, if known.
    run_delay: Option<Duration>,
    /// Each round's figures, for the noise report.
    rounds: Vec<Round>,
}

/// One round of one runtime, for the noise report.
#[derive(Clone, Copy)]
struct Round {
    /// Request latency p99, µs.
    p99: f64,
    /// Share of the workers' time runnable but waiting for a CPU in the kernel.
    os_wait: f64,
    /// The generator's worst send lag, µs: a stall of the whole machine
    /// (the host descheduling its vCPUs) delays the generator too.
    worst_send_lag: f64,
}

impl Outcome {
    fn batch_rate(&self) -> f64 {
        self.batch_units as f64 / self.window.as_secs_f64()
    }

    /// Share of the workers' time spent runnable but waiting for a CPU in
    /// the kernel (other processes, the generator): host noise.
    fn os_wait(&self) -> f64 {
        self.run_delay.map_or(f64::NAN, |d| {
            d.as_secs_f64() / (self.window.as_secs_f64() * self.workers as f64)
        })
    }

    /// Adds another round of the same runtime.
    fn absorb(&mut self, o: Outcome) {
        self.latency.add(&o.latency).expect("same bounds");
        self.send_lag.add(&o.send_lag).expect("same bounds");
        self.batch_units += o.batch_units;
        self.window += o.window;
        self.stats = match (self.stats, o.stats) {
            (Some(mut a), Some(b)) => {
                a.add(&b);
                Some(a)
            }
            _ => None,
        };
        self.run_delay = self.run_delay.zip(o.run_delay).map(|(a, b)| a + b);
        self.rounds.extend(o.rounds);
    }
}

/// The open-loop generator, on its own OS thread with a 100 µs kernel
/// slice: sends request `i` at `start + i × period` to handler
/// `i mod handlers` (however late it is, it never skips a request or waits
/// for a reply), and marks the bounds of the measured window. Returns its
/// send lag and the two marks.
fn generate(
    plan: &Plan,
    start: Instant,
    mut outbox: Outbox,
    mark: impl Fn() -> Mark + Send,
) -> (Histogram<u64>, Mark, Mark) {
    let generator = move || {
        os::set_min_timer_slack();
        // Best effort; the header says whether the kernel supports it.
        let _ = os::set_kernel_slice(GENERATOR_SLICE);
        let measure_from = start + plan.warmup;
        let end = measure_from + plan.duration;
        let mut lag = hist::new();
        let mut first = None;
        for i in 0u64.. {
            let intended = start + Duration::from_nanos((i as f64 * plan.period_ns) as u64);
            if intended >= end {
                break;
            }
            if first.is_none() && intended >= measure_from {
                sleep_until(measure_from);
                first = Some(mark());
            }
            sleep_until(intended);
            if intended >= measure_from {
                hist::record(&mut lag, intended.elapsed());
            }
            outbox.send(i as usize % plan.handlers, Request { intended });
        }
        sleep_until(end);
        let first = first.unwrap_or_else(&mark);
        let last = mark();
        drop(outbox); // end of input: the handlers finish
        (lag, first, last)
    };
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("generator".into())
            .spawn_scoped(s, generator)
            .expect("spawning the generator thread")
            .join()
            .expect("the generator does not panic")
    })
}

/// Name prefixes of each runtime's threads (for their kernel run-queue
/// wait): eevdf-rt names its workers `ls-green-wN` (it has no other
/// thread); every tokio thread here is a worker.
const GREEN_THREADS: &str = "ls-green";
const TOKIO_THREADS: &str = "ls-tokio";

/// The kernel slice the generator asks for.
const GENERATOR_SLICE: Duration = Duration::from_micros(100);

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// The handler loop shared by both runtimes: burn the request's CPU, then
/// record its latency if it belongs to the window.
fn handle(req: Request, iters: u64, measure_from: Instant, lat: &mut Histogram<u64>) {
    black_box(burn(iters));
    if req.intended >= measure_from {
        hist::record(lat, req.intended.elapsed());
    }
}

fn outcome(
    name: &'static str,
    workers: usize,
    latency: Histogram<u64>,
    send_lag: Histogram<u64>,
    first: Mark,
    last: Mark,
) -> Outcome {
    let mut o = Outcome {
        name,
        workers,
        send_lag,
        batch_units: last.units - first.units,
        window: last.at - first.at,
        stats: first.stats.zip(last.stats).map(|(a, b)| b.since(&a)),
        run_delay: first
            .run_delay
            .zip(last.run_delay)
            .map(|(a, b)| b.saturating_sub(a)),
        rounds: Vec::new(),
        latency,
    };
    o.rounds = vec![Round {
        p99: hist::quantile_us(&o.latency, 0.99),
        os_wait: o.os_wait(),
        worst_send_lag: hist::max_us(&o.send_lag),
    }];
    o
}

/// A handler green thread's options: the latency request (slice, nice).
fn green_handler(plan: &Plan, h: usize) -> eevdf_rt::task::Builder {
    let b = eevdf_rt::task::Builder::new()
        .name(format!("handler-{h}"))
        .nice(plan.handler_nice);
    match plan.handler_slice {
        Some(s) => b.slice(s),
        None => b,
    }
}

fn run_green(plan: &Plan) -> Result<Outcome, String> {
    let rt = eevdf_rt::Builder::new()
        .workers(plan.workers)
        .thread_name(GREEN_THREADS)
        .pin_workers(plan.pin)
        .tick(plan.tick)
        .features(&plan.features)
        .io_driver(plan.io)
        .build()
        .map_err(|e| e.to_string())?;
    plan.trace.start(&rt)?;
    let spawn_err = |e: std::io::Error| format!("eevdf-rt spawn: {e}");
    let start = Instant::now() + Duration::from_millis(20);
    let measure_from = start + plan.warmup;
    let counters = Arc::new(Counters::new(plan.batch_jobs));
    let stop = Arc::new(AtomicBool::new(false));

    let mut batch = Vec::with_capacity(plan.batch_jobs);
    for j in 0..plan.batch_jobs {
        let (counters, stop, unit) = (counters.clone(), stop.clone(), plan.unit_iters);
        let mut job = eevdf_rt::task::Builder::new()
            .name(format!("batch-{j}"))
            .nice(plan.batch_nice);
        if let Some(s) = plan.batch_slice {
            job = job.slice(s);
        }
        let job = job
            .spawn_on(&rt, move || {
                let mut sum = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    sum = sum.wrapping_add(burn(unit));
                    counters.bump(j);
                    eevdf_rt::preempt_point();
                }
                sum
            })
            .map_err(spawn_err)?;
        batch.push(job);
    }

    let mut handlers = Vec::with_capacity(plan.handlers);
    let outbox = match plan.transport {
        Transport::Channel => {
            let mut senders = Vec::with_capacity(plan.handlers);
            for h in 0..plan.handlers {
                let (tx, rx) = channel::unbounded::<Request>();
                let iters = plan.request_iters;
                let handler = green_handler(plan, h)
                    .spawn_on(&rt, move || {
                        let mut lat = hist::new();
                        for req in rx {
                            handle(req, iters, measure_from, &mut lat);
                        }
                        lat
                    })
                    .map_err(spawn_err)?;
                senders.push(tx);
                handlers.push(handler);
            }
            Outbox::Green(senders)
        }
        Transport::Tcp => {
            let mut streams = Vec::with_capacity(plan.handlers);
            for (h, (out, inn)) in tcp_pairs(plan.handlers)
                .map_err(|e| format!("loopback TCP: {e}"))?
                .into_iter()
                .enumerate()
            {
                let mut inn = eevdf_rt::net::TcpStream::from_std(inn)
                    .map_err(|e| format!("eevdf-rt TcpStream: {e}"))?;
                let iters = plan.request_iters;
                let handler = green_handler(plan, h)
                    .spawn_on(&rt, move || {
                        let mut lat = hist::new();
                        let mut buf = [0u8; 8];
                        while inn.read_exact(&mut buf).is_ok() {
                            handle(decode(start, buf), iters, measure_from, &mut lat);
                        }
                        lat
                    })
                    .map_err(spawn_err)?;
                streams.push(out);
                handlers.push(handler);
            }
            Outbox::Tcp { start, streams }
        }
    };

    let (send_lag, first, last) = generate(plan, start, outbox, || Mark {
        at: Instant::now(),
        units: counters.sum(),
        stats: Some(rt.stats().total()),
        run_delay: os::threads_run_delay(GREEN_THREADS),
    });
    stop.store(true, Ordering::Relaxed);
    let mut lats = Vec::with_capacity(handlers.len());
    for h in handlers {
        lats.push(h.join().map_err(|_| "a green handler panicked")?);
    }
    for b in batch {
        black_box(b.join().map_err(|_| "a green batch job panicked")?);
    }
    plan.trace.finish(&rt)?;
    Ok(outcome(
        "eevdf-rt",
        plan.workers,
        hist::merge(&lats),
        send_lag,
        first,
        last,
    ))
}

fn run_tokio(plan: &Plan) -> Result<Outcome, String> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder
        .worker_threads(plan.workers)
        .thread_name(TOKIO_THREADS)
        .enable_all();
    if plan.pin {
        // Like eevdf-rt: the i-th thread started on the i-th allowed CPU
        // (round-robin). Only worker threads start here: nothing in this
        // program uses tokio's blocking pool.
        let cpus = os::allowed_cpus();
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        builder.on_thread_start(move || {
            if !cpus.is_empty() {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let _ = os::pin_current_thread(cpus[i % cpus.len()]);
            }
        });
    }
    let rt = builder.build().map_err(|e| format!("tokio: {e}"))?;
    let start = Instant::now() + Duration::from_millis(20);
    let measure_from = start + plan.warmup;
    let counters = Arc::new(Counters::new(plan.batch_jobs));
    let stop = Arc::new(AtomicBool::new(false));

    let batch: Vec<_> = (0..plan.batch_jobs)
        .map(|j| {
            let (counters, stop, unit) = (counters.clone(), stop.clone(), plan.unit_iters);
            rt.spawn(async move {
                let mut sum = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    sum = sum.wrapping_add(burn(unit));
                    counters.bump(j);
                    tokio::task::yield_now().await;
                }
                sum
            })
        })
        .collect();

    let iters = plan.request_iters;
    let mut handlers = Vec::with_capacity(plan.handlers);
    let outbox = match plan.transport {
        Transport::Channel => {
            let mut senders = Vec::with_capacity(plan.handlers);
            for _ in 0..plan.handlers {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Request>();
                handlers.push(rt.spawn(async move {
                    let mut lat = hist::new();
                    while let Some(req) = rx.recv().await {
                        handle(req, iters, measure_from, &mut lat);
                    }
                    Ok(lat)
                }));
                senders.push(tx);
            }
            Outbox::Tokio(senders)
        }
        Transport::Tcp => {
            let mut streams = Vec::with_capacity(plan.handlers);
            for (out, inn) in tcp_pairs(plan.handlers).map_err(|e| format!("loopback TCP: {e}"))? {
                inn.set_nonblocking(true)
                    .map_err(|e| format!("loopback TCP: {e}"))?;
                handlers.push(rt.spawn(async move {
                    use tokio::io::AsyncReadExt;
                    let mut inn = tokio::net::TcpStream::from_std(inn)?;
                    let mut lat = hist::new();
                    let mut buf = [0u8; 8];
                    while inn.read_exact(&mut buf).await.is_ok() {
                        handle(decode(start, buf), iters, measure_from, &mut lat);
                    }
                    Ok(lat)
                }));
                streams.push(out);
            }
            Outbox::Tcp { start, streams }
        }
    };

    let (send_lag, first, last) = generate(plan, start, outbox, || Mark {
        at: Instant::now(),
        units: counters.sum(),
        stats: None,
        run_delay: os::threads_run_delay(TOKIO_THREADS),
    });
    stop.store(true, Ordering::Relaxed);
    let lats = rt.block_on(async {
        let mut lats = Vec::with_capacity(handlers.len());
        for h in handlers {
            let lat: std::io::Result<Histogram<u64>> = h
                .await
                .map_err(|e| format!("a tokio handler failed: {e}"))?;
            lats.push(lat.map_err(|e| format!("tokio TcpStream: {e}"))?);
        }
        for b in batch {
            black_box(
                b.await
                    .map_err(|e| format!("a tokio batch job failed: {e}"))?,
            );
        }
        Ok::<_, String>(lats)
    })?;
    Ok(outcome(
        "tokio",
        plan.workers,
        hist::merge(&lats),
        send_lag,
        first,
        last,
    ))
}

fn main() -> ExitCode {
    let (args, matches) = cli::parse_with_matches::<Args>();
    if let Err(e) = check_sides(&args, &matches) {
        return cli::usage_error("latency_service", e);
    }
    let plan = match Plan::from_args(&args) {
        Ok(p) => p,
        Err(e) => return cli::usage_error("latency_service", e),
    };
    match run(&args, &plan) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("latency_service: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the workload on one runtime.
type RunFn = fn(&Plan) -> Result<Outcome, String>;

fn run(args: &Args, plan: &Plan) -> Result<(), String> {
    print_header(args, plan);
    let sides: &[RunFn] = match args.runtime {
        Which::Both => &[run_green, run_tokio],
        Which::Green => &[run_green],
        Which::Tokio => &[run_tokio],
    };
    let mut outcomes: Vec<Option<Outcome>> = sides.iter().map(|_| None).collect();
    for round in 0..args.rounds {
        // Alternate the order (ABBA…) so drifting machine load hits both alike.
        let order: Vec<usize> = if round % 2 == 0 {
            (0..sides.len()).collect()
        } else {
            (0..sides.len()).rev().collect()
        };
        for i in order {
            let o = sides[i](plan)?;
            match &mut outcomes[i] {
                Some(acc) => acc.absorb(o),
                slot => *slot = Some(o),
            }
        }
    }
    let outcomes: Vec<Outcome> = outcomes.into_iter().flatten().collect();
    print_table(&outcomes);
    if let Some(path) = &args.plot {
        let sides: Vec<plot::Side<'_>> = outcomes
            .iter()
            .map(|o| plot::Side {
                name: o.name,
                latency: &o.latency,
                throughput: o.batch_rate(),
            })
            .collect();
        plot::latency_and_throughput(
            path,
            &format!(
                "latency_service: {} req/s × {} µs beside {} batch jobs on {} workers",
                args.rate, args.request_us, plan.batch_jobs, plan.workers
            ),
            "batch throughput (units/s)",
            &sides,
        )?;
        outln!("plot written to {}", path.display());
    }
    Ok(())
}

fn print_header(args: &Args, plan: &Plan) {
    let load = args.rate * args.request_us / 1e6;
    outln!(
        "latency_service: {} workers; {} req/s × {} µs CPU on {} handlers ({:.0}% of one core) via {}; \
         {} batch jobs × {} µs units",
        plan.workers,
        args.rate,
        args.request_us,
        plan.handlers,
        load * 100.0,
        match plan.transport {
            Transport::Channel => "channels",
            Transport::Tcp => "loopback TCP",
        },
        plan.batch_jobs,
        args.batch_unit_us,
    );
    outln!(
        "  {} round(s) × {:.2} s measured after {:.2} s warm-up per runtime, interleaved; \
         latency = handler done − intended send time",
        args.rounds,
        plan.duration.as_secs_f64(),
        plan.warmup.as_secs_f64()
    );
    if load >= plan.workers as f64 {
        outln!("  warning: requests alone need more CPU than the workers have; latency will grow without bound");
    }
    let (green, tokio) = (args.runtime != Which::Tokio, args.runtime != Which::Green);
    if green {
        outln!(
        "  eevdf-rt: handlers slice {}, nice {}; batch slice {}, nice {}, preempt_point() between units; tick {} µs; features {}",
        plan.handler_slice
            .map_or("base".to_string(), |s| format!("{} µs", s.as_micros())),
        plan.handler_nice,
        plan.batch_slice
            .map_or("base".to_string(), |s| format!("{} µs", s.as_micros())),
        plan.batch_nice,
        plan.tick.as_micros(),
        Features::parse(&plan.features)
            .map(|f| f.diff_from_default())
            .unwrap_or_default(),
    );
    }
    if tokio {
        outln!(
            "  tokio:    multi-thread, {} workers, yield_now().await between units",
            plan.workers
        );
    }
    outln!(
        "  workers:  {}{}",
        if plan.pin {
            "pinned one per CPU"
        } else {
            "unpinned"
        },
        if green && tokio {
            " (both runtimes)"
        } else {
            ""
        }
    );
    // Probe on a scratch thread: the slice must not leak into threads
    // this one starts later (the runtimes' workers).
    let probe = std::thread::spawn(|| os::set_kernel_slice(GENERATOR_SLICE)).join();
    match probe {
        Ok(Ok(())) => outln!(
            "  generator: own OS thread, kernel slice {} µs (sched_setattr)",
            GENERATOR_SLICE.as_micros()
        ),
        Ok(Err(e)) => {
            outln!("  generator: own OS thread, default kernel slice (sched_setattr: {e})")
        }
        Err(_) => outln!("  generator: own OS thread"),
    }
}

fn print_table(outcomes: &[Outcome]) {
    let ratio_col = outcomes.len() == 2;
    out!("\n{:<22}", "");
    for o in outcomes {
        out!("{:>14}", o.name);
    }
    if ratio_col {
        out!("{:>14}", "tokio/green");
    }
    outln!();
    let row = |label: &str, f: &dyn Fn(&Outcome) -> f64, fmt: &dyn Fn(f64) -> String| {
        out!("{label:<22}");
        for o in outcomes {
            out!("{:>14}", fmt(f(o)));
        }
        if ratio_col {
            out!("{:>14}", fmt_ratio(f(&outcomes[1]), f(&outcomes[0])));
        }
        outln!();
    };
    let count = |v: f64| format!("{v:.0}");
    row("requests", &|o| o.latency.len() as f64, &count);
    for (label, q) in [
        ("latency p50", 0.5),
        ("latency p90", 0.9),
        ("latency p99", 0.99),
        ("latency p99.9", 0.999),
    ] {
        row(label, &|o| hist::quantile_us(&o.latency, q), &fmt_us);
    }
    row("latency max", &|o| hist::max_us(&o.latency), &fmt_us);
    row(
        "send lag p99",
        &|o| hist::quantile_us(&o.send_lag, 0.99),
        &fmt_us,
    );
    row("send lag max", &|o| hist::max_us(&o.send_lag), &fmt_us);
    row("batch units/s", &|o| o.batch_rate(), &count);
    let pct = |v: f64| {
        if v.is_nan() {
            "-".into()
        } else {
            format!("{:.1}%", v * 100.0)
        }
    };
    row("workers' OS wait", &|o| o.os_wait(), &pct);
    if outcomes.iter().any(|o| o.rounds.len() > 1) {
        row(
            "p99, median round",
            &|o| examples::median(o.rounds.iter().map(|r| r.p99)),
            &fmt_us,
        );
        outln!(
            "
per round: p99 (workers' OS wait; generator's worst send lag)"
        );
        for o in outcomes {
            let rounds: Vec<String> = o
                .rounds
                .iter()
                .map(|r| {
                    format!(
                        "{} ({}; {})",
                        fmt_us(r.p99),
                        pct(r.os_wait),
                        fmt_us(r.worst_send_lag)
                    )
                })
                .collect();
            outln!("  {:<10}{}", o.name, rounds.join(", "));
        }
    }
    for o in outcomes {
        if let Some(s) = &o.stats {
            let per_s = |v: u64| v as f64 / o.window.as_secs_f64();
            outln!(
                "\n{} counters per second: context_switches {:.0}, preemptions {:.0}, \
                 wakeups_remote_queued {:.0}, wakeups_remote_inline {:.0}, \
                 delayed_wakeups {:.0}, tick_preemptions {:.0}, protection_shortened {:.0}",
                o.name,
                per_s(s.context_switches),
                per_s(s.preemptions),
                per_s(s.wakeups_remote_queued),
                per_s(s.wakeups_remote_inline),
                per_s(s.delayed_wakeups),
                per_s(s.tick_preemptions),
                per_s(s.protection_shortened),
            );
        }
    }
    if ratio_col {
        let [g, t] = [&outcomes[0], &outcomes[1]];
        let (gp, tp) = (
            hist::quantile_us(&g.latency, 0.99),
            hist::quantile_us(&t.latency, 0.99),
        );
        outln!(
            "\np99: eevdf-rt {} vs tokio {} (tokio/eevdf-rt {}); batch throughput eevdf-rt/tokio {}",
            fmt_us(gp),
            fmt_us(tp),
            fmt_ratio(tp, gp),
            fmt_ratio(g.batch_rate(), t.batch_rate()),
        );
    }
}
