//! A hyper 1.x HTTP/1.1 service — unchanged hyper code — on eevdf-rt green
//! threads and on tokio, side by side, with per-route scheduling on
//! eevdf-rt: a latency route with a 100 µs slice beside a CPU-heavy route
//! at nice 10 (with a 100 µs slice too: see "Why the heavy route asks for
//! a short slice" below).
//!
//! ```text
//! cargo run --release -p examples --example http_service
//! cargo run --release -p examples --example http_service -- --rounds 3 --plot http.svg
//! cargo run --release -p examples --example http_service -- --heavy-us 5000 --heavy-unit-us 200
//! cargo run --release -p examples --example http_service -- --rounds 1 --trace http.json
//! cargo run --release -p examples --example http_service -- --features NO_WA_IO
//! cargo run --release -p examples --example http_service -- --workers 1 --split-cpus
//! cargo run --release -p examples --example http_service -- --io epoll
//! ```
//!
//! **The service** (one `async fn`, the same on both runtimes; hyper's
//! `http1::Builder::serve_connection` over `hyper_util::rt::TokioIo`):
//!
//! * `GET /latency?seq=N` answers `N` at once. On eevdf-rt the connection's
//!   green task first asks for a 100 µs slice (`--latency-slice-us`) at
//!   nice 0 (`eevdf_rt::set_slice`, `set_nice`);
//! * `GET /heavy` burns `--heavy-us` of CPU in units of `--heavy-unit-us`,
//!   with a yield point between units: `eevdf_rt::preempt_point_async()`
//!   on eevdf-rt (after `set_nice(10)` and a `--heavy-slice-us` slice),
//!   `tokio::task::yield_now().await` on tokio.
//!
//! Each connection is one green task on eevdf-rt (`spawn_future`, with
//! `compat::hyper::Timer` for hyper's timers), one tokio task on tokio.
//! The per-route settings are per request: hyper calls the service inside
//! the connection's task, so the task's nice and slice are set by the
//! route it serves.
//!
//! **Why the heavy route asks for a short slice.** EEVDF bounds how long
//! a task can wait by the *other* tasks' request sizes, not by its own.
//! A task's virtual deadline is `vruntime + slice × 1024 / weight`: at
//! nice 10 (weight 110) the base slice of 1.4 ms is a 13 ms request in
//! virtual time, and two heavy tasks sharing a worker take turns that
//! leave one of them up to ~7 ms (virtual) behind the queue's average. A
//! latency request arrives with its deadline 100 µs past the average, and
//! whenever a heavy task that is behind has a deadline earlier than that,
//! EEVDF runs the heavy task first — until its request ends, up to about a
//! millisecond of real time. Traces of this service (2026-12-05) showed
//! exactly that: runs whose latency-route p99 on the server side was
//! 150–850 µs instead of 60–80 µs, every slow wakeup waiting behind a
//! nice-10 task whose deadline was earlier. With a 100 µs heavy slice the
//! heavy tasks' requests are 0.9 ms virtual (under 100 µs real), so a
//! latency request waits for at most about one of them; the heavy route
//! loses nothing (its units yield every 50 µs anyway, and switching
//! between green threads costs well under a microsecond). The nice level
//! still sets the CPU share. `--heavy-slice-us 0` runs the heavy route
//! with the base slice to see the difference.
//!
//! **The load** (its own generator, OS threads with blocking sockets and a
//! minimal HTTP/1.1 client, outside either runtime; every response is
//! checked: status 200 and the body the request asked for):
//!
//! 1. *throughput*: `--clients` keep-alive connections send `/latency`
//!    requests back to back for `--duration`: requests per second;
//! 2. *mixed*: `--heavy-clients` connections send `/heavy` back to back
//!    (keeping every worker busy) while the `--clients` connections each
//!    send `/latency` every `--latency-interval-us`. A latency is counted
//!    from the request's scheduled send time to the end of its response
//!    (a late client is charged to the server, no coordinated omission).
//!    Beside it, per round: the clients' own send lag (from the scheduled
//!    time, or the previous response if it came later, to the start of the
//!    write: how late the generator itself was) and the
//!    p99 measured from the write instead — with two CPUs shared by the
//!    workers, the generator and the rest of the machine, a large part of
//!    a tail can be the generator's — and the *server side*: from the
//!    write to the moment the handler built its response (stamped in an
//!    `x-served-ns` header, read from the same process's monotonic
//!    clock). What lies between that and the end of the response is the
//!    response's write and the client thread's own wakeup, which the
//!    kernel schedules: on a 2-vCPU machine a client woken right after it
//!    blocked can wait for the next scheduling event on that CPU (its
//!    lag from the write it just made is still unpaid, so it does not
//!    preempt the busy worker there), and a faster server meets that
//!    more often.
//!
//! Both runtimes get `--workers` worker threads, pinned one per CPU; the
//! runtimes alternate in `--rounds` rounds (ABBA) and the table gives the
//! median of the rounds. `--trace` records eevdf-rt's scheduling trace
//! of the last round's mixed phase (docs/tracing.md); `--features` sets
//! eevdf-rt's scheduler switches (WA_IO, which places a connection's
//! readiness wakeup on the worker that polled it, is the one this service
//! leans on). The load generator shares the CPUs with the
//! server — on both runtimes alike — and asks the kernel for a 100 µs
//! slice (Linux 6.12+) so that its clients send on time. `--split-cpus`
//! instead pins the generator's threads to the CPUs the workers do not
//! use (so `--workers` must leave at least one), which takes the
//! generator's own wakeups off the workers' CPUs.

