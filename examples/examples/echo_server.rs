//! A TCP echo server on green threads — one green thread per connection,
//! written like `std::net` code — with a built-in load generator that
//! verifies every echoed byte and reports round-trip percentiles and
//! throughput.
//!
//! ```text
//! cargo run --release -p examples --example echo_server
//! cargo run --release -p examples --example echo_server -- --clients 200 --requests 500 --size 1024
//! cargo run --release -p examples --example echo_server -- --client-threads
//! cargo run --release -p examples --example echo_server -- --listen 127.0.0.1:7000
//! cargo run --release -p examples --example echo_server -- --connect 127.0.0.1:7000
//! ```
//!
//! By default the server and `--clients` clients share one eevdf-rt
//! runtime: the clients are green threads too, each with its own
//! connection, sending `--requests` messages of `--size` bytes one at a
//! time (write the message, read it back, compare). With
//! `--client-threads` the clients are OS threads using `std::net` instead,
//! so every wakeup of a server green thread comes from outside the runtime
//! (the reactor) and the two sides compete for the CPUs through the kernel.
//!
//! `--listen ADDR` runs only the server, until SIGINT (Ctrl-C) or SIGTERM:
//! then it stops the server, writes the `--trace` file if asked, and
//! exits 0. `--connect ADDR` runs only the load against any echo server.
//!
//! The server is the whole of [`serve`] and [`echo`]: an accept loop that
//! spawns a green thread per connection, and a read/write loop. A green
//! thread that blocks in `read` parks; its worker runs another connection's
//! green thread meanwhile; the reactor wakes it when data arrive.

use bench_common::outln;
use clap::Parser;
use eevdf_rt::net::{TcpListener, TcpStream};
use examples::cli;
use examples::hist::{self, fmt_us};
use hdrhistogram::Histogram;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(about = "TCP echo server on green threads, with a verifying load generator")]
struct Args {
    /// Worker threads of the runtime, 1..=256 [default: the CPUs available]
    #[arg(long)]
    workers: Option<usize>,
    /// Concurrent client connections
    #[arg(long, default_value_t = 50)]
    clients: usize,
    /// Requests (round trips) per client
    #[arg(long, default_value_t = 2000)]
    requests: u32,
    /// Bytes per request (1 ..= 65536)
    #[arg(long, default_value_t = 64)]
    size: usize,
    /// Run the clients on OS threads (std::net) instead of green threads
    #[arg(long)]
    client_threads: bool,
    /// Only run the server, on this address, until SIGINT (Ctrl-C) or SIGTERM
    /// (then write the --trace file, if any, and exit 0)
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["connect", "clients", "requests", "size", "client_threads"])]
    listen: Option<String>,
    /// Only run the load, against the echo server at this address
    #[arg(long, value_name = "ADDR")]
    connect: Option<String>,
    /// Scheduler features, sched_features syntax ("" or `default`: the defaults;
    /// `kernel`: the kernel's defaults)
    #[arg(long, default_value = "")]
    features: String,
    #[command(flatten)]
    trace: cli::TraceOpt,
    /// I/O driver: auto (io_uring if the kernel allows it), uring or epoll
    #[arg(long, default_value = "auto", value_name = "auto|uring|epoll", value_parser = cli::parse_io)]
    io: eevdf_rt::io::IoDriver,
}

/// Largest request: a client writes a whole message before reading the
/// echo, so a message must fit in the sockets' buffers.
const MAX_SIZE: usize = 64 * 1024;

// ---------------------------------------------------------------- server

/// Accepts connections forever, one green thread each.
fn serve(listener: TcpListener) -> io::Result<()> {
    loop {
        let (stream, _peer) = listener.accept()?;
        eevdf_rt::spawn(move || {
            // A client that resets its connection only ends its own thread.
            let _ = echo(stream);
        });
    }
}

