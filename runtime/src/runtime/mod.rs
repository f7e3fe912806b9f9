//! The runtime: building it, spawning onto it from any thread, running a
//! closure to completion on it, statistics, live feature switches, and
//! shutdown.
//!
//! Owns: [`Runtime`] and [`Builder`] (which builds the shared hub,
//! `crate::shared`, and the task registry, `task::registry`, both of which
//! live outside this layer), spawning and joining, and the free functions a green
//! thread calls (`spawn`, `yield_now`, `sleep`, `preempt_point`, …, in
//! [`api`]). Must not: contain scheduling policy or the wake protocol.

pub(crate) mod api;
pub(crate) mod blocking;
pub(crate) mod builder;
pub(crate) mod join;
pub(crate) mod result_slot;
pub(crate) mod spawn;
mod task_attr;

use crate::shared::Shared;
pub use builder::Builder;
use std::time::Duration;

use crate::error::Error;
use crate::sched::{Features, RunQueue};
use crate::stats::{Stats, WorkerStats};
use crate::task::builder::SpawnOpts;
use crate::task::state::DEAD;
use crate::task::TaskRef;
use crate::worker::tls;
use join::JoinHandle;
use parking_lot::Mutex;
use std::io;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle as ThreadHandle;

struct Threads {
    workers: Vec<ThreadHandle<()>>,
}

/// A running eevdf-rt runtime: worker threads, each scheduling its green
/// threads with EEVDF.
///
/// Dropping it shuts it down (see [`Runtime::shutdown`]).
///
/// ```
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// assert_eq!(rt.block_on(|| 40 + 2), 42);
/// let h = rt.spawn(|| (0..10u64).sum::<u64>());
/// assert_eq!(h.join().unwrap(), 45);
/// rt.set_features("NO_TTWU_QUEUE").unwrap();
/// assert!(rt.features().contains("NO_TTWU_QUEUE"));
/// println!("{}", rt.stats());
/// rt.shutdown();
/// ```
pub struct Runtime {
    shared: Arc<Shared>,
    stop: Mutex<Stop>,
    /// Signalled when a shutdown has finished (`Stop::finisher` cleared).
    stopped: parking_lot::Condvar,
}

/// What shutdown takes, and who is taking it.
struct Stop {
    /// The worker threads, until a shutdown takes them.
    threads: Option<Threads>,
    /// The thread that runs the shutdown, while it does (so `threads`
    /// gone and no finisher: finished). A destructor it runs may call
    /// `shutdown` again, which must not wait for itself.
    finisher: Option<std::thread::ThreadId>,
}

impl Runtime {
    fn from_parts(shared: Arc<Shared>, workers: Vec<ThreadHandle<()>>) -> Self {
        Runtime {
            shared,
            stop: Mutex::new(Stop {
                threads: Some(Threads { workers }),
                finisher: None,
            }),
            stopped: parking_lot::Condvar::new(),
        }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// A runtime with the default configuration (see [`Builder::new`]).
    pub fn new() -> Result<Runtime, Error> {
        Builder::new().build()
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.shared.workers.len()
    }

    /// The hand-off threshold (see [`Builder::handoff`]), or `None` if
    /// hand-off is off.
    pub fn handoff(&self) -> Option<Duration> {
        self.shared.config.handoff
    }

    /// OS threads that hand-offs of stuck workers have started so far
    /// (they stay as standbys until the runtime shuts down).
    pub fn handoff_threads(&self) -> usize {
        self.shared
            .handoff
            .as_ref()
            .map_or(0, |h| h.extra_threads())
    }

    /// The clock the scheduler charges time with: `"tsc"` (the calibrated
    /// invariant time-stamp counter, where the CPU and the kernel's
    /// clocksource say it is safe) or `"monotonic"` (vDSO
    /// `CLOCK_MONOTONIC`; forced with `EEVDF_RT_CLOCK=monotonic`).
    ///
    /// ```
    /// let rt = eevdf_rt::Builder::new().workers(1).build()?;
    /// assert!(["tsc", "monotonic"].contains(&rt.clock_source()));
    /// # Ok::<(), eevdf_rt::Error>(())
    /// ```
    pub fn clock_source(&self) -> &'static str {
        crate::time::clock::source()
    }