use bench_common::outln;
use clap::Parser;
use eevdf_rt::compat::hyper::Timer as GreenTimer;
use examples::hist::{self, fmt_ratio, fmt_us};
use examples::work::{burn, Calibration, Units};
use examples::{cli, os, plot};
use hdrhistogram::Histogram;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::hint::black_box;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The origin of `x-served-ns` stamps (the server and its load generator
/// share the process, so one monotonic clock serves both).
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Nanoseconds since [`EPOCH`].
fn since_epoch(t: Instant) -> u64 {
    t.saturating_duration_since(*EPOCH.get_or_init(Instant::now))
        .as_nanos() as u64
}

#[derive(Parser, Debug)]
#[command(about = "A hyper HTTP/1.1 service on eevdf-rt (per-route slice and nice) vs tokio")]
struct Args {
    /// Measured seconds per phase, runtime and round (0.01 ..= 3600); the
    /// rates are over the time each phase actually took
    #[arg(long, default_value = "1", value_parser = cli::parse_secs)]
    duration: Duration,
    /// Rounds: each runtime runs this many times, interleaved (ABBA); the table shows medians
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Worker threads of each runtime
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Keep-alive clients on the latency route
    #[arg(long, default_value_t = 20)]
    clients: usize,
    /// Mixed phase: each latency client's send period, µs
    #[arg(long, default_value_t = 5000)]
    latency_interval_us: u64,
    /// Mixed phase: keep-alive clients on the heavy route, back to back
    #[arg(long, default_value_t = 4)]
    heavy_clients: usize,
    /// CPU work per heavy request, µs (1 ..= 1000000): exactly this much, in
    /// units of --heavy-unit-us and a shorter last unit for any remainder
    #[arg(long, default_value_t = 2000.0)]
    heavy_us: f64,
    /// Heavy work between two yield points, µs (1 ..= --heavy-us)
    #[arg(long, default_value_t = 50.0)]
    heavy_unit_us: f64,
    /// eevdf-rt: the latency route's slice, µs (100 ..= 100000)
    #[arg(long, default_value_t = 100)]
    latency_slice_us: u64,
    /// eevdf-rt: the heavy route's nice level (-20 ..= 19)
    #[arg(long, default_value_t = 10, allow_negative_numbers = true)]
    heavy_nice: i32,
    /// eevdf-rt: the heavy route's slice, µs (100 ..= 100000; 0 = the base slice)
    #[arg(long, default_value_t = 100)]
    heavy_slice_us: u64,
    /// eevdf-rt: how long an idle worker polls before parking, µs (0 ..= 1000000)
    #[arg(long, default_value_t = 50)]
    idle_spin_us: u64,
    /// eevdf-rt scheduler features, sched_features syntax ("NO_WA_IO", "kernel")
    #[arg(long, default_value = "default")]
    features: String,
    /// Leave the workers of both runtimes unpinned
    #[arg(long)]
    no_pin: bool,
    /// Pin the load generator's threads to the CPUs the pinned workers do
    /// not use, so that the clients never share a CPU with a worker (needs
    /// more allowed CPUs than --workers)
    #[arg(long)]
    split_cpus: bool,
    /// Draw the latency route's percentiles (mixed phase) and the throughput to
    /// this SVG file (the path is checked before the run)
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// With --trace, the eevdf-rt side's mixed phase of the last round is traced.
    #[command(flatten)]
    trace: cli::TraceOpt,
    /// eevdf-rt's I/O driver: auto (io_uring if the kernel allows it), uring or epoll
    #[arg(long, default_value = "auto", value_name = "auto|uring|epoll", value_parser = cli::parse_io)]
    io: eevdf_rt::io::IoDriver,
}

impl Args {
    fn check(&self) -> Result<(), String> {
        cli::check_range("--rounds", self.rounds, 1..=100)?;
        cli::check_range("--workers", self.workers, 1..=eevdf_rt::MAX_WORKERS)?;
        cli::check_range("--clients", self.clients, 1..=1000)?;
        cli::check_range("--heavy-clients", self.heavy_clients, 0..=1000)?;
        cli::check_range(
            "--latency-interval-us",
            self.latency_interval_us,
            10..=10_000_000,
        )?;
        cli::check_range("--heavy-us", self.heavy_us, 1.0..=1e6)?;
        cli::check_range("--heavy-unit-us", self.heavy_unit_us, 1.0..=1e6)?;
        self.heavy_units()?;
        cli::check_range("--latency-slice-us", self.latency_slice_us, 100..=100_000)?;
        cli::check_range("--heavy-nice", self.heavy_nice, -20..=19)?;
        cli::optional_slice_us("--heavy-slice-us", self.heavy_slice_us)?;
        if self.split_cpus {
            if self.no_pin {
                return Err(
                    "--split-cpus pins the workers and the load generator apart; \
                            it cannot be combined with --no-pin"
                        .into(),
                );
            }
            let n = os::allowed_cpus().len();
            if self.workers >= n {
                return Err(format!(
                    "--split-cpus: {} worker(s) on {n} allowed CPU(s) leave none for the \
                     load generator; use fewer --workers",
                    self.workers
                ));
            }
        }
        cli::check_range("--idle-spin-us", self.idle_spin_us, 0..=1_000_000)?;
        cli::check_features("--features", &self.features)?;
        self.trace.check(self.workers)?;
        if let Some(path) = &self.plot {
            cli::check_output_file("--plot", path)?;
        }
        Ok(())
    }

    /// `--heavy-us` cut into `--heavy-unit-us` units (the last one shorter
    /// if the unit does not divide the work); a unit larger than the work
    /// is refused.
    fn heavy_units(&self) -> Result<Units, String> {
        Units::split(self.heavy_us, self.heavy_unit_us).ok_or_else(|| {
            format!(
                "--heavy-unit-us {} is larger than --heavy-us {} (a unit is at most the whole request)",
                self.heavy_unit_us, self.heavy_us
            )
        })
    }
}

// ---------------------------------------------------------------- service

/// What the service needs to know, shared by every connection.
struct Service {
    /// Heavy work: whole units per request, iterations per unit, and the
    /// iterations of a shorter last unit (0: none).
    heavy_units: u64,
    unit_iters: u64,
    last_unit_iters: u64,
    latency_slice: Duration,
    heavy_nice: i32,
    /// `None`: the runtime's base slice.
    heavy_slice: Option<Duration>,
}

/// How a handler gives way between units of heavy work.
#[derive(Clone, Copy)]
enum Side {
    Green,
    Tokio,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Green => "eevdf-rt",
            Side::Tokio => "tokio",
        }
    }

    /// The name prefix of the runtime's worker threads.
    fn thread_prefix(self) -> &'static str {
        match self {
            Side::Green => "eevdf-w",
            Side::Tokio => "tokio-rt-worker",
        }
    }
}

