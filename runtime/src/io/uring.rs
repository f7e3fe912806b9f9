//! The io_uring driver: one ring per worker, operations submitted by green
//! threads, completions turned into ordinary wakeups.
//!
//! Owns: each worker's ring (a thread-local of the worker thread, created
//! at the first operation a green thread submits there), the operation
//! record ([`Op`]) a parked green thread waits on, batching of submissions,
//! reaping of completions, cancellation, the idle worker's park in its ring,
//! and the drain at worker exit. Must not: touch run queues (completions
//! are delivered with `wake::wake_task`, like any wakeup), or submit to a
//! ring from any thread but its worker (the rings are `SINGLE_ISSUER`).
//!
//! # An operation
//!
//! ```text
//! green thread (on worker A)              worker A (scheduler context)
//! op = Op { res, done: false, task }      at_switch / idle_poll / park_idle:
//! push SQE (user_data = &op) on A's SQ      io_uring_enter: submit the batch, run task work
//! park until op.done                        for each CQE: clone op.task, store res,
//!                                             done = true (SeqCst), wake_task(clone)
//! read op.res                             
//! ```
//!
//! The record lives on the green thread's stack. `park` (the
//! `wake::waiter` protocol) marks the task blocked before it re-reads
//! `done`, and the reaper publishes `done` before it wakes, so a completion
//! is never missed. The reaper clones the task reference *before* it
//! publishes `done`: once `done` is visible the green thread may return and
//! its stack frame — the record — may be gone.
//!
//! # Batching
//!
//! Pushing an SQE is a store to shared memory; nothing enters the kernel
//! until the worker calls `io_uring_enter`, which submits every SQE pushed
//! since the last call and (with `DEFER_TASKRUN`) runs the completions the
//! kernel queued. A worker enters at a switch only when 32 SQEs are waiting,
//! when the oldest has waited 20 µs, or when completions are pending and
//! the last enter is 20 µs old ([`at_switch`]); it always enters before it
//! idles ([`idle_poll`]) and while it sleeps ([`park_idle`]). So under load
//! many green threads' reads and writes cross into the kernel in one system
//! call, and completions are read from shared memory.
//!
//! # The idle park
//!
//! A worker whose ring exists never parks on its futex: it parks in
//! `io_uring_enter(min_complete = 1)` with an `IORING_OP_FUTEX_WAIT` armed
//! on its idle word (the value `PARKED`). A kick is unchanged — CAS
//! `PARKED → RUNNING`, then `futex_wake` — and completes the futex op,
//! which ends the wait; so `worker::idle`'s Dekker argument carries over
//! (a kick between the re-check and the arm makes the futex op fail with
//! `EAGAIN`, which completes at once). The futex op may stay armed after
//! the worker wakes for another reason; that is why this worker must never
//! sleep in a plain `futex_wait` again: a later `futex_wake(1)` could be
//! consumed by the stale op instead. If the runtime also has an epoll
//! reactor with registrations (readiness users), the parked worker takes
//! the reactor's poller role and arms a `POLL_ADD` on the epoll fd, so
//! readiness and the reactor's eventfd end its wait too.
//!
//! # Cancellation and buffers
//!
//! Every operation's buffers (the caller's slice, an `iovec` array, a
//! `sockaddr`) and its record belong to the submitting green thread's
//! stack frame or to its caller, which cannot return while the green
//! thread is parked. The green thread leaves the operation only after its
//! CQE has been reaped, in every case:
//!
//! * **Timeout.** When the deadline passes, it submits `ASYNC_CANCEL` for
//!   its record (on its own ring, or through the owning worker's remote
//!   queue plus a kick if it now runs elsewhere) and parks again, without a
//!   deadline, until the original CQE arrives (`-ECANCELED`, or the result,
//!   which is then returned: no data is lost). One case waits longer: if
//!   the thread whose ring holds the operation was handed off while stuck
//!   (`worker::handoff`), only that thread can reap the ring, so the
//!   timeout takes effect when it comes back and cancels everything on it.
//!   The epoll driver has no such wait; a
//!   deadline that holds here would need the buffer to move into a record
//!   the ring owns, so that the green thread could leave the operation.
//! * **Shutdown.** `Runtime::shutdown` joins the worker threads before it
//!   unwinds parked green threads. A worker thread's ring is dropped
//!   with the thread's locals, and its `Drop` cancels everything in flight
//!   (`ASYNC_CANCEL` with `ANY`) and reaps until the last operation's CQE
//!   has arrived, writing into records whose stacks are still alive. Only
//!   then are stacks unwound and freed.
//! * **A record dropped without its completion** (a bug) aborts the
//!   process rather than let the kernel write into freed memory.

