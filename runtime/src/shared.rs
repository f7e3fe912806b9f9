//! The hub of one runtime: what every layer below the public API shares.
//!
//! Owns: the workers, the idle-worker bitmap, the configuration, the live
//! feature switches, the task registry, the shutdown flag, the external
//! statistics row, the scheduling trace, the I/O reactor's slot (created lazily by
//! `io::reactor::get_or_init`) and the `spawn_blocking` pool's slot (the pool
//! itself is `runtime::blocking`'s). It lives at the crate root, beside the layers rather
//! than in the top one (`runtime/`), because every layer holds it: a task
//! points to its runtime, workers and wakers find each other through it.
//! Must not: run anything, or hold logic beyond simple accessors.

use crate::context::GuardPolicy;
use crate::io::reactor::Reactor;
use crate::mask::AtomicMask;
use crate::runtime::blocking::BlockingPool;
use crate::sched::{Feature, Features};
use crate::stats::Counters;
use crate::task::registry::Registry;
use crate::worker::Worker;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Validated configuration of a runtime.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) pin_workers: bool,
    pub(crate) stack_size: usize,
    pub(crate) base_slice: u64,
    pub(crate) tick: Duration,
    pub(crate) idle_spin: Duration,
    pub(crate) stack_pool: usize,
    pub(crate) name: String,
    /// How stacks are protected (`Builder::stack_guard`, `stack_map_budget`).
    pub(crate) stack_guard: GuardPolicy,
    /// Bound on the blocking pool's threads (`Builder::max_blocking_threads`).
    pub(crate) max_blocking_threads: usize,
    /// How long an idle blocking-pool thread lingers (`Builder::blocking_keep_alive`).
    pub(crate) blocking_keep_alive: Duration,
    /// The resolved I/O driver (`Uring` or `Epoll`, never `Auto`).
    pub(crate) io_driver: crate::io::IoDriver,
    /// Hand-off threshold, already at least two ticks (`Builder::handoff`).
    pub(crate) handoff: Option<Duration>,
}

/// The runtime's shared state.
pub(crate) struct Shared {
    pub(crate) workers: Box<[Worker]>,
    /// Workers that are idle (polling for a while, or parked).
    pub(crate) idle_mask: AtomicMask,
    /// Per worker: it has at least two queued tasks (gates newidle
    /// balance; the kernel's root-domain `overloaded`). One flag per worker,
    /// side by side (one cache line for up to 64 workers), each written by
    /// its worker with a plain store when its queue crosses two tasks: no
    /// read-modify-write on a line every worker shares.
    pub(crate) overloaded: Box<[AtomicBool]>,
    pub(crate) config: Config,
    features: AtomicU32,
    /// Serialises `Runtime::set_features`: each change applies to the set
    /// the previous one left, and every run queue ends with the set that
    /// `features` holds.
    pub(crate) features_update: parking_lot::Mutex<()>,
    pub(crate) registry: Registry,
    /// The room every worker has for tasks (`worker::room`).
    pub(crate) room: crate::worker::room::Room,
    pub(crate) shutdown: AtomicBool,
    pub(crate) external: Counters,
    /// Round-robin cursor for spawns from outside the runtime.
    pub(crate) spawn_cursor: AtomicUsize,
    /// The epoll reactor (I/O), created at the first registration.
    pub(crate) reactor: OnceLock<Arc<Reactor>>,
    /// Serialises the reactor's creation.
    pub(crate) reactor_init: parking_lot::Mutex<()>,
    /// The `spawn_blocking` pool, created at its first use.
    blocking: OnceLock<Arc<BlockingPool>>,
    /// The scheduling trace (`crate::trace`), off unless started.
    pub(crate) trace: crate::trace::Tracer,
    /// The io_uring driver's shared part, when the runtime uses io_uring
    /// (the rings themselves belong to the worker threads, `io::uring`).
    pub(crate) uring: Option<crate::io::uring::Driver>,
    /// The hand-off of stuck workers (`worker::handoff`), unless disabled.
    pub(crate) handoff: Option<crate::worker::handoff::HandOff>,
}

impl Shared {
    pub(crate) fn new(config: Config, features: Features, workers: Box<[Worker]>) -> Self {
        let workers_len = workers.len();
        let handoff = config.handoff.map(crate::worker::handoff::HandOff::new);
        let uring = (config.io_driver == crate::io::IoDriver::Uring)
            .then(|| crate::io::uring::Driver::new(workers.len()));
        Shared {
            registry: Registry::new(workers.len()),
            room: crate::worker::room::Room::new(),
            overloaded: (0..workers.len()).map(|_| AtomicBool::new(false)).collect(),
            workers,
            idle_mask: AtomicMask::new(),
            config,
            features: AtomicU32::new(features.bits()),
            features_update: parking_lot::Mutex::new(()),
            shutdown: AtomicBool::new(false),
            external: Counters::new(),
            spawn_cursor: AtomicUsize::new(0),
            reactor: OnceLock::new(),
            reactor_init: parking_lot::Mutex::new(()),
            blocking: OnceLock::new(),
            trace: crate::trace::Tracer::new(workers_len),
            uring,
            handoff,
        }
    }

    /// The blocking pool (created at the first call).
    pub(crate) fn blocking_pool(self: &Arc<Self>) -> &Arc<BlockingPool> {
        self.blocking.get_or_init(|| {
            Arc::new(BlockingPool::new(
                Arc::downgrade(self),
                self.config.max_blocking_threads,
                self.config.blocking_keep_alive,
                &self.config.name,
            ))
        })
    }

    /// The blocking pool, if it was ever used.
    pub(crate) fn blocking_pool_if_started(&self) -> Option<&Arc<BlockingPool>> {
        self.blocking.get()
    }

    /// The live feature set.
    #[inline]
    pub(crate) fn features(&self) -> Features {
        Features::from_bits(self.features.load(Ordering::Relaxed))
    }

    /// Whether one feature is on.
    #[inline]
    pub(crate) fn feature(&self, f: Feature) -> bool {
        self.features().is_enabled(f)
    }

    /// Replaces the live feature set (each worker's run queue is updated by the caller).
    pub(crate) fn store_features(&self, f: Features) {
        self.features.store(f.bits(), Ordering::Relaxed);
    }

    /// Whether shutdown has begun.
    #[inline]
    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Whether `i` looks idle for placement: marked idle, nothing queued,
    /// no pending wakelist (the kernel's `available_idle_cpu`).
    #[inline]
    pub(crate) fn available_idle(&self, i: usize) -> bool {
        let w = &self.workers[i];
        self.idle_mask.contains(i) && w.nr_running() == 0 && w.wakelist().is_empty()
    }
}