/// eevdf-rt: gives the calling green task (the connection's) a route's
/// nice and slice, if it does not have them already.
fn route_class(nice: i32, slice: Option<Duration>) {
    let me = eevdf_rt::current();
    if me.nice() != nice {
        let _ = eevdf_rt::set_nice(nice);
    }
    if let Some(s) = slice {
        if me.slice() != s {
            let _ = eevdf_rt::set_slice(s);
        }
    }
}

async fn handle(
    req: Request<Incoming>,
    svc: Arc<Service>,
    side: Side,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let resp = match req.uri().path() {
        "/latency" => {
            if let Side::Green = side {
                route_class(0, Some(svc.latency_slice));
            }
            let seq = req.uri().query().and_then(|q| q.strip_prefix("seq="));
            let mut r = Response::new(Full::new(Bytes::from(seq.unwrap_or("").to_owned())));
            // When the handler answered: the server side of the latency ends here.
            r.headers_mut().insert(
                "x-served-ns",
                hyper::header::HeaderValue::from(since_epoch(Instant::now())),
            );
            r
        }
        "/heavy" => {
            if let Side::Green = side {
                route_class(svc.heavy_nice, svc.heavy_slice);
            }
            let mut acc = 0u64;
            let units = svc.heavy_units + u64::from(svc.last_unit_iters > 0);
            for u in 0..units {
                acc ^= burn(if u < svc.heavy_units {
                    svc.unit_iters
                } else {
                    svc.last_unit_iters
                });
                match side {
                    // Between polls, never inside hyper's poll (a switch
                    // there could resume it on another thread).
                    Side::Green => eevdf_rt::preempt_point_async().await,
                    Side::Tokio => tokio::task::yield_now().await,
                }
            }
            Response::new(Full::new(Bytes::from(format!("{}", black_box(acc) & 1))))
        }
        _ => {
            let mut r = Response::new(Full::new(Bytes::from_static(b"not found")));
            *r.status_mut() = StatusCode::NOT_FOUND;
            r
        }
    };
    Ok(resp)
}

