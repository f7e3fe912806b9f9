//! The `tokio` backend: tokio tasks on tokio's own I/O types.
//!
//! Owns: the tokio runtime for a run (`--workers` worker threads), wrapping
//! the channels from `transport` in `tokio::net::UnixStream`,
//! `tokio::net::unix::pipe` or `tokio::net::TcpStream`, the async sender and
//! receiver loops, the async start barrier, the tokio latency probes
//! (`tokio::time::sleep_until`) and the spawn step (`tokio::spawn` +
//! `.await`). Must not: block a worker thread inside a task, or judge the
//! counts itself (`verify`).
//!
//! Facts a reader of the numbers needs: tokio has no task priorities, so the
//! latency probes' nice levels are labels only; tokio's timer rounds every
//! deadline up to its next 1 ms tick, so lateness includes that rounding.

use super::{
    BackendKind, HackbenchBackend, HackbenchConfig, HackbenchRun, LatencyBackend, LatencyColumn,
    LatencyConfig, LatencyRun, SpawnBackend, SpawnConfig, SpawnLimit, SpawnRun,
};
use crate::error::BenchError;
use crate::latency::{nanos, Priority, ProbeRecorder, ProbeResult, Schedule};
use crate::transport::{make_channels, TransportKind};
use crate::verify::{verify_groups, GroupOutcome, Received};
use crate::workload::Loops;
use ::tokio::io::AsyncReadExt;
use ::tokio::net::unix::pipe;
use ::tokio::net::{TcpStream, UnixStream};
use ::tokio::runtime::Runtime;
use ::tokio::sync::{watch, Semaphore};
use ::tokio::task::JoinHandle;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The `tokio` backend (all three modes).
pub struct Tokio;

fn runtime(workers: usize) -> Result<Runtime, BenchError> {
    ::tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .map_err(|e| BenchError::io("building the tokio runtime", e))
}

/// Per-worker counters of a finished runtime, for `--stats`.
fn stats_lines(rt: &Runtime) -> Vec<String> {
    let m = rt.metrics();
    let mut out = vec![format!(
        "tokio stats: {} workers, {} tasks still alive",
        m.num_workers(),
        m.num_alive_tasks()
    )];
    for w in 0..m.num_workers() {
        out.push(format!(
            "  worker {w}: busy {:.3} s, parked {} times",
            m.worker_total_busy_duration(w).as_secs_f64(),
            m.worker_park_count(w)
        ));
    }
    out
}

impl HackbenchBackend for Tokio {
    fn kind(&self) -> BackendKind {
        BackendKind::Tokio
    }

    fn run(&self, cfg: &HackbenchConfig) -> Result<HackbenchRun, BenchError> {
        let rt = runtime(cfg.runtime.workers)?;
        let (elapsed, messages) = rt.block_on(async {
            let load = Load::start(cfg, Some(cfg.loops)).await?;
            let start = load.start;
            let messages = load.finish().await?;
            Ok::<_, BenchError>((start.elapsed(), messages))
        })?;
        let details = if cfg.runtime.stats {
            stats_lines(&rt)
        } else {
            Vec::new()
        };
        Ok(HackbenchRun {
            elapsed,
            messages,
            details,
        })
    }
}

/// The write side of a channel, shared by a group's sender tasks.
enum Writer {
    Unix(UnixStream),
    Pipe(pipe::Sender),
    Tcp(TcpStream),
}

