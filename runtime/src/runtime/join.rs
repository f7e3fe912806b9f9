//! Joining green threads.
//!
//! Owns: the result slot a green thread delivers into ([`Packet`]), the
//! guard that delivers "cancelled" if the thread is unwound at shutdown, and
//! [`JoinHandle`]. Must not: schedule; waiting goes through
//! `wake::waiter`.

use crate::context::Switch;
use crate::task::state::{QUEUED, RUNNING};
use crate::task::{Task, TaskRef};
use crate::wake::waiter::{self, Waiter};
use crate::worker::tls;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
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

struct Inner<T> {
    result: Option<thread::Result<T>>,
    waiter: Option<Waiter>,
}

/// Where a green thread's result goes.
pub(crate) struct Packet<T> {
    done: AtomicBool,
    inner: Mutex<Inner<T>>,
}

impl<T> Packet<T> {
    pub(crate) fn new() -> Self {
        Packet {
            done: AtomicBool::new(false),
            inner: Mutex::new(Inner {
                result: None,
                waiter: None,
            }),
        }
    }

    fn complete(&self, r: thread::Result<T>) {
        let waiter = {
            let mut inner = self.inner.lock();
            inner.result = Some(r);
            // SeqCst: pairs with the joiner's SeqCst read after it marked
            // itself blocked (wake::waiter protocol).
            self.done.store(true, Ordering::SeqCst);
            inner.waiter.take()
        };
        if let Some(w) = waiter {
            w.wake();
        }
    }

    fn is_done(&self) -> bool {
        self.done.load(Ordering::SeqCst)
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
        loop {
            if self.packet.is_done() {
                return self
                    .packet
                    .inner
                    .lock()
                    .result
                    .take()
                    .expect("a finished packet holds its result until joined");
            }
            {
                let mut inner = self.packet.inner.lock();
                if inner.result.is_some() {
                    continue;
                }
                inner.waiter = Some(Waiter::current());
            }
            waiter::park(|| self.packet.is_done(), None);
        }
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