use crate::shared::Shared;
use crate::stats::Counter;
use crate::task::TaskRef;
use crate::wake::waiter;
use crate::worker::{tls, Worker};
use io_uring::{opcode, squeue::Entry, types, IoUring};
use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `user_data` of the idle park's futex wait.
const FUTEX_TAG: u64 = 1;
/// `user_data` of cancel requests (their own CQEs are ignored).
const CANCEL_TAG: u64 = 2;
/// `user_data` of the poll on the epoll reactor's fd.
const REACTOR_TAG: u64 = 3;
/// Operation records are stack addresses, far above the tags.
const MAX_TAG: u64 = 4096;

/// Submission queue entries per ring.
const SQ_ENTRIES: u32 = 256;
/// Completion queue entries per ring (one per parked green thread at most,
/// plus cancels; the kernel buffers an overflow, so this is not a limit).
const CQ_ENTRIES: u32 = 4096;
/// A switch submits once this many SQEs wait...
const SUBMIT_BATCH: u32 = 32;
/// ... or once the oldest has waited this long (ns); also the pace of
/// entering only to run pending completions.
const SUBMIT_DELAY_NS: u64 = 20_000;

/// `futex2` flags of the idle word: 32-bit, process-private.
const FUTEX2_SIZE_U32: u32 = 0x02;
const FUTEX2_PRIVATE: u32 = 128;

/// The runtime-wide part of the driver (in `Shared`): per worker, the
/// cancel requests other threads leave for it.
pub(crate) struct Driver {
    remotes: Box<[Remote]>,
}

/// Cancel requests for one worker's ring, from green threads that timed
/// out while running on another worker.
struct Remote {
    pending: AtomicBool,
    cancels: Mutex<Vec<u64>>,
}

impl Driver {
    pub(crate) fn new(workers: usize) -> Driver {
        Driver {
            remotes: (0..workers)
                .map(|_| Remote {
                    pending: AtomicBool::new(false),
                    cancels: Mutex::new(Vec::new()),
                })
                .collect(),
        }
    }
}

/// An operation a green thread waits on (see the module docs).
struct Op {
    res: AtomicI32,
    done: AtomicBool,
    task: TaskRef,
}

impl Drop for Op {
    fn drop(&mut self) {
        if !*self.done.get_mut() {
            // The kernel may still write into this frame's buffers.
            eprintln!("eevdf-rt: an io_uring operation was abandoned before its completion");
            std::process::abort();
        }
    }
}

thread_local! {
    /// This worker thread's ring (none before its first operation).
    static RING: RefCell<Option<WorkerRing>> = const { RefCell::new(None) };
    /// Whether this thread's ring may have work: set by every push of an
    /// SQE (an operation, a cancel, the idle futex wait, the reactor's
    /// poll), cleared by [`at_switch`] when it finds the ring idle. The
    /// switch and the preemption point look here first: one load of a
    /// plain cell, where borrowing `RING` (a value with a destructor) costs
    /// a registration check, a borrow flag and the idle tests on every
    /// switch of a runtime that does no I/O.
    static MAY_BE_BUSY: Cell<bool> = const { Cell::new(false) };
}

