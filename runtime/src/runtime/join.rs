//! Joining green threads: blocking (`join`) or as a future (`.await`).
//!
//! Owns: the place a green thread delivers its result to ([`Packet`]), the
//! guard that delivers "cancelled" if the thread is unwound at shutdown, and
//! [`JoinHandle`] with its `Future` implementation. Must not: schedule;
//! a blocking join parks through `wake::waiter`, a future's waker decides
//! itself what waking means.
//!
//! A green thread's packet lives inside its task control block (one
//! allocation per spawn; the result is stored untyped, see
//! `runtime::result_slot`); a `spawn_blocking` job, which has no task
//! block, gets a packet of its own ([`PacketRef`]).

use super::result_slot::ResultSlot;
use crate::context::Switch;
use crate::loom::{AtomicU8, Ordering, UnsafeCell};
use crate::sync::platform::{self, Waiter};
use crate::task::state::{QUEUED, RUNNING};
use crate::task::{Task, TaskRef};
use crate::worker::tls;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::thread;

/// The payload of the `Err` a join returns for a green thread that was
/// unwound because its runtime shut down before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("green thread cancelled: its runtime shut down before it finished")
    }
}

/// `Packet::state`: the green thread is running and no joiner is stored
/// (none yet, or the joiner took its registration back).
const EMPTY: u8 = 0;
/// `Packet::state`: a joiner is stored in `Packet::joiner`.
const WAITER: u8 = 1;
/// `Packet::state`: the result is stored.
const DONE: u8 = 2;
/// `Packet::state` bit: the handle is gone (dropped, or joined). Of the
/// handle and the completer, the one that comes second drops the result,
/// so a result nobody takes is dropped by user-facing code — the green
/// thread at its completion, or the handle's owner — never by whoever
/// happens to drop the task block's last reference (a worker, under its
/// run-queue lock), and never kept alive by other references to the task.
const DETACHED: u8 = 4;

/// Checks a protocol invariant in debug builds and in loom models (which
/// run in release mode).
#[inline]
#[track_caller]
fn protocol_assert(ok: bool, what: &str) {
    if cfg!(any(debug_assertions, loom)) {
        assert!(ok, "join packet: {what}");
    }
}

/// Who waits for a packet: a thread parked in [`JoinHandle::join`], or the
/// task polling the handle as a future.
enum Joiner {
    Park(Waiter),
    Task(Waker),
}

impl Joiner {
    fn wake(self) {
        match self {
            Joiner::Park(w) => platform::wake(w),
            // An async joiner's waker is the user's: it may panic.
            Joiner::Task(w) => crate::wake::wake_foreign(w),
        }
    }
}