/// A running server on one runtime; dropping it stops the runtime.
enum Server {
    Green(eevdf_rt::Runtime),
    Tokio(tokio::runtime::Runtime),
}

impl Server {
    /// The eevdf-rt runtime, if this is one.
    fn green(&self) -> Option<&eevdf_rt::Runtime> {
        match self {
            Server::Green(rt) => Some(rt),
            Server::Tokio(_) => None,
        }
    }

    /// eevdf-rt's counters, summed over the workers.
    fn green_stats(&self) -> Option<eevdf_rt::WorkerStats> {
        match self {
            Server::Green(rt) => Some(rt.stats().total()),
            Server::Tokio(_) => None,
        }
    }

    fn stop(self) {
        match self {
            Server::Green(rt) => rt.shutdown(),
            Server::Tokio(rt) => rt.shutdown_timeout(Duration::from_millis(200)),
        }
    }
}

fn start_green(args: &Args, svc: Arc<Service>) -> Result<(Server, SocketAddr), String> {
    let rt = eevdf_rt::Builder::new()
        .workers(args.workers)
        .pin_workers(!args.no_pin)
        .idle_spin(Duration::from_micros(args.idle_spin_us))
        .features(&args.features)
        .io_driver(args.io)
        .build()
        .map_err(|e| format!("eevdf-rt: {e}"))?;
    let l = eevdf_rt::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = l.local_addr().map_err(|e| e.to_string())?;
    rt.spawn(move || {
        // The acceptor: a plain green thread with std-like blocking accept.
        while let Ok((s, _)) = l.accept() {
            let _ = s.set_nodelay(true);
            let svc = svc.clone();
            eevdf_rt::spawn_future(async move {
                let conn =
                    hyper::service::service_fn(move |req| handle(req, svc.clone(), Side::Green));
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(GreenTimer)
                    .serve_connection(TokioIo::new(s), conn)
                    .await;
            });
        }
    });
    Ok((Server::Green(rt), addr))
}

fn start_tokio(args: &Args, svc: Arc<Service>) -> Result<(Server, SocketAddr), String> {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    b.worker_threads(args.workers).enable_all();
    if !args.no_pin {
        // Like eevdf-rt: the i-th worker on the i-th allowed CPU.
        let cpus = os::allowed_cpus();
        let next = AtomicUsize::new(0);
        b.on_thread_start(move || {
            if !cpus.is_empty() {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let _ = os::pin_current_thread(cpus[i % cpus.len()]);
            }
        });
    }
    let rt = b.build().map_err(|e| format!("tokio: {e}"))?;
    let std_l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = std_l.local_addr().map_err(|e| e.to_string())?;
    std_l.set_nonblocking(true).map_err(|e| e.to_string())?;
    rt.spawn(async move {
        let Ok(l) = tokio::net::TcpListener::from_std(std_l) else {
            return;
        };
        while let Ok((s, _)) = l.accept().await {
            let _ = s.set_nodelay(true);
            let svc = svc.clone();
            tokio::spawn(async move {
                let conn =
                    hyper::service::service_fn(move |req| handle(req, svc.clone(), Side::Tokio));
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .serve_connection(TokioIo::new(s), conn)
                    .await;
            });
        }
    });
    Ok((Server::Tokio(rt), addr))
}

// ---------------------------------------------------------------- load

/// A keep-alive HTTP/1.1 client on a blocking socket: one request at a
/// time, responses with a `content-length` (what hyper sends for `Full`).
struct Client {
    s: TcpStream,
    buf: Vec<u8>,
    /// The last response's `x-served-ns` stamp, if it had one.
    served_ns: Option<u64>,
}