    /// The I/O driver this runtime's green threads use: `Uring` or `Epoll`
    /// ([`Builder::io_driver`] resolved; never `Auto`).
    ///
    /// ```
    /// let rt = eevdf_rt::Builder::new().workers(1).build()?;
    /// println!("I/O through {}", rt.io_driver());
    /// # Ok::<(), eevdf_rt::Error>(())
    /// ```
    pub fn io_driver(&self) -> crate::io::IoDriver {
        self.shared.config.io_driver
    }

    /// Runs `f` as a green thread and blocks the calling OS thread until it
    /// returns; a panic in `f` resumes on the caller.
    ///
    /// # Panics
    /// If called from inside a green thread (it would block a worker: call
    /// `f` directly, or spawn it and join), or if the runtime is shut down.
    /// A shutdown while `f` runs unwinds it, and this call then resumes that
    /// unwinding: the panic's payload is [`Cancelled`](crate::Cancelled).
    pub fn block_on<F, T>(&self, f: F) -> T
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        if tls::current().is_some() {
            panic!("{}", Error::NestedBlockOn);
        }
        let h = match self.try_spawn(f) {
            Ok(h) => h,
            Err(e) => panic!("Runtime::block_on: {e}"),
        };
        match h.join() {
            Ok(v) => v,
            Err(p) => resume_unwind(p),
        }
    }

    /// Spawns `f` as a green thread, from any thread.
    ///
    /// # Panics
    /// If the runtime is shut down (use [`try_spawn`](Self::try_spawn) to get an error instead).
    pub fn spawn<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        match self.try_spawn(f) {
            Ok(h) => h,
            Err(e) => panic!("Runtime::spawn: {e}"),
        }
    }

    /// Spawns `f` as a green thread; an error if the runtime is shut down or
    /// a stack cannot be allocated.
    pub fn try_spawn<F, T>(&self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        spawn::spawn_green(&self.shared, SpawnOpts::default_opts(), f)
    }

    /// Runs `f` on this runtime's pool of blocking OS threads (see
    /// [`task::spawn_blocking`](crate::task::spawn_blocking)), from any thread.
    ///
    /// ```
    /// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
    /// let h = rt.spawn_blocking(|| std::fs::metadata("/").is_ok());
    /// assert!(h.join().unwrap());
    /// ```
    ///
    /// # Panics
    /// If the runtime is shut down, or no pool thread can be started and
    /// none is running (use [`try_spawn_blocking`](Self::try_spawn_blocking)
    /// to get an error instead).
    pub fn spawn_blocking<F, T>(&self, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        match self.try_spawn_blocking(f) {
            Ok(h) => h,
            Err(e) => panic!("Runtime::spawn_blocking: {e}"),
        }
    }

    /// Like [`spawn_blocking`](Self::spawn_blocking), with an error instead
    /// of a panic: the runtime is shut down, or no pool thread can be
    /// started and none is running. Like `spawn_blocking` it never waits:
    /// with all [`max_blocking_threads`](crate::Builder::max_blocking_threads)
    /// busy, the job queues (FIFO) and the call returns its handle at once.
    pub fn try_spawn_blocking<F, T>(&self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        blocking::spawn_blocking(&self.shared, f)
    }

    /// Threads of the blocking pool alive now (running a job or idle).
    pub fn blocking_threads(&self) -> usize {
        self.shared
            .blocking_pool_if_started()
            .map_or(0, |p| p.threads())
    }

    /// A snapshot of every worker's counters.
    pub fn stats(&self) -> Stats {
        let workers = self
            .shared
            .workers
            .iter()
            .map(|w| {
                let mut s: WorkerStats = w.stats.snapshot();
                let c = w.lock().q.counters();
                s.resched_slice = c.resched_slice;
                s.resched_protection = c.resched_protection;
                s.resched_ineligible = c.resched_ineligible;
                s.protection_shortened = c.protection_shortened;
                s
            })
            .collect();
        Stats {
            workers,
            external: self.shared.external.snapshot(),
        }
    }

    /// Applies `spec` (`sched_features` syntax, e.g. `"NO_TTWU_QUEUE"`) on
    /// top of the current features, on every worker. Tasks already delayed
    /// are finished normally even if DELAY_DEQUEUE is now off. An unknown
    /// name changes nothing and is an error. Calls from several threads at
    /// once are applied one after the other, each on top of the last.
    pub fn set_features(&self, spec: &str) -> Result<(), Error> {
        // One change at a time: two callers at once would each apply their
        // spec to the same old set (one change lost) and could leave the
        // run queues with different sets.
        let _one_at_a_time = self.shared.features_update.lock();
        let mut f = self.shared.features();
        f.apply(spec)?;
        self.shared.store_features(f);
        for w in self.shared.workers.iter() {
            w.lock().q.set_features(f);
        }
        Ok(())
    }

    /// The current feature set in `sched_features` syntax (every switch, `NO_` for off).
    pub fn features(&self) -> String {
        self.shared.features().to_string()
    }

    /// Starts recording a scheduling trace: every switch, wakeup,
    /// migration, steal, delayed dequeue and preemption, into one ring of
    /// `capacity` events per worker (32 bytes each; when a ring is full
    /// its oldest events are overwritten), plus a track of at most
    /// `capacity` events for wakeups made outside the runtime (later ones
    /// are counted as dropped). A trace already running is
    /// discarded and restarted. A capacity outside 1 ..= 2^24 is an error;
    /// so is memory the allocator refuses for the rings
    /// ([`Error::OutOfMemory`], allocated before anything changes: a trace
    /// already running then goes on).
    ///
    /// Off (the default) it costs one relaxed load per hook. See
    /// [`Trace`](crate::Trace) and `docs/tracing.md`.
    ///
    /// ```
    /// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
    /// rt.trace_start(4096).unwrap();
    /// rt.block_on(|| eevdf_rt::yield_now());
    /// let trace = rt.trace_stop();
    /// assert!(!trace.runs().is_empty());
    /// assert!(rt.trace_start(0).is_err());
    /// ```
    pub fn trace_start(&self, capacity: usize) -> Result<(), Error> {
        self.shared.trace.start(capacity)
    }

    /// Stops the trace and returns what it recorded (an empty trace if
    /// none was running). Write it with
    /// [`Trace::write_json`](crate::Trace::write_json) or
    /// [`Trace::save`](crate::Trace::save).
    pub fn trace_stop(&self) -> crate::Trace {
        self.shared.trace.stop()
    }

    /// The current feature set.
    pub fn feature_set(&self) -> Features {
        self.shared.features()
    }

    /// A one-line-per-worker dump of the scheduler's internal state (idle
    /// state, pending flags, queue length, timers), for diagnosing hangs.
    #[doc(hidden)]
    pub fn debug_state(&self) -> String {
        use std::fmt::Write;
        let sh = &self.shared;
        let mut s = format!("now={}\n", crate::time::clock::now());
        for w in sh.workers.iter() {
            let _ = writeln!(
                s,
                "w{} idle={} flags={:#x} nr_running={} wakelist_empty={} next_timer={} preempt_at={} next_event={}",
                w.index,
                w.idle().get(),
                w.flags(),
                w.nr_running(),
                w.wakelist().is_empty(),
                w.next_timer.load(Ordering::SeqCst),
                w.preempt_at.load(Ordering::SeqCst),
                w.deadlines.next_event.load(Ordering::SeqCst),
            );
        }
        s
    }

    /// Green threads that have been spawned and not yet exited.
    pub fn live_tasks(&self) -> usize {
        self.shared.registry.len()
    }

    /// Stops the runtime: workers finish the switch they are in and stop,
    /// then every green thread that has not finished (blocked or runnable)
    /// is unwound — its destructors run, its joiners get
    /// `Err(`[`Cancelled`](crate::Cancelled)`)` — and all stacks are freed.
    /// Those destructors may block (join a child, take a lock, sleep): the
    /// green threads being unwound take turns until all have finished. One
    /// whose destructor waits for something that never happens holds this
    /// call for 2 s at most; it is then left unfinished (its stack stays
    /// mapped, its remaining destructors never run, its joiners get
    /// `Cancelled`, and a line on stderr says so).
    /// Nothing handed to a sleeping green thread is lost: a thread whose
    /// wait was already served when it is unwound — a lock, a permit or a
    /// message handed over by a thread unwound before it — returns from
    /// that wait with what it got, runs on to its next preemption point or
    /// wait, and is unwound there, so its destructors give the lock or
    /// permit back; a notification it took but could not act on goes to
    /// the condition variable's next waiter.
    /// Blocking-pool jobs are not waited for: queued ones are cancelled,
    /// running ones finish on their own threads and still deliver their
    /// results.
    /// Idempotent: a call made while another runs waits until that one has
    /// finished. Also done on drop.
    ///
    /// A green thread that never reaches a preemption point keeps its
    /// worker (and this call) waiting: preemption is cooperative. So does
    /// one in a blocking system call that waits for another green thread
    /// of this runtime: the workers' threads are joined before any green
    /// thread is unwound (their io_uring rings must drain first), so that
    /// other one never runs again.
    ///
    /// # Panics
    /// If called from one of this runtime's own green threads (it would wait
    /// for its own worker). Dropping the runtime there instead finishes the
    /// shutdown on a background thread.
    pub fn shutdown(&self) {
        if wake_on_own_worker(&self.shared) {
            panic!("Runtime::shutdown called from one of its own green threads");
        }
        let me = std::thread::current().id();
        let threads = {
            let mut st = self.stop.lock();
            match st.threads.take() {
                Some(threads) => {
                    st.finisher = Some(me);
                    threads
                }
                None => {
                    // Another call runs it: wait until it has finished, as
                    // it will (unless it is this very thread, in a
                    // destructor that shutdown runs).
                    if st.finisher != Some(me) {
                        while st.finisher.is_some() {
                            self.stopped.wait(&mut st);
                        }
                    }
                    return;
                }
            }
        };
        // Waiters are released even if a destructor's panic escapes.
        let _finished = OnFinish(self);
        finish_shutdown(self.shared.clone(), threads);
    }
}