/// One worker's ring and its bookkeeping.
struct WorkerRing {
    ring: IoUring,
    worker: usize,
    /// The runtime (for this worker's counters).
    shared: Arc<Shared>,
    /// Operations submitted or queued whose CQE has not been reaped.
    in_flight: usize,
    /// Switch time at which unsubmitted SQEs were first seen (0: none).
    pending_since: u64,
    /// Time of the last `io_uring_enter`.
    last_enter: u64,
    futex_armed: bool,
    reactor_armed: bool,
    /// Tasks whose operations completed, woken after the ring is released.
    woken: Vec<TaskRef>,
}

/// Creates a ring, with the most specific flags the kernel accepts.
fn new_ring() -> io::Result<IoUring> {
    let attempts: [fn(&mut io_uring::Builder); 3] = [
        |b| {
            b.setup_single_issuer()
                .setup_defer_taskrun()
                .setup_taskrun_flag();
        },
        |b| {
            b.setup_single_issuer()
                .setup_coop_taskrun()
                .setup_taskrun_flag();
        },
        |_| {},
    ];
    let mut last = None;
    for flags in attempts {
        let mut b = IoUring::builder();
        b.setup_cqsize(CQ_ENTRIES);
        flags(&mut b);
        match b.build(SQ_ENTRIES) {
            Ok(r) => return Ok(r),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("io_uring_setup failed")))
}

impl WorkerRing {
    /// Pushes `e`, entering the kernel first if the SQ is full.
    ///
    /// # Safety
    ///
    /// Everything `e` points to must stay valid until its CQE is reaped
    /// (module docs: "Cancellation and buffers").
    unsafe fn push(&mut self, e: &Entry) {
        MAY_BE_BUSY.with(|b| b.set(true));
        loop {
            // SAFETY: forwarded to the caller.
            if unsafe { self.ring.submission().push(e) }.is_ok() {
                return;
            }
            self.enter(0, None);
        }
    }

    /// `io_uring_enter`: submits the queued SQEs, runs pending completion
    /// work and waits for `want` CQEs (at most `timeout`). Errors
    /// (`EINTR`, `ETIME`, `EBUSY`) only mean "look at the CQ and retry".
    fn enter(&mut self, want: usize, timeout: Option<Duration>) {
        let s = self.ring.submitter();
        let _ = match timeout {
            Some(d) => {
                let ts = types::Timespec::from(d);
                s.submit_with_args(want, &types::SubmitArgs::new().timespec(&ts))
            }
            None => s.submit_and_wait(want),
        };
        self.pending_since = 0;
        self.last_enter = crate::time::clock::now();
        self.shared.workers[self.worker]
            .stats
            .inc(Counter::io_uring_enters);
    }

    /// Reaps every CQE: stores results, collects the tasks to wake.
    /// `draining`: the worker is exiting; nobody is woken.
    fn reap(&mut self, draining: bool) -> bool {
        let mut reactor = false;
        let before = self.in_flight;
        let (ring, woken) = (&mut self.ring, &mut self.woken);
        for cqe in ring.completion() {
            match cqe.user_data() {
                FUTEX_TAG => self.futex_armed = false,
                REACTOR_TAG => {
                    self.reactor_armed = false;
                    reactor = true;
                }
                CANCEL_TAG => {}
                ud => {
                    debug_assert!(ud >= MAX_TAG);
                    self.in_flight -= 1;
                    // SAFETY: `ud` is the address of an `Op` whose green
                    // thread stays parked (its frame alive) until it sees
                    // `done`, which we set only below (module docs).
                    let op = unsafe { &*(ud as *const Op) };
                    if !draining {
                        woken.push(op.task.clone());
                    }
                    op.res.store(cqe.result(), Ordering::Relaxed);
                    // SeqCst: the waiter protocol (`wake::waiter`).
                    op.done.store(true, Ordering::SeqCst);
                }
            }
        }
        let completed = (before - self.in_flight) as u64;
        if completed > 0 {
            self.shared.workers[self.worker]
                .stats
                .add(Counter::io_uring_completions, completed);
        }
        reactor
    }