/// Echoes everything read until the peer closes; returns the bytes echoed.
fn echo(mut s: TcpStream) -> io::Result<u64> {
    s.set_nodelay(true)?;
    let mut buf = vec![0u8; MAX_SIZE];
    let mut total = 0;
    loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Ok(total);
        }
        s.write_all(&buf[..n])?;
        total += n as u64;
    }
}

/// SIGINT and SIGTERM, blocked on the calling thread and on every thread
/// it starts afterwards (they inherit the mask: the runtime's workers), so
/// that they wait, pending, for [`StopSignals::wait`] instead of killing
/// the process before the trace is written.
struct StopSignals(libc::sigset_t);

impl StopSignals {
    /// Blocks the two signals on the calling thread.
    fn block() -> io::Result<StopSignals> {
        // SAFETY: `set` is a plain sigset_t, initialised by sigemptyset
        // before use; pthread_sigmask only reads it (no old mask asked for).
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            match libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) {
                0 => Ok(StopSignals(set)),
                rc => Err(io::Error::from_raw_os_error(rc)),
            }
        }
    }

    /// Waits up to `timeout` for one of the signals; its name if one came.
    fn wait(&self, timeout: Duration) -> Option<&'static str> {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: the set and the timeout are valid for the call; a null
        // siginfo pointer is allowed (the details are not wanted).
        match unsafe { libc::sigtimedwait(&self.0, std::ptr::null_mut(), &ts) } {
            libc::SIGINT => Some("SIGINT"),
            libc::SIGTERM => Some("SIGTERM"),
            _ => None, // the timeout, or EINTR
        }
    }
}