/// Marks the shutdown finished and wakes the calls that wait for it.
struct OnFinish<'a>(&'a Runtime);

impl Drop for OnFinish<'_> {
    fn drop(&mut self) {
        self.0.stop.lock().finisher = None;
        self.0.stopped.notify_all();
    }
}

fn wake_on_own_worker(sh: &Shared) -> bool {
    crate::wake::on_worker_thread(sh)
}

fn finish_shutdown(sh: Arc<Shared>, threads: Threads) {
    sh.shutdown.store(true, Ordering::Release);
    // Blocking jobs are not waited for (runtime::blocking, "Shutdown").
    // The pool is made here if it was never used: a `spawn_blocking` that
    // read the flag before it was set may be making it right now, and
    // must get the pool this shuts down (one pool per runtime), not a new
    // one that would run its job after shutdown returned.
    sh.blocking_pool().shutdown();
    // The monitor and the standby threads first: no hand-off starts now.
    crate::worker::handoff::shutdown(&sh);
    for w in sh.workers.iter() {
        // A busy worker whose green thread runs alone (a loop of yields or
        // preemption points that never switches) switches at its next
        // preemption point and sees the flag; a parked one is woken.
        w.set_flags(crate::worker::RESCHED);
        w.idle().kick();
    }
    for t in threads.workers {
        let _ = t.join();
    }
    // Threads that hand-offs started (some may have become standbys
    // while the workers' first threads were joined).
    crate::worker::handoff::join_threads(&sh);
    // Every worker has stopped: nothing else can resume a context now.
    // This thread may be a worker of another runtime, or run one of its
    // green threads: the destructors below must not see that worker or
    // task as theirs (tls::suspend), and it gets both back afterwards.
    let saved = tls::suspend();
    let tasks = sh.registry.drain();
    for t in &tasks {
        let _g = t.st.lock_wake();
        t.cancelled.store(true, Ordering::Relaxed);
        t.st.set_state(DEAD);
    }
    unwind_green_threads(&tasks);
    drop(tasks);
    tls::resume(saved);
    // The queues are replaced with empty ones below: the room made for
    // the old ones is gone (a spawn that raced with shutdown finds none).
    sh.room.forget();
    for w in sh.workers.iter() {
        let mut rq = w.lock();
        let params = rq.q.params();
        let features = rq.q.features();
        let mut fresh = RunQueue::new(params, features);
        // `stats()` keeps reading the counters from here.
        fresh.continue_counters(rq.q.counters());
        let old = std::mem::replace(&mut rq.q, fresh);
        rq.timers.clear();
        #[cfg(debug_assertions)]
        {
            rq.reserved = None;
        }
        drop(rq);
        drop(old);
        w.stacks.lock().clear();
        for t in w.wakelist().take_all() {
            drop(t);
        }
    }
    // I/O: nothing polls any more (the workers are joined) and the
    // unwound green threads have deregistered their descriptors; free the
    // reactor's retired records and make later waits on it fail fast.
    if let Some(r) = crate::io::reactor::get(&sh) {
        r.shutdown();
    }
}