    /// Takes the cancel requests other threads left for this ring.
    fn take_remote(&mut self, sh: &Shared) {
        let Some(d) = sh.uring.as_ref() else { return };
        let remote = &d.remotes[self.worker];
        if !remote.pending.load(Ordering::SeqCst) {
            return;
        }
        remote.pending.store(false, Ordering::SeqCst);
        let mut cancels = remote.cancels.lock();
        // A preemption point runs this from a green thread, and the
        // hand-off monitor may take the worker from this thread between
        // that point's ownership check and here. The cancels may then be
        // for operations the new owner submitted on its own ring: leave
        // them to it (it is kicked, and takes them at its next look), or
        // they would be pushed on this ring, where they match nothing, and
        // a timed-out read would wait for a completion nobody asked for.
        // The load sees a takeover that came before any listed cancel: a
        // cancel is pushed under this lock by a green thread whose
        // operation went to the new owner's ring after the takeover.
        if sh.workers[self.worker].own.load() != tls::own() {
            drop(cancels);
            remote.pending.store(true, Ordering::SeqCst);
            sh.workers[self.worker].idle().kick();
            return;
        }
        let list = std::mem::take(&mut *cancels);
        drop(cancels);
        for ud in list {
            self.push_cancel(ud);
        }
    }

    fn push_cancel(&mut self, ud: u64) {
        let e = opcode::AsyncCancel::new(ud).build().user_data(CANCEL_TAG);
        // SAFETY: a cancel request points to no memory.
        unsafe { self.push(&e) };
    }

    fn unsubmitted(&mut self) -> u32 {
        self.ring.submission().len() as u32
    }
}

impl WorkerRing {
    /// Cancels everything in flight and reaps until the last operation
    /// completed. `draining`: nobody is woken (shutdown); otherwise the
    /// waiting green threads are collected in `woken`.
    fn cancel_all(&mut self, draining: bool) {
        if self.in_flight == 0 {
            return;
        }
        let e = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(CANCEL_TAG);
        // SAFETY: a cancel request points to no memory.
        unsafe { self.push(&e) };
        let start = Instant::now();
        while self.in_flight > 0 {
            self.enter(1, Some(Duration::from_millis(100)));
            self.reap(draining);
            if self.in_flight > 0 && start.elapsed() > Duration::from_secs(1) {
                // An operation the kernel could not cancel at once (a
                // disk read in a kernel worker): ask again, keep waiting.
                // SAFETY: as above.
                unsafe { self.push(&e) };
            }
        }
    }
}

impl Drop for WorkerRing {
    /// The worker thread exits: cancel everything in flight and reap until
    /// the last operation completed (module docs: "Shutdown").
    fn drop(&mut self) {
        self.cancel_all(true);
    }
}

/// This thread was taken off its worker (`worker::handoff`): cancel what is
/// in flight on its ring, reap it, wake the green threads that waited (they
/// resubmit on the ring of the worker they run on next: see [`submit`]),
/// and drop the ring. The thread makes a new ring when it runs a worker
/// again.
pub(crate) fn on_detach() {
    let ring = RING.with(|cell| cell.try_borrow_mut().ok().and_then(|mut g| g.take()));
    let Some(mut r) = ring else { return };
    r.cancel_all(false);
    let woken = std::mem::take(&mut r.woken);
    drop(r);
    // No ring on this thread now: its switches need not look.
    MAY_BE_BUSY.with(|b| b.set(false));
    for t in &woken {
        crate::wake::wake_task(t);
    }
}