/// `--listen`: serves on `addr` until SIGINT or SIGTERM, then writes the
/// trace (if asked) and returns; an accept error ends it too, as an error.
fn listen(
    args: &Args,
    rt: eevdf_rt::Runtime,
    signals: &StopSignals,
    addr: SocketAddr,
    workers: usize,
) -> Result<(), String> {
    let listener = TcpListener::bind(addr).map_err(|e| format!("bind {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    outln!(
        "echo_server: listening on {local} ({workers} workers); Ctrl-C (SIGINT) or SIGTERM to stop"
    );
    let server = rt.spawn(move || serve(listener));
    let signal = loop {
        if server.is_finished() {
            let e = match server.join() {
                Ok(Err(e)) => format!("accept: {e}"),
                _ => "the accept loop ended".to_string(),
            };
            args.trace.finish(&rt)?;
            return Err(e);
        }
        if let Some(sig) = signals.wait(Duration::from_millis(100)) {
            break sig;
        }
    };
    outln!("echo_server: {signal}: stopping the server");
    args.trace.finish(&rt)?;
    // Dropping the runtime unwinds the accept loop and the connections.
    drop(rt);
    Ok(())
}

// ---------------------------------------------------------------- clients

/// The bytes client `client` sends in request `req`: different for every
/// client, request and offset, so a misrouted or stale echo is caught.
fn fill(buf: &mut [u8], client: usize, req: u32) {
    let seed = (client as u32).wrapping_mul(0x9E37_79B9) ^ req.wrapping_mul(0x85EB_CA6B);
    for (i, b) in buf.iter_mut().enumerate() {
        let x = seed.wrapping_add(i as u32).wrapping_mul(0xC2B2_AE35);
        *b = (x >> 24) as u8;
    }
}

/// One client's session on a connected stream (green or std): `requests`
/// round trips, each verified byte for byte.
fn session<S: Read + Write>(
    mut s: S,
    client: usize,
    requests: u32,
    size: usize,
) -> Result<Histogram<u64>, String> {
    let mut out = vec![0u8; size];
    let mut back = vec![0u8; size];
    let mut rtt = hist::new();
    for req in 0..requests {
        fill(&mut out, client, req);
        let t = Instant::now();
        s.write_all(&out)
            .and_then(|()| s.read_exact(&mut back))
            .map_err(|e| format!("client {client}, request {req}: {e}"))?;
        hist::record(&mut rtt, t.elapsed());
        if let Some(i) = out.iter().zip(&back).position(|(a, b)| a != b) {
            return Err(format!(
                "client {client}, request {req}: echoed byte {i} is {:#04x}, sent {:#04x}",
                back[i], out[i]
            ));
        }
    }
    Ok(rtt)
}

/// The load's shape.
#[derive(Clone, Copy, Debug)]
struct Load {
    addr: SocketAddr,
    clients: usize,
    requests: u32,
    size: usize,
}

/// What the load measured.
struct Report {
    rtt: Histogram<u64>,
    elapsed: Duration,
}

/// Clients as green threads on `rt`. All connect, meet at a barrier, then
/// run; the time is taken from the barrier to the last one finishing.
fn load_green(rt: &eevdf_rt::Runtime, load: Load) -> Result<Report, String> {
    let start = Arc::new(eevdf_rt::sync::Barrier::new(load.clients + 1));
    let mut handles = Vec::with_capacity(load.clients);
    for c in 0..load.clients {
        let start = start.clone();
        let h = eevdf_rt::task::Builder::new()
            .name(format!("client-{c}"))
            .stack_size(64 * 1024)
            .spawn_on(rt, move || {
                let s = TcpStream::connect(load.addr);
                start.wait();
                let s = s.map_err(|e| format!("client {c}: connect {}: {e}", load.addr))?;
                s.set_nodelay(true).map_err(|e| e.to_string())?;
                session(s, c, load.requests, load.size)
            })
            .map_err(|e| format!("spawning client {c}: {e}"))?;
        handles.push(h);
    }
    start.wait(); // from this OS thread: blocks it like std's Barrier
    let t = Instant::now();
    let mut rtts = Vec::with_capacity(load.clients);
    for h in handles {
        rtts.push(h.join().map_err(|_| "a client green thread panicked")??);
    }
    Ok(Report {
        elapsed: t.elapsed(),
        rtt: hist::merge(&rtts),
    })
}

/// Clients as OS threads with `std::net`.
fn load_threads(load: Load) -> Result<Report, String> {
    let start = Arc::new(std::sync::Barrier::new(load.clients + 1));
    let mut handles = Vec::with_capacity(load.clients);
    for c in 0..load.clients {
        let start = start.clone();
        let h = std::thread::Builder::new()
            .name(format!("client-{c}"))
            .stack_size(256 * 1024)
            .spawn(move || {
                let s = std::net::TcpStream::connect(load.addr);
                start.wait();
                let s = s.map_err(|e| format!("client {c}: connect {}: {e}", load.addr))?;
                s.set_nodelay(true).map_err(|e| e.to_string())?;
                session(s, c, load.requests, load.size)
            })
            .map_err(|e| format!("spawning client thread {c}: {e}"))?;
        handles.push(h);
    }
    start.wait();
    let t = Instant::now();
    let mut rtts = Vec::with_capacity(load.clients);
    for h in handles {
        rtts.push(h.join().map_err(|_| "a client thread panicked")??);
    }
    Ok(Report {
        elapsed: t.elapsed(),
        rtt: hist::merge(&rtts),
    })
}

// ---------------------------------------------------------------- main

fn main() -> ExitCode {
    let args: Args = cli::parse();
    let checked = check(&args);
    let (workers, addr) = match checked {
        Ok(v) => v,
        Err(e) => return cli::usage_error("echo_server", e),
    };
    match run(&args, workers, addr) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("echo_server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Validates the options; returns the worker count and the address of
/// `--listen` / `--connect`, if any.
fn check(a: &Args) -> Result<(usize, Option<SocketAddr>), String> {
    let workers = cli::check_range(
        "--workers",
        a.workers.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(eevdf_rt::MAX_WORKERS))
        }),
        1..=eevdf_rt::MAX_WORKERS,
    )?;
    cli::check_range("--clients", a.clients, 1..=10_000)?;
    cli::check_range("--requests", a.requests, 1..=100_000_000)?;
    cli::check_range("--size", a.size, 1..=MAX_SIZE)?;
    cli::check_features("--features", &a.features)?;
    a.trace.check(workers)?;
    let addr = match a.listen.as_deref().or(a.connect.as_deref()) {
        None => None,
        Some(s) => Some(
            s.to_socket_addrs()
                .map_err(|e| format!("address `{s}`: {e}"))?
                .next()
                .ok_or_else(|| format!("address `{s}` resolves to nothing"))?,
        ),
    };
    Ok((workers, addr))
}

