//! Runtime configuration.
//!
//! Owns: [`Builder`], its defaults (API.md) and the validation of every
//! value, and starting the runtime (workers pinned one per allowed core,
//! the ticker). Must not: hold runtime state.

use super::shared::{Config, Shared};
use super::Runtime;
use crate::error::Error;
use crate::sched::{base_slice_for, Features, Params, MAX_SLICE, MIN_SLICE};
use crate::sys;
use crate::task::builder::{MAX_STACK_SIZE, MIN_STACK_SIZE};
use crate::time::ticker;
use crate::worker::mask::MAX_WORKERS;
use crate::worker::{run, Worker};
use std::sync::Arc;
use std::time::Duration;

/// Default of [`Builder::ticker_nice`].
const DEFAULT_TICKER_NICE: i32 = -10;

/// Configures and builds a [`Runtime`], like tokio's `Builder`.
///
/// ```
/// use std::time::Duration;
/// let rt = eevdf_rt::Builder::new()
///     .workers(2)
///     .pin_workers(false)
///     .stack_size(128 * 1024)
///     .tick(Duration::from_millis(1))
///     .idle_spin(Duration::from_micros(50))
///     .features("NO_DELAY_DEQUEUE")
///     .build()
///     .unwrap();
/// assert!(rt.features().contains("NO_DELAY_DEQUEUE"));
/// assert!(eevdf_rt::Builder::new().workers(0).build().is_err());
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    workers: Option<usize>,
    pin_workers: bool,
    stack_size: usize,
    base_slice: Option<Duration>,
    tick: Duration,
    idle_spin: Duration,
    features: Vec<String>,
    stack_pool: usize,
    name: String,
    ticker_nice: i32,
    io_driver: crate::io::IoDriver,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            workers: None,
            pin_workers: true,
            stack_size: 256 * 1024,
            base_slice: None,
            tick: Duration::from_millis(1),
            idle_spin: Duration::from_micros(50),
            features: Vec::new(),
            stack_pool: 256,
            name: "eevdf".into(),
            ticker_nice: DEFAULT_TICKER_NICE,
            io_driver: crate::io::IoDriver::Auto,
        }
    }
}