/// Runs `f` on this worker thread's ring, creating it if the runtime uses
/// io_uring. `None` off a worker, on an epoll runtime, or if the ring
/// cannot be created (the caller then uses the epoll path).
#[inline(never)]
fn with_ring<R>(f: impl FnOnce(&mut WorkerRing) -> R) -> Option<R> {
    let (sh, index) = tls::worker()?;
    sh.uring.as_ref()?;
    let shared = tls::current()?.shared.clone();
    RING.with(|cell| {
        let mut g = cell.try_borrow_mut().ok()?;
        if g.is_none() {
            *g = Some(WorkerRing {
                ring: new_ring().ok()?,
                worker: index,
                shared,
                in_flight: 0,
                pending_since: 0,
                last_enter: 0,
                futex_armed: false,
                reactor_armed: false,
                woken: Vec::new(),
            });
        }
        g.as_mut().map(f)
    })
}

/// Runs `f` on this worker's ring if it exists (never creates one), then
/// wakes the tasks it reaped. Returns `f`'s result. One thread-local
/// access when nothing was reaped (the common case at a switch); a second
/// one only to hand the emptied buffer back.
#[inline(never)]
fn with_existing<R>(f: impl FnOnce(&mut WorkerRing) -> R) -> Option<R> {
    let (r, woken) = RING.with(|cell| {
        let mut g = cell.try_borrow_mut().ok()?;
        let ring = g.as_mut()?;
        let r = f(ring);
        let woken = (!ring.woken.is_empty()).then(|| std::mem::take(&mut ring.woken));
        Some((r, woken))
    })?;
    let Some(mut woken) = woken else {
        return Some(r);
    };
    for t in woken.drain(..) {
        crate::wake::wake_task(&t);
    }
    // Hand the buffer back (keeps its capacity).
    RING.with(|cell| {
        if let Ok(mut g) = cell.try_borrow_mut() {
            if let Some(ring) = g.as_mut() {
                if ring.woken.is_empty() {
                    ring.woken = woken;
                }
            }
        }
    });
    Some(r)
}

/// Whether the calling context submits its I/O to a ring: a green thread
/// of a runtime that uses io_uring.
#[inline]
pub(crate) fn active() -> bool {
    tls::current().is_some_and(|t| t.shared.uring.is_some())
}

/// Why a ring operation gave up.
pub(crate) struct TimedOut;

/// Submits `entry` for the calling green thread and parks it until the
/// completion arrives or `deadline` passes (then the operation is
/// cancelled and its completion awaited). Returns the CQE's result
/// (`-errno` on failure), or `None` when there is no ring (the caller uses
/// the epoll path).
///
/// # Safety
///
/// Every pointer in `entry` must stay valid until this call returns (it
/// returns only after the CQE was reaped).
pub(crate) unsafe fn submit(
    entry: Entry,
    deadline: Option<Instant>,
) -> Option<Result<i32, TimedOut>> {
    let op = Op {
        res: AtomicI32::new(0),
        done: AtomicBool::new(false),
        task: tls::current_ref()?,
    };
    let e = entry.user_data(&op as *const Op as u64);
    loop {
        let pushed = with_ring(|r| {
            // SAFETY: `op` and the caller's buffers outlive the CQE: we
            // return only once `op.done` is set by the reaper.
            unsafe { r.push(&e) };
            r.in_flight += 1;
            r.worker
        });
        let Some(worker) = pushed else {
            op.done.store(true, Ordering::Relaxed);
            return None;
        };
        let done = || op.done.load(Ordering::SeqCst);
        // Served, if shutdown unwinds this green thread: a completion with
        // a result (the rings cancel what is in flight when their workers
        // stop; nothing was transferred then).
        let served = || done() && op.res.load(Ordering::Relaxed) != -libc::ECANCELED;
        // Loop: wakeups may be spurious.
        while !done() {
            if !waiter::park_or_cancel(done, deadline, served) && !done() {
                // The deadline passed: cancel, then wait for the completion
                // (the kernel owns the buffers until then).
                let remote = cancel(worker, &op);
                while !done() {
                    waiter::park(done, None);
                }
                if remote {
                    forget_cancel(worker, &op);
                }
                let res = op.res.load(Ordering::Relaxed);
                return Some(if res == -libc::ECANCELED {
                    Err(TimedOut)
                } else {
                    Ok(res)
                });
            }
        }
        let res = op.res.load(Ordering::Relaxed);
        if res != -libc::ECANCELED {
            return Some(Ok(res));
        }
        // Cancelled, not by our deadline: the thread whose ring held it was
        // taken off its worker (`on_detach`). Nothing was transferred;
        // submit again, on the ring of the worker we run on now.
        op.done.store(false, Ordering::Relaxed);
    }
}

