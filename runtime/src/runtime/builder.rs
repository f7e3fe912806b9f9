//! Runtime configuration.
//!
//! Owns: [`Builder`], its defaults (documented on each method) and the
//! validation of every value, and starting the runtime (workers pinned one
//! per allowed core, and the hand-off monitor unless it is off; the
//! blocking pool and the timer thread start at their first use). Must not:
//! hold runtime state.

use super::blocking;
use super::Runtime;
use crate::context::{guard, overflow, GuardPolicy, StackCache, StackGuard};
use crate::error::Error;
use crate::mask::MAX_WORKERS;
use crate::sched::{base_slice_for, Features, Params, MAX_SLICE, MIN_SLICE};
use crate::shared::{Config, Shared};
use crate::sys;
use crate::task::builder::{MAX_STACK_SIZE, MIN_STACK_SIZE};
use crate::worker::{run, Worker};
use std::sync::Arc;
use std::time::Duration;

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
    stack_guard: StackGuard,
    stack_map_budget: Option<usize>,
    guard_regions: bool,
    max_blocking_threads: usize,
    blocking_keep_alive: Duration,
    io_driver: crate::io::IoDriver,
    handoff: Option<Duration>,
}

/// The default number of workers on a machine with `cpus` usable CPUs:
/// one per CPU, and never beyond the limit (a machine with more CPUs gets
/// a runtime of 256 workers rather than an error).
fn default_workers(cpus: usize) -> usize {
    cpus.clamp(1, MAX_WORKERS)
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
            stack_guard: StackGuard::Auto,
            stack_map_budget: None,
            guard_regions: true,
            max_blocking_threads: blocking::DEFAULT_MAX_THREADS,
            blocking_keep_alive: blocking::DEFAULT_KEEP_ALIVE,
            io_driver: crate::io::IoDriver::Auto,
            handoff: Some(crate::worker::handoff::DEFAULT_THRESHOLD),
        }
    }
}

impl Builder {
    /// Defaults: one worker per available CPU, pinned; 256 KiB stacks; base
    /// slice `0.7 ms × (1 + ⌊log2(min(workers, 8))⌋)`; 1 ms tick; 50 µs idle
    /// spin; the runtime's feature defaults — the kernel's 6.17 defaults
    /// except HRTICK, TTWU_QUEUE_DEFAULT, TTWU_QUEUE_DELAYED, WA_SYNC,
    /// WA_STALE, SPAWN_LOCAL and OS_YIELD, which are on (`features("kernel")` for the kernel's
    /// exact set; see `docs/features.md`); stacks guarded by
    /// [`StackGuard::Auto`]; a blocking pool of at most 512 threads that
    /// linger 10 s.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of worker OS threads (1..=256). Default: the CPUs available
    /// to the process, at most 256.
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
    /// touched pages become resident). Default 256 KiB. Near the minimum,
    /// a panic that prints a backtrace (`RUST_BACKTRACE` set) can itself
    /// overflow the stack in a debug build, which aborts the process: give
    /// threads that may panic at least 32 KiB.
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
    /// The presets `"kernel"` (the kernel's 6.17 defaults) and `"default"`
    /// replace the whole set where they appear, so `"kernel,HRTICK"` is the
    /// kernel's set with HRTICK on. An unknown name makes `build` fail.
    pub fn features(mut self, spec: &str) -> Self {
        self.features.push(spec.to_string());
        self
    }

    /// How green-thread stacks are protected against overflow (see
    /// [`StackGuard`]). Default [`StackGuard::Auto`]: a guard page below
    /// every stack while guard pages are affordable, a canary beyond.
    ///
    /// ```
    /// let rt = eevdf_rt::Builder::new()
    ///     .workers(1)
    ///     .stack_guard(eevdf_rt::StackGuard::GuardPage)
    ///     .build()?;
    /// assert_eq!(rt.block_on(|| 7), 7);
    /// # Ok::<(), eevdf_rt::Error>(())
    /// ```
    pub fn stack_guard(mut self, guard: StackGuard) -> Self {
        self.stack_guard = guard;
        self
    }

