//! Joining green threads.
//!
//! Owns: the result slot a green thread delivers into ([`Packet`]), the
//! guard that delivers "cancelled" if the thread is unwound at shutdown, and
//! [`JoinHandle`]. Must not: schedule; waiting goes through
//! `wake::waiter`.

use crate::context::Switch;
use crate::loom::{AtomicU8, Ordering, UnsafeCell};
use crate::sync::platform::{self, Waiter};
use crate::task::state::{QUEUED, RUNNING};
use crate::task::{Task, TaskRef};
use crate::worker::tls;
use std::sync::Arc;
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

/// `Packet::state`: the green thread is running and nobody waits.
const EMPTY: u8 = 0;
/// `Packet::state`: a joiner has stored its waiter and may be parked.
const WAITER: u8 = 1;
/// `Packet::state`: the result is stored.
const DONE: u8 = 2;

/// Where a green thread's result goes: a three-state word and two cells,
/// no lock (one atomic swap to complete, one CAS to wait).
///
/// # Protocol
///
/// ```text
/// green thread (complete)                joiner (at most one: join takes self)
/// result = r                             if state == DONE: take result
/// prev = state.swap(DONE)  (AcqRel)      waiter = me
/// if prev == WAITER: take waiter, wake   CAS(EMPTY → WAITER)  (AcqRel)
///                                          Ok:  park until state == DONE
///                                          Err: (DONE) drop waiter; take result
/// ```
///
/// * `result` is written only by the completer, before its `Release` swap,
///   and read only by the joiner after an `Acquire` load of `DONE`.
/// * `waiter` is written by the joiner while `state` is `EMPTY`, before its
///   `Release` CAS; the completer reads it only if its swap (`Acquire`)
///   returned `WAITER`, so after that write. If the CAS fails the completer
///   saw `EMPTY` and never touches the waiter; the joiner drops it.
/// * No lost wakeup: the joiner parks through `wake::waiter`, which marks
///   it blocked and then re-reads `state` after a `SeqCst` fence; the
///   completer's wake reads the joiner's state after a `SeqCst` fence that
///   follows its swap (task::state rule 1).
pub(crate) struct Packet<T> {
    state: AtomicU8,
    result: UnsafeCell<Option<thread::Result<T>>>,
    waiter: UnsafeCell<Option<Waiter>>,
}

// SAFETY: the cells are accessed by at most one thread at a time under the
// protocol above; the result moves between threads, so `T: Send`.
unsafe impl<T: Send> Sync for Packet<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Packet<T> {}

impl<T> Packet<T> {
    pub(crate) fn new() -> Self {
        Packet {
            state: AtomicU8::new(EMPTY),
            result: UnsafeCell::new(None),
            waiter: UnsafeCell::new(None),
        }
    }

    fn complete(&self, r: thread::Result<T>) {
        // SAFETY: only the completer (the green thread, or its guard when
        // it is unwound; never both: `PacketGuard` takes the packet) writes
        // the result, and the joiner reads it only after seeing DONE.
        self.result.with_mut(|p| unsafe { *p = Some(r) });
        if self.state.swap(DONE, Ordering::AcqRel) == WAITER {
            // SAFETY: the joiner stored its waiter before its Release CAS
            // to WAITER, which our Acquire swap read; it no longer touches it.
            let w = self.waiter.with_mut(|p| unsafe { (*p).take() });
            if let Some(w) = w {
                platform::wake(w);
            }
        }
    }

    fn is_done(&self) -> bool {
        self.state.load(Ordering::Acquire) == DONE
    }

    /// Waits until the result is stored (the joiner only).
    fn wait(&self) {
        if self.is_done() {
            return;
        }
        // SAFETY: state is not DONE and only this joiner moves it out of
        // EMPTY, so the completer does not read the waiter yet.
        self.waiter
            .with_mut(|p| unsafe { *p = Some(platform::current()) });
        match self
            .state
            .compare_exchange(EMPTY, WAITER, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                while !self.is_done() {
                    platform::park(|| self.is_done(), None);
                }
            }
            Err(_) => {
                // DONE: the completer saw EMPTY and never reads the waiter.
                // SAFETY: as above; we are its only user.
                drop(self.waiter.with_mut(|p| unsafe { (*p).take() }));
            }
        }
    }

    /// Takes the result (the joiner only, after `wait`).
    fn take(&self) -> thread::Result<T> {
        debug_assert!(self.is_done());
        // SAFETY: DONE was read with Acquire, so the completer's write is
        // visible and it never touches the result again; join consumes the
        // handle, so this runs once.
        self.result
            .with_mut(|p| unsafe { (*p).take() })
            .expect("a finished packet holds its result until joined")
    }
}