impl Client {
    fn connect(addr: SocketAddr) -> io::Result<Client> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        Ok(Client {
            s,
            buf: Vec::with_capacity(4096),
            served_ns: None,
        })
    }

    /// Sends `GET path` and returns the response body; an error unless the
    /// status is 200.
    fn get(&mut self, path: &str) -> io::Result<Vec<u8>> {
        let req = format!("GET {path} HTTP/1.1\r\nhost: bench\r\n\r\n");
        self.s.write_all(req.as_bytes())?;
        self.buf.clear();
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = self.s.read(&mut chunk)?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        };
        let head = std::str::from_utf8(&self.buf[..head_end]).map_err(io::Error::other)?;
        if !head.starts_with("HTTP/1.1 200") {
            return Err(io::Error::other(format!(
                "bad status: {}",
                head.lines().next().unwrap_or("")
            )));
        }
        let len = header(head, "content-length")
            .ok_or_else(|| io::Error::other("no content-length"))? as usize;
        self.served_ns = header(head, "x-served-ns");
        while self.buf.len() < head_end + len {
            let n = self.s.read(&mut chunk)?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
        if self.buf.len() != head_end + len {
            return Err(io::Error::other("more bytes than the response"));
        }
        Ok(self.buf[head_end..].to_vec())
    }

    /// `/latency?seq=N`, checking that the body is `N` and that the
    /// response carries the handler's `x-served-ns` stamp, which it returns.
    fn latency(&mut self, seq: u64) -> io::Result<u64> {
        let body = self.get(&format!("/latency?seq={seq}"))?;
        if body != seq.to_string().as_bytes() {
            return Err(io::Error::other(format!("wrong body for seq {seq}")));
        }
        self.served_ns
            .ok_or_else(|| io::Error::other(format!("no x-served-ns for seq {seq}")))
    }
}

/// The numeric value of header `name` in a response head, if present.
fn header(head: &str, name: &str) -> Option<u64> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name)
            .then(|| v.trim().parse().ok())?
    })
}

/// What one phase on one runtime produced.
#[derive(Default)]
struct Phase {
    responses: u64,
    errors: Vec<String>,
    latency: Option<Histogram<u64>>,
    /// Mixed phase: how late the clients sent — from the scheduled time, or
    /// the previous response if that came later, to the start of the write:
    /// the load generator's own lag, not the server's.
    send_lag: Option<Histogram<u64>>,
    /// Mixed phase: latency from the start of the write instead of the
    /// scheduled time (the server's share plus the client's read).
    from_send: Option<Histogram<u64>>,
    /// Mixed phase: the server side, from the start of the write to the
    /// handler's `x-served-ns` stamp (without the response's write and the
    /// client thread's wakeup).
    server: Option<Histogram<u64>>,
    heavy: u64,
    /// How long the phase's clients ran: from the first one's start to the
    /// last one's end (its last response comes after the deadline). Rates
    /// are over this.
    window: Duration,
}

/// The CPUs of the load generator: with `--split-cpus`, the allowed CPUs
/// after the first `--workers` (where both runtimes pin their workers);
/// otherwise none (the generator is not pinned).
fn generator_cpus(args: &Args) -> Arc<[usize]> {
    if args.split_cpus {
        os::allowed_cpus().into_iter().skip(args.workers).collect()
    } else {
        Arc::from([])
    }
}

/// Pins the calling generator thread (its `i`-th) to one of `cpus`, if any.
fn pin_generator(cpus: &[usize], i: usize) -> Result<(), String> {
    match cpus.len() {
        0 => Ok(()),
        n => os::pin_current_thread(cpus[i % n]).map_err(|e| format!("--split-cpus: {e}")),
    }
}

/// Throughput phase: `clients` connections back to back for `d`.
fn throughput(addr: SocketAddr, clients: usize, d: Duration, cpus: &Arc<[usize]>) -> Phase {
    let t0 = Instant::now();
    let end = t0 + d;
    let hs: Vec<_> = (0..clients)
        .map(|c| {
            let cpus = cpus.clone();
            std::thread::spawn(move || -> Result<u64, String> {
                pin_generator(&cpus, c)?;
                let _ = os::set_kernel_slice(Duration::from_micros(100));
                let mut cl = Client::connect(addr).map_err(|e| format!("client {c}: {e}"))?;
                let mut n = 0u64;
                while Instant::now() < end {
                    cl.latency(n).map_err(|e| format!("client {c}: {e}"))?;
                    n += 1;
                }
                Ok(n)
            })
        })
        .collect();
    let mut p = Phase::default();
    for h in hs {
        match h
            .join()
            .unwrap_or_else(|_| Err("client thread panicked".into()))
        {
            Ok(n) => p.responses += n,
            Err(e) => p.errors.push(e),
        }
    }
    p.window = t0.elapsed();
    p
}