    /// How many memory mappings `mprotect`'d guard pages may use,
    /// process-wide (each such stack costs two). Only matters on kernels
    /// without guard regions (before Linux 6.13), where each guard page
    /// splits a mapping and the process may have at most
    /// `vm.max_map_count` of them. Default: half of `vm.max_map_count`
    /// (32,765 of 65,530 on a default Linux), which leaves the rest to
    /// malloc, files and libraries. Beyond it, [`StackGuard::Auto`] uses
    /// canaries and [`StackGuard::GuardPage`] fails the spawn. Any value is
    /// accepted: 0 means no `mprotect`'d guard page at all there, and with
    /// a budget above what the kernel allows, spawns fail with an
    /// out-of-memory error once the kernel refuses a mapping.
    pub fn stack_map_budget(mut self, mappings: usize) -> Self {
        self.stack_map_budget = Some(mappings);
        self
    }

    /// Whether guard pages may be the kernel's lightweight guard regions
    /// (Linux ≥ 6.13, no mapping cost). Default `true`; `false` forces
    /// `mprotect`'d guard pages and their mapping budget, as on older
    /// kernels (for tests and comparisons).
    #[doc(hidden)]
    pub fn stack_guard_regions(mut self, on: bool) -> Self {
        self.guard_regions = on;
        self
    }

    /// Most OS threads of the [`spawn_blocking`](crate::task::spawn_blocking)
    /// pool (1 ..= 65 536). Default 512. Jobs beyond it wait in FIFO order.
    pub fn max_blocking_threads(mut self, threads: usize) -> Self {
        self.max_blocking_threads = threads;
        self
    }

    /// How long an idle blocking-pool thread waits for a job before it
    /// exits (1 ms ..= 1 h). Default 10 s.
    pub fn blocking_keep_alive(mut self, keep_alive: Duration) -> Self {
        self.blocking_keep_alive = keep_alive;
        self
    }

    /// Hand-off of stuck workers: when a worker has stayed inside one green
    /// thread for `after` (no preemption point, e.g. a plain blocking call
    /// or a tight loop) while other work waits for it, a monitor thread
    /// gives the worker's run queue to a standby OS thread on the same CPU,
    /// and the stuck green thread goes back to a run queue when it reaches
    /// the runtime again (docs/architecture.md, "Hand-off"). The effective
    /// threshold is at least two ticks. `None` turns hand-off off: no
    /// monitor thread, and a stuck worker holds its tasks, as with purely
    /// cooperative scheduling. Default `Some(2 ms)`; `after` in
    /// 500 µs ..= 10 s.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = eevdf_rt::Builder::new().workers(1).handoff(None).build()?;
    /// assert_eq!(rt.handoff(), None);
    /// let rt = eevdf_rt::Builder::new()
    ///     .workers(1)
    ///     .handoff(Some(Duration::from_millis(5)))
    ///     .build()?;
    /// assert_eq!(rt.handoff(), Some(Duration::from_millis(5)));
    /// # Ok::<(), eevdf_rt::Error>(())
    /// ```
    pub fn handoff(mut self, after: Option<Duration>) -> Self {
        self.handoff = after;
        self
    }

    /// Free stacks each worker keeps for reuse (0 ..= 65 536). Default 256.
    pub fn stack_pool(mut self, stacks: usize) -> Self {
        self.stack_pool = stacks;
        self
    }

