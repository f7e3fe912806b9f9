//! Green-aware I/O: the two I/O drivers, and [`pipe`]s.
//!
//! Owns: waiting for descriptors (the epoll reactor, the per-worker
//! io_uring rings, the choice between them) for every I/O type of the
//! crate. Must not: block a worker (a call that would wait parks its green
//! thread), or keep a caller's buffer past the call.
//!
//! # Two drivers
//!
//! A runtime uses one of two drivers for its green threads
//! ([`IoDriver`], chosen with `Builder::io_driver`; `Auto` by default):
//!
//! * **io_uring** (`io::uring`): one ring per worker. A stream operation
//!   first tries the nonblocking call (unless the descriptor's recent
//!   calls kept finding nothing to do: `io::try_first`); one that would
//!   block (and every
//!   accept, connect and [`crate::fs::File`] operation) is submitted to
//!   the worker's ring and the green thread parks until its completion,
//!   which the kernel produces itself (it arms its own poll and performs
//!   the transfer): no `EAGAIN` → `epoll_wait` → retry. Submissions are
//!   batched per scheduling round; completions are reaped at switches, at
//!   a busy worker's paced polls (at most every 50 µs, at its preemption
//!   points) and by idle workers, which park in their ring.
//!   Its module docs have the protocol, the idle park and the argument that
//!   no buffer is written after its owner is gone (cancellation on
//!   timeouts and at shutdown).
//! * **epoll** (below): readiness through a reactor, then a retry. Files
//!   are always "ready", so under epoll [`crate::fs::File`] sends the calls
//!   that can wait for the device to the blocking pool instead (its module
//!   docs).
//!
//! The readiness reactor exists under both drivers: it is created at the
//! first registration, which under io_uring only readiness-based users
//! (`Source::do_io`, e.g. `peek`, Unix connect) make. Where a runtime uses
//! both, a worker parked in its ring also polls the epoll instance through
//! the ring (`POLL_ADD` on the epoll fd) while it holds the poller role.
//!
//! Measured (`scripts/hackbench-io.sh`, README "hackbench"): io_uring made
//! green hackbench about 1.5× faster than epoll on sockets and pipes on the
//! Intel host of 2026-12-02; against tokio it is about level on a quiet
//! host (the README's table has the current ratios, and docs/targets.md
//! why the workload's system calls bound them).
//!
//! # The epoll driver
//!
//! Every descriptor behind [`crate::net`] and [`crate::io`] is in
//! nonblocking mode; the types offer the blocking API of `std`. An
//! operation first tries the syscall; on `EAGAIN` the caller waits for
//! readiness and retries:
//!
//! * a **green thread** parks (only itself) until the runtime's reactor
//!   reports the descriptor ready, or its timeout passes (a runtime timer);
//! * an **OS thread** blocks in `ppoll(2)` on that one descriptor. It does
//!   not depend on any worker polling the reactor, so it can
//!   never hang because the runtime is idle, shut down, or absent — the
//!   types work with no runtime at all.
//!
//! # Futures
//!
//! The same descriptors can be driven by futures (`io::poll`): an
//! operation that would block returns `Poll::Pending` after storing the
//! task's `Waker` in the descriptor's readiness record, and the reactor
//! wakes that waker alongside the parked threads. [`AsyncFd`] offers this
//! for any descriptor; `crate::compat` implements tokio's and futures-rs's
//! `AsyncRead`/`AsyncWrite` with it.
//!
//! # The reactor
//!
//! One per runtime (`Shared::reactor`), created at the first registration:
//! an epoll instance (through `mio`: `Poll`, `Registry`, `Waker`), and for
//! each registered descriptor a `ScheduledIo` — readiness bits plus a tick
//! in one `AtomicUsize`, and the green threads waiting to read and to
//! write. A descriptor is registered once, edge-triggered, for reading and
//! writing, lazily: by the first green thread that gets `EAGAIN` on it (the
//! registration joins the reactor of *that* green thread's runtime; an
//! object created on an OS thread and moved into a green thread needs
//! nothing special). Dropping the object deregisters it. Details of tokens,
//! the tick and lifetimes are in `io::reactor`.
//!
//! Readiness becomes ordinary wakeups: the poller publishes the bits
//! (`SeqCst`), takes the waiters under the record's lock, releases it and
//! calls `Waiter::wake` (→ `wake_task`: placement, wakelists and kicks
//! apply as for any other wakeup). One difference in placement (the
//! WA_IO switch, `wake::placement`): when no worker is idle, a readiness
//! wakeup may go to the worker that polled it rather than the wakee's
//! previous one — a running worker, like the kernel's `wake_affine` for
//! the CPU that took the interrupt.
//!
//! # Who polls
//!
//! 1. **A polling idle worker** (its `idle_spin` loop) polls the reactor
//!    without blocking every 32 iterations (the same cadence as its clock
//!    and balance checks), if anything is registered and no worker is
//!    blocked in the reactor.
//! 2. **The poller.** A worker about to park first tries to claim the
//!    *poller role* (one `AtomicBool` per reactor). The winner parks in
//!    `epoll_pwait2` with its next timer as the timeout (nanosecond
//!    precision, like the futex park it replaces) instead of on its futex;
//!    the others futex-park as before. Readiness therefore wakes a worker
//!    directly, with no extra thread in between, and when that worker
//!    dispatches, it is the waker (an idle one: placement often picks it,
//!    and then the wake is a local inline enqueue, no kick at all).
//! 3. **Busy workers, paced.** A worker running green threads polls the
//!    reactor without blocking at its switches and preemption points, at
//!    most once per `worker::BUSY_POLL_INTERVAL` (50 µs), while no idle
//!    worker is blocked in it. The check rides on the worker's one
//!    clock-driven `next_event` comparison (`worker::Deadlines`), so it
//!    costs nothing between polls. Readiness therefore reaches a busy
//!    runtime within 50 µs plus the distance to the next preemption point,
//!    with no helper thread that would have to be scheduled on a busy CPU
//!    first. When the poller wakes up to run tasks, it hands the role to a
//!    worker sleeping on its futex (a kick), which idles again and parks in
//!    the reactor.
//!
//! Only one thread polls at a time (the poll lock; idle and busy polls use
//! `try_lock` and skip if someone is polling).
//!
//! # Idle protocol extension: parked in the reactor
//!
//! `worker::idle` gains a state, `PARKED_REACTOR`, next to `RUNNING`,
//! `POLLING` and `PARKED`. A kick that finds `PARKED_REACTOR` wins the same
//! CAS to `RUNNING` and then, instead of `futex_wake`, writes the reactor's
//! eventfd waker, which makes the poller's `epoll_pwait2` return.
//!
//! ```text
//!   poller (worker going idle)              waker (publishing work)
//!   claim the poller role                   publish work (SeqCst: wakelist CAS / nr_running)
//!   state.store(PARKED_REACTOR, SeqCst)     s = state.load(SeqCst)
//!   if has_work() (SeqCst loads)            if s == PARKED_REACTOR
//!       state = RUNNING; run it                 && CAS(PARKED_REACTOR → RUNNING) wins
//!   else epoll_pwait2(timeout)                  eventfd write (mio::Waker::wake)
//!   state.store(RUNNING, SeqCst); dispatch
//!   release the poller role
//! ```
//!
//! **No lost wakeup.** The store/load pairs are the Dekker pair of
//! `worker::idle`, unchanged: in the single total order of `SeqCst`
//! operations either the worker's re-check sees the work, or the waker's
//! load sees `PARKED_REACTOR`. In the second case the waker (or another
//! waker that won the CAS) writes the eventfd after the worker announced
//! itself. If that write happens before the worker enters `epoll_pwait2`,
//! the edge-triggered eventfd event is already on epoll's ready list and
//! the wait returns at once; if after, it ends the wait. Either way the
//! worker returns to its scheduler loop and drains its wakelist. (The
//! poller takes the poll lock before it waits; if an idle or busy poll held
//! the lock meanwhile and swallowed the eventfd event, the poller's re-check
//! of its idle word under the lock sees the kick's CAS and does not block:
//! `Reactor::park`.) A kick that arrives after the poller already stored
//! `RUNNING` loses the CAS and writes nothing; a write that lands after the
//! poller woke for another reason only makes a later poll return early
//! once (a spurious wakeup).
//!
//! **Readiness is never stranded.** An event sits in epoll until some
//! thread polls. (a) While a worker is `PARKED_REACTOR` it is in (or about
//! to enter) `epoll_pwait2` and is woken by the event. (b) Only the poller
//! role's holder may enter that state; a worker that fails to claim the
//! role futex-parks, and the holder is always either blocked in epoll or
//! on its way back to running (after which it releases the role and, when
//! idle again, claims it again — it never futex-parks while the role is
//! free). So whenever every worker is parked, one of them is in epoll.
//! (c) Otherwise some worker is running or polling; a polling worker polls
//! the reactor itself, and a running worker polls it at least every
//! `BUSY_POLL_INTERVAL` that it reaches a preemption point or switches.
//! (d) Green
//! waiters follow `wake::waiter`'s protocol: register in the record's
//! waiter list, then `park`, which marks the task blocked *before*
//! re-reading the readiness (`SeqCst`), while the poller publishes the
//! readiness (`SeqCst` RMW) before taking the list and calling
//! `wake_task`; so either the waiter sees the readiness and does not sleep,
//! or the poller finds it in the list and wakes it.
//!
//! # Shutdown
//!
//! `Runtime::shutdown` kicks every worker (an eventfd write for the poller),
//! joins them, and unwinds the green threads still blocked —
//! in `accept`, `read`, anywhere — which drops their I/O objects and so
//! deregisters them. Then the reactor is marked shut down: objects that
//! outlive the runtime still work from OS threads (`ppoll`), and a green
//! thread of another runtime waiting on one gets an error instead of a
//! hang (checked when it starts to wait).
//!
//! # Costs
//!
//! An operation that does not block costs its syscall plus one atomic load
//! (the readiness snapshot, only once registered). A blocking one adds a
//! CAS, an uncontended lock for the waiter list and the park; the wake is
//! one `SeqCst` RMW, one lock and `wake_task`. The idle spin adds one
//! `epoll_pwait2(0)` per 32 iterations while descriptors are registered;
//! a busy worker adds at most one per 50 µs.

mod async_fd;
mod driver;
mod pipe;
pub(crate) mod poll;
pub(crate) mod reactor;
pub(crate) mod source;
mod try_first;
pub(crate) mod uring;

pub use async_fd::{AsyncFd, ReadyGuard, TryIoError};
pub use driver::IoDriver;
pub use pipe::{pipe, PipeReader, PipeWriter};