/// Asks the ring of `worker` (where `op` was submitted) to cancel it.
/// `true`: the request was left in that worker's list of remote cancels
/// (we run on another worker), to be withdrawn with [`forget_cancel`]
/// once the operation completed.
fn cancel(worker: usize, op: &Op) -> bool {
    let ud = op as *const Op as u64;
    let here = with_ring(|r| {
        if r.worker == worker {
            // On our own ring it goes into the submission queue ahead of
            // every later operation of this thread, so it can only ever
            // meet `op` (or nothing, if `op` completed first).
            r.push_cancel(ud);
            true
        } else {
            false
        }
    });
    if here == Some(true) {
        return false;
    }
    let sh = &op.task.shared;
    if let Some(d) = sh.uring.as_ref() {
        d.remotes[worker].cancels.lock().push(ud);
        d.remotes[worker].pending.store(true, Ordering::SeqCst);
        sh.workers[worker].idle().kick();
        return true;
    }
    false
}

/// Withdraws a remote cancel request for `op`, which has completed, if
/// that worker has not taken it yet. Requests are keyed by the operation
/// record's address, which is on the green thread's stack: a request left
/// behind would cancel whatever later operation is submitted from the same
/// address on that ring (harmless for a read, resubmitted after
/// `ECANCELED`, but a wasted round trip, and wrong for an operation that
/// cannot be repeated). Once the worker has taken it, it is already in that
/// ring's submission queue, ahead of any later operation there.
fn forget_cancel(worker: usize, op: &Op) {
    let ud = op as *const Op as u64;
    if let Some(d) = op.task.shared.uring.as_ref() {
        d.remotes[worker].cancels.lock().retain(|&u| u != ud);
    }
}

/// Hook of the worker loop, at every switch (before the run-queue lock):
/// submits the pending batch when it is due, runs pending completions at
/// the same pace, and wakes the green threads whose operations completed.
#[inline]
pub(crate) fn at_switch(sh: &Shared, worker: usize, now: u64) {
    let Some(d) = sh.uring.as_ref() else {
        return;
    };
    // Idle since the last look, and no cancel requests from other threads
    // (they can only concern operations in flight, but are taken here).
    if !MAY_BE_BUSY.with(Cell::get) && !d.remotes[worker].pending.load(Ordering::Relaxed) {
        return;
    }
    with_existing(|r| {
        r.take_remote(sh);
        let queued = r.unsubmitted();
        if queued == 0 && r.in_flight == 0 && !r.reactor_armed {
            // Nothing a running worker must submit or deliver: the idle
            // futex wait, if still armed, only ever completes with "you
            // were kicked", which matters to a parked worker (the next
            // idle poll or tick reaps it). The next push marks the ring
            // busy again.
            MAY_BE_BUSY.with(|b| b.set(false));
            if !r.futex_armed {
                // An idle ring: no completion can be pending but a
                // finished cancel request, which the next reap collects.
                return;
            }
        }
        if queued > 0 && r.pending_since == 0 {
            r.pending_since = now;
        }
        let submit_due = queued >= SUBMIT_BATCH
            || (queued > 0 && now.saturating_sub(r.pending_since) >= SUBMIT_DELAY_NS);
        let work_due = r.in_flight > 0
            && r.ring.submission().taskrun()
            && now.saturating_sub(r.last_enter) >= SUBMIT_DELAY_NS;
        if submit_due || work_due {
            r.enter(0, None);
        }
        r.reap(false);
    });
}