/// Delivers the green thread's result exactly once: by [`complete`](Self::complete),
/// or `Err(Cancelled)` when dropped without it (forced unwind at shutdown).
pub(crate) struct PacketGuard<T> {
    packet: Option<Arc<Packet<T>>>,
}

impl<T> PacketGuard<T> {
    pub(crate) fn new(packet: Arc<Packet<T>>) -> Self {
        PacketGuard {
            packet: Some(packet),
        }
    }

    pub(crate) fn complete(mut self, r: thread::Result<T>) {
        if let Some(p) = self.packet.take() {
            p.complete(r);
        }
    }
}

impl<T> Drop for PacketGuard<T> {
    fn drop(&mut self) {
        if let Some(p) = self.packet.take() {
            p.complete(Err(Box::new(Cancelled)));
        }
    }
}

/// An owned permission to join a green thread (wait for it and take its
/// result), like `std::thread::JoinHandle`. Dropping it detaches the thread.
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
/// ```
pub struct JoinHandle<T> {
    packet: Arc<Packet<T>>,
    /// The green thread; `None` for a [`spawn_blocking`](crate::task::spawn_blocking) job.
    task: Option<TaskRef>,
}

impl<T> JoinHandle<T> {
    pub(crate) fn new(packet: Arc<Packet<T>>, task: TaskRef) -> Self {
        JoinHandle {
            packet,
            task: Some(task),
        }
    }

    /// A handle to a job of the blocking pool (no green thread).
    pub(crate) fn new_blocking(packet: Arc<Packet<T>>) -> Self {
        JoinHandle { packet, task: None }
    }

    /// Waits for the green thread to finish and returns its result, or the
    /// payload of its panic. From a green thread this parks only the caller;
    /// from an OS thread it blocks the thread.
    pub fn join(self) -> thread::Result<T> {
        // A green thread joining a task that waits to run on its own worker
        // (a fresh spawn, typically) first yields to it — a directed yield,
        // like the kernel's `yield_to` — instead of blocking: if the task
        // runs to completion, the join costs no block and no wakeup.
        if !self.packet.is_done() {
            if let (Some(me), Some(t)) = (tls::current(), &self.task) {
                if t.cpu() == me.cpu()
                    && !t.st.on_cpu()
                    && t.st.on_rq() == QUEUED
                    && t.st.state() == RUNNING
                {
                    crate::task::switch_out(Switch::YieldTo(Arc::as_ptr(t) as *const ()));
                }
            }
        }
        self.packet.wait();
        self.packet.take()
    }

    /// Whether the green thread has finished (its result is ready).
    pub fn is_finished(&self) -> bool {
        self.packet.is_done()
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
        self.task.clone().map(|tcb| Task { tcb })
    }
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle")
            .field("task", &self.task.as_ref().map(|t| t.id))
            .field("finished", &self.is_finished())
            .finish()
    }
}

/// Loom model of the real [`Packet`] protocol (complete vs. join):
/// `RUSTFLAGS="--cfg loom" cargo test -p eevdf-rt --lib --release loom`.
/// Checked: the joiner always gets the result (no lost wakeup, no hang),
/// every cell access is ordered (loom's `UnsafeCell` checks), and a
/// waiter registered too late is dropped, not leaked or woken twice.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;

    #[test]
    fn loom_packet_complete_vs_join() {
        loom::model(|| {
            let p = Arc::new(Packet::<u32>::new());
            let g = PacketGuard::new(p.clone());
            let t = loom::thread::spawn(move || g.complete(Ok(7)));
            p.wait();
            assert_eq!(p.take().ok(), Some(7));
            t.join().unwrap();
        });
    }

    #[test]
    fn loom_packet_cancelled_by_drop() {
        loom::model(|| {
            let p = Arc::new(Packet::<u32>::new());
            let g = PacketGuard::new(p.clone());
            let t = loom::thread::spawn(move || drop(g));
            p.wait();
            let err = p.take().unwrap_err();
            assert!(err.downcast_ref::<Cancelled>().is_some());
            t.join().unwrap();
        });
    }
}