/// Where a green thread's result goes: a three-state word with a
/// "detached" bit and two cells, no lock (one atomic swap to complete, one
/// CAS to wait, two CASes to replace a stored joiner, one `fetch_or` when
/// the handle goes away).
///
/// # Protocol
///
/// ```text
/// green thread (complete)               joiner (at most one: the JoinHandle)
/// result = r                            if state == DONE: take result
/// prev = state.swap(DONE)  (AcqRel)     register(j):
/// if prev has DETACHED:                   CAS(WAITER → EMPTY)  (AcqRel)   take a stored joiner back
///   drop result; done                       Err(DONE): drop j; take result
/// if prev == WAITER:                      joiner = j           (the cell is ours while EMPTY)
///   take joiner, wake it                  CAS(EMPTY → WAITER)  (AcqRel)
///                                           Ok:  wait (park, or return Pending)
///                                           Err: (DONE) drop the joiner; take result
///                                       drop of the handle (after taking back its joiner):
///                                         prev = state.fetch_or(DETACHED)  (AcqRel)
///                                         if prev == DONE: drop result (if not taken)
/// ```
///
/// * A result nobody takes is dropped by whichever of the completer and
///   the handle's drop comes second in `state`'s modification order (the
///   other one does not touch the cell afterwards): by user-facing code,
///   never by the last reference to a task block, which a worker may drop
///   under its run-queue lock, and never kept alive by other references
///   to the task (a `Task` handle, a pending timer entry, the result
///   itself holding its own task).
///
/// * `result` is written only by the completer, before its `Release` swap,
///   and read only by the joiner after an `Acquire` load (or failed CAS)
///   that read `DONE`.
/// * `joiner` belongs to the joiner while `state` is `EMPTY`: only the
///   joiner moves `EMPTY → WAITER` and `WAITER → EMPTY`; the completer
///   only moves either to `DONE`, and reads the cell only if its swap
///   (`Acquire`) returned `WAITER` — so after the joiner's last write to
///   it, which precedes the joiner's `Release` CAS to `WAITER` that the
///   swap read. The joiner's CASes and the completer's swap are ordered in
///   `state`'s modification order: if the joiner's `WAITER → EMPTY` comes
///   first, the swap returns `EMPTY` and the completer never touches the
///   cell (the joiner's next `EMPTY → WAITER` fails on `DONE`, and it
///   takes the result: no lost wakeup); if the swap comes first, the
///   joiner's CAS fails on `DONE` and it no longer touches the cell.
/// * Re-registration (a future polled again, with the same or another
///   waker) takes the stored joiner back first, so the completer always
///   wakes the waker of the latest poll; a joiner that gives up (the
///   future dropped while pending) takes its registration back the same
///   way, so the packet holds no waker of a dropped future.
/// * No lost wakeup for a parked joiner: it parks through `wake::waiter`,
///   which marks it blocked and then re-reads `state` after a `SeqCst`
///   fence; the completer's wake reads the joiner's state after a `SeqCst`
///   fence that follows its swap (task::state rule 1). A task joiner's
///   waker is woken after the swap, so its next poll reads `DONE`.
///
/// The result's type is not part of the packet's: the result is stored
/// untyped ([`ResultSlot`]) and read back by the [`JoinHandle<T>`] made
/// with the completer's [`PacketGuard<T>`] for the same `T`.
pub(crate) struct Packet {
    state: AtomicU8,
    result: UnsafeCell<ResultSlot>,
    joiner: UnsafeCell<Option<Joiner>>,
}

// SAFETY: the cells are accessed by at most one thread at a time under the
// protocol above; the result moves between threads (the slot accepts only
// `Send` values), and the joiner (a `Waiter` or a `Waker`, both
// `Send + Sync`) is woken or dropped by either side.
unsafe impl Sync for Packet {}
// SAFETY: as above.
unsafe impl Send for Packet {}

impl Packet {
    pub(crate) fn new() -> Self {
        Packet {
            state: AtomicU8::new(EMPTY),
            result: UnsafeCell::new(ResultSlot::new()),
            joiner: UnsafeCell::new(None),
        }
    }

    fn complete<T: Send>(&self, r: thread::Result<T>) {
        // SAFETY: only the completer (the green thread, or its guard when
        // it is unwound; never both: `PacketGuard` takes the packet) writes
        // the result, and the joiner reads it only after seeing DONE.
        self.result.with_mut(|p| unsafe { (*p).put(r) });
        self.publish();
    }

    /// Completes with `Err(Cancelled)` for a green thread that shutdown
    /// gave up on: its stack is left as it was, so its [`PacketGuard`],
    /// which would have done this, is never dropped.
    ///
    /// # Safety
    /// The guard must never run again (its context is never resumed or
    /// dropped): this call takes its place as the completer.
    pub(crate) unsafe fn complete_abandoned(&self) {
        // SAFETY: the caller makes us the only completer (as in `complete`).
        self.result.with_mut(|p| unsafe { (*p).put_cancelled() });
        self.publish();
    }