/// Hook of a busy worker's paced poll (`worker::run::busy_poll`, at most
/// every 50 µs at its switches and preemption points; a green thread may
/// not switch for a long time): submits what is queued, runs pending
/// completions and wakes their green threads.
#[inline]
pub(crate) fn at_tick(sh: &Shared) {
    if sh.uring.is_some() {
        idle_poll(sh);
    }
}

/// Hook of `preempt_point` on a uring runtime when no flag is pending:
/// if this worker's ring has completions (in the CQ, or as deferred task
/// work the kernel flagged with `IORING_SQ_TASKRUN`), runs and reaps them
/// and wakes their green threads; submits a queued batch once it is due.
/// So a busy worker (a CPU-bound green thread reaching preemption points)
/// submits and delivers within about one preemption-point interval instead
/// of at its next switch or tick. Costs a thread-local access and a few
/// loads otherwise.
#[inline(never)]
pub(crate) fn at_preempt_point(sh: &Shared) {
    if !MAY_BE_BUSY.with(Cell::get) {
        return;
    }
    let pending = RING.with(|cell| {
        let Ok(mut g) = cell.try_borrow_mut() else {
            return false;
        };
        let Some(r) = g.as_mut() else { return false };
        if r.in_flight == 0 {
            return false;
        }
        if !r.ring.completion().is_empty() || r.ring.submission().taskrun() {
            return true;
        }
        // A batch the last switch left queued: submit it once it is due.
        if r.unsubmitted() == 0 {
            return false;
        }
        let now = crate::time::clock::now();
        if r.pending_since == 0 {
            r.pending_since = now;
        }
        now.saturating_sub(r.pending_since) >= SUBMIT_DELAY_NS
    });
    if pending {
        idle_poll(sh);
    }
}

/// Hook of the worker loop, when the worker finds nothing to run and while
/// it polls: submits everything queued, runs pending completions, and
/// wakes their green threads. Returns whether it woke any.
#[inline]
pub(crate) fn idle_poll(sh: &Shared) -> bool {
    if sh.uring.is_none() {
        return false;
    }
    with_existing(|r| {
        r.take_remote(sh);
        if r.unsubmitted() > 0 || (r.in_flight > 0 && r.ring.submission().taskrun()) {
            r.enter(0, None);
        }
        let reactor = r.reap(false);
        !r.woken.is_empty() || reactor
    })
    .unwrap_or(false)
}