/// Mixed phase: heavy clients back to back, latency clients paced.
fn mixed(addr: SocketAddr, args: &Args, cpus: &Arc<[usize]>) -> Phase {
    let d = args.duration;
    let t0 = Instant::now();
    let start = t0 + Duration::from_millis(50);
    let end = start + d;
    let period = Duration::from_micros(args.latency_interval_us);
    let heavy_clients = args.heavy_clients;
    let heavy: Vec<_> = (0..heavy_clients)
        .map(|c| {
            let cpus = cpus.clone();
            std::thread::spawn(move || -> Result<u64, String> {
                pin_generator(&cpus, c)?;
                let mut cl = Client::connect(addr).map_err(|e| format!("heavy {c}: {e}"))?;
                let mut n = 0;
                while Instant::now() < end {
                    let b = cl.get("/heavy").map_err(|e| format!("heavy {c}: {e}"))?;
                    if b != b"0" && b != b"1" {
                        return Err(format!("heavy {c}: wrong body"));
                    }
                    n += 1;
                }
                Ok(n)
            })
        })
        .collect();
    let clients = args.clients;
    let light: Vec<_> = (0..clients)
        .map(|c| {
            let cpus = cpus.clone();
            let pin_index = heavy_clients + c;
            std::thread::spawn(move || -> Result<[Histogram<u64>; 4], String> {
                pin_generator(&cpus, pin_index)?;
                let _ = os::set_kernel_slice(Duration::from_micros(100));
                let mut h = hist::new();
                let mut lag = hist::new();
                let mut from_send = hist::new();
                let mut server = hist::new();
                let mut cl = Client::connect(addr).map_err(|e| format!("client {c}: {e}"))?;
                // Spread the clients' phases over one period.
                let mut due = start + period * c as u32 / clients as u32;
                let mut seq = 0;
                // The previous response's end: a request cannot go out before it.
                let mut prev_done = start;
                while due < end {
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    }
                    let sent = Instant::now();
                    // The generator's own lag: from when the request could
                    // have gone out (its time, or the previous response if
                    // that came later) to the write.
                    hist::record(&mut lag, sent.saturating_duration_since(due.max(prev_done)));
                    let served = cl
                        .latency(seq)
                        .map_err(|e| format!("client {c}, request {seq}: {e}"))?;
                    let done = Instant::now();
                    let sent_ns = since_epoch(sent);
                    hist::record(
                        &mut server,
                        Duration::from_nanos(served.saturating_sub(sent_ns)),
                    );
                    hist::record(&mut h, done.saturating_duration_since(due));
                    hist::record(&mut from_send, done - sent);
                    prev_done = done;
                    seq += 1;
                    due += period;
                }
                Ok([h, lag, from_send, server])
            })
        })
        .collect();
    let mut p = Phase::default();
    let mut hs = Vec::new();
    let mut lags = Vec::new();
    let mut from_sends = Vec::new();
    let mut servers = Vec::new();
    for h in light {
        match h
            .join()
            .unwrap_or_else(|_| Err("client thread panicked".into()))
        {
            Ok([h, lag, from_send, server]) => {
                p.responses += h.len();
                hs.push(h);
                lags.push(lag);
                from_sends.push(from_send);
                servers.push(server);
            }
            Err(e) => p.errors.push(e),
        }
    }
    for h in heavy {
        match h
            .join()
            .unwrap_or_else(|_| Err("client thread panicked".into()))
        {
            Ok(n) => p.heavy += n,
            Err(e) => p.errors.push(e),
        }
    }
    p.latency = Some(hist::merge(&hs));
    p.send_lag = Some(hist::merge(&lags));
    p.from_send = Some(hist::merge(&from_sends));
    p.server = Some(hist::merge(&servers));
    // The heavy clients start at once, not at `start`.
    p.window = t0.elapsed();
    p
}

// ---------------------------------------------------------------- main

/// Per runtime: each round's figures.
#[derive(Default)]
struct Results {
    rps: Vec<f64>,
    p50: Vec<f64>,
    p99: Vec<f64>,
    heavy_rps: Vec<f64>,
    latency: Option<Histogram<u64>>,
    responses: u64,
    errors: Vec<String>,
    /// Mixed phase: the workers' share of time runnable but not running.
    os_wait: Vec<f64>,
    /// Mixed phase: p99 of the clients' send lag (µs).
    send_p99: Vec<f64>,
    /// Mixed phase: p99 of the latency from the start of the write (µs).
    from_send_p99: Vec<f64>,
    /// Mixed phase: p99 of the server side (µs).
    server_p99: Vec<f64>,
    /// eevdf-rt's counters in the last mixed phase.
    counters: Option<String>,
    /// eevdf-rt's I/O driver (what `--io` resolved to).
    io_driver: Option<String>,
}