    /// The completer's half of the protocol once the result is stored.
    fn publish(&self) {
        let prev = self.state.swap(DONE, Ordering::AcqRel);
        if prev & DETACHED != 0 {
            // The handle is gone and will not look again: drop the result
            // here, on the green thread. (A handle unregisters its joiner
            // before it detaches: no joiner to wake.)
            protocol_assert(
                prev == EMPTY | DETACHED,
                "a joiner left registered by a detached handle",
            );
            let dropped = catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: we wrote the cell; the handle's Release
                // `fetch_or`, which our Acquire swap read, was its last
                // access to the packet.
                self.result.with_mut(|p| unsafe { (*p).clear() })
            }));
            if dropped.is_err() {
                // Like std's "thread result panicked on drop": nobody can
                // be told, and the unwind must not reach the worker loop.
                eprintln!(
                    "eevdf-rt: the result of a green thread nobody joined panicked on drop; aborting"
                );
                std::process::abort();
            }
            return;
        }
        if prev == WAITER {
            // SAFETY: the joiner stored it before its Release CAS to
            // WAITER, which our Acquire swap read; from DONE on it no
            // longer touches the cell (its CASes fail).
            let j = self.joiner.with_mut(|p| unsafe { (*p).take() });
            if let Some(j) = j {
                j.wake();
            }
        }
    }

    /// Whether the result has been delivered. Tests the bit, not the
    /// whole state: a handle dropped as the task completes can leave
    /// `DONE | DETACHED`, and `Task::is_finished` must not turn false then.
    pub(crate) fn is_done(&self) -> bool {
        self.state.load(Ordering::Acquire) & DONE != 0
    }

    /// Stores the joiner `make` returns (given the one stored before, if
    /// any), replacing an earlier registration. Returns `false`, with
    /// nothing stored, if the result is ready (the joiner only).
    fn register(&self, make: impl FnOnce(Option<Joiner>) -> Joiner) -> bool {
        // Take a stored joiner back (a re-registration); EMPTY: none.
        if let Err(DONE) =
            self.state
                .compare_exchange(WAITER, EMPTY, Ordering::AcqRel, Ordering::Acquire)
        {
            return false;
        }
        // SAFETY: state is EMPTY and only this joiner moves it to WAITER:
        // the completer does not read the cell (protocol above).
        let old = self.joiner.with_mut(|p| unsafe { (*p).take() });
        let new = make(old);
        // SAFETY: as above.
        self.joiner.with_mut(|p| unsafe { *p = Some(new) });
        match self
            .state
            .compare_exchange(EMPTY, WAITER, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(_) => {
                // DONE: the completer saw EMPTY and never reads the cell.
                // SAFETY: as above; we are its only user.
                drop(self.joiner.with_mut(|p| unsafe { (*p).take() }));
                false
            }
        }
    }

    /// The handle is gone: takes back a joiner it left registered, then
    /// drops the result if it is stored, else leaves that to the completer.
    fn detach(&self) {
        if self.state.load(Ordering::Acquire) == DONE {
            // DONE is final: the completer no longer touches the packet and
            // no joiner can be registered, so there is nobody to tell (the
            // common case, a handle dropped after `join`: no
            // read-modify-write). Drop a result nobody took.
            // SAFETY: as below (DONE read with Acquire).
            self.result.with_mut(|p| unsafe { (*p).clear() });
            return;
        }
        self.unregister();
        let prev = self.state.fetch_or(DETACHED, Ordering::AcqRel);
        protocol_assert(
            prev == EMPTY || prev == DONE,
            "detached twice or while registered",
        );
        if prev == DONE {
            // SAFETY: DONE read with Acquire: the completer's write is
            // visible and it no longer touches the cell; the handle (us)
            // is its only other user, and is going away. Empty if the
            // result was taken.
            self.result.with_mut(|p| unsafe { (*p).clear() });
        }
    }

    /// Takes back a stored joiner (the joiner gives up waiting), so the
    /// completer neither wakes nor keeps it.
    fn unregister(&self) {
        if self
            .state
            .compare_exchange(WAITER, EMPTY, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            // SAFETY: we moved WAITER → EMPTY: the completer's swap will
            // return EMPTY and not read the cell; only we use it now.
            drop(self.joiner.with_mut(|p| unsafe { (*p).take() }));
        }
    }

    /// Waits until the result is stored (the joiner only). Returns whether
    /// it had to park (from a green thread: normally a switch).
    fn wait(&self) -> bool {
        if self.is_done() {
            return false;
        }
        if !self.register(|_| Joiner::Park(platform::current())) {
            return false;
        }
        while !self.is_done() {
            platform::park(|| self.is_done(), None);
        }
        true
    }

    /// The result if it is stored; otherwise `Pending`, with `waker`
    /// registered to be woken when it is (the joiner only).
    fn poll_result<T>(&self, waker: &Waker) -> Poll<thread::Result<T>> {
        if !self.is_done()
            && self.register(|old| match old {
                Some(Joiner::Task(w)) if w.will_wake(waker) => Joiner::Task(w),
                _ => Joiner::Task(waker.clone()),
            })
        {
            return Poll::Pending;
        }
        Poll::Ready(self.take())
    }

    /// Takes the result (the joiner only, once it saw DONE).
    ///
    /// # Panics
    /// If the result was taken already (a future polled after `Ready`).
    fn take<T>(&self) -> thread::Result<T> {
        debug_assert!(self.is_done());
        // SAFETY: DONE was read with Acquire, so the completer's write is
        // visible and it never touches the result again; only the one
        // joiner takes it.
        self.result
            .with_mut(|p| unsafe { (*p).take() })
            .expect("JoinHandle polled again after it returned the result")
    }
}