/// How long shutdown keeps resuming green threads whose destructors block
/// (see [`unwind_green_threads`]) before it gives up on them.
const UNWIND_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Unwinds the green threads shutdown drained, on the calling thread (all
/// workers are joined, so no other thread can resume a context now).
///
/// # Unwinding the green threads
///
/// A context that never started is dropped without running its body. A
/// started one is resumed as its worker would resume it, with the task
/// marked `cancelled`: its switch returns into
/// `task::resumed_by_shutdown`, which raises a panic with a
/// [`Cancelled`](crate::Cancelled) payload, and the green thread unwinds
/// itself, running its destructors; its joiners get `Cancelled`. (A
/// thread whose wait was served meanwhile — a lock handed over by one
/// unwound before it — keeps what it got and is unwound at its next
/// switch or preemption point instead: see `task::resumed_by_shutdown`.) A
/// destructor may block (join a child, take a lock, sleep, send on a full
/// channel): it then switches out, back here, and the green threads are
/// resumed in turns — a child unwound in a later turn completes the join
/// its parent waits for — until all have finished. A destructor that
/// waits for something no green thread will ever do would keep shutdown
/// here for good: after [`UNWIND_LIMIT`] the rest are left as they are
/// (their stacks stay mapped, their remaining destructors never run), their
/// joiners get `Cancelled`, and a message says how many. (A forced unwind, corosensei's, aborts the
/// process when a destructor suspends: it is used only for contexts that
/// never started.)
fn unwind_green_threads(tasks: &[TaskRef]) {
    let mut turn: Vec<(&TaskRef, crate::context::GreenContext)> = Vec::new();
    for t in tasks {
        // SAFETY: all workers are joined, so no thread can be resuming this
        // context; the registry gave us the task exclusively.
        let Some(mut ctx) = unsafe { t.context_mut() }.take() else {
            continue;
        };
        if ctx.started() {
            turn.push((t, ctx));
        } else {
            // A captured value whose destructor panics must not stop the
            // cleanup of the rest.
            let _ = catch_unwind(AssertUnwindSafe(|| ctx.force_unwind()));
        }
    }
    let start = std::time::Instant::now();
    while !turn.is_empty() {
        let mut blocked = Vec::new();
        for (t, mut ctx) in turn {
            {
                // A destructor's wait set it blocked; make it dead again
                // for wakers (a wake of a dead task does nothing).
                let _g = t.st.lock_wake();
                t.st.set_state(DEAD);
            }
            tls::set_current(TaskRef::as_ptr(t));
            // The cancellation's panic (or one from a destructor) leaves
            // the coroutine through this resume once the body is unwound.
            let r = catch_unwind(AssertUnwindSafe(|| ctx.resume()));
            tls::set_current(std::ptr::null());
            match r {
                Ok(crate::context::Resumed::Switched(_)) => blocked.push((t, ctx)),
                Ok(crate::context::Resumed::Finished) | Err(_) => drop(ctx),
            }
        }
        if !blocked.is_empty() && start.elapsed() >= UNWIND_LIMIT {
            eprintln!(
                "eevdf-rt: shutdown gave up on {} green thread(s) whose destructors \
                 still wait after {UNWIND_LIMIT:?}; their stacks stay mapped",
                blocked.len()
            );
            for (t, ctx) in blocked {
                ctx.leak();
                // Its completion guard is on the stack just left as it is:
                // give its joiners their `Cancelled` here, or a join would
                // wait for good. (A thread whose result was delivered and
                // that blocked after, dropping it, has nothing to give.)
                if !t.join.is_done() {
                    // SAFETY: the context was just leaked: it is never
                    // resumed or dropped, so its guard never completes.
                    unsafe { t.join.complete_abandoned() };
                }
            }
            break;
        }
        turn = blocked;
        if !turn.is_empty() {
            // Whatever the waits need may come from another OS thread.
            std::thread::yield_now();
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // No other call can be under way: they all borrowed the runtime.
        let Some(threads) = self.stop.get_mut().threads.take() else {
            return;
        };
        if wake_on_own_worker(&self.shared) {
            // Cannot join our own worker: let a helper thread finish.
            let sh = self.shared.clone();
            sh.shutdown.store(true, Ordering::Release);
            let _ = std::thread::Builder::new()
                .name("eevdf-shutdown".into())
                .spawn(move || finish_shutdown(sh, threads));
        } else {
            finish_shutdown(self.shared.clone(), threads);
        }
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("workers", &self.workers())
            .field("features", &self.shared.features().diff_from_default())
            .finish()
    }
}