/// Hook of the worker loop, in place of its futex park: parks in this
/// worker's ring until a completion, a kick (the futex op on the idle
/// word) or the timeout `timeout()` gives (module docs: "The idle park").
/// Returns `false`, doing nothing, if this worker has no ring (the caller
/// parks as usual).
///
/// `timeout` is evaluated after the worker has announced `PARKED`: a timer
/// another thread arms on this worker (`worker::handoff`) stores its time,
/// then kicks; a kick that came before the announcement finds the worker
/// polling and does nothing, so the time must be read after it.
#[cfg(not(loom))]
pub(crate) fn park_idle(
    sh: &Shared,
    w: &Worker,
    timeout: impl FnOnce() -> Option<Duration>,
) -> bool {
    if sh.uring.is_none() {
        return false;
    }
    let reactor = crate::io::reactor::get(sh).filter(|r| r.has_registrations());
    let mut poller = false;
    let parked = with_existing(|r| {
        r.take_remote(sh);
        w.idle().prepare_park();
        // Re-check every work source after announcing PARKED (worker::idle).
        let busy = w.has_pending_work()
            || sh.is_shutdown()
            || !r.ring.completion().is_empty()
            || sh
                .uring
                .as_ref()
                .is_some_and(|d| d.remotes[r.worker].pending.load(Ordering::SeqCst));
        if !busy {
            if !r.futex_armed {
                let word = w.idle().futex_word();
                let e = opcode::FutexWait::new(
                    word.as_ptr() as *const u32,
                    u64::from(crate::worker::idle::PARKED),
                    u64::from(u32::MAX),
                    FUTEX2_SIZE_U32 | FUTEX2_PRIVATE,
                )
                .build()
                .user_data(FUTEX_TAG);
                // SAFETY: the idle word lives in the worker, which outlives
                // its thread and so this ring (dropped with the thread).
                unsafe { r.push(&e) };
                r.futex_armed = true;
            }
            if let Some(re) = reactor {
                if re.try_claim_poller() {
                    poller = true;
                    if !r.reactor_armed {
                        let e = opcode::PollAdd::new(types::Fd(re.epoll_fd()), libc::POLLIN as u32)
                            .build()
                            .user_data(REACTOR_TAG);
                        // SAFETY: a poll points to no memory; the epoll fd
                        // lives as long as the runtime's reactor, which
                        // outlives the workers.
                        unsafe { r.push(&e) };
                        r.reactor_armed = true;
                    }
                }
            }
            w.stats.inc(Counter::parks);
            r.enter(1, timeout());
        } else {
            r.enter(0, None);
        }
        w.idle().set_running();
        r.reap(false)
    });
    let Some(reactor_ready) = parked else {
        return false;
    };
    if let Some(re) = reactor {
        if poller {
            re.dispatch_now();
            crate::worker::run::release_poller_role(sh, w, re);
        } else if reactor_ready {
            // A poll armed while this worker held the poller role, which
            // another worker holds now: that one collects the events. Never
            // wait for its poll lock — it may be blocked in `epoll_wait`
            // holding it, and this worker would stop serving its queue
            // while its idle word says it is running (no kick reaches it).
            re.poll_now();
        }
    }
    true
}

/// Loom builds have no rings.
#[cfg(loom)]
pub(crate) fn park_idle(
    _sh: &Shared,
    _w: &Worker,
    _timeout: impl FnOnce() -> Option<Duration>,
) -> bool {
    false
}

/// The result of a CQE as an `io::Result`.
pub(crate) fn cvt(res: i32) -> io::Result<usize> {
    if res >= 0 {
        Ok(res as usize)
    } else {
        Err(io::Error::from_raw_os_error(-res))
    }
}

/// A deadline `timeout` from now (none without a timeout).
pub(crate) fn deadline(timeout: Option<Duration>) -> Option<Instant> {
    timeout.and_then(|t| Instant::now().checked_add(t))
}

/// Submits a stream operation built by `make` and waits for it; when the
/// kernel answers `EAGAIN` (it does not arm a poll for every file type),
/// waits for `events` with a `POLL_ADD` through the ring and submits again.
/// `None`: no ring (use the epoll path).
pub(crate) fn stream_op(
    fd: RawFd,
    events: libc::c_short,
    deadline: Option<Instant>,
    mut make: impl FnMut() -> Entry,
) -> Option<Result<i32, TimedOut>> {
    loop {
        // SAFETY: `make`'s pointers come from our caller, which keeps them
        // valid for the whole call (see each call site).
        let r = unsafe { submit(make(), deadline) }?;
        match r {
            Ok(res) if res == -libc::EAGAIN => {
                let poll = opcode::PollAdd::new(types::Fd(fd), events as u32).build();
                // SAFETY: a poll points to no memory.
                match unsafe { submit(poll, deadline) }? {
                    Ok(p) if p < 0 && p != -libc::EINTR => return Some(Ok(p)),
                    Ok(_) => {}
                    Err(t) => return Some(Err(t)),
                }
            }
            Ok(res) if res == -libc::EINTR => {}
            r => return Some(r),
        }
    }
}