/// A shared reference to a packet: inside a green thread's task control
/// block, or a packet of its own for a blocking-pool job.
#[derive(Clone)]
pub(crate) enum PacketRef {
    /// The packet in the task's control block.
    Task(TaskRef),
    /// A packet of its own (a `spawn_blocking` job).
    Own(Arc<Packet>),
}

impl PacketRef {
    /// A new packet for a blocking-pool job.
    pub(crate) fn standalone() -> Self {
        PacketRef::Own(Arc::new(Packet::new()))
    }

    #[inline]
    fn get(&self) -> &Packet {
        match self {
            PacketRef::Task(t) => &t.join,
            PacketRef::Own(p) => p,
        }
    }
}

/// Delivers the green thread's result exactly once: by [`complete`](Self::complete),
/// or `Err(Cancelled)` when dropped without it (the unwinding of a green thread at shutdown).
///
/// For a green thread it holds a reference to the thread's own task block,
/// from the spawn until the body finishes or is unwound. That is no leak:
/// the task stays in the runtime's registry until it has finished, the
/// registry refuses new tasks once shutdown has drained it (the spawn then
/// drops the body, and with it this guard), and shutdown unwinds (or
/// drops, if never started) the body of every task it drained, which drops
/// this guard. The result itself does not outlive the handle (`DETACHED`).
pub(crate) struct PacketGuard<T: Send> {
    packet: Option<PacketRef>,
    _result: PhantomData<fn(T) -> T>,
}

impl<T: Send> PacketGuard<T> {
    pub(crate) fn new(packet: PacketRef) -> Self {
        PacketGuard {
            packet: Some(packet),
            _result: PhantomData,
        }
    }

    pub(crate) fn complete(mut self, r: thread::Result<T>) {
        if let Some(p) = self.packet.take() {
            p.get().complete(r);
        }
    }
}

impl<T: Send> Drop for PacketGuard<T> {
    fn drop(&mut self) {
        if let Some(p) = self.packet.take() {
            p.get().complete::<T>(Err(Box::new(Cancelled)));
        }
    }
}

/// An owned permission to join a green thread (wait for it and take its
/// result), like `std::thread::JoinHandle`. Dropping it detaches the thread:
/// the thread runs on, and a result nobody took is dropped by the handle's
/// drop if the thread has finished, else by the green thread itself when
/// it finishes. A result whose destructor panics there, where nobody can
/// be told, aborts the process with a message (std does the same for an
/// OS thread's result).
///
/// Two ways to wait: [`join`](Self::join) blocks (parks the calling green
/// thread, or blocks an OS thread), and the handle is a [`Future`] whose
/// output is the same `std::thread::Result<T>` — `.await` it from any
/// future: under [`block_on_future`](crate::block_on_future) on a green or
/// OS thread, in a [`spawn_future`](crate::spawn_future) task, or on
/// another executor. Dropping the future while it is pending detaches the
/// thread like dropping the handle (the thread runs on; its result is
/// dropped). A handle polled again after it returned its result panics.
///
/// ```
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let h = rt.spawn(|| 6 * 7);
/// assert_eq!(h.join().unwrap(), 42);            // from an OS thread
/// let v = rt.block_on(|| {
///     let h = eevdf_rt::spawn(|| "inner");
///     h.join().unwrap()                          // from a green thread: parks only it
/// });
/// assert_eq!(v, "inner");
/// let err = rt.spawn(|| panic!("boom")).join().unwrap_err();
/// assert_eq!(err.downcast_ref::<&str>(), Some(&"boom"));
///
/// // As a future: await a green thread from a future.
/// let v = rt.block_on(|| {
///     let h = eevdf_rt::spawn(|| 6 * 7);
///     eevdf_rt::block_on_future(async move { h.await.unwrap() + 1 })
/// });
/// assert_eq!(v, 43);
/// ```
pub struct JoinHandle<T> {
    /// The green thread's packet (in its task block), or a blocking job's.
    packet: PacketRef,
    /// The type the packet's result is read back as; the handle is made
    /// from the guard that stores it (see [`JoinHandle::new`]). `fn(T) -> T`
    /// keeps the handle invariant in `T` (a result is read back as exactly
    /// the type it was stored as), and `Arc<Mutex<T>>` gives it the auto
    /// traits it had when it held an `Arc` of a typed packet: `Send` and
    /// `Sync` exactly when `T: Send`, `Unpin` always.
    _result: PhantomData<ResultMarker<T>>,
}