fn run(args: &Args, workers: usize, addr: Option<SocketAddr>) -> Result<(), String> {
    // Before any thread starts, so that the runtime's threads inherit it.
    let signals = match &args.listen {
        Some(_) => Some(StopSignals::block().map_err(|e| format!("blocking SIGINT: {e}"))?),
        None => None,
    };
    let needs_runtime = args.connect.is_none() || !args.client_threads;
    let rt = if needs_runtime {
        Some(
            eevdf_rt::Builder::new()
                .workers(workers)
                .features(&args.features)
                .io_driver(args.io)
                .build()
                .map_err(|e| e.to_string())?,
        )
    } else {
        None
    };
    if let Some(rt) = &rt {
        args.trace.start(rt)?;
    }

    if let Some(signals) = &signals {
        let addr = addr.expect("checked");
        let rt = rt.expect("the server needs a runtime");
        return listen(args, rt, signals, addr, workers);
    }

    let (addr, server) = match (args.connect.is_some(), &rt) {
        (true, _) => (addr.expect("checked"), "external server"),
        (false, Some(rt)) => {
            let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
            let addr = listener.local_addr().map_err(|e| e.to_string())?;
            // Runs until the runtime is dropped, which unwinds it.
            rt.spawn(move || serve(listener));
            (addr, "green server, one green thread per connection")
        }
        (false, None) => unreachable!("a local server always has a runtime"),
    };
    let load = Load {
        addr,
        clients: args.clients,
        requests: args.requests,
        size: args.size,
    };
    outln!(
        "echo_server: {} workers ({} I/O); {} {} clients × {} requests × {} B against {addr} ({server})",
        workers,
        rt.as_ref().map_or("no runtime".into(), |r| r.io_driver().to_string()),
        load.clients,
        if args.client_threads {
            "OS-thread"
        } else {
            "green"
        },
        load.requests,
        load.size,
    );
    let before = rt.as_ref().map(|rt| rt.stats());
    let report = match &rt {
        Some(rt) if !args.client_threads => load_green(rt, load)?,
        _ => load_threads(load)?,
    };
    let stats = rt
        .as_ref()
        .zip(before)
        .map(|(rt, b)| rt.stats().since(&b).total());
    if let Some(rt) = &rt {
        args.trace.finish(rt)?;
    }
    drop(rt);

    let n = report.rtt.len();
    let secs = report.elapsed.as_secs_f64();
    outln!(
        "requests      {n} in {secs:.3} s, every byte verified\nthroughput    {:.0} req/s ({:.1} MB/s each way)",
        n as f64 / secs,
        n as f64 * load.size as f64 / secs / 1e6,
    );
    outln!(
        "round trip    p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        fmt_us(hist::quantile_us(&report.rtt, 0.5)),
        fmt_us(hist::quantile_us(&report.rtt, 0.9)),
        fmt_us(hist::quantile_us(&report.rtt, 0.99)),
        fmt_us(hist::quantile_us(&report.rtt, 0.999)),
        fmt_us(hist::max_us(&report.rtt)),
    );
    if let Some(s) = stats {
        let per = |v: u64| v as f64 / n.max(1) as f64;
        outln!(
            "per request   context_switches {:.2}, wakeups local {:.2} / remote queued {:.2} / inline {:.2}, \
             kicks {:.3}, parks {:.3}, steals {:.3}",
            per(s.context_switches),
            per(s.wakeups_local),
            per(s.wakeups_remote_queued),
            per(s.wakeups_remote_inline),
            per(s.kicks),
            per(s.parks),
            per(s.steals),
        );
    }
    Ok(())
}