impl Writer {
    /// Wraps `fd`; must be called inside the runtime.
    fn new(kind: TransportKind, fd: OwnedFd) -> io::Result<Self> {
        Ok(match kind {
            TransportKind::UnixSocket => {
                let s = std::os::unix::net::UnixStream::from(fd);
                s.set_nonblocking(true)?;
                Writer::Unix(UnixStream::from_std(s)?)
            }
            TransportKind::Pipe => Writer::Pipe(pipe::Sender::from_owned_fd(fd)?),
            TransportKind::Channel => return Err(io::ErrorKind::Unsupported.into()),
            TransportKind::Tcp => {
                let s = std::net::TcpStream::from(fd);
                s.set_nonblocking(true)?;
                Writer::Tcp(TcpStream::from_std(s)?)
            }
        })
    }

    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Writer::Unix(s) => s.try_write(buf),
            Writer::Pipe(s) => s.try_write(buf),
            Writer::Tcp(s) => s.try_write(buf),
        }
    }

    async fn writable(&self) -> io::Result<()> {
        match self {
            Writer::Unix(s) => s.writable().await,
            Writer::Pipe(s) => s.writable().await,
            Writer::Tcp(s) => s.writable().await,
        }
    }

    /// Writes all of `buf`, waiting for writability as needed.
    async fn write_all(&self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.try_write(buf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => buf = &buf[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.writable().await?,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The read side of a channel, owned by one receiver task.
enum Reader {
    Unix(UnixStream),
    Pipe(pipe::Receiver),
    Tcp(TcpStream),
}

impl Reader {
    /// Wraps `fd`; must be called inside the runtime.
    fn new(kind: TransportKind, fd: OwnedFd) -> io::Result<Self> {
        Ok(match kind {
            TransportKind::UnixSocket => {
                let s = std::os::unix::net::UnixStream::from(fd);
                s.set_nonblocking(true)?;
                Reader::Unix(UnixStream::from_std(s)?)
            }
            TransportKind::Pipe => Reader::Pipe(pipe::Receiver::from_owned_fd(fd)?),
            TransportKind::Channel => return Err(io::ErrorKind::Unsupported.into()),
            TransportKind::Tcp => {
                let s = std::net::TcpStream::from(fd);
                s.set_nonblocking(true)?;
                Reader::Tcp(TcpStream::from_std(s)?)
            }
        })
    }

    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Reader::Unix(s) => s.read(buf).await,
            Reader::Pipe(s) => s.read(buf).await,
            Reader::Tcp(s) => s.read(buf).await,
        }
    }
}

/// The async start barrier: tasks add a permit when ready, then wait for go.
#[derive(Clone)]
struct Barrier {
    ready: Arc<Semaphore>,
    go: watch::Receiver<bool>,
}

impl Barrier {
    /// `false` if the coordinator gave up (the go sender was dropped).
    async fn wait(mut self) -> bool {
        self.ready.add_permits(1);
        self.go.wait_for(|&go| go).await.is_ok()
    }
}

async fn sender(
    writers: Arc<Vec<Writer>>,
    msg: Vec<u8>,
    loops: Option<u64>,
    stop: Arc<AtomicBool>,
    barrier: Barrier,
) -> io::Result<u64> {
    if !barrier.wait().await {
        return Ok(0);
    }
    let loops = Loops::new(loops, &stop);
    let mut done = 0u64;
    while !loops.finished(done) {
        for w in writers.iter() {
            w.write_all(&msg).await?;
        }
        done += 1;
    }
    Ok(done)
}

async fn receiver(mut reader: Reader, size: usize, barrier: Barrier) -> io::Result<Received> {
    let mut buf = vec![0u8; size];
    if !barrier.wait().await {
        return Ok(Received::default());
    }
    let mut got = Received::default();
    loop {
        let n = reader.read(&mut buf[got.partial_bytes..]).await?;
        if n == 0 {
            return Ok(got);
        }
        got.add(n, size);
    }
}

type Group = (
    Vec<JoinHandle<io::Result<u64>>>,
    Vec<JoinHandle<io::Result<Received>>>,
);

/// A tokio hackbench whose tasks have been released.
struct Load {
    start: Instant,
    stop: Arc<AtomicBool>,
    expected_loops: Option<u64>,
    datasize: usize,
    groups: Vec<Group>,
}

impl Load {
    /// Spawns every task, waits until all are at the barrier, releases
    /// them. `loops = None` runs until [`Load::stop`]. Inside the runtime.
    async fn start(cfg: &HackbenchConfig, loops: Option<u64>) -> Result<Load, BenchError> {
        crate::transport::require_fds(cfg.transport, "tokio")?;
        let ready = Arc::new(Semaphore::new(0));
        let (go_tx, go_rx) = watch::channel(false);
        let barrier = Barrier { ready, go: go_rx };
        let stop = Arc::new(AtomicBool::new(false));
        let mut groups = Vec::with_capacity(cfg.groups);
        for _ in 0..cfg.groups {
            let chans = make_channels(cfg.transport, cfg.fds)
                .map_err(|e| BenchError::io("creating channels", e))?;
            let mut writers = Vec::with_capacity(cfg.fds);
            let mut receivers = Vec::with_capacity(cfg.fds);
            for c in chans {
                let w = Writer::new(cfg.transport, c.tx);
                let r = Reader::new(cfg.transport, c.rx);
                let (w, r) = w
                    .and_then(|w| Ok((w, r?)))
                    .map_err(|e| BenchError::io("registering a channel with tokio", e))?;
                writers.push(w);
                receivers.push(::tokio::spawn(receiver(r, cfg.datasize, barrier.clone())));
            }
            let writers = Arc::new(writers);
            let senders = (0..cfg.fds)
                .map(|_| {
                    ::tokio::spawn(sender(
                        Arc::clone(&writers),
                        vec![0x5au8; cfg.datasize],
                        loops,
                        Arc::clone(&stop),
                        barrier.clone(),
                    ))
                })
                .collect();
            groups.push((senders, receivers));
        }
        // On an early return above, dropping `go_tx` releases the spawned
        // tasks with "aborted" and they end on their own.
        let tasks = (cfg.tasks()) as u32;
        let permits = barrier
            .ready
            .acquire_many(tasks)
            .await
            .map_err(|_| BenchError::Task("tokio start barrier closed".into()))?;
        permits.forget();
        let start = Instant::now();
        let _ = go_tx.send(true);
        Ok(Load {
            start,
            stop,
            expected_loops: loops,
            datasize: cfg.datasize,
            groups,
        })
    }

    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Awaits every task and checks every group; returns messages verified.
    async fn finish(self) -> Result<u64, BenchError> {
        /// `what` names the task ("group 0 sender 3").
        async fn joined<T>(
            h: tokio::task::JoinHandle<io::Result<T>>,
            what: String,
        ) -> Result<T, BenchError> {
            match h.await {
                Ok(r) => r.map_err(|e| BenchError::io(what, e)),
                Err(e) => Err(BenchError::Task(format!("{what}: {e}"))),
            }
        }
        let mut groups = Vec::with_capacity(self.groups.len());
        for (gi, (senders, receivers)) in self.groups.into_iter().enumerate() {
            let mut g = GroupOutcome::default();
            for (i, h) in senders.into_iter().enumerate() {
                g.sent
                    .push(joined(h, format!("group {gi} sender {i}")).await);
            }
            for (i, h) in receivers.into_iter().enumerate() {
                g.received
                    .push(joined(h, format!("group {gi} receiver {i}")).await);
            }
            groups.push(g);
        }
        verify_groups(groups, self.datasize, self.expected_loops)
    }
}

impl LatencyBackend for Tokio {
    fn kind(&self) -> BackendKind {
        BackendKind::Tokio
    }

    fn run(&self, cfg: &LatencyConfig, column: &LatencyColumn) -> Result<LatencyRun, BenchError> {
        column.require_default("tokio")?;
        let rt = runtime(cfg.load.runtime.workers)?;
        let (interval_ns, duration_ns) = (nanos(cfg.interval), nanos(cfg.duration));
        let (probes, load_messages) = rt.block_on(async {
            let load = Load::start(&cfg.load, None).await?;
            let base = Instant::now();
            let handles: Vec<_> = cfg
                .nice_levels
                .iter()
                .map(|&nice| ::tokio::spawn(probe(nice, base, interval_ns, duration_ns)))
                .collect();
            let mut probes = Vec::with_capacity(handles.len());
            let mut err = None;
            for h in handles {
                match h.await {
                    Ok(p) => probes.push(p),
                    Err(e) => err = Some(BenchError::Task(format!("a probe task failed: {e}"))),
                }
            }
            load.stop();
            let messages = load.finish().await?;
            match err {
                Some(e) => Err(e),
                None => Ok((probes, messages)),
            }
        })?;
        let mut notes = vec![
            "tokio has no task priorities: every probe runs at the same priority; \
             the nice column only labels the probe"
                .to_string(),
            "tokio's timer rounds each deadline up to its next 1 ms tick: \
             lateness includes that rounding"
                .to_string(),
        ];
        if cfg.load.runtime.stats {
            notes.extend(stats_lines(&rt));
        }
        Ok(LatencyRun {
            probes,
            load_messages,
            notes,
            counters: Vec::new(),
        })
    }
}

async fn probe(nice: i32, base: Instant, interval_ns: u64, duration_ns: u64) -> ProbeResult {
    let mut schedule = Schedule::new(interval_ns, duration_ns);
    let mut rec = ProbeRecorder::new();
    while let Some(offset) = schedule.next_deadline() {
        let deadline = base + Duration::from_nanos(offset);
        ::tokio::time::sleep_until(deadline.into()).await;
        let now = Instant::now();
        rec.record(nanos(now.saturating_duration_since(deadline)));
        rec.add_overruns(schedule.advance(nanos(now.saturating_duration_since(base))));
    }
    rec.finish(nice, Priority::Unsupported)
}

impl SpawnBackend for Tokio {
    fn kind(&self) -> BackendKind {
        BackendKind::Tokio
    }

    fn run(&self, cfg: &SpawnConfig) -> Result<SpawnRun, BenchError> {
        let rt = runtime(cfg.runtime.workers)?;
        let mut run = rt.block_on(async {
            let ready = Arc::new(Semaphore::new(0));
            let (go_tx, go_rx) = watch::channel(false);
            let barrier = Barrier { ready, go: go_rx };
            let stop = Arc::new(AtomicBool::new(false));
            let max = match cfg.limit {
                SpawnLimit::Iterations(n) => n,
                SpawnLimit::Duration(_) => u64::MAX,
            };
            let handles: Vec<_> = (0..cfg.spawners)
                .map(|_| {
                    let (barrier, stop) = (barrier.clone(), Arc::clone(&stop));
                    ::tokio::spawn(async move {
                        if !barrier.wait().await {
                            return Ok(0u64);
                        }
                        let mut n = 0;
                        while n < max && !stop.load(Ordering::Relaxed) {
                            ::tokio::spawn(async {}).await?;
                            n += 1;
                        }
                        Ok::<_, ::tokio::task::JoinError>(n)
                    })
                })
                .collect();
            barrier
                .ready
                .acquire_many(cfg.spawners as u32)
                .await
                .map_err(|_| BenchError::Task("tokio start barrier closed".into()))?
                .forget();
            let start = Instant::now();
            let _ = go_tx.send(true);
            if let SpawnLimit::Duration(d) = cfg.limit {
                ::tokio::time::sleep(d).await;
                stop.store(true, Ordering::Relaxed);
            }
            let mut spawns = 0;
            for h in handles {
                match h.await {
                    Ok(Ok(n)) => spawns += n,
                    Ok(Err(e)) | Err(e) => {
                        stop.store(true, Ordering::Relaxed);
                        return Err(BenchError::Task(format!("a spawned task failed: {e}")));
                    }
                }
            }
            Ok(SpawnRun {
                spawns,
                elapsed: start.elapsed(),
                counters: Vec::new(),
                details: Vec::new(),
            })
        })?;
        if cfg.runtime.stats {
            run.details = stats_lines(&rt);
        }
        Ok(run)
    }
}