/// See `JoinHandle::_result`.
type ResultMarker<T> = (fn(T) -> T, Arc<std::sync::Mutex<T>>);

impl<T: Send> JoinHandle<T> {
    /// A handle for the packet `guard` completes (the same `T`).
    pub(crate) fn new(guard: &PacketGuard<T>) -> Self {
        JoinHandle {
            packet: guard.packet.clone().expect("a new guard holds its packet"),
            _result: PhantomData,
        }
    }

    /// A handle whose join reports [`Cancelled`] at once, for a thread that
    /// will never run (a spawn refused while shutdown unwinds the caller).
    pub(crate) fn cancelled() -> Self {
        let guard = PacketGuard::new(PacketRef::standalone());
        let handle = JoinHandle::new(&guard);
        drop(guard);
        handle
    }

    /// [`JoinHandle::new`] with a reference to the packet that the caller
    /// already holds (a spawn makes all its task references at once):
    /// `packet` must be the guard's packet.
    pub(crate) fn with_packet(guard: &PacketGuard<T>, packet: PacketRef) -> Self {
        debug_assert!(
            matches!((&guard.packet, &packet), (Some(PacketRef::Task(a)), PacketRef::Task(b)) if TaskRef::ptr_eq(a, b)),
            "the handle's packet is the guard's"
        );
        JoinHandle {
            packet,
            _result: PhantomData,
        }
    }
}

impl<T> JoinHandle<T> {
    /// The green thread, or `None` for a blocking-pool job.
    fn green(&self) -> Option<&TaskRef> {
        match &self.packet {
            PacketRef::Task(t) => Some(t),
            PacketRef::Own(_) => None,
        }
    }

    /// Waits for the green thread to finish and returns its result, or the
    /// payload of its panic. From a green thread this parks only the caller;
    /// from an OS thread it blocks the thread. From a green thread it is a
    /// preemption point even when the result is already there (a loop
    /// joining finished tasks is not a loop without preemption points).
    pub fn join(self) -> thread::Result<T> {
        // A green thread joining a task that waits to run on its own worker
        // (a fresh spawn, typically) first yields to it — a directed yield,
        // like the kernel's `yield_to` — instead of blocking: if the task
        // runs to completion, the join costs no block and no wakeup.
        let packet = self.packet.get();
        let mut switched = false;
        if !packet.is_done() {
            if let (Some(me), Some(t)) = (tls::current(), self.green()) {
                // Same worker of the same runtime (another runtime's worker
                // with the same index is no place to yield to).
                if Arc::ptr_eq(&t.shared, &me.shared)
                    && t.cpu() == me.cpu()
                    && !t.st.on_cpu()
                    && t.st.on_rq() == QUEUED
                    && t.st.state() == RUNNING
                {
                    let why = Switch::YieldTo(TaskRef::as_ptr(t) as *const ());
                    // SAFETY: `me` is `tls::current()`, read just above.
                    unsafe { crate::task::switch_out_of(me, why) };
                    switched = true;
                }
            }
        }
        switched |= packet.wait();
        let result = packet.take();
        drop(self);
        if !switched {
            // Neither a directed yield nor a park went through the
            // scheduler: pass a preemption point instead (the runtime's
            // own, which does not switch inside a future's poll: a join
            // that did not block is no blocking call).
            crate::runtime::api::preempt_point_at(None);
        }
        result
    }

    /// Whether the green thread has finished (its result is ready).
    pub fn is_finished(&self) -> bool {
        self.packet.get().is_done()
    }

    /// A handle to the green thread.
    ///
    /// # Panics
    /// For a handle returned by [`spawn_blocking`](crate::task::spawn_blocking),
    /// which runs on an OS thread of the blocking pool, not a green thread
    /// (see [`try_task`](Self::try_task)).
    pub fn task(&self) -> Task {
        self.try_task()
            .expect("JoinHandle::task: a spawn_blocking job is not a green thread")
    }

    /// A handle to the green thread, or `None` for a
    /// [`spawn_blocking`](crate::task::spawn_blocking) job.
    pub fn try_task(&self) -> Option<Task> {
        self.green().cloned().map(|tcb| Task { tcb })
    }
}