fn run_side(
    args: &Args,
    svc: &Arc<Service>,
    side: Side,
    trace: bool,
    r: &mut Results,
) -> Result<(), String> {
    let (server, addr) = match side {
        Side::Green => start_green(args, svc.clone())?,
        Side::Tokio => start_tokio(args, svc.clone())?,
    };
    // Warm-up: connections, stacks, caches.
    let cpus = generator_cpus(args);
    let _ = throughput(addr, args.clients, Duration::from_millis(100), &cpus);
    let t = throughput(addr, args.clients, args.duration, &cpus);
    let wait0 = os::threads_run_delay(side.thread_prefix());
    let stats0 = server.green_stats();
    if let Some(rt) = server.green() {
        r.io_driver = Some(rt.io_driver().to_string());
    }
    let traced = server.green().filter(|_| trace);
    if let Some(rt) = traced {
        args.trace.start(rt)?;
    }
    let t0 = Instant::now();
    let m = mixed(addr, args, &cpus);
    let elapsed = t0.elapsed();
    if let Some(rt) = traced {
        args.trace.finish(rt)?;
    }
    if let (Some(a), Some(b)) = (wait0, os::threads_run_delay(side.thread_prefix())) {
        r.os_wait
            .push((b - a).as_secs_f64() / (elapsed.as_secs_f64() * args.workers as f64));
    }
    if let (Some(a), Some(b)) = (stats0, server.green_stats()) {
        let per_s = |x: u64, y: u64| (y - x) as f64 / elapsed.as_secs_f64();
        r.counters = Some(format!(
            "context_switches {:.0}/s, preemptions {:.0}/s, wakeups_remote_queued {:.0}/s, wakeups_local {:.0}/s",
            per_s(a.context_switches, b.context_switches),
            per_s(a.preemptions, b.preemptions),
            per_s(a.wakeups_remote_queued, b.wakeups_remote_queued),
            per_s(a.wakeups_local, b.wakeups_local),
        ));
    }
    server.stop();
    r.rps.push(t.responses as f64 / t.window.as_secs_f64());
    r.heavy_rps.push(m.heavy as f64 / m.window.as_secs_f64());
    r.responses += t.responses + m.responses + m.heavy;
    r.errors.extend(t.errors);
    r.errors.extend(m.errors);
    if let Some(h) = m.send_lag {
        r.send_p99.push(hist::quantile_us(&h, 0.99));
    }
    if let Some(h) = m.from_send {
        r.from_send_p99.push(hist::quantile_us(&h, 0.99));
    }
    if let Some(h) = m.server {
        r.server_p99.push(hist::quantile_us(&h, 0.99));
    }
    if let Some(h) = m.latency {
        r.p50.push(hist::quantile_us(&h, 0.5));
        r.p99.push(hist::quantile_us(&h, 0.99));
        r.latency = Some(match r.latency.take() {
            Some(all) => hist::merge([&all, &h]),
            None => h,
        });
    }
    Ok(())
}