impl Builder {
    /// Defaults: one worker per available CPU, pinned; 256 KiB stacks; base
    /// slice `0.7 ms × (1 + ⌊log2(min(workers, 8))⌋)`; 1 ms tick; 50 µs idle
    /// spin; 6.17 feature defaults; the ticker thread at nice −10 where the
    /// kernel permits ([`ticker_nice`](Self::ticker_nice)).
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of worker OS threads (1..=256). Default: the CPUs available to the process.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n);
        self
    }

    /// Pin worker `i` to the `i`-th allowed core (round-robin when there are
    /// more workers than cores). Default `true`.
    pub fn pin_workers(mut self, pin: bool) -> Self {
        self.pin_workers = pin;
        self
    }

    /// Default stack size of a green thread (16 KiB ..= 1 GiB; virtual, only
    /// touched pages become resident). Default 256 KiB.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }

    /// Slice of tasks without a custom slice (100 µs ..= 100 ms).
    pub fn base_slice(mut self, slice: Duration) -> Self {
        self.base_slice = Some(slice);
        self
    }

    /// Preemption tick period (100 µs ..= 1 s). Default 1 ms.
    pub fn tick(mut self, period: Duration) -> Self {
        self.tick = period;
        self
    }

    /// How long an idle worker polls for work before parking (0 ..= 1 s). Default 50 µs.
    pub fn idle_spin(mut self, spin: Duration) -> Self {
        self.idle_spin = spin;
        self
    }

    /// Scheduler feature switches in `sched_features` syntax
    /// (`"NO_DELAY_DEQUEUE,TICK_ELIGIBLE"`); may be called several times.
    /// An unknown name makes `build` fail.
    pub fn features(mut self, spec: &str) -> Self {
        self.features.push(spec.to_string());
        self
    }

    /// Free stacks each worker keeps for reuse (0 ..= 65 536). Default 256.
    pub fn stack_pool(mut self, stacks: usize) -> Self {
        self.stack_pool = stacks;
        self
    }

    /// Prefix of the worker threads' names. Default `"eevdf"`.
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Nice level (−20 ..= 19) the runtime's ticker thread asks the kernel
    /// for. Default −10. The ticker delivers ticks, timers, preemption
    /// deadlines and — while every worker is busy — I/O readiness to the
    /// workers; when the pinned workers keep every CPU busy, a ticker at
    /// nice 0 competes with them for CPU time in the kernel and can wait
    /// milliseconds for a CPU, and everything it delivers waits with it
    /// (measured with `scripts/measure.sh ticker`: the `latency_service`
    /// example over TCP on two busy workers had a p99 of 2.5–2.8 ms at
    /// nice 0 and 0.5–1.0 ms at −10). Raising a thread's priority needs `CAP_SYS_NICE` or
    /// `RLIMIT_NICE` (`ulimit -e`); without them the ticker stays at the
    /// process's level and the runtime works as before.
    /// [`Runtime::ticker_nice`] says what the kernel granted. Use 0 to
    /// leave the ticker at the process's level.
    pub fn ticker_nice(mut self, nice: i32) -> Self {
        self.ticker_nice = nice;
        self
    }

    /// The kernel interface green threads use for I/O (default
    /// [`IoDriver::Auto`](crate::io::IoDriver::Auto): io_uring where the
    /// kernel allows it, else epoll). Asking for
    /// [`IoDriver::Uring`](crate::io::IoDriver::Uring) where io_uring is
    /// unavailable makes [`build`](Self::build) fail with the kernel's
    /// reason. [`Runtime::io_driver`] says which driver a runtime uses.
    ///
    /// ```
    /// use eevdf_rt::io::IoDriver;
    /// let rt = eevdf_rt::Builder::new().workers(1).io_driver(IoDriver::Auto).build().unwrap();
    /// assert_ne!(rt.io_driver(), IoDriver::Auto);
    /// ```
    pub fn io_driver(mut self, driver: crate::io::IoDriver) -> Self {
        self.io_driver = driver;
        self
    }

    /// Validates the configuration and starts the runtime.
    pub fn build(self) -> Result<Runtime, Error> {
        let workers = self.workers.unwrap_or_else(sys::allowed_cpus);
        if !(1..=MAX_WORKERS).contains(&workers) {
            return Err(Error::invalid("workers", workers, "1 ..= 256"));
        }
        if !(MIN_STACK_SIZE..=MAX_STACK_SIZE).contains(&self.stack_size) {
            return Err(Error::invalid(
                "stack_size",
                self.stack_size,
                "16 KiB ..= 1 GiB",
            ));
        }
        let base_slice = match self.base_slice {
            None => base_slice_for(workers),
            Some(d) => {
                let ns = d.as_nanos().min(u64::MAX as u128) as u64;
                if !(MIN_SLICE..=MAX_SLICE).contains(&ns) {
                    return Err(Error::invalid(
                        "base_slice",
                        format!("{d:?}"),
                        "100 µs ..= 100 ms",
                    ));
                }
                ns
            }
        };
        if !(Duration::from_micros(100)..=Duration::from_secs(1)).contains(&self.tick) {
            return Err(Error::invalid(
                "tick",
                format!("{:?}", self.tick),
                "100 µs ..= 1 s",
            ));
        }
        if self.idle_spin > Duration::from_secs(1) {
            return Err(Error::invalid(
                "idle_spin",
                format!("{:?}", self.idle_spin),
                "0 ..= 1 s",
            ));
        }
        if !(-20..=19).contains(&self.ticker_nice) {
            return Err(Error::invalid(
                "ticker_nice",
                self.ticker_nice,
                "-20 ..= 19",
            ));
        }
        if self.stack_pool > 65_536 {
            return Err(Error::invalid("stack_pool", self.stack_pool, "0 ..= 65536"));
        }
        let mut features = Features::default();
        for spec in &self.features {
            features.apply(spec)?;
        }
        let io_driver = self.io_driver.resolve()?;
        let config = Config {
            pin_workers: self.pin_workers,
            stack_size: self.stack_size,
            base_slice,
            tick: self.tick,
            idle_spin: self.idle_spin,
            stack_pool: self.stack_pool,
            name: self.name,
            ticker_nice: self.ticker_nice,
            io_driver,
        };
        let params = Params {
            base_slice,
            tick: self.tick.as_nanos() as u64,
        };
        let ws: Box<[Worker]> = (0..workers)
            .map(|i| Worker::new(i, params, features, config.stack_size, config.stack_pool))
            .collect();
        let shared = Arc::new(Shared::new(config, features, ws));
        start(shared)
    }
}

fn start(shared: Arc<Shared>) -> Result<Runtime, Error> {
    let cores = if shared.config.pin_workers {
        core_affinity::get_core_ids().unwrap_or_default()
    } else {
        Vec::new()
    };
    let mut threads = Vec::with_capacity(shared.workers.len());
    for i in 0..shared.workers.len() {
        let sh = shared.clone();
        let core = (!cores.is_empty()).then(|| cores[i % cores.len()]);
        let spawned = std::thread::Builder::new()
            .name(format!("{}-w{i}", shared.config.name))
            .spawn(move || {
                if let Some(c) = core {
                    core_affinity::set_for_current(c);
                }
                sys::set_min_timer_slack();
                run::worker_main(sh, i);
            });
        match spawned {
            Ok(h) => threads.push(h),
            Err(e) => {
                let rt = Runtime::from_parts(shared, threads, None);
                rt.shutdown();
                return Err(Error::Os {
                    context: "spawning a worker thread",
                    message: e.to_string(),
                });
            }
        }
    }
    let sh = shared.clone();
    let (started, granted) = std::sync::mpsc::sync_channel(1);
    let ticker = std::thread::Builder::new()
        .name(format!("{}-tick", shared.config.name))
        .spawn(move || {
            sys::set_min_timer_slack();
            let nice = if sh.config.ticker_nice != 0 {
                sys::set_thread_nice(sh.config.ticker_nice)
            } else {
                sys::thread_nice()
            };
            let _ = started.send(nice);
            ticker::ticker_main(sh)
        });
    match ticker {
        Ok(t) => {
            let nice = granted.recv().unwrap_or(0);
            shared
                .ticker_nice
                .store(nice, std::sync::atomic::Ordering::Relaxed);
            Ok(Runtime::from_parts(shared, threads, Some(t)))
        }
        Err(e) => {
            let rt = Runtime::from_parts(shared, threads, None);
            rt.shutdown();
            Err(Error::Os {
                context: "spawning the ticker thread",
                message: e.to_string(),
            })
        }
    }
}