/// Awaiting a handle waits for the green thread (or blocking job) like
/// [`join`](JoinHandle::join), without blocking: `Ok` with its return
/// value, or `Err` with the payload of its panic (or [`Cancelled`]).
///
/// ```
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let r = rt.block_on(|| {
///     eevdf_rt::block_on_future(async {
///         let a = eevdf_rt::spawn_future(async { 20 });
///         let b = eevdf_rt::spawn(|| 22);
///         let boom = eevdf_rt::spawn(|| panic!("boom"));
///         assert!(boom.await.is_err());
///         a.await.unwrap() + b.await.unwrap()
///     })
/// });
/// assert_eq!(r, 42);
/// ```
impl<T> Future for JoinHandle<T> {
    type Output = thread::Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Pending: our waker is registered until the next poll or the drop.
        self.packet.get().poll_result(cx.waker())
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        // Takes back a joiner still registered — a future dropped while
        // pending, or a `join` unwound at shutdown while it waited — so
        // the packet neither keeps nor wakes it; then a result nobody took
        // is dropped now, or by the green thread when it completes: not
        // with the task block (see DETACHED).
        self.packet.get().detach();
    }
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle")
            .field("task", &self.green().map(|t| t.id))
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// Loom model of the real [`Packet`] protocol (complete vs. join, and vs.
/// a future's polls):
/// `RUSTFLAGS="--cfg loom" cargo test -p eevdf-rt --lib --release loom`.
/// Checked: the joiner always gets the result (no lost wakeup, no hang),
/// every cell access is ordered (loom's `UnsafeCell` checks), a joiner
/// registered too late is dropped, not leaked or woken twice; a future
/// re-polled with a new waker is woken through the new one; a future that
/// gives up while pending leaves no waker in the packet. Waker leaks are
/// caught by counting the references to each waker's state at the end.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Notify;
    use std::task::Wake;

    #[test]
    fn loom_packet_complete_vs_join() {
        loom::model(|| {
            let p = PacketRef::standalone();
            let g = PacketGuard::<u32>::new(p.clone());
            let p = p.get();
            let t = loom::thread::spawn(move || g.complete(Ok(7)));
            p.wait();
            assert_eq!(p.take::<u32>().ok(), Some(7));
            t.join().unwrap();
        });
    }

    #[test]
    fn loom_packet_cancelled_by_drop() {
        loom::model(|| {
            let p = PacketRef::standalone();
            let g = PacketGuard::<u32>::new(p.clone());
            let p = p.get();
            let t = loom::thread::spawn(move || drop(g));
            p.wait();
            let err = p.take::<u32>().unwrap_err();
            assert!(err.downcast_ref::<Cancelled>().is_some());
            t.join().unwrap();
        });
    }

    /// Counts its drops (a std atomic: read after the model's threads joined).
    struct Counted(Arc<std::sync::atomic::AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// A packet and a thread that completes it with a [`Counted`] result;
    /// returns the packet, the thread and the drop counter.
    fn completing_counted() -> (
        PacketRef,
        loom::thread::JoinHandle<()>,
        Arc<std::sync::atomic::AtomicUsize>,
    ) {
        let drops = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let p = PacketRef::standalone();
        let g = PacketGuard::<Counted>::new(p.clone());
        let d = drops.clone();
        let t = loom::thread::spawn(move || g.complete(Ok(Counted(d))));
        (p, t, drops)
    }

    #[test]
    fn loom_packet_detach_vs_complete() {
        loom::model(|| {
            let (p, t, drops) = completing_counted();
            // The handle's drop, racing with the completion.
            p.get().detach();
            t.join().unwrap();
            // Dropped exactly once, by one of the two, before either ended.
            assert_eq!(drops.load(std::sync::atomic::Ordering::Relaxed), 1);
        });
    }

    #[test]
    fn loom_packet_join_then_detach() {
        loom::model(|| {
            let (p, t, drops) = completing_counted();
            let packet = p.get();
            packet.wait();
            let r = packet.take::<Counted>();
            // `JoinHandle::join` drops the handle after taking: nothing left.
            packet.detach();
            assert_eq!(drops.load(std::sync::atomic::Ordering::Relaxed), 0);
            drop(r);
            t.join().unwrap();
            assert_eq!(drops.load(std::sync::atomic::Ordering::Relaxed), 1);
        });
    }

    /// A future polled (pending, its waker registered) and then dropped —
    /// `JoinHandle::drop` is `detach` — racing the completion: the waker is
    /// taken back and released, and the result dropped exactly once.
    #[test]
    fn loom_packet_poll_then_drop_handle() {
        loom::model(|| {
            let (f, w) = flag();
            let (p, t, drops) = completing_counted();
            let packet = p.get();
            if let Poll::Ready(r) = packet.poll_result::<Counted>(&w) {
                drop(r);
            }
            packet.detach();
            t.join().unwrap();
            drop(w);
            assert_eq!(
                Arc::strong_count(&f),
                1,
                "the dropped future's waker was kept"
            );
            assert_eq!(drops.load(std::sync::atomic::Ordering::Relaxed), 1);
        });
    }

    /// A waker that notifies the polling thread (loom's park/unpark).
    struct Flag {
        woken: Notify,
    }

    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.woken.notify();
        }
    }

    fn flag() -> (Arc<Flag>, Waker) {
        let f = Arc::new(Flag {
            woken: Notify::new(),
        });
        let w = Waker::from(f.clone());
        (f, w)
    }

    /// Polls with `waker` until `Ready`, waiting between polls until the
    /// waker is woken (a `Pending` not followed by a wake is a deadlock,
    /// which loom reports).
    fn await_with(p: &Packet, f: &Flag, waker: &Waker) -> thread::Result<u32> {
        loop {
            if let Poll::Ready(r) = p.poll_result(waker) {
                return r;
            }
            f.woken.wait();
        }
    }

    #[test]
    fn loom_packet_complete_vs_poll() {
        loom::model(|| {
            let p = PacketRef::standalone();
            let g = PacketGuard::<u32>::new(p.clone());
            let p = p.get();
            let (f, w) = flag();
            let t = loom::thread::spawn(move || g.complete(Ok(7)));
            assert_eq!(await_with(&p, &f, &w).ok(), Some(7));
            t.join().unwrap();
            drop(w);
            assert_eq!(Arc::strong_count(&f), 1, "the packet kept a waker");
        });
    }

    #[test]
    fn loom_packet_repoll_with_new_waker() {
        loom::model(|| {
            let p = PacketRef::standalone();
            let g = PacketGuard::<u32>::new(p.clone());
            let p = p.get();
            let (fa, wa) = flag();
            let (fb, wb) = flag();
            let t = loom::thread::spawn(move || g.complete(Ok(7)));
            let r = match p.poll_result(&wa) {
                Poll::Ready(r) => r,
                // Moved to another task: only the new waker may be needed.
                Poll::Pending => await_with(&p, &fb, &wb),
            };
            assert_eq!(r.ok(), Some(7));
            t.join().unwrap();
            drop((wa, wb));
            assert_eq!(Arc::strong_count(&fa), 1, "the old waker was kept");
            assert_eq!(Arc::strong_count(&fb), 1, "the new waker was kept");
        });
    }

    #[test]
    fn loom_packet_poll_then_give_up() {
        loom::model(|| {
            let p = PacketRef::standalone();
            let g = PacketGuard::<u32>::new(p.clone());
            let p = p.get();
            let (f, w) = flag();
            let t = loom::thread::spawn(move || g.complete(Ok(7)));
            let pending = p.poll_result::<u32>(&w).is_pending();
            if pending {
                // The JoinHandle's drop while pending.
                p.unregister();
            }
            drop(w);
            t.join().unwrap();
            assert_eq!(
                Arc::strong_count(&f),
                1,
                "a dropped future's waker was kept"
            );
            assert!(p.is_done());
        });
    }

    #[test]
    fn loom_packet_poll_then_join() {
        loom::model(|| {
            let p = PacketRef::standalone();
            let g = PacketGuard::<u32>::new(p.clone());
            let p = p.get();
            let (f, w) = flag();
            let t = loom::thread::spawn(move || g.complete(Ok(7)));
            let r = match p.poll_result(&w) {
                Poll::Ready(r) => r,
                // A pending poll, then a blocking join replaces the waker.
                Poll::Pending => {
                    p.wait();
                    p.take::<u32>()
                }
            };
            assert_eq!(r.ok(), Some(7));
            t.join().unwrap();
            drop(w);
            assert_eq!(Arc::strong_count(&f), 1);
        });
    }
}