fn run(args: &Args) -> Result<bool, String> {
    let cal = Calibration::measure();
    let units = args.heavy_units()?;
    let svc = Arc::new(Service {
        heavy_units: units.full,
        unit_iters: cal.iters_for_us(units.unit_us),
        last_unit_iters: if units.rest_us > 0.0 {
            cal.iters_for_us(units.rest_us)
        } else {
            0
        },
        latency_slice: Duration::from_micros(args.latency_slice_us),
        heavy_nice: args.heavy_nice,
        heavy_slice: cli::optional_slice_us("--heavy-slice-us", args.heavy_slice_us)?,
    });
    let heavy_desc = if units.rest_us > 0.0 {
        format!(
            "{} × {} µs + {} µs",
            units.full, units.unit_us, units.rest_us
        )
    } else {
        format!("{} × {} µs", units.full, units.unit_us)
    };
    let heavy_slice = match args.heavy_slice_us {
        0 => "the base slice".to_string(),
        us => format!("a {us} µs slice"),
    };
    outln!(
        "http_service: hyper http1, {} workers, {} rounds × {:?} per phase; {} keep-alive clients; \
         mixed: /latency every {} µs per client beside {} /heavy clients ({} µs: {}, nice {} and {heavy_slice} on eevdf-rt); \
         latency route slice {} µs on eevdf-rt",
        args.workers,
        args.rounds,
        args.duration,
        args.clients,
        args.latency_interval_us,
        args.heavy_clients,
        units.total_us(),
        heavy_desc,
        args.heavy_nice,
        args.latency_slice_us
    );
    let sides = [Side::Green, Side::Tokio];
    let mut results = [Results::default(), Results::default()];
    for round in 0..args.rounds {
        // ABBA: drifting machine load hits both alike.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let last = round + 1 == args.rounds;
            run_side(args, &svc, sides[i], last, &mut results[i])?;
        }
    }
    outln!();
    outln!(
        "{:<10}{:>14}{:>14}{:>14}{:>14}{:>12}",
        "runtime",
        "req/s (thr.)",
        "latency p50",
        "latency p99",
        "heavy req/s",
        "errors"
    );
    for (side, r) in sides.iter().zip(&results) {
        outln!(
            "{:<10}{:>14.0}{:>14}{:>14}{:>14.0}{:>12}",
            side.name(),
            examples::median(r.rps.clone()),
            fmt_us(examples::median(r.p50.clone())),
            fmt_us(examples::median(r.p99.clone())),
            examples::median(r.heavy_rps.clone()),
            r.errors.len()
        );
    }
    let [g, t] = &results;
    outln!(
        "eevdf-rt / tokio: throughput {}, latency-route p99 {} (medians of {} interleaved rounds)",
        fmt_ratio(
            examples::median(g.rps.clone()),
            examples::median(t.rps.clone())
        ),
        fmt_ratio(
            examples::median(g.p99.clone()),
            examples::median(t.p99.clone())
        ),
        args.rounds
    );
    outln!(
        "  from the clients' write instead of the scheduled time: p99 {} vs {} ({}); \
         the clients' own send lag p99 {} vs {}",
        fmt_us(examples::median(g.from_send_p99.clone())),
        fmt_us(examples::median(t.from_send_p99.clone())),
        fmt_ratio(
            examples::median(g.from_send_p99.clone()),
            examples::median(t.from_send_p99.clone())
        ),
        fmt_us(examples::median(g.send_p99.clone())),
        fmt_us(examples::median(t.send_p99.clone())),
    );
    outln!(
        "  server side (from the write to the handler's response, without the response's \
         write and the client's wakeup): p99 {} vs {} ({})",
        fmt_us(examples::median(g.server_p99.clone())),
        fmt_us(examples::median(t.server_p99.clone())),
        fmt_ratio(
            examples::median(g.server_p99.clone()),
            examples::median(t.server_p99.clone())
        ),
    );
    outln!(
        "mixed phase, per round: latency-route p99 (clients' send lag p99; p99 from the write; \
         server side p99; workers' OS wait: runnable, not running)"
    );
    for (side, r) in sides.iter().zip(&results) {
        let rounds: Vec<String> = (0..r.p99.len())
            .map(|i| {
                format!(
                    "{} ({}; {}; {}; {:.1}%)",
                    fmt_us(r.p99[i]),
                    fmt_us(r.send_p99[i]),
                    fmt_us(r.from_send_p99[i]),
                    fmt_us(r.server_p99[i]),
                    r.os_wait.get(i).map_or(f64::NAN, |w| w * 100.0)
                )
            })
            .collect();
        outln!("  {:<10}{}", side.name(), rounds.join(", "));
    }
    if let Some(d) = &results[0].io_driver {
        outln!("eevdf-rt I/O driver: {d}");
    }
    if let Some(c) = &results[0].counters {
        outln!("eevdf-rt counters, last mixed phase: {c}");
    }
    let mut ok = true;
    for (side, r) in sides.iter().zip(&results) {
        if r.errors.is_empty() {
            outln!("{}: all {} responses correct", side.name(), r.responses);
        } else {
            ok = false;
            for e in r.errors.iter().take(5) {
                eprintln!("http_service: {}: {e}", side.name());
            }
        }
    }
    if let Some(path) = &args.plot {
        let empty = hist::new();
        let ps: Vec<plot::Side<'_>> = sides
            .iter()
            .zip(&results)
            .map(|(s, r)| plot::Side {
                name: s.name(),
                latency: r.latency.as_ref().unwrap_or(&empty),
                throughput: examples::median(r.rps.clone()),
            })
            .collect();
        plot::latency_and_throughput(
            path,
            "hyper http1: /latency beside /heavy (left), keep-alive throughput (right)",
            "req/s, 20 keep-alive clients",
            &ps,
        )?;
        outln!("plot: {}", path.display());
    }
    Ok(ok)
}

fn main() -> ExitCode {
    let args: Args = cli::parse();
    if let Err(e) = args.check() {
        return cli::usage_error("http_service", e);
    }
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("http_service: {e}");
            ExitCode::FAILURE
        }
    }
}