    /// Prefix of the names of the runtime's OS threads (workers, the
    /// hand-off monitor and standbys, the blocking pool). Default
    /// `"eevdf"`. A name with a NUL byte makes [`build`](Self::build) fail
    /// (an OS thread name is a C string).
    ///
    /// ```
    /// let rt = eevdf_rt::Builder::new().workers(1).thread_name("db").build()?;
    /// # drop(rt);
    /// assert!(eevdf_rt::Builder::new().workers(1).thread_name("a\0b").build().is_err());
    /// # Ok::<(), eevdf_rt::Error>(())
    /// ```
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
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
        // Choose and calibrate the clock now, not on the first switch.
        crate::time::clock::init();
        let workers = self
            .workers
            .unwrap_or_else(|| default_workers(sys::allowed_cpus()));
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
        if !(1..=65_536).contains(&self.max_blocking_threads) {
            return Err(Error::invalid(
                "max_blocking_threads",
                self.max_blocking_threads,
                "1 ..= 65536",
            ));
        }
        if !(Duration::from_millis(1)..=Duration::from_secs(3600))
            .contains(&self.blocking_keep_alive)
        {
            return Err(Error::invalid(
                "blocking_keep_alive",
                format!("{:?}", self.blocking_keep_alive),
                "1 ms ..= 1 h",
            ));
        }
        if let Some(d) = self.handoff {
            if !(Duration::from_micros(500)..=Duration::from_secs(10)).contains(&d) {
                return Err(Error::invalid(
                    "handoff",
                    format!("{d:?}"),
                    "500 µs ..= 10 s, or None",
                ));
            }
        }
        if self.name.contains('\0') {
            return Err(Error::invalid(
                "thread_name",
                format!("{:?}", self.name),
                "a name without NUL bytes",
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
            stack_guard: GuardPolicy {
                mode: self.stack_guard,
                map_budget: self
                    .stack_map_budget
                    .unwrap_or_else(guard::default_map_budget),
                guard_regions: self.guard_regions,
            },
            max_blocking_threads: self.max_blocking_threads,
            blocking_keep_alive: self.blocking_keep_alive,
            io_driver,
            handoff: self.handoff.map(|d| d.max(self.tick * 2)),
        };
        let params = Params {
            base_slice,
            tick: self.tick.as_nanos() as u64,
        };
        let ws: Box<[Worker]> = (0..workers)
            .map(|i| {
                let stacks =
                    StackCache::new(config.stack_size, config.stack_pool, config.stack_guard);
                Worker::new(i, params, features, stacks)
            })
            .collect();
        let shared = Arc::new(Shared::new(config, features, ws));
        start(shared)
    }
}

fn start(shared: Arc<Shared>) -> Result<Runtime, Error> {
    // A green thread's stack overflow gets a message (context::overflow).
    overflow::install_handler(|| crate::task::current::current().map(|t| (t.name(), t.id)));
    let cores = if shared.config.pin_workers {
        core_affinity::get_core_ids().unwrap_or_default()
    } else {
        Vec::new()
    };
    if let Some(ho) = shared.handoff.as_ref() {
        ho.set_cores(cores.clone());
    }
    let mut threads = Vec::with_capacity(shared.workers.len());
    for i in 0..shared.workers.len() {
        let sh = shared.clone();
        let core = (!cores.is_empty()).then(|| cores[i % cores.len()]);
        let spawned = std::thread::Builder::new()
            .name(format!("{}-w{i}", shared.config.name))
            .spawn(move || {
                // The overflow handler runs on this when a green stack is exhausted.
                let _alt_stack = overflow::AltStack::ensure();
                if let Some(c) = core {
                    core_affinity::set_for_current(c);
                }
                sys::set_min_timer_slack();
                run::worker_main(sh, i);
            });
        match spawned {
            Ok(h) => threads.push(h),
            Err(e) => {
                let rt = Runtime::from_parts(shared, threads);
                rt.shutdown();
                return Err(Error::Os {
                    context: "spawning a worker thread",
                    message: e.to_string(),
                });
            }
        }
    }
    if let Err(e) = crate::worker::handoff::start_monitor(&shared) {
        let rt = Runtime::from_parts(shared, threads);
        rt.shutdown();
        return Err(Error::Os {
            context: "spawning the hand-off monitor thread",
            message: e.to_string(),
        });
    }
    Ok(Runtime::from_parts(shared, threads))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_worker_count_is_one_per_cpu_up_to_the_limit() {
        assert_eq!(default_workers(0), 1);
        assert_eq!(default_workers(1), 1);
        assert_eq!(default_workers(96), 96);
        assert_eq!(default_workers(MAX_WORKERS), MAX_WORKERS);
        assert_eq!(default_workers(1024), MAX_WORKERS);
        // An explicit count beyond the limit is still an error.
        let err = Builder::new().workers(MAX_WORKERS + 1).build().unwrap_err();
        assert!(err.to_string().contains("1 ..= 256"), "{err}");
    }
}
